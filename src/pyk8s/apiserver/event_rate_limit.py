"""The EventRateLimit admission plug-in (upstream's plugin/pkg/admission/eventratelimit, off by
default): creates and updates of core Events pass token buckets, one per limit of the plug-in's
Configuration (eventratelimit.admission.k8s.io/v1alpha1): for the whole Server, per Namespace, per
User, or per SourceAndObject (the event's source and involved object), each with its qps and
burst; the per-key buckets live in an LRU cache of cacheSize keys (default 4096). An event over
any limit is refused with 429 TooManyRequests, as upstream's. Dry runs are not counted."""

from __future__ import annotations

import time
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from .admission_config import plugin_config
from .rest import RequestContext, RestStorage

__all__ = ["EventRateLimit", "Limit", "load_config"]

_CONFIG_VERSIONS = ("eventratelimit.admission.k8s.io/v1alpha1",)
LIMIT_TYPES = ("Server", "Namespace", "User", "SourceAndObject")
DEFAULT_CACHE_SIZE = 4096


@dataclass(frozen=True)
class Limit:
    type: str
    qps: int
    burst: int
    cache_size: int = DEFAULT_CACHE_SIZE


def load_config(path: str | None) -> list[Limit]:
    """The limits of the plug-in's configuration; an enabled EventRateLimit needs one (as upstream)."""
    found = plugin_config(path, "EventRateLimit")
    if found is None:
        raise ValueError("EventRateLimit: missing configuration: --admission-control-config-file has no "
                         "EventRateLimit entry")
    doc, where = found
    if not isinstance(doc, dict) or doc.get("kind") != "Configuration" or doc.get("apiVersion") not in _CONFIG_VERSIONS:
        raise ValueError(f"{where}: expected kind Configuration of {', '.join(_CONFIG_VERSIONS)}")
    raw = doc.get("limits")
    errs: list[str] = []
    if not isinstance(raw, list) or not raw:
        errs.append("limits: Required value: must not be empty")
        raw = []
    limits: list[Limit] = []
    for i, lim in enumerate(raw):
        if not isinstance(lim, dict):
            errs.append(f"limits[{i}]: must be an object")
            continue
        t, qps, burst, size = lim.get("type"), lim.get("qps"), lim.get("burst"), lim.get("cacheSize", 0)
        if t not in LIMIT_TYPES:
            errs.append(f'limits[{i}].type: Unsupported value: "{t}": supported values: '
                        + ", ".join(f'"{x}"' for x in LIMIT_TYPES))
        for name, v in (("qps", qps), ("burst", burst)):
            if not isinstance(v, int) or isinstance(v, bool) or v <= 0:
                errs.append(f"limits[{i}].{name}: Invalid value: {v}: must be positive")
        if not isinstance(size, int) or isinstance(size, bool) or size < 0:
            errs.append(f"limits[{i}].cacheSize: Invalid value: {size}: must not be negative")
        if not errs:
            assert isinstance(qps, int) and isinstance(burst, int) and isinstance(size, int)
            limits.append(Limit(str(t), qps, burst, size or DEFAULT_CACHE_SIZE))
    if errs:
        raise ValueError(f"{where}: " + "; ".join(errs))
    return limits


class _Bucket:
    """A token bucket that starts full, as client-go's token bucket rate limiter."""

    __slots__ = ("qps", "burst", "tokens", "last")

    def __init__(self, qps: int, burst: int) -> None:
        self.qps, self.burst = qps, burst
        self.tokens, self.last = float(burst), time.monotonic()

    def try_accept(self) -> bool:
        now = time.monotonic()
        self.tokens = min(float(self.burst), self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1:
            self.tokens -= 1
            return True
        return False


def _key(limit_type: str, event: dict[str, Any], ctx: RequestContext) -> str:
    if limit_type == "Namespace":
        return str((event.get("metadata") or {}).get("namespace") or "")
    if limit_type == "User":
        return str(getattr(ctx.user, "name", "") or "")
    if limit_type == "SourceAndObject":
        src, obj = event.get("source") or {}, event.get("involvedObject") or {}
        return "".join(str(v or "") for v in (src.get("component"), src.get("host"), obj.get("kind"),
                                              obj.get("namespace"), obj.get("name"), obj.get("uid"),
                                              obj.get("apiVersion")))
    return ""  # Server: one bucket


class _Enforcer:
    def __init__(self, limit: Limit) -> None:
        self.limit = limit
        self.buckets: OrderedDict[str, _Bucket] = OrderedDict()

    def accept(self, event: dict[str, Any], ctx: RequestContext) -> str | None:
        """None, or why the event is over this limit."""
        key = _key(self.limit.type, event, ctx)
        bucket = self.buckets.get(key)
        if bucket is None:
            bucket = self.buckets[key] = _Bucket(self.limit.qps, self.limit.burst)
            if len(self.buckets) > self.limit.cache_size:
                self.buckets.popitem(last=False)  # the least recently used key starts afresh later
        else:
            self.buckets.move_to_end(key)
        if bucket.try_accept():
            return None
        return f"limit reached on type {self.limit.type} for key {key}"


class EventRateLimit:
    def __init__(self, limits: list[Limit]) -> None:
        self.enforcers = [_Enforcer(lim) for lim in limits]

    def validate(self, rest: RestStorage, res: Resource, op: str, event: dict[str, Any],
                 old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != ("", "Event") or op not in ("CREATE", "UPDATE") or ctx.dry_run:
            return
        # every enforcer takes its token, as upstream's gives each limit its chance to refuse
        errs = [e for e in (enf.accept(event, ctx) for enf in self.enforcers) if e]
        if errs:
            msg = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
            raise E.new_too_many_requests(f"Too many requests: {msg}")
