"""A Deployment of 10,000 replicas on 1,000 simulated nodes, from `kubectl apply` to all pods Running.

Everything upstream runs for this is in the loop: the deployment controller creates the
ReplicaSet, the replicaset controller creates the pods (slow-start batches, 500 per sync,
waiting on its expectations), the scheduler binds them, and simulated kubelets
(`pyk8s.sim.Simulator`, in this process) mark them Running. The server (API, controllers,
scheduler) is one `pyk8s server` process.

Anchors (../shared/reference/anchors.md): kube-scheduler's scheduler_perf floor for
SchedulingBasic 5000Nodes_10000Pods (680 pods/s, scheduling only, pods created by the test
harness) and kwok's CI benchmark (10,000 pods Running within 60 s, pods created bound,
no scheduler, no controllers). Ours does more per pod than either, so the ratio is a
conservative one.

    .venv/bin/python -m bench deployment
    BENCH_DEPLOY_REPLICAS=2000 BENCH_DEPLOY_NODES=200 .venv/bin/python -m bench deployment
"""

from __future__ import annotations

import asyncio
import importlib
import os
import shutil
import signal
import sys
import tempfile
import time
from typing import Any

from .report import row

REPLICAS = int(os.environ.get("BENCH_DEPLOY_REPLICAS", "10000"))
NODES = int(os.environ.get("BENCH_DEPLOY_NODES", "1000"))
NS = "deploy-bench"
PREFIX = "deploy-bench-node-"
TIMEOUT = float(os.environ.get("BENCH_DEPLOY_TIMEOUT", "900"))


def missing() -> list[str]:
    """What this benchmark needs from other parts of pyk8s and does not find."""
    needs = []
    try:
        if not hasattr(importlib.import_module("pyk8s.sim"), "Simulator"):
            needs.append("pyk8s.sim.Simulator (simulated nodes)")
    except ImportError:
        needs.append("pyk8s.sim.Simulator (simulated nodes)")
    try:
        importlib.import_module("pyk8s.scheduler.runner")
    except ImportError:
        needs.append("pyk8s.scheduler.runner (the in-process scheduler)")
    for mod in ("pyk8s.controllers.deployment", "pyk8s.controllers.replicaset"):
        try:
            importlib.import_module(mod)
        except ImportError:
            needs.append(mod)
    return needs


def _deployment() -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench", "namespace": NS},
            "spec": {"replicas": REPLICAS, "selector": {"matchLabels": {"app": "bench"}},
                     "template": {"metadata": {"labels": {"app": "bench"}},
                                  "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10",
                                                           "resources": {"requests": {"cpu": "10m",
                                                                                      "memory": "16Mi"}}}]}}}}


class Progress:
    """Pod counts from an informer's events: created, bound, Running."""

    def __init__(self) -> None:
        self.pods: dict[str, tuple[bool, bool]] = {}
        self.first: dict[str, float] = {}
        self.changed = asyncio.Event()

    def on(self, pod: dict[str, Any]) -> None:
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        running = (pod.get("status") or {}).get("phase") == "Running"
        self.pods[pod["metadata"]["name"]] = (bound, running)
        self.changed.set()

    def gone(self, pod: dict[str, Any]) -> None:
        self.pods.pop(pod["metadata"]["name"], None)
        self.changed.set()

    def counts(self) -> tuple[int, int, int]:
        bound = sum(1 for b, _ in self.pods.values() if b)
        running = sum(1 for _, r in self.pods.values() if r)
        return len(self.pods), bound, running

    def mark(self, t0: float) -> None:
        created, bound, running = self.counts()
        for what, n in (("created", created), ("bound", bound), ("running", running)):
            if n >= REPLICAS and what not in self.first:
                self.first[what] = time.monotonic() - t0

    async def wait_all_running(self, t0: float, timeout: float, sim: Any = None) -> bool:
        deadline = time.monotonic() + timeout
        last_print = time.monotonic()
        while True:
            self.mark(t0)
            if "running" in self.first:
                return True
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            if time.monotonic() - last_print > 10:
                created, bound, running = self.counts()
                extra = ""
                if sim is not None:
                    st = sim.stats()
                    extra = f" (simulator: {st.get('queued_writes', '?')} writes queued)"
                print(f"  ... {time.monotonic() - t0:5.0f} s: {created} created, {bound} bound, {running} Running"
                      f"{extra}", flush=True)
                last_print = time.monotonic()
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), min(left, 1.0))
            except TimeoutError:
                pass


async def run(cluster: Any) -> dict[str, Any]:
    from pyk8s.client import Client, Informer
    from pyk8s.sim import Simulator

    from .scheduler import cpu_seconds

    res: dict[str, Any] = {}
    c = Client.from_kubeconfig(cluster.kubeconfig, timeout=120)
    sim_client = Client.from_kubeconfig(cluster.kubeconfig, pool_size=80, timeout=120)
    sim = Simulator(sim_client, NODES, name_prefix=PREFIX, concurrency=64)
    t_nodes = time.monotonic()
    await sim.start()
    await sim.wait_nodes_registered(600)
    res["nodes_s"] = time.monotonic() - t_nodes

    await c.request("POST", "/api/v1/namespaces", {"metadata": {"name": NS}})
    progress = Progress()
    inf = Informer(c, ("", "v1", "pods"), namespace=NS, label_selector="app=bench")
    inf.add_handlers(progress.on, lambda o, n: progress.on(n), progress.gone)
    inf.start()
    await inf.wait_synced(30)

    assert cluster.proc is not None
    pid = cluster.proc.pid
    cpu0 = {"server": cpu_seconds(pid), "server main thread": cpu_seconds(pid, pid),
            "bench (simulated nodes)": cpu_seconds(os.getpid())}
    t0 = time.monotonic()
    await c.create(("apps", "v1", "deployments"), _deployment(), NS)
    ok = await progress.wait_all_running(t0, TIMEOUT, sim)
    res["ok"] = ok
    res["cpu_s"] = {"server": cpu_seconds(pid) - cpu0["server"],
                    "server main thread": cpu_seconds(pid, pid) - cpu0["server main thread"],
                    "bench (simulated nodes)": cpu_seconds(os.getpid()) - cpu0["bench (simulated nodes)"]}
    res["load"] = os.getloadavg()[0]
    res.update({f"{k}_s": v for k, v in progress.first.items()})
    res["counts"] = progress.counts()
    # the Deployment's own view: all replicas available
    deadline = time.monotonic() + 120
    while ok and time.monotonic() < deadline:
        d = await c.get(("apps", "v1", "deployments"), "bench", NS)
        if (d.get("status") or {}).get("availableReplicas") == REPLICAS:
            res["available_s"] = time.monotonic() - t0
            break
        await asyncio.sleep(0.5)

    await inf.stop()
    await sim.stop()
    await sim_client.close()
    await c.close()
    return res


def _interrupt(signum: int, frame: Any) -> None:
    raise KeyboardInterrupt


def main() -> None:
    needs = missing()
    if needs:
        print(f"  needs {', '.join(needs)}: not run")
        return
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="pyk8s-bench-deploy-")
    c = Cluster(d).start(60)
    # a SIGTERM (timeout, Ctrl-C from make) must still stop the server below
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        r = asyncio.run(run(c))
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)
    print(f"  (one server process with controllers and scheduler; {NODES:,} simulated nodes in the bench process; "
          f"{os.cpu_count()} cores)")
    row(f"{NODES:,} simulated nodes registered", r["nodes_s"], "s")
    if not r["ok"]:
        created, bound, running = r["counts"]
        print(f"  did not reach all-Running in {TIMEOUT:.0f} s: {created} created, {bound} bound, {running} Running")
        return
    total = r["running_s"]
    row(f"Deployment of {REPLICAS:,}: all pods created", r["created_s"], "s")
    row(f"Deployment of {REPLICAS:,}: all pods bound", r["bound_s"], "s")
    row(f"Deployment of {REPLICAS:,}: all pods Running", total, "s", 60 * REPLICAS / 10000,
        "kwok CI: 10k Running in 60 s", higher_is_better=False)
    if "available_s" in r:
        row("  status.availableReplicas reached", r["available_s"], "s")
    row("end-to-end throughput", REPLICAS / total, "pods/s", 680, "scheduler_perf 5000Nodes_10000Pods floor")
    row("end-to-end throughput", REPLICAS / total, "pods/s", 10000 / 60, "kwok CI 167 pods/s")
    # The machine may be shared: CPU seconds say what the run cost whatever else was running.
    cpu = r["cpu_s"]
    print("  CPU seconds until all-Running: " + ", ".join(f"{k} {v:.1f}" for k, v in cpu.items())
          + f"; load average {r['load']:.1f} on {os.cpu_count()} cores")
    busiest = cpu["server main thread"]
    if busiest > 0:
        row("CPU-bound ceiling (server thread alone on a core)", REPLICAS / busiest, "pods/s", 10000 / 60,
            "kwok CI 167 pods/s")


if __name__ == "__main__":
    main()
