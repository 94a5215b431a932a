"""storage.k8s.io/v1 validation: StorageClass, CSIDriver, CSINode, VolumeAttachment,
CSIStorageCapacity, as upstream's pkg/apis/storage/validation.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, duplicate, forbidden, index, invalid, not_supported, required, too_long
from ..meta import (
    validate_label_name,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import is_dns1123_subdomain, name_is_dns_subdomain, validate_path_segment_name
from ..quantity import parse_quantity
from ._common import as_dict, go_generic, is_int, semantic_equal, spec_of

__all__ = [
    "validate_storage_class", "validate_storage_class_update", "validate_csi_driver", "validate_csi_driver_update",
    "validate_csi_node", "validate_csi_node_update", "validate_volume_attachment", "validate_volume_attachment_update",
    "validate_csi_storage_capacity", "validate_csi_storage_capacity_update", "validate_csi_driver_name",
    "VALIDATORS", "UPDATE_VALIDATORS",
]

ST = "storage.k8s.io"
_MAX_PARAMS = 512
_MAX_PARAMS_SIZE = 256 * 1024
_CSI_NODE_ID_MAX = 192


def validate_csi_driver_name(name: str, path: str) -> list[FieldError]:
    """core's ValidateCSIDriverName."""
    errs: list[FieldError] = []
    if not name:
        errs.append(required(path))
    if len(name) > 63:
        errs.append(too_long(path, 63))
    errs += [invalid(path, name, m) for m in is_dns1123_subdomain(name.lower())]
    return errs


def _path_segment(name: str, prefix: bool) -> list[str]:
    return validate_path_segment_name(name, prefix)


# ---- StorageClass ------------------------------------------------------------------------


def _topology_term(term: dict[str, Any], path: str) -> tuple[dict[str, frozenset[str]], list[FieldError]]:
    errs: list[FieldError] = []
    exprs: dict[str, frozenset[str]] = {}
    for i, req in enumerate(term.get("matchLabelExpressions") or []):
        if not isinstance(req, dict):
            continue
        rp = index(child(path, "matchLabelExpressions"), i)
        values = req.get("values") or []
        vp = child(rp, "values")
        if not values:
            errs.append(required(vp))
        seen: set[str] = set()
        for j, v in enumerate(values):
            if v in seen:
                errs.append(duplicate(index(vp, j), v))
            seen.add(v)
        errs += validate_label_name(req.get("key") or "", child(rp, "key"))
        k = req.get("key") or ""
        if k in exprs:
            errs.append(duplicate(child(rp, "key"), k))
        exprs[k] = frozenset(values)
    return exprs, errs


def _storage_class_fields(obj: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    prov = obj.get("provisioner") or ""
    if not prov:
        errs.append(required("provisioner", prov))
    else:
        errs += validate_label_name(prov.lower(), "provisioner")
    params = obj.get("parameters") or {}
    if len(params) > _MAX_PARAMS:
        errs.append(FieldError("parameters", "TooLong", None, limit=_MAX_PARAMS))
    else:
        total = 0
        for k, v in params.items():
            if not k:
                errs.append(invalid("parameters", k, "field can not be empty."))
            total += len(k) + len(str(v))
        if total > _MAX_PARAMS_SIZE:
            errs.append(too_long("parameters", _MAX_PARAMS_SIZE))
    rp = obj.get("reclaimPolicy")
    if rp and rp not in ("Delete", "Retain"):
        errs.append(not_supported("reclaimPolicy", rp, ["Delete", "Retain"]))
    vbm = obj.get("volumeBindingMode")
    if vbm is None:
        errs.append(required("volumeBindingMode"))
    elif vbm not in ("Immediate", "WaitForFirstConsumer"):
        errs.append(not_supported("volumeBindingMode", vbm, ["Immediate", "WaitForFirstConsumer"]))
    seen: list[dict[str, frozenset[str]]] = []
    for i, term in enumerate(obj.get("allowedTopologies") or []):
        if not isinstance(term, dict):
            continue
        exprs, terrs = _topology_term(term, index("allowedTopologies", i))
        errs += terrs
        if exprs in seen:
            errs.append(duplicate(child(index("allowedTopologies", i), "matchLabelExpressions"), ""))
        seen.append(exprs)
    return errs


def validate_storage_class(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, False, name_is_dns_subdomain) + _storage_class_fields(obj)


def validate_storage_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not semantic_equal(new.get("parameters"), old.get("parameters")):
        errs.append(forbidden("parameters", "updates to parameters are forbidden."))
    if (new.get("provisioner") or "") != (old.get("provisioner") or ""):
        errs.append(forbidden("provisioner", "updates to provisioner are forbidden."))
    if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
        errs.append(forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden."))
    if new.get("volumeBindingMode") != old.get("volumeBindingMode"):
        errs.append(invalid("volumeBindingMode", new.get("volumeBindingMode"), "field is immutable"))
    return errs


# ---- CSIDriver ---------------------------------------------------------------------------


def _token_requests(reqs: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, tr in enumerate(reqs or []):
        if not isinstance(tr, dict):
            continue
        p = index(path, i)
        aud = tr.get("audience") or ""
        if aud in seen:
            errs.append(duplicate(child(p, "audience"), aud))
            continue
        seen.add(aud)
        exp = tr.get("expirationSeconds")
        if not is_int(exp):
            continue
        if exp < 600:
            errs.append(invalid(child(p, "expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
        if exp > 1 << 32:
            errs.append(invalid(child(p, "expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
    return errs


def _csi_driver_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for wire, shown in (("attachRequired", "attachedRequired"), ("podInfoOnMount", "podInfoOnMount"),
                        ("storageCapacity", "storageCapacity")):
        if spec.get(wire) is None:
            errs.append(required(child(path, shown)))
    fsg = spec.get("fsGroupPolicy")
    if fsg is None:
        errs.append(required(child(path, "fsGroupPolicy")))
    elif fsg not in ("File", "None", "ReadWriteOnceWithFSType"):
        errs.append(not_supported(child(path, "fsGroupPolicy"), fsg, ["File", "None", "ReadWriteOnceWithFSType"]))
    errs += _token_requests(spec.get("tokenRequests"), child(path, "tokenRequests"))
    for mode in spec.get("volumeLifecycleModes") or []:
        if mode not in ("Persistent", "Ephemeral"):
            errs.append(not_supported(child(path, "volumeLifecycleModes"), mode, ["Persistent", "Ephemeral"]))
    if "seLinuxMount" in spec and spec["seLinuxMount"] is None:
        errs.append(required(child(path, "seLinuxMount")))
    return errs


def validate_csi_driver(obj: dict[str, Any]) -> list[FieldError]:
    # upstream validates the name as a CSI driver name, reported at `name`
    errs = validate_object_meta(obj, False, _path_segment)
    errs += validate_csi_driver_name(str((obj.get("metadata") or {}).get("name") or ""), "name")
    return errs + _csi_driver_spec(spec_of(obj), "spec")


def validate_csi_driver_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_csi_driver(new) + validate_object_meta_update(new, old)
    ns, os_ = spec_of(new), spec_of(old)
    if ns.get("attachRequired") != os_.get("attachRequired"):
        errs.append(invalid("spec.attachedRequired", ns.get("attachRequired"), "field is immutable"))
    if not semantic_equal(ns.get("volumeLifecycleModes"), os_.get("volumeLifecycleModes")):
        from ..field import go_string_slice

        errs.append(invalid("spec.volumeLifecycleModes",
                            go_string_slice(ns.get("volumeLifecycleModes"), "[]storage.VolumeLifecycleMode"),
                            "field is immutable"))
    return errs


# ---- CSINode -----------------------------------------------------------------------------


def _csi_node_driver(driver: dict[str, Any], seen: set[str], path: str) -> list[FieldError]:
    name = driver.get("name") or ""
    errs = validate_csi_driver_name(name, child(path, "name"))
    node_id = driver.get("nodeID") or ""
    if not node_id:
        errs.append(required(child(path, "nodeID"), node_id))
    if len(node_id) > _CSI_NODE_ID_MAX:
        errs.append(invalid(child(path, "nodeID"), node_id, f"must be {_CSI_NODE_ID_MAX} characters or less"))
    alloc = driver.get("allocatable")
    if isinstance(alloc, dict) and alloc.get("count") is not None:
        errs += validate_nonnegative(alloc["count"], child(path, "allocatable", "count"))
    if name in seen:
        errs.append(duplicate(child(path, "name"), name))
    keys: set[str] = set()
    for k in driver.get("topologyKeys") or []:
        if not k:
            errs.append(required(path, k))
        if k in keys:
            errs.append(duplicate(path, k))
        keys.add(k)
        errs += validate_label_name(k, path)
    seen.add(name)
    return errs


def _csi_node_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, d in enumerate(spec.get("drivers") or []):
        if isinstance(d, dict):
            errs += _csi_node_driver(d, seen, index(child(path, "drivers"), i))
    return errs


def validate_csi_node(obj: dict[str, Any]) -> list[FieldError]:
    # CSINode names are node names (ValidateNodeName = DNS subdomain)
    return validate_object_meta(obj, False, name_is_dns_subdomain) + _csi_node_spec(spec_of(obj), "spec")


def validate_csi_node_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_csi_node(new) + validate_object_meta_update(new, old)
    old_drivers = {d.get("name"): d for d in spec_of(old).get("drivers") or [] if isinstance(d, dict)}
    for d in spec_of(new).get("drivers") or []:
        if isinstance(d, dict) and d.get("name") in old_drivers and not semantic_equal(d, old_drivers[d.get("name")]):
            errs.append(invalid("CSINodeDriver", GoValue(go_generic(d, "storage.CSINodeDriver")), "field is immutable"))
    return errs


# ---- VolumeAttachment --------------------------------------------------------------------


def _volume_attachment_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    attacher = spec.get("attacher") or ""
    if not attacher:
        errs.append(required(child(path, "attacher"), attacher))
    source = as_dict(spec.get("source"))
    sp = child(path, "source")
    inline, pv = source.get("inlineVolumeSpec"), source.get("persistentVolumeName")
    if inline is None and pv is None:
        errs.append(required(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif inline is not None and pv is not None:
        errs.append(forbidden(sp, "must specify exactly one of inlineVolumeSpec and persistentVolumeName"))
    elif pv is not None and not pv:
        errs.append(required(child(sp, "persistentVolumeName"), "must specify non empty persistentVolumeName"))
    node = spec.get("nodeName") or ""
    errs += [invalid(child(path, "nodeName"), node, m) for m in name_is_dns_subdomain(node, False)]
    return errs


def _volume_attachment_v1(obj: dict[str, Any]) -> list[FieldError]:
    """ValidateVolumeAttachmentV1: the attacher is a CSI driver name, the PV name a DNS subdomain."""
    spec = spec_of(obj)
    errs = validate_csi_driver_name(spec.get("attacher") or "", "spec.attacher")
    pv = ((spec.get("source") or {}) if isinstance(spec.get("source"), dict) else {}).get("persistentVolumeName")
    if pv:
        errs += [invalid("spec.source.persistentVolumeName", pv, m) for m in name_is_dns_subdomain(pv, False)]
    return errs


def _volume_attachment_status(status: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if not isinstance(status, dict):
        return errs
    meta = status.get("attachmentMetadata") or {}
    size = sum(len(k) + len(str(v)) for k, v in meta.items())
    if size > 256 * 1024:
        errs.append(too_long("status.attachmentMetadata", 256 * 1024))
    for f in ("attachError", "detachError"):
        e = status.get(f)
        if isinstance(e, dict) and len(e.get("message") or "") > 1024:
            errs.append(too_long(child("status", f, "message"), 1024))
    return errs


def validate_volume_attachment(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    errs += _volume_attachment_spec(spec_of(obj), "spec")
    errs += _volume_attachment_status(obj.get("status"))
    return errs + _volume_attachment_v1(obj)


def validate_volume_attachment_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_volume_attachment(new) + validate_object_meta_update(new, old)
    if not semantic_equal(spec_of(new), spec_of(old)):
        errs.append(invalid("spec", GoValue(go_generic(spec_of(new), "storage.VolumeAttachmentSpec")),
                            "field is immutable"))
    return errs


# ---- CSIStorageCapacity ------------------------------------------------------------------


def _nonnegative_quantity(raw: Any, path: str) -> list[FieldError]:
    try:
        q = parse_quantity(raw)
    except Exception:  # a malformed quantity is a decode error upstream; report it here
        return [invalid(path, str(raw), "must be a valid quantity")]
    if q.cmp(0) < 0:
        return [invalid(path, str(raw), "must be greater than or equal to 0")]
    return []


def _capacity_fields(obj: dict[str, Any], allow_invalid: bool = False) -> list[FieldError]:
    errs = validate_label_selector(obj.get("nodeTopology"), "nodeTopology", allow_invalid)
    sc = obj.get("storageClassName") or ""
    errs += [invalid("storageClassName", sc, m) for m in name_is_dns_subdomain(sc, False)]
    for f in ("capacity", "maximumVolumeSize"):
        if obj.get(f) is not None:
            errs += _nonnegative_quantity(obj[f], f)
    return errs


def validate_csi_storage_capacity(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _capacity_fields(obj)


def validate_csi_storage_capacity_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    from ._common import selector_or_none

    errs = validate_object_meta(new, True, name_is_dns_subdomain) + _capacity_fields(new)
    errs += validate_object_meta_update(new, old)
    if not semantic_equal(new.get("nodeTopology"), old.get("nodeTopology")):
        errs.append(invalid("nodeTopology", selector_or_none(new.get("nodeTopology")), "field is immutable"))
    if (new.get("storageClassName") or "") != (old.get("storageClassName") or ""):
        errs.append(invalid("storageClassName", new.get("storageClassName") or "", "field is immutable"))
    return errs


VALIDATORS = {
    (ST, "StorageClass"): validate_storage_class,
    (ST, "CSIDriver"): validate_csi_driver,
    (ST, "CSINode"): validate_csi_node,
    (ST, "VolumeAttachment"): validate_volume_attachment,
    (ST, "CSIStorageCapacity"): validate_csi_storage_capacity,
}
UPDATE_VALIDATORS = {
    (ST, "StorageClass"): validate_storage_class_update,
    (ST, "CSIDriver"): validate_csi_driver_update,
    (ST, "CSINode"): validate_csi_node_update,
    (ST, "VolumeAttachment"): validate_volume_attachment_update,
    (ST, "CSIStorageCapacity"): validate_csi_storage_capacity_update,
}
