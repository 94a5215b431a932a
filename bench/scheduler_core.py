"""Scheduler core micro-benchmark: 10,000 identical pods onto 5,000 nodes, in-process, no API.

Each pod goes through the default profile's full cycle (PreFilter, Filter, PreScore, Score,
NormalizeScore, selectHost) and is assumed in the cache, as kube-scheduler's scheduleOne does
before binding. The anchor is a plain-Python loop doing only the resource-fit check and
LeastAllocated score for one pod over the same nodes (what a non-vectorised scheduler pays at
minimum); the figure that counts is the ratio.

    .venv/bin/python bench/scheduler_core.py [--nodes 5000] [--pods 10000] [--kind plain|spread|anti]
"""

from __future__ import annotations

import argparse
import time

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import Handle


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


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--nodes", type=int, default=5000)
    ap.add_argument("--pods", type=int, default=10000)
    ap.add_argument("--kind", choices=("plain", "spread", "anti"), default="plain",
                    help="plain pods, a zone spread constraint, or hostname anti-affinity")
    args = ap.parse_args()

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
