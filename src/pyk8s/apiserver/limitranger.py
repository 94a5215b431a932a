"""The LimitRanger admission plug-in (upstream's plugin/pkg/admission/limitranger).

Pods and PersistentVolumeClaims in a namespace with LimitRanges: a pod create gets each
`type: Container` item's `default` (limits) and `defaultRequest` for what its containers and
init containers leave unset, noted in the `kubernetes.io/limit-ranger` annotation; then the
pod (create) or claim (create and update) is checked against each item's min, max and
maxLimitRequestRatio, per Container, per Pod (the pod's effective requests and limits) and per
PersistentVolumeClaim (its storage request). Violations refuse the request with 403 and all
messages, as upstream aggregates them. Pod updates are not judged (a pod's resources are immutable
there). Upstream v1.33 also judges in-place resizes (pods/resize); this server does not serve that
subresource yet, so whoever adds it must add its check here.

LimitRanges come from the watch cache (one dict lookup per create where the namespace has none).
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.quantity import Quantity, QuantityError, parse_quantity
from ..api.resources import Resource
from .rest import RequestContext, RestStorage

__all__ = ["admit", "validate", "LIMIT_RANGER_ANNOTATION"]

LIMIT_RANGER_ANNOTATION = "kubernetes.io/limit-ranger"
_MAX_MILLI = (1 << 63) // 1000  # upstream's resource.MaxMilliValue
_MAX_MILLI_NANOS = _MAX_MILLI * 1_000_000_000  # (the largest quantity whose Value() is at most that)
_Resources = dict[str, Quantity]


def _supported(res: Resource, op: str, ctx: RequestContext) -> str:
    """'pod', 'pvc' or '' for what LimitRanger judges, as upstream's SupportsAttributes: pod creates,
    claims' creates and updates."""
    if ctx.subresource or not res.namespaced or res.group:
        return ""
    if res.resource == "pods":
        return "pod" if op == "CREATE" else ""
    if res.resource == "persistentvolumeclaims" and op in ("CREATE", "UPDATE"):
        return "pvc"
    return ""


async def _limit_ranges(rest: RestStorage, ns: str | None) -> list[dict[str, Any]]:
    if not ns:
        return []
    lr_res = rest.registry.get("", "v1", "limitranges")
    if lr_res is None:
        return []
    cache = await rest.cache_for(lr_res)
    if not cache.count(ns):  # the common case: nothing to do
        return []
    return sorted(cache.list(ns), key=lambda o: o["metadata"]["name"])


def _items(lr: dict[str, Any]) -> list[dict[str, Any]]:
    return [i for i in ((lr.get("spec") or {}).get("limits") or []) if isinstance(i, dict)]


class _Item:
    """One LimitRange item with its quantities parsed."""

    __slots__ = ("type", "min", "max", "ratio")

    def __init__(self, item: dict[str, Any]) -> None:
        self.type = item.get("type")
        self.min = _resources(item.get("min"))
        self.max = _resources(item.get("max"))
        self.ratio = _resources(item.get("maxLimitRequestRatio"))


# parsed items by (uid, resourceVersion): each LimitRange's quantities are parsed once, not per request
_COMPILED: dict[tuple[str, str], list[_Item]] = {}


def _compiled(lr: dict[str, Any]) -> list[_Item]:
    md = lr.get("metadata") or {}
    key = (str(md.get("uid")), str(md.get("resourceVersion")))
    got = _COMPILED.get(key)
    if got is None:
        if len(_COMPILED) > 1024:
            _COMPILED.clear()
        got = _COMPILED[key] = [_Item(i) for i in _items(lr)]
    return got


def _qty(v: Any) -> Quantity | None:
    try:
        return parse_quantity(v)
    except QuantityError:
        return None


def _resources(rl: Any) -> _Resources:
    out: _Resources = {}
    for k, v in (rl or {}).items() if isinstance(rl, dict) else ():
        q = _qty(v)
        if q is not None:
            out[k] = q
    return out


# ---- defaults (mutating) --------------------------------------------------------------------------

def _default_requirements(ranges: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(requests, limits) from every Container item: later ranges win, as upstream's loop over them."""
    requests: dict[str, Any] = {}
    limits: dict[str, Any] = {}
    for lr in ranges:
        for item in _items(lr):
            if item.get("type") == "Container":
                requests.update(item.get("defaultRequest") or {})
                limits.update(item.get("default") or {})
    return requests, limits


def _merge_container(c: dict[str, Any], requests: dict[str, Any], limits: dict[str, Any], prefix: str,
                     notes: list[str]) -> None:
    res = c.get("resources")
    if not isinstance(res, dict):
        res = c["resources"] = {}
    have_lim: dict[str, Any] = res["limits"] if isinstance(res.get("limits"), dict) else {}
    have_req: dict[str, Any] = res["requests"] if isinstance(res.get("requests"), dict) else {}
    set_lim = sorted(k for k in limits if k not in have_lim)
    set_req = sorted(k for k in requests if k not in have_req)
    if set_lim:
        res["limits"] = {**have_lim, **{k: limits[k] for k in set_lim}}
    if set_req:
        res["requests"] = {**have_req, **{k: requests[k] for k in set_req}}
    name = c.get("name", "")
    if set_req:
        notes.append(f"{', '.join(set_req)} request for {prefix} {name}")
    if set_lim:
        notes.append(f"{', '.join(set_lim)} limit for {prefix} {name}")


async def admit(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                old: dict[str, Any] | None, ctx: RequestContext) -> None:
    """Mutating half: the Container defaults into a created pod."""
    if _supported(res, op, ctx) != "pod":
        return
    ranges = await _limit_ranges(rest, (obj.get("metadata") or {}).get("namespace"))
    if not ranges:
        return
    requests, limits = _default_requirements(ranges)
    if not requests and not limits:
        return
    spec = obj.get("spec") or {}
    notes: list[str] = []
    for key, prefix in (("containers", "container"), ("initContainers", "init container")):
        for c in spec.get(key) or []:
            if isinstance(c, dict):
                _merge_container(c, requests, limits, prefix, notes)
    if notes:
        md = obj.setdefault("metadata", {})
        ann = md.get("annotations") if isinstance(md.get("annotations"), dict) else {}
        ann[LIMIT_RANGER_ANNOTATION] = "LimitRanger plugin set: " + "; ".join(notes)
        md["annotations"] = ann


# ---- constraints (validating) ---------------------------------------------------------------------

def _ceil_div(n: int, d: int) -> int:
    return -(-n // d)


def _values(req: Quantity | None, lim: Quantity | None, enforced: Quantity) -> tuple[int, int, int]:
    """upstream's requestLimitEnforcedValues: milli-units where none would overflow, else units (each
    rounded up, as Value/MilliValue do)."""
    r, li, e = (req.nanos if req else 0), (lim.nanos if lim else 0), enforced.nanos
    if max(r, li, e) <= _MAX_MILLI_NANOS:
        return _ceil_div(r, 1_000_000), _ceil_div(li, 1_000_000), _ceil_div(e, 1_000_000)
    return _ceil_div(r, 1_000_000_000), _ceil_div(li, 1_000_000_000), _ceil_div(e, 1_000_000_000)


def _min(kind: str, name: str, enforced: Quantity, requests: _Resources, limits: _Resources) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _values(req, lim, enforced)
    if req is None:
        return f"minimum {name} usage per {kind} is {enforced}.  No request is specified"
    if r < e:
        return f"minimum {name} usage per {kind} is {enforced}, but request is {req}"
    if lim is not None and li < e:
        return f"minimum {name} usage per {kind} is {enforced}, but limit is {lim}"
    return None


def _max(kind: str, name: str, enforced: Quantity, requests: _Resources, limits: _Resources) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, e = _values(req, lim, enforced)
    if lim is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No limit is specified"
    if li > e:
        return f"maximum {name} usage per {kind} is {enforced}, but limit is {lim}"
    if req is not None and r > e:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _max_request(kind: str, name: str, enforced: Quantity, requests: _Resources) -> str | None:
    """A claim's max applies to what it requests (its limits are not user input)."""
    req = requests.get(name)
    r, _, e = _values(req, None, enforced)
    if req is None:
        return f"maximum {name} usage per {kind} is {enforced}.  No request is specified"
    if r > e:
        return f"maximum {name} usage per {kind} is {enforced}, but request is {req}"
    return None


def _ratio(kind: str, name: str, enforced: Quantity, requests: _Resources, limits: _Resources) -> str | None:
    req, lim = requests.get(name), limits.get(name)
    r, li, _ = _values(req, lim, enforced)
    if req is None or r == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, "
                "but no request is specified or request is 0")
    if lim is None or li == 0:
        return (f"{name} max limit to request ratio per {kind} is {enforced}, "
                "but no limit is specified or limit is 0")
    observed = li / r
    shown = observed
    allowed = float(enforced.value())
    if enforced.value() <= _MAX_MILLI:  # compare in milli-units as upstream, for fractional ratios
        observed *= 1000
        allowed = float(enforced.milli_value())
    if observed > allowed:
        return f"{name} max limit to request ratio per {kind} is {enforced}, but provided ratio is {shown:f}"
    return None


def _check(kind: str, item: _Item, requests: _Resources, limits: _Resources, errs: list[str]) -> None:
    for name, q in item.min.items():
        errs.append(_min(kind, name, q, requests, limits) or "")
    for name, q in item.max.items():
        errs.append(_max(kind, name, q, requests, limits) or "")
    for name, q in item.ratio.items():
        errs.append(_ratio(kind, name, q, requests, limits) or "")


def _container_resources(c: dict[str, Any]) -> tuple[_Resources, _Resources]:
    r: dict[str, Any] = c["resources"] if isinstance(c.get("resources"), dict) else {}
    return _resources(r.get("requests")), _resources(r.get("limits"))


def _add(into: _Resources, more: _Resources) -> None:
    for k, v in more.items():
        into[k] = into[k] + v if k in into else v


def _pod_totals(spec: dict[str, Any], parsed: dict[int, tuple[_Resources, _Resources]], which: int) -> _Resources:
    """The pod's effective requests (which=0) or limits (1), as upstream's PodRequests/PodLimits:
    the containers' sum, raised to any init container's (sidecars, restartPolicy Always, run
    alongside what starts after them); the pod's overhead is not counted, as upstream leaves it out."""
    total: _Resources = {}
    for c in spec.get("containers") or []:
        if isinstance(c, dict):
            _add(total, parsed[id(c)][which])
    sidecars: _Resources = {}
    init_max: _Resources = {}
    for c in spec.get("initContainers") or []:
        if not isinstance(c, dict):
            continue
        own = parsed[id(c)][which]
        if c.get("restartPolicy") == "Always":
            _add(sidecars, own)
            step = dict(sidecars)
        else:
            step = dict(sidecars)
            _add(step, own)
        for k, v in step.items():
            if k not in init_max or v > init_max[k]:
                init_max[k] = v
    _add(total, sidecars)
    for k, v in init_max.items():
        if k not in total or v > total[k]:
            total[k] = v
    return total


def _pod_errors(ranges: list[dict[str, Any]], pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    ctrs = [c for key in ("containers", "initContainers") for c in spec.get(key) or [] if isinstance(c, dict)]
    parsed = {id(c): _container_resources(c) for c in ctrs}  # each container's quantities parsed once
    errs: list[str] = []
    for lr in ranges:
        for item in _compiled(lr):
            kind = item.type
            if kind == "Container":
                for c in ctrs:
                    req, lim = parsed[id(c)]
                    _check("Container", item, req, lim, errs)
            elif kind == "Pod":
                _check("Pod", item, _pod_totals(spec, parsed, 0), _pod_totals(spec, parsed, 1), errs)
    return errs


def _pvc_errors(ranges: list[dict[str, Any]], pvc: dict[str, Any]) -> list[str]:
    requests = _resources(((pvc.get("spec") or {}).get("resources") or {}).get("requests"))
    errs: list[str] = []
    for lr in ranges:
        for item in _compiled(lr):
            if item.type != "PersistentVolumeClaim":
                continue
            for name, q in item.min.items():
                errs.append(_min("PersistentVolumeClaim", name, q, requests, {}) or "")
            for name, q in item.max.items():
                errs.append(_max_request("PersistentVolumeClaim", name, q, requests) or "")
    return errs


def aggregate(errs: list[str]) -> str:
    """upstream's utilerrors.NewAggregate(...).Error(): one message alone, several in brackets, each once."""
    seen: list[str] = []
    for e in errs:
        if e and e not in seen:
            seen.append(e)
    if len(seen) == 1:
        return seen[0]
    return "[" + ", ".join(seen) + "]" if seen else ""


async def validate(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                   old: dict[str, Any] | None, ctx: RequestContext) -> None:
    """Validating half: min, max and ratio for the pod or claim."""
    what = _supported(res, op, ctx)
    if not what:
        return
    md = obj.get("metadata") or {}
    ranges = await _limit_ranges(rest, md.get("namespace"))
    if not ranges:
        return
    msg = aggregate(_pvc_errors(ranges, obj) if what == "pvc" else _pod_errors(ranges, obj))
    if msg:
        raise E.new_forbidden(res.resource, md.get("name") or "", msg)
