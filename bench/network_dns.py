"""Cluster DNS queries per second against the ceiling of a plain UDP echo server.

One load generator process keeps a window of queries in flight over UDP for a few seconds and
counts answers. It measures, in turn, on this machine and in the same run:

- the anchor: an asyncio (uvloop) UDP echo server in its own process, which only sends each
  datagram back: what one Python process's event loop can turn around at all;
- `pyk8s dns` on its own (its own process, as `pyk8s dns --kubeconfig`), 200 Services;
- the DNS server inside `pyk8s server` (the deployment pods use), sharing the API's loop;
- the same server answering NXDOMAIN (a search-path miss, the commonest query a pod sends);
- `pyk8s dns` with every query's name in random case (DNS 0x20), so each is parsed and
  rendered anew instead of coming from the server's answer cache.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from typing import Any

from .report import row

SECONDS = float(os.environ.get("BENCH_DNS_SECONDS", "2"))
WINDOW = 64
ROUNDS = int(os.environ.get("BENCH_DNS_ROUNDS", "3"))


def _client(host: str, port: int, name: str, seconds: float, mixed_case: bool) -> float:
    """Answers per second for A queries of name (run in its own process). mixed_case: every query
    spells the name in random case (DNS 0x20), so no two are alike and none is answered from cache."""
    import random

    import dns.message

    wire = bytearray(dns.message.make_query(name, "A").to_wire())
    letters = [i for i in range(12, len(wire) - 4) if chr(wire[i]).isalpha()]

    class Load(asyncio.DatagramProtocol):
        def __init__(self) -> None:
            self.answers = 0
            self.outstanding = 0
            self.last = 0
            self.transport: Any = None

        def connection_made(self, transport: Any) -> None:
            self.transport = transport
            self.fill()

        def fill(self) -> None:
            while self.outstanding < WINDOW:
                if mixed_case:
                    for i in letters:
                        wire[i] = (wire[i] & ~0x20) | (random.getrandbits(1) << 5)
                self.transport.sendto(bytes(wire))
                self.outstanding += 1

        def datagram_received(self, data: bytes, addr: Any) -> None:
            self.answers += 1
            self.outstanding -= 1
            self.fill()

    async def run() -> float:
        loop = asyncio.get_running_loop()
        transport, proto = await loop.create_datagram_endpoint(Load, remote_addr=(host, port))
        await asyncio.sleep(0.5)  # warm-up
        start_n, start = proto.answers, time.perf_counter()
        end = start + seconds
        while time.perf_counter() < end:
            seen = proto.answers
            await asyncio.sleep(0.05)
            if proto.answers == seen:  # lost datagrams: refill the window
                proto.outstanding = 0
                proto.fill()
        n = proto.answers - start_n
        took = time.perf_counter() - start
        transport.close()
        return n / took

    import uvloop

    uvloop.install()
    return asyncio.run(run())


def _echo_server() -> None:
    import uvloop

    class Echo(asyncio.DatagramProtocol):
        def connection_made(self, transport: Any) -> None:
            self.transport = transport

        def datagram_received(self, data: bytes, addr: Any) -> None:
            self.transport.sendto(data, addr)

    async def run() -> None:
        loop = asyncio.get_running_loop()
        transport, _ = await loop.create_datagram_endpoint(Echo, local_addr=("127.0.0.1", 0))
        print("echo", transport.get_extra_info("sockname")[1], flush=True)
        await asyncio.Event().wait()

    uvloop.install()
    asyncio.run(run())


def _measure(host: str, port: int, name: str, mixed_case: bool = False) -> float:
    out = subprocess.run([sys.executable, "-m", "bench.network_dns", "--client", host, str(port), name,
                          str(SECONDS), "1" if mixed_case else "0"], capture_output=True, text=True, check=True,
                         timeout=120)
    return float(out.stdout.strip())


def _read_port(p: subprocess.Popen[str], pattern: str) -> int:
    assert p.stdout is not None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        line = p.stdout.readline()
        m = re.search(pattern, line)
        if m:
            return int(m.group(1))
    raise RuntimeError("no port announced")


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster
    from tests.dns_helper import kube_dns_endpoint

    echo = subprocess.Popen([sys.executable, "-m", "bench.network_dns", "--echo"], stdout=subprocess.PIPE, text=True)
    d = tempfile.mkdtemp(prefix="bench-dns-")
    c = Cluster(d).start()
    standalone = None
    try:
        echo_port = _read_port(echo, r"echo (\d+)")
        items = [{"apiVersion": "v1", "kind": "Service", "metadata": {"name": f"svc{i}", "namespace": "default"},
                  "spec": {"ports": [{"name": "http", "port": 80}]}} for i in range(200)]
        c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": items}))
        addr, port = kube_dns_endpoint(c, 30)
        standalone = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "dns", "--kubeconfig", c.kubeconfig,
                                       "--port", "0"], stdout=subprocess.PIPE, text=True)
        sport = _read_port(standalone, r"port (\d+) \(UDP")
        name = "svc7.default.svc.cluster.local"
        nx = "svc7.default.svc.default.svc.cluster.local"
        targets = {
            "echo": ("127.0.0.1", echo_port, name, False), "standalone": ("127.0.0.1", sport, name, False),
            "server": (addr, port, name, False), "server-nx": (addr, port, nx, False),
            "echo-mixed": ("127.0.0.1", echo_port, name, True), "standalone-mixed": ("127.0.0.1", sport, name, True)}
        # the machine is shared: rounds interleave every target, and each keeps its best round
        best: dict[str, float] = {}
        for _ in range(ROUNDS):
            for key, (h, p, n, mixed) in targets.items():
                best[key] = max(best.get(key, 0.0), _measure(h, p, n, mixed))
        anchor, mixed_anchor = best["echo"], best["echo-mixed"]
        row("UDP echo (uvloop), the ceiling", anchor, "q/s")
        row("pyk8s dns (own process), ClusterIP A", best["standalone"], "q/s", anchor, "echo")
        row("pyk8s server's DNS, ClusterIP A", best["server"], "q/s", anchor, "echo")
        row("pyk8s server's DNS, NXDOMAIN", best["server-nx"], "q/s", anchor, "echo")
        row("UDP echo, every query spelled anew", mixed_anchor, "q/s")
        row("pyk8s dns (own process), uncached answers", best["standalone-mixed"], "q/s", mixed_anchor, "echo")
    finally:
        if standalone is not None:
            standalone.terminate()
            standalone.wait(10)
        echo.terminate()
        echo.wait(10)
        c.stop()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--client"]:
        print(_client(sys.argv[2], int(sys.argv[3]), sys.argv[4], float(sys.argv[5]), sys.argv[6] == "1"))
    elif sys.argv[1:2] == ["--echo"]:
        _echo_server()
    else:
        main()
