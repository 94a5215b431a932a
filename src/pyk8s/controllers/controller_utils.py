"""Pieces the workload controllers share, as upstream's pkg/controller/controller_utils.go and
controller_ref_manager.go: expectations, pod readiness and availability, owner references
(adoption and release), pods from templates, slow-start batches, the order in which pods are
deleted, and the pod-template-hash.

Everything here is a pure function over wire-form dicts, or a small class with no I/O, except
`claim_objects` and `slow_start_batch`, which drive callables they are given.
"""

from __future__ import annotations

import asyncio
import logging
import math
import time
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cmp_to_key
from typing import Any

import orjson

from ..api.errors import StatusError
from ..api.labels import Selector
from ..api.timefmt import parse_time_or_none

__all__ = [
    "ControllerExpectations",
    "EXPECTATIONS_TIMEOUT",
    "BURST_REPLICAS",
    "SLOW_START_INITIAL_BATCH_SIZE",
    "POD_DELETION_COST",
    "controller_ref",
    "new_controller_ref",
    "controller_uid_index",
    "CONTROLLER_INDEX",
    "is_pod_active",
    "is_pod_ready",
    "pod_ready_time",
    "is_pod_available",
    "available_in",
    "filter_active_pods",
    "pod_from_template",
    "claim_objects",
    "adopt_patch",
    "release_patch",
    "slow_start_batch",
    "sort_pods_for_deletion",
    "pods_ranked_by_related_pods_on_same_node",
    "fnv32a",
    "safe_encode_string",
    "compute_hash",
    "is_namespace_terminating",
]

log = logging.getLogger("pyk8s.controllers")

# As upstream: expectations older than five minutes are treated as satisfied, so a lost watch
# event can stall a controller for at most that long.
EXPECTATIONS_TIMEOUT = 300.0
# As upstream's replicaset controller: at most this many creates or deletes per sync.
BURST_REPLICAS = 500
SLOW_START_INITIAL_BATCH_SIZE = 1
POD_DELETION_COST = "controller.kubernetes.io/pod-deletion-cost"

# Informer index name: controller UID of an object, or "orphan/<namespace>" when it has none.
CONTROLLER_INDEX = "pyk8s.io/controller-uid"


# ---- expectations -------------------------------------------------------------------------

@dataclass
class _Expectation:
    add: int = 0
    deletes: set[str] = field(default_factory=set)
    timestamp: float = field(default_factory=time.monotonic)

    def fulfilled(self) -> bool:
        return self.add <= 0 and not self.deletes


class ControllerExpectations:
    """How many creations, and which deletions, a controller waits to observe before it acts again.

    As upstream's UIDTrackingControllerExpectations: creations are a count (the names are chosen
    by the server), deletions are the keys of the pods asked to go, so a pod that disappears for
    another reason does not count twice.
    """

    def __init__(self, timeout: float = EXPECTATIONS_TIMEOUT) -> None:
        self.timeout = timeout
        self._store: dict[str, _Expectation] = {}

    def satisfied(self, key: str) -> bool:
        exp = self._store.get(key)
        if exp is None:
            return True  # new controller, or the expectations were deleted: sync
        if exp.fulfilled():
            return True
        if time.monotonic() - exp.timestamp > self.timeout:
            log.debug("expectations of %s expired", key)
            return True
        return False

    def expect_creations(self, key: str, n: int) -> None:
        self._store[key] = _Expectation(add=n)

    def expect_deletions(self, key: str, pod_keys: Iterable[str]) -> None:
        self._store[key] = _Expectation(deletes=set(pod_keys))

    def creation_observed(self, key: str) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.add -= 1

    def deletion_observed(self, key: str, pod_key: str) -> None:
        exp = self._store.get(key)
        if exp is not None:
            exp.deletes.discard(pod_key)

    def delete(self, key: str) -> None:
        self._store.pop(key, None)

    def pending(self, key: str) -> tuple[int, int]:
        exp = self._store.get(key)
        return (0, 0) if exp is None else (exp.add, len(exp.deletes))


# ---- owner references ---------------------------------------------------------------------

def controller_ref(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def new_controller_ref(owner: Mapping[str, Any], api_version: str, kind: str) -> dict[str, Any]:
    md = owner["metadata"]
    return {"apiVersion": api_version, "kind": kind, "name": md["name"], "uid": md["uid"],
            "controller": True, "blockOwnerDeletion": True}


def controller_uid_index(obj: dict[str, Any]) -> list[str]:
    ref = controller_ref(obj)
    if ref is not None:
        return [ref.get("uid", "")]
    return ["orphan/" + (obj.get("metadata") or {}).get("namespace", "")]


def adopt_patch(obj: Mapping[str, Any], ref: dict[str, Any]) -> dict[str, Any]:
    # the uid makes the patch fail (422) if the object was deleted and re-created meanwhile
    return {"metadata": {"ownerReferences": [ref], "uid": obj["metadata"]["uid"]}}


def release_patch(obj: Mapping[str, Any], owner_uid: str) -> dict[str, Any]:
    return {"metadata": {"ownerReferences": [{"$patch": "delete", "uid": owner_uid}],
                         "uid": obj["metadata"]["uid"]}}


async def claim_objects(
    owner: Mapping[str, Any],
    selector: Selector,
    objects: Iterable[dict[str, Any]],
    adopt: Callable[[dict[str, Any]], Awaitable[dict[str, Any] | None]],
    release: Callable[[dict[str, Any]], Awaitable[None]],
    can_adopt: Callable[[], Awaitable[str | None]],
) -> list[dict[str, Any]]:
    """The objects `owner` controls after adopting matching orphans and releasing non-matching children.

    As upstream's ControllerRefManager.ClaimObject: an object controlled by someone else is
    left alone; ours that stopped matching is released (unless we are being deleted); a
    matching orphan is adopted unless it or we are being deleted, after `can_adopt` (a fresh,
    uncached read of the owner, called at most once) says the owner is still the same live
    object. Errors are collected and raised after the pass, as upstream aggregates them.
    """
    uid = owner["metadata"]["uid"]
    owner_deleting = bool(owner["metadata"].get("deletionTimestamp"))
    claimed: list[dict[str, Any]] = []
    errors: list[str] = []
    adopt_checked: list[str | None] = []
    for obj in objects:
        md = obj.get("metadata") or {}
        ref = None
        for r in md.get("ownerReferences") or ():
            if r.get("controller"):
                ref = r
                break
        matches = selector.matches(md.get("labels") or {})
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches:
                claimed.append(obj)
                continue
            if owner_deleting:
                continue
            try:
                await release(obj)
            except StatusError as e:
                # gone, or no longer ours (422 on the uid precondition): nothing to release
                if e.code not in (404, 422):
                    errors.append(str(e))
            continue
        if owner_deleting or not matches or md.get("deletionTimestamp"):
            continue
        if not adopt_checked:
            adopt_checked.append(await can_adopt())
        if adopt_checked[0] is not None:
            errors.append(adopt_checked[0])
            continue
        try:
            adopted = await adopt(obj)
        except StatusError as e:
            if e.code != 404:
                errors.append(str(e))
            continue
        if adopted is not None:
            claimed.append(adopted)
    if errors:
        raise StatusError(500, "InternalError", "[" + ", ".join(errors) + "]" if len(errors) > 1 else errors[0])
    return claimed


# ---- pods ---------------------------------------------------------------------------------

def is_pod_active(pod: Mapping[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    return phase not in ("Succeeded", "Failed") and not (pod.get("metadata") or {}).get("deletionTimestamp")


def filter_active_pods(pods: Iterable[dict[str, Any]]) -> list[dict[str, Any]]:
    return [p for p in pods if is_pod_active(p)]


def _ready_condition(pod: Mapping[str, Any]) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            return c
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    c = _ready_condition(pod)
    return c is not None and c.get("status") == "True"


def pod_ready_time(pod: Mapping[str, Any]) -> float | None:
    """When the pod last became ready (None if it is not ready or the time is unknown)."""
    c = _ready_condition(pod)
    if c is None or c.get("status") != "True":
        return None
    return parse_time_or_none(c.get("lastTransitionTime"))


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> bool:
    """Ready for at least minReadySeconds, as upstream's podutil.IsPodAvailable."""
    if not is_pod_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    t = pod_ready_time(pod)
    return t is not None and t + min_ready_seconds < now


def available_in(pod: Mapping[str, Any], min_ready_seconds: int, now: float) -> float | None:
    """Seconds until a ready pod becomes available (None if it is not ready, 0 if it already is)."""
    if not is_pod_ready(pod):
        return None
    t = pod_ready_time(pod)
    if not min_ready_seconds or t is None:
        return 0.0
    return max(0.0, t + min_ready_seconds - now)


def pod_from_template(template: Mapping[str, Any], owner_name: str, ref: dict[str, Any]) -> dict[str, Any]:
    """A pod for a controller, as upstream's GetPodFromTemplate: generateName `<owner>-`, the
    template's labels, annotations and finalizers, the controller reference, the template's spec."""
    tmd = template.get("metadata") or {}
    md: dict[str, Any] = {"generateName": f"{owner_name}-", "ownerReferences": [ref]}
    for k in ("labels", "annotations", "finalizers"):
        if tmd.get(k):
            md[k] = orjson.loads(orjson.dumps(tmd[k]))
    spec = orjson.loads(orjson.dumps(template.get("spec") or {}))
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def is_namespace_terminating(e: BaseException) -> bool:
    if not isinstance(e, StatusError):
        return False
    causes = (e.details or {}).get("causes") or ()
    return any(c.get("reason") == "NamespaceTerminating" for c in causes) or \
        (e.code == 403 and "because it is being terminated" in e.message)


# ---- slow start ---------------------------------------------------------------------------

async def slow_start_batch(count: int, initial_batch: int,
                           fn: Callable[[], Awaitable[Any]]) -> tuple[int, BaseException | None]:
    """Call fn `count` times in batches of 1, 2, 4, ... run concurrently; stop after a batch with errors.

    As upstream's slowStartBatch: a request that fails for everyone (quota, admission) fails
    once or twice rather than hundreds of times. Returns (successes, first error).
    """
    remaining = count
    successes = 0
    batch = min(remaining, initial_batch)
    while batch > 0:
        results = await asyncio.gather(*(fn() for _ in range(batch)), return_exceptions=True)
        errors = [r for r in results if isinstance(r, BaseException)]
        successes += batch - len(errors)
        if errors:
            for e in errors:
                if isinstance(e, asyncio.CancelledError):
                    raise e
            return successes, errors[0]
        remaining -= batch
        batch = min(2 * batch, remaining)
    return successes, None


# ---- which pods go first ------------------------------------------------------------------

_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}


def _deletion_cost(pod: Mapping[str, Any]) -> int:
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(POD_DELETION_COST)
    if v is None:
        return 0
    # as upstream: a leading '+' or leading zeros make the value invalid, which counts as 0
    if not v or not (v[0] == "-" or v == "0" or "1" <= v[0] <= "9"):
        return 0
    try:
        n = int(v)
    except ValueError:
        return 0
    return n if -(2**31) <= n < 2**31 else 0


def _max_restarts(pod: Mapping[str, Any]) -> tuple[int, int]:
    """(regular containers' max restarts, sidecar (restartable init) containers' max restarts)."""
    status = pod.get("status") or {}
    regular = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    sidecars = {c.get("name") for c in (pod.get("spec") or {}).get("initContainers") or ()
                if c.get("restartPolicy") == "Always"}
    sidecar = max((int(c.get("restartCount") or 0) for c in status.get("initContainerStatuses") or ()
                   if c.get("name") in sidecars), default=0)
    return regular, sidecar


def _log_rank(t: float, now: float) -> int:
    d = (now - t) * 1e9  # upstream takes log2 of a duration in nanoseconds
    return int(math.log2(d)) if d > 0 else -1


def _after_or_zero(t1: float | None, t2: float | None) -> bool:
    if t1 is None or t2 is None:
        return t1 is None
    return t1 > t2


def _compare_times(t1: float | None, t2: float | None, uid1: str, uid2: str, now: float) -> bool:
    # LogarithmicScaleDown (on since v1.22): times in the same power-of-two bucket of age are
    # equal, and the tie is broken by UID so the choice looks random but is stable.
    if t1 is None or t2 is None:
        return _after_or_zero(t1, t2)
    diff = _log_rank(t1, now) - _log_rank(t2, now)
    if diff == 0:
        return uid1 < uid2
    return diff < 0


@dataclass(slots=True)
class _Facts:
    """What the deletion order looks at, read once per pod rather than once per comparison."""

    pod: dict[str, Any]
    unassigned: bool
    phase: int
    ready: bool
    cost: int
    rank: int
    ready_time: float | None
    restarts: tuple[int, int]
    created: float | None
    uid: str


def _facts(pod: dict[str, Any], rank: int) -> _Facts:
    md = pod.get("metadata") or {}
    ready = is_pod_ready(pod)
    return _Facts(pod, not (pod.get("spec") or {}).get("nodeName"),
                  _PHASE_ORDINAL.get((pod.get("status") or {}).get("phase", ""), 0), ready, _deletion_cost(pod),
                  rank, pod_ready_time(pod) if ready else None, _max_restarts(pod),
                  parse_time_or_none(md.get("creationTimestamp")), md.get("uid", ""))


def _pod_less(a: _Facts, b: _Facts, now: float) -> bool:
    """upstream's ActivePodsWithRanks.Less: True if pod a should be deleted before pod b."""
    # 1. unassigned < assigned
    if a.unassigned != b.unassigned:
        return a.unassigned
    # 2. Pending < Unknown < Running
    if a.phase != b.phase:
        return a.phase < b.phase
    # 3. not ready < ready
    if a.ready != b.ready:
        return not a.ready
    # 4. lower pod-deletion-cost < higher
    if a.cost != b.cost:
        return a.cost < b.cost
    # 5. doubled up (more related pods on the same node) < not doubled up
    if a.rank != b.rank:
        return a.rank > b.rank
    # 6. ready for a shorter time < longer
    if a.ready and b.ready and a.ready_time != b.ready_time:
        return _compare_times(a.ready_time, b.ready_time, a.uid, b.uid, now)
    # 7. more restarts < fewer restarts (regular containers, then sidecars)
    if a.restarts != b.restarts:
        return a.restarts[0] > b.restarts[0] if a.restarts[0] != b.restarts[0] else a.restarts[1] > b.restarts[1]
    # 8. newer < older (empty creation time first)
    if a.created != b.created:
        return _compare_times(a.created, b.created, a.uid, b.uid, now)
    return False


def sort_pods_for_deletion(pods: list[dict[str, Any]], ranks: list[int] | None = None,
                           now: float | None = None) -> list[dict[str, Any]]:
    """Pods in the order a controller deletes them, the first to go first."""
    now = time.time() if now is None else now
    facts = [_facts(p, r) for p, r in zip(pods, ranks if ranks is not None else [0] * len(pods), strict=True)]

    def cmp(a: _Facts, b: _Facts) -> int:
        if _pod_less(a, b, now):
            return -1
        if _pod_less(b, a, now):
            return 1
        return 0

    facts.sort(key=cmp_to_key(cmp))
    return [f.pod for f in facts]


def pods_ranked_by_related_pods_on_same_node(pods: list[dict[str, Any]],
                                              related: Iterable[dict[str, Any]]) -> list[int]:
    """For each pod, how many active related pods (of sibling ReplicaSets too) share its node."""
    on_node: dict[str, int] = {}
    for p in related:
        node = (p.get("spec") or {}).get("nodeName")
        if node and is_pod_active(p):
            on_node[node] = on_node.get(node, 0) + 1
    return [on_node.get((p.get("spec") or {}).get("nodeName") or "", 0) for p in pods]


# ---- pod-template-hash --------------------------------------------------------------------

_FNV32_OFFSET = 0x811C9DC5
_FNV32_PRIME = 0x01000193
# as upstream's rand.SafeEncodeString: no vowels (no words) and no look-alike characters
_SAFE_ALPHANUMS = "bcdfghjklmnpqrstvwxz2456789"


def fnv32a(data: bytes, h: int = _FNV32_OFFSET) -> int:
    for b in data:
        h = ((h ^ b) * _FNV32_PRIME) & 0xFFFFFFFF
    return h


def safe_encode_string(s: str) -> str:
    return "".join(_SAFE_ALPHANUMS[ord(c) % len(_SAFE_ALPHANUMS)] for c in s)


def compute_hash(template: Mapping[str, Any], collision_count: int | None) -> str:
    """The pod-template-hash of a template, as upstream's controller.ComputeHash: fnv32a over the
    template, then (if set) collisionCount as 8 little-endian bytes, printed in decimal and
    re-encoded with the safe alphabet.

    Upstream hashes Go's spew dump of the typed struct; we hash the canonical JSON (sorted keys)
    of the wire form instead, so our hashes have upstream's shape and stability but not its
    values.
    """
    h = fnv32a(orjson.dumps(template, option=orjson.OPT_SORT_KEYS))
    if collision_count is not None:
        h = fnv32a((int(collision_count) & 0xFFFFFFFF).to_bytes(4, "little") + b"\x00" * 4, h)
    return safe_encode_string(str(h))
