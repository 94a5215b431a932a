"""CronJob controller: creates a Job for each scheduled time, as upstream's cronjob_controllerv2.

Driven by watches and one timer per CronJob: every sync ends by requeueing the CronJob for
exactly its next schedule time (plus 100 ms, as upstream), so nothing relists on a period.
The schedule is robfig/cron's (`parse_standard` from validation; `next_time` here follows
SpecSchedule.Next, including its daylight-saving rules), in `spec.timeZone`, a `TZ=`/
`CRON_TZ=` prefix, or the controller's local zone. Jobs are named `<cronjob>-<scheduled
minutes since the epoch>`, so a time is never run twice; concurrencyPolicy Allow/Forbid/
Replace, startingDeadlineSeconds, suspend and the history limits behave as upstream, with
its events (SuccessfulCreate, SawCompletedJob, SuccessfulDelete, JobAlreadyActive,
MissSchedule, TooManyMissedTimes, UnexpectedJob, MissingJob).
"""

from __future__ import annotations

import copy
import logging
import math
import os
import time
import zoneinfo
from collections.abc import Callable
from datetime import UTC, datetime, timedelta, tzinfo
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import format_time, parse_time_or_none
from ..api.validation.groups.cron import STAR_BIT, CronError, CronSchedule, parse_standard
from .base import GVRS, Controller
from .history import controller_ref
from .job_util import is_job_finished
from .workload_pods import get_controller_of

log = logging.getLogger("pyk8s.controllers.cronjob")

__all__ = ["CronJobController", "next_time", "most_recent_schedule_time", "job_name", "format_schedule",
           "schedule_location", "SCHEDULED_TIMESTAMP_ANNOTATION"]

SCHEDULED_TIMESTAMP_ANNOTATION = "batch.kubernetes.io/cronjob-scheduled-timestamp"
NEXT_SCHEDULE_DELTA = 0.1  # requeue a little after the schedule time, as upstream
TOO_MANY_MISSED = 100


# ---- schedules --------------------------------------------------------------------------

def _local_zone() -> tzinfo:
    """The controller process's zone (what Go's time.Local is for kube-controller-manager)."""
    name = os.environ.get("TZ", "").lstrip(":")
    try:
        if name:
            return zoneinfo.ZoneInfo(name)
        with open("/etc/localtime", "rb") as f:
            return zoneinfo.ZoneInfo.from_file(f)
    except (OSError, ValueError, zoneinfo.ZoneInfoNotFoundError):
        return UTC


def schedule_location(sched: CronSchedule) -> tzinfo:
    if sched.location in ("", "Local"):
        return _local_zone()
    if sched.location == "UTC":
        return UTC
    return zoneinfo.ZoneInfo(sched.location)


def _offset_at(ts: float, loc: tzinfo) -> int:
    off = datetime.fromtimestamp(ts, loc).utcoffset()
    return int(off.total_seconds()) if off is not None else 0


def _go_date(year: int, month: int, day: int, hour: int, minute: int, second: int, loc: tzinfo) -> float:
    """time.Date: out-of-range fields normalise (day 32 is next month's 1st); a wall time that
    a DST change skips or repeats resolves as Go's zone lookup does."""
    year += (month - 1) // 12
    month = (month - 1) % 12 + 1
    naive = datetime(year, month, 1) + timedelta(days=day - 1, hours=hour, minutes=minute, seconds=second)
    local = naive.replace(tzinfo=UTC).timestamp()  # the wall clock read as if it were UTC
    off = _offset_at(local, loc)
    utc = local - off
    off2 = _offset_at(utc, loc)
    if off2 != off:  # the guessed offset is not in force at that instant: use the one that is
        utc = local - off2
    return utc


def _fields(t: float, loc: tzinfo) -> datetime:
    return datetime.fromtimestamp(t, loc)


def _day_matches(s: CronSchedule, d: datetime) -> bool:
    dom = bool((1 << d.day) & s.dom)
    dow = bool((1 << ((d.weekday() + 1) % 7)) & s.dow)  # Go: Sunday = 0
    if s.dom & STAR_BIT or s.dow & STAR_BIT:
        return dom and dow
    return dom or dow


def next_time(s: CronSchedule, t: float) -> float | None:
    """The first activation strictly after t (whole seconds), or None when there is none within
    five years (e.g. "0 0 30 2 *"), as robfig/cron's Schedule.Next."""
    if s.every_seconds is not None:
        delay = max(1, int(s.every_seconds))  # cron.Every rounds to whole seconds, at least one
        return math.floor(t) + delay
    loc = schedule_location(s)
    t = math.floor(t) + 1
    added = False
    year_limit = _fields(t, loc).year + 5
    while True:  # WRAP
        d = _fields(t, loc)
        if d.year > year_limit:
            return None
        wrapped = False
        while not (1 << d.month) & s.month:
            if not added:
                added = True
                t = _go_date(d.year, d.month, 1, 0, 0, 0, loc)
                d = _fields(t, loc)
            t = _go_date(d.year, d.month + 1, d.day, d.hour, d.minute, d.second, loc)
            d = _fields(t, loc)
            if d.month == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not _day_matches(s, d):
            if not added:
                added = True
                t = _go_date(d.year, d.month, d.day, 0, 0, 0, loc)
                d = _fields(t, loc)
            t = _go_date(d.year, d.month, d.day + 1, d.hour, d.minute, d.second, loc)
            d = _fields(t, loc)
            if d.hour != 0:  # DST moved midnight: step back onto it
                t += (24 - d.hour) * 3600 if d.hour > 12 else -d.hour * 3600
                d = _fields(t, loc)
            if d.day == 1:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << d.hour) & s.hour:
            if not added:
                added = True
                t = _go_date(d.year, d.month, d.day, d.hour, 0, 0, loc)
            t += 3600
            d = _fields(t, loc)
            if d.hour == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while not (1 << d.minute) & s.minute:
            if not added:
                added = True
                t -= t % 60
            t += 60
            d = _fields(t, loc)
            if d.minute == 0:
                wrapped = True
                break
        if wrapped:
            continue
        while d.second != 0:  # standard specs fire at second 0
            if not added:
                added = True
            t += 1
            d = _fields(t, loc)
            if d.second == 0:
                wrapped = True
                break
        if wrapped:
            continue
        return t


NONE_MISSED, FEW_MISSED, MANY_MISSED = 0, 1, 2


def most_recent_schedule_time(cj: dict[str, Any], now: float, s: CronSchedule,
                              include_deadline: bool) -> tuple[float, float | None, int]:
    """(earliest time considered, the latest activation after it and <= now or None, and whether
    none / a few / many (> 100) were missed) — upstream's mostRecentScheduleTime, which counts
    misses roughly by the interval between two activations."""
    status, spec = cj.get("status") or {}, cj.get("spec") or {}
    earliest = parse_time_or_none(status.get("lastScheduleTime"))
    if earliest is None:
        earliest = parse_time_or_none((cj.get("metadata") or {}).get("creationTimestamp")) or now
    if include_deadline and spec.get("startingDeadlineSeconds") is not None:
        # nothing older than the deadline would be started anyway
        earliest = max(earliest, now - int(spec["startingDeadlineSeconds"]))
    t1 = next_time(s, earliest)
    if t1 is not None and now < t1:
        return earliest, None, NONE_MISSED
    t2 = next_time(s, t1) if t1 is not None else None
    if t1 is not None and t2 is not None and now < t2:
        return earliest, t1, NONE_MISSED
    # a schedule that never fires (robfig/cron's Next gives the zero time, e.g. "59 23 31 2 *")
    # yields no interval: as upstream, that is an invalid schedule
    between = round(t2 - t1) if t1 is not None and t2 is not None else 0
    if between < 1 or t1 is None:
        raise CronError("time difference between two schedules is less than 1 second")
    missed = int((now - t1) // between) + 1
    # jump close to now, then let the schedule find the exact latest activation
    recent: float | None = None
    t: float | None = next_time(s, t1 + (missed - 2) * between)
    while t is not None and t <= now:
        recent = t
        t = next_time(s, t)
    return earliest, recent, MANY_MISSED if missed > TOO_MANY_MISSED else FEW_MISSED


def format_schedule(cj: dict[str, Any]) -> str:
    spec = cj.get("spec") or {}
    schedule = spec.get("schedule") or ""
    if "TZ" in schedule:
        return schedule
    if spec.get("timeZone"):
        return f"TZ={spec['timeZone']} {schedule}"
    return schedule


def job_name(cj: dict[str, Any], scheduled: float) -> str:
    """Deterministic per scheduled time: a time is never run twice, even after a crash."""
    return f"{cj['metadata']['name']}-{int(scheduled // 60)}"


def _rfc3339_in(t: float, zone: str | None) -> str:
    loc: tzinfo = UTC if not zone else zoneinfo.ZoneInfo(zone)
    d = datetime.fromtimestamp(t, loc)
    s = d.strftime("%Y-%m-%dT%H:%M:%S")
    off = d.utcoffset() or timedelta(0)
    if not off:
        return s + "Z"
    mins = int(off.total_seconds() // 60)
    sign = "+" if mins >= 0 else "-"
    return f"{s}{sign}{abs(mins) // 60:02d}:{abs(mins) % 60:02d}"


def job_from_template(cj: dict[str, Any], scheduled: float) -> dict[str, Any]:
    jt = (cj.get("spec") or {}).get("jobTemplate") or {}
    jmd = jt.get("metadata") or {}
    annotations = dict(jmd.get("annotations") or {})
    annotations[SCHEDULED_TIMESTAMP_ANNOTATION] = _rfc3339_in(scheduled, (cj.get("spec") or {}).get("timeZone"))
    md: dict[str, Any] = {"name": job_name(cj, scheduled), "namespace": cj["metadata"].get("namespace"),
                          "annotations": annotations, "ownerReferences": [controller_ref(cj)]}
    if jmd.get("labels"):
        md["labels"] = dict(jmd["labels"])
    return {"apiVersion": "batch/v1", "kind": "Job", "metadata": md, "spec": copy.deepcopy(jt.get("spec") or {})}


def _go_rfc1123z(t: float) -> str:
    return datetime.fromtimestamp(t, UTC).strftime("%a, %d %b %Y %H:%M:%S +0000")


def _job_condition(job: dict[str, Any]) -> str | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return c["type"]
    return None


def _job_ref(job: dict[str, Any]) -> dict[str, Any]:
    md = job["metadata"]
    return {"kind": "Job", "namespace": md.get("namespace"), "name": md["name"], "uid": md["uid"],
            "apiVersion": "batch/v1", "resourceVersion": md.get("resourceVersion")}


# ---- the controller -----------------------------------------------------------------------

class CronJobController(Controller):
    name = "cronjob"
    component = "cronjob-controller"
    workers = 5

    def __init__(self, ctx: Any, clock: Callable[[], float] = time.time) -> None:
        super().__init__(ctx)
        self.clock = clock

    def setup(self) -> None:
        self.cronjobs = self.ctx.informer("cronjobs")
        self.jobs = self.ctx.informer("jobs")
        self.cronjobs.add_handlers(on_add=self.enqueue, on_update=self._cronjob_updated)
        self.jobs.add_handlers(on_add=self._job_event, on_update=self._job_updated, on_delete=self._job_event)

    # ---- event handlers ---------------------------------------------------------------------
    def _owner_key(self, job: dict[str, Any]) -> str | None:
        ref = get_controller_of(job)
        if ref is None or ref.get("kind") != "CronJob":
            return None
        key = f"{job['metadata'].get('namespace')}/{ref.get('name')}"
        cj = self.cronjobs.get(key)
        if cj is None or cj["metadata"].get("uid") != ref.get("uid"):
            return None
        return key

    def _job_event(self, job: dict[str, Any]) -> None:
        key = self._owner_key(job)
        if key is not None:
            self.enqueue(key)

    def _job_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if get_controller_of(old) != get_controller_of(new):
            self._job_event(old)
        self._job_event(new)

    def _cronjob_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        ospec, nspec = old.get("spec") or {}, new.get("spec") or {}
        if ospec.get("schedule") != nspec.get("schedule") or ospec.get("timeZone") != nspec.get("timeZone"):
            # a new schedule: wake up at its next time (sooner timers win in the queue)
            try:
                sched = parse_standard(format_schedule(new))
            except CronError:
                self.recorder.event(new, "Warning", "UnParseableCronJobSchedule",
                                    f"unparseable schedule for cronjob: {nspec.get('schedule')}")
                return
            delay = self._next_schedule_delay(new, self.clock(), sched)
            if delay is not None:
                self.enqueue_after(new, delay)
            return
        self.enqueue(new)

    # ---- sync -------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        requeue = await self._sync(key)
        if requeue is not None:
            self.enqueue_after(key, max(requeue, 0.0))

    async def _sync(self, key: str) -> float | None:
        cj = self.cronjobs.get(key)
        if cj is None:
            return None
        cj = copy.deepcopy(cj)
        cj.setdefault("status", {})
        jobs = [j for j in self.jobs.list(cj["metadata"].get("namespace", ""))
                if (get_controller_of(j) or {}).get("uid") == cj["metadata"]["uid"]]
        update_after_cleanup = await self._cleanup_finished_jobs(cj, jobs)
        requeue, update_after_sync, err = await self._sync_cronjob(cj, jobs)
        if update_after_cleanup or update_after_sync:
            await self._update_status(cj)
        if requeue is not None:
            return requeue
        if err is not None:
            raise err
        return None

    def _next_schedule_delay(self, cj: dict[str, Any], now: float, sched: CronSchedule) -> float | None:
        """Seconds from now until the next activation after the most recent one (or after the
        creation / last schedule time when none is due yet)."""
        try:
            earliest, recent, missed = most_recent_schedule_time(cj, now, sched, False)
        except CronError:
            recent = now  # still come back, at the next slot from now
        else:
            if recent is None:
                recent = earliest if missed == NONE_MISSED else now
        nxt = next_time(sched, recent)
        if nxt is None:
            return None
        return nxt + NEXT_SCHEDULE_DELTA - now

    async def _sync_cronjob(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> tuple[float | None, bool, BaseException | None]:
        now = self.clock()
        status = cj["status"]
        update = False
        children = set()
        ns = cj["metadata"].get("namespace")
        for j in jobs:
            uid = j["metadata"]["uid"]
            children.add(uid)
            in_active = any(a.get("uid") == uid for a in status.get("active") or ())
            finished = is_job_finished(j)
            if not in_active and not finished:
                fresh = await self.client.get_or_none(GVRS["cronjobs"], cj["metadata"]["name"], ns)
                if fresh is not None and any(a.get("uid") == uid for a in (fresh.get("status") or {}).get("active") or ()):
                    status["active"] = (fresh.get("status") or {}).get("active")  # our cache was behind
                    continue
                # created by someone else (or we crashed before recording it): not adopted
                self.recorder.event(cj, "Warning", "UnexpectedJob",
                                    f"Saw a job that the controller did not create or forgot: {j['metadata']['name']}")
            elif in_active and finished:
                self._remove_active(cj, uid)
                self.recorder.event(cj, "Normal", "SawCompletedJob",
                                    f"Saw completed job: {j['metadata']['name']}, condition: {_job_condition(j)}")
                update = True
            if _job_condition(j) == "Complete":
                done = (j.get("status") or {}).get("completionTime")
                last = status.get("lastSuccessfulTime")
                if done and (not last or (parse_time_or_none(done) or 0) > (parse_time_or_none(last) or 0)):
                    status["lastSuccessfulTime"] = done
                    update = True
        for ref in list(status.get("active") or ()):
            if ref.get("uid") in children:
                continue
            # the cache may simply be slow: ask the server before dropping the reference
            found = await self.client.get_or_none(GVRS["jobs"], ref.get("name", ""), ref.get("namespace") or ns)
            if found is None:
                self.recorder.event(cj, "Normal", "MissingJob", f"Active job went missing: {ref.get('name')}")
                self._remove_active(cj, ref.get("uid"))
                update = True
        if cj["metadata"].get("deletionTimestamp"):
            return None, update, None
        spec = cj.get("spec") or {}
        tz = spec.get("timeZone")
        if tz:
            try:
                zoneinfo.ZoneInfo(tz)
            except (zoneinfo.ZoneInfoNotFoundError, ValueError):
                self.recorder.event(cj, "Warning", "UnknownTimeZone", f'invalid timeZone: "{tz}": unknown time zone {tz}')
                return None, update, None
        if spec.get("suspend"):
            return None, update, None
        schedule = format_schedule(cj)
        if "TZ" in (spec.get("schedule") or ""):
            self.recorder.event(cj, "Warning", "UnsupportedSchedule",
                                f'CRON_TZ or TZ used in schedule "{spec.get("schedule")}" is not officially supported, '
                                "see https://kubernetes.io/docs/concepts/workloads/controllers/cron-jobs/ for more details")
        try:
            sched = parse_standard(schedule)
        except CronError as e:
            self.recorder.event(cj, "Warning", "UnparseableSchedule", f'unparseable schedule: "{spec.get("schedule")}" : {e}')
            return None, update, None
        try:
            _, scheduled, missed = most_recent_schedule_time(cj, now, sched, True)
        except CronError as e:
            self.recorder.event(cj, "Warning", "InvalidSchedule", f"invalid schedule: {spec.get('schedule')} : {e}")
            return None, update, None
        if scheduled is None or scheduled > now:
            return self._next_schedule_delay(cj, now, sched), update, None
        if missed == MANY_MISSED:
            self.recorder.event(cj, "Warning", "TooManyMissedTimes",
                                "too many missed start times. Set or decrease .spec.startingDeadlineSeconds "
                                "or check clock skew")
        deadline = spec.get("startingDeadlineSeconds")
        # (as upstream: with the deadline already applied above this rarely, if ever, fires)
        if deadline is not None and scheduled + int(deadline) < now:
            self.recorder.event(cj, "Warning", "MissSchedule",
                                f"Missed scheduled time to start a job: {_go_rfc1123z(scheduled)}")
            return self._next_schedule_delay(cj, now, sched), update, None
        name = job_name(cj, scheduled)
        if any(a.get("name") == name for a in status.get("active") or ()) or \
                parse_time_or_none(status.get("lastScheduleTime")) == float(int(scheduled)):
            return self._next_schedule_delay(cj, now, sched), update, None  # this time is done already
        policy = spec.get("concurrencyPolicy") or "Allow"
        if policy == "Forbid" and status.get("active"):
            self.recorder.event(cj, "Normal", "JobAlreadyActive",
                                "Not starting job because prior execution is running and concurrency policy is Forbid")
            return self._next_schedule_delay(cj, now, sched), update, None
        if policy == "Replace":
            for ref in list(status.get("active") or ()):
                try:
                    old = await self.client.get(GVRS["jobs"], ref.get("name", ""), ref.get("namespace") or ns)
                except StatusError as e:
                    self.recorder.event(cj, "Warning", "FailedGet", f"Get job: {e.message}")
                    return None, update, e
                if not await self._delete_job(cj, old):
                    return None, update, RuntimeError(f"could not replace job {ns}/{old['metadata']['name']}")
                update = True
        body = job_from_template(cj, scheduled)
        try:
            created = await self.client.create(GVRS["jobs"], body, ns)
        except StatusError as e:
            if e.code == 403 and "being terminated" in e.message:
                return None, update, e
            if e.code != 409:
                self.recorder.event(cj, "Warning", "FailedCreate", f"Error creating job: {e.message}")
                return None, update, e
            # created before, but the status write was lost: record it now if it is ours
            try:
                created = await self.client.get(GVRS["jobs"], name, ns)
            except StatusError as e2:
                return None, update, e2
            if (get_controller_of(created) or {}).get("uid") != cj["metadata"]["uid"]:
                return None, update, None
            if any(a.get("uid") == created["metadata"]["uid"] for a in status.get("active") or ()):
                return None, update, None
        else:
            self.recorder.event(cj, "Normal", "SuccessfulCreate", f"Created job {created['metadata']['name']}")
        status.setdefault("active", []).append(_job_ref(created))
        status["lastScheduleTime"] = format_time(scheduled)
        return self._next_schedule_delay(cj, now, sched), True, None

    async def _cleanup_finished_jobs(self, cj: dict[str, Any], jobs: list[dict[str, Any]]) -> bool:
        spec = cj.get("spec") or {}
        if spec.get("successfulJobsHistoryLimit") is None and spec.get("failedJobsHistoryLimit") is None:
            return False
        succeeded = [j for j in jobs if _job_condition(j) == "Complete"]
        failed = [j for j in jobs if _job_condition(j) == "Failed"]
        update = False
        for group, limit in ((succeeded, spec.get("successfulJobsHistoryLimit")),
                             (failed, spec.get("failedJobsHistoryLimit"))):
            if limit is None or len(group) <= int(limit):
                continue
            # oldest first by start time; never-started jobs count as newest
            group.sort(key=lambda j: (not (j.get("status") or {}).get("startTime"),
                                      (j.get("status") or {}).get("startTime") or "", j["metadata"]["name"]))
            for j in group[:len(group) - int(limit)]:
                if await self._delete_job(cj, j):
                    update = True
        return update

    async def _delete_job(self, cj: dict[str, Any], job: dict[str, Any]) -> bool:
        try:
            await self.client.delete(GVRS["jobs"], job["metadata"]["name"], job["metadata"].get("namespace"),
                                     propagation="Background")
        except StatusError as e:
            if e.code != 404:
                self.recorder.event(cj, "Warning", "FailedDelete", f"Deleted job: {e.message}")
                return False
        self._remove_active(cj, job["metadata"]["uid"])
        self.recorder.event(cj, "Normal", "SuccessfulDelete", f"Deleted job {job['metadata']['name']}")
        return True

    @staticmethod
    def _remove_active(cj: dict[str, Any], uid: str | None) -> None:
        status = cj["status"]
        status["active"] = [a for a in status.get("active") or () if a.get("uid") != uid]
        if not status["active"]:
            del status["active"]

    async def _update_status(self, cj: dict[str, Any]) -> None:
        try:
            await self.client.update_status(GVRS["cronjobs"], cj)
        except StatusError as e:
            if e.code != 404:
                raise

