"""SchedulingGates: PreEnqueue keeps gated pods out of the active queue."""

from __future__ import annotations

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import Code
from pyk8s.scheduler.plugins.scheduling_gates import SchedulingGates
from pyk8s.scheduler.podinfo import pod_info
from pyk8s.scheduler.queue import SchedulingQueue

from ._fixtures import cluster, node, pod


def test_pre_enqueue_message():
    pl = SchedulingGates({}, cluster([]))
    st = pl.pre_enqueue(pod_info(pod(schedulingGates=[{"name": "a"}, {"name": "b"}])))
    assert st.code == Code.UNSCHEDULABLE_AND_UNRESOLVABLE
    assert st.reasons == ("waiting for scheduling gates: [a b]",)
    assert pl.pre_enqueue(pod_info(pod())) is None


def test_gated_pod_waits_until_its_gates_are_removed():
    prof = default_profile(cluster([node("n1")]))
    q = SchedulingQueue(prof, clock=lambda: 0.0)
    gated = pod("g", schedulingGates=[{"name": "example.com/wait"}])
    q.add(gated)
    assert q.where(gated) == "gated"
    assert q.pop() is None
    q.node_added(node("n2"))  # unrelated events do not release it
    assert q.where(gated) == "gated"
    ungated = {**gated, "spec": {k: v for k, v in gated["spec"].items() if k != "schedulingGates"}}
    q.update(gated, ungated)
    assert q.where(gated) == "active"
    assert q.pop().key == pod_info(gated).key
