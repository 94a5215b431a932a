"""Registry mirrors and per-host settings from a k3s-style `registries.yaml`.

The file has two sections, with k3s's semantics (docs.k3s.io "Private Registry Configuration"):

    mirrors:                      # per registry name (`docker.io`, `quay.io`, or `*` for every registry)
      docker.io:
        endpoint: ["http://127.0.0.1:5000", "https://mirror.example.com/v2"]   # tried in order
        rewrite: {"^rancher/(.*)": "mirrorproject/rancher-images/$1"}          # mirrors only
    configs:                      # per endpoint host[:port] (or registry name), `*` for all
      "mirror.example.com":
        auth: {username: u, password: p}        # or auth: base64(u:p), or identitytoken
        tls: {ca_file: ..., cert_file: ..., key_file: ..., insecure_skip_verify: false}

The registry's own (default) endpoint is always tried last, without rewrites; images keep
their original names in the store whichever endpoint served them.
"""

from __future__ import annotations

import base64
import os
import re
import ssl
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import yaml

from .reference import DEFAULT_DOMAIN

DOCKER_HUB_ENDPOINT = "https://registry-1.docker.io/v2"
_GO_GROUP = re.compile(r"\$(\d+)|\$\{(\d+)\}")


class RegistriesConfigError(ValueError):
    pass


@dataclass(frozen=True)
class HostConfig:
    """The `configs:` entry for one host: credentials and TLS settings."""

    username: str = ""
    password: str = ""
    identity_token: str = ""
    ca_file: str = ""
    cert_file: str = ""
    key_file: str = ""
    insecure_skip_verify: bool = False


@dataclass(frozen=True)
class Endpoint:
    """One place to pull a registry's images from: `base` is the URL ending in /v2."""

    base: str
    host: str
    config: HostConfig | None
    rewrites: tuple[tuple[re.Pattern[str], str], ...] = ()
    is_default: bool = False

    def path(self, repository_path: str) -> str:
        """The repository path at this endpoint: the first matching rewrite applies (k3s: mirrors only)."""
        for pattern, repl in self.rewrites:
            if pattern.search(repository_path):
                return pattern.sub(_go_replacement(repl), repository_path, count=1)
        return repository_path


@dataclass
class RegistriesConfig:
    mirrors: dict[str, tuple[list[str], list[tuple[re.Pattern[str], str]]]] = field(default_factory=dict)
    configs: dict[str, HostConfig] = field(default_factory=dict)
    _ssl: dict[str, ssl.SSLContext | bool] = field(default_factory=dict, repr=False)

    def endpoints(self, domain: str) -> list[Endpoint]:
        """Where to pull `domain`'s images from, in order: its mirrors (or `*`'s), then the registry itself."""
        urls, rewrites = self.mirrors.get(domain) or self.mirrors.get("*") or ([], [])
        out = [self._endpoint(u, tuple(rewrites)) for u in urls]
        default = DOCKER_HUB_ENDPOINT if domain == DEFAULT_DOMAIN else _default_url(domain)
        if not any(e.base == default for e in out):
            ep = self._endpoint(default, ())
            # the registry's own endpoint is configured by its name too (`configs: {docker.io: ...}`)
            cfg = ep.config or self.configs.get(domain)
            out.append(Endpoint(ep.base, ep.host, cfg, (), True))
        return out

    def _endpoint(self, url: str, rewrites: tuple[tuple[re.Pattern[str], str], ...]) -> Endpoint:
        base, host = normalize_endpoint(url)
        return Endpoint(base, host, self.configs.get(host) or self.configs.get("*"), rewrites)

    def ssl_context(self, ep: Endpoint) -> ssl.SSLContext | bool:
        """aiohttp's `ssl=` for an endpoint: True (system CAs) unless its config says otherwise."""
        c = ep.config
        if c is None or not (c.ca_file or c.cert_file or c.insecure_skip_verify):
            return True
        ctx = self._ssl.get(ep.host)
        if ctx is None:
            ctx = ssl.create_default_context(cafile=c.ca_file or None)
            if c.cert_file:
                ctx.load_cert_chain(c.cert_file, c.key_file or None)
            if c.insecure_skip_verify:
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE
            self._ssl[ep.host] = ctx
        return ctx


def _default_url(domain: str) -> str:
    from .registry import is_loopback  # loopback registries speak http, as containerd assumes for localhost

    return f"{'http' if is_loopback(domain) else 'https'}://{domain}/v2"


def normalize_endpoint(url: str) -> tuple[str, str]:
    """(base URL ending in /v2, host[:port]): a missing scheme is https (http on loopback); /v2 is appended
    unless the path ends in it."""
    from .registry import is_loopback

    u = url.strip()
    if "://" not in u:
        u = ("http://" if is_loopback(u.split("/", 1)[0]) else "https://") + u
    parts = urlsplit(u)
    if parts.scheme not in ("http", "https") or not parts.netloc:
        raise RegistriesConfigError(f"invalid mirror endpoint {url!r}: want http(s)://HOST[:PORT][/PATH]")
    path = parts.path.rstrip("/")
    if not path.endswith("/v2"):
        path += "/v2"
    return f"{parts.scheme}://{parts.netloc}{path}", parts.netloc


def _go_replacement(repl: str) -> str:
    """k3s rewrites use Go's regexp replacement syntax (`$1`, `${1}`); Python's re wants `\\g<1>`."""
    return _GO_GROUP.sub(lambda m: f"\\g<{m.group(1) or m.group(2)}>", repl.replace("\\", "\\\\"))


def _host_config(name: str, raw: Any) -> HostConfig:
    if not isinstance(raw, dict):
        raise RegistriesConfigError(f"configs.{name}: want a mapping with auth and/or tls")
    auth, tls = raw.get("auth") or {}, raw.get("tls") or {}
    if not isinstance(auth, dict) or not isinstance(tls, dict):
        raise RegistriesConfigError(f"configs.{name}: auth and tls must be mappings")
    user, password = str(auth.get("username") or ""), str(auth.get("password") or "")
    if auth.get("auth") and not (user and password):
        try:
            user, _, password = base64.b64decode(str(auth["auth"])).decode().partition(":")
        except (ValueError, UnicodeDecodeError) as e:
            raise RegistriesConfigError(f"configs.{name}.auth.auth: not base64 of user:password") from e
    for key in ("ca_file", "cert_file", "key_file"):
        if tls.get(key) and not os.path.isfile(str(tls[key])):
            raise RegistriesConfigError(f"configs.{name}.tls.{key}: {tls[key]}: no such file")
    return HostConfig(user, password, str(auth.get("identitytoken") or ""), str(tls.get("ca_file") or ""),
                      str(tls.get("cert_file") or ""), str(tls.get("key_file") or ""),
                      bool(tls.get("insecure_skip_verify")))


def parse_registries(doc: Any) -> RegistriesConfig:
    if doc is None:
        return RegistriesConfig()
    if not isinstance(doc, dict):
        raise RegistriesConfigError("want a mapping with mirrors: and configs:")
    cfg = RegistriesConfig()
    for section in ("mirrors", "configs"):
        if not isinstance(doc.get(section) or {}, dict):
            raise RegistriesConfigError(f"{section}: want a mapping keyed by registry name")
    for name, m in (doc.get("mirrors") or {}).items():
        if not isinstance(m, dict):
            raise RegistriesConfigError(f"mirrors.{name}: want a mapping with endpoint:")
        urls = m.get("endpoint") or []
        if isinstance(urls, str) or not isinstance(urls, list):
            raise RegistriesConfigError(f"mirrors.{name}.endpoint: want a list of URLs")
        for u in urls:
            normalize_endpoint(str(u))
        rewrites = []
        if not isinstance(m.get("rewrite") or {}, dict):
            raise RegistriesConfigError(f"mirrors.{name}.rewrite: want a mapping of regexp to replacement")
        for pattern, repl in (m.get("rewrite") or {}).items():
            try:
                rewrites.append((re.compile(str(pattern)), str(repl)))
            except re.error as e:
                raise RegistriesConfigError(f"mirrors.{name}.rewrite: {pattern!r}: {e}") from e
        cfg.mirrors[str(name)] = ([str(u) for u in urls], rewrites)
    for name, raw in (doc.get("configs") or {}).items():
        cfg.configs[str(name)] = _host_config(str(name), raw)
    return cfg


def load_registries(path: str) -> RegistriesConfig:
    """Read a registries.yaml; a missing file is an empty configuration (no mirrors), as k3s treats it."""
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except FileNotFoundError:
        return RegistriesConfig()
    except yaml.YAMLError as e:
        raise RegistriesConfigError(f"{path}: {e}") from e
    try:
        return parse_registries(doc)
    except RegistriesConfigError as e:
        raise RegistriesConfigError(f"{path}: {e}") from e
