"""Filtering only the rotation window upstream would walk (Profile._filter_window) gives the same
feasible nodes, processed count, next start index and failure diagnosis as filtering every node
and cutting the window afterwards (the former algorithm, kept here as the oracle); nominated
nodes are re-filtered with their nominated pods only when that can change the outcome."""

from __future__ import annotations

import random
from typing import Any

import numpy as np
import pytest

from pyk8s.scheduler.config import build_profiles
from pyk8s.scheduler.framework import CycleState, Diagnosis, Handle, Profile, num_feasible_nodes_to_find
from pyk8s.scheduler.messages import fit_error_message
from pyk8s.scheduler.podinfo import PodInfo, pod_info
from pyk8s.scheduler.queue import SchedulingQueue

from .scheduler._fixtures import cluster, node, pod

ZONE = "topology.kubernetes.io/zone"


def oracle(prof: Profile, p: PodInfo, start: int) -> tuple[list[int], int, Diagnosis]:
    """Every candidate filtered (plain pass, then every nominated node again with its pods added),
    then the first to_find feasible rows from position start on."""
    table = prof.handle.cache.table
    state = CycleState()
    state.table = table
    diag = Diagnosis(table.names, table.n)
    _, st, _ = prof.run_pre_filter(state, p, table)
    assert st.is_success()
    cand = np.arange(table.n, dtype=np.int64)
    feasible = prof._filter_rows(state, p, table, cand, diag)
    drop = []
    for row, pods in prof._nominated_rows(p, table).items():
        r = prof._filter_with_added(state, p, table, row, pods)
        if not r.is_success():
            diag.set_rows(np.array([row]), diag.add_status(r))
            drop.append(row)
    feasible = feasible[~np.isin(feasible, drop)]
    total = cand.size
    to_find = num_feasible_nodes_to_find(prof._percentage(), total)
    rot = start % total
    order = [int(r) for r in feasible if r >= rot] + [int(r) for r in feasible if r < rot]
    if len(order) > to_find:
        return order[:to_find], (order[to_find - 1] - rot) % total + 1, diag
    return order, total, diag


def random_case(rng: random.Random) -> tuple[Handle, Profile, list[dict[str, Any]]]:
    nodes = []
    for i in range(rng.choice([40, 150, 420])):
        labels = {ZONE: f"z{rng.randrange(3)}"} if rng.random() < 0.9 else {}
        taints = [{"key": "dedicated", "value": "x", "effect": "NoSchedule"}] if rng.random() < 0.1 else None
        nodes.append(node(f"n{i:04d}", cpu=rng.choice(["1", "2", "4"]), pods=rng.choice(["3", "110"]), labels=labels,
                          taints=taints, unschedulable=rng.random() < 0.05))
    bound = []
    for i in range(len(nodes) * 2):
        n = rng.choice(nodes)["metadata"]["name"]
        bound.append(pod(f"b{i}", requests={"cpu": rng.choice(["100m", "500m", "900m"])},
                         labels={"app": rng.choice(["web", "db"])}, node_name=n))
    pct = rng.choice([0, 5, 30, 100])
    h = cluster(nodes, bound)
    prof = build_profiles({"percentageOfNodesToScore": pct} if pct else None, h)["default-scheduler"]
    q = SchedulingQueue(prof)
    h.nominator = q
    for i in range(rng.randrange(6)):
        nominee = pod_info(pod(f"nom{i}", requests={"cpu": rng.choice(["500m", "1500m"])}, priority=rng.choice([0, 10])))
        q.add_nominated_pod(nominee, rng.choice(nodes)["metadata"]["name"])
    pods = []
    for i in range(12):
        spec: dict[str, Any] = {}
        if rng.random() < 0.4:
            spec["topologySpreadConstraints"] = [{"maxSkew": rng.choice([1, 3]), "topologyKey": ZONE,
                                                  "whenUnsatisfiable": "DoNotSchedule",
                                                  "labelSelector": {"matchLabels": {"app": "web"}}}]
        pods.append(pod(f"p{i}", requests={"cpu": rng.choice(["100m", "700m", "1500m", "3500m"])},
                        labels={"app": "web"}, priority=rng.choice([0, 5, 20]), **spec))
    return h, prof, pods


@pytest.mark.parametrize("seed", range(40))
def test_window_matches_filtering_every_node(seed: int) -> None:
    rng = random.Random(seed)
    h, prof, pods = random_case(rng)
    table = h.cache.table
    for raw in pods:
        p = pod_info(raw)
        start = rng.randrange(table.n * 2)
        want, want_processed, want_diag = oracle(prof, p, start)
        h.next_start_node_index = start
        state = CycleState()
        state.table = table
        got, diag, processed = prof.find_nodes_that_fit(state, p, table)
        assert got.tolist() == want
        assert processed == want_processed
        assert h.next_start_node_index == (start + want_processed) % table.n
        if not want:  # a failure: every node was processed and the message is the same
            assert diag.node_to_status() == want_diag.node_to_status()
            assert fit_error_message(table.n, diag) == fit_error_message(table.n, want_diag)
        else:  # statuses are kept for the processed window only, and equal the oracle's there,
            # except that a nominated node failing the plain pass keeps that status (the pass with
            # its nominated pods, which only rewords it, runs when the pod fits nowhere)
            window = {table.names[(start + k) % table.n] for k in range(processed)}
            expected = {k: v for k, v in want_diag.node_to_status().items() if k in window}
            got = diag.node_to_status()
            assert got.keys() == expected.keys()
            nominated = {table.names[r] for r in prof._nominated_rows(p, table)}
            assert {k: v for k, v in got.items() if k not in nominated} == {
                k: v for k, v in expected.items() if k not in nominated}


def test_exactly_to_find_feasible_processes_every_node() -> None:
    # 100 nodes, to_find 100: with exactly 100 feasible the walk never stops early.
    h = cluster([node(f"n{i:03d}") for i in range(120)])
    for i in range(100, 120):
        h.cache.update_node(node(f"n{i:03d}", unschedulable=True))
    prof = build_profiles(None, h)["default-scheduler"]
    h.next_start_node_index = 37
    r = prof.schedule_one(pod("p"))
    assert r.feasible_nodes == 100 and h.next_start_node_index == 37


def test_window_cut_forgets_statuses_beyond_it() -> None:
    # 300 nodes, every third one full; to_find 100 (10% but at least 100): the 100th feasible node
    # is n148, so the walk processed 149 nodes and only the full ones among them have a status.
    nodes = [node(f"n{i:03d}", cpu="1" if i % 3 == 2 else "4") for i in range(300)]
    h = cluster(nodes, [pod(f"b{i}", requests={"cpu": "1"}, node_name=f"n{i:03d}") for i in range(2, 300, 3)])
    prof = build_profiles({"percentageOfNodesToScore": 10}, h)["default-scheduler"]
    state = CycleState()
    feasible, diag, processed = prof.find_nodes_that_fit(state, pod_info(pod("p", requests={"cpu": "100m"})), h.cache.table)
    assert feasible.size == 100 and processed == 149 and h.next_start_node_index == 149
    assert sorted(diag.node_to_status()) == [f"n{i:03d}" for i in range(2, 149, 3)]
    assert {s.reasons for s in diag.node_to_status().values()} == {("Insufficient cpu",)}


def test_pod_fitting_nowhere_reports_the_nominated_pass_status() -> None:
    """A nominated node that fails the plain pass is filtered again with its nominated pods when
    the pod fits nowhere: the message counts that status, as upstream's."""
    h = cluster([node("a", cpu="2", pods="1")], [pod("b", node_name="a", requests={"cpu": "100m"})])
    prof = build_profiles(None, h)["default-scheduler"]
    q = SchedulingQueue(prof)
    h.nominator = q
    q.add_nominated_pod(pod_info(pod("vip", requests={"cpu": "1500m"}, priority=100)), "a")
    r = prof.schedule_one(pod("p", requests={"cpu": "1"}, priority=0))
    assert r.node is None
    assert r.message.startswith("0/1 nodes are available: 1 Insufficient cpu, 1 Too many pods.")
    # without the nomination only the pod count fails
    q.delete_nominated_pod(next(iter(q._nominated)))
    assert prof.schedule_one(pod("p2", requests={"cpu": "1"})).message.startswith("0/1 nodes are available: 1 Too many pods.")
