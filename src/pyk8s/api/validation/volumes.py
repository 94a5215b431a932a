"""Volume sources (pod volumes and PersistentVolume sources) and the PersistentVolumeClaim spec,
as upstream's core validation (validateVolumeSource, ValidatePersistentVolumeSpec, ...).
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable
from typing import Any

from ..errors import FieldError
from ._json import as_dict as _d
from ._json import as_list as _l
from ._json import as_str as _s
from ._memo import KnownValid, content_key
from .field import (
    GoValue,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    key,
    not_supported,
    required,
    too_long,
)
from .meta import validate_label_selector, validate_template_object_meta
from .names import (
    inclusive_range_error,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    name_is_dns_subdomain,
    validate_namespace_name,
)
from .resources import quantity_errors

__all__ = [
    "validate_volumes", "validate_volume_source", "validate_local_descending_path", "validate_path_no_backsteps",
    "validate_local_non_reserved_path", "validate_pv_spec", "validate_pvc_spec", "validate_node_selector",
    "validate_object_field_selector", "validate_resource_field_selector", "FILE_MODE_ERROR",
    "SUPPORTED_ACCESS_MODES", "VOLUME_DOWNWARD_API_PATHS",
]

FILE_MODE_ERROR = "must be a number between 0 and 0777 (octal), both inclusive"
SUPPORTED_ACCESS_MODES = ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
_HOST_PATH_TYPES = ["", "BlockDevice", "CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate",
                    "Socket"]
VOLUME_DOWNWARD_API_PATHS = ["metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace",
                             "metadata.uid"]
_RESOURCE_FIELD_PATHS = ["limits.cpu", "limits.ephemeral-storage", "limits.memory", "requests.cpu",
                         "requests.ephemeral-storage", "requests.memory"]
_DIVISOR_CPU = {"1m", "1"}
_DIVISOR_OTHER = {"1", "1k", "1M", "1G", "1T", "1P", "1E", "1Ki", "1Mi", "1Gi", "1Ti", "1Pi", "1Ei"}

V = dict[str, Any]






def validate_path_no_backsteps(target: str, path: str) -> list[FieldError]:
    target = _s(target)
    if ".." in target.replace("\\", "/").split("/"):
        return [invalid(path, target, "must not contain '..'")]
    return []


def validate_local_descending_path(target: str, path: str) -> list[FieldError]:
    target = _s(target)
    errs = []
    if target.startswith("/"):
        errs.append(invalid(path, target, "must be a relative path"))
    return errs + validate_path_no_backsteps(target, path)


def validate_local_non_reserved_path(target: str, path: str) -> list[FieldError]:
    target = _s(target)
    if ".." not in target and not target.startswith("/"):
        return []  # every rule here needs a leading '/' or a '..'
    errs = validate_local_descending_path(target, path)
    if target.startswith("..") and not target.startswith("../"):
        errs.append(invalid(path, target, "must not start with '..'"))
    return errs


def _mode(v: Any, path: str) -> list[FieldError]:
    if isinstance(v, int) and not isinstance(v, bool) and (v > 0o777 or v < 0):
        return [invalid(path, v, FILE_MODE_ERROR)]
    return []


def _key_to_path(kp: V, path: str) -> list[FieldError]:
    errs = []
    if not kp.get("key"):
        errs.append(required(child(path, "key")))
    if not kp.get("path"):
        errs.append(required(child(path, "path")))
    errs += validate_local_non_reserved_path(kp.get("path") or "", child(path, "path"))
    return errs + _mode(kp.get("mode"), child(path, "mode"))


def _req(src: V, path: str, *fields: str) -> list[FieldError]:
    return [required(child(path, f)) for f in fields if not src.get(f)]


_CONVERTIBLE_FIELD_PATHS = {
    "metadata.annotations", "metadata.labels", "metadata.name", "metadata.namespace", "metadata.uid",
    "spec.nodeName", "spec.restartPolicy", "spec.serviceAccountName", "spec.schedulerName", "status.phase",
    "status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs",
}


def _split_subscript(fp: str) -> tuple[str, str] | None:
    """fieldpath.SplitMaybeSubscriptedPath: `metadata.labels['key']` -> (`metadata.labels`, `key`)."""
    if not fp.endswith("']"):
        return None
    base, sep, sub = fp[:-2].partition("['")
    if not sep or not base:
        return None
    return base, sub


def validate_object_field_selector(fs: V, allowed: list[str], path: str) -> list[FieldError]:
    """validateObjectFieldSelector: apiVersion v1 and a supported (optionally subscripted) field path."""
    if not fs.get("apiVersion"):
        return [required(child(path, "apiVersion"))]
    fp = _s(fs.get("fieldPath"))
    if not fp:
        return [required(child(path, "fieldPath"))]
    conv_err = None
    split = _split_subscript(fp)
    if fs.get("apiVersion") != "v1":
        conv_err = f"unsupported pod version: {fs.get('apiVersion')}"
    elif split is not None:
        if split[0] not in ("metadata.annotations", "metadata.labels"):
            conv_err = f"field label does not support subscript: {fp}"
    elif fp not in _CONVERTIBLE_FIELD_PATHS and fp != "spec.host":
        conv_err = f"field label not supported: {fp}"
    if conv_err:
        return [invalid(child(path, "fieldPath"), fp, f"error converting fieldPath: {conv_err}")]
    if fp == "spec.host":
        fp = "spec.nodeName"
    if split is not None:
        base, sub = split
        if base == "metadata.annotations":
            return [invalid(path, sub.lower(), m) for m in is_qualified_name(sub.lower())]
        return [invalid(path, sub, m) for m in is_qualified_name(sub)]
    if fp not in allowed:
        return [not_supported(child(path, "fieldPath"), fp, allowed)]
    return []


def validate_resource_field_selector(fs: V, path: str, volume: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    res = fs.get("resource") or ""
    if volume and not fs.get("containerName"):
        errs.append(required(child(path, "containerName")))
    elif not res:
        errs.append(required(child(path, "resource")))
    elif res not in _RESOURCE_FIELD_PATHS and not (res.startswith("requests.hugepages-")
                                                   or res.startswith("limits.hugepages-")):
        errs.append(not_supported(child(path, "resource"), res, _RESOURCE_FIELD_PATHS))
    div = fs.get("divisor")
    if div not in (None, "", 0, "0"):
        qd, _ = quantity_errors(div, child(path, "divisor"))
        ds = qd.canonical() if qd is not None else str(div)
        if qd is not None and qd.value == 0:
            return errs
        if res in ("limits.cpu", "requests.cpu"):
            if ds not in _DIVISOR_CPU:
                errs.append(invalid(child(path, "divisor"), res,
                                    "only divisor's values 1m and 1 are supported with the cpu resource"))
        elif res in ("limits.memory", "requests.memory"):
            if ds not in _DIVISOR_OTHER:
                errs.append(invalid(child(path, "divisor"), res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, "
                                    "1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the memory resource"))
        elif res in ("limits.ephemeral-storage", "requests.ephemeral-storage"):
            if ds not in _DIVISOR_OTHER:
                errs.append(invalid(child(path, "divisor"), res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, "
                                    "1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the local ephemeral storage "
                                    "resource"))
        if res.startswith("requests.hugepages-") or res.startswith("limits.hugepages-"):
            if ds not in _DIVISOR_OTHER:
                errs.append(invalid(child(path, "divisor"), res, "only divisor's values 1, 1k, 1M, 1G, 1T, 1P, 1E, "
                                    "1Ki, 1Mi, 1Gi, 1Ti, 1Pi, 1Ei are supported with the hugepages resource"))
    return errs


def _downward_file(f: V, path: str) -> list[FieldError]:
    errs = []
    if not f.get("path"):
        errs.append(required(child(path, "path")))
    errs += validate_local_non_reserved_path(f.get("path") or "", child(path, "path"))
    if f.get("fieldRef") is not None:
        errs += validate_object_field_selector(_d(f["fieldRef"]), VOLUME_DOWNWARD_API_PATHS, child(path, "fieldRef"))
        if f.get("resourceFieldRef") is not None:
            errs.append(invalid(path, "resource", "fieldRef and resourceFieldRef can not be specified simultaneously"))
    elif f.get("resourceFieldRef") is not None:
        errs += validate_resource_field_selector(_d(f["resourceFieldRef"]), child(path, "resourceFieldRef"), True)
    else:
        errs.append(required(path, "one of fieldRef and resourceFieldRef is required"))
    return errs + _mode(f.get("mode"), child(path, "mode"))


# ---- individual sources ---------------------------------------------------------------------------

def _empty_dir(s: V, p: str, **_: Any) -> list[FieldError]:
    sl = s.get("sizeLimit")
    if sl is not None:
        qty, errs = quantity_errors(sl, child(p, "sizeLimit"))
        if errs:
            return errs
        if qty is not None and qty.value < 0:
            return [forbidden(child(p, "sizeLimit"), "SizeLimit field must be a valid resource quantity")]
    return []


def _host_path(s: V, p: str, **_: Any) -> list[FieldError]:
    if not s.get("path"):
        return [required(child(p, "path"))]
    errs = validate_path_no_backsteps(s["path"], child(p, "path"))
    t = s.get("type")
    if t is not None and t not in _HOST_PATH_TYPES:
        errs.append(not_supported(child(p, "type"), t, _HOST_PATH_TYPES))
    return errs


def _git_repo(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "repository") + validate_local_descending_path(s.get("directory") or "", child(p, "directory"))


def _partition(s: V, p: str) -> list[FieldError]:
    v = s.get("partition") or 0
    if isinstance(v, int) and (v < 0 or v > 255):
        return [invalid(child(p, "partition"), v, inclusive_range_error(1, 255))]
    return []


def _gce_pd(s: V, p: str, **_: Any) -> list[FieldError]:
    # upstream validates this source under the path `persistentDisk`
    p = p.rsplit(".", 1)[0] + ".persistentDisk"
    return _req(s, p, "pdName") + _partition(s, p)


def _aws_ebs(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "volumeID") + _partition(s, p)


def _secret(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "secretName") + _mode(s.get("defaultMode"), child(p, "defaultMode"))
    for i, kp in enumerate(_l(s.get("items"))):
        errs += _key_to_path(_d(kp), index(child(p, "items"), i))
    return errs


def _config_map(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "name") + _mode(s.get("defaultMode"), child(p, "defaultMode"))
    for i, kp in enumerate(_l(s.get("items"))):
        errs += _key_to_path(_d(kp), index(child(p, "items"), i))
    return errs


def _nfs(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "server", "path")
    if not (s.get("path") or "").startswith("/"):
        errs.append(invalid(child(p, "path"), s.get("path") or "", "must be an absolute path"))
    return errs


def _iscsi(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "targetPortal", "iqn")
    iqn = s.get("iqn") or ""
    if iqn and not iqn.startswith(("iqn", "eui", "naa")):
        errs.append(invalid(child(p, "iqn"), iqn, "must be valid format starting with iqn, eui, or naa"))
    lun = s.get("lun") or 0
    if isinstance(lun, int) and (lun < 0 or lun > 255):
        errs.append(invalid(child(p, "lun"), lun, inclusive_range_error(0, 255)))
    if (s.get("chapAuthDiscovery") or s.get("chapAuthSession")) and s.get("secretRef") is None:
        errs.append(required(child(p, "secretRef")))
    return errs


def _glusterfs(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = [required(child(p, "endpoints"))] if not s.get("endpoints") else []
    return errs + _req(s, p, "path")


def _flocker(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = []
    name, uuid = s.get("datasetName") or "", s.get("datasetUUID") or ""
    if not name and not uuid:
        errs.append(required(p, "one of datasetName and datasetUUID is required"))
    if name and uuid:
        errs.append(invalid(p, "resource", "datasetName and datasetUUID can not be specified simultaneously"))
    if "/" in name:
        errs.append(invalid(child(p, "datasetName"), name, "must not contain '/'"))
    return errs


def _pvc_source(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "claimName")


def _rbd(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "monitors", "image")


def _cinder(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "volumeID")
    if s.get("secretRef") is not None and not _d(s["secretRef"]).get("name"):
        errs.append(required(child(p, "secretRef", "name")))
    return errs


def _cephfs(s: V, p: str, **_: Any) -> list[FieldError]:
    # upstream validates this source under the lower-case path `cephfs`
    return _req(s, p.rsplit(".", 1)[0] + ".cephfs", "monitors")


def _quobyte(s: V, p: str, **_: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if not s.get("registry"):
        errs.append(required(child(p, "registry"), "must be a host:port pair or multiple pairs separated by commas"))
    elif len(s.get("tenant") or "") >= 65:
        errs.append(required(child(p, "tenant"), "must be a UUID and may not exceed a length of 64 characters"))
    else:
        for pair in s["registry"].split(","):
            host, sep, port = pair.rpartition(":")
            if not sep or not host:
                errs.append(invalid(child(p, "registry"), s["registry"],
                                    "must be a host:port pair or multiple pairs separated by commas"))
    return errs + _req(s, p, "volume")


def _downward_api(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _mode(s.get("defaultMode"), child(p, "defaultMode"))
    for f in _l(s.get("items")):
        errs += _downward_file(_d(f), p)
    return errs


def _fc(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = []
    wwns, wwids = _l(s.get("targetWWNs")), _l(s.get("wwids"))
    if not wwns and not wwids:
        errs.append(required(child(p, "targetWWNs"), "must specify either targetWWNs or wwids, but not both"))
    if wwns and wwids:
        errs.append(invalid(child(p, "targetWWNs"), GoValue("[" + " ".join(wwns) + "]"),
                            "targetWWNs and wwids can not be specified simultaneously"))
    if wwns:
        lun = s.get("lun")
        if lun is None:
            errs.append(required(child(p, "lun"), "lun is required if targetWWNs is specified"))
        elif lun < 0 or lun > 255:
            errs.append(invalid(child(p, "lun"), lun, inclusive_range_error(0, 255)))
    return errs


def _flex(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "driver")
    for k in sorted(_d(s.get("options"))):
        ns = k.split("/", 1)[0] if "/" in k else k
        norm = "." + ns.lower()
        if norm.endswith(".kubernetes.io") or norm.endswith(".k8s.io"):
            errs.append(invalid(key(child(p, "options"), k), k, "kubernetes.io and k8s.io namespaces are reserved"))
    return errs


def _azure_file(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "secretName", "shareName")
    if "secretNamespace" in s and s["secretNamespace"] is not None and not s["secretNamespace"]:
        errs.append(required(child(p, "secretNamespace")))
    return errs


def _vsphere(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "volumePath")


def _photon(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "pdID")


def _portworx(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "volumeID")


def _azure_disk(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "diskName", "diskURI")
    cm = s.get("cachingMode")
    if cm is not None and cm not in ("None", "ReadOnly", "ReadWrite"):
        errs.append(not_supported(child(p, "cachingMode"), cm, ["None", "ReadOnly", "ReadWrite"]))
    kind = s.get("kind")
    if kind is not None and kind not in ("Dedicated", "Managed", "Shared"):
        errs.append(not_supported(child(p, "kind"), kind, ["Dedicated", "Managed", "Shared"]))
    uri = s.get("diskURI") or ""
    if kind == "Managed" and not uri.startswith("/subscriptions/"):
        errs.append(not_supported(child(p, "diskURI"), uri,
                                  ["/subscriptions/{sub-id}/resourcegroups/{group-name}/providers/microsoft.compute/"
                                   "disks/{disk-id}"]))
    if kind is not None and kind != "Managed" and not uri.startswith("https://"):
        errs.append(not_supported(child(p, "diskURI"), uri,
                                  ["https://{account-name}.blob.core.windows.net/{container-name}/{disk-name}.vhd"]))
    return errs


def _storageos(s: V, p: str, pv: bool = False, **_: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    vn = s.get("volumeName") or ""
    if not vn:
        errs.append(required(child(p, "volumeName")))
    else:
        errs += [invalid(child(p, "volumeName"), vn, m) for m in is_dns1123_label(vn)]
    vns = s.get("volumeNamespace") or ""
    if vns:
        errs += [invalid(child(p, "volumeNamespace"), vns, m) for m in is_dns1123_label(vns)]
    if s.get("secretRef") is not None:
        ref = _d(s["secretRef"])
        if not ref.get("name"):
            errs.append(required(child(p, "secretRef", "name")))
        if pv and not ref.get("namespace"):
            errs.append(required(child(p, "secretRef", "namespace")))
    return errs


# Every pod gets the same kube-api-access projection from the ServiceAccount admission, and
# checking one is costly: remember the projections found valid (the errors depend only on the
# content; the path only places them).
_VALID_PROJECTIONS = KnownValid()


def _projected(s: V, p: str, **_: Any) -> list[FieldError]:
    key = content_key(s)
    if key is not None and key in _VALID_PROJECTIONS:
        return []
    errs = _projected_errors(s, p)
    if not errs and key is not None:
        _VALID_PROJECTIONS.add(key)
    return errs


def _projected_errors(s: V, p: str) -> list[FieldError]:
    errs = _mode(s.get("defaultMode"), child(p, "defaultMode"))
    paths: set[str] = set()
    for i, src in enumerate(_l(s.get("sources"))):
        src = _d(src)
        sp = index(child(p, "sources"), i)
        n = 0
        for kind in ("secret", "configMap"):
            if src.get(kind) is None:
                continue
            n += 1
            obj = _d(src[kind])
            pp = child(sp, kind)
            if not obj.get("name"):
                errs.append(required(child(pp, "name")))
            for j, kp in enumerate(_l(obj.get("items"))):
                kp = _d(kp)
                errs += _key_to_path(kp, index(child(pp, "items"), j))
                if kp.get("path"):
                    if _s(kp["path"]) in paths:
                        errs.append(invalid(p, obj.get("name") or "", "conflicting duplicate paths"))
                    paths.add(_s(kp["path"]))
        if src.get("downwardAPI") is not None:
            n += 1
            for f in _l(_d(src["downwardAPI"]).get("items")):
                f = _d(f)
                errs += _downward_file(f, child(sp, "downwardAPI"))
                if f.get("path"):
                    if _s(f["path"]) in paths:
                        errs.append(invalid(p, f["path"], "conflicting duplicate paths"))
                    paths.add(_s(f["path"]))
        if src.get("serviceAccountToken") is not None:
            n += 1
            sat = _d(src["serviceAccountToken"])
            tp = child(sp, "serviceAccountToken")
            exp = sat.get("expirationSeconds", 3600)
            if isinstance(exp, int) and exp < 600:
                errs.append(invalid(child(tp, "expirationSeconds"), exp, "may not specify a duration less than 10 minutes"))
            if isinstance(exp, int) and exp > 1 << 32:
                errs.append(invalid(child(tp, "expirationSeconds"), exp, "may not specify a duration larger than 2^32 seconds"))
            if not sat.get("path"):
                errs.append(required(child(p, "path")))
            else:
                errs += validate_local_non_reserved_path(sat["path"], child(p, "path"))
        if src.get("clusterTrustBundle") is not None:
            n += 1
            ctb = _d(src["clusterTrustBundle"])
            cp = child(sp, "clusterTrustBundle")
            has_name, has_signer = ctb.get("name") is not None, ctb.get("signerName") is not None
            if has_name and has_signer:
                errs.append(invalid(cp, GoValue("&core.ClusterTrustBundleProjection{...}"),
                                    "only one of name and signerName may be used"))
            elif has_name:
                if not ctb["name"]:
                    errs.append(required(child(cp, "name"), "must be a valid object name"))
                if ctb.get("labelSelector") is not None:
                    errs.append(invalid(child(cp, "labelSelector"), GoValue("&v1.LabelSelector{...}"),
                                        "labelSelector must be unset if name is specified"))
            elif has_signer:
                if not ctb["signerName"]:
                    errs.append(required(child(cp, "signerName"), "must be a valid signer name"))
                errs += validate_label_selector(ctb.get("labelSelector"), child(cp, "labelSelector"))
            else:
                errs.append(required(cp, "either name or signerName must be specified"))
            if not ctb.get("path"):
                errs.append(required(child(cp, "path")))
            errs += validate_local_non_reserved_path(ctb.get("path") or "", child(cp, "path"))
            if _s(ctb.get("path")) in paths:
                errs.append(invalid(p, ctb.get("path") or "", "conflicting duplicate paths"))
            paths.add(_s(ctb.get("path")))
        if n > 1:
            errs.append(forbidden(sp, "may not specify more than 1 volume type per source"))
    return errs


def _scale_io(s: V, p: str, **_: Any) -> list[FieldError]:
    return _req(s, p, "gateway", "system", "volumeName")


def validate_csi_driver_name(name: str, path: str) -> list[FieldError]:
    name = _s(name)
    errs = []
    if not name:
        errs.append(required(path))
    if len(name) > 63:
        errs.append(too_long(path, 63))
    return errs + [invalid(path, name, m) for m in is_dns1123_subdomain(name.lower())]


def _csi(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = validate_csi_driver_name(s.get("driver") or "", child(p, "driver"))
    ref = s.get("nodePublishSecretRef")
    if ref is not None:
        name = _d(ref).get("name") or ""
        if not name:
            errs.append(required(child(p, "nodePublishSecretRef", "name")))
        else:
            errs += [invalid(child(p, "name"), name, m) for m in name_is_dns_subdomain(name, False)]
    return errs


def _ephemeral(s: V, p: str, pod_name: str = "", vol_name: str = "", **_: Any) -> list[FieldError]:
    tpl = s.get("volumeClaimTemplate")
    if tpl is None:
        return [required(child(p, "volumeClaimTemplate"))]
    tpl = _d(tpl)
    tp = child(p, "volumeClaimTemplate")
    errs = validate_template_object_meta(tpl.get("metadata"), child(tp, "metadata"))
    errs += validate_pvc_spec(_d(tpl.get("spec")), child(tp, "spec"))
    if pod_name and vol_name:
        pvc = f"{pod_name}-{vol_name}"
        errs += [invalid(child(p.rsplit(".", 1)[0], "name"), vol_name, f'PVC name "{pvc}": {m}')
                 for m in name_is_dns_subdomain(pvc, False)]
    return errs


def _image(s: V, p: str, resource_is_pod: bool = False, **_: Any) -> list[FieldError]:
    errs: list[FieldError] = []
    if resource_is_pod and not s.get("reference"):
        errs.append(required(child(p, "reference")))
    pp = s.get("pullPolicy") or ""
    if not pp:
        errs.append(required(child(p, "pullPolicy")))
    elif pp not in ("Always", "IfNotPresent", "Never"):
        errs.append(not_supported(child(p, "pullPolicy"), pp, ["Always", "IfNotPresent", "Never"]))
    return errs


def _local(s: V, p: str, **_: Any) -> list[FieldError]:
    if not s.get("path"):
        return [required(child(p, "path"))]
    return validate_path_no_backsteps(s["path"], child(p, "path"))


Validator = Callable[..., list[FieldError]]

# (wire key, path name used in the "more than 1 volume type" error, validator), in upstream's order.
_POD_SOURCES: list[tuple[str, str, Validator]] = [
    ("emptyDir", "emptyDir", _empty_dir), ("hostPath", "hostPath", _host_path), ("gitRepo", "gitRepo", _git_repo),
    ("gcePersistentDisk", "gcePersistentDisk", _gce_pd), ("awsElasticBlockStore", "awsElasticBlockStore", _aws_ebs),
    ("secret", "secret", _secret), ("nfs", "nfs", _nfs), ("iscsi", "iscsi", _iscsi),
    ("glusterfs", "glusterfs", _glusterfs), ("flocker", "flocker", _flocker),
    ("persistentVolumeClaim", "persistentVolumeClaim", _pvc_source), ("rbd", "rbd", _rbd),
    ("cinder", "cinder", _cinder), ("cephfs", "cephFS", _cephfs), ("quobyte", "quobyte", _quobyte),
    # upstream's typo `downwarAPI` is part of its message
    ("downwardAPI", "downwarAPI", _downward_api), ("fc", "fc", _fc), ("flexVolume", "flexVolume", _flex),
    ("configMap", "configMap", _config_map), ("azureFile", "azureFile", _azure_file),
    ("vsphereVolume", "vsphereVolume", _vsphere), ("photonPersistentDisk", "photonPersistentDisk", _photon),
    ("portworxVolume", "portworxVolume", _portworx), ("azureDisk", "azureDisk", _azure_disk),
    ("storageos", "storageos", _storageos), ("projected", "projected", _projected),
    ("scaleIO", "scaleIO", _scale_io), ("csi", "csi", _csi), ("ephemeral", "ephemeral", _ephemeral),
    ("image", "image", _image),
]


_SOURCE_ORDER = {wire: i for i, (wire, _, _) in enumerate(_POD_SOURCES)}


def validate_volume_source(vol: V, path: str, vol_name: str, pod_name: str = "",
                           resource_is_pod: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    n = 0
    # only the sources the volume sets, in _POD_SOURCES order (a volume has a handful of keys)
    present = sorted(_SOURCE_ORDER[k] for k, v in vol.items() if v is not None and k in _SOURCE_ORDER)
    for wire, err_name, fn in (_POD_SOURCES[i] for i in present):
        if n > 0:
            errs.append(forbidden(child(path, err_name), "may not specify more than 1 volume type"))
            continue
        n += 1
        errs += fn(_d(vol[wire]), child(path, wire), pod_name=pod_name, vol_name=vol_name,
                   resource_is_pod=resource_is_pod)
        if wire == "iscsi" and _d(vol[wire]).get("initiatorName") is not None \
                and len(vol_name + ":" + (_d(vol[wire]).get("targetPortal") or "")) > 64:
            errs.append(invalid(child(path, "name"), vol_name, "Total length of <volume name>:<iscsi.targetPortal> "
                                "must be under 64 characters if iscsi.initiatorName is specified."))
    if n == 0:
        errs.append(required(path, "must specify a volume type"))
    return errs


def validate_volumes(volumes: Any, pod_name: str, path: str,
                     resource_is_pod: bool = False) -> tuple[dict[str, V], list[FieldError]]:
    """ValidateVolumes: returns the valid volumes by name (for mount checks) and the errors."""
    errs: list[FieldError] = []
    names: dict[str, V] = {}
    created_pvcs = set()
    if pod_name:
        created_pvcs = {f"{pod_name}-{_d(v).get('name', '')}" for v in _l(volumes) if _d(v).get("ephemeral")}
    for i, vol in enumerate(_l(volumes)):
        vol = _d(vol)
        p = index(path, i)
        name = _s(vol.get("name"))
        el = validate_volume_source(vol, p, name, pod_name, resource_is_pod)
        if not name:
            el.append(required(child(p, "name")))
        else:
            el += [invalid(child(p, "name"), name, m) for m in is_dns1123_label(name)]
        if name in names:
            el.append(duplicate(child(p, "name"), name))
        if not el:
            names[name] = vol
        else:
            errs += el
        claim = _d(vol.get("persistentVolumeClaim")).get("claimName")
        if claim and claim in created_pvcs:
            errs.append(invalid(child(p, "persistentVolumeClaim", "claimName"), claim,
                                "must not reference a PVC that gets created for an ephemeral volume"))
    return names, errs


# ---- node selectors (pod affinity and PV node affinity) --------------------------------------------

def _node_selector_requirement(rq: V, allow_invalid_value: bool, path: str) -> list[FieldError]:
    from .meta import validate_label_name
    from .names import is_label_value

    errs: list[FieldError] = []
    op = rq.get("operator") or ""
    values = _l(rq.get("values"))
    if op in ("In", "NotIn"):
        if not values:
            errs.append(required(child(path, "values"), "must be specified when `operator` is 'In' or 'NotIn'"))
    elif op in ("Exists", "DoesNotExist"):
        if values:
            errs.append(forbidden(child(path, "values"),
                                  "may not be specified when `operator` is 'Exists' or 'DoesNotExist'"))
    elif op in ("Gt", "Lt"):
        if len(values) != 1:
            errs.append(required(child(path, "values"),
                                 "must be specified single value when `operator` is 'Lt' or 'Gt'"))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    errs += validate_label_name(rq.get("key") or "", child(path, "key"))
    if not allow_invalid_value:
        for j, v in enumerate(values):
            errs += [invalid(index(child(path, "values"), j), v, m) for m in is_label_value(str(v))]
    return errs


def _node_field_requirement(rq: V, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    op = rq.get("operator") or ""
    values = _l(rq.get("values"))
    if op in ("In", "NotIn"):
        if len(values) != 1:
            errs.append(required(child(path, "values"),
                                 "must be only one value when `operator` is 'In' or 'NotIn' for node field selector"))
    else:
        errs.append(invalid(child(path, "operator"), op, "not a valid selector operator"))
    k = rq.get("key") or ""
    if k != "metadata.name":
        errs.append(invalid(child(path, "key"), k, "not a valid field selector key"))
    else:
        for i, v in enumerate(values):
            errs += [invalid(index(child(path, "values"), i), v, m) for m in name_is_dns_subdomain(str(v), False)]
    return errs


def validate_node_selector_term(term: V, allow_invalid_value: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    for j, rq in enumerate(_l(term.get("matchExpressions"))):
        errs += _node_selector_requirement(_d(rq), allow_invalid_value, index(child(path, "matchExpressions"), j))
    for j, rq in enumerate(_l(term.get("matchFields"))):
        errs += _node_field_requirement(_d(rq), index(child(path, "matchFields"), j))
    return errs


def validate_node_selector(ns: V, path: str, allow_invalid_value: bool = False) -> list[FieldError]:
    terms = _l(ns.get("nodeSelectorTerms"))
    tp = child(path, "nodeSelectorTerms")
    if not terms:
        return [required(tp, "must have at least one node selector term")]
    errs: list[FieldError] = []
    for i, t in enumerate(terms):
        errs += validate_node_selector_term(_d(t), allow_invalid_value, index(tp, i))
    return errs


# ---- PersistentVolume / PersistentVolumeClaim --------------------------------------------------------

def _pv_secret_ref(ref: V, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not ref.get("name"):
        errs.append(required(child(path, "name")))
    else:
        errs += [invalid(child(path, "name"), ref["name"], m) for m in is_dns1123_subdomain(ref["name"])]
    if not ref.get("namespace"):
        errs.append(required(child(path, "namespace")))
    else:
        errs += [invalid(child(path, "namespace"), ref["namespace"], m) for m in is_dns1123_label(ref["namespace"])]
    return errs


def _csi_pv(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = validate_csi_driver_name(s.get("driver") or "", child(p, "driver"))
    if not s.get("volumeHandle"):
        errs.append(required(child(p, "volumeHandle")))
    for f in ("controllerPublishSecretRef", "controllerExpandSecretRef", "nodePublishSecretRef", "nodeExpandSecretRef"):
        if s.get(f) is not None:
            errs += _pv_secret_ref(_d(s[f]), child(p, f))
    return errs


def _glusterfs_pv(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _glusterfs(s, p)
    if "endpointsNamespace" in s and s["endpointsNamespace"] is not None:
        ns = s["endpointsNamespace"]
        if ns == "":
            errs.append(invalid(child(p, "endpointsNamespace"), ns,
                                "if the endpointnamespace is set, it must be a valid namespace name"))
        else:
            errs += [invalid(child(p, "endpointsNamespace"), ns, m) for m in validate_namespace_name(ns, False)]
    return errs


def _cinder_pv(s: V, p: str, **_: Any) -> list[FieldError]:
    errs = _req(s, p, "volumeID")
    if s.get("secretRef") is not None:
        ref = _d(s["secretRef"])
        if not ref.get("name"):
            errs.append(required(child(p, "secretRef", "name")))
        if not ref.get("namespace"):
            errs.append(required(child(p, "secretRef", "namespace")))
    return errs


def _iscsi_pv(s: V, p: str, pv_name: str = "", **_: Any) -> list[FieldError]:
    errs = _req(s, p, "targetPortal")
    if s.get("initiatorName") is not None and len(pv_name + ":" + (s.get("targetPortal") or "")) > 64:
        errs.append(invalid(child(p, "targetportal"), s.get("targetPortal") or "",
                            "Total length of <volume name>:<iscsi.targetPortal> must be under 64 characters if "
                            "iscsi.initiatorName is specified."))
    if not s.get("iqn"):
        errs.append(required(child(p, "iqn")))
    elif not s["iqn"].startswith(("iqn", "eui", "naa")):
        errs.append(invalid(child(p, "iqn"), s["iqn"], "must be valid format"))
    lun = s.get("lun") or 0
    if isinstance(lun, int) and (lun < 0 or lun > 255):
        errs.append(invalid(child(p, "lun"), lun, inclusive_range_error(0, 255)))
    if (s.get("chapAuthDiscovery") or s.get("chapAuthSession")) and s.get("secretRef") is None:
        errs.append(required(child(p, "secretRef")))
    if s.get("secretRef") is not None and not _d(s["secretRef"]).get("name"):
        errs.append(required(child(p, "secretRef", "name")))
    return errs


def _azure_file_pv(s: V, p: str, **_: Any) -> list[FieldError]:
    return _azure_file(s, p)


_PV_SOURCES: list[tuple[str, Validator]] = [
    ("hostPath", _host_path), ("gcePersistentDisk", _gce_pd), ("awsElasticBlockStore", _aws_ebs),
    ("glusterfs", _glusterfs_pv), ("flocker", _flocker), ("nfs", _nfs), ("rbd", _rbd), ("quobyte", _quobyte),
    ("cephfs", _cephfs), ("iscsi", _iscsi_pv), ("cinder", _cinder_pv), ("fc", _fc), ("flexVolume", _flex),
    ("azureFile", _azure_file_pv), ("vsphereVolume", _vsphere), ("photonPersistentDisk", _photon),
    ("portworxVolume", _portworx), ("azureDisk", _azure_disk), ("scaleIO", _scale_io), ("local", _local),
    ("storageos", lambda s, p, **kw: _storageos(s, p, pv=True)), ("csi", _csi_pv),
]
_PV_ERR_NAMES = {"cephfs": "cephFS"}


def validate_pv_spec(spec: V, pv_name: str, path: str = "spec") -> list[FieldError]:
    """ValidatePersistentVolumeSpec (not the inline-volume variant)."""
    errs: list[FieldError] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(required(child(path, "accessModes")))
    errs += _access_modes(modes, child(path, "accessModes"))
    cap = _d(spec.get("capacity"))
    cp = child(path, "capacity")
    if not cap:
        errs.append(required(cp))
    if "storage" not in cap or len(cap) > 1:
        errs.append(not_supported(cp, GoValue(_go_resource_list(cap)), ["storage"]))
    for r in sorted(cap):
        qty, qe = quantity_errors(cap[r], key(cp, r))
        errs += qe
        if qty is not None:
            if qty.int_value() < 0:
                errs.append(invalid(key(cp, r), qty.int_value(), "must be a valid resource quantity"))
            if qty.value <= 0:
                errs.append(invalid(key(cp, r), qty.canonical(), "must be greater than zero"))
    rp = spec.get("persistentVolumeReclaimPolicy") or ""
    if rp and rp not in ("Delete", "Recycle", "Retain"):
        errs.append(not_supported(child(path, "persistentVolumeReclaimPolicy"), rp, ["Delete", "Recycle", "Retain"]))
    affinity_set = False
    if spec.get("nodeAffinity") is not None:
        affinity_set = True
        na = _d(spec["nodeAffinity"])
        if na.get("required") is not None:
            errs += validate_node_selector(_d(na["required"]), child(path, "nodeAffinity", "required"))
        else:
            errs.append(required(child(path, "nodeAffinity", "required"), "must specify required node constraints"))
    n = 0
    for wire, fn in _PV_SOURCES:
        if spec.get(wire) is None:
            continue
        if n > 0 and wire != "flexVolume":
            errs.append(forbidden(child(path, _PV_ERR_NAMES.get(wire, wire)), "may not specify more than 1 volume type"))
            continue
        n += 1
        errs += fn(_d(spec[wire]), child(path, wire), pv_name=pv_name)
        if wire == "local" and not affinity_set:
            errs.append(required(child(path, "nodeAffinity"), "Local volume requires node affinity"))
    if n == 0:
        errs.append(required(path, "must specify a volume type"))
    hp = _d(spec.get("hostPath")).get("path")
    if hp and posixpath.normpath(hp) == "/" and rp == "Recycle":
        errs.append(forbidden(child(path, "persistentVolumeReclaimPolicy"), "may not be 'recycle' for a hostPath mount of '/'"))
    sc = spec.get("storageClassName") or ""
    if sc:
        errs += [invalid(child(path, "storageClassName"), sc, m) for m in name_is_dns_subdomain(sc, False)]
    vm = spec.get("volumeMode")
    if vm is not None and vm not in ("Block", "Filesystem"):
        errs.append(not_supported(child(path, "volumeMode"), vm, ["Block", "Filesystem"]))
    return errs


def _go_resource_list(rl: V) -> str:
    inner = ", ".join(f'"{k}":resource.MustParse("{v}")' for k, v in sorted(rl.items()))
    return "core.ResourceList{" + inner + "}"


def _access_modes(modes: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rwop = other = False
    for m in modes:
        if m not in SUPPORTED_ACCESS_MODES:
            errs.append(not_supported(path, m, SUPPORTED_ACCESS_MODES))
        if m == "ReadWriteOncePod":
            rwop = True
        elif m in SUPPORTED_ACCESS_MODES:
            other = True
    if rwop and other:
        errs.append(forbidden(path, "may not use ReadWriteOncePod with other access modes"))
    return errs


def _data_source(ds: V, path: str) -> list[FieldError]:
    errs = _req(ds, path, "name", "kind")
    group = ds.get("apiGroup") or ""
    if not group and ds.get("kind") != "PersistentVolumeClaim":
        errs.append(invalid(path, ds.get("kind") or "", "must be 'PersistentVolumeClaim' when referencing the default apiGroup"))
    if group:
        errs += [invalid(child(path, "apiGroup"), group, m) for m in is_dns1123_subdomain(group)]
    return errs


def validate_pvc_spec(spec: V, path: str = "spec") -> list[FieldError]:
    """ValidatePersistentVolumeClaimSpec."""
    errs: list[FieldError] = []
    modes = _l(spec.get("accessModes"))
    if not modes:
        errs.append(required(child(path, "accessModes"), "at least 1 access mode is required"))
    if spec.get("selector") is not None:
        errs += validate_label_selector(spec["selector"], child(path, "selector"))
    errs += _access_modes(modes, child(path, "accessModes"))
    reqs = _d(_d(spec.get("resources")).get("requests"))
    sp = key(child(path, "resources"), "storage")
    if "storage" not in reqs:
        errs.append(required(sp))
    else:
        qty, qe = quantity_errors(reqs["storage"], sp)
        errs += qe
        if qty is not None:
            if qty.value <= 0:
                errs.append(invalid(sp, qty.canonical(), "must be greater than zero"))
    sc = spec.get("storageClassName")
    if sc:
        errs += [invalid(child(path, "storageClassName"), sc, m) for m in name_is_dns_subdomain(sc, False)]
    vm = spec.get("volumeMode")
    if vm is not None and vm not in ("Block", "Filesystem"):
        errs.append(not_supported(child(path, "volumeMode"), vm, ["Block", "Filesystem"]))
    ds, dsr = spec.get("dataSource"), spec.get("dataSourceRef")
    if ds is not None:
        errs += _data_source(_d(ds), child(path, "dataSource"))
    if dsr is not None:
        errs += _data_source(_d(dsr), child(path, "dataSourceRef"))
        ns = _d(dsr).get("namespace") or ""
        if ns:
            errs += [invalid(child(path, "dataSourceRef", "namespace"), ns, m) for m in validate_namespace_name(ns, False)]
    if dsr is not None and _d(dsr).get("namespace"):
        if ds is not None:
            errs.append(invalid(path, GoValue(child(path, "dataSource")),
                                "may not be specified when dataSourceRef.namespace is specified"))
    elif ds is not None and dsr is not None:
        a, b = _d(ds), _d(dsr)
        if (a.get("apiGroup"), a.get("kind"), a.get("name")) != (b.get("apiGroup"), b.get("kind"), b.get("name")):
            errs.append(invalid(path, GoValue(child(path, "dataSource")), "must match dataSourceRef"))
    vac = spec.get("volumeAttributesClassName")
    if vac:
        errs += [invalid(child(path, "volumeAttributesClassName"), vac, m) for m in name_is_dns_subdomain(vac, False)]
    return errs
