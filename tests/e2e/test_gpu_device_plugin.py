"""`pyk8s device-plugin gpu --fake-gpus 2x16Gi` with a real kubelet and runc pods: the plugin registers
nvidia.com/gpu, aliyun.com/gpu-mem and aliyun.com/gpu-count over the v1beta1 gRPC API, the scheduler's
GPUShare plugin places a gpu-mem pod on one GPU, the plugin's Allocate finds that pod, marks it assigned
and the container sees only that GPU and its share in env; a whole-GPU pod sees its GPU's UUID; the
plugin registers again after a kubelet restart."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from pyk8s.gpu.share import ANN_ASSIGNED
from tests.cluster import REPO
from tests.e2e.kubelet_harness import Env, busybox_pod, container, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc"), pytest.mark.timeout(180)]


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
    e, _ = env
    e.wait(lambda: allocatable(e) == WANT, 30, "GPU resources in node allocatable")
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


def test_registers_again_after_a_kubelet_restart(env: tuple[Env, Plugin]) -> None:
    e, _ = env
    e.agent.stop()
    e.agent.start()
    e.wait(lambda: e.node_ready(), 60, "node Ready again")
    script = "env | grep -E '^(NVIDIA|ALIYUN)' | sort; echo DONE; sleep 3600"
    e.create(busybox_pod("after", script, containers=[container(
        "c", script, resources={"limits": {"aliyun.com/gpu-mem": "8"}})]))
    e.wait_running("after", 90)
    assert env_of(e, "after")["ALIYUN_COM_GPU_MEM_POD"] == "8"
    assert allocatable(e) == WANT
