"""NodeName: spec.nodeName pins the pod to one node."""

from __future__ import annotations

from pyk8s.scheduler.plugins.node_name import NodeName

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter


def test_node_name():
    prof = one_plugin(NodeName, cluster([node("a"), node("b")]))
    assert feasible(prof, pod()) == ["a", "b"]
    assert feasible(prof, pod(node_name="b")) == ["b"]
    out, _, _ = run_filter(prof, pod(node_name="zzz"))
    assert out["a"].reasons == ("node(s) didn't match the requested node name",)
