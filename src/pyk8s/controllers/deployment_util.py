"""Deployment arithmetic over wire-form dicts, as upstream's pkg/controller/deployment/util.

Which ReplicaSet is new and which are old, revisions and their annotations, maxSurge and
maxUnavailable (as upstream: surge rounds up, unavailable rounds down, and if both resolve
to zero unavailable becomes 1), proportional scaling shares, status and conditions. No I/O:
the controller in deployment.py calls these and writes the results.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..api.timefmt import format_time, parse_time_or_none

__all__ = [
    "REVISION", "REVISION_HISTORY", "DESIRED_REPLICAS", "MAX_REPLICAS", "ROLLBACK_TO", "HASH_LABEL",
    "MAX_REV_HISTORY_CHARS", "NEW_RS_REASON", "FOUND_NEW_RS_REASON", "RS_UPDATED_REASON",
    "NEW_RS_AVAILABLE_REASON", "TIMED_OUT_REASON", "PAUSED_REASON", "RESUMED_REASON", "FAILED_RS_CREATE_REASON",
    "MIN_AVAILABLE_REASON", "MIN_UNAVAILABLE_REASON",
    "spec_replicas", "scaled_value", "resolve_fenceposts", "max_surge", "max_unavailable", "is_rolling_update",
    "equal_ignore_hash", "sort_by_creation", "find_new_replica_set", "find_old_replica_sets", "revision",
    "max_revision", "set_new_replica_set_annotations", "set_replicas_annotations", "desired_replicas_annotation",
    "is_saturated", "filter_active", "find_active_or_latest", "get_proportion", "new_rs_new_replicas",
    "has_progress_deadline", "deployment_complete", "deployment_progressing", "deployment_timed_out",
    "new_condition", "get_condition", "set_condition", "remove_condition", "calculate_status",
    "status_equal", "normalize_status",
]

REVISION = "deployment.kubernetes.io/revision"
REVISION_HISTORY = "deployment.kubernetes.io/revision-history"
DESIRED_REPLICAS = "deployment.kubernetes.io/desired-replicas"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
ROLLBACK_TO = "deprecated.deployment.rollback.to"
HASH_LABEL = "pod-template-hash"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
MAX_REV_HISTORY_CHARS = 2000

NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
RS_UPDATED_REASON = "ReplicaSetUpdated"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
FAILED_RS_CREATE_REASON = "ReplicaSetCreateError"
MIN_AVAILABLE_REASON = "MinimumReplicasAvailable"
MIN_UNAVAILABLE_REASON = "MinimumReplicasUnavailable"

# annotations of the Deployment that are not copied onto its ReplicaSets
_SKIP_COPY = {LAST_APPLIED, REVISION, REVISION_HISTORY, DESIRED_REPLICAS, MAX_REPLICAS, ROLLBACK_TO}

Obj = dict[str, Any]


def spec_replicas(obj: Mapping[str, Any] | None) -> int:
    if obj is None:
        return 0
    r = (obj.get("spec") or {}).get("replicas")
    return 1 if r is None else int(r)


def _status_int(obj: Mapping[str, Any] | None, key: str) -> int:
    if obj is None:
        return 0
    return int((obj.get("status") or {}).get(key) or 0)


# ---- maxSurge / maxUnavailable ------------------------------------------------------------

def scaled_value(v: int | str | None, total: int, round_up: bool) -> int:
    """intstr.GetScaledValueFromIntOrPercent."""
    if v is None:
        return 0
    if isinstance(v, int):
        return v
    s = str(v)
    if s.endswith("%"):
        pct = int(s[:-1])
        x = pct * total / 100
        return math.ceil(x) if round_up else math.floor(x)
    return int(s)


def resolve_fenceposts(surge: int | str | None, unavailable: int | str | None, desired: int) -> tuple[int, int]:
    s = scaled_value(surge, desired, True)
    u = scaled_value(unavailable, desired, False)
    if s == 0 and u == 0:
        # validation forbids both being zero, but rounding down can make unavailable 0:
        # then allow one unavailable pod, or the rollout could never move
        u = 1
    return s, u


def is_rolling_update(d: Mapping[str, Any]) -> bool:
    return ((d.get("spec") or {}).get("strategy") or {}).get("type", "RollingUpdate") == "RollingUpdate"


def _rolling(d: Mapping[str, Any]) -> Mapping[str, Any]:
    return ((d.get("spec") or {}).get("strategy") or {}).get("rollingUpdate") or {}


def max_surge(d: Mapping[str, Any]) -> int:
    if not is_rolling_update(d):
        return 0
    ru = _rolling(d)
    return resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), spec_replicas(d))[0]


def max_unavailable(d: Mapping[str, Any]) -> int:
    n = spec_replicas(d)
    if not is_rolling_update(d) or n == 0:
        return 0
    ru = _rolling(d)
    return min(resolve_fenceposts(ru.get("maxSurge"), ru.get("maxUnavailable"), n)[1], n)


# ---- finding the new and old ReplicaSets --------------------------------------------------

def _semantic(v: Any) -> Any:
    """A form in which Go's semantic equality is plain equality: nulls and empty maps/lists dropped."""
    if isinstance(v, dict):
        out = {}
        for k, x in v.items():
            x = _semantic(x)
            if x is None or x == {} or x == []:
                continue
            out[k] = x
        return out
    if isinstance(v, list):
        return [_semantic(x) for x in v]
    return v


def _without_hash(template: Mapping[str, Any] | None) -> Any:
    t = _semantic(template or {})
    labels = (t.get("metadata") or {}).get("labels")
    if labels and HASH_LABEL in labels:
        labels = {k: v for k, v in labels.items() if k != HASH_LABEL}
        md = dict(t["metadata"])
        if labels:
            md["labels"] = labels
        else:
            md.pop("labels")
        t = dict(t)
        if md:
            t["metadata"] = md
        else:
            t.pop("metadata")
    return t


def equal_ignore_hash(t1: Mapping[str, Any] | None, t2: Mapping[str, Any] | None) -> bool:
    """Two pod templates are the same up to the pod-template-hash label."""
    return _without_hash(t1) == _without_hash(t2)


def _creation_key(rs: Mapping[str, Any]) -> tuple[float, str]:
    md = rs.get("metadata") or {}
    return parse_time_or_none(md.get("creationTimestamp")) or 0.0, md.get("name", "")


def sort_by_creation(rss: Iterable[Obj], reverse: bool = False) -> list[Obj]:
    return sorted(rss, key=_creation_key, reverse=reverse)


def find_new_replica_set(d: Mapping[str, Any], rss: Iterable[Obj]) -> Obj | None:
    """The oldest ReplicaSet whose template is the Deployment's (duplicates can exist after a
    hash collision; the oldest wins, as upstream)."""
    template = (d.get("spec") or {}).get("template")
    for rs in sort_by_creation(rss):
        if equal_ignore_hash((rs.get("spec") or {}).get("template"), template):
            return rs
    return None


def find_old_replica_sets(d: Mapping[str, Any], rss: list[Obj]) -> tuple[list[Obj], list[Obj]]:
    """(old ReplicaSets with replicas, all old ReplicaSets)."""
    new = find_new_replica_set(d, rss)
    new_uid = None if new is None else new["metadata"]["uid"]
    all_old = [rs for rs in rss if rs["metadata"]["uid"] != new_uid]
    return [rs for rs in all_old if spec_replicas(rs) != 0], all_old


def filter_active(rss: Iterable[Obj | None]) -> list[Obj]:
    return [rs for rs in rss if rs is not None and spec_replicas(rs) > 0]


# ---- revisions and annotations ------------------------------------------------------------

def revision(obj: Mapping[str, Any]) -> int | None:
    v = ((obj.get("metadata") or {}).get("annotations") or {}).get(REVISION)
    if v is None:
        return 0
    try:
        return int(v)
    except ValueError:
        return None


def max_revision(rss: Iterable[Obj]) -> int:
    return max((r for r in (revision(rs) for rs in rss) if r is not None), default=0)


def set_replicas_annotations(rs: Obj, desired: int, max_replicas: int) -> bool:
    ann = rs["metadata"].setdefault("annotations", {})
    changed = False
    for k, v in ((DESIRED_REPLICAS, str(desired)), (MAX_REPLICAS, str(max_replicas))):
        if ann.get(k) != v:
            ann[k] = v
            changed = True
    return changed


def desired_replicas_annotation(rs: Mapping[str, Any]) -> int | None:
    v = ((rs.get("metadata") or {}).get("annotations") or {}).get(DESIRED_REPLICAS)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def _max_replicas_annotation(rs: Mapping[str, Any]) -> int | None:
    v = ((rs.get("metadata") or {}).get("annotations") or {}).get(MAX_REPLICAS)
    try:
        return int(v) if v is not None else None
    except ValueError:
        return None


def set_new_replica_set_annotations(d: Mapping[str, Any], rs: Obj, new_revision: str, exists: bool,
                                    limit_chars: int = MAX_REV_HISTORY_CHARS) -> bool:
    """Copy the Deployment's annotations onto its new ReplicaSet and move its revision forward.

    When an existing ReplicaSet becomes new again (a rollback), its previous revision goes to
    the revision-history annotation, oldest dropped first past `limit_chars`.
    """
    ann = rs["metadata"].setdefault("annotations", {})
    changed = False
    for k, v in ((d.get("metadata") or {}).get("annotations") or {}).items():
        if k in _SKIP_COPY or ann.get(k) == v:
            continue
        ann[k] = v
        changed = True
    old_revision = ann.get(REVISION, "")
    try:
        old_int = int(old_revision) if old_revision else 0
    except ValueError:
        return False
    new_int = int(new_revision)
    if old_int < new_int:
        ann[REVISION] = new_revision
        changed = True
    if old_revision and old_int < new_int:
        history = ann.get(REVISION_HISTORY, "")
        old_revs = history.split(",")
        if not old_revs[0]:
            ann[REVISION_HISTORY] = old_revision
        else:
            total = len(history) + len(old_revision) + 1
            start = 0
            while total > limit_chars and start < len(old_revs):
                total -= len(old_revs[start]) + 1
                start += 1
            if total <= limit_chars:
                ann[REVISION_HISTORY] = ",".join(old_revs[start:] + [old_revision])
    if not exists:
        n = spec_replicas(d)
        if set_replicas_annotations(rs, n, n + max_surge(d)):
            changed = True
    return changed


# ---- scaling arithmetic -------------------------------------------------------------------

def is_saturated(d: Mapping[str, Any], rs: Obj | None) -> bool:
    """The ReplicaSet runs all of the Deployment's replicas, all available."""
    if rs is None:
        return False
    desired = desired_replicas_annotation(rs)
    n = spec_replicas(d)
    return desired is not None and spec_replicas(rs) == n and desired == n and _status_int(rs, "availableReplicas") == n


def find_active_or_latest(new: Obj | None, olds: list[Obj]) -> Obj | None:
    """The one active ReplicaSet, or the newest if none is active; None if several are active."""
    if new is None and not olds:
        return None
    olds = sort_by_creation(olds, reverse=True)
    active = filter_active(olds + [new])
    if not active:
        return new if new is not None else olds[0]
    if len(active) == 1:
        return active[0]
    return None


def _round_half_away(x: float) -> int:
    return int(math.floor(x + 0.5)) if x >= 0 else -int(math.floor(-x + 0.5))


def _rs_fraction(rs: Obj, d: Mapping[str, Any]) -> int:
    n = spec_replicas(d)
    if n == 0:
        return -spec_replicas(rs)
    deployment_replicas = n + max_surge(d)
    annotated = _max_replicas_annotation(rs)
    if annotated is None:
        # no record of the size this ReplicaSet was scaled for: use the Deployment's total
        annotated = _status_int(d, "replicas")
    if annotated == 0:
        return 0
    return _round_half_away(spec_replicas(rs) * deployment_replicas / annotated) - spec_replicas(rs)


def get_proportion(rs: Obj | None, d: Mapping[str, Any], to_add: int, added: int) -> int:
    """This ReplicaSet's share of a scaling of the Deployment during a rollout (proportional scaling)."""
    if rs is None or spec_replicas(rs) == 0 or to_add == 0 or to_add == added:
        return 0
    fraction = _rs_fraction(rs, d)
    allowed = to_add - added
    return min(fraction, allowed) if to_add > 0 else max(fraction, allowed)


def new_rs_new_replicas(d: Mapping[str, Any], all_rss: list[Obj], new_rs: Obj) -> int:
    """How many replicas the new ReplicaSet may have now."""
    n = spec_replicas(d)
    if is_rolling_update(d):
        surge = scaled_value(_rolling(d).get("maxSurge"), n, True)
        current = sum(spec_replicas(rs) for rs in all_rss if rs is not None)
        max_total = n + surge
        if current >= max_total:
            return spec_replicas(new_rs)
        return spec_replicas(new_rs) + min(max_total - current, n - spec_replicas(new_rs))
    return n


# ---- progress and conditions --------------------------------------------------------------

def has_progress_deadline(d: Mapping[str, Any]) -> bool:
    p = (d.get("spec") or {}).get("progressDeadlineSeconds")
    return p is not None and int(p) != 2**31 - 1


def deployment_complete(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    n = spec_replicas(d)
    return (int(status.get("updatedReplicas") or 0) == n and int(status.get("replicas") or 0) == n
            and int(status.get("availableReplicas") or 0) == n
            and int(status.get("observedGeneration") or 0) >= int(d["metadata"].get("generation") or 0))


def deployment_progressing(d: Mapping[str, Any], status: Mapping[str, Any]) -> bool:
    old = d.get("status") or {}

    def g(s: Mapping[str, Any], k: str) -> int:
        return int(s.get(k) or 0)

    old_old = g(old, "replicas") - g(old, "updatedReplicas")
    new_old = g(status, "replicas") - g(status, "updatedReplicas")
    return (g(status, "updatedReplicas") > g(old, "updatedReplicas") or new_old < old_old
            or g(status, "readyReplicas") > g(old, "readyReplicas")
            or g(status, "availableReplicas") > g(old, "availableReplicas"))


def deployment_timed_out(d: Mapping[str, Any], status: Mapping[str, Any], now: float) -> bool:
    if not has_progress_deadline(d):
        return False
    c = get_condition(status, "Progressing")
    if c is None:
        return False
    if c.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if c.get("reason") == TIMED_OUT_REASON:
        return True
    since = parse_time_or_none(c.get("lastUpdateTime"))
    if since is None:
        return False
    return since + int(d["spec"]["progressDeadlineSeconds"]) < now


def new_condition(type_: str, status: str, reason: str, message: str, now: float) -> Obj:
    t = format_time(now)
    return {"type": type_, "status": status, "lastUpdateTime": t, "lastTransitionTime": t,
            "reason": reason, "message": message}


def get_condition(status: Mapping[str, Any], type_: str) -> Obj | None:
    for c in status.get("conditions") or ():
        if c.get("type") == type_:
            return c
    return None


def set_condition(status: Obj, cond: Obj) -> None:
    """Add or replace a condition; unchanged status and reason leave it as it is (as upstream)."""
    cur = get_condition(status, cond["type"])
    if cur is not None and cur.get("status") == cond["status"] and cur.get("reason") == cond["reason"]:
        return
    if cur is not None and cur.get("status") == cond["status"]:
        cond = dict(cond, lastTransitionTime=cur.get("lastTransitionTime", cond["lastTransitionTime"]))
    status["conditions"] = [c for c in status.get("conditions") or [] if c.get("type") != cond["type"]] + [cond]


def remove_condition(status: Obj, type_: str) -> None:
    if status.get("conditions"):
        status["conditions"] = [c for c in status["conditions"] if c.get("type") != type_]


def calculate_status(all_rss: Sequence[Obj | None], new_rs: Obj | None, d: Mapping[str, Any], now: float) -> Obj:
    rss = [rs for rs in all_rss if rs is not None]
    available = sum(_status_int(rs, "availableReplicas") for rs in rss)
    total = sum(_status_int(rs, "replicas") for rs in rss)
    old = d.get("status") or {}
    status: Obj = {
        "observedGeneration": int(d["metadata"].get("generation") or 0),
        "replicas": total,
        "updatedReplicas": _status_int(new_rs, "replicas"),
        "readyReplicas": sum(_status_int(rs, "readyReplicas") for rs in rss),
        "availableReplicas": available,
        "unavailableReplicas": max(0, total - available),
        "conditions": [dict(c) for c in old.get("conditions") or []],
    }
    if old.get("collisionCount") is not None:
        status["collisionCount"] = old["collisionCount"]
    if available >= spec_replicas(d) - max_unavailable(d):
        set_condition(status, new_condition("Available", "True", MIN_AVAILABLE_REASON,
                                            "Deployment has minimum availability.", now))
    else:
        set_condition(status, new_condition("Available", "False", MIN_UNAVAILABLE_REASON,
                                            "Deployment does not have minimum availability.", now))
    return status


def normalize_status(status: Mapping[str, Any]) -> Obj:
    """The wire form: as Go's omitempty, zero counts and empty conditions are left out."""
    out: Obj = {}
    for k, v in status.items():
        if k == "collisionCount":
            if v is not None:
                out[k] = v
        elif v in (0, None, [], {}):
            continue
        else:
            out[k] = v
    return out


def status_equal(a: Mapping[str, Any], b: Mapping[str, Any]) -> bool:
    return normalize_status(a) == normalize_status(b)
