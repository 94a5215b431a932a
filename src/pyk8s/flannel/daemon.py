"""The per-node flannel: publishes this node's lease annotations and keeps routes to every other node's pods.

Level-triggered, as a controller: any Node event wakes one reconcile that computes the wanted
routes from the informer's cache (plan.plan_routes) and changes only what differs from what it
programmed; a periodic resync re-applies everything, so a route deleted by hand comes back.
Routes stay when the agent stops (as flannel's do): pods keep running and keep talking.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import ipaddress
import logging
from typing import Any

from ..client import Client, Informer
from . import netlink
from .netlink import NetlinkError, run
from .plan import AUTO, HOST_GW, PUBLIC_IP, VXLAN, PeerRoute, node_annotations, plan_routes, route_inputs

log = logging.getLogger("pyk8s.flannel")

NODES = ("", "v1", "nodes")
BACKENDS = (AUTO, HOST_GW, VXLAN, "none")
VXLAN_OVERHEAD = 50  # outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14: 1500 -> 1450, as flannel's vxlan
VXLAN_PORT = 8472  # the Linux kernel's historical VXLAN port, flannel's default
VNI = 1
# Our routes carry their own protocol number (rtnetlink's rtm_protocol), so a resync finds and removes those left for
# nodes deleted while the agent was down; 211 is unassigned in iproute2's rt_protos.
ROUTE_PROTOCOL = "211"

# What flannel's own identity needs (upstream's kube-flannel ClusterRole, less the pods it reads for its
# DaemonSet): a kubelet's node identity may read only its own Node, not the others' leases.
CLUSTER_ROLE: dict[str, Any] = {
    "apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "flannel"},
    "rules": [{"apiGroups": [""], "resources": ["nodes"], "verbs": ["get", "list", "watch"]},
              {"apiGroups": [""], "resources": ["nodes/status"], "verbs": ["patch"]}]}


def pod_mtu(backend: str, uplink_mtu: int) -> int:
    """The pods' MTU: the uplink's for host-gw; less the VXLAN overhead when packets may be encapsulated."""
    mtu = uplink_mtu or 1500
    return mtu - VXLAN_OVERHEAD if backend in (VXLAN, AUTO) else mtu


def vtep_mac(node_name: str) -> str:
    """A stable, locally administered unicast MAC for this node's VTEP (the same after an agent restart)."""
    b = bytearray(hashlib.sha256(node_name.encode()).digest()[:6])
    b[0] = (b[0] & 0xFC) | 0x02
    return ":".join(f"{x:02x}" for x in b)


class Flannel:
    def __init__(self, client: Client, node_name: str, node_ip: str, pod_cidr: str, backend: str = AUTO,
                 device: str = f"flannel.{VNI}", resync: float = 30.0) -> None:
        if backend not in BACKENDS or backend == "none":
            raise ValueError(f"flannel backend {backend!r}: expected one of {', '.join(BACKENDS[:3])}")
        self.client = client
        self.node_name = node_name
        self.node_ip = node_ip
        self.pod_cidr = pod_cidr
        self.backend = backend
        self.device = device
        self.resync = resync
        self.uplink, self.uplink_mtu = "", 0
        self.mac = vtep_mac(node_name) if backend in (VXLAN, AUTO) else ""
        self.programmed: dict[str, PeerRoute] = {}
        self.published = False
        self._on_link: dict[str, bool] = {}  # peer address -> reached without a gateway
        self.informer: Informer | None = None
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def mtu(self) -> int:
        return pod_mtu(self.backend, self.uplink_mtu)

    async def prepare(self) -> None:
        """Find the uplink (for the pods' MTU, before their network config is written)."""
        self.uplink, self.uplink_mtu = await netlink.device_of(self.node_ip)

    async def start(self) -> None:
        if not self.uplink_mtu:
            await self.prepare()
        await self._publish()
        self.informer = Informer(self.client, NODES)
        self.informer.add_handlers(lambda _n: self._wake.set(), self._updated, lambda _n: self._wake.set())
        self.informer.start()
        self._task = asyncio.create_task(self._loop(), name="flannel")
        log.info("flannel: backend %s, subnet %s, public ip %s (uplink %s, pod MTU %d)", self.backend,
                 self.pod_cidr, self.node_ip, self.uplink or "?", self.mtu)

    def _updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # Nodes update their status every few seconds; only a change of what routes are made of wakes us
        if route_inputs(old) != route_inputs(new):
            self._wake.set()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        if self.informer is not None:
            await self.informer.stop()
            self.informer = None

    async def _publish(self) -> None:
        """Our lease in our Node's annotations; until it is there, peers make no route to us (retried each loop)."""
        ann = node_annotations(self.backend, self.node_ip, self.mac, VNI)
        try:
            # through nodes/status, as flannel does: what its RBAC role (and a kubelet's own) may patch
            await self.client.patch(NODES, self.node_name, {"metadata": {"annotations": ann}}, sub="status")
            self.published = True
        except Exception as e:  # noqa: BLE001 - the kubelet runs on; pods on this node just stay unreachable
            log.warning("flannel: cannot annotate node %s: %s (retrying)", self.node_name, e)

    async def _loop(self) -> None:
        assert self.informer is not None
        await self.informer.wait_synced(None)
        full = True
        while True:
            self._wake.clear()
            if not self.published:
                await self._publish()
            try:
                await self.reconcile(full)
            except Exception as e:  # noqa: BLE001 - keep routing; the next event or resync retries
                log.warning("flannel: reconcile: %s", e)
            try:
                await asyncio.wait_for(self._wake.wait(), self.resync)
                full = False
            except TimeoutError:
                full = True

    async def reconcile(self, full: bool = False) -> None:
        assert self.informer is not None
        nodes = self.informer.list()
        if full:
            self._on_link.clear()  # addresses may have moved: ask again on each resync
        for n in nodes:  # ask the kernel once per peer address, outside the pure planner
            ip = ((n.get("metadata") or {}).get("annotations") or {}).get(PUBLIC_IP, "")
            if ip and ip not in self._on_link:
                try:
                    ipaddress.ip_address(ip)
                except ValueError:
                    continue
                self._on_link[ip] = await netlink.on_link(ip)
        links = self._on_link
        want = plan_routes(self.node_name, self.node_ip, self.pod_cidr, nodes, self.backend,
                           lambda ip: links.get(ip, False))
        for subnet, old in list(self.programmed.items()):
            if want.get(subnet) != old:
                await self._remove(old)
                del self.programmed[subnet]
        for subnet, route in want.items():
            if full or subnet not in self.programmed:
                await self._add(route)
                self.programmed[subnet] = route
        if full:
            for r in await netlink.ip_json("route", "show", "proto", ROUTE_PROTOCOL):
                if r.get("dst") not in want:
                    await run("ip", "route", "del", r["dst"], "proto", ROUTE_PROTOCOL, check=False)
                    log.info("flannel: stale route %s removed", r.get("dst"))

    async def _add(self, r: PeerRoute) -> None:
        if r.mode == HOST_GW:
            await run("ip", "route", "replace", r.subnet, "via", r.public_ip, "proto", ROUTE_PROTOCOL)
            log.info("flannel: route %s via %s (host-gw, node %s)", r.subnet, r.public_ip, r.node)
            return
        await self._ensure_vtep()
        # as flannel's vxlan backend: an ARP entry for the peer's VTEP address, an FDB entry sending its MAC to the
        # peer's address, and the subnet routed through the VTEP address (onlink: it is no local network)
        await run("ip", "neigh", "replace", r.vtep_ip, "lladdr", r.vtep_mac, "dev", self.device, "nud", "permanent")
        await run("bridge", "fdb", "replace", r.vtep_mac, "dev", self.device, "dst", r.public_ip, "self", "permanent")
        await run("ip", "route", "replace", r.subnet, "via", r.vtep_ip, "dev", self.device, "onlink",
                  "proto", ROUTE_PROTOCOL)
        log.info("flannel: route %s via %s dev %s (vxlan to %s, node %s)", r.subnet, r.vtep_ip, self.device,
                 r.public_ip, r.node)

    async def _remove(self, r: PeerRoute) -> None:
        await run("ip", "route", "del", r.subnet, check=False)
        if r.mode == VXLAN:
            await run("ip", "neigh", "del", r.vtep_ip, "dev", self.device, check=False)
            await run("bridge", "fdb", "del", r.vtep_mac, "dev", self.device, "dst", r.public_ip, "self", check=False)
        log.info("flannel: route %s removed (node %s)", r.subnet, r.node)

    async def _ensure_vtep(self) -> None:
        """flannel.1, made when the first peer needs it: a node with only host-gw peers never has one."""
        if await netlink.link_exists(self.device):
            return
        args = ["ip", "link", "add", self.device, "address", self.mac, "mtu", str(pod_mtu(VXLAN, self.uplink_mtu)),
                "type", "vxlan", "id", str(VNI), "local", self.node_ip, "dstport", str(VXLAN_PORT), "nolearning"]
        if self.uplink:
            args += ["dev", self.uplink]
        try:
            await run(*args)
        except NetlinkError:
            if not await netlink.link_exists(self.device):
                raise
        vtep = str(ipaddress.ip_network(self.pod_cidr, strict=False).network_address)
        await run("ip", "addr", "replace", f"{vtep}/32", "dev", self.device)
        await run("ip", "link", "set", self.device, "up")
