"""`kubectl get pods` over 1,000 and 10,000 pods: paged lists from watch cache snapshots against the store.

kubectl lists in pages of 500 (`limit=500` and `continue`). Two servers of this tree run at
once, idle but for the load (no scheduler or controllers): one as it runs by default, its pages
cut from a snapshot of the watch cache (apiserver/listsnapshot.py), the other with
`--feature-gates=ListFromCacheSnapshot=false`, every page read from the store at the first
page's revision (what pyk8s did before). Both get the same pods; `kubectl get pods` then runs
against each in turn, ROUNDS times, so the machine's load moves both alike. Printed: the
median wall time of one `kubectl get pods` and the server CPU (utime + stime from /proc) per
page over all rounds, with the store path as the anchor (ratio > 1: the snapshots are cheaper/faster).

BENCH_PAGED_SIZES (pod counts, default "1000,10000"), BENCH_PAGED_ROUNDS (default 5).

Measured on the shared 2-core machine (load average 18-19, 5 rounds): 1,000 pods 346 ms
against 501 ms (1.45x), server CPU per page 7 ms against 21 ms (3.0x); 10,000 pods 3.5 s
against 5.4 s (1.56x), 4.7 ms against 37.8 ms per page (8.0x). The wall time is mostly
kubectl's own (it decodes and prints every page's table); the server's part is the CPU figure.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import subprocess
import tempfile
import time
from typing import Any

from .api import pod, tree_cpu_seconds
from .report import row, warm_up

SIZES = [int(x) for x in os.environ.get("BENCH_PAGED_SIZES", "1000,10000").split(",") if x]
ROUNDS = int(os.environ.get("BENCH_PAGED_ROUNDS", "5"))
SERVER_ARGS = ["--disable", "scheduler", "--disable", "controller-manager"]
CONCURRENCY = 32
PAGE = 500  # kubectl's default --chunk-size


async def _fill(cluster: Any, have: int, want: int) -> None:
    """Pods p<have> ... p<want - 1> in namespace bench."""
    import orjson

    from pyk8s.client.http1 import ConnectionPool
    from pyk8s.client.kubeconfig import load_kubeconfig

    kc = load_kubeconfig(cluster.kubeconfig)
    pool = ConnectionPool(cluster.url, kc.ssl_client_context(), {"Accept": "application/json"}, CONCURRENCY)
    if have == 0:
        for path, name in (("/api/v1/namespaces", "bench"), ("/api/v1/namespaces/bench/serviceaccounts", "default")):
            st, rep = await pool.request("POST", path, orjson.dumps({"metadata": {"name": name}}),
                                         "application/json", 60)
            assert st in (201, 409), rep
    await warm_up(pool, CONCURRENCY)
    bodies = iter([pod(f"p{i:05d}") for i in range(have, want)])

    async def creator() -> None:
        for body in bodies:
            st, rep = await pool.request("POST", "/api/v1/namespaces/bench/pods", body, "application/json", 60)
            assert st == 201, rep

    await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))
    pool.close()


def _kubectl_get(cluster: Any, kubectl: str, n: int) -> tuple[float, float]:
    """(wall seconds, server CPU seconds) of one `kubectl get pods` over n pods."""
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, HOME=cluster.home)
    pid = cluster.proc.pid
    cpu0, t0 = tree_cpu_seconds(pid), time.perf_counter()
    r = subprocess.run([kubectl, "get", "pods", "-n", "bench", "--no-headers"], capture_output=True, text=True,
                       env=env, timeout=300)
    dt = time.perf_counter() - t0
    cpu = tree_cpu_seconds(pid) - cpu0
    assert r.returncode == 0, r.stderr
    got = r.stdout.count("\n")
    assert got == n, f"kubectl listed {got} pods, not {n}"
    return dt, cpu


def main() -> None:
    from tests.cluster import Cluster, newest_kubectl

    kubectl = newest_kubectl()
    servers = {
        "snapshots": Cluster(tempfile.mkdtemp(prefix="pyk8s-bench-paged-"), extra_args=SERVER_ARGS),
        "store": Cluster(tempfile.mkdtemp(prefix="pyk8s-bench-paged-"),
                         extra_args=[*SERVER_ARGS, "--feature-gates=ListFromCacheSnapshot=false"]),
    }
    try:
        for c in servers.values():
            c.start()
        have = 0
        for n in SIZES:
            for c in servers.values():
                asyncio.run(_fill(c, have, n))
            have = n
            for c in servers.values():
                _kubectl_get(c, kubectl, n)  # warm: the first pages' code paths
            walls: dict[str, list[float]] = {k: [] for k in servers}
            cpus: dict[str, list[float]] = {k: [] for k in servers}
            for _ in range(ROUNDS):
                for name, c in servers.items():
                    dt, cpu = _kubectl_get(c, kubectl, n)
                    walls[name].append(dt)
                    cpus[name].append(cpu)
            pages = -(-n // PAGE)
            try:
                load = os.getloadavg()[0]
            except OSError:
                load = float("nan")
            print(f"  {n:,} pods, {pages} pages of {PAGE}, {ROUNDS} rounds, load average {load:.1f}")
            for name in servers:
                anchor = None if name == "store" else statistics.median(walls["store"]) * 1000
                row(f"kubectl get pods ({n:,}), {name}", statistics.median(walls[name]) * 1000, "ms", anchor,
                    "pages from the store", higher_is_better=False)
            for name in servers:  # summed over the rounds: /proc counts in clock ticks (10 ms)
                anchor = None if name == "store" else sum(cpus["store"]) / (pages * ROUNDS) * 1000
                row(f"server CPU per page ({n:,}), {name}", sum(cpus[name]) / (pages * ROUNDS) * 1000, "ms",
                    anchor, "pages from the store", higher_is_better=False)
    finally:
        for c in servers.values():
            c.stop()
