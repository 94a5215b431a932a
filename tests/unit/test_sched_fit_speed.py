"""NodeResourcesFit's filter (failing checks packed into a byte, distinct patterns found by
counting) against a per-node brute force, with few and with more than eight checked resources;
and LeastAllocated's clamped form against the masked form it replaced."""

from __future__ import annotations

import random

import numpy as np
import pytest

from pyk8s.scheduler.framework import Code
from pyk8s.scheduler.plugins import resource_allocation as ra
from pyk8s.scheduler.plugins.node_resources_fit import NodeResourcesFit
from pyk8s.scheduler.resources import parse_quantity

from .scheduler._fixtures import cluster, node, one_plugin, pod, run_filter

EXTENDED = [f"example.com/r{i}" for i in range(10)]


def brute_force(nodes: list[dict], bound: list[dict], p: dict) -> dict[str, tuple[str, ...] | None]:
    want = {r: parse_quantity(v) for r, v in p["spec"]["containers"][0]["resources"]["requests"].items()}
    order = [r for r in ("cpu", "memory") if want.get(r)] + sorted(r for r in want if r not in ("cpu", "memory") and want[r])
    out: dict[str, tuple[str, ...] | None] = {}
    for n in nodes:
        name = n["metadata"]["name"]
        alloc = {r: parse_quantity(v) for r, v in n["status"]["allocatable"].items()}
        here = [q for q in bound if q["spec"]["nodeName"] == name]
        used = {r: sum(parse_quantity(q["spec"]["containers"][0]["resources"]["requests"].get(r, "0")) for q in here)
                for r in order}
        reasons = ["Too many pods"] if len(here) + 1 > alloc["pods"] else []
        reasons += [f"Insufficient {r}" for r in order if want[r] > alloc.get(r, 0) - used[r]]
        out[name] = tuple(reasons) or None
    return out


@pytest.mark.parametrize("seed", range(40))
@pytest.mark.parametrize("wide", [False, True])
def test_filter_matches_brute_force(seed: int, wide: bool) -> None:
    rng = random.Random(seed)
    resources = EXTENDED if wide else EXTENDED[:2]
    nodes = [node(f"n{i:02d}", cpu=rng.choice(["1", "2"]), memory=rng.choice(["1Gi", "2Gi"]), pods=rng.choice(["2", "3", "110"]),
                  extra={r: str(rng.randint(0, 2)) for r in resources if rng.random() < 0.7})
             for i in range(rng.randint(5, 60))]
    bound = [pod(f"b{i}", node_name=rng.choice(nodes)["metadata"]["name"],
                 requests={"cpu": rng.choice(["300m", "700m"]), "memory": rng.choice(["256Mi", "900Mi"]),
                           **{r: "1" for r in resources if rng.random() < 0.2}})
             for i in range(len(nodes) * 2)]
    prof = one_plugin(NodeResourcesFit, cluster(nodes, bound))
    for _ in range(5):
        p = pod("p", requests={"cpu": rng.choice(["100m", "900m"]), "memory": rng.choice(["128Mi", "1Gi"]),
                               **{r: "1" for r in resources if rng.random() < 0.5}})
        out, _, _ = run_filter(prof, p)
        assert {k: (None if s is None else s.reasons) for k, s in out.items()} == brute_force(nodes, bound, p)
        assert all(s is None or s.code == Code.UNSCHEDULABLE for s in out.values())


def least_allocated_reference(allocs: list[np.ndarray], reqs: list[np.ndarray], weights: list[int]) -> np.ndarray:
    num = np.zeros(allocs[0].shape, dtype=np.int64)
    for a, u, w in zip(allocs, reqs, weights, strict=True):
        s = (a - u) * 100 // a
        s[u > a] = 0
        num += s * w
    return num // sum(weights)


@pytest.mark.parametrize("seed", range(20))
def test_least_allocated_matches_reference(seed: int) -> None:
    g = np.random.default_rng(seed)
    allocs = [g.integers(1, 10**12, 500) for _ in range(3)]
    reqs = [a * g.uniform(0, 1.5, 500).astype(np.int64) // 1 + g.integers(0, 3, 500) for a in allocs]
    weights = [int(w) for w in g.integers(1, 4, 3)]
    assert np.array_equal(ra.least_allocated(allocs, reqs, weights), least_allocated_reference(allocs, reqs, weights))


@pytest.mark.parametrize("seed", range(30))
def test_default_cpu_memory_scores_match_the_general_path(seed: int) -> None:
    """LeastAllocated and BalancedAllocation on the default cpu+memory pair (read as 2 x rows
    arrays) give the general per-resource path's integers, overcommitted nodes included."""
    from pyk8s.scheduler.framework import CycleState
    from pyk8s.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation
    from pyk8s.scheduler.podinfo import pod_info

    rng = random.Random(seed)
    nodes = [node(f"n{i:02d}", cpu=rng.choice(["1", "2", "3500m"]), memory=rng.choice(["1Gi", "3Gi", "5000Mi"]))
             for i in range(rng.randint(3, 40))]
    bound = [pod(f"b{i}", node_name=rng.choice(nodes)["metadata"]["name"],
                 requests=rng.choice([None, {"cpu": "700m"}, {"cpu": "1300m", "memory": "1500Mi"}]))
             for i in range(len(nodes) * 3)]
    h = cluster(nodes, bound)
    table = h.cache.table
    rows = np.array(sorted(rng.sample(range(table.n), rng.randint(1, table.n))), dtype=np.int64)
    fit = NodeResourcesFit({}, h)
    bal = NodeResourcesBalancedAllocation({}, h)
    for req in (None, {"cpu": "100m"}, {"cpu": "900m", "memory": "2Gi"}, {"memory": "64Mi"}):
        p = pod_info(pod("p", requests=req))
        want_fit = ra.least_allocated(*ra.gather(table, rows, p, ra.DEFAULT_RESOURCES, False), [1, 1])
        want_bal = ra.balanced(*ra.gather(table, rows, p, ra.DEFAULT_RESOURCES, True))
        assert fit.score(CycleState(), p, table, rows).tolist() == want_fit.tolist()
        assert bal.score(CycleState(), p, table, rows).tolist() == want_bal.tolist()
