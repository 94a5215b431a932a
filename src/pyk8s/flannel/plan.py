"""Which route each other node's pod network gets: pure logic over Node objects.

Flannel's Kubernetes subnet manager reads a node's lease from its Node: spec.podCIDR is the
subnet, and the `flannel.alpha.coreos.com/*` annotations say where and how to send to it.
A node without those annotations runs no flannel (a fake or simulated node, or one with
--flannel-backend none) and gets no route.
"""

from __future__ import annotations

import ipaddress
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

ANNOTATION_PREFIX = "flannel.alpha.coreos.com/"
BACKEND_TYPE = ANNOTATION_PREFIX + "backend-type"
BACKEND_DATA = ANNOTATION_PREFIX + "backend-data"
PUBLIC_IP = ANNOTATION_PREFIX + "public-ip"
KUBE_SUBNET_MANAGER = ANNOTATION_PREFIX + "kube-subnet-manager"

HOST_GW = "host-gw"
VXLAN = "vxlan"
AUTO = "auto"  # flannel's vxlan backend with DirectRouting: host-gw on a shared link, VXLAN elsewhere


@dataclass(frozen=True)
class PeerRoute:
    node: str
    subnet: str  # the peer's podCIDR
    public_ip: str  # the peer's address (flannel's public-ip, the node's InternalIP)
    mode: str  # HOST_GW or VXLAN
    vtep_mac: str = ""

    @property
    def vtep_ip(self) -> str:
        """The peer's flannel.1 address: the network address of its subnet, as flannel assigns."""
        return str(ipaddress.ip_network(self.subnet, strict=False).network_address)


def node_annotations(backend: str, public_ip: str, vtep_mac: str, vni: int) -> dict[str, str]:
    """What this node publishes on its Node, in flannel's names and shapes."""
    data = {"VNI": vni, "VtepMAC": vtep_mac} if vtep_mac else None
    return {BACKEND_TYPE: VXLAN if backend in (VXLAN, AUTO) else HOST_GW,
            BACKEND_DATA: json.dumps(data, separators=(",", ":")), PUBLIC_IP: public_ip,
            KUBE_SUBNET_MANAGER: "true"}


def route_inputs(node: dict[str, Any]) -> tuple[Any, ...]:
    """What of a Node its route depends on (its status, changing every few seconds, is not)."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    return ((node.get("spec") or {}).get("podCIDR"), ann.get(PUBLIC_IP), ann.get(BACKEND_DATA), ann.get(BACKEND_TYPE))


def _peer(node: dict[str, Any]) -> tuple[str, str, str] | None:
    """(podCIDR, public IP, VTEP MAC) of a node running flannel, None for any other node."""
    ann = (node.get("metadata") or {}).get("annotations") or {}
    subnet = (node.get("spec") or {}).get("podCIDR") or ""
    public_ip = ann.get(PUBLIC_IP, "")
    if not subnet or not public_ip:
        return None
    try:
        ipaddress.ip_network(subnet)
        ipaddress.ip_address(public_ip)
        data = json.loads(ann.get(BACKEND_DATA) or "null")
    except ValueError:
        return None  # a node's annotations are its own to write: never trust their shape
    mac = data.get("VtepMAC", "") if isinstance(data, dict) else ""
    return subnet, public_ip, mac if isinstance(mac, str) else ""


def plan_routes(self_name: str, self_ip: str, self_subnet: str, nodes: Iterable[dict[str, Any]], backend: str,
                on_link: Callable[[str], bool]) -> dict[str, PeerRoute]:
    """The route wanted for each other node's subnet, by subnet.

    Skipped: this node, nodes at this node's own address (several kubelets on one host network
    share its routing table) and subnets overlapping our own (a route there would take our
    pods' traffic away from the local bridge).
    """
    own = ipaddress.ip_network(self_subnet, strict=False) if self_subnet else None
    out: dict[str, PeerRoute] = {}
    for node in nodes:
        name = (node.get("metadata") or {}).get("name", "")
        peer = _peer(node)
        if name == self_name or peer is None:
            continue
        subnet, public_ip, mac = peer
        net = ipaddress.ip_network(subnet, strict=False)
        if public_ip == self_ip or (own is not None and net.overlaps(own)) or subnet in out:
            continue
        direct = backend != VXLAN and on_link(public_ip)
        if direct:
            out[subnet] = PeerRoute(name, subnet, public_ip, HOST_GW)
        elif backend in (VXLAN, AUTO) and mac:
            out[subnet] = PeerRoute(name, subnet, public_ip, VXLAN, mac)
    return out
