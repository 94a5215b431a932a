"""The Scheduler core end to end without an API: informer events in, decisions out."""

from __future__ import annotations

from pyk8s.scheduler.scheduler import Scheduler

from ._fixtures import node, pod


class Clock:
    def __init__(self) -> None:
        self.t = 0.0

    def __call__(self) -> float:
        return self.t


def _bound(p, node_name):
    return {**p, "spec": {**p["spec"], "nodeName": node_name}}


def test_schedule_bind_confirm():
    s = Scheduler(clock=Clock())
    s.on_node_add(node("n1"))
    p = pod("web")
    s.on_pod_add(p)
    d = s.schedule_next()
    assert d.node == "n1"
    assert d.binding == {"apiVersion": "v1", "kind": "Binding",
                         "metadata": {"name": "web", "namespace": "default", "uid": p["metadata"]["uid"]},
                         "target": {"kind": "Node", "name": "n1"}}
    assert s.cache.is_assumed_pod(p)
    s.binding_done(d, ok=True)
    s.on_pod_update(p, _bound(p, "n1"))  # the informer sees the bound pod
    assert not s.cache.is_assumed_pod(p) and s.cache.pod_count() == 1
    assert s.schedule_next() is None


def test_unschedulable_then_node_added():
    clock = Clock()
    s = Scheduler(clock=clock)
    s.on_node_add(node("small", cpu="1"))
    p = pod("big", requests={"cpu": "4"})
    s.on_pod_add(p)
    d = s.schedule_next()
    assert d.node is None and d.reason == "Unschedulable"
    assert d.message == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                         "1 No preemption victims found for incoming pod.")
    assert s.queue.where(p) == "unschedulable"
    s.on_node_add(node("large", cpu="8"))
    clock.t += 2
    s.queue.flush()
    d = s.schedule_next()
    assert d.node == "large"


def test_failed_binding_is_forgotten_and_retried():
    clock = Clock()
    s = Scheduler(clock=clock)
    s.on_node_add(node("n1", cpu="1"))
    p = pod("p", requests={"cpu": "1"})
    s.on_pod_add(p)
    d = s.schedule_next()
    s.binding_done(d, ok=False)
    assert not s.cache.is_assumed_pod(p) and s.cache.pod_count() == 0
    assert s.queue.where(p) == "backoff"
    clock.t += 1.5
    s.queue.flush()
    assert s.schedule_next().node == "n1"


def test_preemption_decision_nominates_and_names_victims():
    s = Scheduler(clock=Clock())
    s.on_node_add(node("n1", cpu="1"))
    s.on_pod_add(pod("low", node_name="n1", requests={"cpu": "1"}, priority=0))
    high = pod("high", requests={"cpu": "1"}, priority=1000)
    s.on_pod_add(high)
    d = s.schedule_next()
    assert d.node is None and d.nominated_node == "n1"
    assert [v.name for v in d.victims] == ["low"]
    assert s.queue.nominated_node(d.pod.key) == "n1"
    # the victim goes away: the pod is retried and lands on its nominated node
    s.on_pod_delete(d.victims[0].pod)
    s.queue.clock = lambda: 100.0
    s.queue.flush()
    d2 = s.schedule_next()
    assert d2 is not None and d2.node == "n1"


def test_pods_for_other_schedulers_are_ignored_and_bind_runs_plugins():
    s = Scheduler({"profiles": [{"schedulerName": "default-scheduler"}, {"schedulerName": "other"}]}, clock=Clock())
    s.on_node_add(node("n1"))
    s.on_pod_add(pod("x", schedulerName="someone-else"))
    assert s.schedule_next() is None
    s.on_pod_add(pod("y", schedulerName="other"))
    d = s.schedule_next()
    assert d.profile.scheduler_name == "other"
    bound = []
    s.handle.binder = lambda b: bound.append(b)
    assert s.bind(d).is_success()
    assert bound[0]["target"]["name"] == "n1"


def test_gated_pods_wait():
    s = Scheduler(clock=Clock())
    s.on_node_add(node("n1"))
    gated = pod("g", schedulingGates=[{"name": "x"}])
    s.on_pod_add(gated)
    assert s.schedule_next() is None
    s.on_pod_update(gated, {**gated, "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"}})
    assert s.schedule_next().node == "n1"
