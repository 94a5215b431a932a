"""Validation of the core/v1 kinds, as upstream's pkg/apis/core/validation, and their
registration in VALIDATORS / UPDATE_VALIDATORS / STATUS_UPDATE_VALIDATORS.

Pods and templates live in pod.py (containers in containers.py), Services in services.py,
volume sources and PV/PVC specs in volumes.py; the other kinds are here.
"""

from __future__ import annotations

import base64
import binascii
import copy
import json
from collections.abc import Callable
from typing import Any

from ..errors import FieldError
from . import STATUS_UPDATE_VALIDATORS, UPDATE_VALIDATORS, VALIDATORS
from ._json import as_dict as _d
from ._json import as_list as _l
from ._json import as_str as _s
from .field import (
    GoValue,
    child,
    duplicate,
    forbidden,
    go_string_map,
    go_string_slice,
    index,
    invalid,
    key,
    not_supported,
    readable_diff,
    required,
    too_long,
)
from .meta import (
    FIELD_IMMUTABLE,
    _semantic,
    meta_of,
    validate_finalizer_name,
    validate_immutable,
    validate_kube_finalizer_name,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from .names import (
    is_config_map_key,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_cidr,
    is_valid_ip,
    is_valid_port_num,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_path_segment_name,
)
from .pod import (
    validate_binding,
    validate_pod,
    validate_pod_status_update,
    validate_pod_template,
    validate_pod_template_spec,
    validate_pod_template_update,
    validate_pod_update,
)
from .resources import (
    STANDARD_QUOTA_SCOPES,
    is_overcommit_allowed,
    is_standard_quota_resource,
    quantity_errors,
    validate_container_resource_name,
    validate_resource_name,
    validate_resource_quantity_value,
    validate_resource_quota_resource_name,
)
from .services import (
    validate_cluster_ip_in_range,
    validate_node_port_in_range,
    validate_non_special_ip,
    validate_service,
    validate_service_status_update,
    validate_service_update,
)
from .volumes import validate_pv_spec, validate_pvc_spec

__all__ = [
    "validate_service", "validate_service_update", "validate_service_status_update", "validate_config_map",
    "validate_config_map_update", "validate_secret", "validate_secret_update", "validate_namespace",
    "validate_namespace_update", "validate_namespace_status_update", "validate_node", "validate_node_update",
    "validate_service_account", "validate_endpoints", "validate_event", "validate_event_update",
    "validate_limit_range", "validate_resource_quota", "validate_resource_quota_update", "validate_pv",
    "validate_pv_update", "validate_pvc", "validate_pvc_update", "validate_replication_controller",
    "validate_replication_controller_update", "validate_node_port_in_range", "validate_cluster_ip_in_range",
    "MAX_SECRET_SIZE",
]

MAX_SECRET_SIZE = 1 * 1024 * 1024
_PROTOCOLS = ["SCTP", "TCP", "UDP"]

V = dict[str, Any]






def _ip_errs(path: str, value: Any) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_valid_ip(value if isinstance(value, str) else "")]


# ---- ConfigMap / Secret --------------------------------------------------------------------------

def validate_config_map(cm: V) -> list[FieldError]:
    errs = validate_object_meta(cm, True, name_is_dns_subdomain)
    data, binary = _d(cm.get("data")), _d(cm.get("binaryData"))
    total = 0
    for k in sorted(data):
        errs += [invalid(key("data", k), k, m) for m in is_config_map_key(k)]
        if k in binary:
            errs.append(invalid(key("data", k), k, "duplicate of key present in binaryData"))
        total += len(str(data[k]).encode())
    for k in sorted(binary):
        errs += [invalid(key("binaryData", k), k, m) for m in is_config_map_key(k)]
        total += _b64_len(binary[k])
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("", MAX_SECRET_SIZE))
    return errs


def _immutable_data(new: V, old: V, fields: tuple[str, ...]) -> list[FieldError]:
    errs: list[FieldError] = []
    if old.get("immutable") is True:
        if new.get("immutable") is not True:
            errs.append(forbidden("immutable", "field is immutable when `immutable` is set"))
        for f in fields:
            if _d(new.get(f)) != _d(old.get(f)):
                errs.append(forbidden(f, "field is immutable when `immutable` is set"))
    return errs


def validate_config_map_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _immutable_data(new, old, ("data", "binaryData"))
    return errs + validate_config_map(new)


def _b64_len(v: Any) -> int:
    try:
        return len(base64.b64decode(str(v), validate=False))
    except (binascii.Error, ValueError):
        return len(str(v)) * 3 // 4


def _b64(v: Any) -> bytes | None:
    try:
        return base64.b64decode(str(v), validate=True)
    except (binascii.Error, ValueError):
        return None


def _go_json_error(raw: bytes) -> str | None:
    """The error Go's json.Unmarshal into a map gives for bad docker config content."""
    text = raw.decode("utf-8", "replace")
    if not text.strip():
        return "unexpected end of JSON input"
    try:
        v = json.loads(text)
    except json.JSONDecodeError as e:
        if e.pos >= len(text.rstrip()):
            return "unexpected end of JSON input"
        ch = text[e.pos]
        what = "looking for beginning of value" if e.pos == len(text) - len(text.lstrip()) else "after top-level value"
        if e.msg.startswith("Expecting property name"):
            what = "looking for beginning of object key string"
        return f"invalid character {json.dumps(ch)[1:-1]!r} {what}".replace('"', "'") if ch != "'" else \
            f"invalid character '\\'' {what}"
    if not isinstance(v, dict):
        kind = {list: "array", str: "string", bool: "bool", type(None): "null"}.get(type(v), "number")
        if v is None:
            return None
        return f"json: cannot unmarshal {kind} into Go value of type map[string]interface {{}}"
    return None


def validate_secret(s: V) -> list[FieldError]:
    errs = validate_object_meta(s, True, name_is_dns_subdomain)
    data = _d(s.get("data"))
    total = 0
    for k in sorted(data):
        errs += [invalid(key("data", k), k, m) for m in is_config_map_key(k)]
        total += _b64_len(data[k])
    if total > MAX_SECRET_SIZE:
        errs.append(too_long("data", MAX_SECRET_SIZE))
    t = s.get("type") or ""
    ann = _d(meta_of(s).get("annotations"))
    if t == "kubernetes.io/service-account-token":
        if not ann.get("kubernetes.io/service-account.name"):
            errs.append(required("metadata.annotations[kubernetes.io/service-account.name]"))
    elif t in ("kubernetes.io/dockercfg", "kubernetes.io/dockerconfigjson"):
        k = ".dockercfg" if t == "kubernetes.io/dockercfg" else ".dockerconfigjson"
        if k not in data:
            errs.append(required(key("data", k)))
        else:
            raw = _b64(data[k]) or b""
            msg = _go_json_error(raw)
            if msg:
                errs.append(invalid(key("data", k), "<secret contents redacted>", msg))
    elif t == "kubernetes.io/basic-auth":
        if "username" not in data and "password" not in data:
            errs += [required(key("data", "username")), required(key("data", "password"))]
    elif t == "kubernetes.io/ssh-auth":
        if not data.get("ssh-privatekey"):
            errs.append(required(key("data", "ssh-privatekey")))
    elif t == "kubernetes.io/tls":
        for k in ("tls.crt", "tls.key"):
            if k not in data:
                errs.append(required(key("data", k)))
    return errs


def validate_secret_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += validate_immutable(new.get("type") or "", old.get("type") or "", "type")
    errs += _immutable_data(new, old, ("data",))
    return errs + validate_secret(new)


# ---- Namespace / ServiceAccount / Node -----------------------------------------------------------

def validate_namespace(ns: V) -> list[FieldError]:
    errs = validate_object_meta(ns, False, name_is_dns_label)
    for f in _l(_d(ns.get("spec")).get("finalizers")):
        errs += validate_finalizer_name(str(f), "spec.finalizers")
        errs += validate_kube_finalizer_name(str(f), "spec.finalizers")
    return errs


def validate_namespace_update(new: V, old: V) -> list[FieldError]:
    return validate_object_meta_update(new, old)


def validate_namespace_status_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    phase = _d(new.get("status")).get("phase") or ""
    if not meta_of(new).get("deletionTimestamp"):
        if phase != "Active":
            errs.append(invalid("status.Phase", phase, "may only be 'Active' if `deletionTimestamp` is empty"))
    elif phase != "Terminating":
        errs.append(invalid("status.Phase", phase, "may only be 'Terminating' if `deletionTimestamp` is not empty"))
    return errs


def validate_namespace_finalize_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    for i, f in enumerate(_l(_d(new.get("spec")).get("finalizers"))):
        errs += validate_finalizer_name(str(f), f"spec.finalizers[{i}]")
        errs += validate_kube_finalizer_name(str(f), f"spec.finalizers[{i}]")
    return errs


def validate_service_account(sa: V) -> list[FieldError]:
    return validate_object_meta(sa, True, name_is_dns_subdomain)


def validate_service_account_update(new: V, old: V) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_service_account(new)


def _taints(taints: Any, path: str) -> list[FieldError]:
    from .meta import validate_label_name
    from .names import is_label_value

    errs: list[FieldError] = []
    seen: dict[str, set[str]] = {}
    for i, t in enumerate(_l(taints)):
        t = _d(t)
        p = index(path, i)
        k, v, eff = _s(t.get("key")), _s(t.get("value")), _s(t.get("effect"))
        errs += validate_label_name(k, child(p, "key"))
        msgs = is_label_value(v)
        if msgs:
            errs.append(invalid(child(p, "value"), v, ";".join(msgs)))
        if not eff:
            errs.append(required(child(p, "effect")))
        elif eff not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(not_supported(child(p, "effect"), eff, ["NoSchedule", "PreferNoSchedule", "NoExecute"]))
        if k in seen.get(eff, set()):
            e = duplicate(p, GoValue(f'core.Taint{{Key:"{k}", Value:"{v}", Effect:"{eff}", TimeAdded:<nil>}}'))
            e.detail = "taints must be unique by key and effect pair"
            errs.append(e)
            continue
        seen.setdefault(eff, set()).add(k)
    return errs


def _node_resources(node: V) -> list[FieldError]:
    errs: list[FieldError] = []
    st = _d(node.get("status"))
    for f in ("capacity", "allocatable"):
        rl = _d(st.get(f))
        for k in sorted(rl):
            qty, qe = quantity_errors(rl[k], f"status.{f}.{k}")
            errs += qe
            if qty is not None:
                errs += validate_resource_quantity_value(k, qty, f"status.{f}.{k}")
    return errs


def _node_pod_cidrs(node: V) -> list[FieldError]:
    import ipaddress

    cidrs = _l(_d(node.get("spec")).get("podCIDRs"))
    errs: list[FieldError] = []
    for i, c in enumerate(cidrs):
        errs += [invalid(f"spec.podCIDRs[{i}]", c, m) for m in is_valid_cidr(str(c))]
    if len(cidrs) > 1 and not errs:
        fams = {ipaddress.ip_network(str(c), strict=False).version for c in cidrs}
        if len(fams) != 2 or len(cidrs) > 2:
            errs.append(invalid("spec.podCIDRs", go_string_slice(cidrs), "may specify no more than one CIDR for each IP family"))
        seen: set[str] = set()
        for i, c in enumerate(cidrs):
            if c in seen:
                errs.append(duplicate(f"spec.podCIDRs[{i}]", c))
            seen.add(c)
    return errs


def validate_node(node: V) -> list[FieldError]:
    errs = validate_object_meta(node, False, name_is_dns_subdomain)
    errs += _taints(_d(node.get("spec")).get("taints"), "metadata.taints")
    errs += _node_resources(node)
    return errs + _node_pod_cidrs(node)


def validate_node_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _node_resources(new)
    seen: list[Any] = []
    for i, a in enumerate(_l(_d(new.get("status")).get("addresses"))):
        if a in seen:
            ad = _d(a)
            errs.append(duplicate(f"status.addresses[{i}]",
                                  GoValue(f'core.NodeAddress{{Type:"{ad.get("type", "")}", Address:"{ad.get("address", "")}"}}')))
        seen.append(a)
    ns, os_ = _d(new.get("spec")), _d(old.get("spec"))
    ocidrs, ncidrs = _l(os_.get("podCIDRs")), _l(ns.get("podCIDRs"))
    if ocidrs and ocidrs != ncidrs:
        errs.append(forbidden("spec.podCIDRs", 'node updates may not change podCIDR except from "" to valid'))
    if os_.get("providerID") and os_.get("providerID") != ns.get("providerID"):
        errs.append(forbidden("spec.providerID", 'node updates may not change providerID except from "" to valid'))
    errs += _taints(ns.get("taints"), "metadata.taints")
    if ns.get("externalID") != os_.get("externalID"):
        errs.append(forbidden("spec.externalID", "may not be updated"))
    return errs


# ---- Endpoints / Event ---------------------------------------------------------------------------

def validate_endpoints(ep: V) -> list[FieldError]:
    errs = validate_object_meta(ep, True, name_is_dns_subdomain)
    for i, ss in enumerate(_l(ep.get("subsets"))):
        ss = _d(ss)
        p = f"subsets[{i}]"
        if not _l(ss.get("addresses")) and not _l(ss.get("notReadyAddresses")):
            errs.append(required(p, "must specify `addresses` or `notReadyAddresses`"))
        for kind in ("addresses", "notReadyAddresses"):
            for j, a in enumerate(_l(ss.get(kind))):
                a = _d(a)
                ap = f"{p}.{kind}[{j}]"
                ip = a.get("ip") or ""
                errs += _ip_errs(child(ap, "ip"), ip)
                if a.get("hostname"):
                    errs += [invalid(child(ap, "hostname"), a["hostname"], m) for m in is_dns1123_label(a["hostname"])]
                if a.get("nodeName") is not None:
                    errs += [invalid(child(ap, "nodeName"), a["nodeName"], m)
                             for m in name_is_dns_subdomain(str(a["nodeName"]), False)]
                errs += validate_non_special_ip(ip, child(ap, "ip"))
        ports = _l(ss.get("ports"))
        for j, port in enumerate(ports):
            port = _d(port)
            pp = f"{p}.ports[{j}]"
            name = port.get("name") or ""
            if len(ports) > 1 and not name:
                errs.append(required(child(pp, "name")))
            elif name:
                errs += [invalid(child(pp, "name"), name, m) for m in is_dns1123_label(name)]
            errs += [invalid(child(pp, "port"), port.get("port") or 0, m) for m in is_valid_port_num(port.get("port") or 0)]
            proto = port.get("protocol") or ""
            if not proto:
                errs.append(required(child(pp, "protocol")))
            elif proto not in _PROTOCOLS:
                errs.append(not_supported(child(pp, "protocol"), proto, _PROTOCOLS))
            if port.get("appProtocol") is not None:
                errs += [invalid(child(pp, "appProtocol"), port["appProtocol"], m)
                         for m in is_qualified_name(str(port["appProtocol"]))]
    return errs


def validate_endpoints_update(new: V, old: V) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_endpoints(new)


def _legacy_event(ev: V) -> list[FieldError]:
    """legacyValidateEvent: namespace agreement and, for new-style events, the reporting fields."""
    md = meta_of(ev)
    ns = md.get("namespace") or ""
    ions = _d(ev.get("involvedObject")).get("namespace") or ""
    errs: list[FieldError] = []
    if not ev.get("eventTime"):
        if not ions:
            if ns not in ("", "default"):
                errs.append(invalid("involvedObject.namespace", ions, "does not match event.namespace"))
        elif ns != ions:
            errs.append(invalid("involvedObject.namespace", ions, "does not match event.namespace"))
    else:
        if not ions and ns not in ("default", "kube-system"):
            errs.append(invalid("involvedObject.namespace", ions, "does not match event.namespace"))
        rc = ev.get("reportingComponent") or ""
        if not rc:
            errs.append(required("reportingController"))
        errs += [invalid("reportingController", rc, m) for m in is_qualified_name(rc)]
        for f, limit in (("reportingInstance", 128), ("action", 128), ("reason", 128)):
            v = ev.get(f) or ""
            if not v:
                errs.append(required(f))
            if len(v) > limit:
                errs.append(invalid(f, "", f"can have at most {limit} characters"))
        if len(ev.get("message") or "") > 1024:
            errs.append(invalid("message", "", "can have at most 1024 characters"))
    return errs + [invalid("namespace", ns, m) for m in is_dns1123_subdomain(ns)]


def _generic_event_meta(ev: V) -> list[FieldError]:
    # the API server's common ObjectMeta check (names only need to be URL path segments)
    return validate_object_meta(ev, True, validate_path_segment_name, kube_finalizers=False)


def validate_event(ev: V, strict: bool = False) -> list[FieldError]:
    """ValidateEventCreate. core/v1 requests get the legacy checks; strict adds events.k8s.io/v1's."""
    errs = _legacy_event(ev)
    if not strict:
        return errs or _generic_event_meta(ev)
    errs += validate_object_meta(ev, True, name_is_dns_subdomain)
    series = ev.get("series")
    if series is not None:
        if (_d(series).get("count") or 0) < 2:
            errs.append(invalid("series.count", "", "should be at least 2"))
        if not _d(series).get("lastObservedTime"):
            errs.append(required("series.lastObservedTime"))
    if not ev.get("eventTime"):
        errs.append(required("eventTime"))
    if ev.get("type") not in ("Normal", "Warning"):
        errs.append(invalid("type", "", f"has invalid value: {ev.get('type') or ''}"))
    for f in ("firstTimestamp", "lastTimestamp", "count"):
        if ev.get(f):
            errs.append(invalid(f, "", "needs to be unset"))
    src = _d(ev.get("source"))
    if src.get("component") or src.get("host"):
        errs.append(invalid("source", "", "needs to be unset"))
    return errs


_EVENT_IMMUTABLE = ("involvedObject", "reason", "message", "source", "firstTimestamp", "lastTimestamp", "count",
                    "type", "eventTime", "action", "related", "reportingComponent", "reportingInstance")


def validate_event_update(new: V, old: V, strict: bool = False) -> list[FieldError]:
    errs = _legacy_event(new)
    if not strict:
        return errs + _generic_event_meta(new) + validate_object_meta_update(new, old, kube_finalizers=False)
    errs += validate_object_meta_update(new, old)
    for f in _EVENT_IMMUTABLE:
        if _semantic(new.get(f)) != _semantic(old.get(f)):
            v = new.get(f)
            shown = v if isinstance(v, (str, int)) and not isinstance(v, bool) else GoValue(json.dumps(v))
            errs.append(invalid("reportingController" if f == "reportingComponent" else f, shown, FIELD_IMMUTABLE))
    return errs


# ---- LimitRange / ResourceQuota ------------------------------------------------------------------

_LIMIT_TYPES = {"Pod", "Container", "PersistentVolumeClaim"}


def validate_limit_range(lr: V) -> list[FieldError]:
    errs = validate_object_meta(lr, True, name_is_dns_subdomain)
    seen_types: set[str] = set()
    for i, limit in enumerate(_l(_d(lr.get("spec")).get("limits"))):
        limit = _d(limit)
        p = f"spec.limits[{i}]"
        lt = _s(limit.get("type"))
        te = [invalid(child(p, "type"), lt, m) for m in is_qualified_name(lt)]
        if not te and "/" not in lt and lt not in _LIMIT_TYPES:
            te = [invalid(child(p, "type"), lt, "must be a standard limit type or fully qualified")]
        errs += te
        if lt in seen_types:
            errs.append(duplicate(child(p, "type"), lt))
        seen_types.add(lt)
        name_fn = validate_container_resource_name if lt in ("Pod", "Container") else validate_resource_name
        vals: dict[str, dict[str, Any]] = {}
        fields = ["max", "min"] + (["default", "defaultRequest"] if lt != "Pod" else []) + ["maxLimitRequestRatio"]
        if lt == "Pod":
            for f in ("default", "defaultRequest"):
                if _d(limit.get(f)):
                    errs.append(forbidden(child(p, f), "may not be specified when `type` is 'Pod'"))
        for f in fields:
            rl = _d(limit.get(f))
            vals[f] = {}
            for k in sorted(rl):
                errs += name_fn(k, key(child(p, f), k))
                qty, qe = quantity_errors(rl[k], key(child(p, f), k))
                errs += qe
                if qty is not None:
                    vals[f][k] = qty
        if lt == "PersistentVolumeClaim" and "storage" not in _d(limit.get("min")) and "storage" not in _d(limit.get("max")):
            errs.append(required(child(p, "limits"), "either minimum or maximum storage value is required, but neither was provided"))
        keys = sorted(set().union(*[set(v) for v in vals.values()]))
        for k in keys:
            mn, mx = vals["min"].get(k), vals["max"].get(k)
            df, dr = vals.get("default", {}).get(k), vals.get("defaultRequest", {}).get(k)
            ratio = vals["maxLimitRequestRatio"].get(k)
            S = lambda x: x.canonical()  # noqa: E731
            G = lambda x: GoValue(x.canonical())  # noqa: E731
            if mn is not None and mx is not None and mn.cmp(mx) > 0:
                errs.append(invalid(key(child(p, "min"), k), G(mn), f"min value {S(mn)} is greater than max value {S(mx)}"))
            if dr is not None and mn is not None and mn.cmp(dr) > 0:
                errs.append(invalid(key(child(p, "defaultRequest"), k), G(dr),
                                    f"min value {S(mn)} is greater than default request value {S(dr)}"))
            if dr is not None and mx is not None and dr.cmp(mx) > 0:
                errs.append(invalid(key(child(p, "defaultRequest"), k), G(dr),
                                    f"default request value {S(dr)} is greater than max value {S(mx)}"))
            if dr is not None and df is not None and dr.cmp(df) > 0:
                errs.append(invalid(key(child(p, "defaultRequest"), k), G(dr),
                                    f"default request value {S(dr)} is greater than default limit value {S(df)}"))
            if df is not None and mn is not None and mn.cmp(df) > 0:
                errs.append(invalid(key(child(p, "default"), k), G(mn), f"min value {S(mn)} is greater than default value {S(df)}"))
            if df is not None and mx is not None and df.cmp(mx) > 0:
                errs.append(invalid(key(child(p, "default"), k), G(mx), f"default value {S(df)} is greater than max value {S(mx)}"))
            if ratio is not None and ratio.cmp(1) < 0:
                errs.append(invalid(key(child(p, "maxLimitRequestRatio"), k), G(ratio), f"ratio {S(ratio)} is less than 1"))
            if ratio is not None and mn is not None and mx is not None and mn.value != 0:
                limit_ratio = float(mx.value / mn.value)
                if float(ratio.value) > limit_ratio:
                    errs.append(invalid(key(child(p, "maxLimitRequestRatio"), k), G(ratio),
                                        f"ratio {S(ratio)} is greater than max/min = {limit_ratio:f}"))
            if not is_overcommit_allowed(k) and df is not None and dr is not None and df.cmp(dr) != 0:
                errs.append(invalid(key(child(p, "defaultRequest"), k), G(dr),
                                    f"default value {S(df)} must equal to defaultRequest value {S(dr)} in {k}"))
    return errs


def _quota_spec(spec: V, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    hard = _d(spec.get("hard"))
    for k in sorted(hard):
        p = key(child(path, "hard"), k)
        errs += validate_resource_quota_resource_name(k, p)
        qty, qe = quantity_errors(hard[k], p)
        errs += qe
        if qty is not None:
            errs += validate_resource_quantity_value(k, qty, p)
    scopes = _l(spec.get("scopes"))
    shown = go_string_slice(scopes, "[]core.ResourceQuotaScope")
    sp = child(path, "scopes")
    for s in scopes:
        if s not in STANDARD_QUOTA_SCOPES:
            errs.append(invalid(sp, shown, "unsupported scope"))
        for k in sorted(hard):
            if is_standard_quota_resource(k) and not _scope_valid_for(s, k):
                errs.append(invalid(sp, shown, "unsupported scope applied to resource"))
    for a, b in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
        if a in scopes and b in scopes:
            errs.append(invalid(sp, shown, "conflicting scopes"))
    sel = spec.get("scopeSelector")
    if sel is not None:
        mp = child(path, "scopeSelector", "matchExpressions")
        names = []
        for expr in _l(_d(sel).get("matchExpressions")):
            expr = _d(expr)
            sn, op, vals = expr.get("scopeName") or "", expr.get("operator") or "", _l(expr.get("values"))
            names.append(sn)
            if sn not in STANDARD_QUOTA_SCOPES:
                errs.append(invalid(child(mp, "scopeName"), sn, "unsupported scope"))
            for k in sorted(hard):
                if is_standard_quota_resource(k) and not _scope_valid_for(sn, k):
                    errs.append(invalid(mp, GoValue("&core.ScopeSelector{...}"), "unsupported scope applied to resource"))
            if sn in ("BestEffort", "NotBestEffort", "Terminating", "NotTerminating", "CrossNamespacePodAffinity") and op != "Exists":
                errs.append(invalid(child(mp, "operator"), op,
                                    "must be 'Exists' when scope is any of ResourceQuotaScopeTerminating, "
                                    "ResourceQuotaScopeNotTerminating, ResourceQuotaScopeBestEffort, "
                                    "ResourceQuotaScopeNotBestEffort or ResourceQuotaScopeCrossNamespacePodAffinity"))
            if op in ("In", "NotIn"):
                if not vals:
                    errs.append(required(child(mp, "values"),
                                         "must be at least one value when `operator` is 'In' or 'NotIn' for scope selector"))
            elif op in ("Exists", "DoesNotExist"):
                if vals:
                    errs.append(invalid(child(mp, "values"), go_string_slice(vals),
                                        "must be no value when `operator` is 'Exist' or 'DoesNotExist' for scope selector"))
            else:
                errs.append(invalid(child(mp, "operator"), op, "not a valid selector operator"))
        for a, b in (("BestEffort", "NotBestEffort"), ("Terminating", "NotTerminating")):
            if a in names and b in names:
                errs.append(invalid(mp, shown, "conflicting scopes"))
    return errs


_POD_COMPUTE = {"cpu", "memory", "limits.cpu", "limits.memory", "requests.cpu", "requests.memory"}


def _scope_valid_for(scope: str, resource: str) -> bool:
    if scope in ("Terminating", "NotTerminating", "NotBestEffort", "PriorityClass", "CrossNamespacePodAffinity"):
        return resource == "pods" or resource in _POD_COMPUTE
    if scope == "BestEffort":
        return resource == "pods"
    return True


def _quota_status(st: V) -> list[FieldError]:
    errs: list[FieldError] = []
    for f in ("hard", "used"):
        rl = _d(st.get(f))
        for k in sorted(rl):
            p = key(f"status.{f}", k)
            errs += validate_resource_quota_resource_name(k, p)
            qty, qe = quantity_errors(rl[k], p)
            errs += qe
            if qty is not None:
                errs += validate_resource_quantity_value(k, qty, p)
    return errs


def validate_resource_quota(rq: V) -> list[FieldError]:
    errs = validate_object_meta(rq, True, name_is_dns_subdomain)
    errs += _quota_spec(_d(rq.get("spec")), "spec")
    return errs + _quota_status(_d(rq.get("status")))


def validate_resource_quota_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _quota_spec(_d(new.get("spec")), "spec")
    ns, os_ = _l(_d(new.get("spec")).get("scopes")), _l(_d(old.get("spec")).get("scopes"))
    if set(ns) != set(os_):
        errs.append(invalid("spec.scopes", go_string_slice(ns, "[]core.ResourceQuotaScope"), FIELD_IMMUTABLE))
    return errs


def validate_resource_quota_status_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    return errs + _quota_status(_d(new.get("status")))


# ---- PersistentVolume / PersistentVolumeClaim ----------------------------------------------------

def validate_pv(pv: V) -> list[FieldError]:
    errs = validate_object_meta(pv, False, name_is_dns_subdomain)
    return errs + validate_pv_spec(_d(pv.get("spec")), meta_of(pv).get("name") or "", "spec")


_PV_NON_SOURCE = {"accessModes", "capacity", "claimRef", "persistentVolumeReclaimPolicy", "storageClassName",
                  "mountOptions", "volumeMode", "nodeAffinity", "volumeAttributesClassName"}


def validate_pv_update(new: V, old: V) -> list[FieldError]:
    errs = validate_pv(new)
    ns, os_ = _d(new.get("spec")), _d(old.get("spec"))
    nsrc = {k: v for k, v in ns.items() if k not in _PV_NON_SOURCE}
    osrc = {k: v for k, v in os_.items() if k not in _PV_NON_SOURCE}
    if isinstance(osrc.get("csi"), dict) and isinstance(nsrc.get("csi"), dict) \
            and osrc["csi"].get("controllerExpandSecretRef") is None:
        nsrc = copy.deepcopy(nsrc)
        nsrc["csi"].pop("controllerExpandSecretRef", None)
    if _semantic(nsrc) != _semantic(osrc):
        errs.append(forbidden("spec.persistentvolumesource", "spec.persistentvolumesource is immutable after creation\n"
                              + readable_diff(osrc, nsrc, "core.PersistentVolumeSource")))
    errs += validate_immutable(ns.get("volumeMode"), os_.get("volumeMode"), "volumeMode")
    if os_.get("nodeAffinity") is not None and _semantic(ns.get("nodeAffinity")) != _semantic(os_.get("nodeAffinity")):
        errs.append(invalid("nodeAffinity", GoValue("&core.VolumeNodeAffinity{...}"),
                            FIELD_IMMUTABLE + ", except for updating from beta label to GA"))
    return errs


def validate_pv_status_update(new: V, old: V) -> list[FieldError]:
    return validate_object_meta_update(new, old)


def validate_pvc(pvc: V) -> list[FieldError]:
    errs = validate_object_meta(pvc, True, name_is_dns_subdomain)
    return errs + validate_pvc_spec(_d(pvc.get("spec")), "spec")


def validate_pvc_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += validate_pvc(new)
    ns, os_ = copy.deepcopy(_d(new.get("spec"))), copy.deepcopy(_d(old.get("spec")))
    if not os_.get("volumeName"):
        os_["volumeName"] = ns.get("volumeName")
    if ns.get("storageClassName") is not None and os_.get("storageClassName") is None:
        beta = _d(meta_of(old).get("annotations")).get("volume.beta.kubernetes.io/storage-class")
        if beta is None or beta == ns["storageClassName"]:
            os_["storageClassName"] = ns["storageClassName"]
    bound = _d(new.get("status")).get("phase") == "Bound"
    if bound and _d(ns.get("resources")).get("requests") is not None:
        ns["resources"]["requests"]["storage"] = _d(_d(os_.get("resources")).get("requests")).get("storage")
    if bound and ns.get("volumeAttributesClassName") is not None:
        ns["volumeAttributesClassName"] = os_.get("volumeAttributesClassName")
    if _semantic(ns) != _semantic(os_):
        errs.append(forbidden("spec", "spec is immutable after creation except resources.requests and "
                              "volumeAttributesClassName for bound claims\n"
                              + readable_diff(os_, ns, "core.PersistentVolumeClaimSpec")))
    from .resources import q

    old_size = q(_d(_d(_d(old.get("spec")).get("resources")).get("requests")).get("storage") or 0)
    new_size = q(_d(_d(_d(new.get("spec")).get("resources")).get("requests")).get("storage") or 0)
    status_size = q(_d(_d(old.get("status")).get("capacity")).get("storage") or 0)
    if old_size is not None and new_size is not None and new_size.cmp(old_size) < 0:
        # RecoverVolumeExpansionFailure is on in 1.33: shrinking is allowed down to (not to) status.capacity
        if status_size is not None and new_size.cmp(status_size) <= 0:
            errs.append(forbidden("spec.resources.requests.storage", "field can not be less than status.capacity"))
    errs += validate_immutable(_d(new.get("spec")).get("volumeMode"), _d(old.get("spec")).get("volumeMode"), "volumeMode")
    return errs


def validate_pvc_status_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not _l(_d(new.get("spec")).get("accessModes")):
        errs.append(required("Spec.accessModes"))
    for k, v in sorted(_d(_d(new.get("status")).get("capacity")).items()):
        qty, qe = quantity_errors(v, key("status.capacity", k))
        errs += qe
        if qty is not None and qty.int_value() < 0:
            errs.append(invalid(key("status.capacity", k), qty.int_value(), "must be a valid resource quantity"))
    return errs


# ---- ReplicationController ------------------------------------------------------------------------

def _label_selector_matches(selector: dict[str, Any], labels: dict[str, Any]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _rc_spec(spec: V) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("minReadySeconds", 0), "spec.minReadySeconds")
    sel = _d(spec.get("selector"))
    if not sel:
        errs.append(required("spec.selector"))
    errs += validate_nonnegative(spec.get("replicas", 0), "spec.replicas")
    tpl = spec.get("template")
    if tpl is None:
        errs.append(required("spec.template"))
        return errs
    tpl = _d(tpl)
    labels = _d(_d(tpl.get("metadata")).get("labels"))
    if sel and not _label_selector_matches(sel, labels):
        errs.append(invalid("spec.template.metadata.labels", go_string_map(labels),
                            "`selector` does not match template `labels`"))
    errs += validate_pod_template_spec(tpl, "spec.template")
    tspec = _d(tpl.get("spec"))
    rp = tspec.get("restartPolicy") or ""
    if rp != "Always":
        errs.append(not_supported("spec.template.spec.restartPolicy", rp, ["Always"]))
    if tspec.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden("spec.template.spec.activeDeadlineSeconds",
                              "activeDeadlineSeconds in ReplicationController is not Supported"))
    return errs


def validate_replication_controller(rc: V) -> list[FieldError]:
    errs = validate_object_meta(rc, True, name_is_dns_subdomain)
    return errs + _rc_spec(_d(rc.get("spec")))


def validate_replication_controller_update(new: V, old: V) -> list[FieldError]:
    return validate_object_meta_update(new, old) + _rc_spec(_d(new.get("spec")))


def validate_replication_controller_status_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    st = _d(new.get("status"))
    for f in ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration"):
        errs += validate_nonnegative(st.get(f, 0), f"status.{f}")
    r = st.get("replicas") or 0
    msg = "cannot be greater than status.replicas"
    for f in ("fullyLabeledReplicas", "readyReplicas", "availableReplicas"):
        if (st.get(f) or 0) > r:
            errs.append(invalid(f"status.{f}", st.get(f) or 0, msg))
    if (st.get("availableReplicas") or 0) > (st.get("readyReplicas") or 0):
        errs.append(invalid("status.availableReplicas", st.get("availableReplicas") or 0,
                            "cannot be greater than readyReplicas"))
    return errs


def validate_component_status(obj: V) -> list[FieldError]:
    return []


# ---- registration --------------------------------------------------------------------------------

_CREATE: dict[str, Callable[[V], list[FieldError]]] = {
    "Pod": validate_pod,
    "Service": validate_service,
    "ConfigMap": validate_config_map,
    "Secret": validate_secret,
    "Namespace": validate_namespace,
    "Node": validate_node,
    "ServiceAccount": validate_service_account,
    "Endpoints": validate_endpoints,
    "Event": validate_event,
    "LimitRange": validate_limit_range,
    "ResourceQuota": validate_resource_quota,
    "PersistentVolume": validate_pv,
    "PersistentVolumeClaim": validate_pvc,
    "ReplicationController": validate_replication_controller,
    "PodTemplate": validate_pod_template,
    "Binding": validate_binding,
    "ComponentStatus": validate_component_status,
}

_UPDATE: dict[str, Callable[[V, V], list[FieldError]]] = {
    "Pod": validate_pod_update,
    "Service": validate_service_update,
    "ConfigMap": validate_config_map_update,
    "Secret": validate_secret_update,
    "Namespace": validate_namespace_update,
    "Node": validate_node_update,
    "ServiceAccount": validate_service_account_update,
    "Endpoints": validate_endpoints_update,
    "Event": validate_event_update,
    "LimitRange": lambda new, old: validate_object_meta_update(new, old) + validate_limit_range(new),
    "ResourceQuota": validate_resource_quota_update,
    "PersistentVolume": lambda new, old: validate_object_meta_update(new, old) + validate_pv_update(new, old),
    "PersistentVolumeClaim": validate_pvc_update,
    "ReplicationController": validate_replication_controller_update,
    "PodTemplate": validate_pod_template_update,
}

_STATUS: dict[str, Callable[[V, V], list[FieldError]]] = {
    "Pod": validate_pod_status_update,
    "Service": validate_service_status_update,
    "Namespace": validate_namespace_status_update,
    "Node": validate_node_update,
    "PersistentVolume": validate_pv_status_update,
    "PersistentVolumeClaim": validate_pvc_status_update,
    "ReplicationController": validate_replication_controller_status_update,
    "ResourceQuota": validate_resource_quota_status_update,
}

for _k, _fn in _CREATE.items():
    VALIDATORS[("", _k)] = _fn
for _k, _ufn in _UPDATE.items():
    UPDATE_VALIDATORS[("", _k)] = _ufn
for _k, _ufn in _STATUS.items():
    STATUS_UPDATE_VALIDATORS[("", _k)] = _ufn

# exported helpers other validators reuse
__all__ += ["validate_pod_template_spec", "validate_namespace_finalize_update"]
