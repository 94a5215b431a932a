"""Scheduler throughput through the real API server: upstream scheduler_perf workloads.

Each workload gets a fresh `pyk8s server` (a subprocess, as tests/cluster.py starts it) whose
scheduler (the `pyk8s scheduler` process the server starts) binds the pods; this process creates the nodes and pods over HTTPS, as
scheduler_perf's client does, and watches the measured namespace. Throughput is measured as
upstream's throughputCollector does: the number of measured pods that became bound, sampled
every second from the first bound pod on (the first sample skipped), averaged over the
samples; that Average is what upstream's CI floors (`threshold:`) are compared to.

Workloads (upstream performance-config.yaml, labels [performance]):

  SchedulingBasic            5000 nodes, 1000 init pods, 10000 measured     floor 680
  SchedulingNodeAffinity     5000 nodes (zone1), 5000 init, 10000 measured  floor 220
  SchedulingPodAntiAffinity  5000 nodes, 1000 init, 2000 measured           floor 60
  TopologySpreading          5000 nodes (3 zones), 5000 init, 5000 measured floor 460
  SchedulingWithExtendedResource 5000 nodes, 5000 measured (one resource per node) floor 180
  SchedulingGPUShare (ours)  5000 nodes x 8 GPUs x 16 GiB, 5000 gpu-mem pods  (180: the floor above)
  PreemptionAsync            5000 nodes, 20000 low-priority init pods, a high-priority
                             preemptor every 200 ms, 5000 measured          floor 570

Differences from scheduler_perf, printed with the results: our API server runs its admission
chain (ServiceAccount, Priority), which upstream's bench disables, so pods carry the token
volume and priorities come from PriorityClasses; everything shares this machine's cores.

    .venv/bin/python -m bench scheduler
    BENCH_SCHED=SchedulingBasic,Preemption BENCH_SCHED_SCALE=0.2 BENCH_SCHED_MODE=inprocess ...

BENCH_SCHED_SCALE scales node and pod counts; the scheduler is the process `pyk8s server`
starts (`pyk8s scheduler`, as kube-scheduler is deployed), or with BENCH_SCHED_MODE=inprocess
the server's --in-process-scheduler;
BENCH_API_WORKERS=2 serves the API from two processes (`pyk8s server --api-workers 2`).
PYK8S_PROFILE=<file>: cProfiles of the measured phase, the server's in <file>, the scheduler's in
<file>.scheduler (see pyk8s.profiling).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import orjson

from .report import api_worker_pids, row, scheduler_pids, warm_up

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

PODS = ("", "v1", "pods")
NODES = ("", "v1", "nodes")
CONCURRENCY = 32  # pod/node creators
TIME_LIMIT = 180.0  # a measured phase projected to take longer than this is scaled down

ZONE = "topology.kubernetes.io/zone"


# -- templates (upstream test/integration/scheduler_perf/templates) ----------------------------------


def node_default(i: int, labels: dict[str, str] | None = None, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    name = f"scheduler-perf-{i:05d}"
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, **(labels or {})}},
            "spec": {},
            "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi", **(extra or {})},
                       "conditions": [{"status": "True", "type": "Ready"}], "phase": "Running"}}


def _container(cpu: str = "100m", memory: str = "500Mi", extra: dict[str, Any] | None = None) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory} if extra is None else dict(extra)
    return {"image": "registry.k8s.io/pause:3.10", "name": "pause", "ports": [{"containerPort": 80}],
            "resources": {"limits": res, "requests": res}}


def pod_default() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {}, "spec": {"containers": [_container()]}}


def pod_node_affinity() -> dict[str, Any]:
    p = pod_default()
    p["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": ZONE, "operator": "In", "values": ["zone1", "zone2"]}]}]}}}
    return p


def pod_anti_affinity() -> dict[str, Any]:
    p = pod_default()
    p["metadata"]["labels"] = {"color": "green"}
    p["spec"]["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"color": "green"}}, "topologyKey": "kubernetes.io/hostname",
         "namespaces": ["sched-1", "sched-0"]}]}}
    return p


def pod_topology_spreading() -> dict[str, Any]:
    p = pod_default()
    p["metadata"]["labels"] = {"color": "blue"}
    p["spec"]["topologySpreadConstraints"] = [{"maxSkew": 5, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule",
                                               "labelSelector": {"matchLabels": {"color": "blue"}}}]
    return p


def pod_low_priority() -> dict[str, Any]:
    p = pod_default()
    p["spec"] = {"terminationGracePeriodSeconds": 0, "containers": [_container("900m")]}
    return p


def pod_high_priority() -> dict[str, Any]:
    # Upstream sets spec.priority: 10 with the Priority admission plugin disabled; ours is on.
    p = pod_default()
    p["spec"] = {"priorityClassName": "perf-high", "containers": [_container("3000m")]}
    return p


def pod_extended(i: int) -> dict[str, Any]:
    p = pod_default()
    p["spec"]["containers"][0]["resources"] = {"requests": {f"foo.com/bar-{i}": "1"}, "limits": {f"foo.com/bar-{i}": "1"}}
    return p


def node_gpushare(i: int) -> dict[str, Any]:
    # 8 simulated GPUs of 16 GiB, as `pyk8s sim --gpus 8 --gpu-memory 16Gi` reports them
    return node_default(i, {"gpushare": "true"}, {"aliyun.com/gpu-mem": "128", "aliyun.com/gpu-count": "8",
                                                  "nvidia.com/gpu": "8"})


def pod_gpushare(i: int) -> dict[str, Any]:
    p = pod_default()
    gib = str((2, 4, 8, 12)[i % 4])  # shares of several sizes, so bin-packing has choices to make
    p["spec"]["containers"][0]["resources"] = {"requests": {"aliyun.com/gpu-mem": gib},
                                               "limits": {"aliyun.com/gpu-mem": gib}}
    return p


# -- workloads ----------------------------------------------------------------------------------


@dataclass
class Workload:
    name: str
    floor: float
    nodes: int
    init_pods: int
    measure_pods: int
    node_fn: Callable[[int], dict[str, Any]] = node_default
    init_fn: Callable[[int], dict[str, Any]] = lambda i: pod_default()
    measure_fn: Callable[[int], dict[str, Any]] = lambda i: pod_default()
    init_ns: str = "init"
    measure_ns: str = "measure"
    churn_fn: Callable[[int], dict[str, Any]] | None = None  # created every churn_interval during measuring
    churn_interval: float = 0.2
    priority_classes: list[dict[str, Any]] = field(default_factory=list)
    upstream: str = ""


def workloads() -> list[Workload]:
    zones = ("moon-1", "moon-2", "moon-3")
    return [
        Workload("SchedulingBasic", 680, 5000, 1000, 10000, upstream="5000Nodes_10000Pods"),
        Workload("SchedulingNodeAffinity", 220, 5000, 5000, 10000,
                 node_fn=lambda i: node_default(i, {ZONE: "zone1"}),
                 init_fn=lambda i: pod_node_affinity(), measure_fn=lambda i: pod_node_affinity(),
                 upstream="5000Nodes_10000Pods"),
        Workload("SchedulingPodAntiAffinity", 60, 5000, 1000, 2000,
                 init_fn=lambda i: pod_anti_affinity(), measure_fn=lambda i: pod_anti_affinity(),
                 init_ns="sched-0", measure_ns="sched-1", upstream="5000Nodes_2000Pods"),
        Workload("TopologySpreading", 460, 5000, 5000, 5000,
                 node_fn=lambda i: node_default(i, {ZONE: zones[i % 3]}),
                 measure_fn=lambda i: pod_topology_spreading(), upstream="5000Nodes_5000Pods"),
        Workload("SchedulingWithExtendedResource", 180, 5000, 0, 5000,
                 node_fn=lambda i: node_default(i, {"node-with-extended-resource": "true"}, {f"foo.com/bar-{i}": "1"}),
                 measure_fn=pod_extended, measure_ns="test", upstream="5000pods_5000nodes"),
        # Ours (no upstream workload): gpu-mem shares bin-packed onto single GPUs by GPUShare, whose
        # PreBind writes the pod's ALIYUN_COM_GPU_MEM_* annotations before the Binding; printed
        # against SchedulingWithExtendedResource's floor, the nearest upstream anchor.
        Workload("SchedulingGPUShare", 180, 5000, 0, 5000, node_fn=node_gpushare, measure_fn=pod_gpushare,
                 measure_ns="test", upstream="SchedulingWithExtendedResource's, 5000 nodes x 8 GPUs x 16 GiB"),
        Workload("Preemption", 570, 5000, 20000, 5000,
                 init_fn=lambda i: pod_low_priority(), churn_fn=lambda i: pod_high_priority(),
                 priority_classes=[{"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass",
                                    "metadata": {"name": "perf-high"}, "value": 10}],
                 upstream="PreemptionAsync 5000Nodes"),
    ]


# -- driving the API ----------------------------------------------------------------------------


async def create_all(pool: Any, gvr: tuple[str, str, str], ns: str | None,
                     objs: Callable[[int], dict[str, Any]], count: int, prefix: str, start: int = 0,
                     concurrency: int = CONCURRENCY) -> float:
    """Create ``count`` objects with ``concurrency`` requests in flight on the client's lean pool; returns
    seconds taken. Bodies are built before the clock starts, as scheduler_perf's client prepares its pods."""
    from pyk8s.client import resource_path

    path = resource_path(gvr, ns)
    bodies = []
    for i in range(start, start + count):
        obj = objs(i)
        obj["metadata"].setdefault("name", f"{prefix}-{i:06d}")
        bodies.append(orjson.dumps(obj))
    it = iter(bodies)
    await warm_up(pool, concurrency)

    async def worker() -> None:
        for body in it:
            for attempt in range(5):
                status, reply = await pool.request("POST", path, body, "application/json", 60)
                if status in (201, 409):  # 409: a retried create that had landed
                    break
                if attempt == 4 or status < 500 and status != 429:
                    raise RuntimeError(f"create failed: {status} {reply[:300]!r}")
                await asyncio.sleep(0.2 * (attempt + 1))

    t = time.perf_counter()
    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return time.perf_counter() - t


class BoundCounter:
    """Watch a namespace's pods; record when each becomes bound (what an informer would see)."""

    def __init__(self, client: Any, ns: str) -> None:
        self.client = client
        self.ns = ns
        self.bound: set[str] = set()
        self.times: list[float] = []
        self._task: asyncio.Task[None] | None = None
        self.ready = asyncio.Event()

    async def start(self) -> None:
        lst = await self.client.list(PODS, self.ns, limit=1)
        rv = lst["metadata"]["resourceVersion"]
        self._task = asyncio.create_task(self._run(rv))
        self.ready.set()

    async def _run(self, rv: str) -> None:
        while True:
            try:
                async for ev in self.client.watch(PODS, self.ns, rv, timeout_seconds=3600):
                    obj = ev.get("object") or {}
                    md = obj.get("metadata") or {}
                    rv = md.get("resourceVersion") or rv
                    if ev.get("type") in ("ADDED", "MODIFIED") and (obj.get("spec") or {}).get("nodeName"):
                        name = md.get("name")
                        if name not in self.bound:
                            self.bound.add(name)
                            self.times.append(time.monotonic())
            except asyncio.CancelledError:
                raise
            except Exception:
                await asyncio.sleep(0.1)

    async def wait(self, n: int, timeout: float) -> bool:
        deadline = time.monotonic() + timeout
        while len(self.bound) < n:
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(0.05)
        return True

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass


def throughput(times: list[float]) -> tuple[float, float]:
    """(upstream-style Average of 1 s samples, overall pods/s from first to last binding)."""
    if len(times) < 2:
        return 0.0, 0.0
    t0 = times[0]
    overall = (len(times) - 1) / max(times[-1] - t0, 1e-9)
    # Samples are taken every second from the first bound pod on; the first is skipped, as
    # upstream's collector does. A trailing partial second counts as its own sample.
    samples: list[float] = []
    edge = t0 + 1.0
    last_count = sum(1 for t in times if t <= edge)  # the skipped first sample
    idx = last_count
    while idx < len(times):
        edge += 1.0
        n = last_count
        while idx < len(times) and times[idx] <= edge:
            idx += 1
            n += 1
        width = 1.0 if idx < len(times) else max(times[-1] - (edge - 1.0), 1e-3)
        samples.append((n - last_count) / width)
        last_count = n
    avg = sum(samples) / len(samples) if samples else overall
    return avg, overall


async def ensure_namespace(client: Any, ns: str) -> None:
    from pyk8s.api.errors import StatusError

    for gvr, body in ((("", "v1", "namespaces"), {"metadata": {"name": ns}}),
                      (("", "v1", "serviceaccounts"), {"metadata": {"name": "default", "namespace": ns}})):
        try:
            await client.create(gvr, body, ns if gvr[2] == "serviceaccounts" else None)
        except StatusError as e:
            if e.code != 409:
                raise


def cpu_seconds(pid: int, thread: int | None = None) -> float:
    """user+system CPU seconds of a process (or one of its threads) from /proc."""
    path = f"/proc/{pid}/task/{thread}/stat" if thread is not None else f"/proc/{pid}/stat"
    try:
        with open(path) as f:
            fields = f.read().rpartition(")")[2].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except OSError:
        return 0.0


def load_average() -> float:
    try:
        return os.getloadavg()[0]
    except OSError:
        return float("nan")


async def run_workload(w: Workload, kubeconfig: str, scale: float, pids: dict[str, int] | None = None) -> dict[str, Any]:
    from pyk8s.api.errors import StatusError
    from pyk8s.client import Client
    from pyk8s.client.kubeconfig import load_kubeconfig

    client = Client.from_kubeconfig(kubeconfig, pool_size=CONCURRENCY + 8)
    kc = load_kubeconfig(kubeconfig)
    from pyk8s.client.http1 import ConnectionPool

    pool = ConnectionPool(kc.server, kc.ssl_client_context(), {"Accept": "application/json"}, CONCURRENCY)
    watch_client = Client.from_kubeconfig(kubeconfig)
    nodes = max(1, int(w.nodes * scale))
    init = int(w.init_pods * scale)
    measure = max(10, int(w.measure_pods * scale))
    try:
        for pc in w.priority_classes:
            try:
                await client.create(("scheduling.k8s.io", "v1", "priorityclasses"), pc)
            except StatusError as e:
                if e.code != 409:
                    raise
        for ns in {w.init_ns, w.measure_ns, "churn"}:
            await ensure_namespace(client, ns)
        t_nodes = await create_all(pool, NODES, None, w.node_fn, nodes, "node")
        init_rate = 0.0
        if init:
            ctr = BoundCounter(watch_client, w.init_ns)
            await ctr.start()
            t0 = time.perf_counter()
            await create_all(pool, PODS, w.init_ns, w.init_fn, init, "init")
            if not await ctr.wait(init, max(120.0, init / 20)):
                raise RuntimeError(f"only {len(ctr.bound)}/{init} init pods bound")
            init_rate = init / (time.perf_counter() - t0)
            await ctr.stop()
        # Keep the measured phase within the time limit, judged by the init phase's rate.
        note = ""
        if init_rate and measure / (init_rate * 0.7) > TIME_LIMIT:
            new = max(200, int(init_rate * 0.7 * TIME_LIMIT))
            if new < measure:
                note = f"measured pods cut {measure} -> {new} (would take > {TIME_LIMIT:.0f}s)"
                measure = new
        ctr = BoundCounter(watch_client, w.measure_ns)
        await ctr.start()
        churn_task = None
        if w.churn_fn is not None:
            churn_fn = w.churn_fn

            async def churn() -> None:
                i = 0
                while True:
                    try:
                        await client.create(PODS, {**churn_fn(i), "metadata": {"name": f"churn-{i:06d}"}}, "churn")
                    except StatusError:
                        pass
                    i += 1
                    await asyncio.sleep(w.churn_interval)

            churn_task = asyncio.create_task(churn())
        pids = pids or {}
        if os.environ.get("PYK8S_PROFILE"):  # the profiles start afresh with the measured phase
            for k, v in pids.items():
                if k != "bench":
                    os.kill(v, signal.SIGUSR1)
        cpu0 = {k: cpu_seconds(v) for k, v in pids.items()}
        main0 = cpu_seconds(pids["server"], pids["server"]) if "server" in pids else 0.0
        t0 = time.perf_counter()
        t_create = await create_all(pool, PODS, w.measure_ns, w.measure_fn, measure, "pod")
        ok = await ctr.wait(measure, max(TIME_LIMIT * 2, measure / 5))
        elapsed = time.perf_counter() - t0
        cpu = {k: (cpu_seconds(v) - cpu0[k]) * 1000 / measure for k, v in pids.items()}
        if "server" in pids:
            cpu["server main thread"] = (cpu_seconds(pids["server"], pids["server"]) - main0) * 1000 / measure
        if churn_task is not None:
            churn_task.cancel()
        await ctr.stop()
        avg, overall = throughput(ctr.times)
        return {"nodes": nodes, "init": init, "measure": measure, "bound": len(ctr.bound), "ok": ok,
                "avg": avg, "overall": overall, "elapsed": elapsed, "create_rate": measure / t_create,
                "node_create_rate": nodes / t_nodes, "init_rate": init_rate, "note": note, "cpu_ms": cpu,
                "load": load_average()}
    finally:
        await client.close()
        await watch_client.close()
        pool.close()


def run_one(w: Workload, scale: float, mode: str) -> dict[str, Any]:
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="bench-sched-")
    extra = ["--disable", "controller-manager", "--api-workers", os.environ.get("BENCH_API_WORKERS", "1")]
    if mode == "inprocess":
        extra += ["--in-process-scheduler"]
    c = Cluster(d, extra)
    c.start(timeout=60)
    try:
        assert c.proc is not None
        pids = {"server": c.proc.pid, "bench": os.getpid()}
        for n, pid in enumerate(api_worker_pids(c.proc.pid), 1):
            pids[f"api worker {n}"] = pid
        if mode != "inprocess":
            deadline = time.monotonic() + 30
            while not scheduler_pids(c.proc.pid) and time.monotonic() < deadline:
                time.sleep(0.05)
            pids["scheduler"] = scheduler_pids(c.proc.pid)[0]
        return asyncio.run(run_workload(w, c.kubeconfig, scale, pids))
    finally:
        c.stop()
        shutil.rmtree(d, ignore_errors=True)  # a 5,000-node run leaves ~500 MB


def main() -> None:
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    wanted = [s for s in os.environ.get("BENCH_SCHED", "").split(",") if s]
    scale = float(os.environ.get("BENCH_SCHED_SCALE", "1"))
    mode = os.environ.get("BENCH_SCHED_MODE", "process")
    print(f"  scheduler_perf workloads through the API server ({os.cpu_count()} cores; scheduler "
          f"{'in the server process' if mode == 'inprocess' else 'as its own process, as pyk8s server starts it'}; "
          f"{os.environ.get('BENCH_API_WORKERS', '1')} API process(es), BENCH_API_WORKERS; "
          "pods/s = upstream throughputCollector Average; anchor = upstream CI floor)")
    for w in workloads():
        if wanted and not any(w.name.lower().startswith(x.lower()) for x in wanted):
            continue
        try:
            r = run_one(w, scale, mode)
        except Exception as e:
            print(f"  {w.name}: failed: {e}")
            continue
        size = f"{r['nodes']}n/{r['init']}i/{r['measure']}m"
        row(f"{w.name} {size}", r["avg"], "pods/s", w.floor, f"upstream floor, {w.upstream}")
        extra = (f"overall {r['overall']:.0f}/s over {r['elapsed']:.1f}s; pod creates {r['create_rate']:.0f}/s; "
                 f"nodes {r['node_create_rate']:.0f}/s")
        if r["init_rate"]:
            extra += f"; init phase {r['init_rate']:.0f}/s"
        cpu_ms = r["cpu_ms"]
        cpu = ", ".join(f"{k} {v:.2f}" for k, v in cpu_ms.items())
        extra += f"\n      CPU ms per measured pod: {cpu}; load average {r['load']:.1f} on {os.cpu_count()} cores"
        # The busiest single thread bounds throughput when the machine is otherwise idle (GIL).
        busiest = max(cpu_ms.get("server main thread", 0.0), cpu_ms.get("scheduler", 0.0))
        if busiest:
            extra += f"\n      CPU-bound ceiling (busiest thread alone on a core): {1000 / busiest:.0f} pods/s"
        if not r["ok"]:
            extra += f"; only {r['bound']}/{r['measure']} bound in time"
        print(f"      {extra}")
        full = (w.nodes, w.init_pods, w.measure_pods)
        if scale != 1.0 or r["note"] or (r["nodes"], r["init"]) != full[:2]:
            print(f"      smaller than upstream ({w.nodes}n/{w.init_pods}i/{w.measure_pods}m): "
                  f"{r['note'] or f'BENCH_SCHED_SCALE={scale}'}")


if __name__ == "__main__":
    main()
