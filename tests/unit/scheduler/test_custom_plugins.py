"""Out-of-tree style plugins through the framework: error and rejection paths, Reserve/Permit/Bind."""

from __future__ import annotations

import numpy as np

from pyk8s.scheduler.framework import Code, FilterResult, Handle, Plugin, PreFilterResult, Profile, Status
from pyk8s.scheduler.plugins import DefaultBinder, NodeResourcesFit, PrioritySort
from pyk8s.scheduler.scheduler import Scheduler

from ._fixtures import cluster, node, pod


class Reject(Plugin):
    name = "Reject"
    code = Code.UNSCHEDULABLE

    def pre_filter(self, state, p, table):
        return None, Status(self.code, ("rejected by test",))


class Pin(Plugin):
    name = "Pin"

    def pre_filter(self, state, p, table):
        return PreFilterResult(frozenset({"a"})), None


class Broken(Plugin):
    name = "Broken"

    def filter(self, state, p, table, rows):
        return FilterResult.uniform(np.zeros(rows.size, dtype=bool), Status(Code.ERROR, ("boom",)))


class BadScore(Plugin):
    name = "BadScore"

    def score(self, state, p, table, rows):
        return np.full(rows.size, 101, dtype=np.int64)


def _profile(h, *classes, points=None):
    inst = {c.name: c({}, h) for c in classes}
    pts = points or {"preFilter": [c.name for c in classes], "filter": [c.name for c in classes],
                     "score": [c.name for c in classes]}
    return Profile("t", inst, pts, {}, h)


def test_prefilter_unschedulable_keeps_running_others_and_sets_message():
    h = cluster([node("a"), node("b")])
    prof = _profile(h, Reject, Pin)
    r = prof.schedule_one(pod())
    assert r.message == "0/2 nodes are available: rejected by test."
    assert r.diagnosis.absent.plugin == "Reject"


def test_prefilter_results_that_exclude_everything():
    class PinB(Plugin):
        name = "PinB"

        def pre_filter(self, state, p, table):
            return PreFilterResult(frozenset({"b"})), None

    h = cluster([node("a"), node("b")])
    r = _profile(h, Pin, PinB).schedule_one(pod())
    assert r.message == "0/2 nodes are available: node(s) didn't satisfy plugin(s) [Pin PinB] simultaneously."


def test_filter_error_and_invalid_scores_are_errors():
    h = cluster([node("a"), node("b")])
    r = _profile(h, Broken).schedule_one(pod())
    assert r.node is None and r.status.code == Code.ERROR and r.status.plugin == "Broken"
    r = _profile(h, BadScore).schedule_one(pod())
    assert r.status.code == Code.ERROR and "invalid score 101" in r.status.message()


class Gate(Plugin):
    name = "Gate"
    reserve_status: Status | None = None
    permit_status: tuple[Status | None, float] = (None, 0.0)
    unreserved: list[str] = []

    def reserve(self, state, p, node):
        return self.reserve_status

    def unreserve(self, state, p, node):
        self.unreserved.append(node)

    def permit(self, state, p, node):
        return self.permit_status


def _scheduler(h):
    inst = {c.name: c({}, h) for c in (PrioritySort, NodeResourcesFit, Gate, DefaultBinder)}
    pts = {"queueSort": ["PrioritySort"], "preFilter": ["NodeResourcesFit"], "filter": ["NodeResourcesFit"],
           "score": ["NodeResourcesFit"], "reserve": ["Gate"], "permit": ["Gate"], "bind": ["DefaultBinder"]}
    prof = Profile("default-scheduler", inst, pts, {}, h)
    return Scheduler(handle=h, profiles={"default-scheduler": prof}), inst["Gate"]


def test_reserve_failure_forgets_the_pod():
    h = Handle()
    s, gate = _scheduler(h)
    gate.unreserved = []
    gate.reserve_status = Status(Code.UNSCHEDULABLE, ("no room in the reservation",))
    s.on_node_add(node("n1"))
    p = pod("p")
    s.on_pod_add(p)
    d = s.schedule_next()
    assert d.node is None and d.message == "0/1 nodes are available: 1 no room in the reservation."
    assert gate.unreserved == ["n1"] and not s.cache.is_assumed_pod(p)


def test_permit_wait_is_reported():
    h = Handle()
    s, gate = _scheduler(h)
    gate.reserve_status = None
    gate.permit_status = (Status(Code.WAIT), 5.0)
    s.on_node_add(node("n1"))
    s.on_pod_add(pod("p"))
    d = s.schedule_next()
    assert d.node == "n1" and d.permit_wait == 5.0
    gate.permit_status = (Status(Code.UNSCHEDULABLE, ("denied",)), 0.0)
    s.on_pod_add(pod("q"))
    d = s.schedule_next()
    assert d.node is None and "denied" in d.message


def test_binder_failure_requeues():
    h = Handle()
    s, gate = _scheduler(h)
    gate.reserve_status = None
    gate.permit_status = (None, 0.0)
    h.binder = lambda b: Status(Code.ERROR, ("apiserver said no",))
    s.on_node_add(node("n1"))
    p = pod("p")
    s.on_pod_add(p)
    d = s.schedule_next()
    st = s.bind(d)
    assert st.code == Code.ERROR and not s.cache.is_assumed_pod(p)
    assert s.queue.where(p) == "backoff"


def test_handle_shared_lookups_default():
    h = Handle()
    assert h.pdbs() == [] and h.pvc is None and h.binder is None
