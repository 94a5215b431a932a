"""An OCI distribution (v2 registry API) client that pulls images into the store.

Auth follows the distribution token protocol: a 401 carries `WWW-Authenticate: Bearer
realm=...,service=...,scope=...`; we fetch a token from the realm (with basic
credentials if we have them) and retry with `Authorization: Bearer`. A `Basic`
challenge (htpasswd registries) is answered with the credentials directly.
Manifest lists / OCI indexes resolve to this machine's platform; every blob is
verified against its digest before it enters the store.
"""

from __future__ import annotations

import asyncio
import base64
import fnmatch
import ipaddress
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlencode, urlsplit

import aiohttp

from . import media
from .reference import DEFAULT_DOMAIN, Reference, parse_reference
from .registries import Endpoint, RegistriesConfig
from .store import Image, ImageStore, ImageStoreError, sha256_digest

_CHALLENGE_PARAM = re.compile(r'(\w+)\s*=\s*"([^"]*)"')
DOCKER_HUB_ENDPOINT = "registry-1.docker.io"


class PullError(ImageStoreError):
    pass


class AuthError(PullError):
    """The registry refused us: upstream reports these as ErrImagePull with 'unauthorized'."""


@dataclass(frozen=True)
class Credentials:
    username: str = ""
    password: str = ""
    identity_token: str = ""  # a refresh token from `docker login` to a token server; sent as password


def credentials_from_docker_config(config: dict[str, Any] | str | bytes, host: str) -> list[Credentials]:
    """Credentials for `host` from a `.dockerconfigjson` (`{"auths": {...}}`) or legacy `.dockercfg` secret.

    Keys match as upstream's keyring does: scheme and path are ignored, `docker.io`
    and its legacy names are one, and `*` globs match one host label.
    """
    if isinstance(config, (str, bytes)):
        config = json.loads(config)
    assert isinstance(config, dict)
    auths = config.get("auths", config) if isinstance(config.get("auths"), dict) else config
    want = _canonical_host(host)
    out = []
    for key, entry in auths.items():
        if not isinstance(entry, dict):
            continue
        h = _canonical_host(key)
        if h != want and not (("*" in h) and _glob_host(h, want)):
            continue
        user, pw = entry.get("username", ""), entry.get("password", "")
        if entry.get("auth") and not (user and pw):
            dec = base64.b64decode(entry["auth"]).decode()
            user, _, pw = dec.partition(":")
        out.append(Credentials(user, pw, entry.get("identitytoken", "")))
    return out


def _canonical_host(key: str) -> str:
    k = key if "://" in key else "//" + key
    host = urlsplit(k).netloc or key
    if host in ("index.docker.io", "registry-1.docker.io", "registry.hub.docker.com", DEFAULT_DOMAIN):
        return DEFAULT_DOMAIN
    return host.lower()


def _glob_host(pattern: str, host: str) -> bool:
    p_parts, h_parts = pattern.split("."), host.split(".")
    return len(p_parts) == len(h_parts) and all(fnmatch.fnmatchcase(h, p) for p, h in zip(p_parts, h_parts, strict=True))


def is_loopback(host: str) -> bool:
    name = host.rsplit(":", 1)[0].strip("[]") if not host.startswith("[") else host[1:].split("]")[0]
    if name == "localhost":
        return True
    try:
        return ipaddress.ip_address(name).is_loopback
    except ValueError:
        return False


class RegistryClient:
    """Pulls from one or more registries; one instance can be shared (tokens are cached per scope)."""

    def __init__(self, store: ImageStore, *, plain_http: set[str] | None = None,
                 registries: RegistriesConfig | None = None, timeout: float = 300.0, concurrency: int = 3) -> None:
        self.store = store
        self.plain_http = set(plain_http or ())  # hosts spoken to over http (loopback always is)
        self.registries = registries or RegistriesConfig()  # mirrors and per-host auth/TLS (registries.yaml)
        self.timeout = aiohttp.ClientTimeout(total=timeout, sock_connect=30)
        self.concurrency = concurrency
        self._tokens: dict[tuple[str, str], str] = {}

    def endpoints(self, domain: str) -> list[Endpoint]:
        eps = self.registries.endpoints(domain)
        if self.plain_http:
            eps = [Endpoint("http" + e.base[5:], e.host, e.config, e.rewrites, e.is_default)
                   if e.host in self.plain_http and e.base.startswith("https:") else e for e in eps]
        return eps

    async def pull(self, ref: str, credentials: list[Credentials] | Credentials | None = None,
                   platform: dict[str, str] | None = None,
                   progress: Callable[[str], None] | None = None) -> Image:
        """Pull `ref` (tag or digest) into the store and record it; returns the image.

        With several credentials (one per matching pull secret), each is tried in turn, as
        upstream's kubelet does, then anonymous access.
        """
        r = parse_reference(ref)
        creds: list[Credentials | None]
        if credentials is None:
            creds = [None]
        elif isinstance(credentials, Credentials):
            creds = [credentials]
        else:
            creds = [*credentials, None] if credentials else [None]
        last: Exception | None = None
        for ep in self.endpoints(r.domain):  # mirrors in order, then the registry itself (k3s's fallback)
            # registries.yaml credentials for an endpoint come first; pull secrets name the registry itself
            ep_creds: list[Credentials | None] = creds
            if ep.config and (ep.config.username or ep.config.identity_token):
                ep_creds = [Credentials(ep.config.username, ep.config.password, ep.config.identity_token)]
            for c in ep_creds:
                try:
                    return await self._pull(r, ep, c, platform, progress)
                except AuthError as e:
                    last = e
                except PullError as e:
                    last = e
                    break
            if progress and not ep.is_default:
                progress(f"mirror {ep.base} failed: {last}; trying the next endpoint")
        assert last is not None
        raise last

    async def _pull(self, r: Reference, ep: Endpoint, creds: Credentials | None, platform: dict[str, str] | None,
                    progress: Callable[[str], None] | None) -> Image:
        say = progress or (lambda _m: None)
        async with aiohttp.ClientSession(timeout=self.timeout) as session:
            sess = _Session(self, session, r, ep, creds)
            try:
                body, mt, digest = await sess.get_manifest(r.object)
            except PullError as e:  # containerd's resolver wording, which upstream's kubelet passes on
                raise type(e)(f'failed to resolve reference "{r}": {e}') from e
            if r.digest and digest != r.digest:
                raise PullError(f"manifest digest mismatch: got {digest}, want {r.digest}")
            top_digest = digest
            self.store.write_blob(body, digest)
            doc = json.loads(body)
            if mt in media.INDEX_TYPES:
                chosen = media.choose_platform(doc.get("manifests") or [], platform)
                say(f"resolved {r} to platform manifest {chosen['digest']}")
                body, mt, digest = await sess.get_manifest(chosen["digest"])
                if digest != chosen["digest"]:
                    raise PullError(f"manifest digest mismatch: got {digest}, want {chosen['digest']}")
                self.store.write_blob(body, digest)
                doc = json.loads(body)
            if mt not in media.MANIFEST_TYPES:
                raise PullError(f"unsupported manifest media type {mt!r} (docker schema 1 is not supported)")
            sem = asyncio.Semaphore(self.concurrency)

            async def fetch(desc: dict[str, Any]) -> None:
                if desc.get("mediaType") == media.DOCKER_LAYER_FOREIGN and desc.get("urls"):
                    raise PullError("foreign layers are not supported")
                async with sem:
                    await sess.get_blob(desc["digest"], int(desc.get("size", -1)))
                say(f"fetched {desc['digest']}")

            await asyncio.gather(fetch(doc["config"]), *(fetch(d) for d in doc.get("layers") or []))
        names = [str(r)] if r.tag else []
        return self.store.add_image(digest, names, [f"{r.repository}@{top_digest}"])


class _Session:
    """One pull's HTTP conversation with a registry: auth challenges, manifests, blobs."""

    def __init__(self, client: RegistryClient, session: aiohttp.ClientSession, r: Reference, ep: Endpoint,
                 creds: Credentials | None) -> None:
        self.c = client
        self.s = session
        self.r = r
        self.creds = creds
        self.path = ep.path(r.path)
        self.base = f"{ep.base}/{self.path}/"
        self.ssl = client.registries.ssl_context(ep)
        self.token_key = (ep.base, self.path)
        self.auth_header: str | None = client._tokens.get(self.token_key) if creds is None else None

    async def _send(self, url: str, headers: dict[str, str], method: str = "GET",
                    data: Any = None) -> aiohttp.ClientResponse:
        for attempt in range(2):
            h = dict(headers)
            if self.auth_header:
                h["Authorization"] = self.auth_header
            try:
                resp = await self.s.request(method, url, headers=h, ssl=self.ssl, data=data)
            except aiohttp.ClientError as e:
                # Go's net/http wording, as containerd reports it: `Get "https://...": dial tcp: ...`
                raise PullError(f'failed to do request: {method.capitalize()} "{url}": {e}') from e
            if resp.status != 401 or attempt == 1:
                return resp
            challenge = resp.headers.get("WWW-Authenticate", "")
            resp.release()
            await self._authorize(challenge)
        raise AssertionError("unreachable")

    async def _authorize(self, challenge: str) -> None:
        scheme, _, rest = challenge.partition(" ")
        params = dict(_CHALLENGE_PARAM.findall(rest))
        if scheme.lower() == "basic":
            if not self.creds:
                raise AuthError(f"{self.r.domain}: authentication required (no credentials)")
            raw = f"{self.creds.username}:{self.creds.password or self.creds.identity_token}".encode()
            self.auth_header = "Basic " + base64.b64encode(raw).decode()
            return
        if scheme.lower() != "bearer" or "realm" not in params:
            raise AuthError(f"{self.r.domain}: unsupported auth challenge {challenge!r}")
        query = {"scope": params.get("scope") or f"repository:{self.path}:pull"}
        if params.get("service"):
            query["service"] = params["service"]
        headers = {}
        if self.creds:
            raw = f"{self.creds.username}:{self.creds.password or self.creds.identity_token}".encode()
            headers["Authorization"] = "Basic " + base64.b64encode(raw).decode()
            if self.creds.username:
                query["account"] = self.creds.username
        url = params["realm"] + ("&" if "?" in params["realm"] else "?") + urlencode(query)
        try:
            async with self.s.get(url, headers=headers, ssl=self.ssl) as resp:
                if resp.status in (401, 403):
                    raise AuthError(f"{self.r.domain}: token server refused: HTTP {resp.status}")
                if resp.status != 200:
                    raise PullError(f"token server {params['realm']}: HTTP {resp.status}")
                doc = await resp.json(content_type=None)
        except aiohttp.ClientError as e:
            raise PullError(f"token server {params['realm']}: {e}") from e
        token = doc.get("token") or doc.get("access_token")
        if not token:
            raise AuthError(f"token server {params['realm']} returned no token")
        self.auth_header = "Bearer " + token
        if self.creds is None:
            self.c._tokens[self.token_key] = self.auth_header

    async def get_manifest(self, obj: str) -> tuple[bytes, str, str]:
        resp = await self._send(self.base + "manifests/" + obj, {"Accept": media.ACCEPT})
        async with resp:
            if resp.status == 401:
                raise AuthError(f"{self.r}: unauthorized")
            if resp.status == 404:
                raise PullError(f"{self.r.repository}:{obj}: not found")
            if resp.status != 200:
                raise PullError(f"{self.r.repository}:{obj}: HTTP {resp.status}: {(await resp.text())[:200]}")
            body = await resp.read()
            ctype = resp.headers.get("Content-Type", "").split(";")[0].strip()
        doc = json.loads(body)
        mt = media.media_type_of(doc, ctype)
        return body, mt, sha256_digest(body)

    async def get_blob(self, digest: str, size: int) -> None:
        if self.c.store.has_blob(digest):
            return
        resp = await self._send(self.base + "blobs/" + digest, {})
        async with resp:
            if resp.status == 401:
                raise AuthError(f"{self.r}: unauthorized")
            if resp.status != 200:
                raise PullError(f"blob {digest}: HTTP {resp.status}")
            w = self.c.store.writer()
            try:
                async for chunk in resp.content.iter_chunked(1 << 20):
                    w.write(chunk)
            except BaseException:
                w.abort()
                raise
        w.commit(digest, size if size >= 0 else None)
