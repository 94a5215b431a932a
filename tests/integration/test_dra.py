"""Dynamic Resource Allocation (resource.k8s.io/v1beta1) through a real `pyk8s server` (API,
scheduler, controller manager) with simulated nodes, kubectl and the official client.

The test plays the DRA driver's control-plane half: it publishes ResourceSlices for two of the
three nodes (driver gpu.pyk8s.io, two 16Gi GPUs each), as a driver's kubelet plugin would.
Upstream references: pkg/apis/resource/validation, pkg/printers (resource rows),
pkg/controller/resourceclaim, pkg/scheduler/framework/plugins/dynamicresources,
staging/src/k8s.io/dynamic-resource-allocation/structured and /cel.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tests.cluster import Cluster, client_kubeconfig
from tests.integration.sim_nodes import simulated_nodes
from tests.integration.test_daemonset import wait_for

pytestmark = pytest.mark.xdist_group("dra")

DRIVER = "gpu.pyk8s.io"
NODES = ["dra-node-0", "dra-node-1", "dra-node-2"]
GROUP, VERSION = "resource.k8s.io", "v1beta1"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("dra"))).start()
    try:
        with simulated_nodes(c.kubeconfig, len(NODES), name_prefix="dra-node-", delete_nodes_on_stop=True):
            yield c
    finally:
        c.stop()


@pytest.fixture(scope="module")
def api(cluster):
    a = cluster.api_client()
    _publish_slices(a)
    _create(a, None, "deviceclasses", {"metadata": {"name": "any-gpu"}, "spec": {
        "selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}})
    yield a
    a.close()


@pytest.fixture
def ns(api) -> str:
    name = "dra-" + uuid.uuid4().hex[:8]
    _namespace(api, name)
    return name


def _namespace(api, name: str) -> None:
    """A namespace whose default ServiceAccount exists (pods are refused until it does)."""
    core = k8s.CoreV1Api(api)
    core.create_namespace({"metadata": {"name": name}})
    wait_for(lambda: any(sa.metadata.name == "default" for sa in core.list_namespaced_service_account(name).items),
             what="default service account")


def _custom(api) -> k8s.CustomObjectsApi:
    return k8s.CustomObjectsApi(api)


def _create(api, ns: str | None, plural: str, body: dict[str, Any]) -> dict[str, Any]:
    body = {"apiVersion": f"{GROUP}/{VERSION}", "kind": _KINDS[plural], **body}
    if ns is None:
        return _custom(api).create_cluster_custom_object(GROUP, VERSION, plural, body)
    return _custom(api).create_namespaced_custom_object(GROUP, VERSION, ns, plural, body)


_KINDS = {"deviceclasses": "DeviceClass", "resourceclaims": "ResourceClaim",
          "resourceclaimtemplates": "ResourceClaimTemplate", "resourceslices": "ResourceSlice"}


def _gpu(i: int, node: str, memory: str = "16Gi") -> dict[str, Any]:
    return {"name": f"gpu-{i}", "basic": {
        "attributes": {"index": {"int": i}, "uuid": {"string": f"GPU-{node}-{i}"}, "model": {"string": "A100"}},
        "capacity": {"memory": {"value": memory}}}}


def _publish_slices(api) -> None:
    for node in NODES[:2]:
        _create(api, None, "resourceslices", {"metadata": {"name": f"{node}-{DRIVER}"}, "spec": {
            "driver": DRIVER, "nodeName": node, "pool": {"name": node, "generation": 1, "resourceSliceCount": 1},
            "devices": [_gpu(0, node), _gpu(1, node)]}})


def _claims(api, ns: str) -> list[dict[str, Any]]:
    return _custom(api).list_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims")["items"]


def _pods(api, ns: str) -> list[Any]:
    return k8s.CoreV1Api(api).list_namespaced_pod(ns).items


def _gpu_request(selector: str | None = None, name: str = "gpu") -> dict[str, Any]:
    req: dict[str, Any] = {"name": name, "deviceClassName": "any-gpu"}
    if selector:
        req["selectors"] = [{"cel": {"expression": selector}}]
    return {"devices": {"requests": [req]}}


def _pod(name: str, claims: list[dict[str, Any]], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, **meta}, "spec": {
        "resourceClaims": claims,
        "containers": [{"name": "app", "image": "busybox", "resources": {"claims": [{"name": c["name"]} for c in claims]}}]}}


def _deployment(name: str, replicas: int, template: str) -> dict[str, Any]:
    pod = _pod("x", [{"name": "gpu", "resourceClaimTemplateName": template}])
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name}, "spec": {
        "replicas": replicas, "selector": {"matchLabels": {"app": name}},
        "template": {"metadata": {"labels": {"app": name}}, "spec": pod["spec"]}}}


def _unschedulable_message(api, ns: str, name: str) -> str:
    def message() -> str:
        p = k8s.CoreV1Api(api).read_namespaced_pod(name, ns)
        return next((c.message for c in p.status.conditions or () if c.type == "PodScheduled" and c.message), "")

    return str(wait_for(message, what=f"{name} unschedulable"))


def _invalid(fn) -> dict[str, Any]:
    with pytest.raises(ApiException) as ei:
        fn()
    assert ei.value.status == 422, ei.value.body
    return json.loads(ei.value.body)


# ---- served types ---------------------------------------------------------------------------


def test_kubectl_columns_field_selectors_and_defaults(cluster, api, ns):
    out = cluster.kubectl("get", "resourceslices").stdout.splitlines()
    assert out[0].split() == ["NAME", "NODE", "DRIVER", "POOL", "AGE"]
    assert sorted(line.split()[:4] for line in out[1:]) == [
        [f"{n}-{DRIVER}", n, DRIVER, n] for n in NODES[:2]]
    only = cluster.kubectl("get", "resourceslices", "--field-selector", f"spec.nodeName={NODES[1]}", "-o", "name")
    assert only.stdout.split() == [f"resourceslice.resource.k8s.io/{NODES[1]}-{DRIVER}"]
    by_driver = cluster.kubectl("get", "resourceslices", "--field-selector", "spec.driver=other.io", "-o", "name")
    assert by_driver.stdout.strip() == ""
    bad = cluster.kubectl("get", "resourceslices", "--field-selector", "spec.pool.name=x", check=False)
    assert bad.returncode != 0
    assert "field label not supported for resource.k8s.io/v1beta1, Kind=ResourceSlice: spec.pool.name" in bad.stderr
    assert cluster.kubectl("get", "deviceclasses").stdout.split()[:3] == ["NAME", "AGE", "any-gpu"]
    claim = _create(api, ns, "resourceclaims", {"metadata": {"name": "c"}, "spec": _gpu_request()})
    req = claim["spec"]["devices"]["requests"][0]
    assert (req["allocationMode"], req["count"]) == ("ExactCount", 1)
    out = cluster.kubectl("-n", ns, "get", "resourceclaims").stdout.splitlines()
    assert out[0].split() == ["NAME", "STATE", "AGE"]
    assert out[1].split()[:2] == ["c", "pending"]
    api_resources = cluster.kubectl("api-resources", "--api-group", "resource.k8s.io").stdout
    for r in ("deviceclasses", "resourceclaims", "resourceclaimtemplates", "resourceslices"):
        assert r in api_resources


def test_validation_messages(api, ns):
    body = _invalid(lambda: _create(api, ns, "resourceclaims", {"metadata": {"name": "a"}, "spec": {
        "devices": {"requests": [{"name": "gpu"}]}}}))
    assert "spec.devices.requests[0].deviceClassName: Required value" in body["message"]
    body = _invalid(lambda: _create(api, ns, "resourceclaims", {"metadata": {"name": "a"}, "spec": {
        "devices": {"requests": [{"name": "gpu", "deviceClassName": "x", "allocationMode": "Some"}]}}}))
    assert 'spec.devices.requests[0].allocationMode: Unsupported value: "Some": supported values: "All", ' \
           '"ExactCount"' in body["message"]
    body = _invalid(lambda: _create(api, ns, "resourceclaims", {"metadata": {"name": "a"}, "spec": {
        "devices": {"requests": [{"name": "gpu", "deviceClassName": "x", "count": -1}]}}}))
    assert "spec.devices.requests[0].count: Invalid value: -1: must be greater than zero" in body["message"]
    body = _invalid(lambda: _create(api, ns, "resourceclaims", {"metadata": {"name": "a"}, "spec": _gpu_request(
        "device.driver ==")}))
    assert "spec.devices.requests[0].selectors[0].cel.expression: Invalid value" in body["message"]
    assert "compilation failed" in body["message"]
    # nested comprehensions over literal lists: an attacker's way to burn the scheduler's CPU
    big = "[" + ",".join(["1"] * 1000) + "]"
    body = _invalid(lambda: _create(api, ns, "resourceclaims", {"metadata": {"name": "a"}, "spec": _gpu_request(
        f"{big}.all(x, {big}.all(y, x == y))")}))
    assert "spec.devices.requests[0].selectors[0].cel.expression: Forbidden: too complex, exceeds cost limit" \
        in body["message"]
    body = _invalid(lambda: _create(api, None, "resourceslices", {"metadata": {"name": "bad"}, "spec": {
        "driver": DRIVER, "pool": {"name": "p", "resourceSliceCount": 1}, "devices": []}}))
    assert "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required" in body["message"]
    # the spec of a claim is immutable, status too many consumers is refused
    c = _create(api, ns, "resourceclaims", {"metadata": {"name": "imm"}, "spec": _gpu_request()})
    c["spec"]["devices"]["requests"][0]["name"] = "other"
    body = _invalid(lambda: _custom(api).replace_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims",
                                                                          "imm", c))
    assert "spec: Invalid value" in body["message"] and "field is immutable" in body["message"]


def test_pod_status_resource_claim_statuses_validated(api, ns):
    pod = k8s.CoreV1Api(api).create_namespaced_pod(ns, _pod("p", [{"name": "gpu", "resourceClaimName": "nope"}]))
    body = _invalid(lambda: k8s.CoreV1Api(api).patch_namespaced_pod_status(
        "p", ns, {"status": {"resourceClaimStatuses": [{"name": "other", "resourceClaimName": "x"}]}}))
    assert "status.resourceClaimStatuses[0].name: Invalid value: \"other\": must match the name of an entry in " \
           "`spec.resourceClaims`" in body["message"]
    assert pod.metadata.name == "p"


# ---- the controller and the scheduler -------------------------------------------------------


def test_deployment_claims_from_template_allocated_and_freed(cluster, api, ns):
    _create(api, ns, "resourceclaimtemplates", {"metadata": {"name": "one-gpu"}, "spec": {"spec": _gpu_request(
        f'device.capacity["{DRIVER}"].memory.compareTo(quantity("8Gi")) >= 0')}})
    apps = k8s.AppsV1Api(api)
    apps.create_namespaced_deployment(ns, _deployment("train", 3, "one-gpu"))

    def running() -> list[Any]:
        pods = [p for p in _pods(api, ns) if p.status.phase == "Running"]
        return pods if len(pods) == 3 else []

    pods = wait_for(running, timeout=60, what="3 pods running")
    claims = {c["metadata"]["name"]: c for c in _claims(api, ns)}
    assert len(claims) == 3
    devices = set()
    for p in pods:
        assert p.spec.node_name in NODES[:2]
        [st] = p.status.resource_claim_statuses
        assert st.name == "gpu" and st.resource_claim_name.startswith(f"{p.metadata.name}-gpu-")
        c = claims[st.resource_claim_name]
        assert c["metadata"]["annotations"]["resource.kubernetes.io/pod-claim-name"] == "gpu"
        [owner] = c["metadata"]["ownerReferences"]
        assert (owner["kind"], owner["name"], owner["uid"], owner["controller"]) == ("Pod", p.metadata.name,
                                                                                     p.metadata.uid, True)
        [res] = c["status"]["allocation"]["devices"]["results"]
        assert (res["request"], res["driver"], res["pool"]) == ("gpu", DRIVER, p.spec.node_name)
        terms = c["status"]["allocation"]["nodeSelector"]["nodeSelectorTerms"]
        assert terms == [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": [p.spec.node_name]}]}]
        assert c["status"]["reservedFor"] == [{"resource": "pods", "name": p.metadata.name, "uid": p.metadata.uid}]
        devices.add((res["pool"], res["device"]))
    assert len(devices) == 3  # never the same device twice
    out = cluster.kubectl("-n", ns, "get", "resourceclaims", "--no-headers").stdout.splitlines()
    assert sorted(line.split()[1] for line in out) == ["allocated,reserved"] * 3

    # four GPUs in the cluster: a fifth pod cannot get one, and says so as upstream
    apps.patch_namespaced_deployment_scale("train", ns, {"spec": {"replicas": 5}})

    def pending_message() -> str:
        for p in _pods(api, ns):
            for cond in p.status.conditions or ():
                if cond.type == "PodScheduled" and cond.status == "False" and cond.message:
                    return cond.message
        return ""

    msg = wait_for(pending_message, timeout=60, what="a pod unschedulable")
    assert msg.startswith("0/3 nodes are available: 3 cannot allocate all claims."), msg
    assert wait_for(lambda: len([p for p in _pods(api, ns) if p.status.phase == "Running"]) == 4, timeout=60)

    # scale down: the pods' claims go with them (ownerReference) and free their devices
    apps.patch_namespaced_deployment_scale("train", ns, {"spec": {"replicas": 1}})
    wait_for(lambda: len(_claims(api, ns)) == 1, timeout=60, what="claims of deleted pods deleted")
    apps.patch_namespaced_deployment_scale("train", ns, {"spec": {"replicas": 4}})
    wait_for(lambda: len([p for p in _pods(api, ns) if p.status.phase == "Running"]) == 4, timeout=60,
             what="4 pods running again on the freed devices")
    apps.delete_namespaced_deployment("train", ns)
    wait_for(lambda: not _claims(api, ns), timeout=60, what="every claim gone with its pod")


def test_claim_nothing_satisfies_stays_pending(api, ns):
    _create(api, ns, "resourceclaims", {"metadata": {"name": "h100"}, "spec": _gpu_request(
        f'device.attributes["{DRIVER}"].model == "H100"')})
    k8s.CoreV1Api(api).create_namespaced_pod(ns, _pod("want-h100", [{"name": "gpu", "resourceClaimName": "h100"}]))
    assert _unschedulable_message(api, ns, "want-h100") == "0/3 nodes are available: 3 cannot allocate all claims. " \
                                                         "preemption: 0/3 nodes are available: 3 No preemption " \
                                                         "victims found for incoming pod."
    events = k8s.CoreV1Api(api).list_namespaced_event(ns, field_selector="involvedObject.name=want-h100").items
    assert any(e.reason == "FailedScheduling" for e in events)
    c = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", "h100")
    assert "allocation" not in (c.get("status") or {})


def test_runtime_cel_error_reported(api, ns):
    """A selector naming an attribute the devices lack fails at run time with CEL's `no such key`."""
    _create(api, ns, "resourceclaims", {"metadata": {"name": "typo"}, "spec": _gpu_request(
        f'device.attributes["{DRIVER}"].modle == "A100"')})
    k8s.CoreV1Api(api).create_namespaced_pod(ns, _pod("typo", [{"name": "gpu", "resourceClaimName": "typo"}]))
    msg = _unschedulable_message(api, ns, "typo")
    assert "CEL runtime error: no such key: modle" in msg, msg


def test_template_of_another_namespace_is_not_used(api, ns):
    other = "dra-" + uuid.uuid4().hex[:8]
    _namespace(api, other)
    _create(api, other, "resourceclaimtemplates", {"metadata": {"name": "theirs"}, "spec": {"spec": _gpu_request()}})
    k8s.CoreV1Api(api).create_namespaced_pod(ns, _pod("thief", [{"name": "gpu", "resourceClaimTemplateName": "theirs"}]))

    def failed_event() -> str:
        evs = k8s.CoreV1Api(api).list_namespaced_event(ns, field_selector="involvedObject.name=thief").items
        return next((e.message for e in evs if e.reason == "FailedResourceClaimCreation"), "")

    assert "resourceclaimtemplate.resource.k8s.io \"theirs\" not found" in wait_for(failed_event)
    assert not _claims(api, ns) and not _claims(api, other)
    p = k8s.CoreV1Api(api).read_namespaced_pod("thief", ns)
    assert not p.spec.node_name and not p.status.resource_claim_statuses


def test_shared_claim_reserved_for_many_pods_then_released(api, ns):
    _create(api, ns, "resourceclaims", {"metadata": {"name": "shared"}, "spec": _gpu_request()})
    core = k8s.CoreV1Api(api)
    for i in range(33):
        core.create_namespaced_pod(ns, _pod(f"s{i}", [{"name": "gpu", "resourceClaimName": "shared"}]))

    def reserved() -> list[Any]:
        c = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", "shared")
        r = (c.get("status") or {}).get("reservedFor") or []
        return r if len(r) == 33 else []

    refs = wait_for(reserved, timeout=90, what="33 consumers reserved")
    assert len({r["uid"] for r in refs}) == 33
    pods = _pods(api, ns)
    assert len({p.spec.node_name for p in pods}) == 1  # every consumer where the device is
    c = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", "shared")
    assert "resource.kubernetes.io/delete-protection" in c["metadata"]["finalizers"]
    core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)

    def freed() -> bool:
        c = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", "shared")
        st = c.get("status") or {}
        return not st.get("reservedFor") and "allocation" not in st and not c["metadata"].get("finalizers")

    wait_for(freed, timeout=60, what="claim deallocated once its consumers are gone")


def test_rbac_without_rights_on_resourceclaims(cluster, api, ns):
    kc = client_kubeconfig(cluster, "mallory", [], "mallory")
    r = cluster.kubectl("--kubeconfig", kc, "-n", ns, "get", "resourceclaims", check=False)
    assert r.returncode != 0
    assert f'User "mallory" cannot list resource "resourceclaims" in API group "resource.k8s.io" in the namespace ' \
           f'"{ns}"' in r.stderr
    cluster.kubectl("-n", ns, "create", "rolebinding", "mallory-view", "--clusterrole=view", "--user=mallory")
    wait_for(lambda: cluster.kubectl("--kubeconfig", kc, "-n", ns, "get", "resourceclaims", check=False).returncode == 0)
    r = cluster.kubectl("--kubeconfig", kc, "-n", ns, "create", "-f", "-", check=False, input=json.dumps({
        "apiVersion": f"{GROUP}/{VERSION}", "kind": "ResourceClaim", "metadata": {"name": "m"}, "spec": _gpu_request()}))
    assert r.returncode != 0 and "cannot create resource \"resourceclaims\"" in r.stderr
    r = cluster.kubectl("--kubeconfig", kc, "get", "resourceslices", check=False)
    assert r.returncode != 0 and "cannot list resource \"resourceslices\"" in r.stderr


# ---- simulated GPU nodes publish our GPU driver's slices; shares exclude their whole GPU -------


def _share_claim(name: str, count: int) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"devices": {
        "requests": [{"name": "mem", "deviceClassName": "gpu-share.pyk8s.io", "count": count}],
        "constraints": [{"matchAttribute": f"{DRIVER}/parent"}]}}}


def _whole_claim(name: str) -> dict[str, Any]:
    return {"metadata": {"name": name}, "spec": {"devices": {
        "requests": [{"name": "gpu", "deviceClassName": "gpu.pyk8s.io"}]}}}


def test_simulated_gpu_nodes_publish_slices_and_shares_exclude_whole_gpus(cluster, api, ns):
    core = k8s.CoreV1Api(api)
    with simulated_nodes(cluster.kubeconfig, 1, name_prefix="dra-gpu-", gpus=2, gpu_memory="16Gi",
                         delete_nodes_on_stop=True, taints="pyk8s.io/dra-gpu=true:NoSchedule"):
        node = "dra-gpu-0"

        def slice_devices() -> list[str]:
            try:
                s = _custom(api).get_cluster_custom_object(GROUP, VERSION, "resourceslices", f"{node}-{DRIVER}")
            except ApiException as e:
                assert e.status == 404, e.body
                return []
            return [d["name"] for d in s["spec"]["devices"]]

        devices = wait_for(slice_devices, what="the node's ResourceSlice")
        assert devices == ["gpu-0"] + [f"gpu-0-share-{k}" for k in range(4)] + \
            ["gpu-1"] + [f"gpu-1-share-{k}" for k in range(4)]
        classes = cluster.kubectl("get", "deviceclasses", "-o", "name").stdout.split()
        assert {"deviceclass.resource.k8s.io/gpu.pyk8s.io", "deviceclass.resource.k8s.io/gpu-share.pyk8s.io"} <= \
            set(classes)

        def place(pod: str, claim: dict[str, Any]) -> None:
            _create(api, ns, "resourceclaims", claim)
            body = _pod(pod, [{"name": "gpu", "resourceClaimName": claim["metadata"]["name"]}])
            body["spec"]["nodeSelector"] = {"kubernetes.io/hostname": node}
            body["spec"]["tolerations"] = [{"key": "pyk8s.io/dra-gpu", "operator": "Exists"}]
            core.create_namespaced_pod(ns, body)

        def allocated(claim: str) -> list[dict[str, Any]]:
            c = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", claim)
            return ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []

        place("whole", _whole_claim("whole"))
        [w] = wait_for(lambda: allocated("whole"), what="whole GPU allocated")
        whole_gpu = w["device"]
        place("twelve", _share_claim("twelve", 3))  # 12Gi of one GPU: the other one
        shares = wait_for(lambda: allocated("twelve"), what="12Gi of shares allocated")
        parents = {r["device"].rsplit("-share-", 1)[0] for r in shares}
        assert len(shares) == 3 and len(parents) == 1 and parents != {whole_gpu}
        place("whole2", _whole_claim("whole2"))  # both GPUs are (partly) in use now
        assert _unschedulable_message(api, ns, "whole2").startswith("0/")
        assert "cannot allocate all claims" in _unschedulable_message(api, ns, "whole2")
        place("four", _share_claim("four", 1))  # the last 4Gi of the shared GPU
        [f] = wait_for(lambda: allocated("four"), what="the last share allocated")
        assert f["device"].rsplit("-share-", 1)[0] == next(iter(parents))
        assert not allocated("whole2")
        # freeing the whole GPU lets the waiting pod have it
        core.delete_namespaced_pod("whole", ns, grace_period_seconds=0)
        [w2] = wait_for(lambda: allocated("whole2"), timeout=60, what="the freed GPU allocated to whole2")
        assert w2["device"] == whole_gpu
        core.delete_collection_namespaced_pod(ns, grace_period_seconds=0)
    assert cluster.kubectl("get", "resourceslice", f"{node}-{DRIVER}", check=False).returncode != 0


def test_v1beta2_served_and_converted(cluster, api, ns):
    """v1beta2 keeps a request's fields under `exactly` and a device's without `basic`; objects
    written in one version read back in the other, and a v1beta2 claim is allocated as any."""
    claim = {"apiVersion": f"{GROUP}/v1beta2", "kind": "ResourceClaim", "metadata": {"name": "b2"},
             "spec": {"devices": {"requests": [{"name": "gpu", "exactly": {
                 "deviceClassName": "any-gpu", "selectors": [{"cel": {"expression": 'device.driver != ""'}}]}}]}}}
    made = _custom(api).create_namespaced_custom_object(GROUP, "v1beta2", ns, "resourceclaims", claim)
    assert made["spec"]["devices"]["requests"][0] == {"name": "gpu", "exactly": {
        "deviceClassName": "any-gpu", "selectors": [{"cel": {"expression": 'device.driver != ""'}}],
        "allocationMode": "ExactCount", "count": 1}}
    v1 = _custom(api).get_namespaced_custom_object(GROUP, VERSION, ns, "resourceclaims", "b2")
    assert v1["apiVersion"] == f"{GROUP}/v1beta1"
    assert v1["spec"]["devices"]["requests"][0]["deviceClassName"] == "any-gpu"
    s = _custom(api).get_cluster_custom_object(GROUP, "v1beta2", "resourceslices", f"{NODES[0]}-{DRIVER}")
    assert s["spec"]["devices"][0]["name"] == "gpu-0" and "basic" not in s["spec"]["devices"][0]
    assert s["spec"]["devices"][0]["capacity"]["memory"]["value"] == "16Gi"
    out = cluster.kubectl("get", "resourceslices.v1beta2.resource.k8s.io", "-o", "name").stdout.split()
    assert f"resourceslice.resource.k8s.io/{NODES[0]}-{DRIVER}" in out
    k8s.CoreV1Api(api).create_namespaced_pod(ns, _pod("b2", [{"name": "gpu", "resourceClaimName": "b2"}]))

    def allocated() -> list[Any]:
        c = _custom(api).get_namespaced_custom_object(GROUP, "v1beta2", ns, "resourceclaims", "b2")
        return ((c.get("status") or {}).get("allocation") or {}).get("devices", {}).get("results") or []

    [r] = wait_for(allocated, what="v1beta2 claim allocated")
    assert r["driver"] == DRIVER
    bad = dict(claim, metadata={"name": "b2bad"})
    bad["spec"] = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "any-gpu", "count": -1}}]}}
    body = _invalid(lambda: _custom(api).create_namespaced_custom_object(GROUP, "v1beta2", ns, "resourceclaims", bad))
    assert "must be greater than zero" in body["message"]
