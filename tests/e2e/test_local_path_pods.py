"""A claim provisioned by the built-in local-path provisioner, mounted by real runc pods, and the node's
half of its clean-up (kubelet/local_path_cleanup.py, docs/storage.md).

The agent acts as a real node would: its own node credentials (`--authorization-mode=Node,RBAC` and
NodeRestriction, as kubeadm runs them: it may not watch PVs)
and the clean-up's own identity (`--local-path-kubeconfig`, system:pyk8s:local-path-cleaner). A class of
`pyk8s.io/local-path` with Immediate binding (the provisioner picks the Ready node itself): the claim is
provisioned under the root the kubelet announced on its Node and bound, one pod writes into it, a second
pod started after the first is deleted reads the data back; deleting the claim removes the directory,
then the PV. A volume switched to Retain keeps its data; hand-made PVs carrying the finalizer with a path
outside the root, the root itself, or a symlink out of it (the volume or its parent) are refused and nothing outside the root goes.
"""

from __future__ import annotations

import os
import subprocess

import pytest

from tests.cluster import client_kubeconfig, node_kubeconfig
from tests.e2e.kubelet_harness import Env, busybox_pod, container, import_images, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-local-path-pods"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("local-path")))
    try:
        os.makedirs(e.data, exist_ok=True)
        import_images(e.data)
        e.cluster.extra_args += ["--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"]
        e.cluster.start()
        e.agent.extra += ["--kubeconfig", node_kubeconfig(e.cluster, e.node), "--local-path-kubeconfig",
                          client_kubeconfig(e.cluster, "system:pyk8s:local-path-cleaner", [], "local-path")]
        e.agent.start()
        e.wait(e.node_ready, 60, "node Ready")
        yield e
    finally:
        e.stop()


ROOT_ANN = "storage.pyk8s.io/local-path-root"
FINALIZER = "storage.pyk8s.io/local-path-cleanup"
MERGE = {"Content-Type": "application/merge-patch+json"}


def _root(env: Env) -> str:
    return env.node_obj()["metadata"]["annotations"][ROOT_ANN]


def _claim(env: Env, name: str) -> dict:
    env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": name},
                "spec": {"accessModes": ["ReadWriteOnce"], "storageClassName": "lp-now",
                         "resources": {"requests": {"storage": "64Mi"}}}})
    return env.wait(lambda: (c := env.get(f"/api/v1/namespaces/default/persistentvolumeclaims/{name}"))
                    and c["status"].get("phase") == "Bound" and c, 20, f"claim {name} Bound")


def _hostile_pv(env: Env, name: str, path: str) -> None:
    """A PV made by hand to look like a local-path volume of this node, pointing wherever it likes."""
    env.api("POST", "/api/v1/persistentvolumes", {
        "apiVersion": "v1", "kind": "PersistentVolume",
        "metadata": {"name": name, "finalizers": [FINALIZER],
                     "annotations": {"pv.kubernetes.io/provisioned-by": "pyk8s.io/local-path"}},
        "spec": {"capacity": {"storage": "1Gi"}, "accessModes": ["ReadWriteOnce"],
                 "persistentVolumeReclaimPolicy": "Delete", "hostPath": {"path": path},
                 "nodeAffinity": {"required": {"nodeSelectorTerms": [{"matchExpressions": [
                     {"key": "kubernetes.io/hostname", "operator": "In", "values": [env.node]}]}]}}}})


@pytest.fixture(scope="module", autouse=True)
def lp_class(env):
    env.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "lp-now"},
        "provisioner": "pyk8s.io/local-path", "volumeBindingMode": "Immediate"})


def test_node_announces_its_local_path_root(env):
    assert _root(env) == os.path.join(os.path.abspath(env.data), "storage")


def test_provisioned_claim_keeps_data_across_pods_and_goes_with_its_claim(env):
    claim = _claim(env, "data")
    pv_name = claim["spec"]["volumeName"]
    pv = env.get(f"/api/v1/persistentvolumes/{pv_name}")
    path = os.path.join(_root(env), f"{pv_name}_default_data")
    assert pv["spec"]["hostPath"] == {"path": path, "type": "DirectoryOrCreate"}
    assert pv["spec"]["nodeAffinity"]["required"]["nodeSelectorTerms"][0]["matchExpressions"][0]["values"] == [env.node]
    assert FINALIZER in pv["metadata"]["finalizers"]
    vol = [{"name": "d", "persistentVolumeClaim": {"claimName": "data"}}]
    mount = [{"name": "d", "mountPath": "/data"}]
    env.create(busybox_pod("writer", "", volumes=vol, containers=[
        container("c", "mkdir -p /data/sub && echo kept > /data/sub/note && echo WROTE; sleep 3600",
                  volumeMounts=mount)]))
    env.wait_log("writer", "c", lambda ls: "WROTE" in ls, 30)
    assert open(os.path.join(path, "sub", "note")).read() == "kept\n"
    env.delete_pod("writer", 0)
    env.wait_gone("writer")
    env.create(busybox_pod("reader", "", volumes=vol, containers=[
        container("c", "echo READ=$(cat /data/sub/note); sleep 3600", volumeMounts=mount)]))
    assert "READ=kept" in env.wait_log("reader", "c", lambda ls: "READ=kept" in ls, 30)
    env.delete_pod("reader", 0)
    env.wait_gone("reader")
    # Delete reclaim: the node removes the directory, then its finalizer, and the PV goes
    env.api("DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/data")
    env.wait(lambda: env.get(f"/api/v1/persistentvolumes/{pv_name}") is None, 20, "PV gone")
    assert not os.path.lexists(path)


def test_retained_volume_keeps_its_directory(env):
    pv_name = _claim(env, "kept")["spec"]["volumeName"]
    path = os.path.join(_root(env), f"{pv_name}_default_kept")
    os.makedirs(path)
    with open(os.path.join(path, "f"), "w") as f:
        f.write("x")
    env.api("PATCH", f"/api/v1/persistentvolumes/{pv_name}",
            {"spec": {"persistentVolumeReclaimPolicy": "Retain"}}, MERGE)
    env.wait(lambda: FINALIZER not in (env.get(f"/api/v1/persistentvolumes/{pv_name}")["metadata"]
                                       .get("finalizers") or ()), 20, "clean-up finalizer dropped on Retain")
    env.api("DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/kept")
    env.api("DELETE", f"/api/v1/persistentvolumes/{pv_name}")
    env.wait(lambda: env.get(f"/api/v1/persistentvolumes/{pv_name}") is None, 20, "retained PV deleted")
    assert open(os.path.join(path, "f")).read() == "x"


def test_hostile_volumes_never_remove_anything_outside_the_root(env, tmp_path):
    root = _root(env)
    os.makedirs(root, exist_ok=True)
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "precious").write_text("data")
    link = os.path.join(root, "pvc-link_default_x")
    os.symlink(str(victim), link)
    outside_with_prefix = tmp_path / "pvc-out_default_x"  # named as a volume, but not in the root
    outside_with_prefix.mkdir()
    (outside_with_prefix / "precious").write_text("data")
    (victim / "pvc-nest_default_x").mkdir()  # reached through a linked parent inside the root
    (victim / "pvc-nest_default_x" / "precious").write_text("data")
    os.symlink(str(victim), os.path.join(root, "evil"))
    cases = {"pvc-outside": str(victim), "pvc-link": link, "pvc-out": str(outside_with_prefix), "pvc-root": root,
             "pvc-nest": os.path.join(root, "evil", "pvc-nest_default_x")}
    for name, path in cases.items():
        _hostile_pv(env, name, path)
    for name in cases:
        env.api("DELETE", f"/api/v1/persistentvolumes/{name}")
    for name in cases:
        env.wait(lambda n=name: any(e["reason"] == "VolumeFailedDelete" and e["involvedObject"]["name"] == n
                                    for e in env.api("GET", "/api/v1/namespaces/default/events")["items"]),
                 20, f"{name} refused")
        pv = env.get(f"/api/v1/persistentvolumes/{name}")
        assert pv is not None and FINALIZER in pv["metadata"]["finalizers"]
    assert (victim / "precious").read_text() == "data"
    assert (outside_with_prefix / "precious").read_text() == "data"
    assert (victim / "pvc-nest_default_x" / "precious").read_text() == "data"
    assert os.path.islink(link) and os.path.isdir(root)
    for name in cases:  # the administrator's way out, as docs/storage.md says
        env.api("PATCH", f"/api/v1/persistentvolumes/{name}", {"metadata": {"finalizers": None}}, MERGE)
    os.unlink(link)
    os.unlink(os.path.join(root, "evil"))


def test_cleaner_identity_may_watch_and_patch_volumes_only(env):
    conf = os.path.join(env.cluster.data_dir, "local-path.conf")
    node_conf = os.path.join(env.cluster.data_dir, f"kubelet-{env.node}.conf")

    def can(kubeconfig: str, *what: str) -> str:
        r = subprocess.run(["kubectl", "--kubeconfig", kubeconfig, "auth", "can-i", *what],
                           capture_output=True, text=True, timeout=30)
        return r.stdout.split(" ")[0].strip()

    assert can(node_conf, "watch", "persistentvolumes") == "no"  # why the cleaner has an identity of its own
    assert can(conf, "watch", "persistentvolumes") == "yes"
    assert can(conf, "patch", "persistentvolumes") == "yes"
    for verb, res in (("create", "persistentvolumes"), ("delete", "persistentvolumes"), ("get", "secrets"),
                      ("patch", "nodes"), ("list", "pods")):
        assert can(conf, verb, res) == "no", (verb, res)


def test_read_write_once_pod_claim_serves_one_pod_at_a_time(env):
    """The scheduler's VolumeRestrictions: a second pod on a ReadWriteOncePod claim waits, with upstream's
    message, until the first is gone; then it runs on the same data."""
    env.create({"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "solo"},
                "spec": {"accessModes": ["ReadWriteOncePod"], "storageClassName": "lp-now",
                         "resources": {"requests": {"storage": "16Mi"}}}})
    vol = [{"name": "d", "persistentVolumeClaim": {"claimName": "solo"}}]
    mount = [{"name": "d", "mountPath": "/data"}]
    env.create(busybox_pod("solo-1", "", volumes=vol, containers=[
        container("c", "echo one > /data/who; sleep 3600", volumeMounts=mount)]))
    env.wait_running("solo-1", 30)
    env.create(busybox_pod("solo-2", "", volumes=vol, containers=[
        container("c", "echo READ=$(cat /data/who); sleep 3600", volumeMounts=mount)]))
    msg = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
    env.wait(lambda: any(e["reason"] == "FailedScheduling" and msg in e["message"] for e in env.events("solo-2")),
             20, "FailedScheduling for the second pod")
    assert not env.pod("solo-2")["spec"].get("nodeName")
    env.delete_pod("solo-1", 0)
    env.wait_gone("solo-1")
    assert "READ=one" in env.wait_log("solo-2", "c", lambda ls: "READ=one" in ls, 60)
    env.delete_pod("solo-2", 0)
    env.wait_gone("solo-2")
    env.api("DELETE", "/api/v1/namespaces/default/persistentvolumeclaims/solo")
