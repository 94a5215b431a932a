"""Tables for storage.k8s.io: storage classes, CSI drivers/nodes/capacities, attachments."""

from __future__ import annotations

from .base import TablePrinter, age, age_col, col, name_col, printer, quantity_str

S = "io.k8s.api.storage.v1."
GK = tuple[str, str]

_DEFAULT_CLASS = (
    "storageclass.kubernetes.io/is-default-class",
    "storageclass.beta.kubernetes.io/is-default-class",
)


def _storage_class_row(sc: dict, now: float) -> list:
    md = sc.get("metadata") or {}
    ann = md.get("annotations") or {}
    name = md.get("name", "")
    if any(ann.get(a) == "true" for a in _DEFAULT_CLASS):
        name += " (default)"
    return [
        name,
        sc.get("provisioner", ""),
        sc.get("reclaimPolicy") or "Delete",
        sc.get("volumeBindingMode") or "Immediate",
        bool(sc.get("allowVolumeExpansion")),
        age(sc, now),
    ]


STORAGE_CLASS = printer(
    [
        name_col(),
        col("Provisioner", description=(S + "StorageClass", "provisioner")),
        col("ReclaimPolicy", description=(S + "StorageClass", "reclaimPolicy")),
        col("VolumeBindingMode", description=(S + "StorageClass", "volumeBindingMode")),
        col("AllowVolumeExpansion", description=(S + "StorageClass", "allowVolumeExpansion")),
        age_col(),
    ],
    _storage_class_row,
)


def _csi_driver_row(d: dict, now: float) -> list:
    spec = d.get("spec") or {}
    attach = spec.get("attachRequired")
    token_requests = spec.get("tokenRequests")
    modes = ",".join(spec.get("volumeLifecycleModes") or ())
    return [
        (d.get("metadata") or {}).get("name", ""),
        True if attach is None else bool(attach),
        bool(spec.get("podInfoOnMount")),
        bool(spec.get("storageCapacity")),
        "<unset>" if token_requests is None else ",".join(t.get("audience", "") for t in token_requests),
        bool(spec.get("requiresRepublish")),
        modes or "<none>",
        age(d, now),
    ]


CSI_DRIVER = printer(
    [
        name_col(),
        col("AttachRequired", "boolean", (S + "CSIDriverSpec", "attachRequired")),
        col("PodInfoOnMount", "boolean", (S + "CSIDriverSpec", "podInfoOnMount")),
        col("StorageCapacity", "boolean", (S + "CSIDriverSpec", "storageCapacity")),
        col("TokenRequests", description=(S + "CSIDriverSpec", "tokenRequests")),
        col("RequiresRepublish", "boolean", (S + "CSIDriverSpec", "requiresRepublish")),
        col("Modes", description=(S + "CSIDriverSpec", "volumeLifecycleModes")),
        age_col(),
    ],
    _csi_driver_row,
)

CSI_NODE = printer(
    [
        name_col(),
        col("Drivers", "integer", "Drivers indicates the number of CSI drivers registered on the node"),
        age_col(),
    ],
    lambda n, now: [
        (n.get("metadata") or {}).get("name", ""),
        len((n.get("spec") or {}).get("drivers") or ()),
        age(n, now),
    ],
)

CSI_STORAGE_CAPACITY = printer(
    [
        name_col(),
        col("StorageClassName", description=(S + "CSIStorageCapacity", "storageClassName")),
        col("Capacity", description=(S + "CSIStorageCapacity", "capacity")),
    ],
    lambda c, now: [
        (c.get("metadata") or {}).get("name", ""),
        c.get("storageClassName", ""),
        "<unset>" if c.get("capacity") is None else quantity_str(c["capacity"]),
    ],
)


def _volume_attachment_row(va: dict, now: float) -> list:
    spec = va.get("spec") or {}
    return [
        (va.get("metadata") or {}).get("name", ""),
        spec.get("attacher", ""),
        (spec.get("source") or {}).get("persistentVolumeName") or "",
        spec.get("nodeName", ""),
        bool((va.get("status") or {}).get("attached")),
        age(va, now),
    ]


VOLUME_ATTACHMENT = printer(
    [
        name_col(),
        col("Attacher", description=(S + "VolumeAttachmentSpec", "attacher"), format="name"),
        col("PV", description=(S + "VolumeAttachmentSource", "persistentVolumeName")),
        col("Node", description=(S + "VolumeAttachmentSpec", "nodeName")),
        col("Attached", "boolean", (S + "VolumeAttachmentStatus", "attached")),
        age_col(),
    ],
    _volume_attachment_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("storage.k8s.io", "StorageClass"): STORAGE_CLASS,
    ("storage.k8s.io", "CSIDriver"): CSI_DRIVER,
    ("storage.k8s.io", "CSINode"): CSI_NODE,
    ("storage.k8s.io", "CSIStorageCapacity"): CSI_STORAGE_CAPACITY,
    ("storage.k8s.io", "VolumeAttachment"): VOLUME_ATTACHMENT,
}

__all__ = ["PRINTERS"]
