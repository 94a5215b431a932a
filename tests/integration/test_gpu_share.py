"""GPU sharing on simulated GPUs (issue 21): seed 000's gpushare DaemonSet, gpu-mem pods packed onto
single GPUs as gpushare would, a too-big pod Pending with the reason, shares freed on delete, and
`pyk8s gpu inspect`, against a real server, `pyk8s sim --gpus 2 --gpu-memory 16Gi` and real kubectl."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.gpu.inspect import collect
from pyk8s.gpu.share import ANN_ASSIGNED, ANN_DEV, ANN_IDX, ANN_POD, choose_gpu

from ..cluster import REPO, Cluster
from ..ha_helper import wait_for
from ..shared_reference import MANIFESTS

pytestmark = pytest.mark.xdist_group("gpushare")

NS = "gpu-test"


def sim(cluster: Cluster, *args: str) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--kubeconfig", cluster.kubeconfig,
                             "--creating-seconds", "0", "--delete-delay", "0", "--gpus", "2", "--gpu-memory", "16Gi",
                             *args], cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


@pytest.fixture(scope="module")
def gpus(cluster: Cluster) -> Iterator[Cluster]:
    procs = [sim(cluster, "--nodes", "4", "--name-prefix", "gpu-node-"),
             sim(cluster, "--nodes", "1", "--name-prefix", "gpu-master-",
                 "--taints", "node-role.kubernetes.io/master=:NoSchedule")]
    try:
        wait_for(lambda: len(cluster.kubectl("get", "nodes", "-l", "gpushare=true", "-o", "name").stdout.split()) == 5,
                 60, "5 GPU nodes")
        cluster.kubectl("create", "ns", NS)
        yield cluster
    finally:
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", "-o", "json", *args).stdout)


def gpu_pod(name: str, gib: str, annotations: dict[str, str] | None = None) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod",
                       "metadata": {"name": name, "namespace": NS, "annotations": annotations or {}},
                       "spec": {"containers": [{"name": "cuda", "image": "busybox:1.36",
                                                "resources": {"limits": {"aliyun.com/gpu-mem": gib}}}]}})


def run_pod(c: Cluster, name: str, gib: int, **kw: Any) -> tuple[str, int]:
    c.kubectl("create", "-f", "-", input=gpu_pod(name, str(gib), **kw))
    p = wait_for(lambda: (lambda o: o if o["spec"].get("nodeName") else None)(get(c, "-n", NS, "pod", name)),
                 30, f"{name} bound")
    return p["spec"]["nodeName"], int(p["metadata"]["annotations"][ANN_IDX])


def test_node_capacity_and_seed_000_daemonset(gpus: Cluster) -> None:
    c = gpus
    n = get(c, "node", "gpu-node-0")
    assert {k: n["status"]["allocatable"][k] for k in ("nvidia.com/gpu", "aliyun.com/gpu-mem", "aliyun.com/gpu-count")} \
        == {"nvidia.com/gpu": "2", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    c.kubectl("apply", "-f", str(REPO / "examples" / "gpushare-rbac.yaml"))
    c.kubectl("apply", "-f", str(MANIFESTS / "gpushare-ds.yaml"))

    def placed() -> list[str] | None:
        pods = get(c, "-n", "kube-system", "pods", "-l", "app=gpushare")["items"]
        running = sorted(p["spec"]["nodeName"] for p in pods if p["status"].get("phase") == "Running")
        return running if len(running) == 4 else None

    # every node labelled gpushare=true but the one with the master taint (the DaemonSet has no toleration)
    assert wait_for(placed, 60, "gpushare DaemonSet pods") == [f"gpu-node-{i}" for i in range(4)]


def test_shares_pack_onto_single_gpus_and_inspect_shows_them(gpus: Cluster) -> None:
    c = gpus
    # too big for any single GPU although every node has 32 GiB: Pending, and the event says why
    c.kubectl("create", "-f", "-", input=gpu_pod("p20", "20"))

    def reason() -> str | None:
        cond = [x for x in get(c, "-n", NS, "pod", "p20")["status"].get("conditions") or [] if x["type"] == "PodScheduled"]
        return cond[0]["message"] if cond and cond[0]["status"] == "False" else None

    msg = wait_for(reason, 30, "FailedScheduling")
    assert msg == ("0/5 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
                   "4 node(s) had no single GPU with 20 GiB of free memory. preemption: 0/5 nodes are available: "
                   "5 Preemption is not helpful for scheduling."), msg

    first_node, gpu = run_pod(c, "p4", 4)
    assert gpu == 0
    # gpushare's bin-packing: each share goes to the fullest GPU (then node) that still fits it.
    seq = [run_pod(c, name, gib) for name, gib in (("p8", 8), ("p12", 12), ("p4b", 4))]
    assert seq == [(first_node, 0), (first_node, 1), (first_node, 0)]
    second_node, gpu = run_pod(c, "p16", 16)  # 4 GiB left on the first node's GPU 1: another node
    assert second_node != first_node and gpu == 0

    p = get(c, "-n", NS, "pod", "p12")
    ann = p["metadata"]["annotations"]
    assert (ann[ANN_POD], ann[ANN_DEV]) == ("12", "16") and int(ann["ALIYUN_COM_GPU_MEM_ASSUME_TIME"]) > 0
    # the simulated node's device plugin allocated it: assigned, and the env a container would get
    p = wait_for(lambda: (lambda o: o if o["metadata"]["annotations"].get(ANN_ASSIGNED) == "true" else None)(
        get(c, "-n", NS, "pod", "p12")), 20, "ASSIGNED=true")
    env = json.loads(p["metadata"]["annotations"]["gpu.pyk8s.io/allocated-env"])["cuda"]
    assert env == {"NVIDIA_VISIBLE_DEVICES": f"GPU-fake-{first_node}-1", "ALIYUN_COM_GPU_MEM_IDX": "1",
                   "ALIYUN_COM_GPU_MEM_POD": "12", "ALIYUN_COM_GPU_MEM_CONTAINER": "12", "ALIYUN_COM_GPU_MEM_DEV": "16"}

    out = subprocess.run([sys.executable, "-m", "pyk8s.cli", "gpu", "inspect", "--kubeconfig", c.kubeconfig],
                         capture_output=True, text=True, check=True, cwd=str(REPO)).stdout
    rows = {line.split()[0]: line.split() for line in out.splitlines() if line.startswith("gpu-")}
    assert rows[first_node][2:] == ["16/16", "12/16", "28/32"]
    assert rows[second_node][2:] == ["16/16", "0/16", "16/32"]
    assert out.rstrip().endswith("44/160 (27%)")
    detail = subprocess.run([sys.executable, "-m", "pyk8s.cli", "gpu", "inspect", "-d", first_node, "--kubeconfig",
                             c.kubeconfig], capture_output=True, text=True, check=True, cwd=str(REPO)).stdout
    held = {line.split()[0]: line.split()[1:] for line in detail.splitlines() if line.startswith("p")}
    assert held == {"p4": [NS, "4", "0"], "p8": [NS, "8", "0"], "p4b": [NS, "4", "0"], "p12": [NS, "0", "12"]}

    # deleting pods frees their shares: 8 GiB on the first node's GPU 0 is the best fit again
    c.kubectl("-n", NS, "delete", "pod", "p8", "p16", "--wait=true")
    assert run_pod(c, "p8b", 8) == (first_node, 0)


def test_a_pod_cannot_pick_its_gpu_by_annotation(gpus: Cluster) -> None:
    """Pre-set ALIYUN_COM_GPU_MEM_* annotations (a GPU of its liking, a zero share, already 'assigned') are
    replaced by the scheduler's own best-fit choice before the pod is bound, and the node allocates it."""
    c = gpus
    node, gpu = run_pod(c, "sneaky", 2, annotations={ANN_IDX: "1", ANN_ASSIGNED: "true", ANN_POD: "0",
                                                    "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "0"})
    pods = [p for p in get(c, "-n", NS, "pods")["items"] if p["metadata"]["name"] != "sneaky"]
    used = collect([get(c, "node", node)], pods)[0].used
    assert gpu == choose_gpu(used, 16, 2)
    ann = get(c, "-n", NS, "pod", "sneaky")["metadata"]["annotations"]
    assert ann[ANN_POD] == "2" and int(ann["ALIYUN_COM_GPU_MEM_ASSUME_TIME"]) > 0
    # ASSIGNED went back to false, so the node's Allocate found the pod and gave it that GPU
    p = wait_for(lambda: (lambda o: o if "gpu.pyk8s.io/allocated-env" in o["metadata"]["annotations"] else None)(
        get(c, "-n", NS, "pod", "sneaky")), 20, "allocation")
    env = json.loads(p["metadata"]["annotations"]["gpu.pyk8s.io/allocated-env"])["cuda"]
    assert env["NVIDIA_VISIBLE_DEVICES"] == f"GPU-fake-{node}-{gpu}" and env["ALIYUN_COM_GPU_MEM_POD"] == "2"


@pytest.mark.parametrize("gib,message", [
    ("-4", 'spec.containers[0].resources.limits[aliyun.com/gpu-mem]: Invalid value: "-4": '
           "must be greater than or equal to 0"),
    ("1.5", "spec.containers[0].resources.limits[aliyun.com/gpu-mem]: Invalid value: 1500m: must be an integer"),
])
def test_malformed_gpu_mem_requests_are_rejected(gpus: Cluster, gib: str, message: str) -> None:
    r = gpus.kubectl("create", "-f", "-", input=gpu_pod("bad", gib), check=False)
    assert r.returncode == 1 and message in r.stderr, r.stderr


def test_an_absurd_request_stays_pending(gpus: Cluster) -> None:
    c = gpus
    c.kubectl("create", "-f", "-", input=gpu_pod("huge", "1000000"))

    def reason() -> str | None:
        cond = [x for x in get(c, "-n", NS, "pod", "huge")["status"].get("conditions") or [] if x["type"] == "PodScheduled"]
        return cond[0]["message"] if cond else None

    assert "Insufficient aliyun.com/gpu-mem" in wait_for(reason, 30, "FailedScheduling")
    assert not get(c, "-n", NS, "pod", "huge")["spec"].get("nodeName")


def test_a_whole_gpu_pod_gets_its_gpu_recorded(gpus: Cluster) -> None:
    c = gpus
    p = json.loads(gpu_pod("whole", "1"))
    p["spec"]["containers"][0]["resources"] = {"limits": {"nvidia.com/gpu": "2"}}
    c.kubectl("create", "-f", "-", input=json.dumps(p))
    got = wait_for(lambda: (lambda o: o if "gpu.pyk8s.io/allocated-env" in o["metadata"].get("annotations", {})
                            else None)(get(c, "-n", NS, "pod", "whole")), 30, "whole-GPU allocation")
    node = got["spec"]["nodeName"]
    env = json.loads(got["metadata"]["annotations"]["gpu.pyk8s.io/allocated-env"])
    assert env == {"cuda": {"NVIDIA_VISIBLE_DEVICES": f"GPU-fake-{node}-0,GPU-fake-{node}-1"}}
