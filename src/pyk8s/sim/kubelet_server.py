"""The simulated nodes' kubelet port: `/stats/summary` and `/metrics/resource` for every node, from one server.

One HTTPS server listens on 0.0.0.0:<port>. Each simulated node has its own loopback
InternalIP (127.x.y.z: all local on Linux), so a scraper that dials the node's address and
`status.daemonEndpoints.kubeletEndpoint.Port`, as metrics-server does, lands here, and the
local address the connection arrived on says which node it asked. Callers authenticate and
are authorized as at a real kubelet (`pyk8s.kubelet.auth`: nodes/stats, nodes/metrics).
Usage comes from `pyk8s.sim.usage`; a scrape costs the pods of one node, never all of them.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..kubelet.auth import KubeletAuth
from ..kubelet.stats import add_routes
from ..kubelet.stats.summary import rfc3339
from .usage import NODE_CPU_OVERHEAD, NODE_MEMORY_OVERHEAD, UsageModel

log = logging.getLogger("pyk8s.sim.kubelet")


def tls_context(client_ca_pem: bytes, node_sans: list[str]) -> ssl.SSLContext:
    """A self-signed serving certificate (as a kubelet without one makes) and the cluster CA for client certs."""
    from ..pki import self_signed_serving_cert
    from ..tlsdefaults import harden_server_context

    chain, key = self_signed_serving_cert("pyk8s-sim", ["localhost", "127.0.0.1", *node_sans])
    ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    with tempfile.TemporaryDirectory(prefix="pyk8s-sim-tls-") as d:  # 0700; gone once loaded
        cert_file, key_file = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        fd = os.open(key_file, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key)
        with open(cert_file, "wb") as f:
            f.write(chain)
        ctx.load_cert_chain(cert_file, key_file)
    ctx.load_verify_locations(cadata=client_ca_pem.decode())
    ctx.verify_mode = ssl.CERT_OPTIONAL  # bearer tokens are the other way in
    return ctx


class SimKubeletServer:
    def __init__(self, sim: Any, client: Any, client_ca_pem: bytes, port: int = 10250, host: str = "0.0.0.0") -> None:
        self.sim = sim
        self.usage = UsageModel()
        self.auth = KubeletAuth(client)
        self.client_ca_pem = client_ca_pem
        self.host = host
        self.port = port
        self._runner: web.AppRunner | None = None
        self.app = web.Application(middlewares=[self._middleware])
        self.app.router.add_get("/healthz", self._healthz)
        add_routes(self.app, self._summary)

    async def start(self) -> None:
        ctx = tls_context(self.client_ca_pem, [])
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.host, self.port, ssl_context=ctx, reuse_address=True)
        await site.start()
        server = site._server
        if self.port == 0 and server is not None:
            self.port = server.sockets[0].getsockname()[1]  # type: ignore[attr-defined]
        log.info("simulated kubelets' stats served on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None

    def _node_of(self, request: web.Request) -> str | None:
        sock = request.transport.get_extra_info("sockname") if request.transport else None
        return self.sim.node_by_ip.get(sock[0]) if sock else None

    @web.middleware
    async def _middleware(self, request: web.Request,
                          handler: Callable[[web.Request], Awaitable[web.StreamResponse]]) -> web.StreamResponse:
        if request.path == "/healthz":
            return await handler(request)
        node = self._node_of(request)
        if node is None:
            return web.Response(status=404, text="404 page not found\n")
        sslobj = request.transport.get_extra_info("ssl_object") if request.transport else None
        refused = await self.auth.check(request, sslobj.getpeercert() if sslobj is not None else None, node)
        if refused is not None:
            return refused
        request["node"] = node
        return await handler(request)

    async def _healthz(self, request: web.Request) -> web.Response:
        return web.Response(text="ok")

    def pod_changed(self, uid: str, node: str, pod: dict[str, Any], started_at: float) -> None:
        """A running pod's spec or annotations changed: its usage follows from now on."""
        self.usage.observe(uid, node, pod, started_at)

    def pod_gone(self, uid: str, node: str) -> None:
        self.usage.retire(uid, node)

    async def _summary(self, request: web.Request, only: bool) -> dict[str, Any]:
        return self.summary(request["node"])

    def summary(self, name: str) -> dict[str, Any]:
        """The node's Summary: its running pods' declared usage, the node's overhead on top."""
        now = time.time()
        ts = now
        node = self.sim.nodes.get(name)
        boot = getattr(node, "boot_time", 0.0) or self.sim.started_at
        pods = []
        cpu_rate, cpu_ns, mem = NODE_CPU_OVERHEAD, NODE_CPU_OVERHEAD * 1e9 * max(0.0, now - boot), \
            float(NODE_MEMORY_OVERHEAD)
        for uid in list(self.sim.pods_by_node.get(name, ())):
            sp = self.sim.pods.get(uid)
            if sp is None or sp.stage != "running" or sp.deleting:
                if sp is not None:
                    self.usage.retire(uid, name, now)
                continue
            self.usage.observe(uid, name, sp.pod, sp.started_at, now)
            u = self.usage.pods[uid]
            pod_ns = u.pod.at(now)
            cpu_rate += u.pod.rate
            cpu_ns += pod_ns
            mem += u.memory
            start = rfc3339(sp.started_at)
            containers = [{"name": cname, "startTime": start,
                           "cpu": {"time": ts, "usageNanoCores": int(c.rate * 1e9), "usageCoreNanoSeconds": int(c.at(now))},
                           "memory": _memory(ts, int(u.container_memory.get(cname, 0)))}
                          for cname, c in u.containers.items()]
            pods.append({"podRef": {"name": sp.name, "namespace": sp.namespace, "uid": uid},
                         "startTime": rfc3339(sp.start_time or sp.started_at), "containers": containers,
                         "cpu": {"time": ts, "usageNanoCores": int(u.pod.rate * 1e9), "usageCoreNanoSeconds": int(pod_ns)},
                         "memory": _memory(ts, int(u.memory))})
        cpu_ns += self.usage.retired_ns.get(name, 0.0)
        capacity = _capacity_bytes(self.sim.template.memory)
        node_mem = _memory(ts, int(mem))
        if capacity:
            node_mem["availableBytes"] = max(0, capacity - int(mem))
        return {"node": {"nodeName": name, "startTime": rfc3339(boot),
                         "cpu": {"time": ts, "usageNanoCores": int(cpu_rate * 1e9), "usageCoreNanoSeconds": int(cpu_ns)},
                         "memory": node_mem},
                "pods": pods}


def _memory(ts: float, ws: int) -> dict[str, Any]:
    return {"time": ts, "usageBytes": ws, "workingSetBytes": ws, "rssBytes": ws, "pageFaults": 0,
            "majorPageFaults": 0}


def _capacity_bytes(q: str) -> int:
    from ..api.quantity import parse_quantity

    try:
        return parse_quantity(q).to_int()
    except ValueError:
        return 0
