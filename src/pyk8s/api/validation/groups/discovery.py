"""coordination.k8s.io/v1 Lease and discovery.k8s.io/v1 EndpointSlice validation, as
upstream's pkg/apis/coordination/validation and pkg/apis/discovery/validation.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import child, duplicate, forbidden, index, invalid, not_supported, required, too_many
from ..meta import (
    validate_immutable,
    validate_label_name,
    validate_labels,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import (
    is_fully_qualified_domain_name,
    is_label_value,
    is_qualified_name,
    is_valid_ipv4,
    is_valid_ipv6,
    name_is_dns_subdomain,
)
from ._common import is_int, spec_of, validate_dns1123_label

__all__ = [
    "validate_lease", "validate_lease_update", "validate_endpoint_slice", "validate_endpoint_slice_update",
    "VALIDATORS", "UPDATE_VALIDATORS",
]

# ---- Lease -------------------------------------------------------------------------------

_LEASE_STRATEGIES = ["OldestEmulationVersion"]


def _lease_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    dur = spec.get("leaseDurationSeconds")
    if is_int(dur) and dur <= 0:
        errs.append(invalid(child(path, "leaseDurationSeconds"), dur, "must be greater than 0"))
    trans = spec.get("leaseTransitions")
    if is_int(trans) and trans < 0:
        errs.append(invalid(child(path, "leaseTransitions"), trans, "must be greater than or equal to 0"))
    strategy = spec.get("strategy")
    if strategy is not None:
        sp = child(path, "strategy")
        if "/" not in strategy:
            if strategy not in _LEASE_STRATEGIES:
                errs.append(not_supported(sp, strategy, _LEASE_STRATEGIES))
        else:
            errs += [invalid(sp, strategy, m) for m in is_qualified_name(strategy)]
    if spec.get("preferredHolder") and not strategy:
        errs.append(forbidden(child(path, "preferredHolder"), "may only be specified if `strategy` is defined"))
    return errs


def validate_lease(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _lease_spec(spec_of(obj), "spec")


def validate_lease_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + _lease_spec(spec_of(new), "spec")


# ---- EndpointSlice -----------------------------------------------------------------------

_ADDRESS_TYPES = ["FQDN", "IPv4", "IPv6"]
_PORT_PROTOCOLS = ["SCTP", "TCP", "UDP"]
_MAX_ENDPOINTS = 1000
_MAX_ADDRESSES = 100
_MAX_PORTS = 100
_MAX_TOPOLOGY_SEGMENTS = 20
_MAX_HINTS = 8


def _endpoints(obj: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    endpoints = obj.get("endpoints") or []
    if len(endpoints) > _MAX_ENDPOINTS:
        errs.append(too_many(path, len(endpoints), _MAX_ENDPOINTS))
    address_type = obj.get("addressType") or ""
    for i, ep in enumerate(endpoints):
        if not isinstance(ep, dict):
            continue
        ip = index(path, i)
        ap = child(ip, "addresses")
        addresses = ep.get("addresses") or []
        if not addresses:
            errs.append(required(ap, "must contain at least 1 address"))
        elif len(addresses) > _MAX_ADDRESSES:
            errs.append(too_many(ap, len(addresses), _MAX_ADDRESSES))
        for j, addr in enumerate(addresses):
            check = {"IPv4": is_valid_ipv4, "IPv6": is_valid_ipv6, "FQDN": is_fully_qualified_domain_name}.get(address_type)
            if check is not None:
                value = addr[:-1] if address_type == "FQDN" and addr.endswith(".") else addr
                errs += [invalid(index(ap, j), value, m) for m in check(addr)]
        node = ep.get("nodeName")
        if node is not None:
            errs += [invalid(child(ip, "nodeName"), node, m) for m in name_is_dns_subdomain(node, False)]
        topo = ep.get("deprecatedTopology") or {}
        tp = child(ip, "deprecatedTopology")
        if len(topo) > _MAX_TOPOLOGY_SEGMENTS:
            errs.append(too_many(tp, len(topo), _MAX_TOPOLOGY_SEGMENTS))
        errs += validate_labels(topo, tp)
        if ep.get("hostname") is not None:
            errs += validate_dns1123_label(ep["hostname"], child(ip, "hostname"))
        hints = ep.get("hints")
        if isinstance(hints, dict):
            errs += _hints(hints, child(ip, "hints"))
    return errs


def _hints(hints: dict[str, Any], path: str) -> list[FieldError]:
    zones = hints.get("forZones") or []
    zp = child(path, "forZones")
    if len(zones) > _MAX_HINTS:
        return [too_many(zp, len(zones), _MAX_HINTS)]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for k, z in enumerate(zones):
        name = (z or {}).get("name") or ""
        np_ = child(index(zp, k), "name")
        if name in seen:
            errs.append(duplicate(np_, name))
        seen.add(name)
        errs += [invalid(np_, name, m) for m in is_label_value(name)]
    return errs


def _ports(ports: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(ports) > _MAX_PORTS:
        errs.append(too_many(path, len(ports), _MAX_PORTS))
    names: set[str] = set()
    for i, port in enumerate(ports):
        if not isinstance(port, dict):
            continue
        pp = index(path, i)
        name = port.get("name") or ""
        if name:
            errs += validate_dns1123_label(name, child(pp, "name"))
        if name in names:
            errs.append(duplicate(child(pp, "name"), name))
        names.add(name)
        proto = port.get("protocol")
        if proto is None:
            errs.append(required(child(pp, "protocol")))
        elif proto not in _PORT_PROTOCOLS:
            errs.append(not_supported(child(pp, "protocol"), proto, _PORT_PROTOCOLS))
        if port.get("appProtocol") is not None:
            errs += validate_label_name(port["appProtocol"], child(pp, "appProtocol"))
    return errs


def _endpoint_slice(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    errs += _endpoints(obj, "endpoints")
    return errs + _ports(obj.get("ports") or [], "ports")


def validate_endpoint_slice(obj: dict[str, Any]) -> list[FieldError]:
    errs = _endpoint_slice(obj)
    at = obj.get("addressType") or ""
    if not at:
        errs.append(required("addressType"))
    elif at not in _ADDRESS_TYPES:
        errs.append(not_supported("addressType", at, _ADDRESS_TYPES))
    return errs


def validate_endpoint_slice_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old) + _endpoint_slice(new)
    return errs + validate_immutable(new.get("addressType") or "", old.get("addressType") or "", "addressType")


VALIDATORS = {
    ("coordination.k8s.io", "Lease"): validate_lease,
    ("discovery.k8s.io", "EndpointSlice"): validate_endpoint_slice,
}
UPDATE_VALIDATORS = {
    ("coordination.k8s.io", "Lease"): validate_lease_update,
    ("discovery.k8s.io", "EndpointSlice"): validate_endpoint_slice_update,
}
