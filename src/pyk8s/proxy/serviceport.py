"""What the proxy needs of one Service port and its endpoints (upstream's ServicePort and Endpoint).

Pure functions over API dicts: a Service plus its EndpointSlices become, per address family, a list
of `ServicePort`s with the endpoints each may send to. The rules (nftables_rules.py) are built from
these alone, so everything about endpoint selection is testable without a kernel.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Endpoint", "ServicePort", "service_ports", "proxied", "SERVICE_NAME_LABEL"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"
# as upstream: a Service with this label belongs to another proxy; headless ones have no ClusterIP
SERVICE_PROXY_NAME_LABEL = "service.kubernetes.io/service-proxy-name"
HEADLESS_LABEL = "service.kubernetes.io/headless"
DEFAULT_AFFINITY_TIMEOUT = 10800  # seconds, as upstream's sessionAffinityConfig default


@dataclass(frozen=True)
class Endpoint:
    ip: str
    port: int
    node_name: str = ""
    ready: bool = True
    serving: bool = True
    terminating: bool = False

    @property
    def key(self) -> str:
        return f"[{self.ip}]:{self.port}" if ":" in self.ip else f"{self.ip}:{self.port}"


@dataclass
class ServicePort:
    namespace: str
    name: str
    port_name: str
    protocol: str  # TCP, UDP, SCTP
    port: int
    cluster_ip: str
    node_port: int = 0
    external_ips: list[str] = field(default_factory=list)  # spec.externalIPs and LoadBalancer ingress IPs
    affinity_timeout: int = 0  # seconds of ClientIP affinity; 0 for none
    external_local: bool = False  # externalTrafficPolicy: Local
    cluster_endpoints: list[Endpoint] = field(default_factory=list)  # where traffic to the ClusterIP goes
    local_endpoints: list[Endpoint] = field(default_factory=list)  # where external traffic goes with eTP Local
    all_endpoints: list[Endpoint] = field(default_factory=list)  # every endpoint, usable or not

    @property
    def id(self) -> str:
        """ns/name/proto/portname, upstream's ServicePortName as it names chains with it."""
        return f"{self.namespace}/{self.name}/{self.protocol.lower()}/{self.port_name}"

    @property
    def has_external(self) -> bool:
        return bool(self.node_port or self.external_ips)


def proxied(svc: dict[str, Any]) -> bool:
    """Whether this proxy programs the Service at all (headless, ExternalName, other proxies: no)."""
    md = svc.get("metadata") or {}
    labels = md.get("labels") or {}
    if SERVICE_PROXY_NAME_LABEL in labels or HEADLESS_LABEL in labels:
        return False
    spec = svc.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return False
    ip = spec.get("clusterIP")
    return bool(ip) and ip != "None"


def _family_of(ip: str) -> int:
    try:
        return ipaddress.ip_address(ip).version
    except ValueError:
        return 0


def _endpoints_for(slices: Iterable[dict[str, Any]], family: int, port_name: str, protocol: str) -> list[Endpoint]:
    """Each endpoint's port comes from its slice's port of that name: a named targetPort resolves per
    pod (the endpointslice controller puts pods that resolve it differently into different slices)."""
    want = "IPv6" if family == 6 else "IPv4"
    seen: dict[str, Endpoint] = {}
    for sl in slices:
        if sl.get("addressType") != want:
            continue
        port = 0
        for p in sl.get("ports") or ():
            if (p.get("name") or "") == port_name and (p.get("protocol") or "TCP") == protocol:
                port = int(p.get("port") or 0)
                break
        if not port:
            continue
        for ep in sl.get("endpoints") or ():
            addrs = ep.get("addresses") or ()
            if not addrs:
                continue
            cond = ep.get("conditions") or {}
            ready = cond.get("ready") is not False  # unset means ready, as upstream reads it
            serving = cond.get("serving") if cond.get("serving") is not None else ready
            e = Endpoint(addrs[0], port, ep.get("nodeName") or "", ready, bool(serving),
                         bool(cond.get("terminating")))
            seen.setdefault(e.key, e)
    return sorted(seen.values(), key=lambda e: (ipaddress.ip_address(e.ip), e.port))


def _usable(eps: list[Endpoint]) -> list[Endpoint]:
    """Ready endpoints; when none is left, the serving ones that are terminating (upstream's
    ProxyTerminatingEndpoints: connections drain instead of failing while a rollout ends)."""
    ready = [e for e in eps if e.ready]
    if ready:
        return ready
    return [e for e in eps if e.serving and e.terminating]


def service_ports(svc: dict[str, Any], slices: Iterable[dict[str, Any]], family: int,
                  node_name: str) -> list[ServicePort]:
    """The ServicePorts of one Service for one address family (4 or 6); [] where it has no
    ClusterIP of that family or is not proxied."""
    if not proxied(svc):
        return []
    md = svc.get("metadata") or {}
    spec = svc.get("spec") or {}
    ips = spec.get("clusterIPs") or [spec.get("clusterIP")]
    cluster_ip = next((ip for ip in ips if ip and _family_of(ip) == family), "")
    if not cluster_ip:
        return []
    slices = list(slices)
    typ = spec.get("type") or "ClusterIP"
    external = [ip for ip in spec.get("externalIPs") or () if _family_of(ip) == family]
    if typ == "LoadBalancer":
        for ing in ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or ():
            ip = ing.get("ip")
            if ip and _family_of(ip) == family and ing.get("ipMode") != "Proxy" and ip not in external:
                external.append(ip)
    affinity = 0
    if spec.get("sessionAffinity") == "ClientIP":
        cfg = ((spec.get("sessionAffinityConfig") or {}).get("clientIP") or {})
        affinity = int(cfg.get("timeoutSeconds") or DEFAULT_AFFINITY_TIMEOUT)
    itp_local = spec.get("internalTrafficPolicy") == "Local"
    etp_local = spec.get("externalTrafficPolicy") == "Local" and typ in ("NodePort", "LoadBalancer")
    out = []
    for p in spec.get("ports") or ():
        protocol = p.get("protocol") or "TCP"
        port_name = p.get("name") or ""
        eps = _endpoints_for(slices, family, port_name, protocol)
        local = [e for e in eps if e.node_name == node_name]
        node_port = int(p.get("nodePort") or 0) if typ in ("NodePort", "LoadBalancer") else 0
        out.append(ServicePort(
            namespace=md.get("namespace") or "", name=md.get("name") or "", port_name=port_name,
            protocol=protocol, port=int(p.get("port") or 0), cluster_ip=cluster_ip, node_port=node_port,
            external_ips=list(external), affinity_timeout=affinity, external_local=etp_local,
            cluster_endpoints=_usable(local if itp_local else eps), local_endpoints=_usable(local),
            all_endpoints=eps))
    return out
