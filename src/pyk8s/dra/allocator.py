"""The structured-parameters allocator: devices for a pod's unallocated ResourceClaims on one node.

As upstream's k8s.io/dynamic-resource-allocation/structured allocator (v1.33, v1beta1 API):
- the devices a node can use come from ResourceSlices naming it (`nodeName`), selecting it
  (`nodeSelector`) or offered to all nodes (`allNodes`); of each pool only the slices of its
  newest generation count;
- a device matches a request when its DeviceClass's selectors and the request's selectors all
  evaluate to true (CEL, pyk8s.dra.cel); a device allocated to any claim is not available;
- `ExactCount` takes `count` devices, `All` every matching device of the node (none free or
  one of them in use fails the request); `constraints[].matchAttribute` makes the devices of
  the listed requests agree on that attribute (a depth-first search backtracks over choices);
- partitionable devices (KEP-4815's `sharedCounters` / `consumesCounters`): a device is only
  available while what it consumes of its pool's counter sets is left, after the devices in use
  and those chosen so far (how a whole GPU and its memory shares exclude each other);
- the result per claim is upstream's AllocationResult: `devices.results` (request, driver,
  pool, device), `devices.config` (class config FromClass, then claim config FromClaim) and
  the `nodeSelector` of where the devices are reachable (nil when every slice is `allNodes`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.quantity import parse_quantity

__all__ = ["Allocator", "AllocationError", "Candidate", "DeviceID", "allocated_devices", "node_slices",
           "slice_reaches_node"]

DeviceID = tuple[str, str, str]  # driver, pool, device
CounterKey = tuple[str, str, str, str]  # driver, pool, counter set, counter
Obj = Mapping[str, Any]


class AllocationError(Exception):
    """Something that makes allocating impossible everywhere (a missing class, a CEL error)."""


@dataclass(slots=True)
class Candidate:
    """One device a node can reach, with where its slice says it is reachable."""

    id: DeviceID
    basic: Obj
    via: str  # "node", "selector" or "all"
    selector: Obj | None = None
    consumes: dict[CounterKey, int] = field(default_factory=dict)  # milli-units
    version: str = ""  # its slice's resourceVersion: selector results are cached per version
    _activation: dict[str, Any] | None = None

    def activation(self) -> dict[str, Any]:
        if self._activation is None:
            from .cel import device_activation

            self._activation = device_activation(self.id[0], self.basic)
        return self._activation


def allocated_devices(claims: Iterable[Obj], skip_uid: str = "") -> set[DeviceID]:
    """Every device some claim's status.allocation holds (upstream's allocated-devices view)."""
    out: set[DeviceID] = set()
    for c in claims:
        if skip_uid and (c.get("metadata") or {}).get("uid") == skip_uid:
            continue
        alloc = (c.get("status") or {}).get("allocation") or {}
        for r in (alloc.get("devices") or {}).get("results") or ():
            out.add((r.get("driver", ""), r.get("pool", ""), r.get("device", "")))
    return out


def slice_reaches_node(spec: Obj, node_name: str, node_labels: Mapping[str, str],
                       match_selector: Callable[[Obj, str, Mapping[str, str]], bool]) -> str | None:
    """How a slice reaches the node ("node", "selector", "all"), or None."""
    if spec.get("nodeName"):
        return "node" if spec["nodeName"] == node_name else None
    if spec.get("allNodes"):
        return "all"
    if spec.get("nodeSelector") and match_selector(spec["nodeSelector"], node_name, node_labels):
        return "selector"
    return None


def _milli(v: Any) -> int:
    try:
        return parse_quantity(v.get("value") if isinstance(v, dict) else v).to_milli()
    except ValueError:
        return 0


def node_slices(slices: Iterable[Obj], node_name: str, node_labels: Mapping[str, str],
                match_selector: Callable[[Obj, str, Mapping[str, str]], bool],
                counters: dict[CounterKey, int] | None = None) -> list[Candidate]:
    """The devices of the newest generation of each pool that the node reaches, in slice order;
    `counters` gets those pools' shared counters (milli-units)."""
    newest: dict[tuple[str, str], int] = {}
    slices = list(slices)
    for s in slices:
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        newest[key] = max(newest.get(key, 0), int(pool.get("generation") or 0))
    out: list[Candidate] = []
    for s in sorted(slices, key=lambda s: (s.get("metadata") or {}).get("name", "")):
        spec = s.get("spec") or {}
        pool = spec.get("pool") or {}
        key = (spec.get("driver", ""), pool.get("name", ""))
        if int(pool.get("generation") or 0) != newest[key]:
            continue
        via = slice_reaches_node(spec, node_name, node_labels, match_selector)
        if via is None:
            continue
        if counters is not None:
            for cs in spec.get("sharedCounters") or ():
                for cname, v in (cs.get("counters") or {}).items():
                    counters[(key[0], key[1], cs.get("name", ""), cname)] = _milli(v)
        for d in spec.get("devices") or ():
            basic = d.get("basic") or {}
            consumes = {(key[0], key[1], c.get("counterSet", ""), cname): _milli(v)
                        for c in basic.get("consumesCounters") or () for cname, v in (c.get("counters") or {}).items()}
            out.append(Candidate((key[0], key[1], d.get("name", "")), basic, via,
                                 spec.get("nodeSelector") if via == "selector" else None, consumes,
                                 (s.get("metadata") or {}).get("resourceVersion", "")))
    return out


@dataclass(slots=True)
class _Request:
    claim_index: int
    name: str
    mode: str
    count: int
    matching: list[Candidate] = field(default_factory=list)


def _selectors_of(obj: Obj) -> list[str]:
    return [((s or {}).get("cel") or {}).get("expression", "") for s in obj.get("selectors") or ()]


class Allocator:
    """Allocates a pod's claims on one node; `allocate` returns one AllocationResult per claim or None."""

    def __init__(self, classes: Callable[[str], Obj | None]) -> None:
        self.classes = classes
        self._left: dict[CounterKey, int] = {}  # counters left during one allocate()

    def _matches(self, claim: Obj, req: Obj, dev: Candidate) -> bool:
        # cel-python (with lark and pendulum) costs a process ~19 MB: loaded by the first selector
        from .cel import CELError

        cls = self.classes(req.get("deviceClassName", ""))
        if cls is None:
            raise AllocationError(f"request {req.get('name')}: device class {req.get('deviceClassName')} does not exist")
        for where, exprs in (("class " + (cls.get("metadata") or {}).get("name", ""), _selectors_of(cls.get("spec") or {})),
                             ("request " + str(req.get("name")), _selectors_of(req))):
            for i, expr in enumerate(exprs):
                try:
                    if not _cached_match(expr, dev):
                        return False
                except CELError as e:
                    md = claim.get("metadata") or {}
                    raise AllocationError(f"claim {md.get('namespace')}/{md.get('name')}: selector #{i}: {e}"
                                          if where.startswith("request") else
                                          f"{where}: selector #{i}: {e}") from None
        return True

    def allocate(self, claims: list[Obj], node_name: str, candidates: list[Candidate],
                 in_use: set[DeviceID], counters: Mapping[CounterKey, int] | None = None) -> list[dict[str, Any]] | None:
        left = dict(counters or {})
        for d in candidates:
            if d.id in in_use:
                for k, v in d.consumes.items():
                    left[k] = left.get(k, 0) - v
        self._left = left
        requests: list[_Request] = []
        for ci, claim in enumerate(claims):
            for req in ((claim.get("spec") or {}).get("devices") or {}).get("requests") or ():
                matching = [d for d in candidates if self._matches(claim, req, d)]
                mode = req.get("allocationMode") or "ExactCount"
                if mode == "All":
                    if not matching or any(d.id in in_use for d in matching):
                        return None
                    count = len(matching)
                else:
                    count = int(req.get("count") or 1)
                    matching = [d for d in matching if d.id not in in_use]
                    if len(matching) < count:
                        return None
                requests.append(_Request(ci, req.get("name", ""), mode, count, matching))
        constraints = [[(ci, c) for c in ((claim.get("spec") or {}).get("devices") or {}).get("constraints") or ()]
                       for ci, claim in enumerate(claims)]
        chosen: list[list[Candidate]] = [[] for _ in requests]
        taken: set[DeviceID] = set()
        if not self._search(requests, 0, chosen, taken, constraints):
            return None
        return [self._result(ci, claims[ci], requests, chosen, node_name) for ci in range(len(claims))]

    def _search(self, requests: list[_Request], i: int, chosen: list[list[Candidate]], taken: set[DeviceID],
                constraints: list[list[tuple[int, Obj]]]) -> bool:
        if i == len(requests):
            return True
        req = requests[i]
        if len(chosen[i]) == req.count:
            return self._search(requests, i + 1, chosen, taken, constraints)
        start = requests[i].matching.index(chosen[i][-1]) + 1 if chosen[i] else 0
        left = self._left
        for dev in req.matching[start:]:
            if dev.id in taken or not self._agrees(requests, i, dev, chosen, constraints):
                continue
            if any(left.get(k, 0) < v for k, v in dev.consumes.items()):
                continue  # its counter set (a GPU a share of which is taken, ...) has not enough left
            chosen[i].append(dev)
            taken.add(dev.id)
            for k, v in dev.consumes.items():
                left[k] = left.get(k, 0) - v
            if self._search(requests, i, chosen, taken, constraints):
                return True
            chosen[i].pop()
            taken.discard(dev.id)
            for k, v in dev.consumes.items():
                left[k] += v
        return False

    @staticmethod
    def _agrees(requests: list[_Request], i: int, dev: Candidate, chosen: list[list[Candidate]],
                constraints: list[list[tuple[int, Obj]]]) -> bool:
        req = requests[i]
        for _, c in constraints[req.claim_index]:
            names = c.get("requests") or [r.name for r in requests if r.claim_index == req.claim_index]
            if req.name not in names:
                continue
            attr = c.get("matchAttribute", "")
            mine = _attribute(dev, attr)
            for j, other in enumerate(requests):
                if other.claim_index != req.claim_index or other.name not in names:
                    continue
                for d in chosen[j]:
                    if mine is None or _attribute(d, attr) != mine:
                        return False
            if mine is None:
                return False
        return True

    def _result(self, ci: int, claim: Obj, requests: list[_Request], chosen: list[list[Candidate]],
                node_name: str) -> dict[str, Any]:
        results = []
        devices: list[Candidate] = []
        for r, devs in zip(requests, chosen, strict=True):
            if r.claim_index != ci:
                continue
            for d in devs:
                results.append({"request": r.name, "driver": d.id[0], "pool": d.id[1], "device": d.id[2]})
                devices.append(d)
        config: list[dict[str, Any]] = []
        spec_devices = (claim.get("spec") or {}).get("devices") or {}
        for req in spec_devices.get("requests") or ():
            cls = self.classes(req.get("deviceClassName", "")) or {}
            for cfg in (cls.get("spec") or {}).get("config") or ():
                config.append({"source": "FromClass", "requests": [req.get("name", "")], **cfg})
        for cfg in spec_devices.get("config") or ():
            config.append({"source": "FromClaim", **cfg})
        out: dict[str, Any] = {"devices": {"results": results}}
        if config:
            out["devices"]["config"] = config
        selector = _node_selector(devices, node_name)
        if selector is not None:
            out["nodeSelector"] = selector
        return out


# (expression, device, slice resourceVersion) -> result: a device's attributes only change with
# its slice, and cel-python costs tens of microseconds per evaluation
_MATCHES: dict[tuple[str, DeviceID, str], bool] = {}
_MATCHES_MAX = 200_000


def _cached_match(expr: str, dev: Candidate) -> bool:
    from .cel import compile_selector, device_matches

    if not dev.version:
        return device_matches(compile_selector(expr), dev.activation())
    key = (expr, dev.id, dev.version)
    hit = _MATCHES.get(key)
    if hit is None:
        hit = device_matches(compile_selector(expr), dev.activation())  # errors are not cached
        if len(_MATCHES) >= _MATCHES_MAX:
            _MATCHES.clear()
        _MATCHES[key] = hit
    return hit


def _attribute(dev: Candidate, qualified: str) -> Any:
    attrs = dev.basic.get("attributes") or {}
    domain, _, name = qualified.partition("/")
    v = attrs.get(qualified)
    if v is None and domain == dev.id[0]:
        v = attrs.get(name)
    if not isinstance(v, dict):
        return None
    for k in ("int", "bool", "string", "version"):
        if k in v:
            return (k, v[k])
    return None


def _node_selector(devices: list[Candidate], node_name: str) -> dict[str, Any] | None:
    """Where the allocation can be used: the node itself when a device is local to it, a slice's
    selector when that is the only restriction, anywhere (None) when every slice is allNodes."""
    if any(d.via == "node" for d in devices):
        return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [node_name]}]}]}
    selectors = [d.selector for d in devices if d.via == "selector" and d.selector]
    if len(selectors) == 1 or (selectors and all(s == selectors[0] for s in selectors)):
        return dict(selectors[0])  # type: ignore[arg-type]
    if selectors:
        return {"nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In",
                                                        "values": [node_name]}]}]}
    return None
