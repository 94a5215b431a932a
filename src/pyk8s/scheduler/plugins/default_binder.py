"""DefaultBinder: binds by creating a v1 Binding (POST pods/<name>/binding), through ``Handle.binder``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..framework import CycleState, Plugin, Status
from ..podinfo import PodInfo


def binding_for(pod: PodInfo, node: str) -> Mapping[str, Any]:
    md = pod.pod.get("metadata") or {}
    meta: dict[str, Any] = {"name": pod.name, "namespace": pod.namespace}
    if md.get("uid"):
        meta["uid"] = md["uid"]
    return {"apiVersion": "v1", "kind": "Binding", "metadata": meta, "target": {"kind": "Node", "name": node}}


class DefaultBinder(Plugin):
    name = "DefaultBinder"

    def bind(self, state: CycleState, pod: PodInfo, node: str) -> Status | None:
        if self.handle.binder is None:
            # No API wired: the decision itself is the result; the caller posts binding_for(pod, node).
            return None
        st = self.handle.binder(binding_for(pod, node))
        if st is not None and not st.is_success():
            return st
        return None


__all__ = ["DefaultBinder", "binding_for"]
