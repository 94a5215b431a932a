"""Persistent volumes on the node and in the scheduler, with real runc pods.

No PV controller runs on this branch: the tests play its part (claimRef/volumeName and the
Bound phases through the status subresource) where a binding must complete.
"""

from __future__ import annotations

import os
import stat
import uuid

import pytest

from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements
from tests.e2e.pv_helpers import MERGE, bind, claim_vol, make_pv, make_pvc, scheduling_message

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-pvc"), pytest.mark.timeout(150)]



@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-pvc")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


def test_local_path_volume_fs_group_subpath_and_data_across_pods(env, tmp_path):
    path = str(tmp_path / "local-path" / "pvc-1234_default_data")
    make_pv(env, "pv-data", path, env.node, "lp-e2e", claim="data", local_path=True)
    make_pvc(env, "data", "lp-e2e", "pv-data")
    bind(env, "data", "pv-data")
    env.create(busybox_pod("writer", "", securityContext={"fsGroup": 2345, "runAsUser": 1000},
                           containers=[container("c", "echo kept > /data/file && echo WROTE; sleep 3600",
                                                 volumeMounts=[{"name": "d", "mountPath": "/data", "subPath": "sub"}])],
                           volumes=claim_vol("data")))
    env.wait_log("writer", "c", lambda ls: "WROTE" in ls, 40)
    assert env.pod("writer")["spec"]["nodeName"] == env.node  # scheduled through VolumeBinding
    st = os.stat(path)
    # made on first mount with k3s's 0777, then the pod's fsGroup (setgid) as upstream's local volumes
    assert stat.S_IMODE(st.st_mode) & 0o777 == 0o777 and st.st_gid == 2345 and st.st_mode & stat.S_ISGID
    assert open(os.path.join(path, "sub", "file")).read() == "kept\n"
    assert os.stat(os.path.join(path, "sub", "file")).st_uid == 1000
    env.wait(lambda: "kubernetes.io/local-volume/pv-data" in (env.node_obj()["status"].get("volumesInUse") or []),
             15, "volumesInUse")
    assert not env.node_obj()["status"].get("volumesAttached")
    env.delete_pod("writer", 0)
    env.wait_gone("writer")
    env.wait(lambda: not env.node_obj()["status"].get("volumesInUse"), 15, "volumesInUse cleared")
    # the next pod reads it back (read-only claim: writes fail), through subPathExpr
    env.create(busybox_pod("reader", "", containers=[container(
        "c", "cat /data/file; echo x > /data/other 2>/dev/null || echo READONLY; sleep 3600",
        env=[{"name": "SUB", "value": "sub"}],
        volumeMounts=[{"name": "d", "mountPath": "/data", "subPathExpr": "$(SUB)"}])],
        volumes=claim_vol("data", read_only=True)))
    lines = env.wait_log("reader", "c", lambda ls: "READONLY" in ls, 40)
    assert "kept" in lines
    assert not os.path.exists(os.path.join(path, "sub", "other"))
    env.delete_pod("reader", 0)


def test_unbound_claim_waits_in_container_creating_then_starts(env, tmp_path):
    make_pvc(env, "late", "manual-e2e")
    env.create(busybox_pod("waiter", "echo STARTED; sleep 3600", nodeName=env.node, volumes=claim_vol("late")))

    def failed_mount() -> str | None:
        return next((e["message"] for e in env.events("waiter") if e["reason"] == "FailedMount"), None)
    msg = env.wait(failed_mount, 20, "FailedMount")
    assert msg == ("Unable to attach or mount volumes: unmounted volumes=[d], unattached volumes=[], "
                   "failed to process volumes=[d]: error processing PVC default/late: PVC is not bound"), msg
    p = env.pod("waiter")
    assert p["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ContainerCreating"
    make_pv(env, "pv-late", str(tmp_path / "late"), env.node, "manual-e2e", claim="late", kind="hostPath")
    bind(env, "late", "pv-late")
    env.wait_log("waiter", "c", lambda ls: "STARTED" in ls, 40)
    env.delete_pod("waiter", 0)


def test_scheduler_volume_node_affinity_and_cordon(env, tmp_path):
    # A second, kubelet-less node: the bound volume's affinity must keep pods off it.
    ghost = f"ghost-{uuid.uuid4().hex[:6]}"
    env.api("POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": ghost, "labels": {
        "kubernetes.io/hostname": ghost}}})
    env.api("PATCH", f"/api/v1/nodes/{ghost}/status", {"status": {
        "allocatable": {"cpu": "8", "memory": "16Gi", "pods": "110"}, "capacity": {"cpu": "8", "memory": "16Gi",
                                                                                    "pods": "110"},
        "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "ok"}]}}, MERGE)
    try:
        d = tmp_path / "aff"
        d.mkdir()
        make_pv(env, "pv-aff", str(d), env.node, "aff-e2e", claim="aff")
        make_pvc(env, "aff", "aff-e2e", "pv-aff")
        bind(env, "aff", "pv-aff")
        for i in range(3):  # never the ghost node, whatever the spread scores say
            env.create(busybox_pod(f"aff{i}", "sleep 3600", volumes=claim_vol("aff")))
        for i in range(3):
            assert env.wait_running(f"aff{i}", 40)["spec"]["nodeName"] == env.node
        env.kubectl("cordon", env.node)
        env.create(busybox_pod("aff-cordoned", "sleep 3600", volumes=claim_vol("aff")))
        msg = scheduling_message(env, "aff-cordoned")
        assert msg.startswith("0/2 nodes are available: 1 node(s) had volume node affinity conflict, "
                              "1 node(s) were unschedulable."), msg
        # Immediate (no class) unbound claims keep the pod out entirely
        make_pvc(env, "imm", "")
        env.create(busybox_pod("imm-pod", "sleep 3600", volumes=claim_vol("imm")))
        msg = scheduling_message(env, "imm-pod")
        assert msg.startswith("0/2 nodes are available: pod has unbound immediate PersistentVolumeClaims."), msg
    finally:
        env.kubectl("uncordon", env.node)
        env.api("DELETE", f"/api/v1/nodes/{ghost}")
        for p in ("aff0", "aff1", "aff2", "aff-cordoned", "imm-pod"):
            env.delete_pod(p, 0)


def test_wait_for_first_consumer_binds_a_static_pv_on_the_pods_node(env, tmp_path):
    env.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
                "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "wffc-e2e"},
                "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    d = tmp_path / "wffc"
    d.mkdir()
    make_pv(env, "pv-wffc", str(d), env.node, "wffc-e2e")
    env.api("PATCH", "/api/v1/persistentvolumes/pv-wffc/status", {"status": {"phase": "Available"}}, MERGE)
    make_pvc(env, "wffc", "wffc-e2e")
    env.create(busybox_pod("consumer", "echo UP; sleep 3600", volumes=claim_vol("wffc")))
    # The scheduler reserves the PV for the claim (claimRef) and waits until the PV controller has bound
    # both before it binds the pod (the pod cannot start on an unbound claim either way)
    ref = env.wait(lambda: (env.get("/api/v1/persistentvolumes/pv-wffc")["spec"].get("claimRef")), 20, "claimRef")
    assert ref["name"] == "wffc" and ref["namespace"] == "default" and ref["uid"]
    env.wait_log("consumer", "c", lambda ls: "UP" in ls, 40)
    assert env.pod("consumer")["spec"]["nodeName"] == env.node
    pvc = env.get("/api/v1/namespaces/default/persistentvolumeclaims/wffc")
    assert pvc["status"]["phase"] == "Bound" and pvc["spec"]["volumeName"] == "pv-wffc"
    env.delete_pod("consumer", 0)


def test_statefulset_ordinals_keep_their_own_pre_provisioned_volumes(env, tmp_path):
    # The claims volumeClaimTemplates would make, provisioned ahead (the provisioner is the
    # control plane's half): each ordinal must find its own data again after scale 3 -> 1 -> 3.
    for i in range(3):
        d = tmp_path / f"sts{i}"
        d.mkdir()
        make_pv(env, f"pv-sts{i}", str(d), env.node, "sts-e2e", claim=f"www-web-{i}")
        make_pvc(env, f"www-web-{i}", "sts-e2e", f"pv-sts{i}")
        bind(env, f"www-web-{i}", f"pv-sts{i}")
    script = ('[ -f /www/owner ] || echo "$HOSTNAME" > /www/owner; echo "OWNER=$(cat /www/owner)"; '
              "echo started >> /www/starts; sleep 3600")
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
           "spec": {"replicas": 3, "serviceName": "web", "selector": {"matchLabels": {"app": "web"}},
                    "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "containers": [container("c", script, volumeMounts=[{"name": "www", "mountPath": "/www"}])]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "storageClassName": "sts-e2e",
                        "resources": {"requests": {"storage": "1Gi"}}}}]}}
    env.api("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    try:
        for i in range(3):
            env.wait_log(f"web-{i}", "c", lambda ls, i=i: f"OWNER=web-{i}" in ls, 60)
        scale = "/apis/apps/v1/namespaces/default/statefulsets/web"
        env.api("PATCH", scale, {"spec": {"replicas": 1}}, MERGE)
        env.wait_gone("web-2")
        env.wait_gone("web-1")
        env.api("PATCH", scale, {"spec": {"replicas": 3}}, MERGE)
        for i in range(3):
            env.wait_log(f"web-{i}", "c", lambda ls, i=i: f"OWNER=web-{i}" in ls, 60)
        for i in (1, 2):  # started twice on its own volume
            assert open(tmp_path / f"sts{i}" / "starts").read().count("started") == 2
    finally:
        env.api("DELETE", "/apis/apps/v1/namespaces/default/statefulsets/web")
        for i in range(3):
            env.delete_pod(f"web-{i}", 0)


def test_statefulset_ordinals_keep_their_own_provisioned_volumes(env):
    """Issue 19's StatefulSet: volumeClaimTemplates with no class get the default `local-path` class, each
    claim is provisioned on the pod's node (WaitForFirstConsumer) and bound, and every ordinal finds its
    own data again after scale 3 -> 1 -> 3; deleting the claims afterwards removes the volumes."""
    script = ('[ -f /data/owner ] || echo "$HOSTNAME" > /data/owner; echo "OWNER=$(cat /data/owner)"; '
              "echo started >> /data/starts; echo \"STARTS=$(wc -l < /data/starts)\"; sleep 3600")
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
           "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                    "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                        "terminationGracePeriodSeconds": 1,
                        "containers": [container("c", script, volumeMounts=[{"name": "data", "mountPath": "/data"}])]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "data"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    env.api("POST", "/apis/apps/v1/namespaces/default/statefulsets", sts)
    claims = [f"data-db-{i}" for i in range(3)]
    try:
        for i in range(3):
            env.wait_log(f"db-{i}", "c", lambda ls, i=i: f"OWNER=db-{i}" in ls, 90)
        for c in claims:
            pvc = env.get(f"/api/v1/namespaces/default/persistentvolumeclaims/{c}")
            assert pvc["spec"]["storageClassName"] == "local-path" and pvc["status"]["phase"] == "Bound"
            pv = env.get(f"/api/v1/persistentvolumes/{pvc['spec']['volumeName']}")
            assert pv["metadata"]["annotations"]["pv.kubernetes.io/provisioned-by"] == "pyk8s.io/local-path"
        scale = "/apis/apps/v1/namespaces/default/statefulsets/db"
        env.api("PATCH", scale, {"spec": {"replicas": 1}}, MERGE)
        env.wait_gone("db-2")
        env.wait_gone("db-1")
        env.api("PATCH", scale, {"spec": {"replicas": 3}}, MERGE)
        for i in (1, 2):  # its own volume again: the owner it wrote, a second start recorded there
            env.wait_log(f"db-{i}", "c", lambda ls, i=i: f"OWNER=db-{i}" in ls and "STARTS=2" in ls, 90)
    finally:
        env.api("DELETE", "/apis/apps/v1/namespaces/default/statefulsets/db")
        for i in range(3):
            env.delete_pod(f"db-{i}", 0)
        for i in range(3):
            env.wait_gone(f"db-{i}")
    volumes = [env.get(f"/api/v1/namespaces/default/persistentvolumeclaims/{c}")["spec"]["volumeName"] for c in claims]
    for c in claims:
        env.api("DELETE", f"/api/v1/namespaces/default/persistentvolumeclaims/{c}")
    env.wait(lambda: all(env.get(f"/api/v1/persistentvolumes/{v}") is None for v in volumes), 60,
             "the provisioned volumes deleted with their claims")
