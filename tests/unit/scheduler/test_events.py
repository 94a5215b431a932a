"""Cluster events and the plugins' queueing hints (which events can make a rejected pod schedulable)."""

from __future__ import annotations

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.events import (
    ASSIGNED_POD,
    NODE,
    POD,
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    node_update_actions,
    pod_update_actions,
)
from pyk8s.scheduler.podinfo import pod_info

from ._fixtures import cluster, node, pod

PROFILE = default_profile(cluster([node("n1")]))


def _hint(plugin, event, p, old, new):
    for reg in PROFILE.plugins[plugin].events_to_register():
        if reg.event.match(event):
            return QUEUE if reg.hint is None else reg.hint(pod_info(p), old, new)
    return None


def test_event_matching():
    reg = ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)
    assert reg.match(ClusterEvent(NODE, ActionType.UPDATE_NODE_LABEL | ActionType.UPDATE_NODE_TAINT))
    assert not reg.match(ClusterEvent(NODE, ActionType.DELETE))
    assert not reg.match(ClusterEvent(ASSIGNED_POD, ActionType.ADD))
    assert ClusterEvent("*", ActionType.ALL).match(ClusterEvent(NODE, ActionType.DELETE))


def test_node_update_actions():
    a = node("n", labels={"x": "1"})
    assert node_update_actions(a, node("n", labels={"x": "2"})) == ActionType.UPDATE_NODE_LABEL
    assert node_update_actions(a, node("n", labels={"x": "1"}, cpu="8")) == ActionType.UPDATE_NODE_ALLOCATABLE
    assert node_update_actions(a, node("n", labels={"x": "1"}, unschedulable=True)) == ActionType.UPDATE_NODE_TAINT
    assert node_update_actions(a, node("n", labels={"x": "1"}, taints=[{"key": "k", "effect": "NoSchedule"}])) == (
        ActionType.UPDATE_NODE_TAINT)
    assert node_update_actions(a, node("n", labels={"x": "1"})) == ActionType(0)


def test_pod_update_actions():
    p = pod("p", labels={"a": "1"}, requests={"cpu": "2"}, schedulingGates=[{"name": "g"}])
    q = pod("p", labels={"a": "2"}, requests={"cpu": "1"}, tolerations=[{"operator": "Exists"}])
    acts = pod_update_actions(p, q)
    for bit in (ActionType.UPDATE_POD_LABEL, ActionType.UPDATE_POD_SCALE_DOWN, ActionType.UPDATE_POD_TOLERATION,
                ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED):
        assert acts & bit
    other = {**p, "status": {"phase": "Pending"}}
    assert pod_update_actions(p, other) == ActionType.UPDATE_POD_OTHER


NODE_ADD = ClusterEvent(NODE, ActionType.ADD)
NODE_TAINT = ClusterEvent(NODE, ActionType.UPDATE_NODE_TAINT)
POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE)
POD_ADD = ClusterEvent(ASSIGNED_POD, ActionType.ADD)


def test_node_unschedulable_hints():
    p = pod("p")
    assert _hint("NodeUnschedulable", NODE_TAINT, p, node("n", unschedulable=True), node("n")) is QUEUE
    assert _hint("NodeUnschedulable", NODE_TAINT, p, node("n"), node("n", unschedulable=True)) is QUEUE_SKIP
    assert _hint("NodeUnschedulable", NODE_ADD, p, None, node("n")) is QUEUE
    tol = pod("p", tolerations=[{"operator": "Exists"}])
    assert _hint("NodeUnschedulable", ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), tol, p, tol) is QUEUE


def test_taint_hints():
    t = [{"key": "k", "effect": "NoSchedule"}]
    p = pod("p")
    assert _hint("TaintToleration", NODE_TAINT, p, node("n", taints=t), node("n")) is QUEUE
    assert _hint("TaintToleration", NODE_ADD, p, None, node("n", taints=t)) is QUEUE_SKIP
    assert _hint("TaintToleration", NODE_TAINT, p, node("n"), node("n", labels={"x": "y"})) is QUEUE_SKIP
    assert _hint("TaintToleration", ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), p, p, p) is QUEUE
    assert _hint("TaintToleration", ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), p, None, pod("other")) is (
        QUEUE_SKIP)


def test_node_name_and_affinity_hints():
    p = pod("p", node_name="wanted")
    assert _hint("NodeName", NODE_ADD, p, None, node("wanted")) is QUEUE
    assert _hint("NodeName", NODE_ADD, p, None, node("other")) is QUEUE_SKIP
    s = pod("s", nodeSelector={"disk": "ssd"})
    assert _hint("NodeAffinity", NODE_ADD, s, None, node("n", labels={"disk": "ssd"})) is QUEUE
    assert _hint("NodeAffinity", NODE_ADD, s, None, node("n")) is QUEUE_SKIP


def test_ports_hint():
    want = pod("p", ports=[{"containerPort": 80, "hostPort": 80}])
    holder = pod("h", node_name="n1", ports=[{"containerPort": 80, "hostPort": 80}])
    assert _hint("NodePorts", POD_DELETE, want, holder, None) is QUEUE
    assert _hint("NodePorts", POD_DELETE, want, pod("x", node_name="n1"), None) is QUEUE_SKIP


def test_fit_pod_hints():
    p = pod("p", requests={"cpu": "1"})
    assert _hint("NodeResourcesFit", POD_DELETE, p, pod("gone", node_name="n1"), None) is QUEUE
    big = pod("b", node_name="n1", requests={"cpu": "2"})
    small = pod("b", node_name="n1", requests={"cpu": "1"})
    scale = ClusterEvent(ASSIGNED_POD, ActionType.UPDATE_POD_SCALE_DOWN)
    assert _hint("NodeResourcesFit", scale, p, big, small) is QUEUE
    assert _hint("NodeResourcesFit", scale, p, small, small) is QUEUE_SKIP


def test_inter_pod_affinity_hints():
    aff = {"podAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "zone"}]}}
    p = pod("p", affinity=aff)
    assert _hint("InterPodAffinity", POD_ADD, p, None, pod("db", labels={"app": "db"}, node_name="n1")) is QUEUE
    assert _hint("InterPodAffinity", POD_ADD, p, None, pod("x", labels={"app": "x"}, node_name="n1")) is QUEUE_SKIP
    guard_aff = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "zone"}]}}
    guard = pod("g", node_name="n1", affinity=guard_aff)
    assert _hint("InterPodAffinity", POD_DELETE, pod("w", labels={"app": "web"}), guard, None) is QUEUE
    node_evt = ClusterEvent(NODE, ActionType.ADD)
    assert _hint("InterPodAffinity", node_evt, p, None, node("n", labels={"zone": "a"})) is QUEUE
    assert _hint("InterPodAffinity", node_evt, p, None, node("n")) is QUEUE_SKIP


def test_topology_spread_hints():
    c = [{"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule",
          "labelSelector": {"matchLabels": {"app": "foo"}}}]
    p = pod("p", labels={"app": "foo"}, topologySpreadConstraints=c)
    assert _hint("PodTopologySpread", POD_DELETE, p, pod("f", labels={"app": "foo"}, node_name="n1"), None) is QUEUE
    assert _hint("PodTopologySpread", POD_DELETE, p, pod("f", labels={"app": "bar"}, node_name="n1"), None) is (
        QUEUE_SKIP)
    assert _hint("PodTopologySpread", NODE_ADD, p, None, node("n", labels={"zone": "z"})) is QUEUE
    assert _hint("PodTopologySpread", NODE_ADD, p, None, node("n")) is QUEUE_SKIP


def test_scheduling_gates_hint():
    g = pod("g", schedulingGates=[{"name": "x"}])
    freed = {**g, "spec": {k: v for k, v in g["spec"].items() if k != "schedulingGates"}}
    evt = ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED)
    assert _hint("SchedulingGates", evt, g, g, freed) is QUEUE
    assert _hint("SchedulingGates", evt, g, g, pod("other")) is QUEUE_SKIP
