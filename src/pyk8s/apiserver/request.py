"""Request info: what a URL names, as upstream's RequestInfoFactory resolves it."""

from __future__ import annotations

from dataclasses import dataclass

from .query_params import parse_bool

__all__ = ["RequestInfo", "parse_path", "request_verb"]


@dataclass(frozen=True, slots=True)
class RequestInfo:
    """Immutable: parse_path hands one instance out for every request to the same path."""

    is_resource: bool = False
    path: str = ""
    prefix: str = ""  # "api" | "apis" | ""
    group: str = ""
    version: str = ""
    namespace: str | None = None
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: tuple[str, ...] = ()  # path after the subresource (proxy)
    legacy_watch: bool = False
    verb: str = ""


_PARSED: dict[str, RequestInfo] = {}


def parse_path(path: str) -> RequestInfo:
    """What a URL path names; remembered per path (bounded): clients repeat collection paths."""
    info = _PARSED.get(path)
    if info is None:
        info = _parse(path)
        if len(path) <= 512:
            if len(_PARSED) >= 4096:
                _PARSED.clear()
            _PARSED[path] = info
    return info


def _parse(path: str) -> RequestInfo:
    segs = [s for s in path.split("/") if s != ""]
    if not segs or segs[0] not in ("api", "apis"):
        return RequestInfo(path=path)
    prefix = segs[0]
    group = ""
    if prefix == "api":
        if len(segs) < 2:
            return RequestInfo(path=path, prefix=prefix)
        version = segs[1]
        rest = segs[2:]
    else:
        if len(segs) < 3:
            return RequestInfo(path=path, prefix=prefix, group=segs[1] if len(segs) == 2 else "")
        group, version = segs[1], segs[2]
        rest = segs[3:]
    if not rest:
        return RequestInfo(path=path, prefix=prefix, group=group, version=version)
    legacy_watch = False
    if rest[0] == "watch":
        legacy_watch = True
        rest = rest[1:]
        if not rest:
            return RequestInfo(path=path, prefix=prefix, group=group, version=version, legacy_watch=True)
    namespace = None
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        namespace = rest[1]
        rest = rest[2:]
    elif rest[0] == "namespaces" and len(rest) >= 2:
        # the namespaces resource itself: /namespaces/{name}[/status|/finalize]
        return RequestInfo(True, path, prefix, group, version, None, "namespaces", rest[1],
                           rest[2] if len(rest) > 2 else "", (), legacy_watch)
    return RequestInfo(True, path, prefix, group, version, namespace, rest[0], rest[1] if len(rest) > 1 else "",
                       rest[2] if len(rest) > 2 else "", tuple(rest[3:]), legacy_watch)


_METHOD_VERBS = {"GET": "get", "HEAD": "get", "POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete"}
_CONNECT = frozenset(("exec", "attach", "portforward"))


def request_verb(method: str, info: RequestInfo, watch: str | None) -> str:
    """The verb upstream's RequestInfoFactory gives a request, computed once per request for
    APF, authorization and the handlers. `watch`: the query's watch parameter (a collection GET
    with it set, as its conversion reads it, is a watch). A non-resource request's verb is its
    method, lowercased."""
    if not info.is_resource:
        return method.lower()
    verb = _METHOD_VERBS.get(method) or method.lower()
    if verb == "get":
        if info.subresource in _CONNECT and method == "GET":
            return "create"  # WebSocket upgrades arrive as GET; upstream (1.31+) authorizes them as create
        if not info.name:
            return "watch" if info.legacy_watch or parse_bool(watch) else "list"
    elif verb == "delete" and not info.name:
        return "deletecollection"
    return verb
