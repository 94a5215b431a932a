"""Who may ask: the cluster's own addresses only, when the server listens on a node address.

CoreDNS is reached at a pod IP inside the cluster network; ours listens on the node's address,
which the machine's LAN reaches too. So that it is neither an open resolver for the LAN (its
forwarding) nor a directory of the cluster's Services for it, `pyk8s server`'s DNS answers only
clients from the pod and service networks, from this machine's own addresses (host-network
pods, the node), or from a Node's address (host-network pods on other nodes, and service
traffic masqueraded by their proxy); others get REFUSED, as CoreDNS's acl plugin answers.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Iterable
from typing import Any

from ..api.nodeview import NODE_IP_TYPES

__all__ = ["ClientACL"]

_Net = ipaddress.IPv4Network | ipaddress.IPv6Network


class ClientACL:
    def __init__(self, networks: Iterable[str]) -> None:
        self.networks: list[_Net] = [ipaddress.ip_network(n.strip(), strict=False) for n in networks if n.strip()]
        self.node_addresses: dict[str, set[str]] = {}  # node name -> its addresses
        self._node_ips: set[str] = set()
        self._local: dict[str, bool] = {}
        self._decided: dict[str, bool] = {}

    # ---- Node informer handlers -------------------------------------------------------
    def set_node(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        addrs = {a.get("address", "") for a in (obj.get("status") or {}).get("addresses") or []
                 if a.get("type") in NODE_IP_TYPES}
        if self.node_addresses.get(name) == addrs:
            return  # a heartbeat: with thousands of nodes, a rebuild per status update would cost seconds
        self.node_addresses[name] = addrs
        self._node_ips = set().union(*self.node_addresses.values())
        self._decided.clear()

    def delete_node(self, obj: dict[str, Any]) -> None:
        if self.node_addresses.pop((obj.get("metadata") or {}).get("name", ""), None) is None:
            return
        self._node_ips = set().union(*self.node_addresses.values()) if self.node_addresses else set()
        self._decided.clear()

    # ---- the check --------------------------------------------------------------------
    def allows(self, ip: str) -> bool:
        """Decided once per source address until the Nodes change (the check is on every packet)."""
        hit = self._decided.get(ip)
        if hit is None:
            if len(self._decided) > 4096:  # sources are attacker-chosen: stay bounded
                self._decided.clear()
            hit = self._decided[ip] = self._allows(ip)
        return hit

    def _allows(self, ip: str) -> bool:
        if ip in self._node_ips:
            return True
        try:
            addr = ipaddress.ip_address(ip.split("%", 1)[0])
        except ValueError:
            return False
        if addr.is_loopback or any(addr in n for n in self.networks):
            return True
        return self._is_local(ip)

    def _is_local(self, ip: str) -> bool:
        """An address of this machine (binding to it succeeds only then); remembered per source."""
        hit = self._local.get(ip)
        if hit is None:
            if len(self._local) > 4096:  # sources are attacker-chosen: stay bounded
                self._local.clear()
            family = socket.AF_INET6 if ":" in ip else socket.AF_INET
            with socket.socket(family, socket.SOCK_DGRAM) as s:
                try:
                    s.bind((ip, 0))
                    hit = True
                except OSError:
                    hit = False
            self._local[ip] = hit
        return hit
