"""A claim provisioned by the built-in local-path provisioner, mounted by real runc pods.

A class of `pyk8s.io/local-path` with Immediate binding (the provisioner picks the Ready node itself,
so no scheduler support for `selected-node` is needed): the claim is provisioned on the node and
bound, one pod writes into it, a second pod started after the first is deleted reads the data back,
and the data lies in `<nodePath>/pvc-<uid>_<ns>_<name>` on the node. Deleting the claim puts the
node's clean-up finalizer on the PV (docs/storage.md).
"""

from __future__ import annotations

import os

import pytest

from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("local-path")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


def test_provisioned_claim_keeps_data_across_pods(env, tmp_path):
    root = str(tmp_path / "lp")
    env.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "lp-now"},
        "provisioner": "pyk8s.io/local-path", "volumeBindingMode": "Immediate", "parameters": {"nodePath": root}})
    env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "data"},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "lp-now",
                         "resources": {"requests": {"storage": "64Mi"}}}})
    claim = env.wait(lambda: (c := env.get("/api/v1/namespaces/default/persistentvolumeclaims/data"))
                     and c["status"].get("phase") == "Bound" and c, 20, "claim Bound")
    pv_name = claim["spec"]["volumeName"]
    pv = env.get(f"/api/v1/persistentvolumes/{pv_name}")
    path = os.path.join(root, f"{pv_name}_default_data")
    assert pv["spec"]["hostPath"] == {"path": path, "type": "DirectoryOrCreate"}
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [env.node]
    vol = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    mount = [{"name": "d", "mountPath": "/data"}]
    env.create(busybox_pod("writer", "", volumes=vol, containers=[
        container("c", "echo kept > /data/note && echo WROTE; sleep 3600", volumeMounts=mount)]))
    env.wait_log("writer", "c", lambda ls: "WROTE" in ls, 30)
    assert open(os.path.join(path, "note")).read() == "kept\n"
    env.delete_pod("writer", 0)
    env.wait_gone("writer")
    env.create(busybox_pod("reader", "", volumes=vol, containers=[
        container("c", "echo READ=$(cat /data/note); sleep 3600", volumeMounts=mount)]))
    assert "READ=kept" in env.wait_log("reader", "c", lambda ls: "READ=kept" in ls, 30)
    env.delete_pod("reader", 0)
    env.wait_gone("reader")
    # Delete reclaim on a real node: the PV waits for the node to remove the directory
    env.api("DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/data")
    pv = env.wait(lambda: (v := env.get(f"/api/v1/persistentvolumes/{pv_name}"))
                  and v["metadata"].get("deletionTimestamp") and v, 20, "PV deleting")
    assert "storage.pyk8s.io/local-path-cleanup" in pv["metadata"]["finalizers"]
    env.api("PATCH", f"/api/v1/persistentvolumes/{pv_name}", {"metadata": {"finalizers": None}},
            {"Content-Type": "application/merge-patch+json"})
    env.wait(lambda: env.get(f"/api/v1/persistentvolumes/{pv_name}") is None, 20, "PV gone")
