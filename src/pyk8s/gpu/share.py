"""gpushare's conventions: resource names, pod annotations, per-GPU accounting, the GPU choice.

As Alibaba's gpushare (device plugin + scheduler extender): a node offers
`aliyun.com/gpu-mem` (its GPUs' memory in GiB, all GPUs together) and `aliyun.com/gpu-count`;
every GPU of a node has the same memory (gpu-mem / gpu-count). A pod asks for
`aliyun.com/gpu-mem: N` and the scheduler picks one GPU with N GiB free (a share is never
split across GPUs), recording the choice in annotations the device plugin reads back at
Allocate:

    ALIYUN_COM_GPU_MEM_IDX          the GPU index
    ALIYUN_COM_GPU_MEM_POD          the pod's request (GiB)
    ALIYUN_COM_GPU_MEM_DEV          that GPU's memory (GiB)
    ALIYUN_COM_GPU_MEM_ASSUME_TIME  when the scheduler chose (Unix ns)
    ALIYUN_COM_GPU_MEM_ASSIGNED     "false" until the device plugin allocated it, then "true"

Everything here is pure; the scheduler plugin, the device plugin, `pyk8s sim` and
`pyk8s gpu inspect` share it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

__all__ = [
    "RESOURCE_GPU", "RESOURCE_MEM", "RESOURCE_COUNT", "NODE_LABEL",
    "ANN_IDX", "ANN_POD", "ANN_DEV", "ANN_ASSUME_TIME", "ANN_ASSIGNED", "ENV_CONTAINER", "ENV_VISIBLE_DEVICES",
    "GIB", "pod_gpu_mem", "container_gpu_mem", "node_gpus", "assigned_index", "gpu_usage", "choose_gpu",
    "assignment_annotations", "is_active",
]

RESOURCE_GPU = "nvidia.com/gpu"
RESOURCE_MEM = "aliyun.com/gpu-mem"
RESOURCE_COUNT = "aliyun.com/gpu-count"
NODE_LABEL = "gpushare"  # seed 000's DaemonSet selects nodes labelled gpushare=true

ANN_IDX = "ALIYUN_COM_GPU_MEM_IDX"
ANN_POD = "ALIYUN_COM_GPU_MEM_POD"
ANN_DEV = "ALIYUN_COM_GPU_MEM_DEV"
ANN_ASSUME_TIME = "ALIYUN_COM_GPU_MEM_ASSUME_TIME"
ANN_ASSIGNED = "ALIYUN_COM_GPU_MEM_ASSIGNED"
ENV_CONTAINER = "ALIYUN_COM_GPU_MEM_CONTAINER"
ENV_VISIBLE_DEVICES = "NVIDIA_VISIBLE_DEVICES"

GIB = 1 << 30


def _int(v: Any) -> int:
    try:
        return int(str(v))
    except (TypeError, ValueError):
        return 0


def container_gpu_mem(container: Mapping[str, Any]) -> int:
    """A container's gpu-mem: its limit (extended resources' requests must equal their limits)."""
    res = container.get("resources") or {}
    return max(_int((res.get("limits") or {}).get(RESOURCE_MEM) or (res.get("requests") or {}).get(RESOURCE_MEM) or 0), 0)


def pod_gpu_mem(pod: Mapping[str, Any]) -> int:
    """The GiB of GPU memory a pod asks for, over its containers (gpushare sums them)."""
    spec = pod.get("spec") or {}
    return sum(container_gpu_mem(c) for c in spec.get("containers") or ())


def node_gpus(node: Mapping[str, Any]) -> tuple[int, int]:
    """(GPU count, GiB per GPU) from the node's capacity; (0, 0) for a node without shared GPUs."""
    cap = (node.get("status") or {}).get("capacity") or {}
    count = _int(cap.get(RESOURCE_COUNT))
    mem = _int(cap.get(RESOURCE_MEM))
    if mem <= 0:
        return 0, 0
    if count <= 0:
        count = 1  # gpu-mem without gpu-count: one GPU holds it all (the scheduler plugin agrees)
    return count, mem // count


def assigned_index(pod: Mapping[str, Any]) -> int | None:
    """The GPU index recorded on a pod, or None (absent or not a number)."""
    v = ((pod.get("metadata") or {}).get("annotations") or {}).get(ANN_IDX)
    if v is None:
        return None
    try:
        i = int(v)
    except ValueError:
        return None
    return i if i >= 0 else None


def is_active(pod: Mapping[str, Any]) -> bool:
    """A pod that holds its share: bound and not finished."""
    return bool((pod.get("spec") or {}).get("nodeName")) and (pod.get("status") or {}).get("phase") not in (
        "Succeeded", "Failed")


def gpu_usage(count: int, shares: Iterable[tuple[int | None, int]]) -> list[int]:
    """GiB used per GPU index from (index, GiB) shares; shares without a valid index are left out."""
    used = [0] * count
    for idx, mem in shares:
        if idx is not None and 0 <= idx < count:
            used[idx] += mem
    return used


def choose_gpu(used: list[int], per_gpu: int, request: int) -> int | None:
    """gpushare's choice: the GPU that fits the request with the least memory left (bin-packing),
    the lowest index among equals; None when no single GPU has `request` GiB free."""
    best: int | None = None
    best_left = 0
    for i, u in enumerate(used):
        left = per_gpu - u - request
        if left >= 0 and (best is None or left < best_left):
            best, best_left = i, left
    return best


def assignment_annotations(idx: int, request: int, per_gpu: int, now_ns: int) -> dict[str, str]:
    return {
        ANN_IDX: str(idx),
        ANN_POD: str(request),
        ANN_DEV: str(per_gpu),
        ANN_ASSUME_TIME: str(now_ns),
        ANN_ASSIGNED: "false",
    }
