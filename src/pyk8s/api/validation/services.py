"""Service validation, as upstream's core validation (ValidateService, ValidateServiceUpdate,
the dual-stack clusterIPs/ipFamilies rules) plus the allocators' range messages.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from ..errors import FieldError
from ._json import as_dict as _d
from ._json import as_int as _n
from ._json import as_list as _l
from ._json import as_str as _s
from .containers import validate_port_num_or_name
from .field import GoValue, child, duplicate, forbidden, go_string_slice, invalid, not_supported, required
from .meta import FIELD_IMMUTABLE, meta_of, validate_labels, validate_object_meta, validate_object_meta_update
from .names import (
    _parse_ip_sloppy,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
    is_valid_cidr,
    is_valid_ip,
    is_valid_port_num,
    name_is_dns1035_label,
)

__all__ = [
    "validate_service", "validate_service_update", "validate_service_status_update", "validate_node_port_in_range",
    "validate_cluster_ip_in_range", "validate_non_special_ip",
]

_PROTOCOLS = ["SCTP", "TCP", "UDP"]

V = dict[str, Any]


def _ip_errs(path: str, value: Any) -> list[FieldError]:
    return [invalid(path, value, m) for m in is_valid_ip(value if isinstance(value, str) else "")]


# ---- Service -------------------------------------------------------------------------------------

def _is_headless(spec: V) -> bool:
    ips = _l(spec.get("clusterIPs"))
    return len(ips) == 1 and ips[0] == "None"


def _externally_accessible(spec: V) -> bool:
    t = spec.get("type") or ""
    return t in ("LoadBalancer", "NodePort") or (t == "ClusterIP" and bool(_l(spec.get("externalIPs"))))


def validate_non_special_ip(ip: str, path: str) -> list[FieldError]:
    a = _parse_ip_sloppy(ip)
    if a is None:
        return [invalid(path, ip, "must be a valid IP address")]
    errs = []
    if a.is_unspecified:
        errs.append(invalid(path, ip, f"may not be unspecified ({ip})"))
    if a.is_loopback:
        errs.append(invalid(path, ip, "may not be in the loopback range (127.0.0.0/8, ::1/128)"))
    if a.is_link_local and not (a.version == 6 and a in ipaddress.ip_network("ff00::/8")):
        errs.append(invalid(path, ip, "may not be in the link-local range (169.254.0.0/16, fe80::/10)"))
    if (a.version == 4 and a in ipaddress.ip_network("224.0.0.0/24")) or \
            (a.version == 6 and a in ipaddress.ip_network("ff02::/16")):
        errs.append(invalid(path, ip, "may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"))
    return errs


def _service_port(sp: V, require_name: bool, names: set[str], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = sp.get("name") or ""
    if require_name and not name:
        errs.append(required(child(path, "name")))
    elif name:
        errs += [invalid(child(path, "name"), name, m) for m in is_dns1123_label(name)]
        if name in names:
            errs.append(duplicate(child(path, "name"), name))
        else:
            names.add(name)
    port = sp.get("port") or 0
    errs += [invalid(child(path, "port"), port, m) for m in is_valid_port_num(port)]
    proto = sp.get("protocol") or ""
    if not proto:
        errs.append(required(child(path, "protocol")))
    elif proto not in _PROTOCOLS:
        errs.append(not_supported(child(path, "protocol"), proto, _PROTOCOLS))
    errs += validate_port_num_or_name(sp.get("targetPort", 0), child(path, "targetPort"))
    ap = sp.get("appProtocol")
    if ap is not None:
        errs += [invalid(child(path, "appProtocol"), ap, m) for m in is_qualified_name(str(ap))]
    return errs


def _cluster_ips_related(spec: V) -> list[FieldError]:
    if spec.get("type") == "ExternalName":
        return []
    errs: list[FieldError] = []
    cip, cips = spec.get("clusterIP") or "", _l(spec.get("clusterIPs"))
    fam, pol = _l(spec.get("ipFamilies")), spec.get("ipFamilyPolicy")
    if cip:
        if not cips:
            errs.append(required("spec.clusterIPs"))
        elif cips[0] != cip:
            errs.append(invalid("spec.clusterIPs", go_string_slice(cips), "first value must match `clusterIP`"))
    elif cips:
        errs.append(invalid("spec.clusterIPs", go_string_slice(cips), "must be empty when `clusterIP` is not specified"))
    seen: set[str] = set()
    for i, f in enumerate(fam):
        if f not in ("IPv4", "IPv6"):
            errs.append(not_supported(f"spec.ipFamilies[{i}]", f, ["IPv4", "IPv6"]))
        if f in seen:
            errs.append(duplicate(f"spec.ipFamilies[{i}]", f))
        seen.add(f)
    if pol is not None and pol not in ("PreferDualStack", "RequireDualStack", "SingleStack"):
        errs.append(not_supported("spec.ipFamilyPolicy", pol, ["PreferDualStack", "RequireDualStack", "SingleStack"]))
    bad = False
    for i, ip in enumerate(cips):
        if i == 0 and ip == "None":
            if len(cips) > 1:
                bad = True
                errs.append(invalid("spec.clusterIPs", go_string_slice(cips), "'None' must be the first and only value"))
            continue
        e = _ip_errs(f"spec.clusterIPs[{i}]", ip)
        bad = bad or bool(e)
        errs += e
    if len(cips) > 2:
        errs.append(invalid("spec.clusterIPs", go_string_slice(cips), "may only hold up to 2 values"))
    if bad:
        return errs
    if len(cips) > 1:
        versions = [ipaddress.ip_address(ip).version for ip in cips[:2]]
        if len(set(versions)) != 2:
            errs.append(invalid("spec.clusterIPs", go_string_slice(cips), "may specify no more than one IP for each IP family"))
    if not _is_headless(spec) and cips and fam:
        for i, ip in enumerate(cips):
            if i > len(fam) - 1:
                break
            v6 = ":" in ip
            if fam[i] == "IPv4" and v6:
                errs.append(invalid(f"spec.clusterIPs[{i}]", ip, f"expected an IPv4 value as indicated by `ipFamilies[{i}]`"))
            if fam[i] == "IPv6" and not v6:
                errs.append(invalid(f"spec.clusterIPs[{i}]", ip, f"expected an IPv6 value as indicated by `ipFamilies[{i}]`"))
    return errs


def validate_service(svc: V) -> list[FieldError]:
    """ValidateService."""
    errs = validate_object_meta(svc, True, name_is_dns1035_label)
    spec = _d(svc.get("spec"))
    ann = _d(meta_of(svc).get("annotations"))
    hints, mode = ann.get("service.kubernetes.io/topology-aware-hints"), ann.get("service.kubernetes.io/topology-mode")
    if hints is not None and mode is not None and hints != mode:
        errs.append(invalid("metadata.annotations[service.kubernetes.io/topology-mode]", mode,
                            "must match annotations[service.kubernetes.io/topology-aware-hints] when both are specified"))
    t = spec.get("type") or ""
    ports = _l(spec.get("ports"))
    headless = _is_headless(spec)
    if not ports and not headless and t != "ExternalName":
        errs.append(required("spec.ports"))
    if t in ("LoadBalancer", "NodePort") and headless:
        errs.append(invalid("spec.clusterIPs[0]", "None", f"may not be set to 'None' for {t} services"))
    if t == "ExternalName":
        if _l(spec.get("clusterIPs")):
            errs.append(forbidden("spec.clusterIPs", "may not be set for ExternalName services"))
        if _l(spec.get("ipFamilies")):
            errs.append(forbidden("spec.ipFamilies", "may not be set for ExternalName services"))
        if spec.get("ipFamilyPolicy") is not None:
            errs.append(forbidden("spec.ipFamilyPolicy", "may not be set for ExternalName services"))
        cname = (spec.get("externalName") or "").removesuffix(".")
        if cname:
            errs += [invalid("spec.externalName", cname, m) for m in is_dns1123_subdomain(cname)]
        else:
            errs.append(required("spec.externalName"))
    names: set[str] = set()
    for i, p in enumerate(ports):
        errs += _service_port(_d(p), len(ports) > 1, names, f"spec.ports[{i}]")
    if spec.get("selector") is not None:
        errs += validate_labels(spec["selector"], "spec.selector")
    sa = spec.get("sessionAffinity") or ""
    if not sa:
        errs.append(required("spec.sessionAffinity"))
    elif sa not in ("ClientIP", "None"):
        errs.append(not_supported("spec.sessionAffinity", sa, ["ClientIP", "None"]))
    sac = spec.get("sessionAffinityConfig")
    if sa == "ClientIP":
        sp = "spec.sessionAffinityConfig"
        if sac is None:
            errs.append(required(sp, "when session affinity type is ClientIP"))
        elif _d(sac).get("clientIP") is None:
            errs.append(required(child(sp, "clientIP"), "when session affinity type is ClientIP"))
        elif _d(_d(sac)["clientIP"]).get("timeoutSeconds") is None:
            errs.append(required(child(sp, "clientIP", "timeoutSeconds"), "when session affinity type is ClientIP"))
        else:
            to = _d(_d(sac)["clientIP"])["timeoutSeconds"]
            if to <= 0 or to > 86400:
                errs.append(invalid(child(sp, "clientIP", "timeoutSeconds"), to, "must be greater than 0 and less than 86400"))
    elif sa == "None" and sac is not None:
        errs.append(forbidden("spec.sessionAffinityConfig", "must not be set when session affinity is None"))
    errs += _cluster_ips_related(spec)
    for i, ip in enumerate(_l(spec.get("externalIPs"))):
        e = _ip_errs(f"spec.externalIPs[{i}]", ip)
        errs += e or validate_non_special_ip(ip, f"spec.externalIPs[{i}]")
    if not t:
        errs.append(required("spec.type"))
    elif t not in ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort"):
        errs.append(not_supported("spec.type", t, ["ClusterIP", "ExternalName", "LoadBalancer", "NodePort"]))
    if t == "ClusterIP":
        for i, p in enumerate(ports):
            if _d(p).get("nodePort"):
                errs.append(forbidden(f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"))
    seen_np: set[tuple[str, int]] = set()
    for i, p in enumerate(ports):
        p = _d(p)
        if not p.get("nodePort"):
            continue
        k = (_s(p.get("protocol")), _n(p["nodePort"]))
        if k in seen_np:
            errs.append(duplicate(f"spec.ports[{i}].nodePort", p["nodePort"]))
        seen_np.add(k)
    seen_p: set[tuple[str, int]] = set()
    for i, p in enumerate(ports):
        p = _d(p)
        k = (_s(p.get("protocol")), _n(p.get("port")))
        if k in seen_p:
            errs.append(duplicate(f"spec.ports[{i}]", GoValue(f'core.ServicePort{{Name:"", Protocol:"{k[0]}", '
                                                            f'AppProtocol:(*string)(nil), Port:{k[1]}, '
                                                            'TargetPort:intstr.IntOrString{Type:0, IntVal:0, StrVal:""}, '
                                                            'NodePort:0}')))
        seen_p.add(k)
    lbsr = _l(spec.get("loadBalancerSourceRanges"))
    if lbsr:
        fp = "spec.LoadBalancerSourceRanges"
        if t != "LoadBalancer":
            errs.append(forbidden(fp, "may only be used when `type` is 'LoadBalancer'"))
        for i, v in enumerate(lbsr):
            v = str(v).strip()
            errs += [invalid(f"{fp}[{i}]", v, m) for m in is_valid_cidr(v)]
    elif "service.beta.kubernetes.io/load-balancer-source-ranges" in ann:
        fp = "metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]"
        if t != "LoadBalancer":
            errs.append(forbidden(fp, "may only be used when `type` is 'LoadBalancer'"))
        val = ann["service.beta.kubernetes.io/load-balancer-source-ranges"].strip()
        if val:
            for v in val.split(","):
                errs += [invalid(fp, v.strip(), m) for m in is_valid_cidr(v.strip())]
    if spec.get("allocateLoadBalancerNodePorts") is not None and t != "LoadBalancer":
        errs.append(forbidden("spec.allocateLoadBalancerNodePorts", "may only be used when `type` is 'LoadBalancer'"))
    if t == "LoadBalancer" and spec.get("allocateLoadBalancerNodePorts") is None:
        errs.append(required("allocateLoadBalancerNodePorts"))
    lbc = spec.get("loadBalancerClass")
    if t == "LoadBalancer":
        if lbc is not None:
            errs += [invalid("spec.loadBalancerClass", lbc, m) for m in is_qualified_name(str(lbc))]
    elif lbc is not None:
        errs.append(forbidden("spec.loadBalancerClass", "may only be used when `type` is 'LoadBalancer'"))
    etp = spec.get("externalTrafficPolicy") or ""
    if not _externally_accessible(spec):
        if etp:
            errs.append(invalid("spec.externalTrafficPolicy", etp, "may only be set for externally-accessible services"))
    elif not etp:
        errs.append(required("spec.externalTrafficPolicy"))
    elif etp not in ("Cluster", "Local"):
        errs.append(not_supported("spec.externalTrafficPolicy", etp, ["Cluster", "Local"]))
    hc = spec.get("healthCheckNodePort") or 0
    needs_hc = t == "LoadBalancer" and etp == "Local"
    if not needs_hc:
        if hc:
            errs.append(invalid("spec.healthCheckNodePort", hc,
                                "may only be set when `type` is 'LoadBalancer' and `externalTrafficPolicy` is 'Local'"))
    elif hc == 0:
        errs.append(required("spec.healthCheckNodePort"))
    else:
        errs += [invalid("spec.healthCheckNodePort", hc, m) for m in is_valid_port_num(hc)]
    itp = spec.get("internalTrafficPolicy")
    if itp is None:
        if t in ("NodePort", "LoadBalancer", "ClusterIP"):
            errs.append(required("spec.internalTrafficPolicy"))
    elif itp not in ("Cluster", "Local"):
        errs.append(not_supported("spec.internalTrafficPolicy", itp, ["Cluster", "Local"]))
    td = spec.get("trafficDistribution")
    if td is not None and td != "PreferClose":
        errs.append(not_supported("spec.trafficDistribution", td, ["PreferClose"]))
    return errs


def _upgrade_downgrade(new: V, old: V) -> list[FieldError]:
    ns, os_ = _d(new.get("spec")), _d(old.get("spec"))
    errs: list[FieldError] = []
    if "ExternalName" in (ns.get("type"), os_.get("type")):
        return errs
    nh, oh = _is_headless(ns), _is_headless(os_)
    nips, oips = _l(ns.get("clusterIPs")), _l(os_.get("clusterIPs"))
    shown = go_string_slice(nips)
    single = ns.get("ipFamilyPolicy") == "SingleStack"
    if not (nh and oh):
        if len(oips) == len(nips):
            for i, ip in enumerate(oips):
                if ip != nips[i]:
                    errs.append(invalid(f"spec.clusterIPs[{i}]", shown, "may not change once set"))
        elif len(oips) > len(nips):
            if not nips:
                errs.append(invalid("spec.clusterIPs[0]", shown, "primary clusterIP can not be unset"))
            if oips and nips and nips[0] != oips[0]:
                errs.append(invalid("spec.clusterIPs[0]", shown, "may not change once set"))
            if len(nips) == 1 and not single:
                errs.append(invalid("spec.ipFamilyPolicy", ns.get("ipFamilyPolicy") or "null",
                                    "must be set to 'SingleStack' when releasing the secondary clusterIP"))
        elif oips and nips[0] != oips[0]:
            errs.append(invalid("spec.clusterIPs[0]", shown, "may not change once set"))
    if nh != oh or nh:
        return errs
    nf, of = _l(ns.get("ipFamilies")), _l(os_.get("ipFamilies"))
    if len(nf) == len(of):
        for i, f in enumerate(of):
            if f != nf[i]:
                errs.append(invalid("spec.ipFamilies[0]", go_string_slice(nf, "[]core.IPFamily"), "may not change once set"))
    elif len(of) > len(nf):
        if not nips:
            errs.append(invalid("spec.ipFamilies[0]", go_string_slice(nf, "[]core.IPFamily"), "primary ipFamily can not be unset"))
        if nf and nf[0] != of[0]:
            errs.append(invalid("spec.ipFamilies[0]", shown, "may not change once set"))
        if len(nf) == 1 and not single:
            errs.append(invalid("spec.ipFamilyPolicy", ns.get("ipFamilyPolicy") or "null",
                                "must be set to 'SingleStack' when releasing the secondary ipFamily"))
    elif of and nf and nf[0] != of[0]:
        errs.append(invalid("spec.ipFamilies[0]", shown, "may not change once set"))
    return errs


def validate_service_update(new: V, old: V) -> list[FieldError]:
    # Upstream's service REST copies the allocated clusterIPs/nodePorts a client left out (say, a
    # `kubectl replace` of the original manifest) into the new object before validating it.
    from ..defaults.core import service_patch_allocated_values

    service_patch_allocated_values(new, old)
    errs = validate_object_meta_update(new, old)
    errs += _upgrade_downgrade(new, old)
    ns, os_ = _d(new.get("spec")), _d(old.get("spec"))
    if ns.get("type") == "LoadBalancer" and os_.get("type") == "LoadBalancer" and \
            ns.get("loadBalancerClass") != os_.get("loadBalancerClass"):
        errs.append(invalid("spec.loadBalancerClass", ns.get("loadBalancerClass") or "null", "may not change once set"))
    needs = [s.get("type") == "LoadBalancer" and s.get("externalTrafficPolicy") == "Local" for s in (ns, os_)]
    if all(needs) and ns.get("healthCheckNodePort") != os_.get("healthCheckNodePort"):
        errs.append(forbidden("spec.healthCheckNodePort", FIELD_IMMUTABLE))
    return errs + validate_service(new)


def validate_service_status_update(new: V, old: V) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    spec = _d(new.get("spec"))
    ing = _l(_d(_d(new.get("status")).get("loadBalancer")).get("ingress"))
    if ing and spec.get("type") != "LoadBalancer":
        return errs + [forbidden("status.loadBalancer.ingress", "may only be used when `spec.type` is 'LoadBalancer'")]
    for i, g in enumerate(ing):
        g = _d(g)
        p = f"status.loadBalancer.ingress[{i}]"
        if g.get("ip"):
            errs += _ip_errs(child(p, "ip"), g["ip"])
        mode = g.get("ipMode")
        if mode is None and g.get("ip"):
            errs.append(required(child(p, "ipMode"), "must be specified when `ip` is set"))
        elif mode is not None and not g.get("ip"):
            errs.append(forbidden(child(p, "ipMode"), "may not be specified when `ip` is not set"))
        elif mode is not None and mode not in ("Proxy", "VIP"):
            errs.append(not_supported(child(p, "ipMode"), mode, ["Proxy", "VIP"]))
        if g.get("hostname"):
            errs += [invalid(child(p, "hostname"), g["hostname"], m) for m in is_dns1123_subdomain(g["hostname"])]
            if not is_valid_ip(g["hostname"]):
                errs.append(invalid(child(p, "hostname"), g["hostname"], "must be a DNS name, not an IP address"))
    return errs


def validate_node_port_in_range(port: int, path: str, lo: int = 30000, hi: int = 32767) -> list[FieldError]:
    """The service node-port allocator's range check (`--service-node-port-range`)."""
    if not lo <= port <= hi:
        return [invalid(path, port, f"provided port is not in the valid range. The range of valid ports is {lo}-{hi}")]
    return []


def validate_cluster_ip_in_range(svc: V, cidr: str = "10.96.0.0/12") -> list[FieldError]:
    """The service IP allocator's range check for user-requested clusterIPs."""
    net = ipaddress.ip_network(cidr, strict=False)
    ips = _l(_d(svc.get("spec")).get("clusterIPs"))
    for ip in ips:
        if ip in ("None", ""):
            continue
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            continue
        if addr.version == net.version and addr not in net:
            return [invalid("spec.clusterIPs", go_string_slice(ips),
                            f"failed to allocate IP {ip}: the provided IP ({ip}) is not in the valid range. "
                            f"The range of valid IPs is {cidr}")]
    return []
