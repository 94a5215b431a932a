"""StorageClass helpers shared by the API server's admission and the volume controllers
(upstream's k8s.io/component-helpers/storage/volume)."""

from __future__ import annotations

from typing import Any

__all__ = ["BETA_STORAGE_CLASS", "DEFAULT_CLASS_ANNOTATIONS", "is_default_class", "default_class"]

BETA_STORAGE_CLASS = "volume.beta.kubernetes.io/storage-class"
DEFAULT_CLASS_ANNOTATIONS = ("storageclass.kubernetes.io/is-default-class",
                             "storageclass.beta.kubernetes.io/is-default-class")


def is_default_class(sc: dict[str, Any]) -> bool:
    ann = (sc.get("metadata") or {}).get("annotations") or {}
    return any(ann.get(a) == "true" for a in DEFAULT_CLASS_ANNOTATIONS)


def default_class(classes: list[dict[str, Any]]) -> dict[str, Any] | None:
    """GetDefaultClass: of the classes marked default the newest; of those made the same second, the
    first by name (upstream 1.28+)."""
    marked = [sc for sc in classes if is_default_class(sc)]
    if not marked:
        return None
    newest = max(sc["metadata"].get("creationTimestamp") or "" for sc in marked)
    return min((sc for sc in marked if (sc["metadata"].get("creationTimestamp") or "") == newest),
               key=lambda sc: sc["metadata"].get("name", ""))
