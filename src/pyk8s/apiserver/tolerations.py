"""Toleration merging and whitelists, as upstream's pkg/util/tolerations (shared by the
RuntimeClass and PodTolerationRestriction admission plug-ins): a toleration another one
covers is dropped when merging, and a pod passes a whitelist when each of its tolerations is
covered by some whitelisted one."""

from __future__ import annotations

from typing import Any

__all__ = ["is_superset", "merge_tolerations", "verify_against_whitelist"]

Toleration = dict[str, Any]


def _norm(t: Toleration) -> tuple[Any, ...]:
    # the internal API's view: an unset operator is Equal, unset strings are empty
    return (t.get("key") or "", t.get("operator") or "Equal", t.get("value") or "", t.get("effect") or "",
            t.get("tolerationSeconds"))


def is_superset(ss: Toleration, t: Toleration) -> bool:
    """Whether ss tolerates everything t does."""
    if _norm(ss) == _norm(t):
        return True
    ss_key, ss_op, ss_value, ss_effect, ss_secs = _norm(ss)
    t_key, t_op, t_value, t_effect, t_secs = _norm(t)
    # an empty key with Exists matches every key
    if t_key != ss_key and (ss_key or ss_op != "Exists"):
        return False
    if t_effect != ss_effect and ss_effect:  # an empty effect matches every effect
        return False
    if ss_effect == "NoExecute" and ss_secs is not None and (t_secs is None or t_secs > ss_secs):
        return False
    if ss_op == "Equal":
        return t_op == "Equal" and t_value == ss_value
    return ss_op == "Exists"


def merge_tolerations(first: list[Toleration], second: list[Toleration]) -> list[Toleration]:
    """first then second, without those another one covers (of equal ones, the first)."""
    every = list(first) + list(second)
    merged: list[Toleration] = []
    for i, t in enumerate(every):
        if any(is_superset(m, t) for m in merged):
            continue
        if any(_norm(t) != _norm(later) and is_superset(later, t) for later in every[i + 1:]):
            continue
        merged.append(t)
    return merged


def verify_against_whitelist(tolerations: list[Toleration], whitelist: list[Toleration]) -> bool:
    """Whether every toleration is covered by a whitelisted one (an empty whitelist allows all)."""
    if not whitelist or not tolerations:
        return True
    return all(any(is_superset(w, t) for w in whitelist) for t in tolerations)
