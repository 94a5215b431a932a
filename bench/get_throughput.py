"""GET throughput of one object: the API server's per-request path, nothing else.

A server alone (no kubelet, scheduler or controllers) answers CONNS keep-alive connections
each reading one ConfigMap through the client's lean pool (client/http1.py). The figures are
GET/s and the server's CPU per GET (utime + stime from /proc).

The anchor is another source tree of pyk8s run the same way in the same run, named by
BENCH_GET_ANCHOR_SRC (its `src` directory; e.g. `git worktree add /tmp/old b8e3e5b` and
BENCH_GET_ANCHOR_SRC=/tmp/old/src). On a shared 2-core machine the speed of a core moves by
half within seconds (the same client code's CPU per GET does), so whole runs one after the
other compare badly: both servers run at once, idle but for the load, and the load alternates
between them in bursts of CONNS x BURST GETs, ROUNDS x BURSTS bursts each; each server's
figures sum its own bursts. The client's CPU per GET (the same code for both) is printed as a
yardstick of how fast the machine was.

BENCH_GET_BURST (GETs per connection and burst, default 200), BENCH_GET_BURSTS (bursts per
round, 10), BENCH_GET_ROUNDS (2), BENCH_GET_CONNS (16); BENCH_PROFILE=<file>: a cProfile of
our server (thread CPU time, written when it stops).

A second figure isolates the server's own Python path from TLS, sockets and the client: the
same GETs fed to the server's HTTP/1 protocol (http1.py) in one process, through a transport
that only collects the answers, timed in CPU seconds per GET (`in-process`). It takes the
anchor the same way (a subprocess with the anchor's src first on its path), interleaved.

Measured on the shared 2-core machine (load average 4-7), defaults, anchor b8e3e5b (before
APF, auditing's Audit-Id, pretty printing, impersonation and the Go escapes): main at 47258d0
answered at 0.60-0.80x the anchor's GET/s with 1.25-1.65x its server CPU per GET; after the
hot-path work 0.99x and 0.87x GET/s (49.1-55.9 against 42.5-49.7 us per GET), and against
47258d0 in the same session 1.25x and 1.13x GET/s. What remains is APF's classification and
seat (about 1.6 us of Python per request measured alone) and the Audit-Id and two
X-Kubernetes-PF-* headers upstream answers with: with both taken out the server matched the
anchor.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any

import orjson

from .api import tree_cpu_seconds
from .report import row, warm_up

BURST = int(os.environ.get("BENCH_GET_BURST", "200"))
BURSTS = int(os.environ.get("BENCH_GET_BURSTS", "10"))
N_REQUESTS = int(os.environ.get("BENCH_GET_REQUESTS", "3000"))  # per connection, in-process
CONNS = int(os.environ.get("BENCH_GET_CONNS", "16"))
ROUNDS = int(os.environ.get("BENCH_GET_ROUNDS", "2"))
SERVER_ARGS = ["--disable", "scheduler", "--disable", "controller-manager"]
TARGET = "/api/v1/namespaces/default/configmaps/bench-get"


@dataclass
class _Server:
    """One server under load and its sums over the bursts it answered."""

    name: str
    cluster: Any
    pool: Any = None
    gets: int = 0
    wall: float = 0.0
    cpu: float = 0.0
    client_cpu: float = 0.0

    def take(self) -> tuple[int, float, float, float]:
        """The sums so far, reset."""
        out = (self.gets, self.wall, self.cpu, self.client_cpu)
        self.gets, self.wall, self.cpu, self.client_cpu = 0, 0.0, 0.0, 0.0
        return out


def _start(name: str, src: str | None) -> _Server:
    """A server from `src` (a pyk8s source tree's src/; None: this one)."""
    from tests.cluster import Cluster

    env: dict[str, str] = {}
    if src:
        env["PYTHONPATH"] = src + os.pathsep + os.environ.get("PYTHONPATH", "")
    elif os.environ.get("BENCH_PROFILE"):
        env["PYK8S_PROFILE"] = os.environ["BENCH_PROFILE"]
    return _Server(name, Cluster(tempfile.mkdtemp(prefix="pyk8s-bench-get-"), extra_args=SERVER_ARGS,
                                 env=env).start())


async def _connect(srv: _Server) -> None:
    from pyk8s.client.http1 import ConnectionPool
    from pyk8s.client.kubeconfig import load_kubeconfig

    kc = load_kubeconfig(srv.cluster.kubeconfig)
    srv.pool = pool = ConnectionPool(srv.cluster.url, kc.ssl_client_context(), {"Accept": "application/json"},
                                     CONNS)
    body = orjson.dumps({"metadata": {"name": "bench-get", "labels": {"app": "bench"}},
                         "data": {"key": "value " * 20}})
    status, reply = await pool.request("POST", "/api/v1/namespaces/default/configmaps?fieldManager=bench",
                                       body, "application/json", 60)
    assert status in (201, 409), reply
    await warm_up(pool, CONNS)
    await _burst(srv, 50)  # every code path (and the certificate user cache) warm before the clock
    srv.take()


async def _burst(srv: _Server, per_conn: int) -> None:
    """CONNS connections x per_conn GETs, added to the server's sums."""
    pool = srv.pool

    async def reader() -> None:
        for _ in range(per_conn):
            st, rep = await pool.request("GET", TARGET, None, None, 60)
            if st != 200:
                raise AssertionError(rep)

    pid = srv.cluster.proc.pid
    t0, cpu0, ccpu0 = time.perf_counter(), tree_cpu_seconds(pid), time.process_time()
    await asyncio.gather(*(reader() for _ in range(CONNS)))
    srv.wall += time.perf_counter() - t0
    srv.cpu += tree_cpu_seconds(pid) - cpu0
    srv.client_cpu += time.process_time() - ccpu0
    srv.gets += CONNS * per_conn


async def _run(servers: list[_Server]) -> None:
    for srv in servers:
        await _connect(srv)
    totals: dict[str, list[tuple[float, float]]] = {s.name: [] for s in servers}
    for r in range(ROUNDS):
        for _ in range(BURSTS):
            for srv in servers:  # anchor, ours, anchor, ours ...: both see the same moments of load
                await _burst(srv, BURST)
        figures = {}
        for srv in servers:
            gets, wall, cpu, ccpu = srv.take()
            figures[srv.name] = (gets / wall, cpu / gets * 1e6, ccpu / gets * 1e6)
            totals[srv.name].append(figures[srv.name][:2])
        rate, cpu, ccpu = figures["ours"]
        anchor = figures.get("anchor")
        row(f"round {r + 1}: GET/s", rate, "/s", anchor[0] if anchor else None, "anchor")
        row(f"round {r + 1}: server CPU per GET", cpu, "us", anchor[1] if anchor else None, "anchor",
            higher_is_better=False)
        row(f"round {r + 1}: client CPU per GET (yardstick)", ccpu, "us", anchor[2] if anchor else None,
            "anchor's", higher_is_better=False)
    if "anchor" in totals and ROUNDS > 1:
        ours, old = totals["ours"], totals["anchor"]
        row("GET/s, mean of rounds", sum(x[0] for x in ours) / ROUNDS, "/s",
            sum(x[0] for x in old) / ROUNDS, "anchor")
        row("server CPU per GET, mean of rounds", sum(x[1] for x in ours) / ROUNDS, "us",
            sum(x[1] for x in old) / ROUNDS, "anchor", higher_is_better=False)
    for srv in servers:
        srv.pool.close()


def measure(anchor: str) -> None:
    """Both servers up at once, the load alternating between them (see the module's text)."""
    servers = []
    try:
        if anchor:
            servers.append(_start("anchor", anchor))
        servers.append(_start("ours", None))
        asyncio.run(_run(servers))
    finally:
        for srv in servers:
            srv.cluster.stop()


class _Collect(asyncio.Transport):
    """The transport of one in-process connection: answers are counted, nothing is sent."""

    def __init__(self, done: asyncio.Queue[bytes]) -> None:
        super().__init__()
        self.done = done
        self.closing = False
        self.proto: asyncio.Protocol | None = None

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.done.put_nowait(bytes(data))

    def is_closing(self) -> bool:
        return self.closing

    def get_extra_info(self, name: str, default: object = None) -> object:
        return ("127.0.0.1", 40000) if name == "peername" else default

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass

    def close(self) -> None:  # the server stops
        if not self.closing and self.proto is not None:
            self.closing = True
            self.proto.connection_lost(None)

    def abort(self) -> None:
        self.close()


async def _in_process(n: int) -> float:
    """CPU µs per GET of the server's protocol and handlers, TLS and sockets left out."""
    import base64
    import ssl

    import yaml

    from pyk8s.apiserver.server import APIServer, ServerConfig

    d = tempfile.mkdtemp(prefix="pyk8s-bench-get-inproc-")
    srv = APIServer(ServerConfig(data_dir=d, port=0))
    await srv.start()
    try:
        with open(os.path.join(d, "kubeconfig.yaml")) as f:  # (read here: the anchor's tree may lack our loader)
            user = yaml.safe_load(f)["users"][0]["user"]
        peer = ssl.PEM_cert_to_DER_cert(base64.b64decode(user["client-certificate-data"]).decode())
        factory = srv._listener._protocol_factory  # type: ignore[union-attr]  # the server's own HTTP1Protocol
        queues: list[asyncio.Queue[bytes]] = []
        protos = []
        for _ in range(CONNS):
            q: asyncio.Queue[bytes] = asyncio.Queue()
            proto = factory()
            t = _Collect(q)
            t.proto = proto
            proto.connection_made(t)
            proto.peer_cert = peer  # as the TLS handshake would have set it: the admin's certificate
            queues.append(q)
            protos.append(proto)
        body = orjson.dumps({"metadata": {"name": "bench-get"}, "data": {"key": "value " * 20}})
        post = (b"POST /api/v1/namespaces/default/configmaps?fieldManager=bench HTTP/1.1\r\nHost: x\r\n"
                b"Content-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(body)) + body
        protos[0].data_received(post)
        assert (await queues[0].get()).startswith(b"HTTP/1.1 201"), "the ConfigMap was not created"
        get = f"GET {TARGET} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n".encode()

        async def conn(i: int, count: int) -> None:
            for _ in range(count):
                protos[i].data_received(get)
                if not (await queues[i].get()).startswith(b"HTTP/1.1 200"):
                    raise AssertionError("a GET failed")

        await asyncio.gather(*(conn(i, 100) for i in range(CONNS)))  # warm up
        t0 = time.process_time()
        await asyncio.gather(*(conn(i, n) for i in range(CONNS)))
        return (time.process_time() - t0) / (CONNS * n) * 1e6
    finally:
        await srv.stop()


def measure_in_process(src: str | None) -> float:
    """_in_process in a fresh interpreter, with `src` (a pyk8s source tree's src/) first on its path."""
    import subprocess

    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ)
    if src:
        env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    out = subprocess.run([sys.executable, "-m", "bench.get_throughput", "--in-process"], cwd=repo, env=env,
                         capture_output=True, text=True, timeout=600)
    if out.returncode != 0:
        raise RuntimeError(f"in-process run failed:\n{out.stdout}\n{out.stderr}")
    return float(out.stdout.strip().splitlines()[-1])


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    anchor = os.environ.get("BENCH_GET_ANCHOR_SRC", "")
    print(f"  {CONNS} connections, GETs of one ConfigMap in bursts of {CONNS} x {BURST}, {BURSTS} bursts per "
          f"server and round, {ROUNDS} rounds" + (f"; the anchor at {anchor}, bursts alternating" if anchor else ""))
    measure(anchor)
    for i in range(ROUNDS):
        old = measure_in_process(anchor) if anchor else 0.0
        ours = measure_in_process(None)
        row(f"in-process round {i + 1}: CPU per GET", ours, "us", old or None, "anchor", higher_is_better=False)


if __name__ == "__main__":
    if sys.argv[1:] == ["--in-process"]:
        logging.disable(logging.WARNING)
        print(asyncio.run(_in_process(N_REQUESTS)))
    else:
        main()
