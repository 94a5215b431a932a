"""DynamicResources' informers and PreBind, asynchronous: the claim writes Reserve decided.

As upstream's plugin PreBind (v1.33): for each claim the pod uses, an allocation decided in
Reserve is written first as the `resource.kubernetes.io/delete-protection` finalizer (an
update of the claim) and then, with the pod added to `reservedFor`, as `status.allocation`
(an update of the status); an already allocated claim only gets the pod in `reservedFor`.
A conflict (someone else wrote the claim) fails the binding, so the pod is retried.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from typing import Any

from ..api.errors import StatusError
from ..client import Client
from .events import ActionType, ClusterEvent
from .plugins.dynamic_resources import DEVICE_CLASS, RESOURCE_CLAIM, RESOURCE_SLICE, STATE_KEY, PodClaims

__all__ = ["DRAView", "bind_pod_claims", "RESOURCECLAIMS", "RESOURCESLICES", "DEVICECLASSES", "FINALIZER"]

RESOURCECLAIMS = ("resource.k8s.io", "v1beta1", "resourceclaims")
RESOURCESLICES = ("resource.k8s.io", "v1beta1", "resourceslices")
DEVICECLASSES = ("resource.k8s.io", "v1beta1", "deviceclasses")
FINALIZER = "resource.kubernetes.io/delete-protection"
POLL = 0.05


class DRAView:
    """Claim, slice and class lookups from the scheduler's informers (Handle.dra)."""

    def __init__(self, informers: Any) -> None:
        self.claims_inf = informers.informer(RESOURCECLAIMS)
        self.slices_inf = informers.informer(RESOURCESLICES)
        self.classes_inf = informers.informer(DEVICECLASSES)
        self._by_uid: dict[str, str] = {}
        # one binding cycle at a time writes a claim: pods sharing it do not conflict with each other
        self.write_locks: dict[str, asyncio.Lock] = {}
        self.claims_inf.add_handlers(self._index, lambda o, n: self._index(n), self._unindex)
        # slices by nodeName ("" for allNodes/nodeSelector ones), rebuilt after a slice changes
        self._by_node: dict[str, list[Mapping[str, Any]]] | None = None
        self.slices_inf.add_handlers(self._slices_changed, lambda o, n: self._slices_changed(n), self._slices_changed)

    def _slices_changed(self, _: Any) -> None:
        self._by_node = None

    def slices_for(self, node: str) -> list[Mapping[str, Any]]:
        """The slices that can reach `node`: its own and those not tied to one node."""
        if self._by_node is None:
            by: dict[str, list[Mapping[str, Any]]] = {}
            for s in self.slices_inf.store.values():
                by.setdefault((s.get("spec") or {}).get("nodeName") or "", []).append(s)
            self._by_node = by
        return self._by_node.get(node, []) + self._by_node.get("", [])

    def _index(self, claim: Mapping[str, Any]) -> None:
        md = claim.get("metadata") or {}
        self._by_uid[md.get("uid", "")] = f"{md.get('namespace')}/{md.get('name')}"

    def _unindex(self, claim: Mapping[str, Any]) -> None:
        uid = (claim.get("metadata") or {}).get("uid", "")
        self._by_uid.pop(uid, None)
        self.write_locks.pop(uid, None)

    def claim(self, namespace: str, name: str) -> Mapping[str, Any] | None:
        return self.claims_inf.get(f"{namespace}/{name}")

    def claim_by_uid(self, uid: str) -> Mapping[str, Any] | None:
        key = self._by_uid.get(uid)
        return self.claims_inf.get(key) if key else None

    def claims(self) -> list[Mapping[str, Any]]:
        return list(self.claims_inf.store.values())

    def slices(self) -> list[Mapping[str, Any]]:
        return list(self.slices_inf.store.values())

    def device_class(self, name: str) -> Mapping[str, Any] | None:
        return self.classes_inf.get(name)

    def wire_events(self, queue: Any) -> None:
        """Claim, slice and class changes move the pods DynamicResources rejected back."""
        for inf, resource, label in ((self.claims_inf, RESOURCE_CLAIM, "ResourceClaim"),
                                     (self.slices_inf, RESOURCE_SLICE, "ResourceSlice"),
                                     (self.classes_inf, DEVICE_CLASS, "DeviceClass")):
            add = ClusterEvent(resource, ActionType.ADD, f"{label}Add")
            upd = ClusterEvent(resource, ActionType.UPDATE, f"{label}Update")
            dele = ClusterEvent(resource, ActionType.DELETE, f"{label}Delete")
            inf.add_handlers(lambda o, e=add: queue.on_event(e, None, o),
                             lambda o, n, e=upd: queue.on_event(e, o, n),
                             lambda o, e=dele: queue.on_event(e, o, None))


async def bind_pod_claims(client: Client, state: Any, pod: Mapping[str, Any], view: DRAView | None = None,
                          timeout: float = 10.0) -> str | None:
    """Write what Reserve decided; returns an error message or None.

    A claim another pod of this scheduler is allocating (the assumed allocation) is waited for
    on the informer; reservedFor writes that lose a race with another consumer are retried."""
    pc: PodClaims | None = state.read(STATE_KEY)
    if pc is None or not pc.claims:
        return None
    md = pod.get("metadata") or {}
    ref = {"resource": "pods", "name": md.get("name", ""), "uid": md.get("uid", "")}
    try:
        for claim in pc.claims:
            cuid = (claim.get("metadata") or {}).get("uid", "")
            if pc.allocations.get(cuid) is None and view is not None:
                # shared with a pod whose binding cycle writes the allocation: wait for it before
                # taking the claim's lock, which that cycle needs
                await _wait_allocated(view, claim, timeout)
            lock = view.write_locks.setdefault(cuid, asyncio.Lock()) if view is not None else asyncio.Lock()
            async with lock:
                err = await _bind_claim(client, claim, pc.allocations.get(cuid), ref, view, timeout)
            if err:
                return f'running PreBind plugin "DynamicResources": {err}'
    except StatusError as e:
        return f'running PreBind plugin "DynamicResources": {e.message}'
    return None


async def _wait_allocated(view: DRAView, claim: Mapping[str, Any], timeout: float) -> None:
    md = claim.get("metadata") or {}
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        seen = view.claim(md.get("namespace", ""), md.get("name", ""))
        if seen is None or (seen.get("status") or {}).get("allocation") is not None:
            return
        await asyncio.sleep(POLL)


async def _bind_claim(client: Client, claim: Mapping[str, Any], alloc: dict[str, Any] | None, ref: dict[str, str],
                      view: DRAView | None, timeout: float) -> str | None:
    cmd = claim.get("metadata") or {}
    deadline = time.monotonic() + timeout
    cur: dict[str, Any] = dict(claim)
    for attempt in range(8):
        if attempt or alloc is None:
            cur = await client.get(RESOURCECLAIMS, cmd.get("name", ""), cmd.get("namespace"))
        if (cur.get("metadata") or {}).get("uid") != cmd.get("uid"):
            return f'resourceclaim "{cmd.get("name")}" was replaced'
        status = dict(cur.get("status") or {})
        reserved = list(status.get("reservedFor") or ())
        if any(r.get("uid") == ref["uid"] for r in reserved):
            return None
        if status.get("allocation") is None and alloc is None:
            # another pod's binding cycle is writing the allocation this pod shares: wait for it
            while time.monotonic() < deadline:
                await asyncio.sleep(POLL)
                seen = view.claim(cmd.get("namespace", ""), cmd.get("name", "")) if view is not None else None
                if seen is not None and (seen.get("status") or {}).get("allocation") is not None:
                    break
            else:
                return f'resourceclaim "{cmd.get("name")}" is not allocated'
            continue
        if alloc is not None and status.get("allocation") is not None and status["allocation"] != alloc:
            return f'resourceclaim "{cmd.get("name")}" was allocated by someone else meanwhile'
        if status.get("allocation") is None:
            ours = alloc
            fins = (cur.get("metadata") or {}).get("finalizers") or []
            if FINALIZER not in fins:
                cur = await client.update(RESOURCECLAIMS, {**cur, "metadata": {**cur["metadata"],
                                                                                  "finalizers": [*fins, FINALIZER]}})
            status["allocation"] = ours
        status["reservedFor"] = [*reserved, ref]
        try:
            await client.update(RESOURCECLAIMS, {**cur, "status": status}, sub="status")
            return None
        except StatusError as e:
            if e.code != 409:
                raise
    return f'resourceclaim "{cmd.get("name")}": too many conflicting writers'

