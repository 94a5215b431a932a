"""The routing table of the Ingress controller: pure functions from Ingress objects and a
request's host and path to a backend.

Matching follows the networking.k8s.io/v1 API documentation:
- hosts: an exact host, or `*.example.com`, which matches exactly one more DNS label
  (`a.example.com`, not `example.com` nor `a.b.example.com`); exact hosts win over wildcards,
  and a rule without a host matches every host that no rule names;
- paths: `Exact` (the whole path, case-sensitive), `Prefix` (element-wise on `/`: `/foo`
  matches `/foo` and `/foo/bar`, never `/foobar`; a trailing slash is ignored), and
  `ImplementationSpecific`, which this controller treats as `Prefix`;
- the longest matching path wins; on equal length `Exact` beats `Prefix`;
- nothing matched: the `defaultBackend` of the oldest Ingress that has one, else 404.
Rules of several Ingresses for one host are merged, as ingress-nginx does; for the same
host, path and type the oldest Ingress wins.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

__all__ = ["Backend", "Route", "RouteTable", "build_table", "host_matches", "path_matches", "normalize_path",
           "BadPath", "ingress_key"]


@dataclass(frozen=True)
class Backend:
    """A Service port (`port` is an int for spec.port.number, a str for spec.port.name) of one
    Ingress; `resource` is set when the Ingress names a resource backend, which we do not serve."""

    namespace: str
    ingress: str  # name of the Ingress the backend comes from
    service: str = ""
    port: int | str = 0
    resource: str = ""


@dataclass(frozen=True)
class Route:
    path: str
    path_type: str  # Exact or Prefix (ImplementationSpecific is stored as Prefix)
    backend: Backend


@dataclass
class RouteTable:
    exact_hosts: dict[str, list[Route]] = field(default_factory=dict)
    wildcard_hosts: dict[str, list[Route]] = field(default_factory=dict)  # key: the suffix after "*."
    any_host: list[Route] = field(default_factory=list)
    default_backend: Backend | None = None

    def routes_for(self, host: str) -> list[Route]:
        if host in self.exact_hosts:
            return self.exact_hosts[host]
        dot = host.find(".")
        if dot > 0 and host[dot + 1:] in self.wildcard_hosts:
            return self.wildcard_hosts[host[dot + 1:]]
        return self.any_host

    def match(self, host: str, path: str) -> Backend | None:
        """The backend for a request: `host` lowercased without port, `path` normalised."""
        best: Route | None = None
        for r in self.routes_for(host):
            if not path_matches(r.path_type, r.path, path):
                continue
            if best is None or _better(r, best):
                best = r
        if best is not None:
            return best.backend
        return self.default_backend


def _better(a: Route, b: Route) -> bool:
    la, lb = len(a.path.rstrip("/")), len(b.path.rstrip("/"))
    if la != lb:
        return la > lb
    return a.path_type == "Exact" and b.path_type != "Exact"


def host_matches(pattern: str, host: str) -> bool:
    """Whether a rule's (or a TLS entry's) host covers `host`, as the Ingress spec defines it."""
    if pattern.startswith("*."):
        dot = host.find(".")
        return dot > 0 and host[dot + 1:] == pattern[2:]
    return pattern == host


def path_matches(path_type: str, rule: str, path: str) -> bool:
    if path_type == "Exact":
        return rule == path
    # Prefix: element-wise; "/" matches everything; "/foo/" and "/foo" are the same prefix
    prefix = rule.rstrip("/")
    if not prefix:
        return True
    if not path.startswith(prefix):
        return False
    return len(path) == len(prefix) or path[len(prefix)] == "/"


class BadPath(ValueError):
    """A request path we refuse (answered 400) rather than route."""


_HEX = "0123456789abcdefABCDEF"


def normalize_path(raw: str) -> str:
    """The path a request is routed on, and forwarded with: percent-decoded, `//` merged and
    `.`/`..` segments removed (RFC 3986 5.2.4, as nginx normalises before location matching).

    Routing on one form and forwarding another is how `/public/..%2fadmin` reaches a backend's
    `/admin` through a rule for `/public`; so encoded slashes, backslashes and NUL are refused,
    and the backend gets the very path that was matched."""
    if not raw.startswith("/"):
        raise BadPath("the request target must be an absolute path")
    if raw.isascii() and raw.isprintable() and not any(s in raw for s in ("%", "\\", "//", "/.")):
        return raw  # nothing to decode or resolve: most requests
    lowered = raw.lower()
    if "%2f" in lowered or "%5c" in lowered:
        raise BadPath("encoded slash in the path")
    buf = bytearray()
    i, n = 0, len(raw)
    while i < n:
        c = raw[i]
        if c == "%":
            h = raw[i + 1:i + 3]
            if len(h) != 2 or h[0] not in _HEX or h[1] not in _HEX:
                raise BadPath("malformed percent-encoding")
            buf.append(int(h, 16))
            i += 3
            continue
        buf += c.encode("utf-8")
        i += 1
    if b"\x00" in buf or b"\\" in buf:
        raise BadPath("NUL or backslash in the path")
    try:
        decoded = buf.decode("utf-8")
    except UnicodeDecodeError:
        raise BadPath("the path is not UTF-8") from None
    out: list[str] = []
    for seg in decoded.split("/")[1:]:
        if seg in ("", "."):
            continue
        if seg == "..":
            if out:
                out.pop()
            continue
        out.append(seg)
    path = "/" + "/".join(out)
    if path != "/" and decoded.endswith(("/", "/.", "/..")):
        path += "/"
    return path


def ingress_key(ing: dict[str, Any]) -> str:
    md = ing.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def _age_key(ing: dict[str, Any]) -> tuple[str, str]:
    return ((ing.get("metadata") or {}).get("creationTimestamp") or "", ingress_key(ing))


def _backend(ns: str, name: str, b: dict[str, Any]) -> Backend:
    svc = b.get("service")
    if svc:
        port = svc.get("port") or {}
        num = port.get("number")
        return Backend(ns, name, svc.get("name", ""), int(num) if num else str(port.get("name", "")))
    res = b.get("resource") or {}
    return Backend(ns, name, resource=f"{res.get('kind', '')}/{res.get('name', '')}")


def build_table(ingresses: list[dict[str, Any]]) -> RouteTable:
    """The merged table of the Ingresses this controller serves (already filtered by class)."""
    t = RouteTable()
    seen: set[tuple[str, str, str]] = set()
    for ing in sorted(ingresses, key=_age_key):
        md, spec = ing.get("metadata") or {}, ing.get("spec") or {}
        ns, name = md.get("namespace", ""), md.get("name", "")
        if spec.get("defaultBackend") and t.default_backend is None:
            t.default_backend = _backend(ns, name, spec["defaultBackend"])
        for rule in spec.get("rules") or []:
            host = (rule.get("host") or "").lower()
            for p in (rule.get("http") or {}).get("paths") or []:
                ptype = "Exact" if p.get("pathType") == "Exact" else "Prefix"
                path = p.get("path") or "/"
                if (host, path, ptype) in seen:
                    continue  # the older Ingress keeps it
                seen.add((host, path, ptype))
                route = Route(path, ptype, _backend(ns, name, p.get("backend") or {}))
                if not host:
                    t.any_host.append(route)
                elif host.startswith("*."):
                    t.wildcard_hosts.setdefault(host[2:], []).append(route)
                else:
                    t.exact_hosts.setdefault(host, []).append(route)
    return t
