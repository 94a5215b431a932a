"""pvc-protection and pv-protection controllers (upstream's pkg/controller/volume/{pvc,pv}protection).

The StorageObjectInUseProtection admission plug-in puts `kubernetes.io/pvc-protection` on every
claim and `kubernetes.io/pv-protection` on every volume at creation. Once one is being deleted:
- a claim keeps its finalizer while a pod that is scheduled and not terminated uses it (a volume
  naming it, or a generic ephemeral volume whose claim it is); the informer's view is checked
  first and then confirmed with a live list, as upstream, so a pod just created is not missed;
- a volume keeps its finalizer while it is Bound.
"""

from __future__ import annotations

from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller

__all__ = ["PVCProtectionController", "PVProtectionController", "PVC_PROTECTION", "PV_PROTECTION",
           "pod_uses_claim"]

PVC_PROTECTION = "kubernetes.io/pvc-protection"
PV_PROTECTION = "kubernetes.io/pv-protection"

Obj = dict[str, Any]


def claim_names(pod: Obj) -> list[str]:
    """The claims a pod's volumes use: persistentVolumeClaim and generic ephemeral (`<pod>-<volume>`)."""
    out = []
    for v in (pod.get("spec") or {}).get("volumes") or ():
        if v.get("persistentVolumeClaim"):
            out.append(v["persistentVolumeClaim"].get("claimName", ""))
        elif v.get("ephemeral"):
            out.append(f"{pod['metadata']['name']}-{v.get('name', '')}")
    return out


def pod_uses_claim(pod: Obj, claim_name: str) -> bool:
    """A pod that can still run holds the claim: scheduled, and not Succeeded or Failed."""
    if not (pod.get("spec") or {}).get("nodeName"):
        return False  # the scheduler does not place pods whose claim is being deleted
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    return claim_name in claim_names(pod)


def _without(obj: Obj, finalizer: str) -> Obj:
    new = dict(obj)
    new["metadata"] = dict(obj["metadata"])
    new["metadata"]["finalizers"] = [f for f in obj["metadata"].get("finalizers") or () if f != finalizer]
    return new


class PVCProtectionController(Controller):
    name = "pvc-protection"

    def setup(self) -> None:
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.pods = self.ctx.informer("pods")
        self.claims.add_handlers(on_add=self._claim, on_update=lambda o, n: self._claim(n))
        self.pods.add_handlers(on_add=self._pod, on_update=lambda o, n: self._pod(n), on_delete=self._pod)

    def _claim(self, claim: Obj) -> None:
        md = claim["metadata"]
        if md.get("deletionTimestamp") and PVC_PROTECTION in (md.get("finalizers") or ()):
            self.enqueue(claim)

    def _pod(self, pod: Obj) -> None:
        ns = pod["metadata"].get("namespace", "")
        for name in claim_names(pod):
            claim = self.claims.get(f"{ns}/{name}")
            if claim is not None:
                self._claim(claim)

    async def sync(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None:
            return
        md = claim["metadata"]
        if not md.get("deletionTimestamp") or PVC_PROTECTION not in (md.get("finalizers") or ()):
            return
        ns, name = md.get("namespace", ""), md["name"]
        if any(pod_uses_claim(p, name) for p in self.pods.list(ns)):
            return  # a pod event re-queues it
        live = await self.client.list(GVRS["pods"], ns)
        if any(pod_uses_claim(p, name) for p in live.get("items") or ()):
            self.enqueue_after(key, 1.0)  # the informer has not seen that pod yet
            return
        try:
            await self.client.update(GVRS["persistentvolumeclaims"], _without(claim, PVC_PROTECTION))
        except StatusError as e:
            if e.code != 404:
                raise


class PVProtectionController(Controller):
    name = "pv-protection"

    def setup(self) -> None:
        self.volumes = self.ctx.informer("persistentvolumes")
        self.volumes.add_handlers(on_add=self._volume, on_update=lambda o, n: self._volume(n))

    def _volume(self, pv: Obj) -> None:
        md = pv["metadata"]
        if md.get("deletionTimestamp") and PV_PROTECTION in (md.get("finalizers") or ()):
            self.enqueue(pv)

    async def sync(self, key: str) -> None:
        pv = self.volumes.get(key)
        if pv is None:
            return
        md = pv["metadata"]
        if not md.get("deletionTimestamp") or PV_PROTECTION not in (md.get("finalizers") or ()):
            return
        if (pv.get("status") or {}).get("phase") == "Bound":
            return  # its claim's deletion releases it, and the update re-queues it
        try:
            await self.client.update(GVRS["persistentvolumes"], _without(pv, PV_PROTECTION))
        except StatusError as e:
            if e.code != 404:
                raise
