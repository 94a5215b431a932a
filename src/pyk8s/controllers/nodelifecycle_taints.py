"""Taints and tolerations as the node lifecycle and taint-eviction controllers use them
(upstream's pkg/controller/tainteviction and v1 helpers), as pure functions."""

from __future__ import annotations

from typing import Any

__all__ = [
    "UNREACHABLE", "NOT_READY", "tolerates", "matching_tolerations", "min_toleration_seconds",
    "no_execute_taints", "condition_no_schedule_taints",
]

UNREACHABLE = "node.kubernetes.io/unreachable"
NOT_READY = "node.kubernetes.io/not-ready"
UNSCHEDULABLE = "node.kubernetes.io/unschedulable"

# node condition (type, status) -> the NoSchedule taint key it puts on the node (upstream's nodeConditionToTaintKeyStatusMap)
CONDITION_TAINTS = {
    ("Ready", "False"): NOT_READY,
    ("Ready", "Unknown"): UNREACHABLE,
    ("MemoryPressure", "True"): "node.kubernetes.io/memory-pressure",
    ("DiskPressure", "True"): "node.kubernetes.io/disk-pressure",
    ("NetworkUnavailable", "True"): "node.kubernetes.io/network-unavailable",
    ("PIDPressure", "True"): "node.kubernetes.io/pid-pressure",
}
CONDITION_TAINT_KEYS = set(CONDITION_TAINTS.values()) | {UNSCHEDULABLE}


def tolerates(tol: dict[str, Any], taint: dict[str, Any]) -> bool:
    """v1.Toleration.ToleratesTaint."""
    if tol.get("effect") and tol["effect"] != taint.get("effect"):
        return False
    if tol.get("key") and tol["key"] != taint.get("key"):
        return False
    op = tol.get("operator") or "Equal"
    if op == "Exists":
        return True
    if op == "Equal":
        return (tol.get("value") or "") == (taint.get("value") or "")
    return False


def matching_tolerations(taints: list[dict[str, Any]], tolerations: list[dict[str, Any]]) -> list[dict[str, Any]] | None:
    """The first toleration matching each taint, or None if some taint is not tolerated."""
    used = []
    for taint in taints:
        for tol in tolerations:
            if tolerates(tol, taint):
                used.append(tol)
                break
        else:
            return None
    return used


def min_toleration_seconds(used: list[dict[str, Any]]) -> float | None:
    """The shortest tolerationSeconds among used (<=0 counts as 0); None means forever."""
    out: float | None = None
    for t in used:
        s = t.get("tolerationSeconds")
        if s is None:
            continue
        s = max(0, int(s))
        out = s if out is None else min(out, s)
    return out


def no_execute_taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in (node.get("spec") or {}).get("taints") or [] if t.get("effect") == "NoExecute"]


def condition_no_schedule_taints(node: dict[str, Any]) -> list[dict[str, Any]]:
    """The NoSchedule taints a node's conditions (and spec.unschedulable) call for (taint-nodes-by-condition)."""
    out = []
    for c in (node.get("status") or {}).get("conditions") or []:
        key = CONDITION_TAINTS.get((c.get("type"), c.get("status")))
        if key:
            out.append({"key": key, "effect": "NoSchedule"})
    if (node.get("spec") or {}).get("unschedulable"):
        out.append({"key": UNSCHEDULABLE, "effect": "NoSchedule"})
    return out
