"""DefaultPreemption's arithmetic victim selection agrees with re-running the filters per pod."""

from __future__ import annotations

import random

import numpy as np

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import CycleState
from pyk8s.scheduler.plugins.default_preemption import _pdbs
from pyk8s.scheduler.podinfo import pod_info

from ._fixtures import cluster, node, pod


def _victims(r):
    return None if r is None else (sorted(p.name for p in r[0]), r[1], r[2].code)


def test_fast_path_matches_filters_on_random_nodes():
    rng = random.Random(7)
    compared = 0
    for trial in range(40):
        nodes = [node(f"n{i}", cpu=str(rng.choice([2, 4, 8])), memory=f"{rng.choice([4, 8, 16])}Gi",
                      pods=str(rng.choice([3, 5, 110])), extra={"example.com/gpu": "2"} if i % 3 == 0 else None)
                 for i in range(6)]
        pods = []
        for i in range(rng.randint(6, 24)):
            req = {"cpu": f"{rng.choice([100, 500, 900, 1500])}m", "memory": f"{rng.choice([256, 1024, 3072])}Mi"}
            n = rng.randrange(6)
            if n % 3 == 0 and rng.random() < 0.3:
                req["example.com/gpu"] = "1"
            pods.append(pod(f"p{trial}-{i}", node_name=f"n{n}", requests=req, priority=rng.choice([0, 5, 10, 50]),
                            labels={"app": rng.choice(["a", "b"])}))
        pdb = {"metadata": {"namespace": "default", "name": "a"}, "spec": {"selector": {"matchLabels": {"app": "a"}}},
               "status": {"disruptionsAllowed": rng.randint(0, 2)}}
        h = cluster(nodes, pods)
        h.pdbs = lambda pdb=pdb: [pdb]
        prof = default_profile(h)
        pl = prof.plugins["DefaultPreemption"]
        incoming = {"cpu": f"{rng.choice([1, 2, 3])}", "memory": "1Gi"}
        if rng.random() < 0.3:
            incoming["example.com/gpu"] = "1"
        p = pod_info(pod(f"hi{trial}", requests=incoming, priority=rng.choice([10, 100])))
        state = CycleState()
        table = h.cache.table
        state.table = table
        prof.run_pre_filter(state, p, table)
        fit = pl._resources_only(state, p)
        assert fit is not None
        before = (table.npods.copy(), table.req.dense.copy())
        for row in range(table.n):
            fast = pl._select_victims_by_requests(pl._prepare_requests(fit, p, table), p, table, row,
                                                  _pdbs(h.pdbs()))
            slow = pl.select_victims_on_node(state.clone(), p, table, row, _pdbs(h.pdbs()))
            if fast is None:
                assert not slow[2].is_success() or not slow[0], (trial, row, slow)
            else:
                assert _victims(fast) == _victims(slow), (trial, row)
                compared += 1
        assert np.array_equal(before[0], table.npods) and np.array_equal(before[1], table.req.dense)
    assert compared > 60  # the comparison is not vacuous


def test_fast_path_not_used_when_other_filters_see_pods():
    h = cluster([node("n1", cpu="1")], [pod("low", node_name="n1", requests={"cpu": "1"}, priority=0,
                                             labels={"app": "db"})])
    prof = default_profile(h)
    pl = prof.plugins["DefaultPreemption"]
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    for p in (pod_info(pod("hi", requests={"cpu": "1"}, priority=10, affinity=anti)),
              pod_info(pod("hp", requests={"cpu": "1"}, priority=10, ports=[{"containerPort": 80, "hostPort": 80}]))):
        state = CycleState()
        state.table = h.cache.table
        prof.run_pre_filter(state, p, h.cache.table)
        assert pl._resources_only(state, p) is None
    # and the whole preemption still works through the filters
    r = prof.schedule_one(pod("hi2", requests={"cpu": "1"}, priority=10, affinity=anti))
    assert r.post_filter is not None and [v.name for v in r.post_filter.victims] == ["low"]
