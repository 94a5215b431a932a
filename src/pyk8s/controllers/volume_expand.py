"""The expand controller: upstream's persistentvolume-expander-controller (pkg/controller/volume/expand).

Every provisioner here is external, so, as upstream does for CSI volumes, this controller only hands
a grown claim to its class's provisioner: the claim is annotated
`volume.kubernetes.io/storage-resizer: <provisioner>` (event ExternalExpanding) and that
provisioner's resizer (volume_provisioner) grows the volume.
"""

from __future__ import annotations

import copy
from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller
from .persistentvolume import CSI_MIGRATED, STORAGE_CLASSES
from .persistentvolume_index import claim_class
from .volume_provisioner import ANN_STORAGE_RESIZER, _larger, _size

__all__ = ["ExpandController"]


class ExpandController(Controller):
    name = "persistentvolume-expander"
    component = "volume_expand"

    def setup(self) -> None:
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.classes = self.ctx.informers.informer(STORAGE_CLASSES)
        self.claims.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n))

    async def sync(self, key: str) -> None:
        claim = self.claims.get(key)
        if claim is None or (claim.get("status") or {}).get("phase") != "Bound":
            return
        if not _larger(_size(claim), ((claim.get("status") or {}).get("capacity") or {}).get("storage")):
            return
        sc = self.classes.get(claim_class(claim))
        if sc is None:
            return
        provisioner = sc.get("provisioner", "")
        provisioner = CSI_MIGRATED.get(provisioner, provisioner)  # an in-tree class's CSI driver resizes
        ann = claim["metadata"].get("annotations") or {}
        if ann.get(ANN_STORAGE_RESIZER) == provisioner:
            return
        new: dict[str, Any] = copy.deepcopy(claim)
        new["metadata"].setdefault("annotations", {})[ANN_STORAGE_RESIZER] = provisioner
        try:
            out = await self.client.update(GVRS["persistentvolumeclaims"], new)
        except StatusError as e:
            if e.code == 404:
                return
            raise
        self.recorder.event(out, "Normal", "ExternalExpanding", "waiting for an external controller to expand this PVC")
