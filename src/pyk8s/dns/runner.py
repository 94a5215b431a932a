"""Cluster DNS as an API client: informers on Services, EndpointSlices and Namespaces feed the
catalog the server answers from, as CoreDNS's kubernetes plugin watches them.

The client should carry no more than upstream's DNS role: list and watch of those three
(`system:coredns`, bound to ServiceAccount kube-system/coredns by our bootstrap policy, as
kubeadm's CoreDNS addon binds it). Until the informers have synced, the server waits (at most
`sync_timeout`, as CoreDNS waits for the API before it serves).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from typing import Any

from ..api.nodeview import node_ip_view
from ..client import Client, InformerFactory
from .acl import ClientACL
from .catalog import Catalog
from .forward import Forwarder, node_resolvers
from .records import ClusterZone
from .server import DNSServer

__all__ = ["ClusterDNS", "DNSOptions"]

log = logging.getLogger("pyk8s.dns")

SERVICES = ("", "v1", "services")
ENDPOINTSLICES = ("discovery.k8s.io", "v1", "endpointslices")
NAMESPACES = ("", "v1", "namespaces")
NODES = ("", "v1", "nodes")


@dataclass
class DNSOptions:
    bind_address: str = "127.0.0.1"
    port: int = 0  # 0: any free port (the service proxy maps 10.96.0.10:53 to it)
    cluster_domain: str = "cluster.local"
    ttl: int = 5
    dns_ips: list[str] = field(default_factory=lambda: ["10.96.0.10"])  # what ns.dns.<zone> names
    upstreams: list[tuple[str, int]] | None = None  # None: the nameservers of resolv_conf
    resolv_conf: str = "/etc/resolv.conf"
    forward_timeout: float = 2.0
    sync_timeout: float = 5.0
    # only these networks, this machine's and the Nodes' addresses may ask (acl.py); None: anyone
    allow_networks: list[str] | None = None


class ClusterDNS:
    def __init__(self, client: Client, options: DNSOptions, owns_client: bool = False) -> None:
        self.client = client
        self.options = options
        self.owns_client = owns_client
        self.catalog = Catalog()
        self.informers = InformerFactory(client)
        c = self.catalog
        self.informers.informer(SERVICES).add_handlers(c.set_service, lambda _old, new: c.set_service(new),
                                                       c.delete_service)
        self.informers.informer(ENDPOINTSLICES).add_handlers(c.set_slice, c.replace_slice, c.delete_slice)
        self.informers.informer(NAMESPACES).add_handlers(c.set_namespace, lambda _old, new: c.set_namespace(new),
                                                         c.delete_namespace)
        upstreams = options.upstreams if options.upstreams is not None else node_resolvers(options.resolv_conf)
        # never forward to ourselves (a node whose resolv.conf names this server would loop)
        upstreams = [u for u in upstreams if u != (options.bind_address, options.port) or not options.port]
        self.zone = ClusterZone(self.catalog, options.cluster_domain, options.ttl, options.dns_ips)
        acl = None
        if options.allow_networks is not None:
            acl = ClientACL(options.allow_networks)
            # the ACL reads a Node's addresses only: the informer keeps those
            nodes = self.informers.informer(NODES, transform=node_ip_view)
            nodes.add_handlers(acl.set_node, lambda _old, new: acl.set_node(new), acl.delete_node)
        self.server = DNSServer(self.zone, Forwarder(upstreams, options.forward_timeout),
                                options.bind_address, options.port, acl=acl)

    def addon_informers(self) -> list[Any]:
        """The Service and EndpointSlice informers (what the addon keeper follows)."""
        return [self.informers.informer(SERVICES), self.informers.informer(ENDPOINTSLICES)]

    @property
    def port(self) -> int:
        return self.server.port

    async def start(self) -> None:
        self.informers.start()
        try:
            await self.informers.wait_synced(self.options.sync_timeout)
        except TimeoutError:
            log.warning("cluster DNS: starting with an unsynced view of the API")
        await self.server.start()

    async def stop(self) -> None:
        await self.server.stop()
        await self.informers.stop()
        if self.owns_client:
            await self.client.close()
