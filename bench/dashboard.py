"""The dashboard's scale view in a real headless Chromium at 5,000 simulated nodes and 10,000 pods
(issue 23: "renders 5,000 simulated nodes in under 2 s and updates at least once a second while
10,000 pods are scheduled, measured in the browser").

A real `pyk8s server` (its scheduler binds every pod), one `pyk8s sim` process for the nodes,
`pyk8s dashboard`, and Chromium through chromedriver (tests/dashboard/browser.py: the browser in a
network namespace of its own). Figures come from the page itself (window.pyk8sScale, web/src/pages/
scale.tsx): performance.now() of the node list's arrival and of the first full render, measured
from the page's navigation start, and the time of every redraw of the heatmap.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

from .report import row
from .sim import CONCURRENCY, Counter, _namespace, _pod, _ready

N_NODES = int(os.environ.get("BENCH_DASH_NODES", "5000"))
N_PODS = int(os.environ.get("BENCH_DASH_PODS", "10000"))
PREFIX = "dash-bench-node-"
NS = "dash-bench"
TIMEOUT = float(os.environ.get("BENCH_DASH_TIMEOUT", "900"))


def _page(browser: Any, script: str) -> Any:
    return browser.driver.execute_script(script)


async def _counting(c: Any, resource: tuple[str, str, str], pred: Any, **kw: Any) -> tuple[Counter, Any]:
    """An informer feeding a Counter of the objects matching `pred`, synced."""
    from pyk8s.client import Informer

    counter, inf = Counter(pred), Informer(c, resource, **kw)
    inf.add_handlers(counter.on, lambda o, n: counter.on(n), counter.gone)
    inf.start()
    await inf.wait_synced(30)
    return counter, inf


async def _nodes_ready(c: Any, sim_cmd: list[str], kubeconfig: str) -> tuple[subprocess.Popen[str], float, int]:
    nodes, inf = await _counting(c, ("", "v1", "nodes"), _ready, label_selector="node.pyk8s.io/simulated=true")
    t0 = time.monotonic()
    sim = subprocess.Popen(sim_cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, text=True,
                           env=dict(os.environ, KUBECONFIG=kubeconfig, PYTHONUNBUFFERED="1"))
    # all registered and nearly all Ready: on a loaded machine a few heartbeats are always late, and
    # the page draws NotReady nodes as well
    ok = await nodes.wait(lambda: len(nodes.seen) >= N_NODES and len(nodes.match) >= 0.98 * N_NODES, 900)
    await inf.stop()
    if not ok:
        sim.kill()
        sim.wait()
        raise RuntimeError(f"only {len(nodes.seen)} of {N_NODES} nodes registered, {len(nodes.match)} Ready")
    return sim, time.monotonic() - t0, len(nodes.match)


async def _pods(c: Any, browser: Any) -> dict[str, Any]:
    """Create N_PODS unbound pods (the scheduler binds them) while the page redraws; the page's
    redraw times between the first create and the moment all are Running (seen by this client)."""
    res: dict[str, Any] = {}
    await _namespace(c, NS)
    running, inf = await _counting(c, ("", "v1", "pods"), lambda p: (p.get("status") or {}).get("phase") == "Running",
                                   namespace=NS)
    gate = asyncio.Semaphore(CONCURRENCY)

    async def create(i: int) -> bool:
        async with gate:
            try:
                await c.create(("", "v1", "pods"), _pod(i, None, NS))
                return True
            except Exception:
                return False

    p0 = _page(browser, "return performance.now()")
    t0 = time.monotonic()
    res["t0_wall"] = time.time()
    errors = (await asyncio.gather(*(create(i) for i in range(N_PODS)))).count(False)
    # until every pod is Running, or (a straggler on a node whose heartbeat is late) none more for 30 s
    # (then the measured window ends at the last progress: a quiet tail is no redraw gap of the page's)
    ok, last, since = False, -1, time.monotonic()
    p1 = _page(browser, "return performance.now()")
    deadline = time.monotonic() + TIMEOUT
    while time.monotonic() < deadline:
        if await running.wait(lambda: len(running.match) >= N_PODS - errors, 5):
            ok = True
            p1 = _page(browser, "return performance.now()")
            break
        if len(running.match) != last:
            last, since = len(running.match), time.monotonic()
            p1 = _page(browser, "return performance.now()")
        elif time.monotonic() - since > 30:
            break
    res["running_s"] = time.monotonic() - t0 if ok else float("nan")
    res["running"] = len(running.match)
    res["errors"] = errors
    # how long after this client saw them all Running the page says so too
    want = f"{res['running']} Running"
    t1 = time.monotonic()
    while want not in _page(browser, "return document.querySelector('.scale-counts').textContent"):
        if time.monotonic() - t1 > 60:
            break
        await asyncio.sleep(0.05)
    res["page_lag_s"] = time.monotonic() - t1
    res["page_counts"] = _page(browser, "return document.querySelector('.scale-counts').textContent")
    batches = [t for t in _page(browser, "return window.pyk8sScale.batchTimes") if p0 <= t <= p1]
    # This client saw the last pod turn Running at `last_match_change`; on the page's clock:
    q, m = _page(browser, "return performance.now()"), time.monotonic()
    client_done = q - (m - running.last_match_change) * 1000
    if res["page_lag_s"] < 0.05 and batches:
        # The page already showed every pod Running when this client did, so its last batch of events
        # before then is when the scheduling ended: after it there is nothing to redraw, and the
        # measured window ends there, not at this (slower) client's moment.
        last_batch = max(batches)
        res["client_behind_ms"] = client_done - last_batch
        p1 = min(p1, last_batch)
    else:
        res["client_behind_ms"] = float("nan")
    times = [t for t in _page(browser, "return window.pyk8sScale.redrawTimes") if p0 <= t <= p1]
    gaps = [b - a for a, b in zip([p0, *times], [*times, p1], strict=True)]
    res["redraws"] = len(times)
    res["window_s"] = (p1 - p0) / 1000
    res["gap_min"] = min(gaps) if gaps else float("nan")
    res["gap_median"] = statistics.median(gaps) if gaps else float("nan")
    res["gap_max"] = max(gaps) if gaps else float("nan")
    # where the longest one falls, from the first create: a pause at the start is the creates', one
    # in the middle the flow's
    ends = [*times, p1]
    res["gap_max_at"] = (ends[gaps.index(res["gap_max"])] - res["gap_max"] - p0) / 1000 if gaps else float("nan")
    batches = [t for t in batches if t <= p1]
    res["event_gap_max"] = max((b - a for a, b in zip([p0, *batches], [*batches, p1], strict=True)),
                               default=float("nan"))
    res["events"] = _page(browser, "return window.pyk8sScale.events")
    res["longest_frame"] = _page(browser, "return window.pyk8sScale.longestFrame")
    await inf.stop()
    return res


async def run(cluster: Any, sim_cmd: list[str]) -> dict[str, Any]:
    from tests.dashboard.browser import Browser, Dashboard, wait

    from pyk8s.client import Client

    res: dict[str, Any] = {}
    c = Client.from_kubeconfig(cluster.kubeconfig, pool_size=CONCURRENCY + 8, timeout=120)
    sim, res["nodes_s"], res["nodes_ready"] = await _nodes_ready(c, sim_cmd, cluster.kubeconfig)
    dash = Dashboard(cluster.kubeconfig).start()
    browser = Browser()
    try:
        browser.get(dash.url)  # the access secret becomes the session cookie
        browser.find(".topbar")
        browser.driver.get("about:blank")  # then a fresh page load: timings start at its navigation
        browser.get(dash.base + "/#/scale")
        t = wait(lambda: _page(browser, "const t = window.pyk8sScale; return t && t.firstRender > 0 ? t : null"),
                 120, "the scale view's first full render")
        res["listed_ms"], res["first_ms"], res["first_nodes"] = t["nodesListed"], t["firstRender"], t["nodes"]
        # the node list's request as the browser saw it: when it went out, first byte, last byte, size
        res["list"] = _page(browser, "const e = performance.getEntriesByType('resource').find((r) => "
                            "new URL(r.name).pathname === '/api/v1/nodes'); return e && "
                            "[e.startTime, e.responseStart, e.responseEnd, e.encodedBodySize]")
        browser.shot("bench-scale-nodes")
        res.update(await _pods(c, browser))
        browser.shot("bench-scale-pods")
    finally:
        browser.quit()
        dash.stop()
        sim.terminate()
        try:
            sim.wait(60)
        except subprocess.TimeoutExpired:
            sim.kill()
        await c.close()
    return res


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="pyk8s-bench-dashboard-")
    c = Cluster(d, ["--controller-manager-process"]).start(60)
    sim_cmd = [sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", str(N_NODES), "--name-prefix", PREFIX,
               "--concurrency", str(CONCURRENCY), "--creating-seconds", "0"]
    load0 = os.getloadavg()
    try:
        r = asyncio.run(run(c, sim_cmd))
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)
    load1 = os.getloadavg()
    print(f"  (headless Chromium on the scale view; {N_NODES:,} simulated nodes ({r['nodes_ready']:,} Ready after {r['nodes_s']:.0f} s), "
          f"{N_PODS:,} pods bound by our scheduler; {os.cpu_count()} cores shared by browser, server, scheduler, "
          f"simulator and dashboard; load average {load0[0]:.1f} before and {load1[0]:.1f} after)")
    if os.environ.get("PYK8S_GC_TRACE"):
        print(f"  (first pod created at {r['t0_wall']:.3f}, wall clock: the collections in $PYK8S_GC_TRACE are on it)")
    row(f"first full render of {r['first_nodes']:,} nodes (from navigation)", r["first_ms"], "ms", 2000,
        "issue 23: < 2 s", higher_is_better=False)
    if r["list"]:
        start, first_byte, last_byte, size = r["list"]
        row("  of which page load until the list request", start, "ms")
        row(f"  of which the list of all nodes ({size / 1e6:.1f} MB) until its first byte", first_byte - start, "ms")
        row("  of which its transfer", last_byte - first_byte, "ms")
    row("  the node list parsed and applied", r["listed_ms"], "ms")
    row("  of which drawing after the list", r["first_ms"] - r["listed_ms"], "ms")
    row(f"{N_PODS:,} pods Running (from first create)", r["running_s"], "s")
    if r["running"] < N_PODS - r["errors"]:
        row("  pods Running when they stopped coming", r["running"], "")
    rate = r["redraws"] / r["window_s"] if r["window_s"] else float("nan")
    row("heatmap redraws per second meanwhile", rate, "/s", 1, "issue 23: >= 1/s")
    row("  longest interval between redraws", r["gap_max"], "ms", 1000, "issue 23: <= 1 s", higher_is_better=False)
    row("    it began, after the first create", r["gap_max_at"], "s")
    row("  median interval between redraws", r["gap_median"], "ms")
    row("  shortest interval between redraws", r["gap_min"], "ms")
    row("  longest batch (apply events + draw) in the page", r["longest_frame"], "ms")
    row("  longest interval between watch events reaching the page", r["event_gap_max"], "ms")
    row("watch events applied by the page", r["events"], "")
    row("page shows as many Running as the client, after", r["page_lag_s"], "s")
    row("  the page's last event before this bench's client saw the last pod Running, by",
        r["client_behind_ms"], "ms")
    print(f"  page: {r['page_counts']}")
    if r["errors"]:
        row("pod create errors", r["errors"], "")


if __name__ == "__main__":
    main()
