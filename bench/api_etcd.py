"""API benchmark on etcd beside SQLite: a 3-member etcd under two API servers vs one server on SQLite.

The same workload runs twice in one run (so every ratio compares figures taken on the same
machine minutes apart):

* SQLite: one `pyk8s server` (embedded store), all clients on it;
* etcd: a 3-member etcd cluster on loopback and two `pyk8s server` processes on it
  (tests/ha_helper.py topology), creates spread over both servers, watchers on the second
  while half the writes go through the first (so delivery crosses servers through etcd).

Figures: pod creates/s, API server CPU per create (robust when the shared machine is loaded;
wall-clock rates are not) and p99 create latency (CONCURRENCY clients), and watch delivery p99
from the start of each write to each watcher (one write at a time). Printed as ratios against the SQLite figure,
and against the anchors: raw etcd puts on the same cluster (64 concurrent, etcd3aio: what any
etcd-backed API server could reach), the issue's 2,000 creates/s, and the 1 s SLOs.
Controllers and scheduler are off: this is the API server and its store alone.

BENCH_ETCD_PODS (default 3000), BENCH_ETCD_WATCHERS (default 200).
"""

from __future__ import annotations

import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from .api import cpu_seconds
from .report import percentile, row

N_PODS = int(os.environ.get("BENCH_ETCD_PODS", "3000"))
N_WATCHERS = int(os.environ.get("BENCH_ETCD_WATCHERS", "200"))
N_EVENTS = 100
CONCURRENCY = 64
SERVER_ARGS = ["--disable", "scheduler", "--disable", "controller-manager"]


def _pod(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
                         "spec": {"containers": [{"name": "c", "image": "busybox:1.36",
                                                  "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}]}})


def _cpu(pids: list[int]) -> float:
    return sum(cpu_seconds(p) for p in pids)


async def workload(urls: list[str], watch_url: str, ssl_ctx: Any, server_pids: list[int],
                   store_pids: list[int] | None = None) -> dict[str, float]:
    """Creates spread round-robin over `urls`, then watch delivery on `watch_url` for writes on urls[0]."""
    import aiohttp

    json_ct = {"Content-Type": "application/json"}
    sessions = [aiohttp.ClientSession(u, connector=aiohttp.TCPConnector(ssl=ssl_ctx, limit=CONCURRENCY + 8))
                for u in urls]
    wsess = aiohttp.ClientSession(watch_url, connector=aiohttp.TCPConnector(ssl=ssl_ctx, limit=N_WATCHERS + 8))
    try:
        s0 = sessions[0]
        await (await s0.post("/api/v1/namespaces", data=orjson.dumps({"metadata": {"name": "bench"}}),
                             headers=json_ct)).read()
        await (await s0.post("/api/v1/namespaces/bench/serviceaccounts",
                             data=orjson.dumps({"metadata": {"name": "default"}}), headers=json_ct)).read()
        bodies = iter([_pod(f"p{i:05d}") for i in range(N_PODS)])
        lat: list[float] = []

        async def creator(s: aiohttp.ClientSession) -> None:
            for body in bodies:
                t = time.perf_counter()
                async with s.post("/api/v1/namespaces/bench/pods", data=body, headers=json_ct) as r:
                    await r.read()
                    assert r.status == 201, await r.text()
                lat.append(time.perf_counter() - t)

        t0 = time.perf_counter()
        store_pids = store_pids or []
        cpu0, scpu0 = _cpu(server_pids), _cpu(store_pids)
        await asyncio.gather(*(creator(sessions[i % len(sessions)]) for i in range(CONCURRENCY)))
        creates = N_PODS / (time.perf_counter() - t0)
        cpu = (_cpu(server_pids) - cpu0) / N_PODS
        store_cpu = (_cpu(store_pids) - scpu0) / N_PODS

        received: dict[str, list[float]] = {}
        ready = 0

        async def watcher() -> None:
            nonlocal ready
            async with wsess.get("/api/v1/namespaces/bench/configmaps?watch=true&resourceVersion=0"
                                 "&timeoutSeconds=120", timeout=aiohttp.ClientTimeout(total=None)) as r:
                ready += 1
                async for line in r.content:
                    if not line.strip():
                        continue
                    name = orjson.loads(line)["object"]["metadata"]["name"]
                    received.setdefault(name, []).append(time.perf_counter())
                    if name == "done":
                        return

        tasks = [asyncio.create_task(watcher()) for _ in range(N_WATCHERS)]
        while ready < N_WATCHERS:
            await asyncio.sleep(0.05)
        sent: dict[str, float] = {}
        for i in range(N_EVENTS):
            # from the write's start: the embedded store feeds watchers before the write's
            # acknowledgement reaches the client, so "after the ack" can be negative there
            sent[f"cm{i}"] = time.perf_counter()
            async with s0.post("/api/v1/namespaces/bench/configmaps",
                               data=orjson.dumps({"metadata": {"name": f"cm{i}"}}), headers=json_ct) as r:
                await r.read()
            await asyncio.sleep(0.01)
        async with s0.post("/api/v1/namespaces/bench/configmaps", data=orjson.dumps({"metadata": {"name": "done"}}),
                           headers=json_ct) as r:
            await r.read()
        await asyncio.wait(tasks, timeout=60)
        delays = [t - sent[n] for n, ts in received.items() if n in sent for t in ts]
        return {"creates": creates, "p99": percentile(lat, 99), "watch_p99": percentile(delays, 99),
                "cpu_us": cpu * 1e6, "store_cpu_us": store_cpu * 1e6,
                "delivered": len(delays) / (N_EVENTS * N_WATCHERS)}
    finally:
        for s in [*sessions, wsess]:
            await s.close()


async def raw_etcd_puts(endpoints: list[str], n: int = 3000) -> float:
    """Anchor: 1.5 KB puts straight to etcd, CONCURRENCY in flight, through the same gRPC stack."""
    import grpc.aio
    from etcd3aio._protobuf import rpc_pb2, rpc_pb2_grpc

    target = "ipv4:" + ",".join(endpoints)
    ch = grpc.aio.insecure_channel(target, options=[("grpc.lb_policy_name", "round_robin")])
    kv = rpc_pb2_grpc.KVStub(ch)
    value = b"x" * 1500
    it = iter(range(n))

    async def putter() -> None:
        for i in it:
            await kv.Put(rpc_pb2.PutRequest(key=f"/bench-anchor/{i}".encode(), value=value))

    t0 = time.perf_counter()
    await asyncio.gather(*(putter() for _ in range(CONCURRENCY)))
    rate = n / (time.perf_counter() - t0)
    await kv.DeleteRange(rpc_pb2.DeleteRangeRequest(key=b"/bench-anchor/", range_end=b"/bench-anchor0"))
    await ch.close()
    return rate


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster
    from tests.etcd_helper import EtcdCluster
    from tests.ha_helper import HAControlPlane

    from pyk8s.client.kubeconfig import load_kubeconfig

    base = Path(tempfile.mkdtemp(prefix="pyk8s-bench-etcd-"))
    c = Cluster(str(base / "sqlite"), extra_args=SERVER_ARGS).start()
    try:
        assert c.proc is not None
        sq = asyncio.run(workload([c.url], c.url, load_kubeconfig(c.kubeconfig).ssl_client_context(), [c.proc.pid]))
    finally:
        c.stop()
    with EtcdCluster(base / "etcd", 3) as etcd:
        anchor = asyncio.run(raw_etcd_puts(etcd.endpoints))
        with HAControlPlane(base / "ha", etcd.endpoint, 2, extra_args=SERVER_ARGS) as ha:
            a, b = ha.servers
            assert a.proc is not None and b.proc is not None
            et = asyncio.run(workload([a.url, b.url], b.url, load_kubeconfig(a.kubeconfig).ssl_client_context(),
                                      [a.proc.pid, b.proc.pid], [m.proc.pid for m in etcd.members if m.proc]))
    print(f"  SQLite: 1 server; etcd: 3 members, 2 API servers ({N_PODS} pods, {CONCURRENCY} clients, "
          f"{N_WATCHERS} watchers x {N_EVENTS} events)")
    row("SQLite: pod creates", sq["creates"], "/s", 2000, "target")
    row("etcd x3, 2 API servers: pod creates", et["creates"], "/s", sq["creates"], "SQLite, same run")
    row("etcd x3, 2 API servers: pod creates", et["creates"], "/s", anchor, "raw etcd puts, 64 conc.")
    row("etcd x3, 2 API servers: pod creates", et["creates"], "/s", 2000, "target")
    # CPU per create: robust on a shared, loaded machine where wall-clock rates swing
    row("SQLite: server CPU per pod create", sq["cpu_us"], "us", 500, "2,000/s on one core", higher_is_better=False)
    row("etcd x3: both servers' CPU per pod create", et["cpu_us"], "us", sq["cpu_us"], "SQLite, same run",
        higher_is_better=False)
    row("etcd x3: etcd members' CPU per pod create", et["store_cpu_us"], "us")
    row("SQLite: create p99", sq["p99"] * 1000, "ms", 1000, "SLO p99 1 s", higher_is_better=False)
    row("etcd x3, 2 API servers: create p99", et["p99"] * 1000, "ms", sq["p99"] * 1000, "SQLite, same run",
        higher_is_better=False)
    row("etcd x3, 2 API servers: create p99", et["p99"] * 1000, "ms", 1000, "SLO p99 1 s", higher_is_better=False)
    row("SQLite: watch delivery p99 (write start)", sq["watch_p99"] * 1000, "ms", 1000, "target 1 s", higher_is_better=False)
    row("etcd x3: watch delivery p99 (cross-server)", et["watch_p99"] * 1000, "ms", sq["watch_p99"] * 1000,
        "SQLite, same run", higher_is_better=False)
    row("etcd x3: watch delivery p99 (cross-server)", et["watch_p99"] * 1000, "ms", 1000, "target 1 s",
        higher_is_better=False)
    row("etcd x3: share of events delivered", et["delivered"] * 100, "%", sq["delivered"] * 100, "SQLite")


if __name__ == "__main__":
    main()
