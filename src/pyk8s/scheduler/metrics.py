"""kube-scheduler's scheduler_* families (upstream's pkg/scheduler/metrics names, labels, buckets).

The runner reports each scheduling attempt (result and duration per profile) and each bound
pod (end-to-end latency since it was first queued, by attempts); the extension points that run
once per cycle (PreFilter, PostFilter, Reserve, Permit, PreBind) are timed around the profile's
run_* methods, as upstream records framework_extension_point_duration_seconds for every cycle.
Pending pods per sub-queue are read from the scheduling queue on scrape."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..metrics.core import Hist, exponential, histogram_family

__all__ = ["SchedulerMetrics"]

ATTEMPT_BUCKETS = exponential(0.001, 2, 15)
E2E_BUCKETS = exponential(0.01, 2, 20)
EXTENSION_POINT_BUCKETS = exponential(0.0001, 2, 12)
_CODES = ("Success", "Error", "Unschedulable", "UnschedulableAndUnresolvable", "Wait", "Skip", "Pending")
_POINTS = {"run_pre_filter": "PreFilter", "run_post_filter": "PostFilter", "run_reserve": "Reserve",
           "run_permit": "Permit", "run_pre_bind": "PreBind"}


class SchedulerMetrics:
    def __init__(self, scheduler: Any) -> None:
        self.scheduler = scheduler
        self.attempts: dict[tuple[str, str], int] = {}  # (result, profile)
        self.attempt_durations: dict[tuple[str, str], Hist] = {}
        self.e2e: dict[str, Hist] = {}  # attempts -> pod scheduling (SLI) duration
        self.points: dict[tuple[str, str, str], Hist] = {}  # (extension_point, status, profile)
        for profile in scheduler.profiles.values():
            self._time_points(profile)

    def attempt(self, result: str, profile: str, seconds: float) -> None:
        k = (result, profile)
        self.attempts[k] = self.attempts.get(k, 0) + 1
        h = self.attempt_durations.get(k)
        if h is None:
            h = self.attempt_durations[k] = Hist(ATTEMPT_BUCKETS)
        h.observe(seconds)

    def bound(self, qpi: Any) -> None:
        """A pod bound: its latency since its first attempt (upstream's InitialAttemptTimestamp), by attempts
        (upstream caps the label at 15)."""
        first = qpi.initial_attempt_timestamp or qpi.timestamp
        k = str(min(max(qpi.attempts, 1), 15))
        h = self.e2e.get(k)
        if h is None:
            h = self.e2e[k] = Hist(E2E_BUCKETS)
        h.observe(max(0.0, self.scheduler.queue.clock() - first))

    def _time_points(self, profile: Any) -> None:
        name = profile.scheduler_name
        for method, point in _POINTS.items():
            fn = getattr(profile, method, None)
            if fn is not None:
                setattr(profile, method, self._timed(fn, point, name))

    def _timed(self, fn: Callable[..., Any], point: str, profile: str) -> Callable[..., Any]:
        points = self.points

        def run(*args: Any, **kw: Any) -> Any:
            t0 = time.perf_counter()
            out = fn(*args, **kw)
            st = out[1] if isinstance(out, tuple) and point != "Permit" else (out[0] if isinstance(out, tuple)
                                                                              else out)
            code = getattr(st, "code", 0)
            k = (point, _CODES[int(code)] if 0 <= int(code) < len(_CODES) else "Error", profile)
            h = points.get(k)
            if h is None:
                h = points[k] = Hist(EXTENSION_POINT_BUCKETS)
            h.observe(time.perf_counter() - t0)
            return out

        return run

    def collect(self) -> Iterator[Metric]:
        c = CounterMetricFamily("scheduler_schedule_attempts", "Number of attempts to schedule pods, by the result. "
                                "'unschedulable' means a pod could not be scheduled, while 'error' means an internal "
                                "scheduler problem.", labels=["profile", "result"])
        for (result, profile), n in list(self.attempts.items()):
            c.add_metric([profile, result], n)
        yield c
        yield histogram_family("scheduler_scheduling_attempt_duration_seconds", "Scheduling attempt latency in "
                               "seconds (scheduling algorithm + binding)", ("profile", "result"),
                               [((p, r), h) for (r, p), h in list(self.attempt_durations.items())])
        e2e = [((k,), h) for k, h in sorted(self.e2e.items(), key=lambda kv: int(kv[0]))]
        yield histogram_family("scheduler_pod_scheduling_sli_duration_seconds", "E2e latency for a pod being "
                               "scheduled, from the time the pod enters the scheduling queue and might involve "
                               "multiple scheduling attempts.", ("attempts",), e2e)
        yield histogram_family("scheduler_pod_scheduling_duration_seconds", "E2e latency for a pod being scheduled "
                               "which may include multiple scheduling attempts.", ("attempts",), e2e)
        yield histogram_family("scheduler_framework_extension_point_duration_seconds", "Latency for running all "
                               "plugins of a specific extension point.", ("extension_point", "profile", "status"),
                               [((p, prof, s), h) for (p, s, prof), h in list(self.points.items())])
        g = GaugeMetricFamily("scheduler_pending_pods", "Number of pending pods, by the queue type. 'active' means "
                              "number of pods in activeQ; 'backoff' means number of pods in backoffQ; "
                              "'unschedulable' means number of pods in unschedulablePods that the scheduler "
                              "attempted to schedule and failed; 'gated' is the number of unschedulable pods that "
                              "the scheduler never attempted to schedule because they are gated.", labels=["queue"])
        q = self.scheduler.queue
        unsched = list(q._unschedulable.values())
        gated = sum(1 for p in unsched if p.gated)
        g.add_metric(["active"], len(q._active_items))
        g.add_metric(["backoff"], len(q._backoff_items))
        g.add_metric(["unschedulable"], len(unsched) - gated)
        g.add_metric(["gated"], gated)
        yield g
