"""What a GPU device plugin's Allocate gives a container, as pure functions.

gpu-mem (gpushare): the kubelet asks for N of the node's one-GiB fake devices; the plugin
finds which pod this is (the Pending pod on this node asking for N GiB whose annotations say
ASSIGNED=false, the oldest assume time first, as gpushare), exposes only the GPU the
scheduler chose and tells the container its share in env. Whole GPUs (nvidia.com/gpu): the
device IDs are the GPUs' UUIDs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from .discovery import GPU
from .share import (
    ANN_ASSIGNED,
    ANN_ASSUME_TIME,
    ANN_DEV,
    ANN_IDX,
    ANN_POD,
    ENV_CONTAINER,
    ENV_VISIBLE_DEVICES,
    assigned_index,
    pod_gpu_mem,
)

__all__ = ["mem_device_ids", "mem_device_gpu", "candidate_pod", "share_env", "whole_gpu_env", "ENV_ANNOTATION"]

# `pyk8s sim` records the env a real plugin's Allocate would give, per container, as JSON here.
ENV_ANNOTATION = "gpu.pyk8s.io/allocated-env"


def mem_device_ids(gpus: Sequence[GPU], gib: int = 1 << 30) -> list[tuple[str, int]]:
    """One fake device per GiB of each healthy GPU, named as gpushare: `<uuid>-_-<n>`; with the GPU index."""
    out = []
    for g in gpus:
        for n in range(g.memory_bytes // gib):
            out.append((f"{g.uuid}-_-{n}", g.index))
    return out


def mem_device_gpu(device_id: str) -> str:
    """The GPU UUID a gpu-mem device ID belongs to."""
    return device_id.rsplit("-_-", 1)[0]


def _assume_time(pod: Mapping[str, Any]) -> int:
    try:
        return int(((pod.get("metadata") or {}).get("annotations") or {}).get(ANN_ASSUME_TIME) or 0)
    except ValueError:
        return 0


def candidate_pod(pods: Iterable[Mapping[str, Any]], node: str, request: int) -> Mapping[str, Any] | None:
    """The pod an Allocate of `request` GiB on `node` is for (gpushare's getCandidatePods + match)."""
    found = []
    for p in pods:
        md = p.get("metadata") or {}
        ann = md.get("annotations") or {}
        if (p.get("spec") or {}).get("nodeName") != node or md.get("deletionTimestamp"):
            continue
        if (p.get("status") or {}).get("phase") not in (None, "Pending"):
            continue
        if ann.get(ANN_ASSIGNED) != "false" or assigned_index(p) is None or pod_gpu_mem(p) != request:
            continue
        found.append(p)
    found.sort(key=_assume_time)
    return found[0] if found else None


def share_env(pod: Mapping[str, Any], gpu_uuid: str, container_gib: int) -> dict[str, str]:
    """A container's env for its gpu-mem share on the GPU `gpu_uuid`."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return {
        ENV_VISIBLE_DEVICES: gpu_uuid,
        ANN_IDX: str(ann.get(ANN_IDX, "")),
        ANN_POD: str(ann.get(ANN_POD) or pod_gpu_mem(pod)),
        ENV_CONTAINER: str(container_gib),
        ANN_DEV: str(ann.get(ANN_DEV, "")),
    }


def whole_gpu_env(uuids: Sequence[str]) -> dict[str, str]:
    return {ENV_VISIBLE_DEVICES: ",".join(uuids)}
