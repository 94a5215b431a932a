"""GPUShare's PreBind, asynchronous: the pod's ALIYUN_COM_GPU_MEM_* annotations before its Binding.

As gpushare's extender bind verb: the annotations naming the chosen GPU are on the pod before
it is bound, so the node's device plugin finds them when the kubelet calls Allocate. Every
key is written, so whatever the pod's author put there (another GPU index, ASSIGNED "true")
is replaced by the scheduler's choice.
"""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from ..client import Client
from .plugins.gpu_share import assignment

__all__ = ["annotate_gpu_share"]

PODS = ("", "v1", "pods")


async def annotate_gpu_share(client: Client, state: Any, namespace: str, name: str, uid: str) -> str | None:
    """Write the chosen GPU on the pod; returns an error message or None (nothing to do is None)."""
    a = assignment(state)
    if a is None:
        return None
    body = {"metadata": {"uid": uid, "annotations": a.annotations()}}
    try:
        await client.patch(PODS, name, body, namespace, patch_type="merge")
    except StatusError as e:
        return f"annotating the GPU share: {e.message}"
    return None
