"""The controller half of a storage driver, shaped like CSI's Controller service.

A provisioner (volume_provisioner.ProvisionController) calls these the way the external-provisioner
and external-resizer sidecars call a CSI driver's CreateVolume, DeleteVolume and
ControllerExpandVolume; a CSI driver reached over gRPC can later implement the same three.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

__all__ = ["CreateVolumeRequest", "CreatedVolume", "VolumeDriver"]


@dataclass
class CreateVolumeRequest:
    name: str  # the PV's name, pvc-<claim uid>: CSI's idempotency key
    capacity: str  # the claim's storage request, a quantity
    parameters: dict[str, str]  # the StorageClass's parameters
    claim: dict[str, Any]
    node: dict[str, Any] | None  # the node the volume must be reachable from (selected-node), if any


@dataclass
class CreatedVolume:
    capacity: str
    source: dict[str, Any]  # the PersistentVolumeSource: {"hostPath": {...}} or {"local": {...}}
    node_affinity: dict[str, Any] | None = None
    annotations: dict[str, str] = field(default_factory=dict)
    # finalizers the PV carries when its storage is freed elsewhere (on the node) after the PV is deleted
    finalizers: list[str] = field(default_factory=list)


class VolumeDriver(Protocol):
    name: str  # the provisioner name StorageClasses give

    async def create_volume(self, req: CreateVolumeRequest) -> CreatedVolume: ...

    async def delete_volume(self, pv: dict[str, Any]) -> bool:
        """Free the volume's storage: True when it is free now, False when whoever frees it (the node)
        removes the driver's finalizers from the deleted PV once it is."""
        ...

    async def controller_expand_volume(self, pv: dict[str, Any], capacity: str) -> tuple[str, bool]:
        """Grow the volume: (its new capacity, whether the node must still grow the file system)."""
        ...
