"""The HPA's metrics client, as upstream's pkg/controller/podautoscaler/metrics/client.go: resource
metrics from metrics.k8s.io/v1beta1 PodMetrics, per-pod and per-object metrics from
custom.metrics.k8s.io/v1beta2, external metrics from external.metrics.k8s.io/v1beta1, all read through
the API server (the aggregator proxies them to whoever serves the APIService).

Values are milli-units; error messages are upstream's, as the HPA's events and conditions show them.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from ...api.errors import StatusError
from ...api.labels import selector_from_label_selector
from ...api.protobuf import parse_go_duration
from ...api.quantity import parse_quantity
from ...api.timefmt import parse_time_or_none
from ...client import Client
from .replica_calculator import DEFAULT_METRIC_WINDOW, PodMetric, PodMetricsInfo

__all__ = ["MetricsClient", "MetricsError"]

RESOURCE_METRICS = "/apis/metrics.k8s.io/v1beta1"
CUSTOM_METRICS = "/apis/custom.metrics.k8s.io/v1beta2"
EXTERNAL_METRICS = "/apis/external.metrics.k8s.io/v1beta1"

# client-go's wording for answers without a specific message, with the request it failed on
_GENERIC = {
    404: "the server could not find the requested resource",
    503: "the server is currently unable to handle the request",
}


class MetricsError(Exception):
    pass


def _client_go_message(e: StatusError, resource: str) -> str:
    generic = _GENERIC.get(e.code)
    if generic and (not e.message or e.message == generic or e.message.startswith("404 page not found")):
        return f"{generic} (get {resource})"
    return e.message or str(e)


def _selector(sel: dict[str, Any]) -> str:
    """LabelSelectorAsSelector(...).String(): "" selects everything (the caller validated it)."""
    return str(selector_from_label_selector(sel))


def _milli(raw: Any) -> int:
    return parse_quantity(raw).to_milli()


def _duration(raw: Any) -> float:
    """A metav1.Duration's text ("30s", "1m0s") in seconds."""
    if not isinstance(raw, str) or not raw:
        return DEFAULT_METRIC_WINDOW
    try:
        return parse_go_duration(raw) / 1e9
    except (ValueError, TypeError):
        return DEFAULT_METRIC_WINDOW


class MetricsClient:
    def __init__(self, client: Client) -> None:
        self.client = client

    async def resource_metric(self, resource: str, namespace: str, selector: str, container: str
                              ) -> tuple[PodMetricsInfo, float]:
        """GetResourceMetric: each pod's usage of resource (its containers' sum, or one container's)."""
        try:
            body = await self.client.request("GET", f"{RESOURCE_METRICS}/namespaces/{quote(namespace)}/pods",
                                             params={"labelSelector": selector})
        except StatusError as e:
            raise MetricsError("unable to fetch metrics from resource metrics API: "
                               f"{_client_go_message(e, 'pods.metrics.k8s.io')}") from e
        items = (body or {}).get("items") or []
        if not items:
            raise MetricsError("no metrics returned from resource metrics API")
        res: PodMetricsInfo = {}
        for m in items:
            meta = m.get("metadata") or {}
            ts = parse_time_or_none(m.get("timestamp")) or 0.0
            window = _duration(m.get("window"))
            containers = m.get("containers") or []
            if container:
                found = next((c for c in containers if c.get("name") == container), None)
                if found is None:
                    raise MetricsError(f"failed to get container metrics: container {container} not present in "
                                       f"metrics for pod {meta.get('namespace', '')}/{meta.get('name', '')}")
                usage = (found.get("usage") or {}).get(resource)
                if usage is not None:
                    res[meta.get("name", "")] = PodMetric(_milli(usage), ts, window)
                continue
            values = [(c.get("usage") or {}).get(resource) for c in containers]
            if values and all(v is not None for v in values):  # a pod missing any container's value has none
                res[meta.get("name", "")] = PodMetric(sum(_milli(v) for v in values), ts, window)
        return res, parse_time_or_none(items[0].get("timestamp")) or 0.0

    async def raw_metric(self, metric: str, namespace: str, selector: str, metric_selector: dict[str, Any] | None
                         ) -> tuple[PodMetricsInfo, float]:
        """GetRawMetric: a per-pod custom metric of the pods the selector picks."""
        params = {"labelSelector": selector}
        if metric_selector is not None:
            params["metricLabelSelector"] = _selector(metric_selector)
        try:
            body = await self.client.request(
                "GET", f"{CUSTOM_METRICS}/namespaces/{quote(namespace)}/pods/*/{quote(metric)}", params=params)
        except StatusError as e:
            raise MetricsError("unable to fetch metrics from custom metrics API: "
                               f"{_client_go_message(e, 'pods.custom.metrics.k8s.io')}") from e
        items = (body or {}).get("items") or []
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        res: PodMetricsInfo = {}
        for m in items:
            window = float(m["windowSeconds"]) if isinstance(m.get("windowSeconds"), int) else DEFAULT_METRIC_WINDOW
            name = (m.get("describedObject") or {}).get("name", "")
            res[name] = PodMetric(_milli(m.get("value", "0")), parse_time_or_none(m.get("timestamp")) or 0.0, window)
        return res, parse_time_or_none(items[0].get("timestamp")) or 0.0

    async def object_metric(self, metric: str, namespace: str, resource: str, name: str,
                            metric_selector: dict[str, Any] | None) -> tuple[int, float]:
        """GetObjectMetric: one object's custom metric; resource is the object's plural (group-qualified)."""
        params = {}
        if metric_selector is not None:
            params["metricLabelSelector"] = _selector(metric_selector)
        path = f"{CUSTOM_METRICS}/namespaces/{quote(namespace)}/{quote(resource)}/{quote(name)}/{quote(metric)}"
        if resource == "namespaces":  # a namespace's own metric is addressed without a namespace
            path = f"{CUSTOM_METRICS}/namespaces/{quote(name)}/metrics/{quote(metric)}"
        try:
            body = await self.client.request("GET", path, params=params or None)
        except StatusError as e:
            raise MetricsError("unable to fetch metrics from custom metrics API: "
                               f"{_client_go_message(e, resource + '.custom.metrics.k8s.io')}") from e
        items = (body or {}).get("items") if (body or {}).get("kind") == "MetricValueList" else [body]
        if not items:
            raise MetricsError("no metrics returned from custom metrics API")
        m = items[0] or {}
        return _milli(m.get("value", "0")), parse_time_or_none(m.get("timestamp")) or 0.0

    async def external_metric(self, metric: str, namespace: str, selector: dict[str, Any] | None
                              ) -> tuple[list[int], float]:
        """GetExternalMetric: every series of an external metric matching the selector."""
        params = {"labelSelector": _selector(selector)} if selector is not None else None
        try:
            body = await self.client.request(
                "GET", f"{EXTERNAL_METRICS}/namespaces/{quote(namespace)}/{quote(metric.lower())}", params=params)
        except StatusError as e:
            raise MetricsError("unable to fetch metrics from external metrics API: "
                               f"{_client_go_message(e, metric.lower() + '.external.metrics.k8s.io')}") from e
        items = (body or {}).get("items") or []
        if not items:
            raise MetricsError("no metrics returned from external metrics API")
        return [_milli(m.get("value", "0")) for m in items], parse_time_or_none(items[0].get("timestamp")) or 0.0
