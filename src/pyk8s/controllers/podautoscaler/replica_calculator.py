"""The HPA's replica calculator: from metrics and the target's pods to a replica count, as upstream's
pkg/controller/podautoscaler/replica_calculator.go.

Pure functions over wire-form pods and fetched metrics (values in milli-units); the controller fetches
both and calls these, so every case of upstream's table is testable without a server.

The rules, as upstream: desired = ceil(ratio x pods counted) unless |1 - ratio| <= tolerance; pods being
deleted or Failed are ignored; Pending pods (and, for cpu, pods not Ready or still in their cpu
initialization period) count as unready; on a scale-up unready pods and pods without metrics count as
0 usage, on a scale-down pods without metrics count as 100% of their request (or the target if higher);
a recomputation that would flip the direction of scaling keeps the current count.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ...api.quantity import parse_quantity
from ...api.timefmt import parse_time

__all__ = ["PodMetric", "ReplicaCalcError", "ReplicaCalculator", "calculate_pod_requests", "group_pods",
           "metric_usage_ratio", "resource_utilization_ratio"]

# upstream's defaults of --horizontal-pod-autoscaler-tolerance, -cpu-initialization-period and
# -initial-readiness-delay
DEFAULT_TOLERANCE = 0.1
DEFAULT_CPU_INITIALIZATION_PERIOD = 300.0
DEFAULT_INITIAL_READINESS_DELAY = 30.0
DEFAULT_METRIC_WINDOW = 60.0


class ReplicaCalcError(Exception):
    """A replica count could not be computed; the message is upstream's."""


@dataclass
class PodMetric:
    value: int  # milli-units
    timestamp: float = 0.0
    window: float = DEFAULT_METRIC_WINDOW


PodMetricsInfo = dict[str, PodMetric]


def _ts(raw: Any) -> float | None:
    if not raw:
        return None
    try:
        return parse_time(raw)
    except (ValueError, TypeError):
        return None


def _ready_condition(pod: dict[str, Any]) -> dict[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c
    return None


def is_pod_ready(pod: dict[str, Any]) -> bool:
    c = _ready_condition(pod)
    return c is not None and c.get("status") == "True"


def group_pods(pods: list[dict[str, Any]], metrics: PodMetricsInfo, resource: str, cpu_initialization_period: float,
               delay_of_initial_readiness_status: float, now: float
               ) -> tuple[int, set[str], set[str], set[str]]:
    """(ready pod count, unready pods, pods missing metrics, ignored pods), as upstream's groupPods."""
    ready = 0
    unready: set[str] = set()
    missing: set[str] = set()
    ignored: set[str] = set()
    for pod in pods:
        name = pod["metadata"]["name"]
        status = pod.get("status") or {}
        if pod["metadata"].get("deletionTimestamp") or status.get("phase") == "Failed":
            ignored.add(name)
            continue
        if status.get("phase") == "Pending":
            unready.add(name)
            continue
        metric = metrics.get(name)
        if metric is None:
            missing.add(name)
            continue
        if resource == "cpu":
            cond = _ready_condition(pod)
            start = _ts(status.get("startTime"))
            if cond is None or start is None:
                is_unready = True
            else:
                transition = _ts(cond.get("lastTransitionTime")) or 0.0
                if start + cpu_initialization_period > now:
                    # in its initialization period: unready, or no full metric window since it became ready
                    is_unready = cond.get("status") == "False" or metric.timestamp < transition + metric.window
                else:
                    # unready and never ready since start
                    is_unready = cond.get("status") == "False" and start + delay_of_initial_readiness_status > transition
            if is_unready:
                unready.add(name)
                continue
        ready += 1
    return ready, unready, missing, ignored


def _restartable_init(c: dict[str, Any]) -> bool:
    return c.get("restartPolicy") == "Always"


def calculate_pod_requests(pods: list[dict[str, Any]], container: str, resource: str) -> dict[str, int]:
    """Each pod's request of resource in milli-units, over its containers and sidecars (or one container)."""
    requests: dict[str, int] = {}
    for pod in pods:
        spec = pod.get("spec") or {}
        containers = [*(spec.get("containers") or []), *filter(_restartable_init, spec.get("initContainers") or [])]
        total = 0
        for c in containers:
            if container and c.get("name") != container:
                continue
            raw = ((c.get("resources") or {}).get("requests") or {}).get(resource)
            if raw is None:
                raise ReplicaCalcError(f"missing request for {resource} in container {c.get('name', '')} "
                                       f"of Pod {pod['metadata']['name']}")
            total += parse_quantity(raw).to_milli()
        requests[pod["metadata"]["name"]] = total
    return requests


def resource_utilization_ratio(metrics: PodMetricsInfo, requests: dict[str, int], target_utilization: int
                               ) -> tuple[float, int, int]:
    """(usage ratio, current utilization %, average raw value) over the pods with both a metric and a request."""
    metrics_total = requests_total = entries = 0
    for name, m in metrics.items():
        if name not in requests:
            continue  # missing requests are checked elsewhere: a metric without one is extraneous
        metrics_total += m.value
        requests_total += requests[name]
        entries += 1
    if requests_total == 0:
        raise ReplicaCalcError("no metrics returned matched known pods")
    utilization = _go_div(metrics_total * 100, requests_total)
    return utilization / target_utilization, utilization, _go_div(metrics_total, entries)


def metric_usage_ratio(metrics: PodMetricsInfo, target_usage: int) -> tuple[float, int]:
    """(usage ratio, average usage) of a per-pod metric against its average target."""
    usage = _go_div(sum(m.value for m in metrics.values()), len(metrics))
    return usage / target_usage, usage


def _go_div(a: int, b: int) -> int:
    """Go's integer division truncates toward zero."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


def _ceil(x: float) -> int:
    return int(math.ceil(x))


@dataclass
class ReplicaCalculator:
    tolerance: float = DEFAULT_TOLERANCE
    cpu_initialization_period: float = DEFAULT_CPU_INITIALIZATION_PERIOD
    delay_of_initial_readiness_status: float = DEFAULT_INITIAL_READINESS_DELAY

    def resource_replicas(self, current_replicas: int, target_utilization: int, resource: str,
                          pods: list[dict[str, Any]], metrics: PodMetricsInfo, container: str, now: float
                          ) -> tuple[int, int, int]:
        """(replicas, utilization %, raw average) for a Utilization target (GetResourceReplicas)."""
        if not pods:
            raise ReplicaCalcError("no pods returned by selector while calculating replica count")
        metrics = dict(metrics)
        ready, unready, missing, ignored = group_pods(pods, metrics, resource, self.cpu_initialization_period,
                                                      self.delay_of_initial_readiness_status, now)
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise ReplicaCalcError("did not receive metrics for targeted pods (pods might be unready)")
        requests = calculate_pod_requests(pods, container, resource)
        ratio, utilization, raw = resource_utilization_ratio(metrics, requests, target_utilization)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return current_replicas, utilization, raw
            return _ceil(ratio * ready), utilization, raw

        if missing:
            if ratio < 1.0:
                # scale-down: pods without metrics use 100% of their request, or the target if above 100%
                fallback = max(100, target_utilization)
                for name in missing:
                    metrics[name] = PodMetric(_go_div(requests[name] * fallback, 100))
            elif ratio > 1.0:
                for name in missing:
                    metrics[name] = PodMetric(0)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)

        new_ratio, _, _ = resource_utilization_ratio(metrics, requests, target_utilization)
        return self._rebalanced(current_replicas, ratio, new_ratio, len(metrics)), utilization, raw

    def _rebalanced(self, current_replicas: int, ratio: float, new_ratio: float, counted: int) -> int:
        """The count after filling in missing/unready pods, unless that flips the direction or is too small."""
        if abs(1.0 - new_ratio) <= self.tolerance or (ratio < 1.0 < new_ratio) or (ratio > 1.0 > new_ratio):
            return current_replicas
        new_replicas = _ceil(new_ratio * counted)
        if (new_ratio < 1.0 and new_replicas > current_replicas) or (new_ratio > 1.0 and new_replicas < current_replicas):
            return current_replicas
        return new_replicas

    def plain_metric_replicas(self, current_replicas: int, target_usage: int, resource: str,
                              pods: list[dict[str, Any]], metrics: PodMetricsInfo, now: float) -> tuple[int, int]:
        """(replicas, average usage) for an AverageValue target of a resource or a Pods metric
        (calcPlainMetricReplicas; resource is "" for a Pods metric)."""
        if not pods:
            raise ReplicaCalcError("no pods returned by selector while calculating replica count")
        metrics = dict(metrics)
        ready, unready, missing, ignored = group_pods(pods, metrics, resource, self.cpu_initialization_period,
                                                      self.delay_of_initial_readiness_status, now)
        for name in ignored | unready:
            metrics.pop(name, None)
        if not metrics:
            raise ReplicaCalcError("did not receive metrics for targeted pods (pods might be unready)")
        ratio, usage = metric_usage_ratio(metrics, target_usage)

        scale_up_with_unready = bool(unready) and ratio > 1.0
        if not scale_up_with_unready and not missing:
            if abs(1.0 - ratio) <= self.tolerance:
                return current_replicas, usage
            return _ceil(ratio * ready), usage

        if missing:
            # scale-down: missing pods use exactly the target; scale-up: nothing
            fill = target_usage if ratio < 1.0 else 0
            for name in missing:
                metrics[name] = PodMetric(fill)
        if scale_up_with_unready:
            for name in unready:
                metrics[name] = PodMetric(0)
        new_ratio, _ = metric_usage_ratio(metrics, target_usage)
        return self._rebalanced(current_replicas, ratio, new_ratio, len(metrics)), usage

    def usage_ratio_replica_count(self, current_replicas: int, usage_ratio: float,
                                  pods: list[dict[str, Any]]) -> int:
        """Replicas for an Object/External Value target (getUsageRatioReplicaCount): scales the ready pods,
        or from zero to ceil(ratio)."""
        if current_replicas == 0:
            return _ceil(usage_ratio)
        if abs(1.0 - usage_ratio) <= self.tolerance:
            return current_replicas
        if not pods:
            raise ReplicaCalcError("unable to calculate ready pods: "
                                   "no pods returned by selector while calculating replica count")
        ready = sum(1 for p in pods if (p.get("status") or {}).get("phase") == "Running" and is_pod_ready(p))
        return _ceil(usage_ratio * ready)

    def object_metric_replicas(self, current_replicas: int, target_usage: int, usage: int,
                               pods: list[dict[str, Any]]) -> int:
        return self.usage_ratio_replica_count(current_replicas, usage / target_usage, pods)

    def per_pod_replicas(self, status_replicas: int, target_average: int, usage: int) -> tuple[int, int]:
        """(replicas, usage per pod) for an Object/External AverageValue target
        (GetObjectPerPodMetricReplicas, GetExternalPerPodMetricReplicas)."""
        replicas = status_replicas
        ratio = usage / (target_average * replicas) if replicas else math.inf
        if abs(1.0 - ratio) > self.tolerance:
            replicas = _ceil(usage / target_average)
        per_pod = _ceil(usage / status_replicas) if status_replicas else 0
        return replicas, per_pod
