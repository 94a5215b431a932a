"""The kubelet's request/response connections to the API server are bounded (its watches are not).

A burst of pod starts makes one API call per pod at once (TokenRequest, events, status); with no bound the client opened
a TLS connection per concurrent call, a handshake each on the kubelet's and the server's event loop. Upstream's kubelet
multiplexes them over one HTTP/2 connection.
"""

from __future__ import annotations

import argparse
import asyncio
import os

from pyk8s.cli.agent_cmd import _client
from pyk8s.client import Client
from pyk8s.kubelet.tls_bootstrap import API_CONNECTIONS

PODS = ("", "v1", "pods")


async def _serve() -> tuple[asyncio.AbstractServer, int, list[int]]:
    """An HTTP/1.1 server answering every request with a pod after a short wait (so that concurrent calls overlap);
    counts the connections it accepted."""
    conns: list[int] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        conns.append(1)
        while True:
            try:
                await r.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                break
            await asyncio.sleep(0.01)
            body = b'{"kind":"Pod","apiVersion":"v1","metadata":{"name":"p"}}'
            w.write(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s"
                    % (len(body), body))
            await w.drain()
        w.close()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1], conns


async def _burst(client: Client, n: int) -> None:
    got = await asyncio.gather(*(client.get(PODS, "p", "default") for _ in range(n)))
    assert all(p["metadata"]["name"] == "p" for p in got)


def test_request_connections_bound_the_pool_but_not_pool_size() -> None:
    async def main() -> None:
        srv, port, conns = await _serve()
        unbounded = Client(f"http://127.0.0.1:{port}", pool_size=0)
        await _burst(unbounded, 20)
        await unbounded.close()
        assert len(conns) == 20  # pool_size 0 alone: a connection per concurrent call
        conns.clear()
        bounded = Client(f"http://127.0.0.1:{port}", pool_size=0, request_connections=3)
        assert bounded.pool_size == 0  # watches stay unbounded
        await _burst(bounded, 20)
        await bounded.close()
        assert len(conns) == 3
        srv.close()

    asyncio.run(main())


def test_agent_client_bounds_its_api_connections(tmp_path: object) -> None:
    """`pyk8s agent --kubeconfig`: 100 concurrent calls (a burst of pod starts) use at most API_CONNECTIONS."""
    async def main() -> None:
        srv, port, conns = await _serve()
        kubeconfig = os.path.join(str(tmp_path), "kubeconfig")
        with open(kubeconfig, "w") as f:
            f.write(f"""apiVersion: v1
kind: Config
clusters: [{{name: c, cluster: {{server: "http://127.0.0.1:{port}"}}}}]
users: [{{name: u, user: {{}}}}]
contexts: [{{name: x, context: {{cluster: c, user: u}}}}]
current-context: x
""")
        client = _client(argparse.Namespace(kubeconfig=kubeconfig, server=None))
        assert client.pool_size == 0  # one watch per referenced ConfigMap/Secret: not bounded
        await _burst(client, 100)
        await client.close()
        assert 1 <= len(conns) <= API_CONNECTIONS < 100
        srv.close()

    asyncio.run(main())
