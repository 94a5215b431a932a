"""The cluster DNS `pyk8s server` runs on its own loop (the component named `dns`).

It starts in the background once the server is up, as CoreDNS comes up after the API server:
the server does not wait for it. It listens on the advertise address (or --dns-bind-address)
on a free port (or --dns-port), reads the API as ServiceAccount kube-system/coredns, answers only
the cluster's own clients (acl.py), and publishes itself as kube-system/kube-dns under Lease
kube-system/pyk8s-cluster-dns (addon.AddonKeeper). docs/dns.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
from collections.abc import Callable
from typing import Any

from .addon import SERVICE_ACCOUNT_GROUPS, SERVICE_ACCOUNT_USER, AddonKeeper, cluster_dns_ips, ensure_identity
from .runner import ClusterDNS, DNSOptions

__all__ = ["EmbeddedDNS"]

log = logging.getLogger("pyk8s.dns")


def options_from_server_args(server: Any, args: Any) -> DNSOptions:
    service_range = getattr(args, "service_cluster_ip_range", None) or "10.96.0.0/12"
    return DNSOptions(
        bind_address=getattr(args, "dns_bind_address", None) or server.advertise_address,
        port=getattr(args, "dns_port", 0) or 0,
        cluster_domain=getattr(args, "cluster_domain", None) or "cluster.local",
        dns_ips=cluster_dns_ips(getattr(args, "cluster_dns", None), service_range),
        allow_networks=[getattr(args, "cluster_cidr", None) or "10.244.0.0/16", *service_range.split(",")])


class EmbeddedDNS:
    def __init__(self, server: Any, args: Any, component_client: Callable[..., Any]) -> None:
        self.options = options_from_server_args(server, args)
        # the addon's objects are written as the API server itself, as kubeadm's addon phase writes them
        self.writer = component_client(server, "system:apiserver", ["system:masters"], "kube-apiserver/pyk8s")
        reader = component_client(server, SERVICE_ACCOUNT_USER, SERVICE_ACCOUNT_GROUPS, "coredns/pyk8s")
        self.dns = ClusterDNS(reader, self.options, owns_client=True)
        self.keeper: AddonKeeper | None = None
        self.ready = asyncio.Event()
        self._task: asyncio.Task[None] = asyncio.get_running_loop().create_task(self._run(), name="cluster-dns")

    async def _run(self) -> None:
        try:
            await ensure_identity(self.writer)  # RBAC first: the reader needs it
            await self.dns.start()
        except OSError as e:  # e.g. an advertise address this machine does not hold
            log.error("cluster DNS not started: cannot listen on %s: %s", self.options.bind_address, e)
            return
        except Exception:
            log.exception("cluster DNS not started")
            return
        if ipaddress.ip_address(self.options.bind_address).is_loopback:
            # EndpointSlices refuse loopback addresses, and pods could not reach one anyway
            log.warning("cluster DNS listens on %s port %d, which pods cannot reach: not published as "
                        "kube-system/kube-dns (--dns-bind-address)", self.options.bind_address, self.dns.port)
            return
        self.keeper = AddonKeeper(self.writer, self.options.dns_ips[0], self.options.bind_address, self.dns.port)
        self.keeper.watch(self.dns.addon_informers())
        await self.keeper.start()  # publishes kube-dns now unless another API server's DNS holds the Lease
        self.ready.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        if self.keeper is not None:
            await self.keeper.stop()
        await self.dns.stop()
        await self.writer.close()
