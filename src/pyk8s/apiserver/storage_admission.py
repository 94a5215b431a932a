"""Storage admission plug-ins, as upstream's plugin/pkg/admission/storage (all three on by default):

- DefaultStorageClass: a claim created without `storageClassName` (and without the beta class
  annotation) gets the default StorageClass; with several marked default the newest wins (1.28+).
- StorageObjectInUseProtection: `kubernetes.io/pvc-protection` on new claims and
  `kubernetes.io/pv-protection` on new volumes (the protection controllers remove them).
- PersistentVolumeClaimResize: growing a claim needs it Bound and its class to allow expansion.

`warn_recycle` is the PersistentVolume strategy's create/update warning for the deprecated Recycle policy.
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.quantity import QuantityError, parse_quantity
from ..api.resources import Resource
from ..api.storage_classes import BETA_STORAGE_CLASS, default_class
from .rest import RequestContext, RestStorage

__all__ = ["default_storage_class", "storage_object_in_use_protection", "pvc_resize", "warn_recycle"]

PVC = ("", "PersistentVolumeClaim")
PV = ("", "PersistentVolume")


async def _classes(rest: RestStorage) -> dict[str, dict[str, Any]]:
    res = rest.registry.get("storage.k8s.io", "v1", "storageclasses")
    assert res is not None
    cache = await rest.cache_for(res)
    return {(sc.get("metadata") or {}).get("name", ""): sc for sc in cache.list(None)}


async def default_storage_class(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                                old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != PVC or op != "CREATE" or ctx.subresource:
        return
    spec = obj.setdefault("spec", {})
    if spec.get("storageClassName") is not None:
        return  # "" too: the user asked for no class
    if BETA_STORAGE_CLASS in ((obj.get("metadata") or {}).get("annotations") or {}):
        return
    sc = default_class(list((await _classes(rest)).values()))
    if sc is not None:
        spec["storageClassName"] = sc["metadata"]["name"]


async def storage_object_in_use_protection(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                                           old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if op != "CREATE" or ctx.subresource:
        return
    finalizer = {PVC: "kubernetes.io/pvc-protection", PV: "kubernetes.io/pv-protection"}.get(res.group_kind)
    if finalizer is None:
        return
    md = obj.setdefault("metadata", {})
    fins = md.get("finalizers") or []
    if finalizer not in fins:
        md["finalizers"] = [*fins, finalizer]


def _storage(claim: dict[str, Any]) -> Any:
    raw = (((claim.get("spec") or {}).get("resources") or {}).get("requests") or {}).get("storage")
    try:
        return parse_quantity(raw) if raw is not None else None
    except QuantityError:
        return None  # validation answers it


async def pvc_resize(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                     old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != PVC or op != "UPDATE" or old is None or ctx.subresource:
        return
    new_size, old_size = _storage(obj), _storage(old)
    if new_size is None or old_size is None or new_size.cmp(old_size) <= 0:
        return
    name = (obj.get("metadata") or {}).get("name", "")
    if (old.get("status") or {}).get("phase") != "Bound":
        raise E.new_forbidden("persistentvolumeclaims", name, "Only bound persistent volume claims can be expanded")
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    cls = ann.get(BETA_STORAGE_CLASS) if BETA_STORAGE_CLASS in ann else (obj.get("spec") or {}).get("storageClassName")
    sc = (await _classes(rest)).get(cls or "") if cls else None
    if sc is None or not sc.get("allowVolumeExpansion"):
        raise E.new_forbidden("persistentvolumeclaims", name, "only dynamically provisioned pvc can be resized and "
                              "the storageclass that provisions the pvc must support resize")


def warn_recycle(rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                 old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != PV or ctx.subresource:
        return
    if (obj.get("spec") or {}).get("persistentVolumeReclaimPolicy") == "Recycle":
        ctx.warnings.append("spec.persistentVolumeReclaimPolicy: The Recycle reclaim policy is deprecated. "
                            "Instead, the recommended approach is to use dynamic provisioning.")
