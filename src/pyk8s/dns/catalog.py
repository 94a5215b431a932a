"""What the cluster DNS answers from: Services, EndpointSlices and Namespaces, as watched.

Plain dicts keyed as the lookups need them (CoreDNS's SvcIndex / EpIndex), kept current by
informer handlers. `modified` is the SOA serial: the Unix time of the last change, as
CoreDNS's `APIConn.Modified()`.
"""

from __future__ import annotations

import ipaddress
import time
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Catalog", "Endpoint", "ServiceInfo"]

SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True)
class Endpoint:
    """One ready address of a Service with one of its ports (port -1: the slice has none)."""

    ip: str
    hostname: str  # endpoints[].hostname, else the address with dashes (CoreDNS's endpointHostname)
    port: int
    port_name: str
    protocol: str


@dataclass
class ServiceInfo:
    name: str
    namespace: str
    type: str
    cluster_ips: list[str]  # empty for headless
    external_name: str
    ports: list[tuple[str, str, int]]  # (name, protocol, port)

    @property
    def headless(self) -> bool:
        return not self.cluster_ips and self.type != "ExternalName"


def endpoint_hostname(ip: str, hostname: str | None) -> str:
    if hostname:
        return hostname
    return ip.replace(".", "-") if "." in ip else ip.replace(":", "-")


def service_info(obj: dict[str, Any]) -> ServiceInfo:
    meta, spec = obj.get("metadata") or {}, obj.get("spec") or {}
    ips = [ip for ip in (spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else []))
           if ip and ip != "None"]
    ports = [(str(p.get("name") or ""), str(p.get("protocol") or "TCP"), int(p.get("port") or 0))
             for p in spec.get("ports") or []]
    return ServiceInfo(name=meta.get("name", ""), namespace=meta.get("namespace", ""),
                       type=spec.get("type") or "ClusterIP", cluster_ips=ips,
                       external_name=str(spec.get("externalName") or "").rstrip("."), ports=ports)


def slice_endpoints(obj: dict[str, Any]) -> list[Endpoint]:
    """The ready endpoints of one EndpointSlice; ready unset counts as ready (discovery/v1's
    rule, which CoreDNS follows)."""
    out: list[Endpoint] = []
    ports = [(str(p.get("name") or ""), str(p.get("protocol") or "TCP"), int(p.get("port") or 0))
             for p in obj.get("ports") or []] or [("", "", -1)]
    for ep in obj.get("endpoints") or []:
        if (ep.get("conditions") or {}).get("ready") is False:
            continue
        for ip in ep.get("addresses") or []:
            try:
                ipaddress.ip_address(ip)
            except ValueError:  # an FQDN slice: nothing a DNS record can point at
                continue
            host = endpoint_hostname(ip, ep.get("hostname"))
            for name, proto, port in ports:
                out.append(Endpoint(ip, host, port, name, proto))
    return out


@dataclass
class Catalog:
    services: dict[tuple[str, str], ServiceInfo] = field(default_factory=dict)  # (ns, name)
    # (ns, service name) -> slice name -> its ready endpoints
    slices: dict[tuple[str, str], dict[str, list[Endpoint]]] = field(default_factory=dict)
    namespaces: set[str] = field(default_factory=set)
    modified: int = field(default_factory=lambda: int(time.time()))
    generation: int = 0  # bumped on every change: the reverse (PTR) index is rebuilt from it
    _reverse: dict[str, list[str]] = field(default_factory=dict)
    _reverse_gen: int = -1

    def _changed(self) -> None:
        self.modified = int(time.time())
        self.generation += 1

    # ---- informer handlers ------------------------------------------------------------
    def set_service(self, obj: dict[str, Any]) -> None:
        info = service_info(obj)
        self.services[(info.namespace, info.name)] = info
        self._changed()

    def delete_service(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        self.services.pop((meta.get("namespace", ""), meta.get("name", "")), None)
        self._changed()

    def set_slice(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        svc = (meta.get("labels") or {}).get(SERVICE_NAME_LABEL)
        if not svc:
            return
        self.slices.setdefault((meta.get("namespace", ""), svc), {})[meta.get("name", "")] = slice_endpoints(obj)
        self._changed()

    def replace_slice(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        """An update: the slice may have moved to another Service (its service-name label)."""
        self.delete_slice(old)
        self.set_slice(new)

    def delete_slice(self, obj: dict[str, Any]) -> None:
        meta = obj.get("metadata") or {}
        key = (meta.get("namespace", ""), (meta.get("labels") or {}).get(SERVICE_NAME_LABEL) or "")
        group = self.slices.get(key)
        if group is not None:
            group.pop(meta.get("name", ""), None)
            if not group:
                del self.slices[key]
        self._changed()

    def set_namespace(self, obj: dict[str, Any]) -> None:
        self.namespaces.add((obj.get("metadata") or {}).get("name", ""))
        self._changed()

    def delete_namespace(self, obj: dict[str, Any]) -> None:
        self.namespaces.discard((obj.get("metadata") or {}).get("name", ""))
        self._changed()

    # ---- reads ------------------------------------------------------------------------
    def endpoints(self, namespace: str, service: str) -> list[Endpoint]:
        return [e for eps in (self.slices.get((namespace, service)) or {}).values() for e in eps]

    def reverse(self, ip: str, zone: str) -> list[str]:
        """PTR targets for an address: the Service whose ClusterIP it is, then every endpoint
        having it (CoreDNS's serviceRecordForIP)."""
        if self._reverse_gen != self.generation:
            rev: dict[str, list[str]] = {}
            for (ns, name), svc in self.services.items():
                for cip in svc.cluster_ips:
                    rev.setdefault(_canonical(cip), []).append(f"{name}.{ns}.svc.{zone}")
            for (ns, name), group in self.slices.items():
                for eps in group.values():
                    for e in eps:
                        target = f"{e.hostname}.{name}.{ns}.svc.{zone}"
                        lst = rev.setdefault(_canonical(e.ip), [])
                        if target not in lst:
                            lst.append(target)
            self._reverse, self._reverse_gen = rev, self.generation
        return self._reverse.get(_canonical(ip), [])


def _canonical(ip: str) -> str:
    try:
        return str(ipaddress.ip_address(ip))
    except ValueError:
        return ip
