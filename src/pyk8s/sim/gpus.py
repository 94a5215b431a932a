"""Simulated GPUs on simulated nodes: capacity as the GPU device plugins report it, and the
allocation a real plugin's Allocate would make, recorded on the pod.

A node with `--gpus 2 --gpu-memory 16Gi` reports `nvidia.com/gpu: 2`, `aliyun.com/gpu-mem: 32`
(GiB, as gpushare with --memory-unit=GiB) and `aliyun.com/gpu-count: 2`, and carries the label
`gpushare=true` that seed 000's DaemonSet selects. A pod bound there with the scheduler's
`ALIYUN_COM_GPU_MEM_ASSIGNED=false` gets `ALIYUN_COM_GPU_MEM_ASSIGNED=true` and, in the
annotation `gpu.pyk8s.io/allocated-env`, per container the env a container would see
(`NVIDIA_VISIBLE_DEVICES`, `ALIYUN_COM_GPU_MEM_*`), since simulated containers have none. A pod
asking for whole GPUs (`nvidia.com/gpu`) gets the node's lowest-index GPUs no other such pod holds,
recorded the same way.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from ..gpu.allocate import ENV_ANNOTATION, share_env, whole_gpu_env
from ..gpu.discovery import GPU, fake_gpus
from ..gpu.share import (
    ANN_ASSIGNED,
    ENV_VISIBLE_DEVICES,
    GIB,
    NODE_LABEL,
    RESOURCE_COUNT,
    RESOURCE_GPU,
    RESOURCE_MEM,
    assigned_index,
    container_gpu_mem,
    is_active,
    pod_gpu_mem,
)

__all__ = ["SimGPUs", "RESOURCESLICES", "DEVICECLASSES"]

RESOURCESLICES = ("resource.k8s.io", "v1beta1", "resourceslices")
DEVICECLASSES = ("resource.k8s.io", "v1beta1", "deviceclasses")


class SimGPUs:
    """The GPUs every node of one Simulator has."""

    def __init__(self, count: int, memory: str) -> None:
        self.spec = f"{count}x{memory}"
        probe = fake_gpus(self.spec, "probe")  # validates count and memory
        if probe[0].memory_bytes % GIB:
            raise ValueError(f'invalid --gpu-memory "{memory}": must be a whole number of GiB')
        self.count = count
        self.gib = probe[0].memory_bytes // GIB

    def capacity(self) -> dict[str, str]:
        return {RESOURCE_GPU: str(self.count), RESOURCE_MEM: str(self.count * self.gib),
                RESOURCE_COUNT: str(self.count)}

    def labels(self) -> dict[str, str]:
        return {NODE_LABEL: "true"}

    def gpus(self, node: str) -> list[GPU]:
        return fake_gpus(self.spec, node)

    def allocation_patch(self, pod: Mapping[str, Any], node: str,
                         others: Iterable[Mapping[str, Any]] = ()) -> dict[str, Any] | None:
        """The annotations an Allocate on `node` would leave on `pod`; None when there is none to make.
        `others`: the node's other pods, whose whole GPUs are taken."""
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        if pod_gpu_mem(pod) <= 0:
            return self._whole_gpu_patch(pod, node, others) if ENV_ANNOTATION not in ann else None
        if ann.get(ANN_ASSIGNED) != "false":
            return None
        idx = assigned_index(pod)
        gpus = self.gpus(node)
        if idx is None or idx >= len(gpus):
            return None  # not placed by a gpushare scheduler: a real plugin finds no candidate either
        env = {c.get("name", ""): share_env(pod, gpus[idx].uuid, container_gpu_mem(c))
               for c in (pod.get("spec") or {}).get("containers") or () if container_gpu_mem(c) > 0}
        return {"metadata": {"annotations": {ANN_ASSIGNED: "true",
                                             ENV_ANNOTATION: json.dumps(env, sort_keys=True, separators=(",", ":"))}}}

    async def publish_slice(self, client: Any, node: str) -> None:
        """What our GPU DRA driver publishes for the node (dra/gpu_slices.py), and its DeviceClasses."""
        from ..dra.gpu_slices import device_classes, slice_for_node

        for obj in (*device_classes(), slice_for_node(node, self.gpus(node))):
            await client.create_or_get(RESOURCESLICES if obj["kind"] == "ResourceSlice" else DEVICECLASSES, obj)

    async def delete_slice(self, client: Any, node: str) -> None:
        from ..dra.gpu_slices import slice_name

        await client.delete_ignore_missing(RESOURCESLICES, slice_name(node))

    def _whole_gpu_patch(self, pod: Mapping[str, Any], node: str,
                         others: Iterable[Mapping[str, Any]]) -> dict[str, Any] | None:
        """nvidia.com/gpu: the lowest-index free GPUs, as the kubelet's device manager hands devices out."""
        wants = [(c.get("name", ""), _whole(c)) for c in (pod.get("spec") or {}).get("containers") or ()]
        if not any(n for _, n in wants):
            return None
        taken: set[str] = set()
        for o in others:
            oann = (o.get("metadata") or {}).get("annotations") or {}
            if pod_gpu_mem(o) > 0 or not is_active(o) or ENV_ANNOTATION not in oann:
                continue
            try:
                envs = json.loads(oann[ENV_ANNOTATION])
            except ValueError:
                continue
            for e in envs.values():
                taken.update(x for x in str(e.get(ENV_VISIBLE_DEVICES, "")).split(",") if x)
        free = [g.uuid for g in self.gpus(node) if g.uuid not in taken]
        env: dict[str, dict[str, str]] = {}
        for name, n in wants:
            if n <= 0:
                continue
            if n > len(free):
                return None  # over-committed (the scheduler would not do it): a real node fails admission
            env[name], free = whole_gpu_env(free[:n]), free[n:]
        return {"metadata": {"annotations": {ENV_ANNOTATION: json.dumps(env, sort_keys=True, separators=(",", ":"))}}}


def _whole(container: Mapping[str, Any]) -> int:
    res = container.get("resources") or {}
    try:
        return max(int(str((res.get("limits") or {}).get(RESOURCE_GPU) or (res.get("requests") or {}).get(RESOURCE_GPU)
                           or 0)), 0)
    except ValueError:
        return 0
