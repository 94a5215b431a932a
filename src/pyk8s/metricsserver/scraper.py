"""Scrapes every node's kubelet `/metrics/resource`, as metrics-server's scraper does.

The kubelet is dialled at the node's first address of PREFERRED_ADDRESS_TYPES (upstream's
manifest's `--kubelet-preferred-address-types=InternalIP,ExternalIP,Hostname`) and
`status.daemonEndpoints.kubeletEndpoint.Port`, authenticated with the metrics server's own
client certificate (or bearer token), which the kubelet authorizes as `nodes/metrics`. A node
that does not answer within the timeout is left out of the round, as upstream's.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from typing import Any

import aiohttp

from .storage import NodeBatch, parse_resource_metrics

__all__ = ["Scraper"]

log = logging.getLogger("pyk8s.metrics-server")

PREFERRED_ADDRESS_TYPES = ("InternalIP", "ExternalIP", "Hostname")
DEFAULT_KUBELET_PORT = 10250
CONCURRENCY = 64  # kubelets scraped at once (thousands of simulated nodes share one server)
# Idle connections are kept across rounds (the resolution is 15 s by default): a TLS handshake per
# node per round, on both ends, cost more CPU than everything else at 5,000 simulated nodes. Below
# the kubelet's (aiohttp's 75 s) so we do not reuse a connection it is closing.
KEEPALIVE_SECONDS = 60.0


class Scraper:
    def __init__(self, ssl_ctx: ssl.SSLContext, token: str | None = None, timeout: float = 10.0) -> None:
        self.ssl_ctx = ssl_ctx
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None
        self._gate: asyncio.Semaphore | None = None

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            # No limit in the connector: our semaphore bounds the requests, and with thousands of
            # nodes waiting on a connector's limit aiohttp reshuffles every waiter on each release.
            self._session = aiohttp.ClientSession(
                timeout=self.timeout, connector=aiohttp.TCPConnector(limit=0, keepalive_timeout=KEEPALIVE_SECONDS))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def scrape_node(self, node: dict[str, Any]) -> NodeBatch | None:
        name = node["metadata"]["name"]
        status = node.get("status") or {}
        addrs = {a.get("type"): a.get("address") for a in reversed(status.get("addresses") or [])}
        host = next((addrs[t] for t in PREFERRED_ADDRESS_TYPES if addrs.get(t)), None)
        if not host:
            log.info("node %s: no address of types %s", name, ", ".join(PREFERRED_ADDRESS_TYPES))
            return None
        port = ((status.get("daemonEndpoints") or {}).get("kubeletEndpoint") or {}).get("Port") or DEFAULT_KUBELET_PORT
        h = f"[{host}]" if ":" in host else host
        url = f"https://{h}:{port}/metrics/resource"
        if self._gate is None:
            self._gate = asyncio.Semaphore(CONCURRENCY)
        try:
            async with self._gate, self._sess().get(url, ssl=self.ssl_ctx, headers=self.headers) as r:
                text = await r.text()
                if r.status != 200:
                    log.info("scraping node %s: %s answered %d: %s", name, url, r.status, text[:200])
                    return None
            return parse_resource_metrics(text, time.time())
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as e:
            log.info("scraping node %s (%s): %s", name, url, e)
            return None

    async def scrape(self, nodes: list[dict[str, Any]]) -> dict[str, NodeBatch]:
        batches = await asyncio.gather(*(self.scrape_node(n) for n in nodes))
        return {n["metadata"]["name"]: b for n, b in zip(nodes, batches, strict=True) if b is not None}
