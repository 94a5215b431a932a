"""`pyk8s sim --gpus N --gpu-memory Q`: what simulated nodes report, and the allocation they record."""

from __future__ import annotations

import json

import pytest

from pyk8s.sim.gpus import SimGPUs


def test_capacity_and_label() -> None:
    g = SimGPUs(2, "16Gi")
    assert g.capacity() == {"nvidia.com/gpu": "2", "aliyun.com/gpu-mem": "32", "aliyun.com/gpu-count": "2"}
    assert g.labels() == {"gpushare": "true"}


@pytest.mark.parametrize("count,memory", [(0, "16Gi"), (2, "1536Mi"), (2, "0"), (2, "lots"), (100000, "16Gi")])
def test_bad_specs_are_refused(count: int, memory: str) -> None:
    with pytest.raises(ValueError):
        SimGPUs(count, memory)


def _pod(ann: dict[str, str]) -> dict:
    return {"metadata": {"name": "p", "annotations": ann}, "spec": {"nodeName": "n", "containers": [
        {"name": "a", "resources": {"limits": {"aliyun.com/gpu-mem": "3"}}}, {"name": "sidecar"}]}}


def test_allocation_only_for_pods_the_scheduler_placed() -> None:
    g = SimGPUs(2, "16Gi")
    ok = {"ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_ASSIGNED": "false", "ALIYUN_COM_GPU_MEM_DEV": "16"}
    patch = g.allocation_patch(_pod(ok), "n")
    assert patch is not None
    ann = patch["metadata"]["annotations"]
    assert ann["ALIYUN_COM_GPU_MEM_ASSIGNED"] == "true"
    assert json.loads(ann["gpu.pyk8s.io/allocated-env"]) == {"a": {
        "NVIDIA_VISIBLE_DEVICES": "GPU-fake-n-1", "ALIYUN_COM_GPU_MEM_IDX": "1", "ALIYUN_COM_GPU_MEM_POD": "3",
        "ALIYUN_COM_GPU_MEM_CONTAINER": "3", "ALIYUN_COM_GPU_MEM_DEV": "16"}}
    assert g.allocation_patch(_pod({**ok, "ALIYUN_COM_GPU_MEM_ASSIGNED": "true"}), "n") is None  # already done
    assert g.allocation_patch(_pod({**ok, "ALIYUN_COM_GPU_MEM_IDX": "2"}), "n") is None  # no such GPU
    assert g.allocation_patch(_pod({"ALIYUN_COM_GPU_MEM_ASSIGNED": "false"}), "n") is None  # never placed


def _whole_pod(name: str, n: int, env: dict | None = None) -> dict:
    ann = {"gpu.pyk8s.io/allocated-env": json.dumps(env)} if env is not None else {}
    return {"metadata": {"name": name, "annotations": ann}, "spec": {"nodeName": "n", "containers": [
        {"name": "c", "resources": {"limits": {"nvidia.com/gpu": str(n)}}}]}, "status": {"phase": "Running"}}


def test_whole_gpus_are_the_lowest_free_ones() -> None:
    g = SimGPUs(3, "16Gi")
    holder = _whole_pod("h", 1, {"c": {"NVIDIA_VISIBLE_DEVICES": "GPU-fake-n-0"}})
    patch = g.allocation_patch(_whole_pod("p", 2), "n", [holder])
    assert patch is not None
    env = json.loads(patch["metadata"]["annotations"]["gpu.pyk8s.io/allocated-env"])
    assert env == {"c": {"NVIDIA_VISIBLE_DEVICES": "GPU-fake-n-1,GPU-fake-n-2"}}
    assert g.allocation_patch(_whole_pod("q", 3), "n", [holder]) is None  # only 2 free
    done = {**holder, "status": {"phase": "Succeeded"}}
    assert g.allocation_patch(_whole_pod("q", 3), "n", [done]) is not None  # a finished pod's GPU is free
