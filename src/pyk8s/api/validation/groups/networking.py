"""networking.k8s.io/v1 validation: Ingress, IngressClass, NetworkPolicy, as upstream's
pkg/apis/networking/validation.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ...errors import FieldError
from ..field import child, forbidden, index, invalid, not_supported, required, too_long
from ..meta import (
    validate_immutable,
    validate_label_selector,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import (
    is_dns1123_subdomain,
    is_valid_cidr,
    is_valid_port_name,
    is_valid_port_num,
    is_wildcard_dns1123_subdomain,
    name_is_dns1035_label,
    name_is_dns_label,
    name_is_dns_subdomain,
    validate_path_segment_name,
)
from ._common import is_int, parse_ip, spec_of, validate_domain_prefixed_path

__all__ = [
    "validate_ingress", "validate_ingress_update", "validate_ingress_class", "validate_ingress_class_update",
    "validate_network_policy", "validate_network_policy_update", "VALIDATORS", "UPDATE_VALIDATORS",
]

NET = "networking.k8s.io"
_INGRESS_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
_PATH_TYPES = ["Exact", "ImplementationSpecific", "Prefix"]
_INVALID_PATH_SEQUENCES = ["//", "/./", "/../", "%2f", "%2F"]
_INVALID_PATH_SUFFIXES = ["/..", "/."]

# ---- NetworkPolicy -----------------------------------------------------------------------


def _np_port(port: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    proto = port.get("protocol")
    if proto is not None and proto not in ("TCP", "UDP", "SCTP"):
        errs.append(not_supported(child(path, "protocol"), proto, ["TCP", "UDP", "SCTP"]))
    p, end = port.get("port"), port.get("endPort")
    if p is not None:
        if is_int(p):
            errs += [invalid(child(path, "port"), p, m) for m in is_valid_port_num(p)]
            if end is not None:
                if is_int(end) and end < p:
                    errs.append(invalid(child(path, "endPort"), p, "must be greater than or equal to `port`"))
                errs += [invalid(child(path, "endPort"), end, m) for m in is_valid_port_num(end)]
        else:
            if end is not None:
                errs.append(invalid(child(path, "endPort"), end, "may not be specified when `port` is non-numeric"))
            errs += [invalid(child(path, "port"), str(p), m) for m in is_valid_port_name(str(p))]
    elif end is not None:
        errs.append(invalid(child(path, "endPort"), end, "may not be specified when `port` is not specified"))
    return errs


def _ip_block(ipb: dict[str, Any], path: str) -> list[FieldError]:
    cidr = ipb.get("cidr") or ""
    if not cidr:
        return [required(child(path, "cidr"))]
    errs = [invalid(child(path, "cidr"), cidr, m) for m in is_valid_cidr(cidr)]
    if errs:
        return errs
    net = _network(cidr)
    for i, ex in enumerate(ipb.get("except") or []):
        ep = index(child(path, "except"), i)
        msgs = is_valid_cidr(ex)
        if msgs:
            errs += [invalid(ep, ex, m) for m in msgs]
            continue
        exn = _network(ex)
        if net is None or exn is None or exn.version != net.version or not (
                exn.network_address in net and net.prefixlen < exn.prefixlen):
            errs.append(invalid(ep, ex, "must be a strict subset of `cidr`"))
    return errs


def _network(cidr: str) -> ipaddress.IPv4Network | ipaddress.IPv6Network | None:
    ip_s, _, bits = cidr.partition("/")
    ip = parse_ip(ip_s)
    if ip is None:
        return None
    return ipaddress.ip_network(f"{ip}/{bits}", strict=False)


def _np_peer(peer: dict[str, Any], path: str, allow_invalid: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    n = 0
    for f in ("podSelector", "namespaceSelector"):
        if peer.get(f) is not None:
            n += 1
            errs += validate_label_selector(peer[f], child(path, f), allow_invalid)
    if peer.get("ipBlock") is not None:
        n += 1
        errs += _ip_block(peer["ipBlock"], child(path, "ipBlock"))
    if n == 0:
        errs.append(required(path, "must specify a peer"))
    elif n > 1 and peer.get("ipBlock") is not None:
        errs.append(forbidden(path, "may not specify both ipBlock and another peer"))
    return errs


def _np_spec(spec: dict[str, Any], path: str, allow_invalid: bool = False) -> list[FieldError]:
    errs = validate_label_selector(spec.get("podSelector") or {}, child(path, "podSelector"), allow_invalid)
    for direction, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(spec.get(direction) or []):
            if not isinstance(rule, dict):
                continue
            rp = index(child(path, direction), i)
            for j, port in enumerate(rule.get("ports") or []):
                if isinstance(port, dict):
                    errs += _np_port(port, index(child(rp, "ports"), j))
            for j, peer in enumerate(rule.get(peers) or []):
                if isinstance(peer, dict):
                    errs += _np_peer(peer, index(child(rp, peers), j), allow_invalid)
    types = spec.get("policyTypes") or []
    if len(types) > 2:
        from ..field import go_string_slice

        errs.append(invalid(child(path, "policyTypes"), go_string_slice(types, "[]networking.PolicyType"),
                            "may not specify more than two policyTypes"))
        return errs
    for i, t in enumerate(types):
        if t not in ("Ingress", "Egress"):
            errs.append(not_supported(index(child(path, "policyTypes"), i), t, ["Ingress", "Egress"]))
    return errs


def validate_network_policy(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _np_spec(spec_of(obj), "spec")


def validate_network_policy_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # an old object with invalid selector values may keep them
    allow = bool(validate_label_selector(spec_of(old).get("podSelector") or {}, ""))
    return validate_object_meta_update(new, old) + _np_spec(spec_of(new), "spec", allow)


# ---- Ingress -----------------------------------------------------------------------------


def _typed_ref(params: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if params.get("apiGroup") is not None:
        errs += [invalid(child(path, "apiGroup"), params["apiGroup"], m) for m in is_dns1123_subdomain(params["apiGroup"])]
    for f in ("kind", "name"):
        v = params.get(f) or ""
        if not v:
            errs.append(required(child(path, f), f"{f} is required"))
        else:
            errs += [invalid(child(path, f), v, m) for m in validate_path_segment_name(v, False)]
    return errs


def _backend(backend: dict[str, Any], path: str) -> list[FieldError]:
    res, svc = backend.get("resource"), backend.get("service")
    if res is not None and svc is not None:
        return [invalid(path, "", "cannot set both resource and service backends")]
    if res is not None:
        return _typed_ref(res, child(path, "resource"))
    if svc is None:
        return [invalid(path, "", "resource or service backend is required")]
    errs: list[FieldError] = []
    name = svc.get("name") or ""
    if not name:
        errs.append(required(child(path, "service", "name")))
    else:
        errs += [invalid(child(path, "service", "name"), name, m) for m in name_is_dns1035_label(name, False)]
    port = svc.get("port") or {}
    pname, pnum = port.get("name") or "", port.get("number") or 0
    if pname and pnum:
        errs.append(invalid(path, "", "cannot set both port name & port number"))
    elif pname:
        errs += [invalid(child(path, "service", "port", "name"), pname, m) for m in is_valid_port_name(pname)]
    elif pnum:
        errs += [invalid(child(path, "service", "port", "number"), pnum, m) for m in is_valid_port_num(pnum)]
    else:
        errs.append(required(path, "port name or number is required"))
    return errs


def _http_path(p: dict[str, Any], path: str) -> list[FieldError]:
    pt = p.get("pathType")
    if pt is None:
        return [required(child(path, "pathType"), "pathType must be specified")]
    errs: list[FieldError] = []
    value = p.get("path") or ""
    pp = child(path, "path")
    if pt in ("Exact", "Prefix"):
        if not value.startswith("/"):
            errs.append(invalid(pp, value, "must be an absolute path"))
        if value:
            errs += [invalid(pp, value, f"must not contain '{s}'") for s in _INVALID_PATH_SEQUENCES if s in value]
            errs += [invalid(pp, value, f"cannot end with '{s}'") for s in _INVALID_PATH_SUFFIXES if value.endswith(s)]
    elif pt == "ImplementationSpecific":
        if value and not value.startswith("/"):
            errs.append(invalid(pp, value, "must be an absolute path"))
    else:
        errs.append(not_supported(child(path, "pathType"), pt, _PATH_TYPES))
    return errs + _backend(p.get("backend") or {}, child(path, "backend"))


def _rule_value(rule: dict[str, Any], path: str) -> list[FieldError]:
    http = rule.get("http")
    if not isinstance(http, dict):
        return []
    hp = child(path, "http")
    paths = http.get("paths") or []
    errs = [] if paths else [required(child(hp, "paths"))]
    for i, p in enumerate(paths):
        if isinstance(p, dict):
            errs += _http_path(p, index(child(hp, "paths"), i))
    return errs


def _rules(rules: list[Any], path: str, allow_invalid_wildcard: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rp = index(path, i)
        host = rule.get("host") or ""
        wildcard = False
        if host:
            if parse_ip(host) is not None:
                errs.append(invalid(child(rp, "host"), host, "must be a DNS name, not an IP address"))
            if "*" in host:
                errs += [invalid(child(rp, "host"), host, m) for m in is_wildcard_dns1123_subdomain(host)]
                wildcard = True
            else:
                errs += [invalid(child(rp, "host"), host, m) for m in is_dns1123_subdomain(host)]
        if not wildcard or not allow_invalid_wildcard:
            errs += _rule_value(rule, rp)
    return errs


def _tls(tls: list[Any], path: str, allow_invalid_secret: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, t in enumerate(tls):
        if not isinstance(t, dict):
            continue
        tp = index(path, i)
        for j, host in enumerate(t.get("hosts") or []):
            check = is_wildcard_dns1123_subdomain if "*" in host else is_dns1123_subdomain
            errs += [invalid(index(child(tp, "hosts"), j), host, m) for m in check(host)]
        secret = t.get("secretName") or ""
        if not allow_invalid_secret and secret:
            errs += [invalid(child(tp, "secretName"), secret, m) for m in name_is_dns_subdomain(secret, False)]
    return errs


def _ingress_spec(spec: dict[str, Any], path: str, allow_invalid_secret: bool = False,
                  allow_invalid_wildcard: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = spec.get("rules") or []
    if not rules and spec.get("defaultBackend") is None:
        from ..field import GoValue

        errs.append(invalid(path, GoValue("[]networking.IngressRule(nil)"), "either `defaultBackend` or `rules` must be specified"))
    if spec.get("defaultBackend") is not None:
        errs += _backend(spec["defaultBackend"], child(path, "defaultBackend"))
    if rules:
        errs += _rules(rules, child(path, "rules"), allow_invalid_wildcard)
    if spec.get("tls"):
        errs += _tls(spec["tls"], child(path, "tls"), allow_invalid_secret)
    icn = spec.get("ingressClassName")
    if icn is not None:
        errs += [invalid(child(path, "ingressClassName"), icn, m) for m in name_is_dns_subdomain(icn, False)]
    return errs


def validate_ingress(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain) + _ingress_spec(spec_of(obj), "spec")
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    icn = spec_of(obj).get("ingressClassName")
    if _INGRESS_CLASS_ANNOTATION in ann and icn is not None and ann[_INGRESS_CLASS_ANNOTATION] != icn:
        errs.append(invalid(child("annotations", _INGRESS_CLASS_ANNOTATION), ann[_INGRESS_CLASS_ANNOTATION],
                            "must match `ingressClassName` when both are specified"))
    return errs


def validate_ingress_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    old_spec = spec_of(old)
    allow_secret = any(t.get("secretName") and name_is_dns_subdomain(t["secretName"], False)
                       for t in old_spec.get("tls") or [] if isinstance(t, dict))
    allow_wildcard = any("*" in (r.get("host") or "") and _rule_value(r, "")
                         for r in old_spec.get("rules") or [] if isinstance(r, dict))
    errs = validate_object_meta_update(new, old)
    errs += validate_object_meta(new, True, name_is_dns_subdomain)
    return errs + _ingress_spec(spec_of(new), "spec", allow_secret, allow_wildcard)


# ---- IngressClass ------------------------------------------------------------------------


def _ingress_class_params(params: Any, path: str) -> list[FieldError]:
    if not isinstance(params, dict):
        return []
    errs = _typed_ref(params, path)
    scope = params.get("scope")
    if scope is None:
        return errs + [required(child(path, "scope"))]
    if scope not in ("Cluster", "Namespace"):
        return errs + [not_supported(child(path, "scope"), scope, ["Cluster", "Namespace"])]
    ns = params.get("namespace")
    if scope == "Namespace":
        if ns is None:
            errs.append(required(child(path, "namespace"), "`parameters.scope` is set to 'Namespace'"))
        else:
            errs += [invalid(child(path, "namespace"), ns, m) for m in name_is_dns_label(ns, False)]
    if scope == "Cluster" and ns is not None:
        errs.append(forbidden(child(path, "namespace"), "`parameters.scope` is set to 'Cluster'"))
    return errs


def _ingress_class_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    controller = spec.get("controller") or ""
    if len(controller) > 250:
        errs.append(too_long(child(path, "controller"), 250))
    errs += validate_domain_prefixed_path(child(path, "controller"), controller)
    return errs + _ingress_class_params(spec.get("parameters"), child(path, "parameters"))


def validate_ingress_class(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, False, name_is_dns_subdomain) + _ingress_class_spec(spec_of(obj), "spec")


def validate_ingress_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += validate_immutable(spec_of(new).get("controller") or "", spec_of(old).get("controller") or "",
                               "spec.controller")
    return errs + validate_ingress_class(new)


VALIDATORS = {
    (NET, "Ingress"): validate_ingress,
    (NET, "IngressClass"): validate_ingress_class,
    (NET, "NetworkPolicy"): validate_network_policy,
}
UPDATE_VALIDATORS = {
    (NET, "Ingress"): validate_ingress_update,
    (NET, "IngressClass"): validate_ingress_class_update,
    (NET, "NetworkPolicy"): validate_network_policy_update,
}
