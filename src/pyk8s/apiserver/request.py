"""Request info: what a URL names, as upstream's RequestInfoFactory resolves it."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["RequestInfo", "parse_path"]


@dataclass(slots=True)
class RequestInfo:
    is_resource: bool = False
    path: str = ""
    prefix: str = ""  # "api" | "apis" | ""
    group: str = ""
    version: str = ""
    namespace: str | None = None
    resource: str = ""
    name: str = ""
    subresource: str = ""
    parts: list[str] = field(default_factory=list)  # path after the subresource (proxy)
    legacy_watch: bool = False
    verb: str = ""


def parse_path(path: str) -> RequestInfo:
    info = RequestInfo(path=path)
    segs = [s for s in path.split("/") if s != ""]
    if not segs or segs[0] not in ("api", "apis"):
        return info
    info.prefix = segs[0]
    if segs[0] == "api":
        if len(segs) < 2:
            return info
        info.version = segs[1]
        rest = segs[2:]
    else:
        if len(segs) < 3:
            if len(segs) == 2:
                info.group = segs[1]
            return info
        info.group, info.version = segs[1], segs[2]
        rest = segs[3:]
    if not rest:
        return info
    info.is_resource = True
    if rest[0] == "watch":
        info.legacy_watch = True
        rest = rest[1:]
        if not rest:
            info.is_resource = False
            return info
    if rest[0] == "namespaces" and len(rest) >= 3 and rest[2] not in ("status", "finalize"):
        info.namespace = rest[1]
        rest = rest[2:]
    elif rest[0] == "namespaces" and len(rest) >= 2:
        # the namespaces resource itself: /namespaces/{name}[/status|/finalize]
        info.resource = "namespaces"
        info.name = rest[1]
        info.subresource = rest[2] if len(rest) > 2 else ""
        return info
    info.resource = rest[0]
    if len(rest) > 1:
        info.name = rest[1]
    if len(rest) > 2:
        info.subresource = rest[2]
    if len(rest) > 3:
        info.parts = rest[3:]
    return info
