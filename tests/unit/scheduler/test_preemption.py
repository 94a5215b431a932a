"""DefaultPreemption: eligibility, candidates, victims (reprieve, PDBs) and node choice."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.plugins.default_preemption import (
    Candidate,
    _pdbs,
    filter_pods_with_pdb_violation,
    pick_one_node_for_preemption,
)
from pyk8s.scheduler.podinfo import pod_info
from pyk8s.scheduler.queue import SchedulingQueue

from ._fixtures import cluster, node, pod


def _names(pods):
    return sorted(p.name for p in pods)


def _pf(r):
    assert r.node is None
    return r.post_filter


def test_preempts_lower_priority_pod():
    h = cluster([node("n1", cpu="1")], [pod("low", node_name="n1", requests={"cpu": "1"}, priority=0)])
    r = default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100))
    pf = _pf(r)
    assert pf.nominated_node_name == "n1" and _names(pf.victims) == ["low"]
    assert r.message == "0/1 nodes are available: 1 Insufficient cpu."  # success adds no preemption text
    assert h.cache.table.npods[0] == 1  # the dry run left the cache as it was


def test_minimal_victims_are_chosen():
    pods = [pod(f"low{i}", node_name="n1", requests={"cpu": "1"}, priority=i) for i in range(3)]
    h = cluster([node("n1", cpu="3")], pods)
    pf = _pf(default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert _names(pf.victims) == ["low0"]  # the least important one


def test_node_with_lowest_priority_victims_wins():
    h = cluster([node("a", cpu="1"), node("b", cpu="1")],
                [pod("pa", node_name="a", requests={"cpu": "1"}, priority=50),
                 pod("pb", node_name="b", requests={"cpu": "1"}, priority=10)])
    pf = _pf(default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert pf.nominated_node_name == "b"


def test_pdb_violations_are_avoided():
    h = cluster([node("a", cpu="1"), node("b", cpu="1")],
                [pod("pa", node_name="a", requests={"cpu": "1"}, priority=1, labels={"app": "db"}),
                 pod("pb", node_name="b", requests={"cpu": "1"}, priority=10, labels={"app": "web"})])
    pdb = {"metadata": {"namespace": "default", "name": "db"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
           "status": {"disruptionsAllowed": 0}}
    h.pdbs = lambda: [pdb]
    pf = _pf(default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert pf.nominated_node_name == "b"  # fewer PDB violations beats lower victim priority


def test_pdb_split_keeps_order_and_counts_budget():
    pods = [pod_info(pod(f"p{i}", labels={"app": "db"})) for i in range(3)]
    pdbs = _pdbs([{"metadata": {"namespace": "default"}, "spec": {"selector": {"matchLabels": {"app": "db"}}},
                   "status": {"disruptionsAllowed": 1, "disruptedPods": {pods[0].name: "t"}}}])
    violating, ok = filter_pods_with_pdb_violation(pods, pdbs)
    # p0 is already disrupted (not counted), p1 uses the budget, p2 violates
    assert [p.name for p in ok] == ["p0", "p1"] and [p.name for p in violating] == ["p2"]
    empty = _pdbs([{"metadata": {"namespace": "default"}, "spec": {"selector": {}}, "status": {}}])
    assert filter_pods_with_pdb_violation(pods, empty) == ([], pods)  # empty selector matches nothing


def test_pick_one_node_criteria_order():
    def c(node, *prios, pdb=0, start=None):
        vs = []
        for i, pr in enumerate(prios):
            p = pod(f"{node}-{i}", priority=pr)
            if start is not None:
                p["status"] = {"startTime": start}
            vs.append(pod_info(p))
        return Candidate(node, vs, pdb)

    assert pick_one_node_for_preemption([c("a", 1, pdb=1), c("b", 5)]).node == "b"
    assert pick_one_node_for_preemption([c("a", 5), c("b", 3, 2)]).node == "b"
    assert pick_one_node_for_preemption([c("a", 3, 3), c("b", 3, 2)]).node == "b"
    # every victim adds MaxInt32+1 to the sum, so fewer victims win before their priorities do
    assert pick_one_node_for_preemption([c("a", 3, 0, 0), c("b", 3, 2)]).node == "b"
    # tie on all counts: the latest-started highest-priority victims (no start time = now) win
    assert pick_one_node_for_preemption([c("a", 3, 1), c("b", 3, 1, start="2026-01-01T00:00:00Z"),
                                         c("c", 3, 1, start="2026-06-01T00:00:00Z")]).node == "a"


def test_preemption_policy_never():
    h = cluster([node("n1", cpu="1")], [pod("low", node_name="n1", requests={"cpu": "1"}, priority=0)])
    r = default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100, preemptionPolicy="Never"))
    assert r.post_filter is None
    assert r.message == "0/1 nodes are available: 1 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never."


def test_unresolvable_nodes_are_not_candidates():
    h = cluster([node("t", cpu="1", taints=[{"key": "k", "effect": "NoSchedule"}]), node("n", cpu="1")],
                [pod("lt", node_name="t", requests={"cpu": "1"}), pod("ln", node_name="n", requests={"cpu": "1"})])
    pf = _pf(default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert pf.nominated_node_name == "n"


def test_victims_that_do_not_help_mean_no_candidate():
    # the node is too small even when emptied: the filters still fail after removing all victims
    h = cluster([node("n1", cpu="1")], [pod("low", node_name="n1", requests={"cpu": "500m"})])
    r = default_profile(h).schedule_one(pod("high", requests={"cpu": "2"}, priority=100))
    assert r.message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                         "1 Insufficient cpu.")


def test_anti_affinity_resolved_by_preemption():
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    h = cluster([node("n1")], [pod("w1", node_name="n1", labels={"app": "web"}, priority=0)])
    r = default_profile(h).schedule_one(pod("w2", labels={"app": "web"}, affinity=anti, priority=10))
    assert r.message.startswith("0/1 nodes are available: 1 node(s) didn't match pod anti-affinity rules.")
    assert _pf(r).nominated_node_name == "n1" and _names(_pf(r).victims) == ["w1"]


def test_lower_priority_nominations_are_cleared():
    h = cluster([node("n1", cpu="1")], [pod("low", node_name="n1", requests={"cpu": "1"}, priority=0)])
    prof = default_profile(h)
    q = SchedulingQueue(prof)
    h.nominator = q
    waiting = pod_info(pod("waiting", requests={"cpu": "1"}, priority=5))
    q.add_nominated_pod(waiting, "n1")
    pf = _pf(prof.schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert [p.name for p in pf.pods_to_clear_nomination] == ["waiting"]


def test_terminating_victim_on_nominated_node_blocks_new_preemption():
    low = pod("low", node_name="n1", requests={"cpu": "1"}, priority=0)
    low["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    low["status"] = {"conditions": [{"type": "DisruptionTarget", "status": "True", "reason": "PreemptionByScheduler"}]}
    h = cluster([node("n1", cpu="1")], [low])
    p = pod("high", requests={"cpu": "1"}, priority=100)
    p["status"] = {"nominatedNodeName": "n1"}
    r = default_profile(h).schedule_one(p)
    assert r.message.endswith("preemption: not eligible due to a terminating pod on the nominated node.")


@pytest.mark.parametrize("n_nodes", [250])
def test_many_nodes_dry_run_is_bounded(n_nodes):
    nodes = [node(f"n{i:03d}", cpu="1") for i in range(n_nodes)]
    pods = [pod(f"low{i}", node_name=f"n{i:03d}", requests={"cpu": "1"}) for i in range(n_nodes)]
    h = cluster(nodes, pods)
    pf = _pf(default_profile(h).schedule_one(pod("high", requests={"cpu": "1"}, priority=100)))
    assert pf.nominated_node_name and len(pf.victims) == 1
