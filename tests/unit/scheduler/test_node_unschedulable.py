"""NodeUnschedulable: cordoned nodes, unless the pod tolerates node.kubernetes.io/unschedulable."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.plugins.node_unschedulable import NodeUnschedulable

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter


@pytest.mark.parametrize("tolerations,want", [
    ([], ["ok"]),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"}], ["cordoned", "ok"]),
    ([{"operator": "Exists"}], ["cordoned", "ok"]),
    ([{"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoExecute"}], ["ok"]),
])
def test_unschedulable(tolerations, want):
    prof = one_plugin(NodeUnschedulable, cluster([node("cordoned", unschedulable=True), node("ok")]))
    assert feasible(prof, pod(tolerations=tolerations)) == want


def test_reason():
    prof = one_plugin(NodeUnschedulable, cluster([node("cordoned", unschedulable=True)]))
    st = run_filter(prof, pod())[0]["cordoned"]
    assert st.reasons == ("node(s) were unschedulable",)
    assert st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
