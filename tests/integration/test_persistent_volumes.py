"""PersistentVolumes, claims and StorageClasses through a real server, kubectl and the official client.

Upstream references: pkg/controller/volume/persistentvolume (binding, reclaim, events),
pkg/controller/volume/{pvc,pv}protection, plugin/pkg/admission/storage (DefaultStorageClass,
StorageObjectInUseProtection, PersistentVolumeClaimResize), k3s's local-path provisioner, and
seed 003 §6.1.2-6.1.5 (its PV, PVC and StorageClass examples, applied as written).
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Callable
from typing import Any

import pytest
from kubernetes import client as k8s
from kubernetes.client.rest import ApiException

from tests.integration.test_daemonset import wait_for

pytestmark = pytest.mark.xdist_group("pvctl")


@pytest.fixture(scope="module")
def api(cluster):
    c = cluster.api_client()
    yield c
    c.close()


@pytest.fixture
def ns(api):
    name = "pv-" + uuid.uuid4().hex[:8]
    k8s.CoreV1Api(api).create_namespace({"metadata": {"name": name}})
    return name


def core(api) -> k8s.CoreV1Api:
    return k8s.CoreV1Api(api)


def pv(name: str, size: str, cls: str = "", modes: tuple[str, ...] = ("ReadWriteOnce",), policy: str = "Retain",
       labels: dict[str, str] | None = None, claim_ref: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "labels": labels or {}},
        "spec": {"capacity": {"storage": size}, "accessModes": list(modes), "persistentVolumeReclaimPolicy": policy,
                 "storageClassName": cls, "hostPath": {"path": f"/tmp/pvctl-{name}"}, **spec}}
    if claim_ref:
        body["spec"]["claimRef"] = claim_ref
    return body


def pvc(name: str, size: str, cls: str | None = "", modes: tuple[str, ...] = ("ReadWriteOnce",),
        **spec: Any) -> dict[str, Any]:
    s: dict[str, Any] = {"accessModes": list(modes), "resources": {"requests": {"storage": size}}, **spec}
    if cls is not None:
        s["storageClassName"] = cls
    return {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name}, "spec": s}


def claim(api, ns: str, name: str) -> Any:
    return core(api).read_namespaced_persistent_volume_claim(name, ns)


def volume(api, name: str) -> Any:
    return core(api).read_persistent_volume(name)


def bound(api, ns: str, name: str) -> Any:
    return wait_for(lambda: (c := claim(api, ns, name)).status.phase == "Bound" and c, what=f"claim {name} bound")


def events(api, ns: str, name: str) -> list[tuple[str, str, str]]:
    evs = core(api).list_namespaced_event(ns, field_selector=f"involvedObject.name={name}").items
    return [(e.type, e.reason, e.message) for e in evs]


def cluster_events(api, name: str) -> list[tuple[str, str, str]]:
    evs = core(api).list_event_for_all_namespaces(field_selector=f"involvedObject.name={name}").items
    return [(e.type, e.reason, e.message) for e in evs]


def gone(fn: Callable[[], Any]) -> bool:
    try:
        fn()
    except ApiException as e:
        return e.status == 404
    return False


def uniq(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def test_claim_binds_the_smallest_volume_that_fits_class_modes_and_selector(api, ns):
    """index.go: enough capacity, the same class, every requested access mode, the selector; smallest wins."""
    cls, other = uniq("slow"), uniq("fast")
    names = {k: uniq(k) for k in ("s1", "s5", "s10", "f3", "rwx4", "lab8")}
    for body in (pv(names["s1"], "1Gi", cls), pv(names["s5"], "5Gi", cls), pv(names["s10"], "10Gi", cls),
                 pv(names["f3"], "3Gi", other), pv(names["rwx4"], "4Gi", cls, modes=("ReadWriteMany",)),
                 pv(names["lab8"], "8Gi", cls, labels={"release": "stable", "environment": "dev"})):
        core(api).create_persistent_volume(body)
    wait_for(lambda: volume(api, names["s5"]).status.phase == "Available", what="Available")
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("small", "2Gi", cls))
    c = bound(api, ns, "small")
    assert c.spec.volume_name == names["s5"]
    assert c.status.capacity == {"storage": "5Gi"} and c.status.access_modes == ["ReadWriteOnce"]
    assert c.metadata.annotations["pv.kubernetes.io/bind-completed"] == "yes"
    assert c.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    v = wait_for(lambda: (x := volume(api, names["s5"])).status.phase == "Bound" and x, what="PV Bound")
    assert v.spec.claim_ref.name == "small" and v.spec.claim_ref.uid == c.metadata.uid
    assert v.metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    # a selector narrows to the labelled volume although smaller ones fit
    sel = {"matchLabels": {"release": "stable"}, "matchExpressions": [
        {"key": "environment", "operator": "In", "values": ["dev"]}]}
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("picky", "1Gi", cls, selector=sel))
    assert bound(api, ns, "picky").spec.volume_name == names["lab8"]
    # ReadWriteMany only matches the RWX volume, whatever its size against others
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("shared", "1Gi", cls, modes=("ReadWriteMany",)))
    assert bound(api, ns, "shared").spec.volume_name == names["rwx4"]
    # nothing of class `other` is big enough: Pending, and the smaller one stays Available
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("big", "30Gi", other))
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("last", "1Gi", cls))
    assert bound(api, ns, "last").spec.volume_name == names["s1"]
    assert claim(api, ns, "big").status.phase == "Pending"
    assert volume(api, names["f3"]).status.phase == "Available"
    assert volume(api, names["s10"]).status.phase == "Available"


def test_waiting_claim_binds_a_volume_created_later(api, ns):
    cls = uniq("later")
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("early", "1Gi", cls))
    wait_for(lambda: any(r == "ProvisioningFailed" for _, r, _ in events(api, ns, "early")), what="no class yet")
    assert claim(api, ns, "early").status.phase == "Pending"
    name = uniq("arrives")
    core(api).create_persistent_volume(pv(name, "2Gi", cls))
    assert bound(api, ns, "early").spec.volume_name == name


def test_claim_without_class_and_no_volume_reports_failed_binding(api, ns):
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("lonely", "100Ti", ""))
    wait_for(lambda: ("Normal", "FailedBinding",
                      "no persistent volumes available for this claim and no storage class is set")
             in events(api, ns, "lonely"), what="FailedBinding event")
    assert claim(api, ns, "lonely").status.phase == "Pending"
    # a class without provisioning (static local volumes' usual class)
    cls = uniq("static")
    k8s.StorageV1Api(api).create_storage_class({"metadata": {"name": cls}, "provisioner": "kubernetes.io/no-provisioner"})
    try:
        core(api).create_namespaced_persistent_volume_claim(ns, pvc("static", "1Gi", cls))
        wait_for(lambda: ("Warning", "ProvisioningFailed", "no volume plugin matched name: kubernetes.io/no-provisioner")
                 in events(api, ns, "static"), what="ProvisioningFailed")
        assert "volume.kubernetes.io/storage-provisioner" not in (claim(api, ns, "static").metadata.annotations or {})
    finally:
        k8s.StorageV1Api(api).delete_storage_class(cls)


def test_prebinding_from_the_volume_and_from_the_claim(api, ns):
    cls = uniq("pre")
    held, small, big, named = uniq("held"), uniq("small"), uniq("big"), uniq("named")
    # the volume names its claim: that claim gets it although a smaller one fits better
    core(api).create_persistent_volume(pv(small, "1Gi", cls))
    core(api).create_persistent_volume(pv(held, "9Gi", cls, claim_ref={"namespace": ns, "name": "mine"}))
    wait_for(lambda: volume(api, held).status.phase == "Available", what="pre-bound PV Available")
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("mine", "1Gi", cls))
    c = bound(api, ns, "mine")
    assert c.spec.volume_name == held
    v = volume(api, held)
    assert v.spec.claim_ref.uid == c.metadata.uid
    assert "pv.kubernetes.io/bound-by-controller" not in (v.metadata.annotations or {})
    assert "pv.kubernetes.io/bound-by-controller" in c.metadata.annotations  # the controller set volumeName
    # another claim cannot take the pre-bound volume
    assert volume(api, small).status.phase == "Available"
    # the claim names its volume
    core(api).create_persistent_volume(pv(big, "5Gi", cls))
    core(api).create_persistent_volume(pv(named, "2Gi", cls))
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("wants", "1Gi", cls, volumeName=big))
    c = bound(api, ns, "wants")
    assert c.spec.volume_name == big
    assert "pv.kubernetes.io/bound-by-controller" not in c.metadata.annotations
    assert volume(api, big).metadata.annotations["pv.kubernetes.io/bound-by-controller"] == "yes"
    # naming a volume that is too small: VolumeMismatch, Pending
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("greedy", "3Gi", cls, volumeName=named))
    wait_for(lambda: ("Warning", "VolumeMismatch", f'Cannot bind to requested volume "{named}": requested PV is too small')
             in events(api, ns, "greedy"), what="VolumeMismatch")
    # naming a volume bound to another claim
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("thief", "1Gi", cls, volumeName=big))
    wait_for(lambda: ("Warning", "FailedBinding", f'volume "{big}" already bound to a different claim.')
             in events(api, ns, "thief"), what="FailedBinding")
    assert claim(api, ns, "thief").status.phase == "Pending"
    assert volume(api, big).spec.claim_ref.name == "wants"


def test_reclaim_retain_delete_and_recycle(api, ns, cluster):
    cls = uniq("reclaim")
    keep, drop, recycle = uniq("keep"), uniq("drop"), uniq("recycle")
    core(api).create_persistent_volume(pv(keep, "1Gi", cls, claim_ref={"namespace": ns, "name": "a"}))
    core(api).create_persistent_volume(pv(drop, "1Gi", cls, policy="Delete", claim_ref={"namespace": ns, "name": "b"}))
    out = cluster.kubectl("create", "-f", "-", input=json.dumps(
        pv(recycle, "1Gi", cls, policy="Recycle", claim_ref={"namespace": ns, "name": "c"})))
    assert ("spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. Instead, the recommended "
            "approach is to use dynamic provisioning.") in out.stderr
    for n in "abc":
        core(api).create_namespaced_persistent_volume_claim(ns, pvc(n, "1Gi", cls))
    for n in "abc":
        bound(api, ns, n)
        core(api).delete_namespaced_persistent_volume_claim(n, ns)
    # Retain: Released, kept with its claimRef, never bound again
    v = wait_for(lambda: (x := volume(api, keep)).status.phase == "Released" and x, what="Released")
    assert v.spec.claim_ref.name == "a"
    # Delete on a volume no provisioner made: no deleter, Failed
    msg = f'error getting deleter volume plugin for volume "{drop}": no deletable volume plugin matched'
    v = wait_for(lambda: (x := volume(api, drop)).status.phase == "Failed" and x, what="Failed delete")
    assert v.status.message == msg
    wait_for(lambda: ("Warning", "VolumeFailedDelete", msg) in cluster_events(api, drop), what="VolumeFailedDelete")
    # Recycle: no recycler, Failed
    wait_for(lambda: volume(api, recycle).status.phase == "Failed", what="Failed recycle")
    wait_for(lambda: ("Warning", "VolumeFailedRecycle", "No recycler plugin found for the volume!")
             in cluster_events(api, recycle), what="VolumeFailedRecycle")
    # a new claim of the same name does not get the released volume back
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("a", "1Gi", cls))
    time.sleep(0.5)
    assert claim(api, ns, "a").status.phase == "Pending"
    assert volume(api, keep).status.phase == "Released"
    rows = cluster.kubectl("get", "pv", keep, recycle, "--no-headers").stdout.splitlines()
    assert rows[0].split()[1:7] == ["1Gi", "RWO", "Retain", "Released", f"{ns}/a", cls], rows
    assert rows[1].split()[1:7] == ["1Gi", "RWO", "Recycle", "Failed", f"{ns}/c", cls], rows


def _node(api, name: str, labels: dict[str, str] | None = None) -> None:
    try:
        core(api).create_node({"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}}})
    except ApiException as e:
        if e.status != 409:
            raise


def test_protection_finalizers_hold_a_claim_in_use_and_a_bound_volume(api, ns, cluster):
    cls = uniq("prot")
    name = uniq("protected")
    node = uniq("pvnode")
    _node(api, node)
    core(api).create_persistent_volume(pv(name, "1Gi", cls))
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("data", "1Gi", cls))
    c = bound(api, ns, "data")
    assert c.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    assert volume(api, name).metadata.finalizers == ["kubernetes.io/pv-protection"]
    core(api).create_namespaced_pod(ns, {"metadata": {"name": "user"}, "spec": {
        "nodeName": node, "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    # an unscheduled pod does not hold a claim
    core(api).create_namespaced_pod(ns, {"metadata": {"name": "pending"}, "spec": {
        "schedulerName": "nobody", "containers": [{"name": "c", "image": "busybox"}],
        "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]}})
    core(api).delete_persistent_volume(name)
    core(api).delete_namespaced_persistent_volume_claim("data", ns)
    time.sleep(1.0)
    c = claim(api, ns, "data")
    assert c.metadata.deletion_timestamp is not None and c.metadata.finalizers == ["kubernetes.io/pvc-protection"]
    row = cluster.kubectl("get", "pvc", "data", "-n", ns, "--no-headers").stdout.split()
    assert row[1] == "Terminating", row
    v = volume(api, name)
    assert v.metadata.deletion_timestamp is not None and v.status.phase == "Bound"
    core(api).delete_namespaced_pod("user", ns, grace_period_seconds=0)
    wait_for(lambda: gone(lambda: claim(api, ns, "data")), what="claim removed after its pod")
    wait_for(lambda: gone(lambda: volume(api, name)), what="volume removed after its claim")


def test_default_storage_class_admission_newest_default_wins(api, ns, cluster):
    st = k8s.StorageV1Api(api)
    sc = st.read_storage_class("local-path")
    assert sc.provisioner == "pyk8s.io/local-path" and sc.volume_binding_mode == "WaitForFirstConsumer"
    assert sc.reclaim_policy == "Delete" and sc.allow_volume_expansion is True
    assert sc.metadata.annotations["storageclass.kubernetes.io/is-default-class"] == "true"
    row = cluster.kubectl("get", "sc", "local-path", "--no-headers").stdout.split()
    assert row[:6] == ["local-path", "(default)", "pyk8s.io/local-path", "Delete", "WaitForFirstConsumer", "true"]
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("plain", "1Gi", None))
    assert claim(api, ns, "plain").spec.storage_class_name == "local-path"
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("none", "1Gi", ""))
    assert claim(api, ns, "none").spec.storage_class_name == ""
    newer = uniq("newer")
    time.sleep(1.1)  # creationTimestamp has second resolution: the new default must be newer
    st.create_storage_class({"metadata": {"name": newer, "annotations": {
        "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "example.com/none"})
    try:
        core(api).create_namespaced_persistent_volume_claim(ns, pvc("later", "1Gi", None))
        assert claim(api, ns, "later").spec.storage_class_name == newer
    finally:
        st.delete_storage_class(newer)


def test_wait_for_first_consumer_then_local_path_provisioning(api, ns, cluster):
    node = uniq("lpnode")
    _node(api, node)
    core(api).patch_node(node, {"metadata": {"annotations": {"storage.pyk8s.io/local-path-root": "/srv/lp"}}})
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("wffc", "1Gi", "local-path"))
    wait_for(lambda: ("Normal", "WaitForFirstConsumer", "waiting for first consumer to be created before binding")
             in events(api, ns, "wffc"), what="WaitForFirstConsumer event")
    time.sleep(0.5)
    c = claim(api, ns, "wffc")
    assert c.status.phase == "Pending" and not c.spec.volume_name
    # the scheduler picked the pod's node
    core(api).patch_namespaced_persistent_volume_claim("wffc", ns, {"metadata": {"annotations": {
        "volume.kubernetes.io/selected-node": node}}})
    c = bound(api, ns, "wffc")
    uid = c.metadata.uid
    assert c.spec.volume_name == f"pvc-{uid}"
    assert c.metadata.annotations["volume.kubernetes.io/storage-provisioner"] == "pyk8s.io/local-path"
    assert c.metadata.annotations["volume.beta.kubernetes.io/storage-provisioner"] == "pyk8s.io/local-path"
    v = volume(api, f"pvc-{uid}")
    assert v.metadata.annotations["pv.kubernetes.io/provisioned-by"] == "pyk8s.io/local-path"
    assert v.spec.host_path.path == f"/srv/lp/pvc-{uid}_{ns}_wffc" and v.spec.host_path.type == "DirectoryOrCreate"
    term = v.spec.node_affinity.required.node_selector_terms[0].match_expressions[0]
    assert (term.key, term.operator, term.values) == ("kubernetes.io/hostname", "In", [node])
    assert v.spec.capacity == {"storage": "1Gi"} and v.spec.persistent_volume_reclaim_policy == "Delete"
    assert v.spec.storage_class_name == "local-path"
    assert "storage.pyk8s.io/local-path-cleanup" in v.metadata.finalizers
    reasons = [r for _, r, _ in events(api, ns, "wffc")]
    assert "ExternalProvisioning" in reasons and "ProvisioningSucceeded" in reasons
    assert ("Normal", "ProvisioningSucceeded", f"Successfully provisioned volume pvc-{uid}") in events(api, ns, "wffc")
    # Delete reclaim on a real node: the PV waits for the node to remove the directory
    core(api).delete_namespaced_persistent_volume_claim("wffc", ns)
    v = wait_for(lambda: (x := volume(api, f"pvc-{uid}")).metadata.deletion_timestamp and x, what="PV deleting")
    assert "storage.pyk8s.io/local-path-cleanup" in v.metadata.finalizers
    # no kubelet behind this Node object: play its local-path cleaner (kubelet/local_path_cleanup.py)
    core(api).patch_persistent_volume(f"pvc-{uid}", {"metadata": {"finalizers": None}})
    wait_for(lambda: gone(lambda: volume(api, f"pvc-{uid}")), what="PV gone")


def test_local_path_volume_deleted_before_its_claim_or_retained(api, ns, cluster):
    """As upstream's HonorPVReclaimPolicy: a Delete PV removed while Bound still gets its data freed once
    released; a PV switched to Retain loses the clean-up finalizer, so deleting it wipes nothing."""
    node = uniq("lpnode")
    _node(api, node)
    for name in ("first", "kept"):
        core(api).create_namespaced_persistent_volume_claim(ns, {**pvc(name, "1Gi", "local-path"), "metadata": {
            "name": name, "annotations": {"volume.kubernetes.io/selected-node": node}}})
    first, kept = bound(api, ns, "first").spec.volume_name, bound(api, ns, "kept").spec.volume_name
    core(api).delete_persistent_volume(first)
    time.sleep(0.5)
    v = volume(api, first)
    assert v.status.phase == "Bound" and "storage.pyk8s.io/local-path-cleanup" in v.metadata.finalizers
    core(api).delete_namespaced_persistent_volume_claim("first", ns)
    v = wait_for(lambda: (x := volume(api, first)).status.phase == "Released" and x, what="Released")
    time.sleep(0.5)
    assert volume(api, first).metadata.finalizers == ["storage.pyk8s.io/local-path-cleanup"]  # the node's turn
    core(api).patch_persistent_volume(kept, {"spec": {"persistentVolumeReclaimPolicy": "Retain"}})
    wait_for(lambda: "storage.pyk8s.io/local-path-cleanup" not in (volume(api, kept).metadata.finalizers or []),
             what="clean-up finalizer dropped on Retain")
    core(api).delete_namespaced_persistent_volume_claim("kept", ns)
    wait_for(lambda: volume(api, kept).status.phase == "Released", what="retained volume Released")
    time.sleep(0.5)
    assert volume(api, kept).metadata.deletion_timestamp is None
    # a Node that is gone has no directory left to remove: the volume goes without waiting for it
    core(api).create_namespaced_persistent_volume_claim(ns, {**pvc("orphan", "1Gi", "local-path"), "metadata": {
        "name": "orphan", "annotations": {"volume.kubernetes.io/selected-node": node}}})
    orphan = bound(api, ns, "orphan").spec.volume_name
    core(api).delete_node(node)
    core(api).delete_namespaced_persistent_volume_claim("orphan", ns)
    wait_for(lambda: gone(lambda: volume(api, orphan)), what="volume of a deleted node gone")
    wait_for(lambda: gone(lambda: volume(api, first)), what="a volume waiting for the deleted node gone")


def test_local_path_on_a_simulated_node_and_expansion(api, ns, cluster):
    node = uniq("simnode")
    _node(api, node, {"node.pyk8s.io/simulated": "true"})
    core(api).create_namespaced_persistent_volume_claim(ns, {
        **pvc("grow", "1Gi", "local-path"),
        "metadata": {"name": "grow", "annotations": {"volume.kubernetes.io/selected-node": node}}})
    c = bound(api, ns, "grow")
    pv_name = c.spec.volume_name
    assert volume(api, pv_name).spec.host_path.path == f"/var/lib/pyk8s/storage/{pv_name}_{ns}_grow"
    core(api).patch_namespaced_persistent_volume_claim("grow", ns, {"spec": {"resources": {"requests": {
        "storage": "3Gi"}}}})
    c = wait_for(lambda: (x := claim(api, ns, "grow")).status.capacity == {"storage": "3Gi"} and x, what="resized")
    assert c.status.allocated_resources == {"storage": "3Gi"} and not c.status.conditions
    assert volume(api, pv_name).spec.capacity == {"storage": "3Gi"}
    reasons = [r for _, r, _ in events(api, ns, "grow")]
    assert {"ExternalExpanding", "Resizing", "VolumeResizeSuccessful"} <= set(reasons), reasons
    # a simulated node has no disk: the volume goes at once
    core(api).delete_namespaced_persistent_volume_claim("grow", ns)
    wait_for(lambda: gone(lambda: volume(api, pv_name)), what="PV gone on a simulated node")


def test_resize_refused_without_allow_volume_expansion_or_before_binding(api, ns, cluster):
    cls = uniq("fixed")
    k8s.StorageV1Api(api).create_storage_class({"metadata": {"name": cls}, "provisioner": "example.com/none"})
    name = uniq("fixedpv")
    core(api).create_persistent_volume(pv(name, "5Gi", cls))
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("fixed", "1Gi", cls))
    bound(api, ns, "fixed")
    r = cluster.kubectl("patch", "pvc", "fixed", "-n", ns, "-p", '{"spec":{"resources":{"requests":{"storage":"2Gi"}}}}',
                        check=False)
    assert r.returncode != 0
    assert ('persistentvolumeclaims "fixed" is forbidden: only dynamically provisioned pvc can be resized and the '
            "storageclass that provisions the pvc must support resize") in r.stderr
    core(api).create_namespaced_persistent_volume_claim(ns, pvc("unbound", "1Gi", "local-path"))
    with pytest.raises(ApiException) as e:
        core(api).patch_namespaced_persistent_volume_claim("unbound", ns, {"spec": {"resources": {"requests": {
            "storage": "2Gi"}}}})
    assert e.value.status in (403, 422)


SEED_PV = """apiVersion: v1
kind: PersistentVolume
metadata:
  annotations:
    pv.kubernetes.io/provisioned-by: fuseim.pri/ifs
  creationTimestamp: 2018-07-12T06:46:48Z
  name: default-test-web-0-pvc-58cf5ec1-859f-11e8-bb61-005056b83985
  resourceVersion: "100163256"
  selfLink: /api/v1/persistentvolumes/default-test-web-0-pvc-58cf5ec1-859f-11e8-bb61-005056b83985
  uid: 59796ba3-859f-11e8-9c50-c81f66bcff65
spec:
  accessModes:
  - ReadWriteOnce
  capacity:
    storage: 2Gi
  volumeMode: Filesystem
  claimRef:
    apiVersion: v1
    kind: PersistentVolumeClaim
    name: test-web-0
    namespace: default
    resourceVersion: "100163248"
    uid: 58cf5ec1-859f-11e8-bb61-005056b83985
  nfs:
    path: /data/nfs-storage/default-test-web-0-pvc-58cf5ec1-859f-11e8-bb61-005056b83985
    server: 172.16.201.54
  persistentVolumeReclaimPolicy: Delete
  storageClassName: managed-nfs-storage
  mountOptions:
  - hard
  - nfsvers=4.1
status:
  phase: Bound
"""

SEED_PVC = """kind: PersistentVolumeClaim
apiVersion: v1
metadata:
  name: myclaim
spec:
  accessModes:
  - ReadWriteOnce
  volumeMode: Filesystem
  resources:
    requests:
      storage: 8Gi
  storageClassName: slow
  selector:
    matchLabels:
      release: "stable"
    matchExpressions:
    - {key: environment, operator: In, values: [dev]}
"""

SEED_SC_V3 = """kind: StorageClass
apiVersion: storage.k8s.io/v3
metadata:
  name: standard
provisioner: kubernetes.io/aws-ebs
parameters:
  type: gp2
reclaimPolicy: Retain
mountOptions:
- debug
"""

SEED_SC_SLOW_FAST = """apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: slow
provisioner: kubernetes.io/gce-pd
parameters:
  type: pd-standard
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata:
  name: fast
provisioner: kubernetes.io/gce-pd
parameters:
  type: pd-ssd
"""

SEED_CLAIM1 = """apiVersion: v1
kind: PersistentVolumeClaim
metadata:
  name: claim1
spec:
  accessModes:
    - ReadWriteOnce
  storageClassName: fast
  resources:
    requests:
      storage: 30Gi
"""


def test_seed_003_section_6_examples_as_written(api, ns, cluster):
    """Seed 003 §6.1.2-6.1.5: the listings applied with kubectl as the notes print them."""
    # the PV from a dump: its claim is gone, so it is Released and left to its (external) provisioner
    cluster.kubectl("apply", "-f", "-", input=SEED_PV)
    name = "default-test-web-0-pvc-58cf5ec1-859f-11e8-bb61-005056b83985"
    wait_for(lambda: volume(api, name).status.phase == "Released", what="seed PV Released")
    row = cluster.kubectl("get", "pv", name, "--no-headers").stdout.split()
    assert row[1:7] == ["2Gi", "RWO", "Delete", "Released", "default/test-web-0", "managed-nfs-storage"], row
    # storage.k8s.io/v3 does not exist (the notes' typo), as upstream answers it
    r = cluster.kubectl("apply", "-f", "-", input=SEED_SC_V3, check=False)
    assert r.returncode != 0
    assert 'no matches for kind "StorageClass" in version "storage.k8s.io/v3"' in r.stderr
    cluster.kubectl("apply", "-f", "-", input=SEED_SC_SLOW_FAST)
    try:
        # myclaim: class slow, a selector; a matching volume of that class binds
        match = uniq("seedpv")
        core(api).create_persistent_volume(pv(match, "10Gi", "slow", labels={"release": "stable", "environment": "dev"}))
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=SEED_PVC)
        assert bound(api, ns, "myclaim").spec.volume_name == match
        # claim1 of class fast: no volume, so it waits for the class's provisioner, the in-tree GCE PD
        # plug-in's CSI driver since CSI migration
        cluster.kubectl("apply", "-n", ns, "-f", "-", input=SEED_CLAIM1)
        msg = ("Waiting for a volume to be created either by the external provisioner 'pd.csi.storage.gke.io' or "
               "manually by the system administrator. If volume creation is delayed, please verify that the "
               "provisioner is running and correctly registered.")
        wait_for(lambda: ("Normal", "ExternalProvisioning", msg) in events(api, ns, "claim1"), what="ExternalProvisioning")
        ann = claim(api, ns, "claim1").metadata.annotations
        assert ann["volume.kubernetes.io/storage-provisioner"] == "pd.csi.storage.gke.io"
        assert ann["pv.kubernetes.io/migrated-to"] == "pd.csi.storage.gke.io"
        out = cluster.kubectl("get", "pvc", "-n", ns, "--no-headers").stdout
        rows = {ln.split()[0]: ln.split() for ln in out.splitlines()}
        assert rows["myclaim"][1:6] == ["Bound", match, "10Gi", "RWO", "slow"], rows
        assert rows["claim1"][1:3] == ["Pending", "fast"], rows
    finally:
        cluster.kubectl("delete", "sc", "slow", "fast")


def test_provisioner_ignores_what_is_not_its_own(api, ns, cluster):
    """A user's annotations cannot make the local-path provisioner act outside its classes and volumes."""
    st = k8s.StorageV1Api(api)
    other = uniq("foreign")
    st.create_storage_class({"metadata": {"name": other}, "provisioner": "example.com/other",
                             "volumeBindingMode": "WaitForFirstConsumer", "allowVolumeExpansion": True})
    node = uniq("lpnode")
    _node(api, node)
    try:
        # the provisioner's own annotation on a claim of another provisioner's class
        core(api).create_namespaced_persistent_volume_claim(ns, {**pvc("spoof", "1Gi", other), "metadata": {
            "name": "spoof", "annotations": {"volume.kubernetes.io/storage-provisioner": "pyk8s.io/local-path",
                                             "volume.kubernetes.io/selected-node": node}}})
        wait_for(lambda: any(r == "ExternalProvisioning" for _, r, _ in events(api, ns, "spoof")), what="handed over")
        uid = claim(api, ns, "spoof").metadata.uid
        assert claim(api, ns, "spoof").metadata.annotations["volume.kubernetes.io/storage-provisioner"] \
            == "example.com/other"
        time.sleep(0.5)
        assert gone(lambda: volume(api, f"pvc-{uid}"))
        # a node that does not exist
        core(api).create_namespaced_persistent_volume_claim(ns, {**pvc("nowhere", "1Gi", "local-path"), "metadata": {
            "name": "nowhere", "annotations": {"volume.kubernetes.io/selected-node": "no-such-node"}}})
        wait_for(lambda: ("Warning", "ProvisioningFailed",
                          'failed to provision volume with StorageClass "local-path": nodes "no-such-node" not found')
                 in events(api, ns, "nowhere"), what="ProvisioningFailed")
        # a static volume of the local-path class, bound by name, is not the resizer's to grow
        static = uniq("static")
        core(api).create_persistent_volume(pv(static, "1Gi", "local-path"))
        core(api).create_namespaced_persistent_volume_claim(ns, pvc("pinned", "1Gi", "local-path", volumeName=static))
        bound(api, ns, "pinned")
        core(api).patch_namespaced_persistent_volume_claim("pinned", ns, {"spec": {"resources": {"requests": {
            "storage": "2Gi"}}}})
        wait_for(lambda: claim(api, ns, "pinned").metadata.annotations.get("volume.kubernetes.io/storage-resizer"),
                 what="handed to the resizer")
        time.sleep(0.5)
        assert volume(api, static).spec.capacity == {"storage": "1Gi"}
        assert claim(api, ns, "pinned").status.capacity == {"storage": "1Gi"}
    finally:
        st.delete_storage_class(other)


def test_immediate_class_provisions_on_a_ready_node(api, ns, cluster):
    node = uniq("ready")
    _node(api, node)
    core(api).patch_node_status(node, {"status": {"conditions": [{
        "type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ready",
        "lastHeartbeatTime": "2026-01-01T00:00:00Z", "lastTransitionTime": "2026-01-01T00:00:00Z"}]}})
    # the only Ready node of this server (the others these tests make have no status), so the one chosen
    cls = uniq("now")
    k8s.StorageV1Api(api).create_storage_class({"metadata": {"name": cls}, "provisioner": "pyk8s.io/local-path",
                                                "volumeBindingMode": "Immediate", "reclaimPolicy": "Retain",
                                                "parameters": {"nodePath": "/data/lp", "volumeType": "local"}})
    try:
        core(api).create_namespaced_persistent_volume_claim(ns, pvc("now", "2Gi", cls))
        c = bound(api, ns, "now")
        v = volume(api, c.spec.volume_name)
        assert v.spec.local.path == f"/data/lp/{c.spec.volume_name}_{ns}_now" and v.spec.host_path is None
        assert v.spec.node_affinity.required.node_selector_terms[0].match_expressions[0].values == [node]
        assert v.spec.persistent_volume_reclaim_policy == "Retain"
        core(api).delete_namespaced_persistent_volume_claim("now", ns)
        wait_for(lambda: volume(api, c.spec.volume_name).status.phase == "Released", what="Released, retained")
    finally:
        k8s.StorageV1Api(api).delete_storage_class(cls)


def test_disable_local_storage_and_the_storage_admission_plugins(tmp_path):
    """`--disable local-storage`: no class, no provisioner; a classless claim gets a default made later.
    With the admission plug-ins off, no class and no finalizers are added."""
    from tests.cluster import Cluster

    c = Cluster(str(tmp_path / "a"), extra_args=["--disable", "local-storage"]).start()
    try:
        with c.api_client() as a:
            st = k8s.StorageV1Api(a)
            assert [s.metadata.name for s in st.list_storage_class().items] == []
            # a classless claim binds a classless volume; only one that found none gets a default later
            core(a).create_persistent_volume(pv("classless", "1Gi", ""))
            core(a).create_namespaced_persistent_volume_claim("default", pvc("matched", "1Gi", None))
            assert bound(a, "default", "matched").spec.volume_name == "classless"
            core(a).create_namespaced_persistent_volume_claim("default", pvc("early", "1Gi", None))
            assert claim(a, "default", "early").spec.storage_class_name is None
            st.create_storage_class({"metadata": {"name": "later", "annotations": {
                "storageclass.kubernetes.io/is-default-class": "true"}}, "provisioner": "example.com/x"})
            wait_for(lambda: claim(a, "default", "early").spec.storage_class_name == "later",
                     what="retroactive default class")
            assert claim(a, "default", "matched").spec.storage_class_name is None
            assert c.kubectl("get", "sc", "--no-headers").stdout.split()[:2] == ["later", "(default)"]
    finally:
        c.stop()
    c = Cluster(str(tmp_path / "b"), extra_args=[
        "--disable-admission-plugins=DefaultStorageClass,StorageObjectInUseProtection"]).start()
    try:
        with c.api_client() as a:
            core(a).create_persistent_volume(pv("bare-pv", "1Gi", ""))
            assert volume(a, "bare-pv").metadata.finalizers is None
            wait_for(lambda: volume(a, "bare-pv").status.phase == "Available", what="Available")
            core(a).create_namespaced_persistent_volume_claim("default", pvc("bare", "1Gi", None))
            assert claim(a, "default", "bare").metadata.finalizers is None
            # no class given and a classless volume fits: it binds, and the default class is not forced on it
            got = bound(a, "default", "bare")
            assert got.spec.volume_name == "bare-pv" and got.spec.storage_class_name is None
    finally:
        c.stop()


def test_controller_manager_process_runs_the_storage_controllers(tmp_path):
    """`--controller-manager-process`: the binder and the local-path provisioner run in the child process."""
    from tests.cluster import Cluster

    c = Cluster(str(tmp_path / "cm"), extra_args=["--controller-manager-process"]).start()
    try:
        with c.api_client() as a:
            sc = wait_for(lambda: [s for s in k8s.StorageV1Api(a).list_storage_class().items
                                   if s.metadata.name == "local-path"], what="local-path class")
            assert sc[0].provisioner == "pyk8s.io/local-path"
            _node(a, "cm-node", {"node.pyk8s.io/simulated": "true"})
            core(a).create_namespaced_persistent_volume_claim("default", {**pvc("p", "1Gi", None), "metadata": {
                "name": "p", "annotations": {"volume.kubernetes.io/selected-node": "cm-node"}}})
            assert bound(a, "default", "p").spec.volume_name.startswith("pvc-")
    finally:
        c.stop()


def test_resize_of_an_in_tree_class_goes_to_its_csi_driver(api, ns):
    cls = uniq("pd")
    k8s.StorageV1Api(api).create_storage_class({"metadata": {"name": cls}, "provisioner": "kubernetes.io/gce-pd",
                                                "allowVolumeExpansion": True})
    try:
        name = uniq("pdpv")
        core(api).create_persistent_volume(pv(name, "1Gi", cls))
        core(api).create_namespaced_persistent_volume_claim(ns, pvc("disk", "1Gi", cls))
        bound(api, ns, "disk")
        core(api).patch_namespaced_persistent_volume_claim("disk", ns, {"spec": {"resources": {"requests": {
            "storage": "2Gi"}}}})
        wait_for(lambda: claim(api, ns, "disk").metadata.annotations.get("volume.kubernetes.io/storage-resizer")
                 == "pd.csi.storage.gke.io", what="handed to the CSI resizer")
        wait_for(lambda: ("Normal", "ExternalExpanding", "waiting for an external controller to expand this PVC")
                 in events(api, ns, "disk"), what="ExternalExpanding")
        assert claim(api, ns, "disk").status.capacity == {"storage": "1Gi"}  # nobody here resizes GCE disks
    finally:
        k8s.StorageV1Api(api).delete_storage_class(cls)
