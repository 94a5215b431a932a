"""Job controller: run pods to completion, counting them with finalizers, as upstream v1.33.

What upstream's pkg/controller/job does, in our own code:
- Pods carry the `batch.kubernetes.io/job-tracking` finalizer. A finished pod is first
  recorded in `status.uncountedTerminatedPods`, then its finalizer is removed, then it moves
  to `succeeded`/`failed`; so no pod is counted twice or lost, even if pods are deleted.
- `parallelism`, `completions` (NonIndexed or Indexed with `completedIndexes`), `suspend`
  (active pods deleted, condition Suspended), `activeDeadlineSeconds`, `backoffLimit` with
  exponential backoff between recreations (10 s doubling to 6 min), `backoffLimitPerIndex`,
  `podFailurePolicy` (FailJob, FailIndex, Ignore, Count on exit codes or pod conditions),
  `successPolicy`, `podReplacementPolicy`.
- Finishing is two-step: an interim SuccessCriteriaMet / FailureTarget condition is written
  first, and Complete / Failed only once no pod is left terminating.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import format_time, parse_time_or_none
from ..client import obj_key
from .base import GVRS, Controller
from .history import controller_ref
from .job_util import (
    COMPLETION_INDEX,
    INDEX_FAILURE_COUNT,
    INDEX_IGNORED_FAILURE_COUNT,
    JOB_TRACKING_FINALIZER,
    MANAGED_BY_DEFAULT,
    MAX_POD_CREATE_DELETE_PER_SYNC,
    MAX_UNCOUNTED_PODS,
    ORPHAN_PREFIX,
    SYNC_BATCH_PERIOD,
    BackoffRecord,
    Intervals,
    add_completion_index_env,
    backoff_remaining,
    completion_index,
    ensure_condition,
    find_condition,
    format_intervals,
    generate_name_with_index,
    has_backoff_limit_per_index,
    has_index,
    has_tracking_finalizer,
    int_annotation,
    is_indexed,
    is_job_finished,
    is_pod_failed,
    is_suspended,
    is_terminating,
    job_spec,
    match_pod_failure_policy,
    match_success_policy,
    merge_intervals,
    new_backoff_record,
    new_condition,
    only_replace_failed_pods,
    parse_intervals,
    pod_finished_time,
    total_intervals,
    with_indexes,
)
from .workload_pods import (
    Expectations,
    active_pods_sort_key,
    claim_pods,
    get_controller_of,
    is_pod_active,
    is_pod_ready,
    selector_of,
)

log = logging.getLogger("pyk8s.controllers.job")

__all__ = ["JobController", "is_job_finished", "format_intervals", "parse_intervals", "match_pod_failure_policy",
           "JOB_TRACKING_FINALIZER", "COMPLETION_INDEX"]


class _FinalizerExpectations:
    """UIDs of pods whose tracking finalizer we removed but have not yet seen go."""

    def __init__(self) -> None:
        self._uids: dict[str, set[str]] = {}

    def expect_removed(self, key: str, uids: Iterable[str]) -> None:
        self._uids.setdefault(key, set()).update(uids)

    def observed(self, key: str, uid: str) -> None:
        s = self._uids.get(key)
        if s is not None:
            s.discard(uid)

    def expected(self, key: str) -> set[str]:
        return set(self._uids.get(key) or ())

    def delete(self, key: str) -> None:
        self._uids.pop(key, None)


@dataclass
class _Ctx:
    job: dict[str, Any]
    pods: list[dict[str, Any]]
    active_pods: list[dict[str, Any]]
    ready: int
    uncounted_succeeded: set[str]
    uncounted_failed: set[str]
    expected_rm_finalizers: set[str]
    terminating: int
    succeeded: int = 0
    failed: int = 0
    finished_condition: dict[str, Any] | None = None
    prev_succeeded_indexes: Intervals = field(default_factory=list)
    succeeded_indexes: Intervals = field(default_factory=list)
    failed_indexes: Intervals | None = None
    delayed_deletion_per_index: dict[int, dict[str, Any]] = field(default_factory=dict)
    new_backoff: BackoffRecord = field(default_factory=BackoffRecord)


# ---- the controller -----------------------------------------------------------------------

class JobController(Controller):
    name = "job"
    component = "job-controller"
    workers = 5

    def __init__(self, ctx: Any, clock: Callable[[], float] = time.time) -> None:
        super().__init__(ctx)
        self.clock = clock

    def setup(self) -> None:
        self.expectations = Expectations()
        self.finalizer_expectations = _FinalizerExpectations()
        self.backoffs: dict[str, BackoffRecord] = {}
        self.jobs = self.ctx.informer("jobs")
        self.pods = self.ctx.informer("pods")
        self.jobs.add_handlers(on_add=self.enqueue, on_update=self._job_updated, on_delete=self._job_deleted)
        self.pods.add_handlers(on_add=self._pod_added, on_update=self._pod_updated,
                               on_delete=lambda p: self._pod_deleted(p, final=True))

    # ---- event handlers ---------------------------------------------------------------------
    def _batched(self, job: dict[str, Any]) -> None:
        self.enqueue_after(job, SYNC_BATCH_PERIOD)

    def _owner(self, pod: dict[str, Any], ref: dict[str, Any] | None = None) -> dict[str, Any] | None:
        ref = ref if ref is not None else get_controller_of(pod)
        if ref is None or ref.get("kind") != "Job":
            return None
        job = self.jobs.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        if job is None or job["metadata"].get("uid") != ref.get("uid"):
            return None
        return job

    def _matching_jobs(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        labels = pod["metadata"].get("labels") or {}
        return [j for j in self.jobs.list(pod["metadata"].get("namespace", "")) if selector_of(j).matches(labels)]

    def _enqueue_orphan(self, pod: dict[str, Any]) -> None:
        self.queue.add(ORPHAN_PREFIX + obj_key(pod))

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod, final=False)
            return
        if get_controller_of(pod) is not None:
            job = self._owner(pod)
            if job is not None:
                self.expectations.creation_observed(obj_key(job))
                self._batched(job)
            return
        if has_tracking_finalizer(pod):
            self._enqueue_orphan(pod)
        for job in self._matching_jobs(pod):
            self._batched(job)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new, final=False)
            return
        removed = not has_tracking_finalizer(new)
        old_ref, new_ref = get_controller_of(old), get_controller_of(new)
        if old_ref != new_ref and old_ref is not None:
            job = self._owner(old, old_ref)
            if job is not None:
                if removed:
                    self.finalizer_expectations.observed(obj_key(job), new["metadata"]["uid"])
                self._batched(job)
        if new_ref is not None:
            job = self._owner(new, new_ref)
            if job is not None:
                if removed:
                    self.finalizer_expectations.observed(obj_key(job), new["metadata"]["uid"])
                self._batched(job)
            return
        if has_tracking_finalizer(new):
            self._enqueue_orphan(new)
        if old_ref != new_ref or old["metadata"].get("labels") != new["metadata"].get("labels"):
            for job in self._matching_jobs(new):
                self._batched(job)

    def _pod_deleted(self, pod: dict[str, Any], final: bool) -> None:
        ref = get_controller_of(pod)
        has_fin = has_tracking_finalizer(pod)
        if ref is None:
            if has_fin:
                self._enqueue_orphan(pod)
            return
        job = self._owner(pod, ref)
        if job is None or is_job_finished(job):
            if has_fin:
                self._enqueue_orphan(pod)  # no sync will remove this finalizer
            return
        key = obj_key(job)
        self.expectations.deletion_observed(key)
        if final or not has_fin:
            self.finalizer_expectations.observed(key, pod["metadata"]["uid"])
        self._batched(job)

    def _job_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("generation") == new["metadata"].get("generation"):
            self._batched(new)
        else:
            self.enqueue(new)  # a spec change acts at once
        if is_job_finished(new):
            self._cleanup_pod_finalizers(new)  # a backstop: finished jobs hold no finalizers
        start = parse_time_or_none((new.get("status") or {}).get("startTime"))
        ads = job_spec(new).get("activeDeadlineSeconds")
        if start is not None and ads is not None and ads != job_spec(old).get("activeDeadlineSeconds"):
            self.enqueue_after(new, max(0.0, start + ads - self.clock()))

    def _job_deleted(self, job: dict[str, Any]) -> None:
        self.enqueue(job)
        self._cleanup_pod_finalizers(job)

    def _cleanup_pod_finalizers(self, job: dict[str, Any]) -> None:
        sel = selector_of(job)
        for pod in self.pods.list(job["metadata"].get("namespace", "")):
            if has_tracking_finalizer(pod) and sel.matches(pod["metadata"].get("labels") or {}):
                self._enqueue_orphan(pod)

    # ---- sync -------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        if key.startswith(ORPHAN_PREFIX):
            await self._sync_orphan_pod(key[len(ORPHAN_PREFIX):])
            return
        shared = self.jobs.get(key)
        if shared is None:
            self.expectations.delete(key)
            self.finalizer_expectations.delete(key)
            self.backoffs.pop(key, None)
            return
        managed_by = job_spec(shared).get("managedBy")
        if managed_by and managed_by != MANAGED_BY_DEFAULT:
            return  # an external controller owns this Job's status
        job = copy.deepcopy(shared)
        if is_job_finished(job):
            self.backoffs.pop(key, None)
            return
        mode = job_spec(job).get("completionMode") or "NonIndexed"
        if mode not in ("NonIndexed", "Indexed"):
            self.recorder.event(job, "Warning", "UnknownCompletionMode",
                                "Skipped Job sync because completion mode is unknown")
            return
        status = job.setdefault("status", {})
        uncounted = status.get("uncountedTerminatedPods") or {}
        status["uncountedTerminatedPods"] = uncounted
        satisfied = self.expectations.satisfied(key)
        pods = await self._pods_for_job(job)
        active_pods = [p for p in pods if is_pod_active(p)]
        now = self.clock()
        ctx = _Ctx(job=job, pods=pods, active_pods=active_pods, ready=sum(1 for p in active_pods if is_pod_ready(p)),
                   uncounted_succeeded=set(uncounted.get("succeeded") or ()),
                   uncounted_failed=set(uncounted.get("failed") or ()),
                   expected_rm_finalizers=self.finalizer_expectations.expected(key),
                   terminating=sum(1 for p in pods if is_terminating(p)))
        active = len(active_pods)
        new_succeeded, new_failed = self._new_finished_pods(ctx)
        ctx.succeeded = int(status.get("succeeded") or 0) + len(new_succeeded) + len(ctx.uncounted_succeeded)
        pfp = job_spec(job).get("podFailurePolicy")
        counted_failed = [p for p in new_failed if match_pod_failure_policy(pfp, p)[1]]
        ctx.failed = int(status.get("failed") or 0) + len(counted_failed) + len(ctx.uncounted_failed)
        if not status.get("startTime") and not is_suspended(job):
            status["startTime"] = format_time(now)
        ctx.new_backoff = new_backoff_record(self.backoffs.get(key), new_succeeded, new_failed)

        exceeds_backoff = ctx.failed > int(job_spec(job).get("backoffLimit", 6))
        met = find_condition(job, "SuccessCriteriaMet")
        ctx.finished_condition = met if met is not None and met.get("status") == "True" else None
        if ctx.finished_condition is None:
            target = find_condition(job, "FailureTarget")
            if target is not None and target.get("status") == "True":
                ctx.finished_condition = new_condition("Failed", "True", target.get("reason", ""),
                                                       target.get("message", ""), now)
            else:
                msg = self._fail_job_message(job, pods)
                if msg is not None:
                    # the interim condition records why before the finalizers (and pods) go
                    ctx.finished_condition = new_condition("FailureTarget", "True", "PodFailurePolicy", msg, now)
        if ctx.finished_condition is None:
            if exceeds_backoff or self._past_backoff_limit_on_failure(job, pods):
                ctx.finished_condition = new_condition("FailureTarget", "True", "BackoffLimitExceeded",
                                                       "Job has reached the specified backoff limit", now)
            elif self._past_active_deadline(job, now):
                ctx.finished_condition = new_condition("FailureTarget", "True", "DeadlineExceeded",
                                                       "Job was active longer than specified deadline", now)
            elif job_spec(job).get("activeDeadlineSeconds") is not None and not is_suspended(job):
                start = parse_time_or_none(status.get("startTime")) or now
                self.enqueue_after(key, max(0.0, start + int(job_spec(job)["activeDeadlineSeconds"]) - now))

        if is_indexed(job):
            completions = int(job_spec(job).get("completions") or 0)
            ctx.prev_succeeded_indexes = parse_intervals(status.get("completedIndexes"), completions)
            newly = {completion_index(p) for p in pods
                     if (p.get("status") or {}).get("phase") == "Succeeded" and has_tracking_finalizer(p)
                     and 0 <= completion_index(p) < completions}
            ctx.succeeded_indexes = with_indexes(ctx.prev_succeeded_indexes, newly)
            ctx.succeeded = total_intervals(ctx.succeeded_indexes)
            if has_backoff_limit_per_index(job):
                ctx.failed_indexes = self._failed_indexes(job, pods, completions)
                if ctx.finished_condition is None:
                    max_failed = job_spec(job).get("maxFailedIndexes")
                    nfailed = total_intervals(ctx.failed_indexes)
                    if max_failed is not None and nfailed > int(max_failed):
                        ctx.finished_condition = new_condition(
                            "FailureTarget", "True", "MaxFailedIndexesExceeded",
                            "Job has exceeded the specified maximal number of failed indexes", now)
                    elif nfailed > 0 and nfailed + total_intervals(ctx.succeeded_indexes) >= completions:
                        ctx.finished_condition = new_condition("FailureTarget", "True", "FailedIndexes",
                                                               "Job has failed indexes", now)
                ctx.delayed_deletion_per_index = self._pods_with_delayed_deletion(ctx, completions)
            if ctx.finished_condition is None:
                msg = match_success_policy(job_spec(job).get("successPolicy"), completions, ctx.succeeded_indexes)
                if msg is not None:
                    ctx.finished_condition = new_condition("SuccessCriteriaMet", "True", "SuccessPolicy", msg, now)

        suspend_changed = False
        manage_error: BaseException | None = None
        if ctx.finished_condition is not None:
            # finishing: every active pod goes first; only then can the Job be declared done
            deleted_ready, deleted, err = await self._delete_active_pods(job, ctx.active_pods)
            if deleted != active or not satisfied:
                ctx.finished_condition = None  # pods or finalizers still to be seen
            active -= deleted
            ctx.terminating += deleted
            ctx.ready -= deleted_ready
            manage_error = err
        else:
            manage_called = False
            if satisfied and not job["metadata"].get("deletionTimestamp"):
                try:
                    active = await self._manage(key, job, ctx)
                except Exception as e:  # still write status; surface the error afterwards
                    manage_error = e
                manage_called = True
            want_completions = job_spec(job).get("completions")
            if want_completions is None:
                # any success ends a work-queue Job, once the others have stopped
                complete = ctx.succeeded > 0 and active == 0
            else:
                complete = ctx.succeeded >= int(want_completions) and active == 0
            if complete:
                ctx.finished_condition = new_condition("SuccessCriteriaMet", "True", "CompletionsReached",
                                                       "Reached expected number of succeeded pods", now)
            elif manage_called:
                conds = status.setdefault("conditions", [])
                if is_suspended(job):
                    if ensure_condition(conds, "Suspended", "True", "JobSuspended", "Job suspended", now):
                        suspend_changed = True
                        self.recorder.event(job, "Normal", "Suspended", "Job suspended")
                elif ensure_condition(conds, "Suspended", "False", "JobResumed", "Job resumed", now):
                    suspend_changed = True
                    self.recorder.event(job, "Normal", "Resumed", "Job resumed")
                    # activeDeadlineSeconds counts continuous activity: restart the clock on resume
                    status["startTime"] = format_time(now)
                if not conds:
                    status.pop("conditions", None)

        needs_update = (suspend_changed or active != int(status.get("active") or 0)
                        or ctx.ready != status.get("ready") or ctx.terminating != status.get("terminating"))
        status["active"] = active
        status["ready"] = ctx.ready
        status["terminating"] = ctx.terminating
        await self._track_status_and_remove_finalizers(key, ctx, needs_update)
        if manage_error is not None:
            raise manage_error

    # ---- pods -------------------------------------------------------------------------------
    async def _pods_for_job(self, job: dict[str, Any]) -> list[dict[str, Any]]:
        pods = self.pods.list(job["metadata"].get("namespace", ""))
        claimed = await claim_pods(self.client, job, pods, selector_of(job), (JOB_TRACKING_FINALIZER,))
        return claimed

    def _new_finished_pods(self, ctx: _Ctx) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """Finished pods not yet in the status (they still hold the finalizer)."""
        completions = int(job_spec(ctx.job).get("completions") or 0)
        succeeded: list[dict[str, Any]] = []
        failed: list[dict[str, Any]] = []
        for p in ctx.pods:
            uid = p["metadata"]["uid"]
            if not has_tracking_finalizer(p) or uid in ctx.expected_rm_finalizers:
                continue
            if is_indexed(ctx.job) and not 0 <= completion_index(p) < completions:
                continue
            if (p.get("status") or {}).get("phase") == "Succeeded":
                if uid not in ctx.uncounted_succeeded:
                    succeeded.append(p)
            elif is_pod_failed(p, ctx.job) and uid not in ctx.uncounted_failed:
                failed.append(p)
        return succeeded, failed

    def _fail_job_message(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
        pfp = job_spec(job).get("podFailurePolicy")
        if not pfp:
            return None
        for p in pods:
            if is_pod_failed(p, job):
                msg = match_pod_failure_policy(pfp, p)[0]
                if msg is not None:
                    return msg
        return None

    def _past_backoff_limit_on_failure(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> bool:
        """restartPolicy OnFailure retries in place: count container restarts instead of pods."""
        tspec = (job_spec(job).get("template") or {}).get("spec") or {}
        if tspec.get("restartPolicy") != "OnFailure":
            return False
        restarts = 0
        for p in pods:
            if (p.get("status") or {}).get("phase") in ("Running", "Pending"):
                for key in ("initContainerStatuses", "containerStatuses"):
                    restarts += sum(int(cs.get("restartCount") or 0) for cs in (p.get("status") or {}).get(key) or ())
        limit = int(job_spec(job).get("backoffLimit", 6))
        return restarts > 0 if limit == 0 else restarts >= limit

    def _past_active_deadline(self, job: dict[str, Any], now: float) -> bool:
        ads = job_spec(job).get("activeDeadlineSeconds")
        start = parse_time_or_none((job.get("status") or {}).get("startTime"))
        if ads is None or start is None or is_suspended(job):
            return False
        return now - start >= int(ads)

    def _failed_indexes(self, job: dict[str, Any], pods: list[dict[str, Any]], completions: int) -> Intervals:
        prev = parse_intervals((job.get("status") or {}).get("failedIndexes"), completions)
        limit = int(job_spec(job)["backoffLimitPerIndex"])
        pfp = job_spec(job).get("podFailurePolicy")
        newly = set()
        for p in pods:
            ix = completion_index(p)
            if not (0 <= ix < completions) or not has_tracking_finalizer(p) or not is_pod_failed(p, job):
                continue
            _, counts, action = match_pod_failure_policy(pfp, p)
            if action == "FailIndex" or (counts and int_annotation(p, INDEX_FAILURE_COUNT) >= limit):
                newly.add(ix)
        return with_indexes(prev, newly)

    def _pods_with_delayed_deletion(self, ctx: _Ctx, completions: int) -> dict[int, dict[str, Any]]:
        """Per index, the last failed pod: its finalizer stays until its replacement exists, so
        the replacement can inherit the index's failure count."""
        active_ix = {completion_index(p) for p in ctx.active_pods}
        out: dict[int, dict[str, Any]] = {}
        for p in ctx.pods:
            if not has_tracking_finalizer(p) or p["metadata"]["uid"] in ctx.expected_rm_finalizers:
                continue
            ix = completion_index(p)
            if not is_pod_failed(p, ctx.job) or not 0 <= ix < completions:
                continue
            if has_index(ctx.succeeded_indexes, ix) or has_index(ctx.failed_indexes or [], ix) or ix in active_ix:
                continue
            cur = out.get(ix)
            if cur is None or (_abs_failures(cur) <= _abs_failures(p)
                               and pod_finished_time(p) >= pod_finished_time(cur)):
                out[ix] = p
        return out

    # ---- manage: create and delete pods -----------------------------------------------------
    async def _manage(self, key: str, job: dict[str, Any], ctx: _Ctx) -> int:
        active = len(ctx.active_pods)
        spec = job_spec(job)
        parallelism = int(spec.get("parallelism", 1))
        if is_suspended(job):
            to_delete = self._active_pods_for_removal(job, ctx.active_pods, active)
            self.expectations.expect_deletions(key, len(to_delete))
            removed_ready, removed = await self._delete_job_pods(key, job, to_delete)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            return active - removed
        completions = spec.get("completions")
        if completions is None:
            want = active if ctx.succeeded > 0 else parallelism
        else:
            want = max(0, min(int(completions) - ctx.succeeded, parallelism))
        to_delete = self._active_pods_for_removal(job, ctx.active_pods, max(0, active - want))
        to_delete = to_delete[:MAX_POD_CREATE_DELETE_PER_SYNC]
        if to_delete:
            # deleting takes precedence over creating within one sync, as upstream
            self.expectations.expect_deletions(key, len(to_delete))
            removed_ready, removed = await self._delete_job_pods(key, job, to_delete)
            ctx.terminating += removed
            ctx.ready -= removed_ready
            return active - removed
        terminating = ctx.terminating if only_replace_failed_pods(job) else 0
        diff = want - terminating - active
        if diff <= 0:
            return active
        if not has_backoff_limit_per_index(job):
            wait = backoff_remaining(self.clock(), ctx.new_backoff.failures_after_last_success,
                                     ctx.new_backoff.last_failure_time)
            if wait > 0:
                self.enqueue_after(key, max(wait, SYNC_BATCH_PERIOD))
                return active
        diff = min(diff, MAX_POD_CREATE_DELETE_PER_SYNC)
        indexes: list[int] = []
        if is_indexed(job):
            indexes = self._first_pending_indexes(ctx, diff, int(completions or 0))
            if has_backoff_limit_per_index(job):
                indexes, wait = self._indexes_ready_to_create(indexes, ctx)
                if wait > 0:
                    self.enqueue_after(key, max(wait, SYNC_BATCH_PERIOD))
                    return active
            diff = len(indexes)
        if diff <= 0:
            return active
        self.expectations.expect_creations(key, diff)
        template = copy.deepcopy(spec.get("template") or {})
        if is_indexed(job):
            add_completion_index_env(template)
        tmd = template.setdefault("metadata", {})
        fins = list(tmd.get("finalizers") or [])
        if JOB_TRACKING_FINALIZER not in fins:
            fins.append(JOB_TRACKING_FINALIZER)
        tmd["finalizers"] = fins
        created = 0
        errors: list[BaseException] = []
        queue_ix = list(indexes)
        batch = 1
        remaining = diff
        # slow start: batches of 1, 2, 4, ...; a failing batch stops the rest (quota, admission)
        while remaining > 0:
            size = min(batch, remaining)
            work = []
            for _ in range(size):
                ix = queue_ix.pop(0) if queue_ix else -1
                work.append(self._create_pod(key, job, template, ix, ctx))
            results = await asyncio.gather(*work, return_exceptions=True)
            failed = [r for r in results if isinstance(r, BaseException)]
            created += size - len(failed)
            errors.extend(failed)
            remaining -= size
            if failed:
                for _ in range(remaining):
                    self.expectations.creation_observed(key)
                break
            batch *= 2
        if errors:
            raise errors[0]
        return active + created

    async def _create_pod(self, key: str, job: dict[str, Any], template: dict[str, Any], ix: int, ctx: _Ctx) -> None:
        t = copy.deepcopy(template) if ix >= 0 else template
        tmd = t.get("metadata") or {}
        spec = copy.deepcopy(t.get("spec") or {})
        md: dict[str, Any] = {"generateName": f"{job['metadata']['name']}-",
                              "namespace": job["metadata"].get("namespace"),
                              "labels": dict(tmd.get("labels") or {}),
                              "annotations": dict(tmd.get("annotations") or {}),
                              "finalizers": list(tmd.get("finalizers") or []),
                              "ownerReferences": [controller_ref(job)]}
        if ix >= 0:
            md["annotations"][COMPLETION_INDEX] = str(ix)
            md["labels"][COMPLETION_INDEX] = str(ix)
            spec["hostname"] = f"{job['metadata']['name']}-{ix}"
            md["generateName"] = generate_name_with_index(job["metadata"]["name"], ix)
            if has_backoff_limit_per_index(job):
                fails, ignored = _new_index_failure_counts(job, ctx.delayed_deletion_per_index.get(ix))
                md["annotations"][INDEX_FAILURE_COUNT] = str(fails)
                if ignored > 0:
                    md["annotations"][INDEX_IGNORED_FAILURE_COUNT] = str(ignored)
        if not md["annotations"]:
            del md["annotations"]
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
        try:
            created = await self.client.create(GVRS["pods"], pod, md["namespace"])
        except StatusError as e:
            if e.code == 403 and "being terminated" in e.message:
                return  # the namespace is going away; the expectation stays until the Job goes too
            self.expectations.creation_observed(key)
            self.recorder.event(job, "Warning", "FailedCreate", f"Error creating: {e.message}")
            raise
        self.recorder.event(job, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    def _active_pods_for_removal(self, job: dict[str, Any], pods: list[dict[str, Any]], at_least: int) -> list[dict[str, Any]]:
        """Duplicate, unknown and out-of-range indexes first; then the least advanced pods."""
        rm: list[dict[str, Any]] = []
        left = list(pods)
        if is_indexed(job):
            completions = int(job_spec(job).get("completions") or 0)
            by_ix: dict[int, list[dict[str, Any]]] = {}
            left = []
            for p in pods:
                ix = completion_index(p)
                if ix < 0 or ix >= completions:
                    rm.append(p)
                else:
                    by_ix.setdefault(ix, []).append(p)
            for group in by_ix.values():
                group.sort(key=active_pods_sort_key)
                rm.extend(group[:-1])  # keep the most advanced pod of each index
                left.append(group[-1])
        if len(rm) < at_least:
            left.sort(key=active_pods_sort_key)
            rm.extend(left[:at_least - len(rm)])
        return rm

    def _first_pending_indexes(self, ctx: _Ctx, count: int, completions: int) -> list[int]:
        busy = with_indexes(ctx.succeeded_indexes, (completion_index(p) for p in ctx.active_pods
                                                    if completion_index(p) >= 0))
        if only_replace_failed_pods(ctx.job):
            busy = with_indexes(busy, (completion_index(p) for p in ctx.pods
                                       if is_terminating(p) and completion_index(p) >= 0))
        if ctx.failed_indexes:
            busy = merge_intervals(busy, ctx.failed_indexes)
        out: list[int] = []
        for ix in range(completions):
            if len(out) >= count:
                break
            if not has_index(busy, ix):
                out.append(ix)
        return out

    def _indexes_ready_to_create(self, indexes: list[int], ctx: _Ctx) -> tuple[list[int], float]:
        now = self.clock()
        ready: list[int] = []
        min_wait: float | None = None
        for ix in indexes:
            last = ctx.delayed_deletion_per_index.get(ix)
            wait = 0.0
            if last is not None:
                wait = backoff_remaining(now, _abs_failures(last) + 1, pod_finished_time(last))
            if wait == 0:
                ready.append(ix)
            elif min_wait is None or wait < min_wait:
                min_wait = wait
        return (ready, 0.0) if ready else ([], min_wait or 0.0)

    async def _delete_job_pods(self, key: str, job: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[int, int]:
        """Delete pods we no longer want, dropping their finalizer first (they are not counted)."""
        async def one(pod: dict[str, Any]) -> bool:
            try:
                if has_tracking_finalizer(pod):
                    await self._remove_finalizer(pod)
                await self.client.delete(GVRS["pods"], pod["metadata"]["name"], pod["metadata"].get("namespace"))
            except StatusError as e:
                self.expectations.deletion_observed(key)
                if e.code != 404:
                    raise
                return True
            self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")
            return True

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        removed = removed_ready = 0
        err: BaseException | None = None
        for pod, r in zip(pods, results, strict=True):
            if isinstance(r, BaseException):
                err = err or r
                continue
            removed += 1
            removed_ready += is_pod_ready(pod)
        if err is not None:
            raise err
        return removed_ready, removed

    async def _delete_active_pods(self, job: dict[str, Any], pods: list[dict[str, Any]]) -> tuple[int, int, BaseException | None]:
        """Finishing: delete active pods keeping their finalizers (they are counted as failed)."""
        async def one(pod: dict[str, Any]) -> None:
            try:
                await self.client.delete(GVRS["pods"], pod["metadata"]["name"], pod["metadata"].get("namespace"))
            except StatusError as e:
                if e.code != 404:
                    raise
                return
            self.recorder.event(job, "Normal", "SuccessfulDelete", f"Deleted pod: {pod['metadata']['name']}")

        results = await asyncio.gather(*(one(p) for p in pods), return_exceptions=True)
        deleted = deleted_ready = 0
        err: BaseException | None = None
        for pod, r in zip(pods, results, strict=True):
            if isinstance(r, BaseException):
                err = err or r
                continue
            deleted += 1
            deleted_ready += is_pod_ready(pod)
        return deleted_ready, deleted, err

    async def _remove_finalizer(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        fins = [f for f in md.get("finalizers") or [] if f != JOB_TRACKING_FINALIZER]
        # a strategic merge directive removes just our finalizer, whatever else changed meanwhile
        await self.client.patch(GVRS["pods"], md["name"],
                                {"metadata": {"$deleteFromPrimitiveList/finalizers": [JOB_TRACKING_FINALIZER]}},
                                md.get("namespace"), patch_type="strategic")
        md["finalizers"] = fins

    # ---- tracking: uncounted pods, finalizers, counters, finishing --------------------------
    async def _track_status_and_remove_finalizers(self, key: str, ctx: _Ctx, needs_flush: bool) -> None:
        job = ctx.job
        status = job["status"]
        uncounted = status["uncountedTerminatedPods"]
        indexed = is_indexed(job)
        completions = int(job_spec(job).get("completions") or 0)
        pods = sorted(ctx.pods, key=completion_index) if indexed else ctx.pods
        with_finalizer = {p["metadata"]["uid"] for p in pods
                          if has_tracking_finalizer(p) and p["metadata"]["uid"] not in ctx.expected_rm_finalizers}
        if _clean_uncounted(status, with_finalizer):
            needs_flush = True
        to_remove: list[dict[str, Any]] = []
        new_succeeded_ix: list[int] = []
        reached_max = False
        pfp = job_spec(job).get("podFailurePolicy")
        finishing_failed = ctx.finished_condition is not None and ctx.finished_condition["type"] != "SuccessCriteriaMet"
        for pod in pods:
            uid = pod["metadata"]["uid"]
            if not has_tracking_finalizer(pod) or uid in ctx.expected_rm_finalizers:
                continue  # counted in an earlier sync
            failed = is_pod_failed(pod, job)
            if not self._can_remove_finalizer(ctx, pod, failed):
                continue
            to_remove.append(pod)
            phase = (pod.get("status") or {}).get("phase")
            if phase == "Succeeded" and uid not in ctx.uncounted_failed:
                if indexed:
                    ix = completion_index(pod)
                    if 0 <= ix < completions and not has_index(ctx.prev_succeeded_indexes, ix):
                        new_succeeded_ix.append(ix)
                        needs_flush = True
                elif uid not in ctx.uncounted_succeeded:
                    needs_flush = True
                    uncounted.setdefault("succeeded", []).append(uid)
                    ctx.uncounted_succeeded.add(uid)
            elif failed or finishing_failed:
                # once the Job is failing, every pod that did not succeed counts as failed
                ix = completion_index(pod)
                if uid not in ctx.uncounted_failed and (not indexed or 0 <= ix < completions):
                    if match_pod_failure_policy(pfp, pod)[1]:
                        needs_flush = True
                        uncounted.setdefault("failed", []).append(uid)
                        ctx.uncounted_failed.add(uid)
            if len(new_succeeded_ix) + len(uncounted.get("succeeded") or ()) + len(uncounted.get("failed") or ()) \
                    >= MAX_UNCOUNTED_PODS:
                reached_max = True  # keep the status small; the status update requeues us
                break
        if indexed:
            ctx.succeeded_indexes = with_indexes(ctx.succeeded_indexes, new_succeeded_ix)
            s = format_intervals(ctx.succeeded_indexes)
            if s != (status.get("completedIndexes") or ""):
                needs_flush = True
            status["succeeded"] = total_intervals(ctx.succeeded_indexes)
            status["completedIndexes"] = s
            if ctx.failed_indexes is not None:
                fs = format_intervals(ctx.failed_indexes)
                if fs != status.get("failedIndexes"):
                    status["failedIndexes"] = fs
                    needs_flush = True
        fc = ctx.finished_condition
        now = self.clock()
        if fc is not None and fc["type"] == "FailureTarget":
            status.setdefault("conditions", []).append(fc)
            needs_flush = True
            ctx.finished_condition = new_condition("Failed", "True", fc.get("reason", ""), fc.get("message", ""), now)
        elif fc is not None and fc["type"] == "SuccessCriteriaMet":
            met = find_condition(job, "SuccessCriteriaMet")
            if met is None or met.get("status") != "True":
                status.setdefault("conditions", []).append(fc)
                needs_flush = True
            ctx.finished_condition = new_condition("Complete", "True", fc.get("reason", ""), fc.get("message", ""), now)

        # 1. record the newly finished pods as uncounted (and any interim condition)
        if needs_flush:
            await self._update_status(ctx)
            self.backoffs[key] = ctx.new_backoff
            needs_flush = False
        # 2. remove their finalizers; 3. move removed ones from uncounted to the counters
        rm_error: BaseException | None = None
        if to_remove:
            uids = [p["metadata"]["uid"] for p in to_remove]
            self.finalizer_expectations.expect_removed(key, uids)
            results = await asyncio.gather(*(self._remove_finalizer(p) for p in to_remove), return_exceptions=True)
            for pod, r in zip(to_remove, results, strict=True):
                if isinstance(r, StatusError) and r.code == 404:
                    r = None  # gone: as good as removed
                if isinstance(r, BaseException):
                    self.finalizer_expectations.observed(key, pod["metadata"]["uid"])
                    rm_error = rm_error or r
                else:
                    with_finalizer.discard(pod["metadata"]["uid"])
        if _clean_uncounted(ctx.job["status"], with_finalizer):
            needs_flush = True
        if rm_error is not None:
            if needs_flush:
                await self._update_status(ctx)
            raise rm_error
        finished = not reached_max and self._enact_finished(ctx, now)
        if finished:
            needs_flush = True
        if needs_flush:
            await self._update_status(ctx)
            if finished:
                self._record_finished(ctx)

    def _can_remove_finalizer(self, ctx: _Ctx, pod: dict[str, Any], failed: bool) -> bool:
        if ctx.job["metadata"].get("deletionTimestamp") or ctx.finished_condition is not None \
                or (pod.get("status") or {}).get("phase") == "Succeeded":
            return True
        if not failed:
            return False
        if has_backoff_limit_per_index(ctx.job):
            ix = completion_index(pod)
            held = ctx.delayed_deletion_per_index.get(ix)
            if held is not None and held["metadata"]["uid"] == pod["metadata"]["uid"]:
                return False  # kept until its replacement inherits the failure count
        return True

    def _enact_finished(self, ctx: _Ctx, now: float) -> bool:
        fc = ctx.finished_condition
        if fc is None:
            return False
        unc = ctx.job["status"].get("uncountedTerminatedPods") or {}
        if unc.get("succeeded") or unc.get("failed"):
            return False  # count everything first
        if ctx.terminating > 0:
            return False  # Complete/Failed only once no pod is still running down
        conds = ctx.job["status"].setdefault("conditions", [])
        ensure_condition(conds, fc["type"], fc["status"], fc.get("reason", ""), fc.get("message", ""), now)
        if fc["type"] == "Complete":
            ctx.job["status"]["completionTime"] = format_time(now)
        return True

    def _record_finished(self, ctx: _Ctx) -> None:
        job, fc = ctx.job, ctx.finished_condition
        assert fc is not None
        if fc["type"] == "Complete":
            completions = job_spec(job).get("completions")
            if completions is not None and int(job["status"].get("succeeded") or 0) > int(completions):
                self.recorder.event(job, "Warning", "TooManySucceededPods",
                                    "Too many succeeded pods running after completion count reached")
            self.recorder.event(job, "Normal", "Completed", "Job completed")
        else:
            self.recorder.event(job, "Warning", fc.get("reason", ""), fc.get("message", ""))

    async def _update_status(self, ctx: _Ctx) -> None:
        job = ctx.job
        body = copy.deepcopy(job)
        body["status"] = _wire_status(job["status"])
        updated = await self.client.update_status(GVRS["jobs"], body)
        # keep working on our copy, with the server's resourceVersion for the next write
        job["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]

    # ---- orphans ----------------------------------------------------------------------------
    async def _sync_orphan_pod(self, pod_key: str) -> None:
        pod = self.pods.get(pod_key)
        if pod is None or not has_tracking_finalizer(pod):
            return
        ref = get_controller_of(pod)
        if ref is not None:
            if ref.get("kind") != "Job" or ref.get("apiVersion") != "batch/v1":
                return  # someone else's pod: not our finalizer to drop
            job = self._owner(pod, ref)
            if job is not None:
                managed_by = job_spec(job).get("managedBy")
                if managed_by and managed_by != MANAGED_BY_DEFAULT:
                    return
                if not is_job_finished(job):
                    return  # adopted: its Job will count it
        try:
            await self._remove_finalizer(pod)
        except StatusError as e:
            if e.code != 404:
                raise


def _abs_failures(pod: dict[str, Any]) -> int:
    return int_annotation(pod, INDEX_FAILURE_COUNT) + int_annotation(pod, INDEX_IGNORED_FAILURE_COUNT)


def _new_index_failure_counts(job: dict[str, Any], replaced: dict[str, Any] | None) -> tuple[int, int]:
    if replaced is None:
        return 0, 0
    fails = int_annotation(replaced, INDEX_FAILURE_COUNT)
    ignored = int_annotation(replaced, INDEX_IGNORED_FAILURE_COUNT)
    if match_pod_failure_policy(job_spec(job).get("podFailurePolicy"), replaced)[1]:
        fails += 1
    else:
        ignored += 1
    return fails, ignored


def _clean_uncounted(status: dict[str, Any], with_finalizer: set[str]) -> bool:
    """Move uncounted pods whose finalizer is gone into the counters."""
    unc = status.setdefault("uncountedTerminatedPods", {})
    changed = False
    for field_, counter in (("succeeded", "succeeded"), ("failed", "failed")):
        uids = unc.get(field_) or []
        keep = [u for u in uids if u in with_finalizer]
        if len(keep) != len(uids):
            changed = True
            status[counter] = int(status.get(counter) or 0) + len(uids) - len(keep)
            if keep:
                unc[field_] = keep
            else:
                unc.pop(field_, None)
    return changed


def _wire_status(status: dict[str, Any]) -> dict[str, Any]:
    """JobStatus as Go serialises it: zero counters and empty lists omitted, but `ready`,
    `terminating` and `uncountedTerminatedPods` kept (they are pointers upstream)."""
    out: dict[str, Any] = {}
    for k, v in status.items():
        if k in ("active", "succeeded", "failed") and not v:
            continue
        if k in ("conditions", "completedIndexes") and not v:
            continue
        if k == "uncountedTerminatedPods":
            v = {f: list(u) for f, u in (v or {}).items() if u}
        if v is None:
            continue
        out[k] = v
    return out
