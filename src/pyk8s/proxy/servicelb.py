"""The built-in load balancer's controller (k3s's servicelb): LoadBalancer Services get the nodes'
addresses as `status.loadBalancer.ingress`, and every node's proxy serves the Service's port there
(the ingress IPs are programmed like external IPs, nftables_rules.py).

One writer in the cluster: `pyk8s server` runs it (not the agents), and several servers of one
cluster elect the writer on the Lease kube-system/pyk8s-servicelb. As k3s does, a Service whose
port (and protocol) another LoadBalancer Service already holds gets no address and stays pending,
since both cannot be served on the same node address; the older Service keeps the port.
Services with a `loadBalancerClass` belong to another implementation and are left alone, as are
nodes labelled `node.kubernetes.io/exclude-from-external-load-balancers` (upstream's label).
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
from collections.abc import Iterable
from typing import Any

from ..api.errors import StatusError
from ..api.nodeview import node_ip_view
from ..client import Client
from ..client.informer import InformerFactory
from ..client.leaderelection import LeaderElector
from ..client.tasks import cancel

log = logging.getLogger("pyk8s.servicelb")

__all__ = ["ServiceLB", "ingress_for"]

SERVICES = ("", "v1", "services")
NODES = ("", "v1", "nodes")
EXCLUDE_LABEL = "node.kubernetes.io/exclude-from-external-load-balancers"
LEASE_NAME = "pyk8s-servicelb"


def _ready(node: dict[str, Any]) -> bool:
    conds = (node.get("status") or {}).get("conditions") or ()
    return any(c.get("type") == "Ready" and c.get("status") == "True" for c in conds)


def node_contribution(n: dict[str, Any]) -> tuple[str, ...]:
    """A node's ExternalIPs, or its InternalIPs where it has none (as k3s picks them); none unless it
    is Ready and not excluded."""
    if not _ready(n) or EXCLUDE_LABEL in ((n.get("metadata") or {}).get("labels") or {}):
        return ()
    addrs = (n.get("status") or {}).get("addresses") or ()
    ext = [a["address"] for a in addrs if a.get("type") == "ExternalIP" and a.get("address")]
    return tuple(ext or [a["address"] for a in addrs if a.get("type") == "InternalIP" and a.get("address")])


def lb_view(node: dict[str, Any]) -> dict[str, Any]:
    """What node_contribution reads of a Node, the informer's transform (api/nodeview.py): its
    addresses, the exclusion label and Ready; a heartbeat changes none of this."""
    view = node_ip_view(node)
    labels = (node.get("metadata") or {}).get("labels") or {}
    view["metadata"]["labels"] = {EXCLUDE_LABEL: labels[EXCLUDE_LABEL]} if EXCLUDE_LABEL in labels else {}
    view["status"]["conditions"] = [{"type": "Ready", "status": c.get("status")}
                                    for c in (node.get("status") or {}).get("conditions") or ()
                                    if c.get("type") == "Ready"]
    return view


def _address_key(a: str) -> tuple[int, ipaddress.IPv4Address | ipaddress.IPv6Address]:
    ip = ipaddress.ip_address(a)
    return ip.version, ip  # IPv4 first: the two versions do not compare


def _sorted_addresses(addrs: Iterable[str]) -> list[str]:
    return sorted(set(addrs), key=_address_key)


def node_addresses(nodes: list[dict[str, Any]]) -> list[str]:
    """Every address the Services get, in address order."""
    return _sorted_addresses(a for n in nodes for a in node_contribution(n))


def _handled(svc: dict[str, Any]) -> bool:
    spec = svc.get("spec") or {}
    return spec.get("type") == "LoadBalancer" and not spec.get("loadBalancerClass")


def ingress_for(services: list[dict[str, Any]], nodes: list[dict[str, Any]]) -> dict[str, list[dict[str, str]]]:
    """namespace/name -> the ingress list each LoadBalancer Service should have."""
    return _ingress(services, node_addresses(nodes))


def _ingress(services: list[dict[str, Any]], addrs: list[str]) -> dict[str, list[dict[str, str]]]:
    v6 = {a for a in addrs if ":" in a}
    taken: set[tuple[str, int]] = set()
    out: dict[str, list[dict[str, str]]] = {}

    def age(s: dict[str, Any]) -> tuple[str, str, str]:
        md = s.get("metadata") or {}
        return md.get("creationTimestamp") or "", md.get("namespace") or "", md.get("name") or ""

    for svc in sorted((s for s in services if _handled(s)), key=age):
        md = svc["metadata"]
        ports = {(p.get("protocol") or "TCP", int(p.get("port") or 0)) for p in svc["spec"].get("ports") or ()}
        families = set(svc["spec"].get("ipFamilies") or ["IPv4"])
        key = f"{md.get('namespace')}/{md.get('name')}"
        if ports & taken:
            out[key] = []
            continue
        taken |= ports
        out[key] = [{"ip": a, "ipMode": "VIP"} for a in addrs if ("IPv6" if a in v6 else "IPv4") in families]
    return out


class ServiceLB:
    def __init__(self, client: Client) -> None:
        self.client = client
        self.factory = InformerFactory(client)
        self.services = self.factory.informer(SERVICES)
        self.nodes = self.factory.informer(NODES, transform=lb_view)
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.elector = LeaderElector(client, LEASE_NAME)
        # node name -> the addresses it lends (node_contribution); kept from the node events so that
        # heartbeats, which change none of them, cost a comparison and wake nothing
        self._lent: dict[str, tuple[str, ...]] = {}
        self._addrs: list[str] | None = []

    async def start(self) -> None:
        def poke(*_: Any) -> None:
            self._wake.set()

        def node(obj: dict[str, Any]) -> None:
            name = obj["metadata"]["name"]
            lent = node_contribution(obj)
            if self._lent.get(name, ()) != lent:
                if lent:
                    self._lent[name] = lent
                else:
                    self._lent.pop(name, None)
                self._addrs = None
                self._wake.set()

        def node_gone(obj: dict[str, Any]) -> None:
            if self._lent.pop(obj["metadata"]["name"], None) is not None:
                self._addrs = None
                self._wake.set()

        self.services.add_handlers(poke, poke, poke)
        self.nodes.add_handlers(node, lambda _old, new: node(new), node_gone)
        self.factory.start()
        await self.factory.wait_synced()
        self._task = asyncio.create_task(self._elect(), name="servicelb")

    async def stop(self) -> None:
        await cancel(self._task)
        self._task = None
        await self.elector.release()
        await self.factory.stop()
        await self.client.close()

    async def _elect(self) -> None:
        while True:
            await self.elector.run(self._loop)
            log.warning("servicelb: lost the lease; waiting to lead again")

    async def _loop(self) -> None:
        self._wake.set()  # a new leader looks at everything
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                await self.sync()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - retried at the next event or in a second
                log.warning("servicelb: %s", e)
                await asyncio.sleep(1.0)
                self._wake.set()

    async def sync(self) -> None:
        """Level-triggered over all LoadBalancer Services (there are few): write what differs."""
        services = [s for s in self.services.list() if _handled(s)]
        if not services:
            return
        if self._addrs is None:
            self._addrs = _sorted_addresses(a for lent in self._lent.values() for a in lent)
        want = _ingress(services, self._addrs)
        for key, ingress in want.items():
            svc = self.services.get(key)
            if svc is None:
                continue
            have = ((svc.get("status") or {}).get("loadBalancer") or {}).get("ingress") or []
            if have == ingress:
                continue
            body = dict(svc, status=dict(svc.get("status") or {}, loadBalancer={"ingress": ingress} if ingress else {}))
            try:
                await self.client.update_status(SERVICES, body, field_manager="pyk8s-servicelb")
            except StatusError as e:
                if e.code in (404, 409):  # gone, or changed since: its event brings us back
                    continue
                raise
