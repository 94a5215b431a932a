"""Scheduler core micro-benchmark: 10,000 identical pods onto 5,000 nodes, in-process, no API.

Each pod goes through the default profile's full cycle (PreFilter, Filter, PreScore, Score,
NormalizeScore, selectHost) and is assumed in the cache, as kube-scheduler's scheduleOne does
before binding. The anchor is a plain-Python loop doing only the resource-fit check and
LeastAllocated score for one pod over the same nodes (what a non-vectorised scheduler pays at
minimum); the figure that counts is the ratio.

    .venv/bin/python bench/scheduler_core.py [--nodes 5000] [--pods 10000] [--kind plain|spread|anti]

``--kind topology|preemption`` instead replays bench/scheduler.py's TopologySpreading or
PreemptionAsync workload through ``Scheduler`` (queue, nominator, preemption; informer events
applied at once, a fake clock) with a fixed seed, and prints a digest of every decision (node,
nomination, victims, message): equal digests before and after a change mean equal decisions.
"""

from __future__ import annotations

import argparse
import hashlib
import random
import time
from typing import Any

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import Handle
from pyk8s.scheduler.scheduler import Scheduler


def make_node(i: int) -> dict:
    name = f"node-{i:05d}"
    return {
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                              "topology.kubernetes.io/zone": f"zone-{i % 3}"}},
        "spec": {},
        "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"},
                   "capacity": {"cpu": "32", "memory": "128Gi", "pods": "110", "ephemeral-storage": "100Gi"}},
    }


def make_pod(i: int, kind: str = "plain") -> dict:
    spec: dict = {"schedulerName": "default-scheduler", "priority": 0,
                  "containers": [{"name": "c", "image": "nginx:1.25",
                                  "resources": {"requests": {"cpu": "100m", "memory": "128Mi"}}}]}
    web = {"matchLabels": {"app": "web"}}
    if kind == "spread":
        spec["topologySpreadConstraints"] = [{"maxSkew": 1, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule", "labelSelector": web}]
    elif kind == "anti":
        spec["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
            {"labelSelector": web, "topologyKey": "kubernetes.io/hostname"}]}}
    return {"metadata": {"name": f"web-{i}", "namespace": "default", "uid": f"uid-{i}", "labels": {"app": "web"}},
            "spec": spec}


def anchor(nodes: list[dict], pods: int) -> float:
    """Seconds per pod for a naive per-node Python loop (fit + least-allocated only)."""
    cap = [(32000, 128 * 2**30) for _ in nodes]
    used = [[0, 0] for _ in nodes]
    start = time.perf_counter()
    for _ in range(pods):
        best, best_score = -1, -1
        for j, (c, m) in enumerate(cap):
            uc, um = used[j]
            if uc + 100 > c or um + 128 * 2**20 > m:
                continue
            s = ((c - uc - 100) * 100 // c + (m - um - 128 * 2**20) * 100 // m) // 2
            if s > best_score:
                best, best_score = j, s
        used[best][0] += 100
        used[best][1] += 128 * 2**20
    return (time.perf_counter() - start) / pods


def _perf_node(i: int) -> dict[str, Any]:
    """bench/scheduler.py's node template (4 cpu, 32Gi, 110 pods), zones moon-1..3."""
    name = f"scheduler-perf-{i:05d}"
    return {"metadata": {"name": name, "labels": {"kubernetes.io/hostname": name,
                                                  "topology.kubernetes.io/zone": f"moon-{i % 3 + 1}"}},
            "spec": {}, "status": {"capacity": {"pods": "110", "cpu": "4", "memory": "32Gi"},
                                   "allocatable": {"pods": "110", "cpu": "4", "memory": "32Gi"}}}


def _perf_pod(ns: str, name: str, cpu: str = "100m", priority: int = 0, node: str = "",
              spread: bool = False) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": "500Mi"}
    spec: dict[str, Any] = {"schedulerName": "default-scheduler", "priority": priority,
                            "containers": [{"name": "pause", "image": "registry.k8s.io/pause:3.10",
                                            "ports": [{"containerPort": 80}],
                                            "resources": {"limits": res, "requests": res}}]}
    labels = {}
    if spread:
        labels = {"color": "blue"}
        spec["topologySpreadConstraints"] = [{"maxSkew": 5, "topologyKey": "topology.kubernetes.io/zone",
                                              "whenUnsatisfiable": "DoNotSchedule",
                                              "labelSelector": {"matchLabels": {"color": "blue"}}}]
    if node:
        spec["nodeName"] = node
    return {"metadata": {"name": name, "namespace": ns, "uid": f"{ns}-{name}", "labels": labels,
                         "creationTimestamp": "2025-01-01T00:00:00Z"}, "spec": spec, "status": {}}


def replay(kind: str, nodes: int, measured: int, seed: int = 1) -> tuple[float, str, int]:
    """Replay a scheduler_perf workload; returns (CPU seconds in the scheduler, decision digest, decisions)."""
    now = [0.0]
    s = Scheduler(handle=Handle(rng=random.Random(seed)), clock=lambda: now[0])
    for i in range(nodes):
        s.on_node_add(_perf_node(i))
    # Init pods placed as the scheduler would spread them (one, or four 900m pods, per node).
    per_node = 4 if kind == "preemption" else 1
    for i in range(nodes * per_node):
        s.on_pod_add(_perf_pod("init", f"init-{i:06d}", "900m" if kind == "preemption" else "100m",
                               node=f"scheduler-perf-{i % nodes:05d}"))
    live: dict[str, dict[str, Any]] = {}
    log: list[tuple[Any, ...]] = []
    busy = 0.0
    created = churn = 0
    while created < measured or len(s.queue):
        # Pods arrive in small batches (the bench creates them concurrently); a preemptor every 100.
        for _ in range(min(50, measured - created)):
            pod = _perf_pod("measure", f"pod-{created:06d}", spread=kind == "topology")
            created += 1
            live[pod["metadata"]["uid"]] = pod
            s.on_pod_add(pod)
            if kind == "preemption" and created % 100 == 0:
                pod = _perf_pod("churn", f"churn-{churn:06d}", "3000m", priority=10)
                churn += 1
                live[pod["metadata"]["uid"]] = pod
                s.on_pod_add(pod)
        for _ in range(200):
            now[0] += 0.002
            s.queue.flush()
            t0 = time.process_time()
            d = s.schedule_next()
            busy += time.process_time() - t0
            if d is None:
                if not len(s.queue) or s.queue.pop_from_backoff_q is False:
                    break
                continue
            old = live[d.pod.pod["metadata"]["uid"]]
            log.append((d.pod.name, d.node, d.nominated_node, sorted(v.name for v in d.victims), d.message))
            t0 = time.process_time()
            if d.node is not None:
                s.binding_done(d, True)
                new = {**old, "spec": {**old["spec"], "nodeName": d.node}}
                live[new["metadata"]["uid"]] = new
                s.on_pod_update(old, new)
            else:
                if d.nominated_node is not None:
                    new = {**old, "status": {"nominatedNodeName": d.nominated_node or None}}
                    live[new["metadata"]["uid"]] = new
                    s.on_pod_update(old, new)
                for v in d.victims:  # gracePeriod 0: the victims are gone at once
                    s.on_pod_delete(v.pod)
            busy += time.process_time() - t0
        if created >= measured and not s.queue._active_items and not s.queue._backoff_items:
            break  # only unschedulable pods left
    digest = hashlib.sha256(repr(log).encode()).hexdigest()[:16]
    return busy, digest, len(log)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--kind", choices=("plain", "spread", "anti", "topology", "preemption"), default="plain",
                    help="plain pods, a zone spread constraint, hostname anti-affinity; or a workload replay")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    if args.kind in ("topology", "preemption"):
        busy, digest, n = replay(args.kind, args.nodes, args.pods, args.seed)
        print(f"[{args.kind}] {args.nodes} nodes, {args.pods} measured pods: {n} decisions, "
              f"{busy / n * 1e6:.0f} us CPU/decision in the scheduler; digest {digest}")
        return

    handle = Handle()
    nodes = [make_node(i) for i in range(args.nodes)]
    t0 = time.perf_counter()
    for n in nodes:
        handle.cache.add_node(n)
    t_nodes = time.perf_counter() - t0
    profile = default_profile(handle)
    pods = [make_pod(i, args.kind) for i in range(args.pods)]

    t0 = time.perf_counter()
    placed = 0
    for pod in pods:
        r = profile.schedule_one(pod)
        if r.suggested_host is not None:
            handle.cache.assume_pod(pod, r.suggested_host)
            handle.cache.finish_binding(pod)
            placed += 1
    elapsed = time.perf_counter() - t0
    per_pod = elapsed / args.pods
    base = anchor(nodes, max(20, args.pods // 500))

    busiest = int(handle.cache.table.npods[: handle.cache.table.n].max())
    print(f"nodes added: {args.nodes} in {t_nodes * 1e3:.0f} ms")
    print(f"[{args.kind}] scheduled {placed}/{args.pods} pods on {args.nodes} nodes in {elapsed:.2f} s "
          f"= {args.pods / elapsed:,.0f} pods/s ({per_pod * 1e6:.0f} us/pod); max pods on one node: {busiest}")
    print(f"anchor (naive Python fit+score loop): {base * 1e6:.0f} us/pod")
    print(f"ratio anchor/ours: {base / per_pod:.1f}x")


if __name__ == "__main__":
    main()
