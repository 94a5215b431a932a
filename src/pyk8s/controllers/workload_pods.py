"""Pod bookkeeping shared by the DaemonSet, StatefulSet and Job controllers.

Small pure helpers over wire dicts (pod readiness and availability, controller references,
int-or-percent scaling) and the two stateful pieces upstream's pkg/controller gives every
workload controller: ControllerExpectations (how many creates/deletes a controller waits to
observe before acting again) and the ref manager that adopts orphans and releases pods that
no longer match.
"""

from __future__ import annotations

import logging
import math
import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import parse_time_or_none
from ..client import Client
from ..scheduler.selectors import LabelSelector, compile_label_selector
from .base import GVRS

log = logging.getLogger("pyk8s.controllers")

__all__ = [
    "Expectations", "is_pod_ready", "is_pod_available", "is_pod_active", "is_pod_terminal",
    "pod_condition", "get_controller_of", "owned_by", "scaled_value", "claim_pods", "selector_of",
    "creation_key", "active_pods_sort_key",
]

# As upstream's ExpectationsTimeout: a controller stops waiting for lost watch events after 5 minutes.
EXPECTATIONS_TIMEOUT = 300.0


class Expectations:
    """Per-key counts of creates/deletes not yet seen through the informer (ControllerExpectations)."""

    def __init__(self) -> None:
        self._items: dict[str, list[float]] = {}  # key -> [adds, dels, set_at]

    def satisfied(self, key: str) -> bool:
        e = self._items.get(key)
        if e is None:
            return True  # nothing recorded: a new controller, or one whose expectations were deleted
        if e[0] <= 0 and e[1] <= 0:
            return True
        return time.monotonic() - e[2] > EXPECTATIONS_TIMEOUT

    def set(self, key: str, adds: int, dels: int) -> None:
        self._items[key] = [adds, dels, time.monotonic()]

    def expect_creations(self, key: str, n: int) -> None:
        self.set(key, n, 0)

    def expect_deletions(self, key: str, n: int) -> None:
        self.set(key, 0, n)

    def raise_(self, key: str, adds: int, dels: int) -> None:
        e = self._items.setdefault(key, [0, 0, time.monotonic()])
        e[0] += adds
        e[1] += dels

    def creation_observed(self, key: str) -> None:
        e = self._items.get(key)
        if e is not None:
            e[0] -= 1

    def deletion_observed(self, key: str) -> None:
        e = self._items.get(key)
        if e is not None:
            e[1] -= 1

    def delete(self, key: str) -> None:
        self._items.pop(key, None)


def pod_condition(pod: Mapping[str, Any], typ: str) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == typ:
            return c
    return None


def is_pod_ready(pod: Mapping[str, Any]) -> bool:
    c = pod_condition(pod, "Ready")
    return c is not None and c.get("status") == "True"


def is_pod_available(pod: Mapping[str, Any], min_ready_seconds: int, now: float | None = None) -> bool:
    """Ready for at least minReadySeconds (podutil.IsPodAvailable)."""
    c = pod_condition(pod, "Ready")
    if c is None or c.get("status") != "True":
        return False
    if not min_ready_seconds:
        return True
    since = parse_time_or_none(c.get("lastTransitionTime"))
    now = time.time() if now is None else now
    return since is not None and since + min_ready_seconds < now


def is_pod_terminal(pod: Mapping[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def is_pod_active(pod: Mapping[str, Any]) -> bool:
    """Not finished and not being deleted (controller.IsPodActive)."""
    return not is_pod_terminal(pod) and not (pod.get("metadata") or {}).get("deletionTimestamp")


def get_controller_of(obj: Mapping[str, Any]) -> dict[str, Any] | None:
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: Mapping[str, Any], owner: Mapping[str, Any]) -> bool:
    ref = get_controller_of(obj)
    return ref is not None and ref.get("uid") == (owner.get("metadata") or {}).get("uid")


def selector_of(obj: Mapping[str, Any]) -> LabelSelector:
    return compile_label_selector((obj.get("spec") or {}).get("selector"))


def scaled_value(value: Any, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent: ints as they are, "N%" of total rounded as asked."""
    if value is None:
        return 0
    if isinstance(value, int):
        return value
    s = str(value)
    if s.endswith("%"):
        pct = int(s[:-1])
        v = pct * total / 100
        return int(math.ceil(v)) if round_up else int(math.floor(v))
    return int(s)


def creation_key(pod: Mapping[str, Any]) -> tuple[str, str]:
    md = pod.get("metadata") or {}
    return md.get("creationTimestamp") or "", md.get("name") or ""


_PHASE_RANK = {"Pending": 0, "Unknown": 1, "Running": 2}


def active_pods_sort_key(pod: Mapping[str, Any]) -> tuple[Any, ...]:
    """controller.ActivePods order: the pods to delete first sort first (unassigned < assigned,
    pending < unknown < running, not ready < ready, ready for less time, more restarts, newer)."""
    spec, status, md = pod.get("spec") or {}, pod.get("status") or {}, pod.get("metadata") or {}
    ready = is_pod_ready(pod)
    ready_since = parse_time_or_none((pod_condition(pod, "Ready") or {}).get("lastTransitionTime")) or 0.0
    restarts = max((int(c.get("restartCount") or 0) for c in status.get("containerStatuses") or ()), default=0)
    created = parse_time_or_none(md.get("creationTimestamp")) or 0.0
    return (bool(spec.get("nodeName")), _PHASE_RANK.get(status.get("phase", ""), 0), ready,
            -ready_since if ready else 0.0, -restarts, -created)


async def claim_pods(client: Client, owner: dict[str, Any], pods: Iterable[dict[str, Any]],
                     selector: LabelSelector, extra_finalizers: tuple[str, ...] = ()) -> list[dict[str, Any]]:
    """PodControllerRefManager.ClaimPods: keep owned pods that still match, release owned pods that
    no longer match, adopt matching orphans (when the owner is not being deleted)."""
    md = owner["metadata"]
    uid = md["uid"]
    deleting = bool(md.get("deletionTimestamp"))
    claimed: list[dict[str, Any]] = []
    for pod in pods:
        pmd = pod.get("metadata") or {}
        ref = get_controller_of(pod)
        matches = selector.matches(pmd.get("labels") or {})
        if ref is not None:
            if ref.get("uid") != uid:
                continue
            if matches or deleting:
                claimed.append(pod)
                continue
            if pmd.get("deletionTimestamp"):
                continue
            # release: drop our owner reference (optimistic on uid, as upstream)
            await _patch_owner_refs(client, pod, [r for r in pmd.get("ownerReferences") or () if r.get("uid") != uid])
            continue
        if deleting or not matches or pmd.get("deletionTimestamp"):
            continue
        ref_new = {"apiVersion": owner.get("apiVersion"), "kind": owner.get("kind"), "name": md["name"],
                   "uid": uid, "controller": True, "blockOwnerDeletion": True}
        fins = list(pmd.get("finalizers") or [])
        fins += [f for f in extra_finalizers if f not in fins]
        adopted = await _patch_owner_refs(client, pod, list(pmd.get("ownerReferences") or ()) + [ref_new],
                                          fins if extra_finalizers else None)
        if adopted is not None:
            claimed.append(adopted)
    return claimed


async def _patch_owner_refs(client: Client, pod: dict[str, Any], refs: list[dict[str, Any]],
                            finalizers: list[str] | None = None) -> dict[str, Any] | None:
    pmd = pod["metadata"]
    # the uid is a precondition (immutable), as upstream's adoption patch
    patch: dict[str, Any] = {"metadata": {"ownerReferences": refs, "uid": pmd["uid"]}}
    if finalizers is not None:
        patch["metadata"]["finalizers"] = finalizers
    try:
        return await client.patch(GVRS["pods"], pmd["name"], patch, pmd.get("namespace"))
    except StatusError as e:
        if e.code in (404, 409, 422):
            return None  # gone or changed meanwhile: the next sync sees the new state
        raise
