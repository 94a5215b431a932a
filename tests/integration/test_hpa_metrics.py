"""The HPA on real metrics, end to end: simulated nodes (`pyk8s sim --kubelet-port 0`) serve their pods'
declared usage (the sim's `sim.pyk8s.io/cpu-usage` annotation) on /metrics/resource, the built-in
metrics server scrapes them (`--metric-resolution 1s`) behind v1beta1.metrics.k8s.io, and the HPA
controller (`--horizontal-pod-autoscaler-sync-period 1s`) reads PodMetrics through the aggregator:
a Deployment at 150% of its cpu request scales out to maxReplicas, and once its pods use 10% it
scales back in after the HPA's own short `behavior.scaleDown.stabilizationWindowSeconds`."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.sim_nodes import sim_nodes

pytestmark = pytest.mark.xdist_group("hpa-metrics")

NS = "hpa"
USAGE = "sim.pyk8s.io/cpu-usage"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("hpa-metrics")),
                extra_args=["--metric-resolution", "1s", "--horizontal-pod-autoscaler-sync-period", "1s"]).start()
    try:
        with sim_nodes(c, 2, "hpa-node-"):
            c.kubectl("create", "namespace", NS)
            yield c
    finally:
        c.stop()


def wait(pred: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", *args, "-n", NS, "-o", "json").stdout)


def rescales(c: Cluster, name: str) -> list[str]:
    items = get(c, "events", "--field-selector", f"involvedObject.name={name},reason=SuccessfulRescale")["items"]
    return [e["message"] for e in sorted(items, key=lambda e: e["metadata"]["creationTimestamp"])]


def test_scales_out_on_cpu_and_back_in_after_the_stabilization_window(cluster: Cluster) -> None:
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burner", "namespace": NS},
                  "spec": {"replicas": 2, "selector": {"matchLabels": {"app": "burner"}},
                           "template": {"metadata": {"labels": {"app": "burner"}, "annotations": {USAGE: "300m"}},
                                        "spec": {"containers": [{"name": "main", "image": "busybox", "resources": {
                                            "requests": {"cpu": "200m"}}}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(deployment))
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
           "metadata": {"name": "burner", "namespace": NS},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "burner"},
                    "minReplicas": 1, "maxReplicas": 6,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 50}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 5}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(hpa))

    # 2 pods at 150% of their request against a 50% target: 2 x 3 = 6
    wait(lambda: get(cluster, "deployment", "burner")["spec"]["replicas"] == 6, "scale out to 6")
    first = rescales(cluster, "burner")[0]
    assert first.startswith("New size: ") and first.endswith(
        "reason: cpu resource utilization (percentage of request) above target"), first
    status = wait(lambda: (s := get(cluster, "hpa", "burner")["status"]).get("currentMetrics", [{}])[0].get(
        "resource") and s, "a current metric")
    current = status["currentMetrics"][0]["resource"]["current"]
    assert current["averageUtilization"] >= 100 and current["averageValue"].endswith("m")
    active = next(c for c in status["conditions"] if c["type"] == "ScalingActive")
    assert (active["status"], active["reason"]) == ("True", "ValidMetricFound")
    assert active["message"] == ("the HPA was able to successfully calculate a replica count from cpu resource "
                                 "utilization (percentage of request)")
    row = cluster.kubectl("get", "hpa", "burner", "-n", NS).stdout.splitlines()[1].split()
    assert row[2] == "cpu:" and row[3].endswith("%/50%") and row[3] != "<unknown>/50%", row

    # every pod now uses 20m (10%): ceil(6 x 0.2) = 2 ... and then 1 at min, once 5 s of higher
    # recommendations have passed
    wait(lambda: len([p for p in get(cluster, "pods", "-l", "app=burner")["items"]
                      if p["status"].get("phase") == "Running"]) == 6, "6 running pods")
    cluster.kubectl("annotate", "pods", "-n", NS, "-l", "app=burner", f"{USAGE}=20m", "--overwrite")
    low_since = time.monotonic()
    scaled_in = wait(lambda: get(cluster, "deployment", "burner")["spec"]["replicas"] < 6 and time.monotonic(),
                     "scale in")
    # the 300m recommendations of the last 5 s hold the count (the metrics lag a scrape or two behind)
    assert scaled_in - low_since >= 4.5, scaled_in - low_since
    assert any(m.endswith("reason: All metrics below target") for m in rescales(cluster, "burner"))
    described = cluster.kubectl("describe", "hpa", "burner", "-n", NS).stdout
    assert "SuccessfulRescale" in described and "resource cpu on pods  (as a percentage of request):" in described


def test_container_resource_metrics(cluster: Cluster) -> None:
    """ContainerResource reads one container's usage against its request; a container the pods lack is
    FailedGetContainerResourceMetric with upstream's message."""
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "duo", "namespace": NS},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "duo"}},
                           "template": {"metadata": {"labels": {"app": "duo"}, "annotations": {USAGE: "400m"}},
                                        "spec": {"containers": [
                                            {"name": "main", "image": "busybox",
                                             "resources": {"requests": {"cpu": "100m"}}},
                                            {"name": "side", "image": "busybox",
                                             "resources": {"requests": {"cpu": "100m"}}}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(deployment))

    def hpa(name: str, container: str) -> str:
        return json.dumps({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler",
                           "metadata": {"name": name, "namespace": NS},
                           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "duo"},
                                    "minReplicas": 1, "maxReplicas": 3,
                                    "metrics": [{"type": "ContainerResource", "containerResource": {
                                        "name": "cpu", "container": container,
                                        "target": {"type": "Utilization", "averageUtilization": 50}}}]}})

    cluster.kubectl("apply", "-f", "-", input=hpa("duo", "main"))
    # main uses 200m of its 100m: 200% against 50% -> out to 3
    wait(lambda: get(cluster, "deployment", "duo")["spec"]["replicas"] == 3, "scale out to 3")
    assert rescales(cluster, "duo")[0].endswith(
        "reason: cpu container resource utilization (percentage of request) above target")
    status = get(cluster, "hpa", "duo")["status"]
    m = status["currentMetrics"][0]
    assert m["type"] == "ContainerResource" and m["containerResource"]["container"] == "main"
    assert m["containerResource"]["current"]["averageUtilization"] >= 150

    cluster.kubectl("delete", "hpa", "duo", "-n", NS)
    cluster.kubectl("apply", "-f", "-", input=hpa("duo-nosuch", "nosuch"))

    def active() -> dict[str, Any] | None:
        conds = (get(cluster, "hpa", "duo-nosuch").get("status") or {}).get("conditions") or []
        return next((c for c in conds if c["type"] == "ScalingActive"), None)

    cond = wait(active, "ScalingActive")
    assert (cond["status"], cond["reason"]) == ("False", "FailedGetContainerResourceMetric")
    assert cond["message"].startswith(
        "the HPA was unable to compute the replica count: failed to get cpu utilization: unable to get metrics for "
        "resource cpu: failed to get container metrics: container nosuch not present in metrics for pod hpa/duo-"), \
        cond["message"]
