"""Fairness under load: one user floods the API server with LISTs, another makes single GETs.

Both are ordinary authenticated users (bearer tokens), so both land in the global-default
priority level, in two flows (ByUser). The quiet user's GET latency is measured alone and during
the flood; the anchor is its own p99 alone, measured in the same run (goal: within 2x). The same
is done with API Priority and Fairness on (the default) and off (`--enable-priority-and-fairness=
false` with both in-flight limits 0: nothing limits the flood, the server before APF).

The flood, the quiet client and the server are separate processes (the flood's own CPU would skew
a shared client loop). BENCH_FLOOD (default 1000) LISTs in flight over as many connections, from
BENCH_FLOOD_PROCS (4) processes, all as the one flooding user;
BENCH_FAIR_OBJECTS (1000) ConfigMaps in the listed namespace (BENCH_FLOOD_SELECT=1: the LISTs
select none of them); BENCH_FAIR_SECONDS (10) of flood;
BENCH_FLOOD_RETRY: "now" (default: a refused LIST is sent again at once, as a misbehaving client
does) or "after" (it waits Retry-After first, as client-go does).
"""

from __future__ import annotations

import asyncio
import multiprocessing as mp
import os
import tempfile
import time
from typing import Any

import orjson

from .report import percentile, row, warm_up

N_FLOOD = int(os.environ.get("BENCH_FLOOD", "1000"))
FLOOD_PROCS = int(os.environ.get("BENCH_FLOOD_PROCS", "4"))
N_OBJECTS = int(os.environ.get("BENCH_FAIR_OBJECTS", "1000"))
SECONDS = float(os.environ.get("BENCH_FAIR_SECONDS", "10"))
RETRY = os.environ.get("BENCH_FLOOD_RETRY", "now")
# BENCH_FLOOD_SELECT=1: the LISTs select none of the objects (the server reads them all, the client
# gets an empty list); default: whole lists
SELECTOR = "?labelSelector=flood%3Dnone" if os.environ.get("BENCH_FLOOD_SELECT") == "1" else ""
QUIET_ALONE = 300
NS = "fair"
TOKENS = {"flooder": "flood-token", "quiet": "quiet-token"}


def _pool(url: str, ca: str, token: str, limit: int) -> Any:
    import ssl

    from pyk8s.client.http1 import ConnectionPool

    ctx = ssl.create_default_context(cafile=ca)
    return ConnectionPool(url, ctx, {"Accept": "application/json", "Authorization": f"Bearer {token}"}, limit)


async def _quiet(url: str, ca: str, seconds: float, count: int) -> list[float]:
    """Sequential GETs of one object: `count` of them, or as many as fit in `seconds`."""
    pool = _pool(url, ca, TOKENS["quiet"], 1)
    await warm_up(pool, 1)
    out: list[float] = []
    deadline = time.perf_counter() + seconds
    path = f"/api/v1/namespaces/{NS}/configmaps/cm-0"
    while (len(out) < count) if count else (time.perf_counter() < deadline):
        t = time.perf_counter()
        status, _ = await pool.request("GET", path, None, None, 120)
        if status == 200:
            out.append(time.perf_counter() - t)
        else:
            out.append(float("inf"))  # a refused GET counts as the worst latency
    pool.close()
    return out


def quiet_worker(url: str, ca: str, seconds: float, count: int, result_q: Any) -> None:
    result_q.put(asyncio.run(_quiet(url, ca, seconds, count)))


async def _flood(url: str, ca: str, n: int, ready_q: Any, go: Any) -> dict[str, float]:
    pool = _pool(url, ca, TOKENS["flooder"], n)
    await warm_up(pool, n)
    ready_q.put(True)
    go.wait()
    done = refused = 0
    deadline = time.perf_counter() + SECONDS
    path = f"/api/v1/namespaces/{NS}/configmaps{SELECTOR}"

    async def lister() -> None:
        nonlocal done, refused
        while time.perf_counter() < deadline:
            status, body = await pool.request("GET", path, None, None, 120)
            if status == 200:
                done += 1
            elif status == 429:
                refused += 1
                if RETRY == "after":
                    await asyncio.sleep(float(orjson.loads(body).get("details", {}).get("retryAfterSeconds", 1)))

    t = time.perf_counter()
    await asyncio.gather(*(lister() for _ in range(n)), return_exceptions=True)
    elapsed = time.perf_counter() - t
    pool.close()
    return {"lists": done / elapsed, "refused": refused / elapsed}


def flood_worker(url: str, ca: str, n: int, ready_q: Any, go: Any, result_q: Any) -> None:
    try:
        import uvloop

        uvloop.install()  # the flood's own loop should not be what limits it
    except ImportError:
        pass
    result_q.put(asyncio.run(_flood(url, ca, n, ready_q, go)))


async def _setup(url: str, kubeconfig: str) -> None:
    from pyk8s.client.http1 import ConnectionPool
    from pyk8s.client.kubeconfig import load_kubeconfig

    pool = ConnectionPool(url, load_kubeconfig(kubeconfig).ssl_client_context(), {"Accept": "application/json"}, 16)

    async def post(path: str, obj: dict[str, Any]) -> None:
        status, body = await pool.request("POST", path, orjson.dumps(obj), "application/json", 60)
        assert status in (201, 409), body

    await post("/api/v1/namespaces", {"metadata": {"name": NS}})
    await post("/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "fair-view"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                      "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": u} for u in TOKENS]})
    data = {"k": "x" * 200}
    for i in range(0, N_OBJECTS, 16):
        await asyncio.gather(*(post(f"/api/v1/namespaces/{NS}/configmaps", {"metadata": {"name": f"cm-{j}"},
                                                                            "data": data})
                               for j in range(i, min(i + 16, N_OBJECTS))))
    pool.close()


def run_mode(label: str, args: list[str]) -> float:
    """One server: the quiet user's p99 alone and during the flood; returns the p99 during the flood."""
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="pyk8s-bench-fair-")
    tokens = os.path.join(d, "tokens.csv")
    with open(tokens, "w") as f:
        f.write("".join(f"{t},{u},{u},\n" for u, t in TOKENS.items()))
    c = Cluster(os.path.join(d, "data"), extra_args=["--disable", "scheduler", "--disable", "controller-manager",
                                                      "--token-auth-file", tokens, *args]).start()
    ca = os.path.join(c.data_dir, "pki", "ca.crt")
    ctx = mp.get_context("spawn")
    try:
        asyncio.run(_setup(c.url, c.kubeconfig))
        result_q: Any = ctx.Queue()
        p = ctx.Process(target=quiet_worker, args=(c.url, ca, 0.0, QUIET_ALONE, result_q), daemon=True)
        p.start()
        alone = result_q.get(timeout=300)
        p.join()
        ready_q: Any = ctx.Queue()
        flood_q: Any = ctx.Queue()
        go = ctx.Event()
        per = [N_FLOOD // FLOOD_PROCS + (1 if i < N_FLOOD % FLOOD_PROCS else 0) for i in range(FLOOD_PROCS)]
        floods = [ctx.Process(target=flood_worker, args=(c.url, ca, n, ready_q, go, flood_q), daemon=True)
                  for n in per]
        for f in floods:
            f.start()
        for _ in floods:
            ready_q.get(timeout=300)
        from .api import tree_cpu_seconds

        assert c.proc is not None
        cpu0, t0 = tree_cpu_seconds(c.proc.pid), time.perf_counter()
        go.set()
        time.sleep(min(1.0, SECONDS / 5))  # the flood is in full swing
        q = ctx.Process(target=quiet_worker, args=(c.url, ca, SECONDS * 0.7, 0, result_q), daemon=True)
        q.start()
        during = result_q.get(timeout=SECONDS + 300)
        rates = [flood_q.get(timeout=SECONDS + 300) for _ in floods]
        busy = (tree_cpu_seconds(c.proc.pid) - cpu0) / (time.perf_counter() - t0)
        flood_rates = {k: sum(r[k] for r in rates) for k in ("lists", "refused")}
        q.join()
        for f in floods:
            f.join()
    finally:
        c.stop()
    a99 = percentile(alone, 99) * 1000
    d99 = percentile(during, 99) * 1000
    print(f"  -- {label}")
    row("quiet GET p50 alone", percentile(alone, 50) * 1000, "ms")
    row("quiet GET p99 alone", a99, "ms")
    row(f"quiet GET p50 during a flood of {N_FLOOD} LISTs", percentile(during, 50) * 1000, "ms")
    row(f"quiet GET p99 during the flood ({len(during)} GETs)", d99, "ms", a99, "p99 alone (goal 0.5x)",
        higher_is_better=False)
    row("flood: LISTs answered", flood_rates["lists"], "/s")
    row(f"flood: LISTs refused (429, retried {RETRY})", flood_rates["refused"], "/s")
    row("server CPU during the flood (1.0: one core saturated)", busy, "cores")
    return d99


def main() -> None:
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    print(f"  {N_FLOOD} LISTs in flight of {N_OBJECTS} ConfigMaps as one user; single GETs as another")
    on = run_mode("API Priority and Fairness on (default)", [])
    off = run_mode("API Priority and Fairness off, no in-flight limits (the server before APF)",
                   ["--enable-priority-and-fairness=false", "--max-requests-inflight", "0",
                    "--max-mutating-requests-inflight", "0"])
    row("quiet GET p99 during the flood, APF on", on, "ms", off, "APF off", higher_is_better=False)


if __name__ == "__main__":
    main()
