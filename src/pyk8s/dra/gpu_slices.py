"""The ResourceSlice our GPU DRA driver (`gpu.pyk8s.io`) publishes for a node.

One slice per node (pool = the node's name), with two kinds of device per GPU:

- `gpu-<i>`: the whole GPU (attributes `type: gpu`, `uuid`, `index`, `model`; capacity `memory`);
- `gpu-<i>-share-<k>`: a memory-sized share of it (`type: share`, `parent: <uuid>`, the same
  `uuid`/`index`/`model`; capacity `memory: <share size>`).

v1.33 had no way to say that a whole GPU and its shares are the same silicon except the
partitionable-devices fields (KEP-4815): each GPU is a counter set `gpu-<i>` with its memory,
the whole device consumes all of it and each share its size, so the allocator never hands out a
GPU and one of its shares at once. A claim for an 8Gi share of one GPU asks two 4Gi shares of
class `gpu-share.pyk8s.io` with `matchAttribute: gpu.pyk8s.io/parent` (docs/dra.md).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..gpu.discovery import GPU

__all__ = ["DRIVER", "slice_for_node", "slice_name", "device_classes", "DEFAULT_SHARE_BYTES"]

DRIVER = "gpu.pyk8s.io"
GIB = 1 << 30
DEFAULT_SHARE_BYTES = 4 * GIB


def _qty(n: int) -> str:
    return f"{n // GIB}Gi" if n % GIB == 0 else str(n)


def slice_name(node: str) -> str:
    return f"{node}-{DRIVER}"


def slice_for_node(node: str, gpus: Iterable[GPU], share_bytes: int = DEFAULT_SHARE_BYTES,
                   generation: int = 1) -> dict[str, Any]:
    devices: list[dict[str, Any]] = []
    counters: list[dict[str, Any]] = []
    for g in gpus:
        base = {"uuid": {"string": g.uuid}, "index": {"int": g.index}, "model": {"string": g.name[:64]}}
        cset = f"gpu-{g.index}"
        counters.append({"name": cset, "counters": {"memory": {"value": _qty(g.memory_bytes)}}})
        devices.append({"name": f"gpu-{g.index}", "basic": {
            "attributes": {**base, "type": {"string": "gpu"}},
            "capacity": {"memory": {"value": _qty(g.memory_bytes)}},
            "consumesCounters": [{"counterSet": cset, "counters": {"memory": {"value": _qty(g.memory_bytes)}}}]}})
        if share_bytes <= 0:
            continue
        for k in range(g.memory_bytes // share_bytes):
            devices.append({"name": f"gpu-{g.index}-share-{k}", "basic": {
                "attributes": {**base, "type": {"string": "share"}, "parent": {"string": g.uuid}},
                "capacity": {"memory": {"value": _qty(share_bytes)}},
                "consumesCounters": [{"counterSet": cset, "counters": {"memory": {"value": _qty(share_bytes)}}}]}})
    return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "ResourceSlice",
            "metadata": {"name": slice_name(node)},
            "spec": {"driver": DRIVER, "nodeName": node,
                     "pool": {"name": node, "generation": generation, "resourceSliceCount": 1},
                     "sharedCounters": counters, "devices": devices}}


def device_classes() -> list[dict[str, Any]]:
    """The DeviceClasses users pick from: whole GPUs and shares."""
    def cls(name: str, kind: str) -> dict[str, Any]:
        return {"apiVersion": "resource.k8s.io/v1beta1", "kind": "DeviceClass", "metadata": {"name": name},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}" && '
                                                              f'device.attributes["{DRIVER}"].type == "{kind}"'}}]}}
    return [cls("gpu.pyk8s.io", "gpu"), cls("gpu-share.pyk8s.io", "share")]
