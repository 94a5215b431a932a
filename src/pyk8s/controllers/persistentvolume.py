"""PersistentVolume binder: upstream's persistentvolume-binder-controller (pkg/controller/volume/persistentvolume).

Two queues' worth of work in one: claims (`c/<ns>/<name>`) and volumes (`v/<name>`), each synced
level-triggered from the informer caches, as upstream's syncClaim and syncVolume:

- an unbound claim binds the best matching Available volume (persistentvolume_index); with no match
  it waits for its class's provisioner (annotated `volume.kubernetes.io/storage-provisioner` and
  the beta key, event ExternalProvisioning), for its first consumer (WaitForFirstConsumer classes
  until the scheduler writes `volume.kubernetes.io/selected-node`), or reports FailedBinding;
- binding writes the volume's claimRef (and `pv.kubernetes.io/bound-by-controller` unless the user
  pre-bound it), then its phase Bound, then the claim's volumeName and `pv.kubernetes.io/bind-completed`,
  then the claim's phase, capacity and access modes;
- a volume whose claim is gone is Released and reclaimed: Retain keeps it; Delete is left to the
  provisioner named by `pv.kubernetes.io/provisioned-by` (a volume no provisioner made has no deleter
  here: Failed, VolumeFailedDelete); Recycle has no recycler here: Failed, VolumeFailedRecycle.
- a claim that names no class (storageClassName unset) gets the default class once one exists
  (retroactive default StorageClass assignment, GA in 1.28).

Every write is one object's update from the cache's copy; a conflict re-queues the key.
"""

from __future__ import annotations

import copy
from typing import Any

from ..api.errors import StatusError
from ..api.storage_classes import default_class
from ..api.timefmt import now_rfc3339
from .base import GVRS, Controller
from .persistentvolume_index import (
    BETA_STORAGE_CLASS,
    check_volume_satisfies_claim,
    claim_class,
    find_matching_volume,
    is_volume_bound_to_claim,
)

__all__ = ["PersistentVolumeController", "ClaimVolumeController", "STORAGE_CLASSES"]

STORAGE_CLASSES = ("storage.k8s.io", "v1", "storageclasses")

ANN_BIND_COMPLETED = "pv.kubernetes.io/bind-completed"
ANN_BOUND_BY_CONTROLLER = "pv.kubernetes.io/bound-by-controller"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
ANN_STORAGE_PROVISIONER = "volume.kubernetes.io/storage-provisioner"
ANN_BETA_STORAGE_PROVISIONER = "volume.beta.kubernetes.io/storage-provisioner"
ANN_SELECTED_NODE = "volume.kubernetes.io/selected-node"
ANN_MIGRATED_TO = "pv.kubernetes.io/migrated-to"
# in-tree provisioner -> the CSI driver that serves it since CSI migration went GA (csi-translation-lib)
CSI_MIGRATED = {
    "kubernetes.io/aws-ebs": "ebs.csi.aws.com",
    "kubernetes.io/gce-pd": "pd.csi.storage.gke.io",
    "kubernetes.io/azure-disk": "disk.csi.azure.com",
    "kubernetes.io/azure-file": "file.csi.azure.com",
    "kubernetes.io/cinder": "cinder.csi.openstack.org",
    "kubernetes.io/vsphere-volume": "csi.vsphere.vmware.com",
    "kubernetes.io/portworx-volume": "pxd.portworx.com",
}

Obj = dict[str, Any]


def _claim_key(claim: Obj) -> str:
    md = claim["metadata"]
    return f"{md.get('namespace', '')}/{md['name']}"


def _ref_key(ref: Obj) -> str:
    return f"{ref.get('namespace', '')}/{ref.get('name', '')}"


class ClaimVolumeController(Controller):
    """One queue for two kinds: claims as `c/<ns>/<name>`, volumes as `v/<name>`; sync dispatches."""

    claims: Any
    volumes: Any

    async def sync(self, key: str) -> None:
        kind, _, rest = key.partition("/")
        obj = (self.volumes if kind == "v" else self.claims).get(rest)
        if obj is not None:
            await (self._sync_volume(obj) if kind == "v" else self._sync_claim(obj))

    async def _sync_volume(self, pv: Obj) -> None:
        raise NotImplementedError

    async def _sync_claim(self, claim: Obj) -> None:
        raise NotImplementedError


class PersistentVolumeController(ClaimVolumeController):
    name = "persistentvolume-binder"
    workers = 1  # as upstream's one claim worker: two would pick the same Available volume and conflict
    component = "persistentvolume-controller"

    def setup(self) -> None:
        self.volumes = self.ctx.informer("persistentvolumes")
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.classes = self.ctx.informers.informer(STORAGE_CLASSES)
        self.volumes.add_handlers(on_add=self._volume_changed, on_update=lambda o, n: self._volume_changed(n),
                                  on_delete=self._volume_deleted)
        self.claims.add_handlers(on_add=self._claim_changed, on_update=lambda o, n: self._claim_changed(n),
                                 on_delete=self._claim_deleted)
        # a new or changed class (a default appearing, a provisioner) can move waiting claims
        self.classes.add_handlers(on_add=lambda sc: self._unbound_claims(),
                                  on_update=lambda o, n: self._unbound_claims())

    # ---- events -------------------------------------------------------------------------------
    def _volume_changed(self, pv: Obj) -> None:
        self.queue.add("v/" + pv["metadata"]["name"])
        if (pv.get("status") or {}).get("phase") == "Available" and not (pv.get("spec") or {}).get("claimRef"):
            # a volume free to take: waiting claims look again at once (upstream waits for its 15 s resync)
            self._unbound_claims()

    def _volume_deleted(self, pv: Obj) -> None:
        # the claim bound to it becomes Lost; a claim that named it stays Pending
        ref = (pv.get("spec") or {}).get("claimRef")
        if ref:
            self.queue.add("c/" + _ref_key(ref))

    def _claim_changed(self, claim: Obj) -> None:
        self.queue.add("c/" + _claim_key(claim))

    def _claim_deleted(self, claim: Obj) -> None:
        name = (claim.get("spec") or {}).get("volumeName")
        if name:
            self.queue.add("v/" + name)
        for pv in self.volumes.list():
            ref = (pv.get("spec") or {}).get("claimRef") or {}
            if ref.get("uid") and ref.get("uid") == claim["metadata"].get("uid"):
                self.queue.add("v/" + pv["metadata"]["name"])

    def _unbound_claims(self) -> None:
        for claim in self.claims.list():
            if (claim.get("status") or {}).get("phase") != "Bound":
                self.queue.add("c/" + _claim_key(claim))

    # ---- sync ---------------------------------------------------------------------------------

    async def _sync_claim(self, claim: Obj) -> None:
        if claim["metadata"].get("deletionTimestamp") and (claim.get("status") or {}).get("phase") != "Bound":
            return
        ann = claim["metadata"].get("annotations") or {}
        if ann.get(ANN_BIND_COMPLETED):
            await self._sync_bound_claim(claim)
        else:
            await self._sync_unbound_claim(claim)

    def _class(self, name: str) -> Obj | None:
        return self.classes.get(name) if name else None

    def _delay_binding(self, claim: Obj) -> bool:
        sc = self._class(claim_class(claim))
        return sc is not None and sc.get("volumeBindingMode") == "WaitForFirstConsumer"

    async def _sync_unbound_claim(self, claim: Obj) -> None:
        spec = claim.get("spec") or {}
        name = spec.get("volumeName") or ""
        if not name:
            delay = self._delay_binding(claim)
            pv = find_matching_volume(claim, self.volumes.list(), delay)
            if pv is None:
                # as upstream, only a claim that found no volume is given the default class
                if not await self._assign_default_class(claim):
                    await self._no_match(claim, delay)
                return
            await self._bind(pv, claim)
            return
        pv = self.volumes.get(name)
        if pv is None:
            # the user asked for a volume that does not exist (yet)
            await self._claim_status(claim, "Pending", None)
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref:
            reason = check_volume_satisfies_claim(pv, claim)
            if reason is not None:
                self.recorder.event(claim, "Warning", "VolumeMismatch",
                                    f'Cannot bind to requested volume "{name}": {reason}')
                await self._claim_status(claim, "Pending", None)
                return
            await self._bind(pv, claim)
        elif is_volume_bound_to_claim(pv, claim):
            await self._bind(pv, claim)
        else:
            # bound elsewhere: the user's choice of volume cannot be honoured now
            self.recorder.event(claim, "Warning", "FailedBinding", f'volume "{name}" already bound to a different claim.')
            await self._claim_status(claim, "Pending", None)

    async def _assign_default_class(self, claim: Obj) -> bool:
        """A claim created without a class gets the default one once it exists (upstream 1.28+)."""
        spec = claim.get("spec") or {}
        if "storageClassName" in spec and spec["storageClassName"] is not None:
            return False
        if BETA_STORAGE_CLASS in (claim["metadata"].get("annotations") or {}):
            return False
        sc = default_class(self.classes.list())
        if sc is None:
            return False
        new = copy.deepcopy(claim)
        new.setdefault("spec", {})["storageClassName"] = sc["metadata"]["name"]
        await self._update_claim(new)
        return True

    async def _no_match(self, claim: Obj, delay: bool) -> None:
        ann = claim["metadata"].get("annotations") or {}
        cls = claim_class(claim)
        if delay and not ann.get(ANN_SELECTED_NODE):
            self.recorder.event(claim, "Normal", "WaitForFirstConsumer",
                                "waiting for first consumer to be created before binding")
            await self._claim_status(claim, "Pending", None)
            return
        if cls:
            await self._provision(claim, cls)
            return
        self.recorder.event(claim, "Normal", "FailedBinding",
                            "no persistent volumes available for this claim and no storage class is set")
        await self._claim_status(claim, "Pending", None)

    async def _provision(self, claim: Obj, cls: str) -> None:
        """provisionClaim: every provisioner is external here (upstream's in-tree ones are CSI drivers now);
        the claim is annotated for it."""
        sc = self._class(cls)
        if sc is None:
            self.recorder.event(claim, "Warning", "ProvisioningFailed", f'storageclass.storage.k8s.io "{cls}" not found')
            await self._claim_status(claim, "Pending", None)
            return
        provisioner = sc.get("provisioner", "")
        migrated = CSI_MIGRATED.get(provisioner)
        if migrated is not None:
            provisioner = migrated  # in-tree cloud plug-ins are served by their CSI drivers (CSIMigration, GA)
        elif provisioner.startswith("kubernetes.io/"):
            # an in-tree name with no plug-in left (kubernetes.io/no-provisioner among them)
            self.recorder.event(claim, "Warning", "ProvisioningFailed", f"no volume plugin matched name: {provisioner}")
            await self._claim_status(claim, "Pending", None)
            return
        ann = claim["metadata"].get("annotations") or {}
        want = {ANN_STORAGE_PROVISIONER: provisioner, ANN_BETA_STORAGE_PROVISIONER: provisioner}
        if migrated is not None:
            want[ANN_MIGRATED_TO] = migrated
        if any(ann.get(k) != v for k, v in want.items()):
            new = copy.deepcopy(claim)
            new["metadata"].setdefault("annotations", {}).update(want)
            claim = await self._update_claim(new)
        self.recorder.event(claim, "Normal", "ExternalProvisioning",
                            f"Waiting for a volume to be created either by the external provisioner '{provisioner}' "
                            "or manually by the system administrator. If volume creation is delayed, please verify "
                            "that the provisioner is running and correctly registered.")
        await self._claim_status(claim, "Pending", None)

    async def _sync_bound_claim(self, claim: Obj) -> None:
        name = (claim.get("spec") or {}).get("volumeName") or ""
        if not name:
            await self._claim_status(claim, "Lost", None, ("Warning", "ClaimLost",
                                     "Bound claim has lost reference to PersistentVolume. Data on the volume is lost!"))
            return
        pv = self.volumes.get(name)
        if pv is None:
            await self._claim_status(claim, "Lost", None, ("Warning", "ClaimLost",
                                     "Bound claim has lost its PersistentVolume. Data on the volume is lost!"))
            return
        ref = (pv.get("spec") or {}).get("claimRef")
        if not ref or ref.get("uid") == claim["metadata"].get("uid"):
            await self._bind(pv, claim)
            return
        await self._claim_status(claim, "Lost", None, ("Warning", "ClaimMisbound",
                                 "Two claims are bound to the same volume, this one is bound incorrectly"))

    async def _sync_volume(self, pv: Obj) -> None:
        spec = pv.get("spec") or {}
        ref = spec.get("claimRef")
        if not ref:
            await self._volume_phase(pv, "Available")
            return
        if not ref.get("uid"):
            # pre-bound to a claim that has not bound yet: the claim's sync binds it
            await self._volume_phase(pv, "Available")
            self.queue.add("c/" + _ref_key(ref))
            return
        claim = self.claims.get(_ref_key(ref))
        if claim is not None and claim["metadata"].get("uid") != ref.get("uid"):
            claim = None  # deleted, and another of that name made since
        if claim is None:
            phase = (pv.get("status") or {}).get("phase")
            if phase not in ("Released", "Failed"):
                pv = await self._volume_phase(pv, "Released")
            await self._reclaim(pv)
            return
        volume_name = (claim.get("spec") or {}).get("volumeName") or ""
        if not volume_name:
            self.queue.add("c/" + _claim_key(claim))  # the claim's sync completes the binding
            return
        if volume_name == pv["metadata"]["name"]:
            await self._volume_phase(pv, "Bound")
            return
        ann = pv["metadata"].get("annotations") or {}
        if ann.get(ANN_PROVISIONED_BY) and spec.get("persistentVolumeReclaimPolicy") == "Delete":
            # provisioned for this claim, which got bound elsewhere: not needed any more
            if (pv.get("status") or {}).get("phase") not in ("Released", "Failed"):
                pv = await self._volume_phase(pv, "Released")
            await self._reclaim(pv)
            return
        await self._unbind_volume(pv)

    async def _reclaim(self, pv: Obj) -> None:
        policy = (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy") or "Retain"
        if policy == "Retain":
            return
        if policy == "Recycle":
            # upstream recycles hostPath and NFS volumes with a scrubber pod; we have no recycler
            await self._volume_phase(pv, "Failed", ("Warning", "VolumeFailedRecycle",
                                                    "No recycler plugin found for the volume!"))
            return
        if policy == "Delete":
            if (pv["metadata"].get("annotations") or {}).get(ANN_PROVISIONED_BY):
                return  # an external deleter (the provisioner that made it) deletes it
            await self._volume_phase(pv, "Failed", (
                "Warning", "VolumeFailedDelete",
                f'error getting deleter volume plugin for volume "{pv["metadata"]["name"]}": '
                "no deletable volume plugin matched"))

    # ---- writes -------------------------------------------------------------------------------
    async def _bind(self, pv: Obj, claim: Obj) -> None:
        """bind(): volume's claimRef, volume phase, claim's volumeName and annotations, claim phase."""
        cmd = claim["metadata"]
        ref = (pv.get("spec") or {}).get("claimRef")
        want_ref = {"kind": "PersistentVolumeClaim", "namespace": cmd.get("namespace", ""), "name": cmd["name"],
                    "uid": cmd.get("uid", ""), "apiVersion": "v1", "resourceVersion": cmd.get("resourceVersion", "")}
        if not ref or ref.get("uid") != cmd.get("uid") or ref.get("name") != cmd["name"] \
                or ref.get("namespace") != cmd.get("namespace"):
            new = copy.deepcopy(pv)
            new["spec"]["claimRef"] = want_ref
            if not ref:
                new["metadata"].setdefault("annotations", {})[ANN_BOUND_BY_CONTROLLER] = "yes"
            pv = await self._update_volume(new)
        pv = await self._volume_phase(pv, "Bound")
        cspec = claim.get("spec") or {}
        cann = cmd.get("annotations") or {}
        if cspec.get("volumeName") != pv["metadata"]["name"] or cann.get(ANN_BIND_COMPLETED) != "yes":
            new = copy.deepcopy(claim)
            a = new["metadata"].setdefault("annotations", {})
            if new["spec"].get("volumeName") != pv["metadata"]["name"]:
                new["spec"]["volumeName"] = pv["metadata"]["name"]
                a[ANN_BOUND_BY_CONTROLLER] = "yes"
            a[ANN_BIND_COMPLETED] = "yes"
            claim = await self._update_claim(new)
        await self._claim_status(claim, "Bound", pv)

    async def _unbind_volume(self, pv: Obj) -> None:
        """unbindVolume: drop a controller-made claimRef, or only its UID for a user's pre-binding."""
        new = copy.deepcopy(pv)
        ann = new["metadata"].setdefault("annotations", {})
        if ann.pop(ANN_BOUND_BY_CONTROLLER, None):
            new["spec"].pop("claimRef", None)
        else:
            new["spec"]["claimRef"].pop("uid", None)
        pv = await self._update_volume(new)
        await self._volume_phase(pv, "Available")

    async def _update_volume(self, pv: Obj) -> Obj:
        return await self.client.update(GVRS["persistentvolumes"], pv)

    async def _update_claim(self, claim: Obj) -> Obj:
        return await self.client.update(GVRS["persistentvolumeclaims"], claim)

    async def _volume_phase(self, pv: Obj, phase: str, event: tuple[str, str, str] | None = None) -> Obj:
        status = pv.get("status") or {}
        if status.get("phase") == phase:
            return pv
        new = copy.deepcopy(pv)
        st = new.setdefault("status", {})
        st["phase"] = phase
        st["lastPhaseTransitionTime"] = now_rfc3339()
        if event is not None:
            st["message"] = event[2]
        else:
            st.pop("message", None)
        try:
            out = await self.client.update_status(GVRS["persistentvolumes"], new)
        except StatusError as e:
            if e.code == 404:
                return pv
            raise
        if event is not None:
            self.recorder.event(out, *event)
        return out

    async def _claim_status(self, claim: Obj, phase: str, pv: Obj | None,
                            event: tuple[str, str, str] | None = None) -> Obj:
        status = claim.get("status") or {}
        new_status = dict(status)
        new_status["phase"] = phase
        if pv is None:
            new_status.pop("accessModes", None)
            new_status.pop("capacity", None)
        else:
            pspec = pv.get("spec") or {}
            new_status["accessModes"] = list(pspec.get("accessModes") or [])
            # the capacity the claim reports follows the volume once bound; an expansion in progress keeps its own
            if not status.get("capacity") or phase != status.get("phase"):
                new_status["capacity"] = dict(pspec.get("capacity") or {})
        if new_status == status:
            return claim
        new = copy.deepcopy(claim)
        new["status"] = new_status
        try:
            out = await self.client.update_status(GVRS["persistentvolumeclaims"], new)
        except StatusError as e:
            if e.code == 404:
                return claim
            raise
        if event is not None and status.get("phase") != phase:
            self.recorder.event(out, *event)
        return out
