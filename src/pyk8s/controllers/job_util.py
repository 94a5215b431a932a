"""Pure helpers of the Job controller: conditions, completion-index intervals, the pod
failure policy, pod finish times and the failure backoff (upstream's job utils, in our words).

Everything here works on wire dicts and has no I/O, so it is testable without a server.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ..api.timefmt import format_time, parse_time_or_none

JOB_TRACKING_FINALIZER = "batch.kubernetes.io/job-tracking"
COMPLETION_INDEX = "batch.kubernetes.io/job-completion-index"
INDEX_FAILURE_COUNT = "batch.kubernetes.io/job-index-failure-count"
INDEX_IGNORED_FAILURE_COUNT = "batch.kubernetes.io/job-index-ignored-failure-count"
COMPLETION_INDEX_ENV = "JOB_COMPLETION_INDEX"
MANAGED_BY_DEFAULT = "kubernetes.io/job-controller"

DEFAULT_POD_FAILURE_BACKOFF = 10.0  # upstream DefaultJobPodFailureBackOff
MAX_POD_FAILURE_BACKOFF = 360.0     # upstream MaxJobPodFailureBackOff
SYNC_BATCH_PERIOD = 1.0             # pod events are batched this long (syncJobBatchPeriod)
MAX_UNCOUNTED_PODS = 500
MAX_POD_CREATE_DELETE_PER_SYNC = 500
ORPHAN_PREFIX = "orphan-pod:"       # queue keys for pods whose finalizer nobody else will remove

# ---- pure helpers: conditions, indexes, failure policy -------------------------------------

def find_condition(job: dict[str, Any], typ: str) -> dict[str, Any] | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") == typ:
            return c
    return None


def is_job_finished(job: dict[str, Any]) -> bool:
    return any(c.get("type") in ("Complete", "Failed") and c.get("status") == "True"
               for c in (job.get("status") or {}).get("conditions") or ())


def new_condition(typ: str, status: str, reason: str, message: str, now: float) -> dict[str, Any]:
    t = format_time(now)
    c: dict[str, Any] = {"type": typ, "status": status, "lastProbeTime": t, "lastTransitionTime": t}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def ensure_condition(conds: list[dict[str, Any]], typ: str, status: str, reason: str, message: str,
                     now: float) -> bool:
    """Set a condition; a missing one is only added when not False (ensureJobConditionStatus)."""
    for i, c in enumerate(conds):
        if c.get("type") == typ:
            if c.get("status") != status or c.get("reason", "") != reason or c.get("message", "") != message:
                conds[i] = new_condition(typ, status, reason, message, now)
                return True
            return False
    if status != "False":
        conds.append(new_condition(typ, status, reason, message, now))
        return True
    return False


Intervals = list[list[int]]  # ordered, non-overlapping [first, last] pairs


def parse_intervals(s: str | None, completions: int) -> Intervals:
    """`1,3-5` into [[1,1],[3,5]], dropping indexes >= completions and corrupt parts."""
    out: Intervals = []
    for part in (s or "").split(","):
        if not part:
            continue
        bounds = part.split("-")
        try:
            first = int(bounds[0])
            last = int(bounds[1]) if len(bounds) > 1 else first
        except ValueError:
            continue
        if first >= completions:
            break
        last = min(last, completions - 1)
        if out and out[-1][1] == first - 1:
            out[-1][1] = last
        else:
            out.append([first, last])
    return out


def merge_intervals(a: Intervals, b: Intervals) -> Intervals:
    out: Intervals = []
    for first, last in sorted([list(x) for x in a] + [list(x) for x in b]):
        if out and first <= out[-1][1] + 1:
            out[-1][1] = max(out[-1][1], last)
        else:
            out.append([first, last])
    return out


def with_indexes(iv: Intervals, indexes: Iterable[int]) -> Intervals:
    return merge_intervals(iv, [[i, i] for i in sorted(set(indexes))])


def total_intervals(iv: Intervals) -> int:
    return sum(last - first + 1 for first, last in iv)


def has_index(iv: Intervals, ix: int) -> bool:
    return any(first <= ix <= last for first, last in iv)


def format_intervals(iv: Intervals) -> str:
    """Upstream's compact form: ranges of 3+ as `a-b`, pairs as `a,b`."""
    parts = []
    for first, last in iv:
        if last == first:
            parts.append(str(first))
        elif last == first + 1:
            parts.append(f"{first},{last}")
        else:
            parts.append(f"{first}-{last}")
    return ",".join(parts)


def completion_index(pod: dict[str, Any]) -> int:
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(COMPLETION_INDEX)
    try:
        i = int(v) if v is not None else -1
    except ValueError:
        return -1
    return i if i >= 0 else -1


def int_annotation(pod: dict[str, Any], key: str) -> int:
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(key)
    try:
        i = int(v) if v is not None else 0
    except ValueError:
        return 0
    return i if 0 <= i <= 2**31 - 1 else 0


def _terminated_statuses(pod: dict[str, Any], init: bool) -> list[dict[str, Any]]:
    key = "initContainerStatuses" if init else "containerStatuses"
    return list((pod.get("status") or {}).get(key) or ())


def match_pod_failure_policy(pfp: dict[str, Any] | None, pod: dict[str, Any]) -> tuple[str | None, bool, str | None]:
    """(FailJob message, whether the failure counts against backoffLimit, matched action)."""
    if not pfp:
        return None, True, None
    md = pod.get("metadata") or {}
    for index, rule in enumerate(pfp.get("rules") or ()):
        action = rule.get("action")
        on_codes = rule.get("onExitCodes")
        if on_codes is not None:
            cs = _match_exit_codes(pod, on_codes)
            if cs is None:
                continue
            if action == "FailJob":
                code = cs["state"]["terminated"].get("exitCode")
                return (f"Container {cs.get('name')} for pod {md.get('namespace')}/{md.get('name')} failed with "
                        f"exit code {code} matching {action} rule at index {index}"), True, action
            return None, action != "Ignore", action
        on_conds = rule.get("onPodConditions")
        if on_conds is not None:
            cond = _match_pod_conditions(pod, on_conds)
            if cond is None:
                continue
            if action == "FailJob":
                return (f"Pod {md.get('namespace')}/{md.get('name')} has condition {cond.get('type')} matching "
                        f"{action} rule at index {index}"), True, action
            return None, action != "Ignore", action
    return None, True, None


def _match_exit_codes(pod: dict[str, Any], req: dict[str, Any]) -> dict[str, Any] | None:
    for init in (False, True):
        for cs in _terminated_statuses(pod, init):
            term = (cs.get("state") or {}).get("terminated")
            if term is None:
                continue  # still terminating: no exit code yet
            if req.get("containerName") and req["containerName"] != cs.get("name"):
                continue
            code = int(term.get("exitCode") or 0)
            if code == 0:
                continue
            values = req.get("values") or []
            op = req.get("operator")
            if (op == "In" and code in values) or (op == "NotIn" and code not in values):
                return cs
    return None


def _match_pod_conditions(pod: dict[str, Any], patterns: list[dict[str, Any]]) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        for p in patterns:
            if c.get("type") == p.get("type") and c.get("status") == (p.get("status") or "True"):
                return c
    return None


def pod_finished_time(pod: dict[str, Any]) -> float:
    """When a pod finished: its last container's finishedAt, else its Ready=False transition,
    else deletion time minus grace, else its creation (upstream's getFinishedTime)."""
    latest: float | None = None
    statuses = _terminated_statuses(pod, False)
    for cs in statuses:
        term = (cs.get("state") or {}).get("terminated")
        t = parse_time_or_none((term or {}).get("finishedAt"))
        if t is None:
            latest = None
            break
        latest = t if latest is None else max(latest, t)
    if statuses and latest is not None:
        return latest
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready" and c.get("status") == "False":
            t = parse_time_or_none(c.get("lastTransitionTime"))
            if t is not None:
                return t
    md = pod.get("metadata") or {}
    t = parse_time_or_none(md.get("deletionTimestamp"))
    if t is not None:
        return t - int(md.get("deletionGracePeriodSeconds") or 0)
    return parse_time_or_none(md.get("creationTimestamp")) or 0.0


def backoff_remaining(now: float, failures: int, last_failure: float | None,
                      base: float = DEFAULT_POD_FAILURE_BACKOFF, maximum: float = MAX_POD_FAILURE_BACKOFF) -> float:
    if failures <= 0 or last_failure is None:
        return 0.0
    delay = base
    for _ in range(1, failures):
        delay *= 2
        if delay >= maximum:
            delay = maximum
            break
    elapsed = now - last_failure
    return 0.0 if delay < elapsed else delay - elapsed


@dataclass
class BackoffRecord:
    failures_after_last_success: int = 0
    last_failure_time: float | None = None


def new_backoff_record(old: BackoffRecord | None, new_succeeded: list[dict[str, Any]],
                       new_failed: list[dict[str, Any]]) -> BackoffRecord:
    """Consecutive failures since the last success, and when the last one happened."""
    rec = copy.copy(old) if old is not None else BackoffRecord()
    succeeded = sorted(pod_finished_time(p) for p in new_succeeded)
    failed = sorted(pod_finished_time(p) for p in new_failed)
    if not succeeded:
        if failed:
            rec.failures_after_last_success += len(failed)
            rec.last_failure_time = failed[-1]
        return rec
    rec.failures_after_last_success, rec.last_failure_time = 0, None
    for t in reversed(failed):
        if t <= succeeded[-1]:
            break
        if rec.last_failure_time is None:
            rec.last_failure_time = t
        rec.failures_after_last_success += 1
    return rec


def job_spec(job: dict[str, Any]) -> dict[str, Any]:
    return job.get("spec") or {}


def is_indexed(job: dict[str, Any]) -> bool:
    return job_spec(job).get("completionMode") == "Indexed"


def has_backoff_limit_per_index(job: dict[str, Any]) -> bool:
    return job_spec(job).get("backoffLimitPerIndex") is not None


def is_suspended(job: dict[str, Any]) -> bool:
    return bool(job_spec(job).get("suspend"))


def only_replace_failed_pods(job: dict[str, Any]) -> bool:
    return job_spec(job).get("podReplacementPolicy") == "Failed" or job_spec(job).get("podFailurePolicy") is not None


def has_tracking_finalizer(pod: dict[str, Any]) -> bool:
    return JOB_TRACKING_FINALIZER in ((pod.get("metadata") or {}).get("finalizers") or ())


def is_pod_failed(pod: dict[str, Any], job: dict[str, Any]) -> bool:
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Failed":
        return True
    if only_replace_failed_pods(job):
        return False
    # a deleted pod that will never reach a phase counts as failed (TerminatingOrFailed)
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and phase != "Succeeded"


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp")) and \
        (pod.get("status") or {}).get("phase") not in ("Succeeded", "Failed")


def generate_name_with_index(job_name: str, index: int) -> str:
    suffix = f"-{index}-"
    prefix = job_name + suffix
    if len(prefix) > 58:  # leave room for the 5 random characters within 63
        prefix = job_name[:58 - len(suffix)] + suffix
    return prefix


def add_completion_index_env(template: dict[str, Any]) -> None:
    """Expose the index to every container through the downward API, as upstream does."""
    spec = template.setdefault("spec", {})
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or ():
            env = c.setdefault("env", [])
            if any(e.get("name") == COMPLETION_INDEX_ENV for e in env):
                continue
            env.append({"name": COMPLETION_INDEX_ENV, "valueFrom": {"fieldRef": {
                "apiVersion": "v1", "fieldPath": f"metadata.labels['{COMPLETION_INDEX}']"}}})


def match_success_policy(policy: dict[str, Any] | None, completions: int, succeeded: Intervals) -> str | None:
    if not policy or not succeeded:
        return None
    for index, rule in enumerate(policy.get("rules") or ()):
        count = rule.get("succeededCount")
        if rule.get("succeededIndexes") is not None:
            required = parse_intervals(rule["succeededIndexes"], completions)
            if not required:
                continue
            contained = sum(max(0, min(rl, sl) - max(rf, sf) + 1) for rf, rl in required for sf, sl in succeeded)
            if contained == total_intervals(required) or (count is not None and contained >= count):
                return f"Matched rules at index {index}"
        elif count is not None and total_intervals(succeeded) >= count:
            return f"Matched rules at index {index}"
    return None
