"""NodeUnschedulable remembers per node-table state whether any node is cordoned; cordoning or
uncordoning a node (and adding one) is seen by the next cycle."""

from __future__ import annotations

from pyk8s.scheduler.plugins.node_unschedulable import NodeUnschedulable

from .scheduler._fixtures import cluster, feasible, node, one_plugin, pod


def test_cordon_and_uncordon_seen_by_next_cycle() -> None:
    h = cluster([node("a"), node("b")])
    prof = one_plugin(NodeUnschedulable, h)
    assert feasible(prof, pod("p")) == ["a", "b"]
    h.cache.update_node(node("b", unschedulable=True))
    assert feasible(prof, pod("p")) == ["a"]
    h.cache.update_node(node("b"))
    assert feasible(prof, pod("p")) == ["a", "b"]
    h.cache.add_node(node("c", unschedulable=True))
    assert feasible(prof, pod("p")) == ["a", "b"]
    tolerant = pod("t", tolerations=[{"key": "node.kubernetes.io/unschedulable", "operator": "Exists",
                                      "effect": "NoSchedule"}])
    assert feasible(prof, tolerant) == ["a", "b", "c"]
    h.cache.remove_node(node("c"))
    assert feasible(prof, pod("p")) == ["a", "b"]
