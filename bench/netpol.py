"""Network policy sync: whole-table writes against one-change syncs, into a real kernel table.

A cluster of --pods pods (20 per namespace, labels app/tier) and --policies policies (one per
namespace: default deny plus allow from the same tier and from a labelled namespace), a third of
the pods on this node. Measured in a private network namespace: computing the desired state,
computing and writing the whole table (`render_full`, the anchor: what a flush-and-rebuild
controller pays on every change), and one sync after one pod changes its label (`render_diff`: what ours pays). The
floor is one `nft -f` of an empty transaction (a process start).

    .venv/bin/python -m bench netpol        (root; nft)
    .venv/bin/python -m bench.netpol --pods 20000 --policies 1000
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import time
from typing import Any

from pyk8s.netpol.nftables import render_diff, render_full, run_nft
from pyk8s.netpol.policy import compute_ruleset, pod_info

NODE = "bench-node"


def cluster(pods: int, policies: int) -> tuple[list[dict[str, Any]], list[dict[str, Any]], dict[str, dict[str, str]]]:
    nss = max(1, pods // 20)
    pod_objs = []
    for i in range(pods):
        ns = f"ns-{i % nss}"
        pod_objs.append({"metadata": {"namespace": ns, "name": f"p{i}", "labels": {"app": f"a{i % 7}",
                                                                                    "tier": f"t{i % 3}"}},
                         "spec": {"nodeName": NODE if i % 3 == 0 else "other",
                                  "containers": [{"name": "c", "ports": [{"name": "http", "containerPort": 8080}]}]},
                         "status": {"podIP": f"10.{100 + i // 65536}.{(i // 256) % 256}.{i % 256}", "phase": "Running"}})
    pols = []
    for j in range(policies):
        ns = f"ns-{j % nss}"
        pols.append({"metadata": {"namespace": ns, "name": f"pol{j}"}, "spec": {
            "podSelector": {"matchLabels": {"tier": f"t{j % 3}"}},
            "ingress": [{"from": [{"podSelector": {"matchLabels": {"tier": f"t{j % 3}"}}},
                                  {"namespaceSelector": {"matchLabels": {"role": "monitoring"}}}],
                         "ports": [{"port": "http"}, {"port": 9100}]}]}})
    labels = {f"ns-{k}": {"role": "monitoring"} if k == 0 else {} for k in range(nss)}
    return pod_objs, pols, labels


def _best(fn: Any, n: int = 5) -> float:
    best = float("inf")
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


async def _run(args: argparse.Namespace) -> None:
    netns = f"netpol-bench-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", netns], check=True)
    nft = ("nsenter", f"--net=/run/netns/{netns}", "nft")
    try:
        pods, pols, labels = cluster(args.pods, args.policies)
        infos = [pod_info(p) for p in pods]  # the controller keeps these per pod, updated on its events
        t_compute = _best(lambda: compute_ruleset(pols, infos, labels, NODE), 3)
        rs = compute_ruleset(pols, infos, labels, NODE)
        full = render_full("bench", rs)
        floor, t_full = float("inf"), float("inf")
        for _ in range(3):
            t0 = time.perf_counter()
            await run_nft("", nft)
            floor = min(floor, time.perf_counter() - t0)
            t0 = time.perf_counter()
            full = render_full("bench", compute_ruleset(pols, infos, labels, NODE))
            await run_nft(full, nft)
            t_full = min(t_full, time.perf_counter() - t0)
        t_one = float("inf")
        for k in range(3):
            pods[3 * k]["metadata"]["labels"] = {**pods[3 * k]["metadata"]["labels"], "tier": "moved"}
            t0 = time.perf_counter()
            infos[3 * k] = pod_info(pods[3 * k])
            new = compute_ruleset(pols, infos, labels, NODE)
            script = render_diff("bench", rs, new)
            await run_nft(script, nft)
            t_one = min(t_one, time.perf_counter() - t0)
            rs = new
        elements = sum(len(s.elements) for s in rs.sets.values())
        print(f"{args.pods} pods, {args.policies} policies: {len(rs.sets)} sets ({elements} elements), "
              f"{len(rs.chains)} chains, {len(rs.ingress)} isolated local pods")
        print(f"  compute desired state      {t_compute * 1000:8.1f} ms")
        print(f"  whole table (anchor)       {t_full * 1000:8.1f} ms  ({len(full.splitlines())} commands)")
        print(f"  one pod relabelled (diff)  {t_one * 1000:8.1f} ms  (incl. compute; {len(script.splitlines())} "
              f"commands)  ratio {t_one / t_full:.2f} of the anchor")
        print(f"  nft -f floor (empty)       {floor * 1000:8.1f} ms")
    finally:
        subprocess.run(["ip", "netns", "del", netns], check=False)


def main(argv: list[str] | None = None) -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--pods", type=int, default=5000)
    p.add_argument("--policies", type=int, default=250)
    args = p.parse_args(argv or [])
    if os.geteuid() != 0:
        print("netpol: needs root (a network namespace and nft)")
        return
    asyncio.run(_run(args))


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
