"""API Priority and Fairness and the server's in-process components: their loopback requests are
served at the exempt level, as upstream's loopback client (system:apiserver, in system:masters) is,
while the same identity over the network is classified (kube-controller-manager -> workload-high)
and refused once that level is full.

A real APIServer runs in this process with a server-wide concurrency of 1; the network client holds
workload-high's seats with two POSTs whose chunked bodies it sends only at the end.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from pyk8s.apiserver.server import APIServer, ServerConfig
from pyk8s.cluster import component_client

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("flowcontrol-loopback")

KCM = "system:kube-controller-manager"


async def _hold_seat(server: APIServer, ctx: object) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    """A POST whose body has not all arrived: it holds its seat until finish()."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port, ssl=ctx)
    writer.write(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\n"
                 b"Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n")
    await writer.drain()
    return reader, writer


async def _finish(reader: asyncio.StreamReader, writer: asyncio.StreamWriter, name: str) -> None:
    rest = f'apiVersion":"v1","kind":"ConfigMap","metadata":{{"name":"{name}"}}}}'.encode()
    writer.write(b"%x\r\n%s\r\n0\r\n\r\n" % (len(rest), rest))
    await writer.drain()
    await reader.readuntil(b"\r\n\r\n")
    writer.close()


def test_in_process_components_are_exempt(tmp_path: Path) -> None:
    async def main() -> None:
        server = APIServer(ServerConfig(data_dir=str(tmp_path), port=0, max_requests_inflight=1,
                                        max_mutating_requests_inflight=0))
        await server.start()
        try:
            admin = component_client(server, "admin", ["system:masters"], "test/apf")
            # the held writes must pass authorization to wait for their bodies
            await admin.create(("rbac.authorization.k8s.io", "v1", "clusterrolebindings"), {
                "metadata": {"name": "kcm-admin"},
                "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "cluster-admin"},
                "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": KCM}]})
            await admin.close()
            net = component_client(server, KCM, [], "test/apf", loopback=False)
            loop = component_client(server, KCM, [], "test/apf")
            server.flowcontrol.queue_wait = 0.3  # a short wait in queue before the 429
            fc = server.flowcontrol
            for _ in range(100):  # until the bootstrap configuration is in (the requests apply it)
                status, _ = await net._pool(server.url).request("GET", "/api/v1/namespaces/default/configmaps",
                                                                None, None, 10)
                assert status != 429  # the level is free
                if any(s.name == "kube-controller-manager" for s in fc.schemas):
                    break
                await asyncio.sleep(0.1)
            held = [await _hold_seat(server, net.ssl_context) for _ in range(2)]  # its own seat and a lent one
            await asyncio.sleep(0.3)
            level = server.flowcontrol.dispatcher.levels["workload-high"]
            assert level.executing == 2
            status, _ = await net._pool(server.url).request("GET", "/api/v1/namespaces/default/configmaps",
                                                            None, None, 10)
            assert status == 429  # the same identity over the network waits its turn, then is refused
            for _ in range(5):  # in-process: exempt, never queued or refused
                status, _ = await loop._pool(server.url).request("GET", "/api/v1/namespaces/default/configmaps",
                                                                 None, None, 10)
                assert status != 429
            for i, (r, w) in enumerate(held):
                await _finish(r, w, f"held-{i}")
            await net.close()
            await loop.close()
        finally:
            await server.stop()

    asyncio.run(main())
