"""Simulated nodes at scale, against kwok's CI benchmark (kubernetes-sigs/kwok test/e2e/benchmark.go).

kwok's anchors: 5,000 nodes Ready in 60 s, 10,000 pods Running in 60 s, 10,000 pods deleted in 90 s.
Here: a real `pyk8s server --controller-manager-process` (the API server, with the scheduler and
the controllers each in a process of their own, as kwok's run deploys kube-scheduler and
kube-controller-manager), one `pyk8s sim` process for all nodes, and this process creating pods
and watching.
kwok's run creates pods already bound (kube-scheduler disabled); when our scheduler is present
it binds every pod here, which is more work for the same anchor.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from typing import Any

from .report import row

N_NODES = int(os.environ.get("BENCH_SIM_NODES", "5000"))
N_PODS = int(os.environ.get("BENCH_SIM_PODS", "10000"))
CONCURRENCY = 64
NS = "sim-bench"
PREFIX = "bench-node-"
STEADY_S = float(os.environ.get("BENCH_SIM_STEADY", "20"))
POD_TIMEOUT = float(os.environ.get("BENCH_SIM_TIMEOUT", "600"))


def _proc_kib(pid: int, field: str) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            return float(next(line.split()[1] for line in f if line.startswith(field)))
    except (OSError, StopIteration):
        return float("nan")


def _cpu_seconds(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return float("nan")


def _component(server_pid: int, which: str) -> list[int]:
    """The pids of the server's "scheduler", "controller-manager" or "metrics-server" process (none when
    in-process or disabled)."""
    from .report import _children, controller_manager_pids, scheduler_pids

    if which == "metrics-server":
        return _children(server_pid, lambda argv: b"metrics-server" in argv and b"--kubeconfig" in argv)
    return (scheduler_pids if which == "scheduler" else controller_manager_pids)(server_pid)


def _control_plane_cpu(server_pid: int) -> float:
    """The server's CPU seconds and its component processes'."""
    return _cpu_seconds(server_pid) + sum(_cpu_seconds(p) for p in _component(server_pid, "scheduler")
                                          + _component(server_pid, "controller-manager"))


def _cpu_split(server_pid: int) -> dict[str, float]:
    """CPU seconds per control-plane process: the API server itself and each component process."""
    out = {"API server": _cpu_seconds(server_pid)}
    for which in ("scheduler", "controller-manager", "metrics-server"):
        pids = _component(server_pid, which)
        if pids:
            out[which] = sum(_cpu_seconds(p) for p in pids)
    return out


def _component_kib(server_pid: int, which: str, field: str) -> float:
    return sum(_proc_kib(p, field) for p in _component(server_pid, which))


def _pod(i: int, node: str | None, ns: str) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                            "resources": {"requests": {"cpu": "10m", "memory": "16Mi"}}}],
                            "terminationGracePeriodSeconds": 30}
    if node:
        spec["nodeName"] = node
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": f"pod-{i:05d}", "namespace": ns,
                                                          "labels": {"app": "sim-bench"}}, "spec": spec}


class Counter:
    """Counts objects matching a predicate from an informer's events; wakes waiters at a target."""

    def __init__(self, pred: Any) -> None:
        self.pred = pred
        self.match: set[str] = set()
        self.seen: set[str] = set()
        self.changed = asyncio.Event()
        self.last_match_change = 0.0  # time.monotonic() when `match` last changed

    def on(self, obj: dict[str, Any]) -> None:
        key = obj["metadata"]["name"]
        self.seen.add(key)
        n = len(self.match)
        if self.pred(obj):
            self.match.add(key)
        else:
            self.match.discard(key)
        if len(self.match) != n:
            self.last_match_change = time.monotonic()
        self.changed.set()

    def gone(self, obj: dict[str, Any]) -> None:
        key = obj["metadata"]["name"]
        self.seen.discard(key)
        self.match.discard(key)
        self.changed.set()

    async def wait(self, cond: Any, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while not cond():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass
        return True


async def _oldest_lease(c: Any) -> float:
    """Seconds since the stalest of our Leases was renewed (a node is lost after 40 s)."""
    from pyk8s.api.timefmt import parse_time

    leases = await c.list(("coordination.k8s.io", "v1", "leases"), "kube-node-lease")
    now = time.time()
    ages = [now - parse_time(lz["spec"]["renewTime"]) for lz in leases["items"]
            if lz["metadata"]["name"].startswith(PREFIX)]
    return max(ages) if ages else float("nan")


def _ready(node: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


async def _namespace(c: Any, ns: str) -> None:
    await c.request("POST", "/api/v1/namespaces", {"metadata": {"name": ns}})
    for _ in range(50):  # the serviceaccount controller makes "default"; make it ourselves if it is not there
        if await c.get_or_none(("", "v1", "serviceaccounts"), "default", ns) is not None:
            return
        await asyncio.sleep(0.1)
    await c.create(("", "v1", "serviceaccounts"), {"metadata": {"name": "default", "namespace": ns}})


async def _pods_phase(c: Any, cluster: Any, sim: Any, ns: str, prebound: bool) -> dict[str, Any]:
    """Create N_PODS pods (64 at a time), wait until all Running, delete them gracefully, wait until gone."""
    from pyk8s.client import Informer

    res: dict[str, Any] = {}
    if prebound:
        await _namespace(c, ns)
    pods = Counter(lambda p: (p.get("status") or {}).get("phase") == "Running")
    pinf = Informer(c, ("", "v1", "pods"), namespace=ns, label_selector="app=sim-bench")
    pinf.add_handlers(pods.on, lambda o, n: pods.on(n), pods.gone)
    pinf.start()
    await pinf.wait_synced(30)

    it = iter(range(N_PODS))
    errors = 0

    async def creator() -> None:
        nonlocal errors
        for i in it:
            try:
                await c.create(("", "v1", "pods"), _pod(i, f"{PREFIX}{i % N_NODES}" if prebound else None, ns))
            except Exception:
                errors += 1

    c0, s0 = _control_plane_cpu(cluster.proc.pid), _cpu_seconds(sim.pid)
    t1 = time.monotonic()
    await asyncio.gather(*(creator() for _ in range(CONCURRENCY)))
    res["created_s"] = time.monotonic() - t1
    res["create_errors"] = errors
    ok = await pods.wait(lambda: len(pods.match) >= N_PODS - errors, POD_TIMEOUT)
    res["pods_s"] = time.monotonic() - t1 if ok else float("nan")
    res["pods_running"] = len(pods.match)
    dt = time.monotonic() - t1
    res["server_cpu"] = (_control_plane_cpu(cluster.proc.pid) - c0) / dt * 100
    res["sim_cpu"] = (_cpu_seconds(sim.pid) - s0) / dt * 100

    res["lease_max_age"] = await _oldest_lease(c)
    res["server_rss"] = _proc_kib(cluster.proc.pid, "VmRSS") / 1024
    res["scheduler_rss"] = _component_kib(cluster.proc.pid, "scheduler", "VmRSS") / 1024
    res["cm_rss"] = _component_kib(cluster.proc.pid, "controller-manager", "VmRSS") / 1024
    res["ms_rss"] = _component_kib(cluster.proc.pid, "metrics-server", "VmRSS") / 1024
    res["sim_rss"] = _proc_kib(sim.pid, "VmRSS") / 1024

    dit = iter(range(N_PODS))

    async def deleter() -> None:
        for i in dit:
            try:
                await c.delete(("", "v1", "pods"), f"pod-{i:05d}", ns)  # graceful: the simulated kubelet finishes it
            except Exception:
                pass

    t2 = time.monotonic()
    await asyncio.gather(*(deleter() for _ in range(CONCURRENCY)))
    ok = await pods.wait(lambda: not pods.seen, POD_TIMEOUT)
    res["delete_s"] = time.monotonic() - t2 if ok else float("nan")
    await pinf.stop()
    return res


async def run(cluster: Any, sim_cmd: list[str]) -> dict[str, Any]:
    from pyk8s.client import Client, Informer

    res: dict[str, Any] = {}
    c = Client.from_kubeconfig(cluster.kubeconfig, pool_size=CONCURRENCY + 8, timeout=120)
    nodes = Counter(_ready)
    ninf = Informer(c, ("", "v1", "nodes"), label_selector="node.pyk8s.io/simulated=true")
    ninf.add_handlers(nodes.on, lambda o, n: nodes.on(n), nodes.gone)
    ninf.start()
    await ninf.wait_synced(30)

    t0 = time.monotonic()
    sim = subprocess.Popen(sim_cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                           env=dict(os.environ, KUBECONFIG=cluster.kubeconfig, PYTHONUNBUFFERED="1"))
    res["sim_pid"] = sim.pid
    ok = await nodes.wait(lambda: len(nodes.match) >= N_NODES, 300)
    res["nodes_s"] = time.monotonic() - t0 if ok else float("nan")
    res["nodes_ready"] = len(nodes.match)

    # steady state before any pod: what 5,000 heartbeating nodes cost each process
    await asyncio.sleep(5)
    c0, s0, w0 = _control_plane_cpu(cluster.proc.pid), _cpu_seconds(sim.pid), time.monotonic()
    split0 = _cpu_split(cluster.proc.pid)
    await asyncio.sleep(STEADY_S)
    dt = time.monotonic() - w0
    res["steady_server_cpu"] = (_control_plane_cpu(cluster.proc.pid) - c0) / dt * 100
    res["steady_split"] = {k: (v - split0.get(k, 0.0)) / dt * 100 for k, v in _cpu_split(cluster.proc.pid).items()}
    res["steady_sim_cpu"] = (_cpu_seconds(sim.pid) - s0) / dt * 100
    res["steady_lease_age"] = await _oldest_lease(c)

    # is a scheduler binding pods? One probe pod tells.
    await _namespace(c, NS)
    await c.create(("", "v1", "pods"), _pod(99999, None, NS))
    bound = False
    for _ in range(50):
        p = await c.get(("", "v1", "pods"), "pod-99999", NS)
        if p["spec"].get("nodeName"):
            bound = True
            break
        await asyncio.sleep(0.1)
    await c.delete(("", "v1", "pods"), "pod-99999", NS, grace_period=0)
    res["scheduler"] = bound

    if bound:
        res["sched"] = await _pods_phase(c, cluster, sim, NS, prebound=False)
    # kwok's CI runs with kube-scheduler disabled and creates pods already bound: the like-for-like figure
    res["pre"] = await _pods_phase(c, cluster, sim, NS + "-prebound", prebound=True)
    res["server_hwm"] = _proc_kib(cluster.proc.pid, "VmHWM") / 1024
    res["scheduler_hwm"] = _component_kib(cluster.proc.pid, "scheduler", "VmHWM") / 1024
    res["cm_hwm"] = _component_kib(cluster.proc.pid, "controller-manager", "VmHWM") / 1024
    res["ms_hwm"] = _component_kib(cluster.proc.pid, "metrics-server", "VmHWM") / 1024
    res["sim_hwm"] = _proc_kib(sim.pid, "VmHWM") / 1024
    res["server_cpu"] = _control_plane_cpu(cluster.proc.pid)
    res["sim_cpu"] = _cpu_seconds(sim.pid)
    res["sched_cpu"] = sum(_cpu_seconds(p) for p in _component(cluster.proc.pid, "scheduler"))
    res["cm_cpu"] = sum(_cpu_seconds(p) for p in _component(cluster.proc.pid, "controller-manager"))
    res["total_s"] = time.monotonic() - t0

    sim.terminate()
    try:
        out, _ = sim.communicate(timeout=60)
        res["sim_summary"] = next((ln for ln in out.splitlines() if "stopping" in ln), "")
    except subprocess.TimeoutExpired:
        sim.kill()
    await ninf.stop()
    await c.close()
    return res


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="pyk8s-bench-sim-")
    # kwok's benchmark runs kube-controller-manager as its own process; BENCH_SIM_CM=inprocess runs
    # the controllers on the server's loop (pyk8s server's default)
    cm_inprocess = os.environ.get("BENCH_SIM_CM") == "inprocess"
    c = Cluster(d, None if cm_inprocess else ["--controller-manager-process"]).start(60)
    sim_cmd = [sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", str(N_NODES), "--name-prefix", PREFIX,
               "--concurrency", str(CONCURRENCY)]
    load0 = os.getloadavg()[0]
    try:
        r = asyncio.run(run(c, sim_cmd))
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)  # a 5,000-node run leaves ~500 MB
    print(f"  (one server process with its scheduler process and "
          f"{'the controllers on its loop' if cm_inprocess else 'its controller-manager process'} "
          f"(server CPU counts them all), one simulator process "
          f"for {N_NODES:,} nodes; {os.cpu_count()} cores, load average "
          f"{load0:.1f} before and {os.getloadavg()[0]:.1f} after; "
          f"pods {'bound by our scheduler' if r['scheduler'] else 'created with spec.nodeName (no scheduler)'})")
    row(f"{N_NODES:,} nodes Ready", r["nodes_s"], "s", 60, "kwok CI 60 s", higher_is_better=False)
    row(f"server CPU while {N_NODES:,} nodes only heartbeat", r["steady_server_cpu"], "% core")
    for proc, pct in r["steady_split"].items():
        row("  metrics-server process (not counted above)" if proc == "metrics-server" else
            f"  of which the {proc} process", pct, "% core")
    row(f"simulator CPU while {N_NODES:,} nodes only heartbeat", r["steady_sim_cpu"], "% core")
    row("  oldest node Lease then", r["steady_lease_age"], "s", 40, "leaseDurationSeconds", higher_is_better=False)
    phases = [("sched", "bound by our scheduler"), ("pre", "created bound (spec.nodeName), as kwok's CI")]
    for key, what in phases:
        ph = r.get(key)
        if ph is None:
            continue
        print(f"  -- {N_PODS:,} pods {what}")
        row(f"{N_PODS:,} pods Running (from first create)", ph["pods_s"], "s", 60, "kwok CI 60 s",
            higher_is_better=False)
        row(f"  of which creating {N_PODS:,} pods", ph["created_s"], "s")
        row("  server CPU meanwhile", ph["server_cpu"], "% core")
        row("  simulator CPU meanwhile", ph["sim_cpu"], "% core")
        row(f"{N_PODS:,} pods deleted (graceful)", ph["delete_s"], "s", 90, "kwok CI 90 s", higher_is_better=False)
        row("oldest node Lease after the pod burst", ph["lease_max_age"], "s", 40, "leaseDurationSeconds",
            higher_is_better=False)
        row("server RSS with the pods Running", ph["server_rss"], "MiB")
        row("scheduler process RSS with the pods Running", ph["scheduler_rss"], "MiB")
        if not cm_inprocess:
            row("controller-manager RSS with the pods Running", ph["cm_rss"], "MiB")
        row("metrics-server RSS with the pods Running", ph["ms_rss"], "MiB")
        row("simulator RSS with the pods Running", ph["sim_rss"], "MiB")
        if ph["create_errors"]:
            row("pod create errors", ph["create_errors"], "")
    row("server peak RSS", r["server_hwm"], "MiB")
    row("scheduler process peak RSS", r["scheduler_hwm"], "MiB")
    if not cm_inprocess:
        row("controller-manager peak RSS", r["cm_hwm"], "MiB")
    row("metrics-server peak RSS", r["ms_hwm"], "MiB")
    row("simulator peak RSS", r["sim_hwm"], "MiB")
    row("server CPU time, whole run (with its components)", r["server_cpu"], "s")
    row("  of which the scheduler process", r["sched_cpu"], "s")
    if not cm_inprocess:
        row("  of which the controller-manager process", r["cm_cpu"], "s")
    row("simulator CPU time, whole run", r["sim_cpu"], "s")
    if r.get("sim_summary"):
        print("  " + r["sim_summary"])


if __name__ == "__main__":
    main()
