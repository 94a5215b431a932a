"""`pyk8s device-plugin gpu --fake-gpus 2x16Gi` with a real kubelet and runc pods: the plugin registers
nvidia.com/gpu, aliyun.com/gpu-mem and aliyun.com/gpu-count over the v1beta1 gRPC API, the scheduler's
GPUShare plugin places a gpu-mem pod on one GPU, the plugin's Allocate finds that pod, marks it assigned
and the container sees only that GPU and its share in env; a whole-GPU pod sees its GPU's UUID; the
plugin registers again after a kubelet restart."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from pyk8s.gpu.share import ANN_ASSIGNED
from tests.cluster import REPO
from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-gpu-device-plugin"), pytest.mark.timeout(180)]


class Plugin:
    def __init__(self, env: Env) -> None:
        self.env = env
        self.dir = os.path.join(env.data, "kubelet", "device-plugins")
        self.proc: subprocess.Popen[str] | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyk8s.cli", "device-plugin", "gpu", "--fake-gpus", "2x16Gi", "--node-name",
             self.env.node, "--device-plugin-path", self.dir, "--kubeconfig", self.env.cluster.kubeconfig, "--v", "2"],
            cwd=str(REPO), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True)

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Env, Plugin]]:
    requirements()
    e = Env(str(tmp_path_factory.mktemp("gpu-plugin")))
    plugin = Plugin(e)
    try:
        e.start()
        plugin.start()
        yield e, plugin
    finally:
        plugin.stop()
        e.stop()


def allocatable(e: Env) -> dict[str, str]:
    a = e.node_obj()["status"].get("allocatable") or {}
    return {k: v for k, v in a.items() if k.startswith(("nvidia.com/", "aliyun.com/"))}


WANT = {"nvidia.com/gpu": "2", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}


def env_of(e: Env, name: str) -> dict[str, str]:
    lines = e.wait_log(name, "c", lambda ls: any(x.startswith("DONE") for x in ls), 30)
    return dict(x.split("=", 1) for x in lines if "=" in x)


def test_registers_and_a_share_reaches_the_container(env: tuple[Env, Plugin]) -> None:
    e, plugin = env
    e.wait(lambda: allocatable(e) == WANT, 30, "GPU resources in node allocatable")
    socks = sorted(f for f in os.listdir(plugin.dir) if f.startswith("pyk8s-gpu-"))
    assert socks == ["pyk8s-gpu-count.sock", "pyk8s-gpu-mem.sock", "pyk8s-gpu-nvidia.sock"]
    assert all(os.stat(os.path.join(plugin.dir, f)).st_mode & 0o777 == 0o600 for f in socks)  # reaching it is the authn
    script = "env | grep -E '^(NVIDIA|ALIYUN)' | sort; echo DONE; sleep 3600"
    e.create(busybox_pod("share", script, containers=[container(
        "c", script, resources={"limits": {"aliyun.com/gpu-mem": "4"}})]))
    p = e.wait_running("share", 60)
    ann = p["metadata"]["annotations"]
    assert ann[ANN_ASSIGNED] == "true" and ann["ALIYUN_COM_GPU_MEM_IDX"] == "0"
    assert env_of(e, "share") == {
        "NVIDIA_VISIBLE_DEVICES": f"GPU-fake-{e.node}-0", "ALIYUN_COM_GPU_MEM_IDX": "0",
        "ALIYUN_COM_GPU_MEM_POD": "4", "ALIYUN_COM_GPU_MEM_CONTAINER": "4", "ALIYUN_COM_GPU_MEM_DEV": "16"}


def test_a_whole_gpu_gets_its_uuid(env: tuple[Env, Plugin]) -> None:
    e, _ = env
    script = "env | grep -E '^NVIDIA' | sort; echo DONE; sleep 3600"
    e.create(busybox_pod("whole", script, containers=[container(
        "c", script, resources={"limits": {"nvidia.com/gpu": "1"}})]))
    e.wait_running("whole", 60)
    got = env_of(e, "whole")["NVIDIA_VISIBLE_DEVICES"]
    assert got in (f"GPU-fake-{e.node}-0", f"GPU-fake-{e.node}-1")


def test_a_pod_bound_by_hand_cannot_overcommit_a_gpu(env: tuple[Env, Plugin]) -> None:
    """A pod that skips the scheduler (spec.nodeName) with forged annotations naming GPU 0, which holds
    the 4 GiB share above, asks for all 16 GiB of it: the plugin refuses, the kubelet fails the pod."""
    e, _ = env
    forged = {"ALIYUN_COM_GPU_MEM_IDX": "0", "ALIYUN_COM_GPU_MEM_ASSIGNED": "false",
              "ALIYUN_COM_GPU_MEM_ASSUME_TIME": "1", "ALIYUN_COM_GPU_MEM_POD": "16", "ALIYUN_COM_GPU_MEM_DEV": "16"}
    p = busybox_pod("forged", "sleep 3600", nodeName=e.node, containers=[container(
        "c", "sleep 3600", resources={"limits": {"aliyun.com/gpu-mem": "16"}})])
    p["metadata"]["annotations"] = forged
    e.create(p)
    got = e.wait_pod("forged", lambda x: x["status"].get("phase") == "Failed", 30)
    assert got["status"]["reason"] == "UnexpectedAdmissionError"
    assert "GPU 0 of node" in got["status"]["message"] and "has 12 GiB free, the pod asks for 16 GiB" in \
        got["status"]["message"], got["status"]["message"]
    e.delete_pod("forged")


def test_registers_again_after_a_kubelet_restart(env: tuple[Env, Plugin]) -> None:
    e, plugin = env
    e.agent.stop()
    restarted = time.time()
    e.agent.start()
    e.wait(lambda: e.node_ready(), 60, "node Ready again")

    def registered_again() -> bool:
        # the new kubelet removed the plugin's sockets; the plugin serves anew and registers again. Until
        # then the kubelet has no devices and would fail a GPU pod's admission (as upstream's does)
        socks = [os.path.join(plugin.dir, f"pyk8s-gpu-{n}.sock") for n in ("count", "mem", "nvidia")]
        return all(os.path.exists(f) and os.stat(f).st_mtime > restarted for f in socks) and allocatable(e) == WANT

    e.wait(registered_again, 60, "the plugin registered with the new kubelet")
    script = "env | grep -E '^(NVIDIA|ALIYUN)' | sort; echo DONE; sleep 3600"
    e.create(busybox_pod("after", script, containers=[container(
        "c", script, resources={"limits": {"aliyun.com/gpu-mem": "8"}})]))
    e.wait_running("after", 90)
    assert env_of(e, "after")["ALIYUN_COM_GPU_MEM_POD"] == "8"
    # the node's status catches up at its next sync after the registration (the pod above was admitted by then)
    e.wait(lambda: allocatable(e) == WANT, 30, "allocatable back to the plugin's devices")
