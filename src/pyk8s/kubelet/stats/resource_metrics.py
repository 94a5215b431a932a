"""`GET /metrics/resource`: the kubelet's resource metrics (what metrics-server scrapes), from a Summary.

Names, help texts, stability markers and label sets are upstream's (pkg/kubelet/metrics/collectors);
each sample carries the time of its reading in milliseconds, as upstream prints them. Rendered with
prometheus_client from a registry made per scrape, so nothing is shared between kubelets in one process.
"""

from __future__ import annotations

import calendar
import functools
import time
from collections.abc import Iterator
from typing import Any

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

CONTENT_TYPE = "text/plain; version=0.0.4; charset=utf-8"


def parse_time(s: str | float | None) -> float | None:
    """A reading's time: an epoch float as the providers keep it, or a metav1.Time string."""
    if isinstance(s, float):
        return s
    return _parse_rfc3339(s)


@functools.lru_cache(maxsize=4096)  # a summary carries few distinct times (strptime is slow)
def _parse_rfc3339(s: str | None) -> float | None:
    if not s:
        return None
    try:
        return float(calendar.timegm(time.strptime(s, "%Y-%m-%dT%H:%M:%SZ")))
    except ValueError:
        return None


class _Collector:
    def __init__(self, families: list[Metric]) -> None:
        self.families = families

    def collect(self) -> Iterator[Metric]:
        yield from self.families


def render(families: list[Metric]) -> bytes:
    reg = CollectorRegistry(auto_describe=False)
    reg.register(_Collector(families))
    return generate_latest(reg)


def _cpu(fam: CounterMetricFamily, labels: list[str], cpu: dict[str, Any] | None) -> None:
    if cpu and "usageCoreNanoSeconds" in cpu:
        fam.add_metric(labels, cpu["usageCoreNanoSeconds"] / 1e9, timestamp=parse_time(cpu.get("time")))


def _mem(fam: GaugeMetricFamily, labels: list[str], mem: dict[str, Any] | None) -> None:
    if mem and "workingSetBytes" in mem:
        fam.add_metric(labels, mem["workingSetBytes"], timestamp=parse_time(mem.get("time")))


def families(summary: dict[str, Any] | None) -> list[Metric]:
    """The metric families of /metrics/resource; a None summary (it could not be made) gives scrape_error 1."""
    node_cpu = CounterMetricFamily("node_cpu_usage_seconds_total",
                                   "[STABLE] Cumulative cpu time consumed by the node in core-seconds")
    node_mem = GaugeMetricFamily("node_memory_working_set_bytes", "[STABLE] Current working set of the node in bytes")
    c_cpu = CounterMetricFamily("container_cpu_usage_seconds_total",
                                "[STABLE] Cumulative cpu time consumed by the container in core-seconds",
                                labels=["container", "namespace", "pod"])
    c_mem = GaugeMetricFamily("container_memory_working_set_bytes",
                              "[STABLE] Current working set of the container in bytes",
                              labels=["container", "namespace", "pod"])
    c_start = GaugeMetricFamily("container_start_time_seconds",
                                "[STABLE] Start time of the container since unix epoch in seconds",
                                labels=["container", "namespace", "pod"])
    p_cpu = CounterMetricFamily("pod_cpu_usage_seconds_total",
                                "[STABLE] Cumulative cpu time consumed by the pod in core-seconds",
                                labels=["namespace", "pod"])
    p_mem = GaugeMetricFamily("pod_memory_working_set_bytes", "[STABLE] Current working set of the pod in bytes",
                              labels=["namespace", "pod"])
    failed = "1" if summary is None else "0"
    scrape = GaugeMetricFamily("scrape_error",
                               "[ALPHA] 1 if there was an error while getting container metrics, 0 otherwise")
    scrape.add_metric([], float(failed))
    rscrape = GaugeMetricFamily("resource_scrape_error",
                                "[STABLE] 1 if there was an error while getting container metrics, 0 otherwise")
    rscrape.add_metric([], float(failed))
    if summary is not None:
        node = summary.get("node") or {}
        _cpu(node_cpu, [], node.get("cpu"))
        _mem(node_mem, [], node.get("memory"))
        for pod in summary.get("pods") or []:
            ref = pod.get("podRef") or {}
            ns, name = ref.get("namespace", ""), ref.get("name", "")
            _cpu(p_cpu, [ns, name], pod.get("cpu"))
            _mem(p_mem, [ns, name], pod.get("memory"))
            for c in pod.get("containers") or []:
                labels = [c.get("name", ""), ns, name]
                _cpu(c_cpu, labels, c.get("cpu"))
                _mem(c_mem, labels, c.get("memory"))
                start = parse_time(c.get("startTime"))
                if start is not None:
                    c_start.add_metric(labels, start, timestamp=start)
    return [c_cpu, c_mem, c_start, node_cpu, node_mem, p_cpu, p_mem, rscrape, scrape]
