"""Seed 002's node-affinity and DaemonSet walkthrough on a real kubelet, with the README's image.

The learner's steps, as the seed tells them: a node `node1` that carries the old master taint,
`pyk8s image build busybox` (the README's image: `busybox`, default command `sh`), then
`kubectl apply -f` of the reference manifests as written. test-ds tolerates the taint and runs
on node1; node-affinity-pod (required affinity on `metadata.name In [node1]`) waits Pending on
the untolerated taint, then runs on node1 once the taint is gone; both clean up. The server
runs with kubeadm's `--authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction`,
so the kubelet's own writes pass NodeRestriction throughout.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cluster import REPO
from tests.e2e.kubelet_harness import Env, all_started, requirements
from tests.shared_reference import MANIFESTS

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-seed-manifests-kubelet"), pytest.mark.timeout(240)]

NODE = "node1"  # the name the reference manifest's affinity asks for
AFFINITY = str(MANIFESTS / "node-affinity-pod.yaml")
DAEMONSET = str(MANIFESTS / "test-ds.yaml")
MASTER_TAINT = "node-role.kubernetes.io/master"


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    requirements()
    e = Env(str(tmp_path_factory.mktemp("seed-manifests")), node=NODE)
    # kubeadm's flags, as a learner's cluster has them: the kubelet must live with NodeRestriction
    e.cluster.extra_args += ["--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"]
    try:
        # the README's image, built as the README builds it, into the node's store
        r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "image", "--data-dir", e.data, "build", "busybox"],
                           capture_output=True, text=True, timeout=120, cwd=str(REPO))
        assert r.returncode == 0, r.stdout + r.stderr
        e.start(images=())
        yield e
    finally:
        e.stop()


def test_seed_daemonset_and_node_affinity_run_on_their_node(env: Env) -> None:
    env.kubectl("taint", "node", NODE, f"{MASTER_TAINT}=:NoSchedule")
    try:
        env.kubectl("apply", "-f", DAEMONSET)
        ds_pod = env.wait(lambda: next((p for p in env.pods(selector="name%3Dmy-test") if all_started(p)), None), 90,
                          "the test-ds pod running")
        assert ds_pod["spec"]["nodeName"] == NODE  # it tolerates the master taint, as the seed says
        assert ds_pod["status"]["containerStatuses"][0]["image"].startswith("docker.io/library/busybox")
        env.kubectl("apply", "-f", AFFINITY)
        # the affinity names node1, whose taint it does not tolerate: Pending, as in the seed
        pending = env.wait_pod("node-affinity-pod", lambda p: any(
            c["type"] == "PodScheduled" and c["status"] == "False" and "untolerated taint" in c.get("message", "")
            for c in p["status"].get("conditions", [])), 30, what="node-affinity-pod unschedulable")
        assert not pending["spec"].get("nodeName")
        env.kubectl("taint", "node", NODE, f"{MASTER_TAINT}:NoSchedule-")
        running = env.wait_pod("node-affinity-pod", all_started, 60, what="node-affinity-pod running")
        assert running["spec"]["nodeName"] == NODE
        wide = env.kubectl("get", "pod", "node-affinity-pod", "-o", "wide").splitlines()
        assert wide[1].split()[1:3] == ["1/1", "Running"] and NODE in wide[1].split(), wide
        ds = env.kubectl("get", "ds", "test-ds", "-o", "jsonpath={.status.numberReady}/{.status.desiredNumberScheduled}")
        assert ds == "1/1"
    finally:
        env.kubectl("delete", "-f", AFFINITY, "-f", DAEMONSET, "--ignore-not-found", "--wait=false", check=False)
        env.kubectl("taint", "node", NODE, f"{MASTER_TAINT}:NoSchedule-", check=False)
    env.wait(lambda: not env.pods(), 60, "the seed's pods gone")
    refused = [line for line in env.agent.output if "forbidden" in line.lower()]
    assert not refused, refused  # NodeRestriction refused none of the kubelet's own writes
