"""Status-subresource validation for the workload-like kinds, as upstream's
Validate<Kind>StatusUpdate: ObjectMeta update rules plus counters that are non-negative,
consistent with each other, and a collisionCount that never goes down.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import invalid
from ..meta import validate_nonnegative, validate_object_meta_update
from ._common import is_int

__all__ = ["STATUS_UPDATE_VALIDATORS"]

_GREATER = "cannot be greater than status.replicas"


def _status(obj: dict[str, Any]) -> dict[str, Any]:
    st = obj.get("status")
    return st if isinstance(st, dict) else {}


def _nonneg(st: dict[str, Any], fields: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in fields:
        if st.get(f) is not None:
            errs += validate_nonnegative(st[f], f"status.{f}")
    return errs


def _not_above(st: dict[str, Any], fields: tuple[str, ...], limit_field: str, msg: str) -> list[FieldError]:
    limit = st.get(limit_field) or 0
    return [invalid(f"status.{f}", st[f], msg) for f in fields if is_int(st.get(f)) and st[f] > limit]


def _collision_count(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """IsDecremented: a collisionCount may only grow (nil after non-nil counts as a decrement)."""
    n, o = _status(new).get("collisionCount"), _status(old).get("collisionCount")
    if o is not None and (n is None or (is_int(n) and is_int(o) and n < o)):
        return [invalid("status.collisionCount", n or 0, "cannot be decremented")]
    return []


def _deployment(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    st = _status(new)
    errs = validate_object_meta_update(new, old)
    errs += _nonneg(st, ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas", "availableReplicas",
                         "unavailableReplicas", "collisionCount"))
    errs += _not_above(st, ("updatedReplicas", "readyReplicas", "availableReplicas"), "replicas", _GREATER)
    errs += _not_above(st, ("availableReplicas",), "readyReplicas", "cannot be greater than readyReplicas")
    return errs + _collision_count(new, old)


def _replica_set(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    st = _status(new)
    errs = validate_object_meta_update(new, old)
    errs += _nonneg(st, ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"))
    errs += _not_above(st, ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"), "replicas", _GREATER)
    return errs + _not_above(st, ("availableReplicas",), "readyReplicas", "cannot be greater than readyReplicas")


def _stateful_set(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    st = _status(new)
    errs = _nonneg(st, ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                        "observedGeneration", "collisionCount"))
    errs += _not_above(st, ("readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas"), "replicas",
                       _GREATER)
    errs += _not_above(st, ("availableReplicas",), "readyReplicas", "cannot be greater than status.readyReplicas")
    errs += validate_object_meta_update(new, old)
    return errs + _collision_count(new, old)


def _daemon_set(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _nonneg(_status(new), ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled",
                                   "numberReady", "observedGeneration", "updatedNumberScheduled", "numberAvailable",
                                   "numberUnavailable", "collisionCount"))
    return errs + _collision_count(new, old)


def _job(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _nonneg(_status(new), ("active", "succeeded", "failed", "ready", "terminating"))
    st, ost = _status(new), _status(old)
    for f, what in (("failed", "failed"), ("succeeded", "succeeded")):
        if is_int(st.get(f, 0)) and is_int(ost.get(f, 0)) and st.get(f, 0) < ost.get(f, 0):
            errs.append(invalid(f"status.{f}", st.get(f, 0), f"cannot decrease the {what} counter"))
    return errs


def _counters(*fields: str) -> Any:
    def validate(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return validate_object_meta_update(new, old) + _nonneg(_status(new), fields)

    return validate


STATUS_UPDATE_VALIDATORS = {
    ("apps", "Deployment"): _deployment,
    ("apps", "ReplicaSet"): _replica_set,
    ("apps", "StatefulSet"): _stateful_set,
    ("apps", "DaemonSet"): _daemon_set,
    ("batch", "Job"): _job,
    ("batch", "CronJob"): _counters(),
    ("autoscaling", "HorizontalPodAutoscaler"): _counters("currentReplicas", "desiredReplicas"),
    ("policy", "PodDisruptionBudget"): _counters("disruptionsAllowed", "currentHealthy", "desiredHealthy",
                                                 "expectedPods"),
}
