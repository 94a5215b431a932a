"""The cost of the API server's metrics on the request path, as a ratio (issue 20: a few percent at most).

The same load runs against a server with /metrics (the default) and one started with
`--disable metrics`, alternately, BENCH_METRICS_ROUNDS times each: pod creates and gets over
keep-alive connections. Server CPU per request (from /proc) is compared, best round of each,
since on a shared machine wall-clock rates move with others' load far more than CPU does."""

from __future__ import annotations

import asyncio
import os
import tempfile
import time

from .report import row, warm_up

N = int(os.environ.get("BENCH_METRICS_PODS", "3000"))
ROUNDS = int(os.environ.get("BENCH_METRICS_ROUNDS", "3"))
CONCURRENCY = 32


async def _load(url: str, ssl_ctx: object, server_pid: int, tag: str) -> tuple[float, float]:
    """Server CPU seconds per create and per get."""
    from pyk8s.client.http1 import ConnectionPool

    from .api import pod, tree_cpu_seconds

    pool = ConnectionPool(url, ssl_ctx, {"Accept": "application/json"}, CONCURRENCY)  # type: ignore[arg-type]
    await warm_up(pool, CONCURRENCY)
    ns = f"m{tag}"
    status, _ = await pool.request("POST", "/api/v1/namespaces", b'{"metadata":{"name":"%s"}}' % ns.encode(),
                                   "application/json", 60)
    assert status == 201
    # no controller-manager: the ServiceAccount admission looks for "default"
    status, _ = await pool.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                                   b'{"metadata":{"name":"default"}}', "application/json", 60)
    assert status == 201
    base = f"/api/v1/namespaces/{ns}/pods"
    bodies = iter([pod(f"p{i:05d}") for i in range(N)])

    async def creator() -> None:
        for body in bodies:
            st, reply = await pool.request("POST", base, body, "application/json", 60)
            assert st == 201, reply

    cpu0 = tree_cpu_seconds(server_pid)
    await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))
    per_create = (tree_cpu_seconds(server_pid) - cpu0) / N
    names = iter(range(N))

    async def getter() -> None:
        for i in names:
            st, reply = await pool.request("GET", f"{base}/p{i:05d}", None, None, 60)
            assert st == 200, reply

    cpu0 = tree_cpu_seconds(server_pid)
    await asyncio.gather(*(getter() for _ in range(CONCURRENCY)))
    per_get = (tree_cpu_seconds(server_pid) - cpu0) / N
    pool.close()
    return per_create, per_get


def counting_cost(n: int = 20000) -> float:
    """Microseconds the request path's counting adds to one request (apiserver/metrics.py's wrapper and
    routed(), the labels memoised), timed in-process without the server: a figure free of others' load."""
    import types

    from aiohttp import web
    from multidict import CIMultiDict, MultiDict

    from pyk8s.api.resources import builtin_registry
    from pyk8s.apiserver.metrics import APIServerMetrics
    from pyk8s.apiserver.request import parse_path

    m = APIServerMetrics(types.SimpleNamespace(registry=builtin_registry(), caches=None, flowcontrol=None))
    resp = web.Response(body=b"x" * 1500)

    class Req(dict):  # what the wrapper reads of a request
        method = "GET"
        query: MultiDict[str] = MultiDict()
        headers: CIMultiDict[str] = CIMultiDict()

        def __init__(self, path: str) -> None:
            super().__init__()
            self.path = path

    reqs = [Req(f"/api/v1/namespaces/bench/pods/p{i % 500:05d}") for i in range(n)]

    async def bare(r: Req) -> web.Response:
        parse_path(r.path)  # the route's own work, in both
        return resp

    async def routed(r: Req) -> web.Response:
        m.routed(r, parse_path(r.path), "get")  # type: ignore[arg-type]
        return resp

    counted = m.instrument(routed)  # type: ignore[arg-type]

    async def run(fn: object) -> float:
        t = time.perf_counter()
        for r in reqs:
            r.clear()
            await fn(r)  # type: ignore[operator]
        return time.perf_counter() - t

    async def best() -> tuple[float, float]:
        a = min([await run(bare) for _ in range(3)])
        b = min([await run(counted) for _ in range(3)])
        return a, b

    a, b = asyncio.run(best())
    return (b - a) / n * 1e6


def main() -> None:
    from tests.cluster import Cluster

    from pyk8s.client.kubeconfig import load_kubeconfig

    best: dict[bool, list[float]] = {True: [1e9, 1e9], False: [1e9, 1e9]}
    for r in range(ROUNDS):
        for on in (True, False):
            args = ["--disable", "scheduler", "--disable", "controller-manager"]
            if not on:
                args += ["--disable", "metrics"]
            c = Cluster(tempfile.mkdtemp(prefix="pyk8s-bench-metrics-"), extra_args=args).start()
            try:
                assert c.proc is not None
                kc = load_kubeconfig(c.kubeconfig)
                t = time.perf_counter()
                create, get = asyncio.run(_load(c.url, kc.ssl_client_context(), c.proc.pid, f"{r}{int(on)}"))
                print(f"  round {r + 1} metrics {'on ' if on else 'off'}: {create * 1e6:.0f} us/create, "
                      f"{get * 1e6:.0f} us/get server CPU ({time.perf_counter() - t:.1f} s)")
                best[on] = [min(best[on][0], create), min(best[on][1], get)]
            finally:
                c.stop()
    us = counting_cost()
    print(f"  counting per request, timed in-process: {us:.1f} us")
    row("metrics' counting per request vs server CPU per get (off)", us / (best[False][1] * 1e6) * 100, "%", 3.0,
        "a few percent", higher_is_better=False)
    for i, what in enumerate(("pod create", "pod get")):
        ratio = best[True][i] / best[False][i]
        print(f"  server CPU per {what}: metrics on / off = {ratio:.3f}")
        row(f"metrics' cost per {what} (server CPU, on vs off)", (ratio - 1) * 100, "%", 3.0,
            "a few percent", higher_is_better=False)


if __name__ == "__main__":
    main()
