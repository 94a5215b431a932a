"""The HPA on custom and external metrics, as a metrics adapter (prometheus-adapter, KEDA) serves them:
a small aggregated API server written here (an external party, on this machine's global address,
trusting the front proxy's client certificate as kube-system/extension-apiserver-authentication says)
serves custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 behind two APIServices; the
HPA controller reads an Object and an External metric through the aggregator, takes the larger
proposal, scales out and back in, and reports a Pods metric the adapter does not have as
FailedGetPodsMetric."""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from aiohttp import web

from tests.cluster import Cluster, raw_request
from tests.integration.test_aggregation import Backend

pytestmark = pytest.mark.xdist_group("hpa-custom-metrics")

NS = "adapter"
CUSTOM, EXTERNAL = ("custom.metrics.k8s.io", "v1beta2"), ("external.metrics.k8s.io", "v1beta1")


class MetricsAdapter(Backend):
    """Serves `values`: external metric name -> value, (resource, name, metric) -> object metric value."""

    values: dict[Any, str]
    asked: list[str]

    async def handle(self, request: web.Request) -> web.StreamResponse:
        if self._identity(request) is None:
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        self.asked.append(request.path_qs)
        parts = request.path.strip("/").split("/")
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        if len(parts) == 3:  # discovery of the group version
            return web.json_response({"kind": "APIResourceList", "apiVersion": "v1",
                                      "groupVersion": f"{parts[1]}/{parts[2]}", "resources": []})
        if parts[1] == EXTERNAL[0] and len(parts) == 6:  # .../namespaces/<ns>/<metric>
            value = self.values.get(parts[5])
            if value is None:
                return _not_found(f'the server could not find the metric {parts[5]} for namespace {parts[4]}')
            return web.json_response({"kind": "ExternalMetricValueList", "apiVersion": "external.metrics.k8s.io/v1beta1",
                                      "metadata": {}, "items": [{"metricName": parts[5], "metricLabels": {},
                                                                 "timestamp": now, "value": value}]})
        if parts[1] == CUSTOM[0] and len(parts) == 8:  # .../namespaces/<ns>/<resource>/<name>/<metric>
            resource, name, metric = parts[5], parts[6], parts[7]
            value = self.values.get((resource, name, metric))
            if value is None:
                return _not_found(f"the server could not find the metric {metric} for {resource} {name}")
            return web.json_response({"kind": "MetricValueList", "apiVersion": "custom.metrics.k8s.io/v1beta2",
                                      "metadata": {}, "items": [{
                                          "describedObject": {"kind": "Service", "namespace": parts[4], "name": name,
                                                              "apiVersion": "/v1"},
                                          "metric": {"name": metric}, "timestamp": now, "windowSeconds": 60,
                                          "value": value}]})
        return _not_found("the server could not find the requested resource")


def _not_found(message: str) -> web.Response:
    return web.json_response({"kind": "Status", "apiVersion": "v1", "status": "Failure", "message": message,
                              "reason": "NotFound", "code": 404}, status=404)


def _wait(fn: Callable[[], Any], what: str, timeout: float = 30.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def _apply(c: Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps(obj))


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, MetricsAdapter]]:
    c = Cluster(str(tmp_path_factory.mktemp("hpa-custom")),
                extra_args=["--horizontal-pod-autoscaler-sync-period", "1s", "--disable", "metrics-server"]).start()
    try:
        cm = _wait(lambda: (r := raw_request(c, "GET", "/api/v1/namespaces/kube-system/configmaps/"
                                             "extension-apiserver-authentication")).status == 200 and r.json(),
                   "the requestheader ConfigMap")
        a = MetricsAdapter(cm["data"]["requestheader-client-ca-file"],
                           json.loads(cm["data"]["requestheader-allowed-names"]), [f"adapter.{NS}.svc"])
        a.values, a.asked = {}, []
        try:
            c.kubectl("create", "namespace", NS)
            _apply(c, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "adapter", "namespace": NS},
                       "spec": {"ports": [{"name": "https", "port": 443, "protocol": "TCP"}]}})
            _apply(c, {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
                       "metadata": {"name": "adapter", "namespace": NS,
                                    "labels": {"kubernetes.io/service-name": "adapter"}},
                       "addressType": "IPv4", "endpoints": [{"addresses": [a.ip], "conditions": {"ready": True}}],
                       "ports": [{"name": "https", "port": a.port, "protocol": "TCP"}]})
            for group, version in (CUSTOM, EXTERNAL):
                _apply(c, {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
                           "metadata": {"name": f"{version}.{group}"},
                           "spec": {"group": group, "version": version, "groupPriorityMinimum": 100,
                                    "versionPriority": 100, "service": {"namespace": NS, "name": "adapter"},
                                    "caBundle": base64.b64encode(a.ca_pem).decode()}})
            yield c, a
        finally:
            a.stop()
    finally:
        c.stop()


def _hpa(c: Cluster, name: str) -> dict[str, Any]:
    return json.loads(c.kubectl("get", "hpa", name, "-n", NS, "-o", "json").stdout)


def _replicas(c: Cluster, name: str) -> int:
    return int(json.loads(c.kubectl("get", "deployment", name, "-n", NS, "-o", "json").stdout)["spec"]["replicas"])


def _rescales(c: Cluster, name: str) -> list[str]:
    items = json.loads(c.kubectl("get", "events", "-n", NS, "--field-selector",
                                 f"involvedObject.name={name},reason=SuccessfulRescale", "-o", "json").stdout)["items"]
    return [e["message"] for e in items]


def test_object_and_external_metrics_scale_out_and_in(setup: tuple[Cluster, MetricsAdapter]) -> None:
    c, adapter = setup
    adapter.values.update({"queue_length": "30", ("services", "frontend", "requests"): "50"})
    c.kubectl("create", "deployment", "worker", "--image=busybox", "--replicas=1", "-n", NS)
    _wait(lambda: json.loads(c.kubectl("get", "deployment", "worker", "-n", NS, "-o", "json").stdout).get(
        "status", {}).get("replicas") == 1, "the Deployment's status")
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "worker", "namespace": NS},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "worker"},
                    "minReplicas": 1, "maxReplicas": 10,
                    "metrics": [
                        {"type": "External", "external": {
                            "metric": {"name": "queue_length", "selector": {"matchLabels": {"queue": "jobs"}}},
                            "target": {"type": "AverageValue", "averageValue": "10"}}},
                        {"type": "Object", "object": {
                            "describedObject": {"apiVersion": "v1", "kind": "Service", "name": "frontend"},
                            "metric": {"name": "requests"}, "target": {"type": "AverageValue", "averageValue": "10"}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 0}}}}
    _apply(c, hpa)
    # External: ceil(30 / 10) = 3; Object: ceil(50 / 10) = 5; the larger wins (behavior's Pods 4 per 15 s allows it)
    _wait(lambda: _replicas(c, "worker") == 5, "scale out to 5")
    assert _rescales(c, "worker") == ["New size: 5; reason: external metric requests(<nil>) above target"]
    assert any(p.startswith(f"/apis/external.metrics.k8s.io/v1beta1/namespaces/{NS}/queue_length?labelSelector=queue")
               for p in adapter.asked)
    assert f"/apis/custom.metrics.k8s.io/v1beta2/namespaces/{NS}/services/frontend/requests" in adapter.asked
    status = _hpa(c, "worker")["status"]
    kinds = [m["type"] for m in status["currentMetrics"]]
    assert kinds == ["External", "Object"]
    assert status["currentMetrics"][0]["external"]["metric"]["name"] == "queue_length"
    assert status["currentMetrics"][1]["object"]["describedObject"]["name"] == "frontend"
    active = next(x for x in status["conditions"] if x["type"] == "ScalingActive")
    assert (active["status"], active["reason"]) == ("True", "ValidMetricFound")

    adapter.values.update({"queue_length": "5", ("services", "frontend", "requests"): "5"})
    _wait(lambda: _replicas(c, "worker") == 1, "scale in to 1")
    assert "New size: 1; reason: All metrics below target" in _rescales(c, "worker")
    row = c.kubectl("get", "hpa", "worker", "-n", NS).stdout.splitlines()[1]
    assert "/10 (avg)" in row, row


def test_a_missing_pods_metric_is_failed_get_pods_metric(setup: tuple[Cluster, MetricsAdapter]) -> None:
    c, _ = setup
    c.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2", "-n", NS)
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "web", "namespace": NS},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"},
                    "maxReplicas": 4, "metrics": [{"type": "Pods", "pods": {
                        "metric": {"name": "nosuch"}, "target": {"type": "AverageValue", "averageValue": "1"}}}]}}
    _apply(c, hpa)

    def active() -> dict[str, Any] | None:
        conds = (_hpa(c, "web").get("status") or {}).get("conditions") or []
        return next((x for x in conds if x["type"] == "ScalingActive"), None)

    cond = _wait(active, "ScalingActive")
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetPodsMetric")
    assert cond["message"] == ("the HPA was unable to compute the replica count: unable to get metric nosuch: "
                               "unable to fetch metrics from custom metrics API: the server could not find the "
                               "metric nosuch for pods *")  # the adapter's own message, passed through
    assert _replicas(c, "web") == 2
