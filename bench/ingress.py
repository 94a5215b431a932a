"""What the Ingress controller's proxy costs: requests through `pyk8s ingress` against the same
requests sent straight to the backend (the ceiling), in the same run.

A `pyk8s server`, `pyk8s ingress` on free ports, and an aiohttp backend in its own process on this
machine's first non-loopback address (EndpointSlices refuse loopback addresses), behind a
selectorless Service with a hand-made EndpointSlice. One aiohttp client process drives both:
small GETs one at a time (latency) and BENCH_INGRESS_CONCURRENCY at a time (requests/s), and one
large download (MB/s). Each figure is printed with the direct one as its anchor.
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

from .report import percentile, row

N = int(os.environ.get("BENCH_INGRESS_REQUESTS", "2000"))
CONCURRENCY = int(os.environ.get("BENCH_INGRESS_CONCURRENCY", "32"))
BIG = int(os.environ.get("BENCH_INGRESS_BYTES", str(200 * 1024 * 1024)))

BACKEND = """
import sys
from aiohttp import web
chunk = b"x" * 65536
async def small(request):
    return web.Response(body=b"ok")
async def big(request):
    n = int(request.match_info["n"])
    resp = web.StreamResponse(headers={"Content-Length": str(n)})
    await resp.prepare(request)
    while n > 0:
        await resp.write(chunk[:n])
        n -= len(chunk)
    return resp
app = web.Application()
app.router.add_get("/small", small)
app.router.add_get("/big/{n}", big)
web.run_app(app, host=sys.argv[1], port=int(sys.argv[2]), print=lambda *a: print("ready", flush=True))
"""


async def _drive(base: str, host: str) -> dict[str, float]:
    import aiohttp

    headers = {"Host": host}
    out: dict[str, float] = {}
    async with aiohttp.ClientSession(connector=aiohttp.TCPConnector(limit=CONCURRENCY)) as s:
        for _ in range(50):  # warm the pools
            async with s.get(f"{base}/small", headers=headers) as r:
                await r.read()
        lat: list[float] = []
        for _ in range(N):
            t = time.perf_counter()
            async with s.get(f"{base}/small", headers=headers) as r:
                await r.read()
                assert r.status == 200, r.status
            lat.append(time.perf_counter() - t)
        out["p50_us"] = percentile(lat, 50) * 1e6
        out["p99_us"] = percentile(lat, 99) * 1e6

        async def worker(n: int) -> None:
            for _ in range(n):
                async with s.get(f"{base}/small", headers=headers) as r:
                    await r.read()

        t = time.perf_counter()
        await asyncio.gather(*(worker(N // CONCURRENCY) for _ in range(CONCURRENCY)))
        out["rps"] = (N // CONCURRENCY) * CONCURRENCY / (time.perf_counter() - t)
        t = time.perf_counter()
        got = 0
        async with s.get(f"{base}/big/{BIG}", headers=headers) as r:
            async for chunk in r.content.iter_any():
                got += len(chunk)
        assert got == BIG
        out["mbps"] = BIG / (time.perf_counter() - t) / 1e6
    return out


def main() -> None:
    from tests.cluster import Cluster

    from pyk8s.pki import local_addresses

    addr = next(a for a in local_addresses() if ":" not in a)
    d = tempfile.mkdtemp(prefix="pyk8s-bench-ingress-")
    c = Cluster(os.path.join(d, "server")).start()
    backend = ingress = None
    try:
        backend = subprocess.Popen([sys.executable, "-c", BACKEND, addr, "0"], stdout=subprocess.PIPE, text=True)
        # run_app with port 0 does not say the port: find it from /proc
        assert backend.stdout is not None and backend.stdout.readline().strip() == "ready"
        port = _listening_port(backend.pid)
        c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "b", "namespace": "default"},
             "spec": {"ports": [{"name": "http", "port": 80}]}},
            {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
             "metadata": {"name": "b-1", "namespace": "default", "labels": {"kubernetes.io/service-name": "b"}},
             "ports": [{"name": "http", "port": port}], "endpoints": [{"addresses": [addr]}]},
            {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "b", "namespace": "default"},
             "spec": {"rules": [{"host": "bench.example.com", "http": {"paths": [
                 {"path": "/", "pathType": "Prefix",
                  "backend": {"service": {"name": "b", "port": {"name": "http"}}}}]}}]}}]}))
        ingress = subprocess.Popen(
            [sys.executable, "-m", "pyk8s.cli", "ingress", "--kubeconfig", os.path.join(c.data_dir, "ingress.conf"),
             "--ingress-bind-address", "127.0.0.1", "--ingress-http-port", "0", "--ingress-https-port", "0",
             "--publish-address", addr], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert ingress.stdout is not None
        m = None
        for line in ingress.stdout:
            m = re.search(r"http port (\d+)", line)
            if m:
                break
        assert m, "pyk8s ingress did not start"
        via = f"http://127.0.0.1:{m.group(1)}"
        direct = asyncio.run(_drive(f"http://{addr}:{port}", "bench.example.com"))
        proxied = asyncio.run(_drive(via, "bench.example.com"))
        print(f"  {N} requests, {CONCURRENCY} concurrent, {BIG // 2**20} MiB download; anchor: straight to the backend")
        row("latency p50 through the ingress", proxied["p50_us"], "us", direct["p50_us"], "direct",
            higher_is_better=False)
        row("latency p99 through the ingress", proxied["p99_us"], "us", direct["p99_us"], "direct",
            higher_is_better=False)
        row(f"requests/s, {CONCURRENCY} concurrent", proxied["rps"], "req/s", direct["rps"], "direct")
        row("download throughput", proxied["mbps"], "MB/s", direct["mbps"], "direct")
    finally:
        for p in (ingress, backend):
            if p is not None:
                p.terminate()
                p.wait(10)
        c.stop()


def _listening_port(pid: int) -> int:
    inodes = {os.readlink(f"/proc/{pid}/fd/{fd}")[8:-1] for fd in os.listdir(f"/proc/{pid}/fd")
              if os.readlink(f"/proc/{pid}/fd/{fd}").startswith("socket:[")}
    with open("/proc/net/tcp") as f:
        for line in f.readlines()[1:]:
            parts = line.split()
            if parts[3] == "0A" and parts[9] in inodes:  # LISTEN
                return int(parts[1].split(":")[1], 16)
    raise RuntimeError("the backend is not listening")


if __name__ == "__main__":
    main()
