"""Scrapes every node's kubelet `/metrics/resource`, as metrics-server's scraper does.

The kubelet is dialled at the node's preferred address (Hostname, InternalDNS, InternalIP,
ExternalDNS, ExternalIP, as the API server's own kubelet client) and
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

from ..apiserver.kubelet_proxy import KubeletProxy
from .storage import NodeBatch, parse_resource_metrics

__all__ = ["Scraper"]

log = logging.getLogger("pyk8s.metrics-server")

CONCURRENCY = 64  # kubelets scraped at once (thousands of simulated nodes share one server)


class Scraper:
    def __init__(self, ssl_ctx: ssl.SSLContext, token: str | None = None, timeout: float = 10.0) -> None:
        self.ssl_ctx = ssl_ctx
        self.headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.timeout = aiohttp.ClientTimeout(total=timeout)
        self._session: aiohttp.ClientSession | None = None

    def _sess(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=self.timeout,
                                                  connector=aiohttp.TCPConnector(limit=CONCURRENCY))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    async def scrape_node(self, node: dict[str, Any]) -> NodeBatch | None:
        name = node["metadata"]["name"]
        try:
            host, port = KubeletProxy.kubelet_endpoint(node)
        except Exception as e:  # noqa: BLE001 - a node without addresses: nothing to scrape
            log.info("node %s: %s", name, getattr(e, "message", e))
            return None
        h = f"[{host}]" if ":" in host else host
        url = f"https://{h}:{port}/metrics/resource"
        try:
            async with self._sess().get(url, ssl=self.ssl_ctx, headers=self.headers) as r:
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
