"""Preemption's faster paths pick what the plain ones pick: pick_one_node_for_preemption against
the criterion-by-criterion filtering it replaced, and whole dry runs with the request-arithmetic
victim selection against dry runs through the filters (random clusters with PDBs, nominated
pods, start times)."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import Code, CycleState, Diagnosis
from pyk8s.scheduler.plugins.default_preemption import (
    _MAX_INT32,
    Candidate,
    _pdbs,
    _start_time,
    pick_one_node_for_preemption,
)
from pyk8s.scheduler.podinfo import pod_info
from pyk8s.scheduler.queue import SchedulingQueue

from .scheduler._fixtures import cluster, node, pod

NOW = 1.7e9


def pick_reference(candidates: list[Candidate], now: float) -> Candidate | None:
    """The criteria applied one after the other over the surviving pool, as upstream writes them."""
    if not candidates:
        return None
    for c in candidates:
        if not c.victims:
            return c

    def earliest_of_highest(c: Candidate) -> float:
        top = max(v.priority for v in c.victims)
        return min(_start_time(v, now) for v in c.victims if v.priority == top)

    criteria = (
        lambda c: -c.num_pdb_violations,
        lambda c: -max(v.priority for v in c.victims),
        lambda c: -sum(v.priority + _MAX_INT32 + 1 for v in c.victims),
        lambda c: -len(c.victims),
        earliest_of_highest,
    )
    pool = list(candidates)
    for f in criteria:
        scores = [f(c) for c in pool]
        best = max(scores)
        pool = [c for c, s in zip(pool, scores, strict=True) if s == best]
        if len(pool) == 1:
            break
    return pool[0]


def _victim(rng: random.Random, i: int) -> Any:
    p = pod(f"v{i}", priority=rng.choice([-5, 0, 0, 3, 7]))
    if rng.random() < 0.6:
        p["status"] = {"startTime": f"2026-01-0{rng.randint(1, 3)}T00:00:00Z"}
    return pod_info(p)


@pytest.mark.parametrize("seed", range(300))
def test_pick_one_node_matches_reference(seed: int) -> None:
    rng = random.Random(seed)
    cands = [Candidate(f"n{i}", [_victim(rng, j) for j in range(rng.randint(1 if rng.random() < 0.95 else 0, 4))],
                       rng.choice([0, 0, 0, 1, 2])) for i in range(rng.randint(1, 12))]
    assert pick_one_node_for_preemption(cands, NOW) is pick_reference(cands, NOW)


def _random_cluster(rng: random.Random) -> tuple[Any, list[dict[str, Any]]]:
    nodes = [node(f"n{i:03d}", cpu=str(rng.choice([2, 4])), memory=f"{rng.choice([4, 8])}Gi", pods=str(rng.choice([4, 110])))
             for i in range(rng.choice([30, 130]))]
    pods = []
    for i in range(len(nodes) * 3):
        p = pod(f"b{i}", node_name=rng.choice(nodes)["metadata"]["name"], priority=rng.choice([0, 0, 5, 50]),
                requests={"cpu": f"{rng.choice([300, 900, 1500])}m", "memory": f"{rng.choice([256, 2048])}Mi"},
                labels={"app": rng.choice(["a", "b"])})
        if rng.random() < 0.5:
            p["status"] = {"startTime": f"2026-01-{rng.randint(10, 28)}T00:00:00Z"}
        pods.append(p)
    return cluster(nodes, pods), nodes


@pytest.mark.parametrize("seed", range(25))
def test_dry_run_fast_path_matches_filters(seed: int, monkeypatch: pytest.MonkeyPatch) -> None:
    rng = random.Random(seed)
    h, nodes = _random_cluster(rng)
    if rng.random() < 0.5:
        pdb = {"metadata": {"namespace": "default", "name": "a"}, "spec": {"selector": {"matchLabels": {"app": "a"}}},
               "status": {"disruptionsAllowed": rng.randint(0, 3)}}
        h.pdbs = lambda: [pdb]
    prof = default_profile(h)
    q = SchedulingQueue(prof)
    h.nominator = q
    for i in range(rng.randrange(4)):
        q.add_nominated_pod(pod_info(pod(f"nom{i}", requests={"cpu": "1"}, priority=rng.choice([0, 100]))),
                            rng.choice(nodes)["metadata"]["name"])
    pl = prof.plugins["DefaultPreemption"]
    table = h.cache.table
    found = 0
    for i in range(4):
        p = pod_info(pod(f"hi{i}", requests={"cpu": rng.choice(["1500m", "3"]), "memory": "1Gi"}, priority=rng.choice([10, 100])))
        state = CycleState()
        state.table = table
        _, st, _ = prof.run_pre_filter(state, p, table)
        diag = Diagnosis(table.names, table.n)
        prof._filter_rows(state, p, table, np.arange(table.n), diag)
        rows = diag.rows_with_code(Code.UNSCHEDULABLE)
        if rows.size == 0:
            continue
        offset, num = rng.randrange(rows.size), rng.choice([5, rows.size])
        pdbs = _pdbs(h.pdbs())
        fast, d_fast = pl.dry_run_preemption(state, p, table, rows, pdbs, offset, num)
        with monkeypatch.context() as m:
            m.setattr(type(pl), "_resources_only", lambda self, state, pod: None)
            slow, d_slow = pl.dry_run_preemption(state, p, table, rows, pdbs, offset, num)

        def summary(cs: list[Candidate]) -> list[tuple[str, list[str], int]]:
            return [(c.node, [v.name for v in c.victims], c.num_pdb_violations) for c in cs]

        assert summary(fast) == summary(slow)
        found += len(fast)
        # nodes where preemption cannot help go through the filters either way: same statuses
        assert {k: v.reasons for k, v in d_fast.node_to_status().items()} == {
            k: v.reasons for k, v in d_slow.node_to_status().items()}
        best_fast, best_slow = pick_one_node_for_preemption(fast, NOW), pick_one_node_for_preemption(slow, NOW)
        assert (best_fast and best_fast.node) == (best_slow and best_slow.node)
    assert found  # the comparison is not vacuous
