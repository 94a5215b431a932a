"""NodeResourcesBalancedAllocation (upstream balanced_allocation_test cases)."""

from __future__ import annotations

from pyk8s.scheduler.plugins.node_resources_balanced_allocation import NodeResourcesBalancedAllocation

from ._fixtures import cluster, node, one_plugin, pod, run_score


def test_differently_sized_nodes():
    """upstream: nothing scheduled, resources requested, differently sized nodes -> 87 and 100."""
    h = cluster([node("node1", cpu="4", memory="10000"), node("node2", cpu="6", memory="10000")])
    p = pod(requests={"cpu": "3", "memory": "5000"})
    # node1: cpu 0.75, mem 0.5 -> std 0.125 -> 87; node2: 0.5, 0.5 -> 100
    assert run_score(one_plugin(NodeResourcesBalancedAllocation, h), p) == {"node1": 87, "node2": 100}


def test_existing_requests_count_and_fractions_cap_at_one():
    h = cluster([node("n", cpu="4", memory="10000")], [pod("old", node_name="n", requests={"cpu": "6"})])
    p = pod(requests={"cpu": "1", "memory": "5000"})
    # cpu fraction capped at 1, mem 0.5 -> std 0.25 -> 75
    assert run_score(one_plugin(NodeResourcesBalancedAllocation, h), p) == {"n": 75}


def test_best_effort_pods_skip():
    h = cluster([node("n")])
    assert run_score(one_plugin(NodeResourcesBalancedAllocation, h), pod()) is None


def test_three_resources_use_the_standard_deviation():
    args = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                          {"name": "ephemeral-storage", "weight": 1}]}
    h = cluster([node("n", cpu="4", memory="4000", extra={"ephemeral-storage": "4000"})])
    p = pod(requests={"cpu": "3", "memory": "2000", "ephemeral-storage": "1000"})
    # fractions 0.75 0.5 0.25: mean 0.5, std sqrt(0.125/3) = 0.2041 -> 79
    assert run_score(one_plugin(NodeResourcesBalancedAllocation, h, args), p) == {"n": 79}


def test_resource_missing_on_node_is_left_out():
    args = {"resources": [{"name": "cpu", "weight": 1}, {"name": "memory", "weight": 1},
                          {"name": "nvidia.com/gpu", "weight": 1}]}
    h = cluster([node("g", cpu="4", memory="4000", extra={"nvidia.com/gpu": "4"}), node("c", cpu="4", memory="4000")])
    p = pod(requests={"cpu": "2", "memory": "2000", "nvidia.com/gpu": "4"})
    # g: 0.5 0.5 1.0 -> std 0.2357 -> 76; c: gpu not on the node -> 0.5 0.5 -> 100
    assert run_score(one_plugin(NodeResourcesBalancedAllocation, h, args), p) == {"g": 76, "c": 100}
