"""Running the service proxy as part of a node (`pyk8s agent`, and `pyk8s server` for its own node).

Unlike a standalone `pyk8s proxy` (which leaves its rules in place when it stops, so that a
restart drops nothing), a node's proxy removes its tables when the node stops: nothing of a
stopped node keeps routing Service traffic."""

from __future__ import annotations

import logging
import os
from typing import Any

from ..client import Client
from . import nft
from .proxier import Proxier, ProxyConfig, fetch_node, node_families

log = logging.getLogger("pyk8s.proxy")

__all__ = ["NodeProxy", "start_node_proxy"]


class NodeProxy:
    def __init__(self, proxier: Proxier | None, client: Client | None, owns_client: bool, reason: str = "") -> None:
        self.proxier = proxier
        self.client = client
        self.owns_client = owns_client
        self.reason = reason

    async def stop(self) -> None:
        if self.proxier is not None:
            await self.proxier.stop(cleanup=True)
        if self.owns_client and self.client is not None:
            await self.client.close()


async def start_node_proxy(client: Client, node_name: str, cluster_cidrs: list[str], owns_client: bool = False,
                           **options: Any) -> NodeProxy:
    """The proxy for `node_name`, or a NodeProxy that does nothing (and says why) where nftables
    cannot be programmed here (not root, no nft)."""
    reason = ("not running as root" if os.geteuid() != 0 else
              "the nft tool is not installed (Debian package nftables)" if not nft.available() else "")
    if reason:
        log.warning("service proxy disabled: %s", reason)
        print(f"pyk8s: WARNING: service proxy disabled: {reason}", flush=True)
        return NodeProxy(None, client, owns_client, reason)
    node = await fetch_node(client, node_name)
    if not cluster_cidrs:
        # upstream's --detect-local-mode=NodeCIDR: this node's pods are the local traffic
        spec = (node or {}).get("spec") or {}
        cluster_cidrs = list(spec.get("podCIDRs") or ([spec["podCIDR"]] if spec.get("podCIDR") else []))
    proxier = Proxier(client, ProxyConfig(node_name=node_name, cluster_cidrs=cluster_cidrs,
                                          families=node_families(node), **options))
    # the node does not wait for its first lists (an identity without access would hold it up): the
    # proxy syncs when they come
    await proxier.start(wait=None)
    return NodeProxy(proxier, client, owns_client)
