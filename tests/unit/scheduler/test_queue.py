"""Scheduling queue: activeQ order, backoff, unschedulable pods moved by hinted events, in-flight events,
flush, pop from backoffQ, nominator."""

from __future__ import annotations

import asyncio

import pytest

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.queue import SchedulingQueue

from ._fixtures import cluster, node, pod


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def clock():
    return Clock()


@pytest.fixture
def q(clock):
    return SchedulingQueue(default_profile(cluster([node("n1")])), clock=clock)


def _name(qpi):
    return qpi.pod_info.name


def test_active_queue_orders_by_priority_then_arrival(q, clock):
    q.add(pod("low1", priority=1))
    clock.t += 1
    q.add(pod("high", priority=100))
    clock.t += 1
    q.add(pod("low2", priority=1))
    q.add(pod("mid", priority=50))
    assert [_name(q.pop()) for _ in range(4)] == ["high", "mid", "low1", "low2"]
    assert q.pop() is None


def test_backoff_doubles_from_one_second_to_ten(q):
    qpi = q.pop() or None
    assert qpi is None
    q.add(pod("p"))
    qpi = q.pop()
    durations = []
    for attempts in range(1, 8):
        qpi.attempts = attempts
        durations.append(q.backoff_duration(qpi))
    assert durations == [1, 2, 4, 8, 10, 10, 10]
    qpi.attempts = 0
    assert q.backoff_duration(qpi) == 0


def test_error_goes_to_backoff_then_active(q, clock):
    q.add(pod("p"))
    qpi = q.pop()
    assert q.add_unschedulable_if_not_present(qpi, error=True) == "backoff"
    q.pop_from_backoff_q = False
    assert q.pop() is None
    clock.t += 0.5
    q.flush()
    assert q.where(qpi.key) == "backoff"
    clock.t += 0.6
    q.flush()
    assert q.where(qpi.key) == "active"


def test_rejected_pod_waits_for_a_relevant_event(q, clock):
    q.add(pod("big", requests={"cpu": "64"}))
    qpi = q.pop()
    assert q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"}) == "unschedulable"
    # a label-only update of a node that does not fit the pod: the Fit hint says skip
    q.node_updated(node("n1"), node("n1", labels={"x": "y"}))
    assert q.where(qpi.key) == "unschedulable"
    q.node_added(node("small", cpu="2"))
    assert q.where(qpi.key) == "unschedulable"
    q.node_added(node("huge", cpu="128"))
    assert q.where(qpi.key) == "backoff"  # still within its 1s backoff
    clock.t += 1.1
    q.flush()
    assert q.where(qpi.key) == "active"


def test_event_for_another_plugin_does_not_move(q):
    q.add(pod("p", nodeSelector={"disktype": "ssd"}))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeAffinity"})
    q.assigned_pod_deleted(pod("gone", node_name="n1", requests={"cpu": "1"}))
    assert q.where(qpi.key) == "unschedulable"
    q.node_updated(node("n1"), node("n1", labels={"disktype": "ssd"}))
    assert q.where(qpi.key) in ("backoff", "active")


def test_assigned_pod_delete_releases_resource_rejections(q, clock):
    q.add(pod("p", requests={"cpu": "1"}))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    clock.t += 5
    q.assigned_pod_deleted(pod("gone", node_name="n1", requests={"cpu": "1"}))
    assert q.where(qpi.key) == "active"  # backoff (1s) already over


def test_events_while_in_flight_are_replayed(q):
    q.add(pod("p", nodeSelector={"disktype": "ssd"}))
    qpi = q.pop()
    q.node_added(node("ssd", labels={"disktype": "ssd"}))  # arrives during the attempt
    assert q.add_unschedulable_if_not_present(qpi, {"NodeAffinity"}) in ("backoff", "active")


def test_unrelated_in_flight_event_keeps_pod_unschedulable(q):
    q.add(pod("p", nodeSelector={"disktype": "ssd"}))
    qpi = q.pop()
    q.node_added(node("hdd", labels={"disktype": "hdd"}))
    assert q.add_unschedulable_if_not_present(qpi, {"NodeAffinity"}) == "unschedulable"


def test_unschedulable_pods_are_flushed_after_five_minutes(q, clock):
    q.add(pod("p"))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    clock.t += 299
    q.flush()
    assert q.where(qpi.key) == "unschedulable"
    clock.t += 2
    q.flush()
    assert q.where(qpi.key) == "active"


def test_pop_from_backoff_when_active_is_empty(q):
    q.add(pod("p"))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    q.node_added(node("n2"))
    assert q.where(qpi.key) == "backoff"
    again = q.pop()
    assert again is qpi and again.attempts == 2
    # but not a pod that failed with an error
    q.add_unschedulable_if_not_present(again, error=True)
    assert q.pop() is None


class _CountingDict(dict):
    gets = 0

    def get(self, *a):
        type(self).gets += 1
        return super().get(*a)


def test_errored_pods_backing_off_are_not_scanned_on_each_pop(q, clock):
    """Pods with no rejecting plugin (an error, or no nodes at all) sit in backoffQ by the thousand: an early pop
    takes the rejected pod at once, without walking past each errored one (that made every pop O(n))."""
    q._backoff_items = _CountingDict()
    errored = []
    for i in range(500):
        q.add(pod(f"e{i}"))
        qpi = q.pop()
        q.add_unschedulable_if_not_present(qpi, error=True)
        errored.append(qpi)
    q.add(pod("r"))
    rejected = q.pop()
    q.add_unschedulable_if_not_present(rejected, {"NodeResourcesFit"})
    q.node_added(node("n2"))
    assert q.where(rejected.key) == "backoff"
    _CountingDict.gets = 0
    assert q.pop() is rejected
    assert q.pop() is None
    assert _CountingDict.gets < 10
    # their backoff over, the errored pods come back in the order they failed
    clock.t += 2
    assert [_name(q.pop()) for _ in range(3)] == ["e0", "e1", "e2"]
    assert q.next_backoff_expiry() is None or q.next_backoff_expiry() <= clock.t


def test_update_of_unschedulable_pod_uses_hints(q):
    p = pod("p", tolerations=[])
    q.add(p)
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"TaintToleration"})
    newer = {**p, "spec": {**p["spec"], "tolerations": [{"operator": "Exists"}]}}
    q.update(p, newer)
    assert q.where(qpi.key) in ("backoff", "active")


def test_update_in_active_replaces_the_pod(q):
    p = pod("p", priority=1)
    q.add(p)
    newer = {**p, "metadata": {**p["metadata"], "labels": {"x": "y"}}}
    q.update(p, newer)
    assert q.pop().pod_info.labels == {"x": "y"}


def test_delete(q):
    p = pod("p")
    q.add(p)
    q.delete(p)
    assert q.pop() is None and len(q) == 0


def test_activate(q):
    q.add(pod("p"))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    q.activate([qpi.pod])
    assert q.where(qpi.key) == "active"


def test_nominator(q):
    from pyk8s.scheduler.podinfo import pod_info

    a = pod_info(pod("a"))
    q.add_nominated_pod(a, "n1")
    assert [p.key for p in q.nominated_pods_for_node("n1")] == [a.key]
    q.add_nominated_pod(a, "n2")
    assert q.nominated_pods_for_node("n1") == [] and q.nominated_node(a.key) == "n2"
    q.delete_nominated_pod(a.key)
    assert q.nodes_with_nominated_pods() == {}
    b = pod("b")
    b["status"] = {"nominatedNodeName": "n1"}
    q.add(b)
    assert q.nominated_node(pod_info(b).key) == "n1"


def test_pop_wait_wakes_on_add(q):
    async def main():
        task = asyncio.create_task(q.pop_wait(poll=5))
        await asyncio.sleep(0)
        q.add(pod("late"))
        return await asyncio.wait_for(task, 1)

    assert _name(asyncio.run(main())) == "late"


def test_update_while_in_flight_is_kept(q):
    p = pod("p", labels={"v": "1"})
    q.add(p)
    qpi = q.pop()
    newer = {**p, "metadata": {**p["metadata"], "labels": {"v": "2"}}}
    q.update(p, newer)
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    assert qpi.pod_info.labels == {"v": "2"}


def test_delete_while_in_flight_is_not_requeued(q):
    p = pod("p")
    q.add(p)
    qpi = q.pop()
    q.delete(p)
    assert q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"}) == "deleted"
    assert len(q) == 0


def test_fit_hint_on_node_update_needs_more_allocatable(q):
    q.add(pod("p", requests={"cpu": "2"}))
    qpi = q.pop()
    q.add_unschedulable_if_not_present(qpi, {"NodeResourcesFit"})
    q.node_updated(node("n1", cpu="4"), node("n1", cpu="4", labels={"a": "b"}))
    assert q.where(qpi.key) == "unschedulable"
    q.node_updated(node("n1", cpu="4"), node("n1", cpu="8"))
    assert q.where(qpi.key) in ("backoff", "active")
