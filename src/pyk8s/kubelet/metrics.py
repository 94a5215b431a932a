"""The kubelet's /metrics (port 10250): upstream's kubelet_* families.

Pod start latency (first sight of the pod to all its containers running), pod worker sync
durations by operation, runtime operations counted around the container runtime's calls, and
on scrape the running pods and containers as the PLEG's last relist saw them."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web
from prometheus_client.metrics_core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..metrics.core import Hist, component_registry, exposition, histogram_family
from ..metrics.rest_client import RestClientMetrics

__all__ = ["KubeletMetrics"]

# upstream's kubelet_pod_start_duration_seconds buckets (seconds)
POD_START_BUCKETS = (0.5, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 8.0, 10.0, 20.0, 30.0, 45.0, 60.0, 120.0, 180.0, 240.0,
                     300.0, 360.0, 480.0, 600.0, 900.0, 1200.0, 1800.0, 2700.0, 3600.0)
DEFAULT_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)  # prometheus.DefBuckets
# runtime method -> upstream's operation_type (the CRI call's name)
_OPERATIONS = {"version": "version", "create_sandbox": "run_podsandbox", "stop_sandbox": "stop_podsandbox",
               "remove_sandbox": "remove_podsandbox", "sandbox_status": "podsandbox_status",
               "list_sandboxes": "list_podsandbox", "create_container": "create_container",
               "start_container": "start_container", "stop_container": "stop_container",
               "remove_container": "remove_container", "container_status": "container_status",
               "list_containers": "list_containers", "exec_sync": "exec_sync", "container_stats": "container_stats",
               "sandbox_stats": "pod_sandbox_stats"}


class KubeletMetrics:
    def __init__(self, kubelet: Any) -> None:
        self.kubelet = kubelet
        self.pod_start = Hist(POD_START_BUCKETS)
        self.worker: dict[str, Hist] = {}
        self.operations: dict[str, int] = {}
        self.errors: dict[str, int] = {}
        self.registry = component_registry()
        self.registry.register(self)  # type: ignore[arg-type]
        self.rest_client = RestClientMetrics()  # the kubelet's API client (rest_client_*)
        self.registry.register(self.rest_client)  # type: ignore[arg-type]
        if getattr(kubelet, "client", None) is not None and getattr(kubelet.client, "metrics", None) is None:
            kubelet.client.metrics = self.rest_client

    # ---- what the kubelet reports ------------------------------------------------------------
    def pod_started(self, seconds: float) -> None:
        self.pod_start.observe(max(0.0, seconds))

    def pod_worker(self, operation: str, seconds: float) -> None:
        h = self.worker.get(operation)
        if h is None:
            h = self.worker[operation] = Hist(DEFAULT_BUCKETS)
        h.observe(seconds)

    def instrument_runtime(self, runtime: Any) -> None:
        """Count every CRI-shaped call of the runtime (the methods are wrapped on the instance, so the
        PLEG, probes and the streaming server, which share it, are counted too)."""
        for method, op in _OPERATIONS.items():
            fn = getattr(runtime, method, None)
            if fn is not None:
                setattr(runtime, method, self._counted(fn, op))

    def _counted(self, fn: Callable[..., Any], op: str) -> Callable[..., Any]:
        ops, errors = self.operations, self.errors

        @functools.wraps(fn)
        async def call(*args: Any, **kw: Any) -> Any:
            ops[op] = ops.get(op, 0) + 1
            try:
                return await fn(*args, **kw)
            except Exception:
                errors[op] = errors.get(op, 0) + 1
                raise

        return call

    async def handle(self, request: web.Request) -> web.Response:
        body, ct = exposition(self.registry, request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": ct})

    # ---- on scrape ---------------------------------------------------------------------------
    def collect(self) -> Iterator[Metric]:
        kl = self.kubelet
        g = GaugeMetricFamily("kubelet_node_name", "The node's name. The count is always 1.", labels=["node"])
        g.add_metric([kl.node_name], 1)
        yield g
        # what the runtime last reported (the PLEG's relist), as upstream reads its runtime cache
        states = dict.fromkeys(("running", "exited", "created", "unknown"), 0)
        running_uids: set[str] = set()
        pleg = kl.pleg
        for uid, state in list(pleg._states.values()) if pleg is not None else ():
            states[state if state in states else "unknown"] += 1
            if state == "running":
                running_uids.add(uid)
        pods = sum(1 for uid in running_uids if pleg.sandboxes.get(uid))
        g = GaugeMetricFamily("kubelet_running_pods", "Number of pods that have a running pod sandbox")
        g.add_metric([], pods)
        yield g
        g = GaugeMetricFamily("kubelet_running_containers", "Number of containers currently running",
                              labels=["container_state"])
        for st, n in states.items():
            g.add_metric([st], n)
        yield g
        yield histogram_family("kubelet_pod_start_duration_seconds", "Duration in seconds from kubelet seeing a pod "
                               "for the first time to the pod starting to run", (), [((), self.pod_start)])
        yield histogram_family("kubelet_pod_worker_duration_seconds", "Duration in seconds to sync a single pod. "
                               "Broken down by operation type: create, update, or sync", ("operation",),
                               [((op,), h) for op, h in sorted(self.worker.items())])
        c = CounterMetricFamily("kubelet_runtime_operations", "Cumulative number of runtime operations by "
                                "operation type.", labels=["operation_type"])
        for op, n in sorted(self.operations.items()):
            c.add_metric([op], n)
        yield c
        c = CounterMetricFamily("kubelet_runtime_operations_errors", "Cumulative number of runtime operation "
                                "errors by operation type.", labels=["operation_type"])
        for op, n in sorted(self.errors.items()):
            c.add_metric([op], n)
        yield c


