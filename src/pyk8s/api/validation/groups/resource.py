"""resource.k8s.io/v1beta1 validation: DeviceClass, ResourceClaim, ResourceClaimTemplate,
ResourceSlice, as upstream's pkg/apis/resource/validation (v1.33), with CEL selectors
compiled (and their cost bounded) by pyk8s.dra.cel.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ...errors import FieldError
from ..field import (
    GoValue,
    child,
    duplicate,
    forbidden,
    index,
    invalid,
    not_supported,
    required,
    too_long,
    too_many,
)
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import is_dns1123_label, is_dns1123_subdomain, name_is_dns_subdomain
from ..volumes import validate_node_selector
from ._common import as_dict, as_list, go_generic, is_int, semantic_equal, spec_of

__all__ = ["VALIDATORS", "UPDATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS"]

RS = "resource.k8s.io"
# pkg/apis/resource/types.go limits (v1.33)
MAX_REQUESTS = 32
MAX_SELECTORS = 32
MAX_CONSTRAINTS = 32
MAX_CONFIGS = 32
MAX_RESERVED_FOR = 256
MAX_DEVICES_PER_SLICE = 128
MAX_ATTRIBUTES_AND_CAPACITIES = 32
MAX_ID_LENGTH = 64
MAX_STRING_ATTRIBUTE = 64
MAX_PARAMETERS_SIZE = 10 * 1024
MAX_COUNTER_SETS = 32
ALLOCATION_MODES = ("All", "ExactCount")


def _driver_name(name: Any, path: str) -> list[FieldError]:
    """validateDriverName: required, at most 63 characters, a lower-case DNS subdomain."""
    name = name if isinstance(name, str) else ""
    if not name:
        return [required(path, "")]
    errs: list[FieldError] = []
    if len(name) > 63:
        errs.append(too_long(path, 63))
    errs += [invalid(path, name, m) for m in is_dns1123_subdomain(name)]
    return errs


def _names(value: Any, path: str, check: Callable[[str], list[str]]) -> list[FieldError]:
    value = value if isinstance(value, str) else ""
    if not value:
        return [required(path, "")]
    return [invalid(path, value, m) for m in check(value)]


def _cel_selector(sel: Any, path: str) -> list[FieldError]:
    from pyk8s.dra.cel import MAX_COST, MAX_EXPRESSION_LENGTH, CELError, compile_selector

    cel = as_dict(as_dict(sel).get("cel"))
    if not as_dict(sel).get("cel"):
        return [required(child(path, "cel"), "")]
    ep = child(path, "cel", "expression")
    expr = cel.get("expression") if isinstance(cel.get("expression"), str) else ""
    if not expr:
        return [required(ep, "")]
    if len(expr) > MAX_EXPRESSION_LENGTH:
        return [too_long(ep, MAX_EXPRESSION_LENGTH)]
    try:
        compiled = compile_selector(expr)
    except CELError as e:
        return [invalid(ep, expr, str(e))]
    if compiled.cost > MAX_COST:
        return [forbidden(ep, "too complex, exceeds cost limit")]
    return []


def _selectors(sels: Any, path: str) -> list[FieldError]:
    items = as_list(sels)
    errs: list[FieldError] = []
    if len(items) > MAX_SELECTORS:
        errs.append(too_many(path, len(items), MAX_SELECTORS))
    for i, s in enumerate(items):
        errs += _cel_selector(s, index(path, i))
    return errs


def _opaque_config(cfg: Any, path: str) -> list[FieldError]:
    opaque = cfg.get("opaque") if isinstance(cfg, dict) else None
    if opaque is None:
        return [required(child(path, "opaque"), "")]
    op = child(path, "opaque")
    errs = _driver_name(as_dict(opaque).get("driver"), child(op, "driver"))
    params = as_dict(opaque).get("parameters")
    if params is None:
        errs.append(required(child(op, "parameters"), ""))
    elif not isinstance(params, dict):
        errs.append(invalid(child(op, "parameters"), "<value omitted>", "parameters must be a valid JSON object"))
    else:
        import orjson

        if len(orjson.dumps(params)) > MAX_PARAMETERS_SIZE:
            errs.append(too_long(child(op, "parameters"), MAX_PARAMETERS_SIZE))
    return errs


def _request_refs(refs: Any, requests: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, r in enumerate(as_list(refs)):
        p = index(path, i)
        if not isinstance(r, str) or not r:
            errs.append(required(p, ""))
        elif r in seen:
            errs.append(duplicate(p, r))
        elif r.split("/")[0] not in requests:
            errs.append(invalid(p, r, "must be the name of a request in the claim or the name of a request "
                                      "and a subrequest separated by '/'"))
        seen.add(r if isinstance(r, str) else "")
    return errs


def _device_request(req: dict[str, Any], path: str) -> list[FieldError]:
    errs = _names(req.get("name"), child(path, "name"), is_dns1123_label)
    if req.get("firstAvailable"):
        # DRAPrioritizedList is alpha and off in v1.33: the field is dropped by upstream's strategy
        errs.append(forbidden(child(path, "firstAvailable"), "disabled by the DRAPrioritizedList feature gate"))
    errs += _names(req.get("deviceClassName"), child(path, "deviceClassName"), is_dns1123_subdomain)
    errs += _selectors(req.get("selectors"), child(path, "selectors"))
    mode = req.get("allocationMode") or ""
    count = req.get("count")
    if mode == "All":
        if count is not None and count != 0:
            errs.append(invalid(child(path, "count"), count, "must not be specified when allocationMode is 'All'"))
    elif mode == "ExactCount":
        if not is_int(count) or count <= 0:
            errs.append(invalid(child(path, "count"), count, "must be greater than zero"))
    elif not mode:
        errs.append(required(child(path, "allocationMode"), ""))
    else:
        errs.append(not_supported(child(path, "allocationMode"), mode, list(ALLOCATION_MODES)))
    if req.get("adminAccess"):
        errs.append(forbidden(child(path, "adminAccess"), "disabled by the DRAAdminAccess feature gate"))
    return errs


def _named_list(items: Any, path: str, limit: int,
                item: Callable[[dict[str, Any], str], list[FieldError]]) -> tuple[set[str], list[FieldError]]:
    """A list of at most `limit` entries with unique names: (the names, the errors)."""
    items = as_list(items)
    errs: list[FieldError] = []
    if len(items) > limit:
        errs.append(too_many(path, len(items), limit))
    names: set[str] = set()
    for i, entry in enumerate(items):
        p = index(path, i)
        entry = as_dict(entry)
        errs += item(entry, p)
        name = entry.get("name")
        if isinstance(name, str) and name:
            if name in names:
                errs.append(duplicate(child(p, "name"), name))
            names.add(name)
    return names, errs


def validate_claim_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    """validateResourceClaimSpec: requests, constraints and config of spec.devices."""
    devices = as_dict(spec.get("devices"))
    dp = child(path, "devices")
    errs: list[FieldError] = []
    names, more = _named_list(devices.get("requests"), child(dp, "requests"), MAX_REQUESTS, _device_request)
    errs += more
    constraints = as_list(devices.get("constraints"))
    if len(constraints) > MAX_CONSTRAINTS:
        errs.append(too_many(child(dp, "constraints"), len(constraints), MAX_CONSTRAINTS))
    for i, c in enumerate(constraints):
        p = index(child(dp, "constraints"), i)
        c = as_dict(c)
        errs += _request_refs(c.get("requests"), names, child(p, "requests"))
        attr = c.get("matchAttribute")
        if attr is None:
            errs.append(required(child(p, "matchAttribute"), ""))
        else:
            errs += _fully_qualified_attribute(attr, child(p, "matchAttribute"))
    configs = as_list(devices.get("config"))
    if len(configs) > MAX_CONFIGS:
        errs.append(too_many(child(dp, "config"), len(configs), MAX_CONFIGS))
    for i, cfg in enumerate(configs):
        p = index(child(dp, "config"), i)
        errs += _request_refs(as_dict(cfg).get("requests"), names, child(p, "requests"))
        errs += _opaque_config(cfg, p)
    return errs


def _fully_qualified_attribute(name: Any, path: str) -> list[FieldError]:
    name = name if isinstance(name, str) else ""
    if not name:
        return [required(path, "")]
    domain, sep, short = name.partition("/")
    if not sep:
        return [required(path, "must include a domain")]
    errs = [invalid(path, name, m) for m in is_dns1123_subdomain(domain)]
    errs += _c_identifier(short, path, name)
    return errs


def _c_identifier(short: str, path: str, full: str) -> list[FieldError]:
    import re

    if not short:
        return [required(path, "the name must not be empty")]
    if len(short) > MAX_ID_LENGTH:
        return [too_long(path, MAX_ID_LENGTH)]
    if not re.fullmatch(r"[A-Za-z_][A-Za-z0-9_]*", short):
        return [invalid(path, full, "a valid C identifier must start with alphabetic character or '_', followed by "
                                    "a string of alphanumeric characters or '_' (e.g. 'my_name',  or 'MY_NAME',  or "
                                    "'MyName', regex used for validation is '[A-Za-z_][A-Za-z0-9_]*')")]
    return []


# ---- DeviceClass ---------------------------------------------------------------------


def validate_device_class(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    spec = spec_of(obj)
    errs += _selectors(spec.get("selectors"), "spec.selectors")
    configs = as_list(spec.get("config"))
    if len(configs) > MAX_CONFIGS:
        errs.append(too_many("spec.config", len(configs), MAX_CONFIGS))
    for i, cfg in enumerate(configs):
        errs += _opaque_config(cfg, index("spec.config", i))
    return errs


def validate_device_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_device_class(new) + validate_object_meta_update(new, old)


# ---- ResourceClaim -------------------------------------------------------------------


def _consumer(ref: Any, path: str) -> list[FieldError]:
    ref = as_dict(ref)
    errs: list[FieldError] = []
    if not ref.get("resource"):
        errs.append(required(child(path, "resource"), ""))
    if not ref.get("name"):
        errs.append(required(child(path, "name"), ""))
    if not ref.get("uid"):
        errs.append(required(child(path, "uid"), ""))
    return errs


def _allocation(alloc: dict[str, Any], requests: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    results = as_list(as_dict(alloc.get("devices")).get("results"))
    rp = child(path, "devices", "results")
    if len(results) > MAX_REQUESTS:
        errs.append(too_many(rp, len(results), MAX_REQUESTS))
    for i, r in enumerate(results):
        p = index(rp, i)
        r = as_dict(r)
        req = r.get("request") or ""
        if not req:
            errs.append(required(child(p, "request"), ""))
        elif req.split("/")[0] not in requests:
            errs.append(invalid(child(p, "request"), req, "must be the name of a request in the claim or the name "
                                                          "of a request and a subrequest separated by '/'"))
        errs += _driver_name(r.get("driver"), child(p, "driver"))
        errs += _pool_name(r.get("pool"), child(p, "pool"))
        errs += _names(r.get("device"), child(p, "device"), is_dns1123_label)
    if alloc.get("nodeSelector") is not None:
        errs += validate_node_selector(as_dict(alloc["nodeSelector"]), child(path, "nodeSelector"))
    return errs


def _claim_status(new: dict[str, Any], old: dict[str, Any] | None) -> list[FieldError]:
    st = as_dict(new.get("status"))
    errs: list[FieldError] = []
    requests = {as_dict(r).get("name") or "" for r in as_list(as_dict(spec_of(new).get("devices")).get("requests"))}
    alloc = st.get("allocation")
    if alloc is not None:
        errs += _allocation(as_dict(alloc), requests, "status.allocation")
    reserved = as_list(st.get("reservedFor"))
    if len(reserved) > MAX_RESERVED_FOR:
        errs.append(too_many("status.reservedFor", len(reserved), MAX_RESERVED_FOR))
    uids: set[str] = set()
    for i, ref in enumerate(reserved):
        p = index("status.reservedFor", i)
        errs += _consumer(ref, p)
        uid = as_dict(ref).get("uid")
        if uid:
            if uid in uids:
                errs.append(duplicate(p, GoValue(go_generic(ref, "resource.ResourceClaimConsumerReference"))))
            uids.add(uid)
    if reserved and alloc is None:
        errs.append(forbidden("status.reservedFor", "may not be specified when `allocated` is not set"))
    if old is not None:
        old_alloc = as_dict(old.get("status")).get("allocation")
        if old_alloc is not None and alloc is not None and not semantic_equal(alloc, old_alloc):
            errs.append(invalid("status.allocation", GoValue(go_generic(alloc, "resource.AllocationResult")),
                                "field is immutable"))
    return errs


def validate_resource_claim(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    return errs + validate_claim_spec(spec_of(obj), "spec")


def validate_resource_claim_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not semantic_equal(spec_of(new), spec_of(old)):
        errs.append(invalid("spec", GoValue(go_generic(spec_of(new), "resource.ResourceClaimSpec")),
                            "field is immutable"))
    return errs + validate_claim_spec(spec_of(new), "spec")


def validate_resource_claim_status_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + _claim_status(new, old)


# ---- ResourceClaimTemplate -----------------------------------------------------------


def validate_resource_claim_template(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    inner = as_dict(spec_of(obj).get("spec"))
    return errs + validate_claim_spec(inner, "spec.spec")


def validate_resource_claim_template_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    if not semantic_equal(spec_of(new), spec_of(old)):
        errs.append(invalid("spec", GoValue(go_generic(spec_of(new), "resource.ResourceClaimTemplateSpec")),
                            "field is immutable"))
    return errs + validate_claim_spec(as_dict(spec_of(new).get("spec")), "spec.spec")


# ---- ResourceSlice -------------------------------------------------------------------


def _pool_name(name: Any, path: str) -> list[FieldError]:
    """validatePoolName: a DNS subdomain per '/'-separated part, at most 253 characters."""
    name = name if isinstance(name, str) else ""
    if not name:
        return [required(path, "")]
    if len(name) > 253:
        return [too_long(path, 253)]
    errs: list[FieldError] = []
    for part in name.split("/"):
        errs += [invalid(path, name, m) for m in is_dns1123_subdomain(part)]
    return errs


def _attribute(value: Any, path: str) -> list[FieldError]:
    v = as_dict(value)
    set_ = [k for k in ("int", "bool", "string", "version") if v.get(k) is not None]
    if len(set_) != 1:
        return [invalid(path, GoValue(go_generic(value, "resource.DeviceAttribute")),
                        "exactly one value must be specified")]
    if set_[0] == "string" and len(str(v["string"])) > MAX_STRING_ATTRIBUTE:
        return [too_long(child(path, "string"), MAX_STRING_ATTRIBUTE)]
    if set_[0] == "version":
        import re

        ver = str(v["version"])
        if not re.fullmatch(r"(0|[1-9]\d*)\.(0|[1-9]\d*)\.(0|[1-9]\d*)(-[0-9A-Za-z.-]+)?(\+[0-9A-Za-z.-]+)?", ver):
            return [invalid(child(path, "version"), ver, "must be a string compatible with semver.org spec 2.0.0")]
    return []


def _qualified_key(name: str, path: str) -> list[FieldError]:
    domain, sep, short = name.rpartition("/")
    errs: list[FieldError] = []
    if sep:
        errs += [invalid(path, name, m) for m in is_dns1123_subdomain(domain)]
    return errs + _c_identifier(short, path, name)


def _device(dev: dict[str, Any], path: str) -> list[FieldError]:
    errs = _names(dev.get("name"), child(path, "name"), is_dns1123_label)
    basic = dev.get("basic")
    if basic is None:
        return errs + [required(path, "exactly one must be set")]
    basic = as_dict(basic)
    bp = child(path, "basic")
    attrs, caps = as_dict(basic.get("attributes")), as_dict(basic.get("capacity"))
    for k, v in attrs.items():
        kp = child(bp, "attributes") + f"[{k}]"
        errs += _qualified_key(k, kp) + _attribute(v, kp)
    for k, v in caps.items():
        kp = child(bp, "capacity") + f"[{k}]"
        errs += _qualified_key(k, kp)
        if as_dict(v).get("value") is None:
            errs.append(required(child(kp, "value"), ""))
    if len(attrs) + len(caps) > MAX_ATTRIBUTES_AND_CAPACITIES:
        errs.append(too_many(bp, len(attrs) + len(caps), MAX_ATTRIBUTES_AND_CAPACITIES))
    return errs


def _slice_spec(spec: dict[str, Any]) -> list[FieldError]:
    errs = _driver_name(spec.get("driver"), "spec.driver")
    pool = as_dict(spec.get("pool"))
    errs += _pool_name(pool.get("name"), "spec.pool.name")
    if is_int(pool.get("generation")) and pool["generation"] < 0:
        errs.append(invalid("spec.pool.generation", pool["generation"], "must be greater than or equal to 0"))
    count = pool.get("resourceSliceCount")
    if not is_int(count) or count <= 0:
        errs.append(invalid("spec.pool.resourceSliceCount", count or 0, "must be greater than zero"))
    chosen = [f for f in ("nodeName", "nodeSelector", "allNodes") if spec.get(f) not in (None, "", False)]
    if not chosen:
        errs.append(required("spec", "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required"))
    elif len(chosen) > 1:
        errs.append(invalid("spec", "{" + ", ".join(f"`{f}`" for f in chosen) + "}",
                            "exactly one of `nodeName`, `nodeSelector`, `allNodes` is required, but multiple "
                            "fields are set"))
    if spec.get("nodeName"):
        errs += [invalid("spec.nodeName", spec["nodeName"], m) for m in name_is_dns_subdomain(spec["nodeName"])]
    if spec.get("nodeSelector") is not None:
        ns = as_dict(spec["nodeSelector"])
        errs += validate_node_selector(ns, "spec.nodeSelector")
        if len(as_list(ns.get("nodeSelectorTerms"))) != 1:
            errs.append(invalid("spec.nodeSelector.nodeSelectorTerms", GoValue("[]core.NodeSelectorTerm{...}"),
                                "must have exactly one node selector term"))
    sets, more = _named_list(spec.get("sharedCounters"), "spec.sharedCounters", MAX_COUNTER_SETS, _counter_set)
    errs += more
    errs += _named_list(spec.get("devices"), "spec.devices", MAX_DEVICES_PER_SLICE, _device)[1]
    for i, d in enumerate(as_list(spec.get("devices"))):
        for j, c in enumerate(as_list(as_dict(as_dict(d).get("basic")).get("consumesCounters"))):
            ref = as_dict(c).get("counterSet") or ""
            if ref not in sets:
                errs.append(invalid(index(f"spec.devices[{i}].basic.consumesCounters", j) + ".counterSet", ref,
                                    "must reference a counterSet defined in the ResourceSlice sharedCounters"))
    return errs


def _counter_set(cs: dict[str, Any], path: str) -> list[FieldError]:
    """KEP-4815's partitionable devices: a named set of counters (quantities)."""
    errs = _names(cs.get("name"), child(path, "name"), is_dns1123_label)
    counters = as_dict(cs.get("counters"))
    if not counters:
        errs.append(required(child(path, "counters"), ""))
    for k, v in counters.items():
        errs += [invalid(child(path, "counters") + f"[{k}]", k, m) for m in is_dns1123_label(k)]
        if as_dict(v).get("value") is None:
            errs.append(required(child(path, "counters") + f"[{k}].value", ""))
    return errs


def validate_resource_slice(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, False, name_is_dns_subdomain) + _slice_spec(spec_of(obj))


def validate_resource_slice_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_resource_slice(new) + validate_object_meta_update(new, old)
    for f in ("driver", "nodeName"):
        a, b = spec_of(new).get(f) or "", spec_of(old).get(f) or ""
        if a != b:
            errs.append(invalid(f"spec.{f}", a, "field is immutable"))
    return errs


VALIDATORS = {
    (RS, "DeviceClass"): validate_device_class,
    (RS, "ResourceClaim"): validate_resource_claim,
    (RS, "ResourceClaimTemplate"): validate_resource_claim_template,
    (RS, "ResourceSlice"): validate_resource_slice,
}
UPDATE_VALIDATORS = {
    (RS, "DeviceClass"): validate_device_class_update,
    (RS, "ResourceClaim"): validate_resource_claim_update,
    (RS, "ResourceClaimTemplate"): validate_resource_claim_template_update,
    (RS, "ResourceSlice"): validate_resource_slice_update,
}
STATUS_UPDATE_VALIDATORS = {
    (RS, "ResourceClaim"): validate_resource_claim_status_update,
}
