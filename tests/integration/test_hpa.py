"""The HorizontalPodAutoscaler controller in a real `pyk8s server` (sync period 1 s through upstream's
--horizontal-pod-autoscaler-sync-period), through kubectl and the official client: no metrics API gives
`<unknown>` targets, ScalingActive False (FailedGetResourceMetric) and the Warning events; min/max clamp
any scalable kind through /scale; a missing or unscalable target gets FailedGetScale; a target at zero
disables scaling; validation refuses what upstream refuses."""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.cluster import Cluster, kubectl_binaries

pytestmark = pytest.mark.xdist_group("hpa")

NO_METRICS = ("failed to get cpu utilization: unable to get metrics for resource cpu: unable to fetch metrics from "
              "resource metrics API: the server could not find the requested resource (get pods.metrics.k8s.io)")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("hpa")),
                extra_args=["--horizontal-pod-autoscaler-sync-period", "1s", "--disable", "metrics-server"])
    c.start()
    yield c
    c.stop()


def wait(pred: Callable[[], Any], what: str, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what} (last: {last!r})")


def get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", *args, "-o", "json").stdout)


def condition(c: Cluster, hpa: str, ctype: str) -> dict[str, Any] | None:
    conds = (get(c, "hpa", hpa).get("status") or {}).get("conditions") or []
    return next((x for x in conds if x["type"] == ctype), None)


def events(c: Cluster, name: str, reason: str) -> list[dict[str, Any]]:
    items = get(c, "events", "--field-selector", f"involvedObject.name={name},reason={reason}")["items"]
    return [e for e in items if e["involvedObject"]["kind"] == "HorizontalPodAutoscaler"]


def hpa(name: str, ref: dict[str, str], spec: dict[str, Any] | None = None) -> str:
    return json.dumps({"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": name},
                       "spec": {"scaleTargetRef": ref, "maxReplicas": 5, **(spec or {})}})


def deploy(name: str) -> dict[str, str]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "name": name}


def test_without_metrics_api_targets_are_unknown_and_scaling_inactive(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "nometrics", "--image=busybox", "--replicas=2")
    cluster.kubectl("autoscale", "deployment", "nometrics", "--cpu-percent=50", "--min=1", "--max=5")
    active = wait(lambda: condition(cluster, "nometrics", "ScalingActive"), "ScalingActive")
    assert active["status"] == "False" and active["reason"] == "FailedGetResourceMetric"
    assert active["message"] == f"the HPA was unable to compute the replica count: {NO_METRICS}"
    able = condition(cluster, "nometrics", "AbleToScale")
    assert able and (able["status"], able["reason"]) == ("True", "SucceededGetScale")
    status = get(cluster, "hpa", "nometrics")["status"]
    assert status["currentReplicas"] == 2 and status["currentMetrics"] == [{"type": ""}]
    assert "lastScaleTime" not in status
    assert get(cluster, "deployment", "nometrics")["spec"]["replicas"] == 2  # nothing scaled without metrics

    row = cluster.kubectl("get", "hpa", "nometrics").stdout.splitlines()
    assert row[0].split() == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert row[1].split()[:7] == ["nometrics", "Deployment/nometrics", "cpu:", "<unknown>/50%", "1", "5", "2"]

    ev = wait(lambda: events(cluster, "nometrics", "FailedGetResourceMetric"), "FailedGetResourceMetric event")
    assert ev[0]["type"] == "Warning" and ev[0]["message"] == NO_METRICS
    assert ev[0]["source"]["component"] == "horizontal-pod-autoscaler"
    ev = wait(lambda: events(cluster, "nometrics", "FailedComputeMetricsReplicas"), "FailedComputeMetricsReplicas")
    assert ev[0]["message"] == ("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource "
                                f"metric value: {NO_METRICS}")

    described = cluster.kubectl("describe", "hpa", "nometrics").stdout
    assert "<unknown> / 50%" in described
    assert "ScalingActive  False   FailedGetResourceMetric" in described
    assert "Deployment pods:" in described and "2 current / 0 desired" in described


def test_min_and_max_clamp_the_target(cluster: Cluster) -> None:
    """Below minReplicas or above maxReplicas the target is brought into range without any metric."""
    cluster.kubectl("create", "deployment", "small", "--image=busybox", "--replicas=1")
    cluster.kubectl("create", "deployment", "big", "--image=busybox", "--replicas=7")
    cluster.kubectl("create", "-f", "-", input=hpa("small", deploy("small"), {"minReplicas": 3}))
    cluster.kubectl("create", "-f", "-", input=hpa("big", deploy("big"), {"minReplicas": 1, "maxReplicas": 4}))
    wait(lambda: get(cluster, "deployment", "small")["spec"]["replicas"] == 3, "small scaled to 3")
    wait(lambda: get(cluster, "deployment", "big")["spec"]["replicas"] == 4, "big scaled to 4")
    ev = wait(lambda: events(cluster, "small", "SuccessfulRescale"), "SuccessfulRescale")
    assert ev[0]["type"] == "Normal"
    assert ev[0]["message"] == "New size: 3; reason: Current number of replicas below Spec.MinReplicas"
    ev = wait(lambda: events(cluster, "big", "SuccessfulRescale"), "SuccessfulRescale")
    assert ev[0]["message"] == "New size: 4; reason: Current number of replicas above Spec.MaxReplicas"
    st = wait(lambda: (get(cluster, "hpa", "big").get("status") or {}).get("lastScaleTime") and
              get(cluster, "hpa", "big")["status"], "status after the rescale")
    assert st["desiredReplicas"] == 4


def test_other_scalable_kinds_through_scale(cluster: Cluster) -> None:
    """A StatefulSet, a ReplicaSet and a custom resource with a scale subresource, all through /scale."""
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"replicas": 1, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}},
                                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}
    rs = {**sts, "kind": "ReplicaSet", "metadata": {"name": "rs"}}
    rs["spec"] = {k: v for k, v in sts["spec"].items() if k != "serviceName"}
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "crawlers.hpa.example.com"},
           "spec": {"group": "hpa.example.com", "scope": "Namespaced",
                    "names": {"plural": "crawlers", "singular": "crawler", "kind": "Crawler"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                             "statusReplicasPath": ".status.replicas"}},
                                  "schema": {"openAPIV3Schema": {"type": "object",
                                                                 "x-kubernetes-preserve-unknown-fields": True}}}]}}
    for obj in (sts, rs, crd):
        cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
    wait(lambda: cluster.kubectl("get", "crawlers", check=False).returncode == 0, "the CRD served")
    cluster.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "hpa.example.com/v1", "kind": "Crawler", "metadata": {"name": "cr"}, "spec": {"replicas": 1}}))
    refs = {"db": {"apiVersion": "apps/v1", "kind": "StatefulSet", "name": "db"},
            "rs": {"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs"},
            "cr": {"apiVersion": "hpa.example.com/v1", "kind": "Crawler", "name": "cr"}}
    for name, ref in refs.items():
        cluster.kubectl("create", "-f", "-", input=hpa(f"h-{name}", ref, {"minReplicas": 2}))
    wait(lambda: get(cluster, "statefulset", "db")["spec"]["replicas"] == 2, "the StatefulSet at 2")
    wait(lambda: get(cluster, "replicaset", "rs")["spec"]["replicas"] == 2, "the ReplicaSet at 2")
    wait(lambda: get(cluster, "crawler", "cr")["spec"]["replicas"] == 2, "the custom resource at 2")
    # its scale has no selector (no labelSelectorPath): metrics cannot pick its pods
    active = wait(lambda: (a := condition(cluster, "h-cr", "ScalingActive")) and a["reason"] == "InvalidSelector"
                  and a, "InvalidSelector")
    assert (active["status"], active["message"]) == ("False", "the HPA target's scale is missing a selector")
    ev = wait(lambda: events(cluster, "h-cr", "SelectorRequired"), "the SelectorRequired event")
    assert ev[0]["type"] == "Warning" and ev[0]["message"] == "selector is required"


def test_missing_or_unscalable_targets_fail_to_get_scale(cluster: Cluster) -> None:
    cases = {
        "missing": (deploy("missing"), 'deployments.apps "missing" not found'),
        "noscale": ({"apiVersion": "v1", "kind": "ConfigMap", "name": "kube-root-ca.crt"},
                    "the server could not find the requested resource"),
        "nokind": ({"apiVersion": "apps/v1", "kind": "Foo", "name": "x"}, 'no matches for kind "Foo" in group "apps"'),
        "badgv": ({"apiVersion": "a/b/c", "kind": "Deployment", "name": "x"}, "unexpected GroupVersion string: a/b/c"),
    }
    for name, (ref, _) in cases.items():
        cluster.kubectl("create", "-f", "-", input=hpa(name, ref))
    for name, (_, msg) in cases.items():
        able = wait(lambda name=name: condition(cluster, name, "AbleToScale"), f"{name}'s AbleToScale")
        assert (able["status"], able["reason"]) == ("False", "FailedGetScale")
        assert able["message"] == f"the HPA controller was unable to get the target's current scale: {msg}"
        ev = wait(lambda name=name: events(cluster, name, "FailedGetScale"), f"{name}'s FailedGetScale event")
        assert ev[0]["type"] == "Warning" and ev[0]["message"] == msg


def test_target_scaled_to_zero_disables_scaling(cluster: Cluster) -> None:
    cluster.kubectl("create", "deployment", "idle", "--image=busybox", "--replicas=0")
    cluster.kubectl("create", "-f", "-", input=hpa("idle", deploy("idle"), {"minReplicas": 2}))
    active = wait(lambda: condition(cluster, "idle", "ScalingActive"), "ScalingActive")
    assert (active["status"], active["reason"]) == ("False", "ScalingDisabled")
    assert active["message"] == "scaling is disabled since the replica count of the target is zero"
    assert get(cluster, "deployment", "idle")["spec"]["replicas"] == 0  # minReplicas does not wake it


def test_every_kubectl_autoscale_creates_a_working_hpa(cluster: Cluster) -> None:
    """kubectl 1.27 ... 1.33 send autoscaling/v1 or v2; each HPA is served in both and gets reconciled."""
    for version in kubectl_binaries():
        name = "app" + version.replace(".", "-")
        cluster.kubectl("create", "deployment", name, "--image=busybox", "--replicas=1", version=version)
        out = cluster.kubectl("autoscale", "deployment", name, "--cpu-percent=40", "--min=2", "--max=6",
                              version=version).stdout
        assert out.strip() == f"horizontalpodautoscaler.autoscaling/{name} autoscaled"
    from kubernetes import client

    v1 = client.AutoscalingV1Api(cluster.api_client())
    for version in kubectl_binaries():
        name = "app" + version.replace(".", "-")
        wait(lambda name=name: get(cluster, "deployment", name)["spec"]["replicas"] == 2, f"{name} at min 2")
        # the controller scales, then writes the HPA's status: a second write, which may come a moment later
        got = wait(lambda name=name: (h := v1.read_namespaced_horizontal_pod_autoscaler(name, "default"))
                   .status.last_scale_time and h, f"{name}'s status after its scale")
        assert (got.spec.target_cpu_utilization_percentage, got.spec.max_replicas) == (40, 6)
        assert (got.status.current_replicas, got.status.desired_replicas) in ((1, 2), (2, 2))


def test_an_hpa_reaches_only_its_own_namespace_and_validation_refuses_what_upstream_refuses(cluster: Cluster) -> None:
    """A Deployment of the same name in another namespace is never scaled; the reference cannot name a
    namespace, a path, or out-of-range counts."""
    cluster.kubectl("create", "deployment", "victim", "--image=busybox", "--replicas=1", "-n", "kube-system")
    cluster.kubectl("create", "-f", "-", input=hpa("victim", deploy("victim"), {"minReplicas": 3}))
    able = wait(lambda: condition(cluster, "victim", "AbleToScale"), "AbleToScale")
    assert able["message"].endswith('deployments.apps "victim" not found')
    assert get(cluster, "deployment", "victim", "-n", "kube-system")["spec"]["replicas"] == 1

    ref = deploy("web")

    def create(spec: dict[str, Any]) -> str:
        r = cluster.kubectl("create", "-f", "-", input=hpa("bad", ref, spec), check=False)
        assert r.returncode != 0, r.stdout
        return r.stderr

    # no other namespace can be named: the reference has no namespace field
    assert 'unknown field "spec.scaleTargetRef.namespace"' in create(
        {"scaleTargetRef": {**ref, "namespace": "kube-system"}})
    assert "may not contain '/'" in create({"scaleTargetRef": {**ref, "name": "../x"}})
    assert "cannot unmarshal number 2147483648 into Go struct field HorizontalPodAutoscalerSpec.spec.maxReplicas " \
           "of type int32" in create({"maxReplicas": 2147483648})
    assert "spec.maxReplicas: Invalid value: 0: must be greater than 0" in create({"maxReplicas": 0})
    err = create({"minReplicas": 0})  # HPAScaleToZero is off
    assert "spec.minReplicas: Invalid value: 0: must be greater than or equal to 1" in err
    assert "spec.metrics[0].resource.target.averageUtilization: Invalid value: -5: must be greater than 0" in create(
        {"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": -5}}}]})
    assert "must be positive" in create({"metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
        "type": "AverageValue", "averageValue": "-1"}}}]})
    assert "must be greater than or equal to `minReplicas`" in create({"minReplicas": 4, "maxReplicas": 3})


def test_two_hpas_on_the_same_pods_are_ambiguous(cluster: Cluster) -> None:
    """Two autoscalers would fight over the same pods: upstream refuses to scale with either."""
    cluster.kubectl("create", "deployment", "shared", "--image=busybox", "--replicas=2")
    wait(lambda: len(get(cluster, "pods", "-l", "app=shared")["items"]) == 2, "the Deployment's pods")
    for name in ("shared-a", "shared-b"):
        cluster.kubectl("create", "-f", "-", input=hpa(name, deploy("shared"), {"minReplicas": 1}))
    msg = "pods by selector app=shared are controlled by multiple HPAs: [default/shared-a default/shared-b]"
    for name in ("shared-a", "shared-b"):
        active = wait(lambda name=name: (a := condition(cluster, name, "ScalingActive")) and a["reason"] ==
                      "AmbiguousSelector" and a, f"{name} AmbiguousSelector")
        assert (active["status"], active["message"]) == ("False", msg)
        ev = wait(lambda name=name: events(cluster, name, "AmbiguousSelector"), f"{name}'s event")
        assert ev[0]["type"] == "Warning" and ev[0]["message"] == msg


def test_a_refused_rescale_is_failed_update_scale(cluster: Cluster) -> None:
    """The target's own validation refuses the new size: FailedRescale, AbleToScale False/FailedUpdateScale."""
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "capped.hpa.example.com"},
           "spec": {"group": "hpa.example.com", "scope": "Namespaced",
                    "names": {"plural": "capped", "singular": "cap", "kind": "Capped"},
                    "versions": [{"name": "v1", "served": True, "storage": True,
                                  "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                             "statusReplicasPath": ".status.replicas"}},
                                  "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                      "spec": {"type": "object", "properties": {
                                          "replicas": {"type": "integer", "maximum": 2}}},
                                      "status": {"type": "object", "properties": {
                                          "replicas": {"type": "integer"}}}}}}}]}}
    cluster.kubectl("create", "-f", "-", input=json.dumps(crd))
    wait(lambda: cluster.kubectl("get", "capped", check=False).returncode == 0, "the CRD served")
    cluster.kubectl("create", "-f", "-", input=json.dumps(
        {"apiVersion": "hpa.example.com/v1", "kind": "Capped", "metadata": {"name": "c"}, "spec": {"replicas": 1}}))
    cluster.kubectl("create", "-f", "-", input=hpa("capped", {"apiVersion": "hpa.example.com/v1", "kind": "Capped",
                                                               "name": "c"}, {"minReplicas": 3}))
    able = wait(lambda: (a := condition(cluster, "capped", "AbleToScale")) and a["reason"] == "FailedUpdateScale"
                and a, "FailedUpdateScale")
    assert able["status"] == "False"
    assert able["message"].startswith("the HPA controller was unable to update the target scale: ")
    ev = wait(lambda: events(cluster, "capped", "FailedRescale"), "the FailedRescale event")
    assert ev[0]["type"] == "Warning"
    assert ev[0]["message"].startswith("New size: 3; reason: Current number of replicas below Spec.MinReplicas; "
                                       "error: "), ev[0]["message"]
    assert "spec.replicas" in ev[0]["message"]
    assert get(cluster, "capped", "c")["spec"]["replicas"] == 1


def test_seed_replication_controller_autoscaled(cluster: Cluster) -> None:
    """Seed 003's walk-through: a ReplicationController with a cpu request, `kubectl autoscale rc`; the HPA
    scales it through the RC's /scale (here to its minimum: this module has no metrics API)."""
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "php-apache"},
          "spec": {"replicas": 1, "template": {"metadata": {"name": "php-apache", "labels": {"app": "php-apache"}},
                                               "spec": {"containers": [{
                                                   "name": "php-apache", "image": "gcr.io/google_containers/hpa-example",
                                                   "resources": {"requests": {"cpu": "200m"}},
                                                   "ports": [{"containerPort": 80}]}]}}}}
    cluster.kubectl("create", "-f", "-", input=json.dumps(rc))
    cluster.kubectl("autoscale", "rc", "php-apache", "--min=2", "--max=10", "--cpu-percent=50")
    wait(lambda: get(cluster, "rc", "php-apache")["spec"]["replicas"] == 2, "the RC at 2")
    row = cluster.kubectl("get", "hpa", "php-apache").stdout.splitlines()[1].split()
    assert row[1] == "ReplicationController/php-apache" and row[3] == "<unknown>/50%"


def test_the_controller_manager_process_gets_the_hpa_flags(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`pyk8s server --controller-manager-process` hands --horizontal-pod-autoscaler-sync-period to its
    `pyk8s controller-manager`: with upstream's 15 s the first sync would come 15 s after the HPA."""
    c = Cluster(str(tmp_path_factory.mktemp("hpa-cm")),
                extra_args=["--controller-manager-process", "--horizontal-pod-autoscaler-sync-period", "1s",
                            "--disable", "metrics-server"]).start()
    try:
        c.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=1")
        c.kubectl("create", "-f", "-", input=hpa("web", deploy("web"), {"minReplicas": 2}))
        created = time.monotonic()
        wait(lambda: get(c, "deployment", "web")["spec"]["replicas"] == 2, "web at 2", timeout=30)
        assert time.monotonic() - created < 12
    finally:
        c.stop()
