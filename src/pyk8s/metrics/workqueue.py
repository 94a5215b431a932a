"""client-go's workqueue_* families for a component's named queues (client/workqueue.py).

A queue with metrics calls added/started/finished/retried; depth, unfinished work and the
longest running processor are read from the queue on scrape, as upstream's periodic update
computes them."""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from .core import Hist, exponential, histogram_family

__all__ = ["QueueMetrics", "WorkqueueMetrics"]

DURATION_BUCKETS = exponential(10e-9, 10, 10)  # 10 ns .. 10 s, as client-go's


class QueueMetrics:
    """One named queue's counts."""

    __slots__ = ("name", "queue", "adds", "retries", "added_at", "started_at", "queued", "work")

    def __init__(self, name: str) -> None:
        self.name = name
        self.queue: Any = None  # the queue, for its depth
        self.adds = 0
        self.retries = 0
        self.added_at: dict[Any, float] = {}
        self.started_at: dict[Any, float] = {}
        self.queued = Hist(DURATION_BUCKETS)
        self.work = Hist(DURATION_BUCKETS)

    def added(self, item: Any) -> None:
        self.adds += 1
        self.added_at.setdefault(item, time.monotonic())

    def started(self, item: Any) -> None:
        now = time.monotonic()
        t = self.added_at.pop(item, None)
        if t is not None:
            self.queued.observe(now - t)
        self.started_at[item] = now

    def finished(self, item: Any) -> None:
        t = self.started_at.pop(item, None)
        if t is not None:
            self.work.observe(time.monotonic() - t)

    def retried(self) -> None:
        self.retries += 1


class WorkqueueMetrics:
    """A component's queues (the controller manager's, the kubelet's...) and their collector."""

    def __init__(self) -> None:
        self.queues: dict[str, QueueMetrics] = {}

    def queue(self, name: str) -> QueueMetrics:
        q = self.queues.get(name)
        if q is None:
            q = self.queues[name] = QueueMetrics(name)
        return q

    def collect(self) -> Iterator[Metric]:
        qs = sorted(self.queues.values(), key=lambda q: q.name)
        now = time.monotonic()
        depth = GaugeMetricFamily("workqueue_depth", "Current depth of workqueue", labels=["name"])
        adds = CounterMetricFamily("workqueue_adds", "Total number of adds handled by workqueue", labels=["name"])
        retries = CounterMetricFamily("workqueue_retries", "Total number of retries handled by workqueue",
                                      labels=["name"])
        unfinished = GaugeMetricFamily("workqueue_unfinished_work_seconds", "How many seconds of work has been "
                                       "done that is in progress and hasn't been observed by work_duration. Large "
                                       "values indicate stuck threads. One can deduce the number of stuck threads "
                                       "by observing the rate at which this increases.", labels=["name"])
        longest = GaugeMetricFamily("workqueue_longest_running_processor_seconds", "How many seconds has the "
                                    "longest running processor for workqueue been running.", labels=["name"])
        for q in qs:
            depth.add_metric([q.name], len(q.queue) if q.queue is not None else 0)
            adds.add_metric([q.name], q.adds)
            retries.add_metric([q.name], q.retries)
            running = [now - t for t in list(q.started_at.values())]
            unfinished.add_metric([q.name], sum(running))
            longest.add_metric([q.name], max(running, default=0.0))
        yield from (depth, adds, retries)
        yield histogram_family("workqueue_queue_duration_seconds", "How long in seconds an item stays in "
                               "workqueue before being requested.", ("name",), [((q.name,), q.queued) for q in qs])
        yield histogram_family("workqueue_work_duration_seconds", "How long in seconds processing an item from "
                               "workqueue takes.", ("name",), [((q.name,), q.work) for q in qs])
        yield from (unfinished, longest)
