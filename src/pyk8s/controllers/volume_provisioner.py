"""An external provisioner and resizer for one VolumeDriver, as kubernetes-csi's external-provisioner and
external-resizer sidecars (sig-storage-lib-external-provisioner) drive a CSI driver.

- provision: a claim the PV controller annotated `volume.kubernetes.io/storage-provisioner: <driver>`,
  unbound, of a class of that provisioner (WaitForFirstConsumer: once the scheduler wrote
  `volume.kubernetes.io/selected-node`; Immediate: on a Ready schedulable node chosen here) gets a PV
  `pvc-<claim uid>` pre-bound to it; the PV controller then binds them. Events Provisioning,
  ProvisioningSucceeded, ProvisioningFailed as upstream's.
- delete: a Released volume of policy Delete that this driver provisioned is freed (DeleteVolume)
  and its PV deleted; a failure is VolumeFailedDelete on the PV.
- resize: a bound claim annotated `volume.kubernetes.io/storage-resizer: <driver>` (by the expand
  controller) whose request exceeds its capacity: conditions Resizing, then FileSystemResizePending
  when the node must grow the file system, `allocatedResources` and `allocatedResourceStatuses`,
  the PV's new capacity; events Resizing, VolumeResizeSuccessful / FileSystemResizeRequired.

`LocalPathProvisioner` runs it for the built-in local-path driver and makes the `local-path`
StorageClass (the default class) at start, as k3s ships it; `pyk8s server --disable local-storage`
leaves both out.
"""

from __future__ import annotations

import copy
import zlib
from typing import Any

from ..api.errors import StatusError
from ..api.quantity import QuantityError, parse_quantity
from ..api.timefmt import now_rfc3339
from .base import GVRS
from .localpath import CLEANUP_FINALIZER, PROVISIONER, LocalPathDriver
from .persistentvolume import (
    ANN_BETA_STORAGE_PROVISIONER,
    ANN_PROVISIONED_BY,
    ANN_SELECTED_NODE,
    ANN_STORAGE_PROVISIONER,
    STORAGE_CLASSES,
    ClaimVolumeController,
)
from .persistentvolume_index import claim_class
from .volume_driver import CreateVolumeRequest, VolumeDriver

__all__ = ["ProvisionController", "LocalPathProvisioner", "ANN_STORAGE_RESIZER", "LOCAL_PATH_CLASS"]

ANN_STORAGE_RESIZER = "volume.kubernetes.io/storage-resizer"

LOCAL_PATH_CLASS: dict[str, Any] = {
    "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass",
    "metadata": {"name": "local-path", "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
    "provisioner": PROVISIONER, "reclaimPolicy": "Delete", "volumeBindingMode": "WaitForFirstConsumer",
    "allowVolumeExpansion": True,
}

Obj = dict[str, Any]


def _size(claim: Obj) -> str | None:
    return (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")


def _larger(a: str | None, b: str | None) -> bool:
    if a is None:
        return False
    if b is None:
        return True
    try:
        return parse_quantity(a).cmp(parse_quantity(b)) > 0
    except QuantityError:
        return False


def _ready_schedulable(node: Obj) -> bool:
    if (node.get("spec") or {}).get("unschedulable"):
        return False
    conds = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


class ProvisionController(ClaimVolumeController):

    name = "volume-provisioner"
    component = "volume-provisioner"

    driver_finalizers: tuple[str, ...] = ()  # what the driver's CreatedVolume may put on its PVs

    def make_driver(self) -> VolumeDriver:
        raise NotImplementedError

    def setup(self) -> None:
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.volumes = self.ctx.informer("persistentvolumes")
        self.nodes = self.ctx.informer("nodes")
        self.classes = self.ctx.informers.informer(STORAGE_CLASSES)
        self.driver = self.make_driver()
        self.claims.add_handlers(on_add=self._claim, on_update=lambda o, n: self._claim(n))
        self.volumes.add_handlers(on_add=self._volume, on_update=lambda o, n: self._volume(n))
        self.nodes.add_handlers(on_delete=self._node_deleted)

    def _node_deleted(self, node: Obj) -> None:
        # volumes waiting for that node to free them have nobody left to do it
        for pv in self.volumes.list():
            if pv["metadata"].get("deletionTimestamp"):
                self._volume(pv)

    def _claim(self, claim: Obj) -> None:
        md = claim["metadata"]
        self.queue.add(f"c/{md.get('namespace', '')}/{md['name']}")

    def _volume(self, pv: Obj) -> None:
        if (pv["metadata"].get("annotations") or {}).get(ANN_PROVISIONED_BY) == self.driver.name:
            self.queue.add("v/" + pv["metadata"]["name"])

    async def _sync_claim(self, claim: Obj) -> None:
        if claim["metadata"].get("deletionTimestamp"):
            return
        ann = claim["metadata"].get("annotations") or {}
        if (claim.get("status") or {}).get("phase") == "Bound":
            if ann.get(ANN_STORAGE_RESIZER) == self.driver.name:
                await self._resize(claim)
            return
        if not (claim.get("spec") or {}).get("volumeName") and self.driver.name in (
                ann.get(ANN_STORAGE_PROVISIONER), ann.get(ANN_BETA_STORAGE_PROVISIONER)):
            await self._provision(claim)

    # ---- provisioning -------------------------------------------------------------------------
    def _node_for(self, claim: Obj, sc: Obj) -> Obj | None | str:
        """The node a new volume goes to; a string says why there is none."""
        selected = (claim["metadata"].get("annotations") or {}).get(ANN_SELECTED_NODE)
        if selected:
            node = self.nodes.get(selected)
            return node if node is not None else f'nodes "{selected}" not found'
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer":
            return None  # the scheduler picks the node first
        nodes = sorted((n for n in self.nodes.list() if _ready_schedulable(n)), key=lambda n: n["metadata"]["name"])
        if not nodes:
            return "no ready schedulable node to place the volume on"
        # spread claims over the nodes, the same node for the same claim on every retry
        return nodes[zlib.crc32(claim["metadata"].get("uid", "").encode()) % len(nodes)]

    async def _provision(self, claim: Obj) -> None:
        md = claim["metadata"]
        cls = claim_class(claim)
        sc = self.classes.get(cls) if cls else None
        if sc is None or sc.get("provisioner") != self.driver.name:
            return
        pv_name = f"pvc-{md['uid']}"
        if self.volumes.get(pv_name) is not None:
            return  # made already; the PV controller binds it
        node = self._node_for(claim, sc)
        if node is None:
            return
        if isinstance(node, str):
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'failed to provision volume with StorageClass "{cls}": {node}')
            raise RuntimeError(node)  # retried with backoff
        self.recorder.event(claim, "Normal", "Provisioning",
                            f'External provisioner is provisioning volume for claim "{md.get("namespace")}/{md["name"]}"')
        size = _size(claim) or "0"
        req = CreateVolumeRequest(name=pv_name, capacity=size, parameters=dict(sc.get("parameters") or {}),
                                  claim=claim, node=node)
        try:
            vol = await self.driver.create_volume(req)
        except Exception as e:
            self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                f'failed to provision volume with StorageClass "{cls}": {e}')
            raise
        spec = claim.get("spec") or {}
        pv: Obj = {
            "apiVersion": "v1", "kind": "PersistentVolume",
            "metadata": {"name": pv_name, "annotations": {ANN_PROVISIONED_BY: self.driver.name, **vol.annotations}},
            "spec": {
                **vol.source,
                "capacity": {"storage": vol.capacity},
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "claimRef": {"kind": "PersistentVolumeClaim", "namespace": md.get("namespace", ""), "name": md["name"],
                             "uid": md["uid"], "apiVersion": "v1", "resourceVersion": md.get("resourceVersion", "")},
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                "storageClassName": cls,
                "volumeMode": spec.get("volumeMode") or "Filesystem",
            },
        }
        if sc.get("mountOptions"):
            pv["spec"]["mountOptions"] = list(sc["mountOptions"])
        if vol.node_affinity is not None:
            pv["spec"]["nodeAffinity"] = vol.node_affinity
        if vol.finalizers and pv["spec"]["persistentVolumeReclaimPolicy"] == "Delete":
            pv["metadata"]["finalizers"] = list(vol.finalizers)
        try:
            await self.client.create(GVRS["persistentvolumes"], pv)
        except StatusError as e:
            if e.code != 409:
                self.recorder.event(claim, "Warning", "ProvisioningFailed",
                                    f'failed to provision volume with StorageClass "{cls}": {e.message}')
                raise
        self.recorder.event(claim, "Normal", "ProvisioningSucceeded", f"Successfully provisioned volume {pv_name}")

    # ---- deletion -----------------------------------------------------------------------------
    def _driver_finalizers(self, pv: Obj) -> list[str]:
        return [f for f in pv["metadata"].get("finalizers") or () if f in self.driver_finalizers]

    async def _drop_finalizers(self, pv: Obj) -> None:
        new = copy.deepcopy(pv)
        mine = set(self._driver_finalizers(pv))
        new["metadata"]["finalizers"] = [f for f in pv["metadata"].get("finalizers") or () if f not in mine]
        try:
            await self.client.update(GVRS["persistentvolumes"], new)
        except StatusError as e:
            if e.code != 404:
                raise

    async def _sync_volume(self, pv: Obj) -> None:
        md = pv["metadata"]
        spec = pv.get("spec") or {}
        phase = (pv.get("status") or {}).get("phase")
        policy = spec.get("persistentVolumeReclaimPolicy")
        if policy != "Delete":
            if self._driver_finalizers(pv):
                await self._drop_finalizers(pv)  # retained: nobody may wipe it
            return
        if md.get("deletionTimestamp"):
            # deleted (by us, or by a user before its claim): free it once nothing is bound to it
            if phase != "Bound" and self._driver_finalizers(pv) and await self._delete_storage(pv):
                await self._drop_finalizers(pv)
            return
        if phase != "Released":
            return
        if await self._delete_storage(pv) and self._driver_finalizers(pv):
            await self._drop_finalizers(pv)
        await self.client.delete_ignore_missing(GVRS["persistentvolumes"], md["name"])

    async def _delete_storage(self, pv: Obj) -> bool:
        try:
            return await self.driver.delete_volume(pv)
        except Exception as e:
            self.recorder.event(pv, "Warning", "VolumeFailedDelete", str(e))
            raise

    # ---- expansion ----------------------------------------------------------------------------
    async def _resize(self, claim: Obj) -> None:
        want = _size(claim)
        status = claim.get("status") or {}
        if not _larger(want, (status.get("capacity") or {}).get("storage")):
            return
        pv = self.volumes.get((claim.get("spec") or {}).get("volumeName") or "")
        if pv is None or (pv["metadata"].get("annotations") or {}).get(ANN_PROVISIONED_BY) != self.driver.name:
            return  # only volumes this driver made (a static PV of the class is not ours to grow)
        now = now_rfc3339()
        new = copy.deepcopy(claim)
        st = new.setdefault("status", {})
        st["conditions"] = [{"type": "Resizing", "status": "True", "lastProbeTime": None, "lastTransitionTime": now}]
        st["allocatedResources"] = {"storage": want}
        st["allocatedResourceStatuses"] = {"storage": "ControllerResizeInProgress"}
        claim = await self.client.update_status(GVRS["persistentvolumeclaims"], new)
        self.recorder.event(claim, "Normal", "Resizing", f"External resizer is resizing volume {pv['metadata']['name']}")
        assert want is not None
        capacity, node_step = await self.driver.controller_expand_volume(pv, want)
        if (pv.get("spec") or {}).get("capacity", {}).get("storage") != capacity:
            new_pv = copy.deepcopy(pv)
            new_pv["spec"].setdefault("capacity", {})["storage"] = capacity
            await self.client.update(GVRS["persistentvolumes"], new_pv)
        new = copy.deepcopy(claim)
        st = new.setdefault("status", {})
        if node_step:
            st["conditions"] = [{"type": "FileSystemResizePending", "status": "True", "lastProbeTime": None,
                                 "lastTransitionTime": now_rfc3339(),
                                 "message": "Waiting for user to (re-)start a pod to finish file system resize of "
                                            "volume on node."}]
            st["allocatedResourceStatuses"] = {"storage": "NodeResizePending"}
            await self.client.update_status(GVRS["persistentvolumeclaims"], new)
            self.recorder.event(claim, "Normal", "FileSystemResizeRequired", "Require file system resize of volume on node")
            return
        st["capacity"] = {**(st.get("capacity") or {}), "storage": capacity}
        st.pop("conditions", None)
        st.pop("allocatedResourceStatuses", None)
        await self.client.update_status(GVRS["persistentvolumeclaims"], new)
        self.recorder.event(claim, "Normal", "VolumeResizeSuccessful", "Resize volume succeeded")


class LocalPathProvisioner(ProvisionController):
    name = "local-path-provisioner"
    component = PROVISIONER

    driver_finalizers = (CLEANUP_FINALIZER,)

    def make_driver(self) -> VolumeDriver:
        return LocalPathDriver(self.nodes)

    async def started(self) -> None:
        # as k3s deploys its local-storage manifest: made once; an administrator's later edits stay
        try:
            await self.client.create(STORAGE_CLASSES, copy.deepcopy(LOCAL_PATH_CLASS))
        except StatusError as e:
            if e.code != 409:
                raise
