"""VolumeBinding's PreBind, asynchronous: the API writes Reserve decided, then the wait for the claims.

As upstream's volume binder (BindPodVolumes): a static PV chosen for a claim gets its
``claimRef`` (and ``pv.kubernetes.io/bound-by-controller``) so the PV controller completes the
binding; a claim to provision gets ``volume.kubernetes.io/selected-node`` so its provisioner
creates the volume on that node. Then the pod waits (at most ``bindTimeoutSeconds``) until
every claim is fully bound, reading the scheduler's informer store (no API polling). A claim
whose selected-node annotation disappears (the provisioner gave up on that node) fails the
binding so the pod is rescheduled, as upstream.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Mapping
from typing import Any

from ..api.errors import StatusError
from ..client import Client
from .events import PV, PVC, STORAGE_CLASS, ActionType, ClusterEvent
from .plugins.volume_binding import (
    ANN_BOUND_BY_CONTROLLER,
    ANN_SELECTED_NODE,
    STATE_KEY,
    PodVolumes,
    fully_bound,
)

__all__ = ["bind_pod_volumes", "wire_storage_events", "PVS", "PVCS"]

PVS = ("", "v1", "persistentvolumes")
PVCS = ("", "v1", "persistentvolumeclaims")
POLL = 0.05


async def bind_pod_volumes(client: Client, state: Any, node: str, lookup: Callable[[str, str], Mapping[str, Any] | None],
                           timeout: float) -> str | None:
    """Run the volume half of the binding cycle; returns an error message or None."""
    pv: PodVolumes | None = state.read(STATE_KEY)
    if pv is None:
        return None
    waits = pv.claims_to_wait_for()
    if not waits:
        return None
    try:
        for claim, vol in pv.static_bindings:
            cmd = claim.get("metadata") or {}
            ref = {"kind": "PersistentVolumeClaim", "apiVersion": "v1", "namespace": cmd.get("namespace"),
                   "name": cmd.get("name"), "uid": cmd.get("uid")}
            await client.patch(PVS, (vol.get("metadata") or {}).get("name", ""),
                               {"metadata": {"annotations": {ANN_BOUND_BY_CONTROLLER: "yes"},
                                             "resourceVersion": (vol.get("metadata") or {}).get("resourceVersion")},
                                "spec": {"claimRef": ref}}, patch_type="merge")
        for claim in pv.provisions:
            cmd = claim.get("metadata") or {}
            if (cmd.get("annotations") or {}).get(ANN_SELECTED_NODE) == node:
                continue
            await client.patch(PVCS, cmd.get("name", ""), {"metadata": {"annotations": {ANN_SELECTED_NODE: node}}},
                               cmd.get("namespace"), patch_type="merge")
    except StatusError as e:
        return f"binding volumes: {e.message}"
    deadline = time.monotonic() + timeout
    provisioned = {f"{(c.get('metadata') or {}).get('namespace')}/{(c.get('metadata') or {}).get('name')}"
                   for c in pv.provisions}
    seen: set[str] = set()  # provisioned claims the informer has shown with our annotation
    while True:
        pending = False
        for c in waits:
            md = c.get("metadata") or {}
            key = f"{md.get('namespace')}/{md.get('name')}"
            cur = lookup(md.get("namespace", ""), md.get("name", ""))
            if cur is None or (cur.get("metadata") or {}).get("uid") != md.get("uid"):
                return f'binding volumes: persistentvolumeclaim "{md.get("name")}" not found'
            if fully_bound(cur):
                continue
            sel = ((cur.get("metadata") or {}).get("annotations") or {}).get(ANN_SELECTED_NODE)
            if key in provisioned:
                if sel == node:
                    seen.add(key)
                elif sel is not None:
                    return f'binding volumes: selectedNode annotation value "{sel}" not set to scheduled node "{node}"'
                elif key in seen:  # the provisioner gave up on this node: reschedule
                    return f'binding volumes: selectedNode annotation reset for PVC "{md.get("name")}"'
            pending = True
        if not pending:
            return None
        if time.monotonic() >= deadline:
            return "binding volumes: context deadline exceeded"
        await asyncio.sleep(POLL)


def wire_storage_events(queue: Any, pvcs: Any, pvs: Any, classes: Any) -> None:
    """Storage changes move the pods VolumeBinding rejected back to the active queue."""
    for inf, resource, label in ((pvcs, PVC, "Pvc"), (pvs, PV, "Pv"), (classes, STORAGE_CLASS, "StorageClass")):
        add = ClusterEvent(resource, ActionType.ADD, f"{label}Add")
        upd = ClusterEvent(resource, ActionType.UPDATE, f"{label}Update")
        inf.add_handlers(lambda o, e=add: queue.on_event(e, None, o),
                         lambda o, n, e=upd: queue.on_event(e, o, n), None)
