"""TaintToleration (upstream tainttoleration tests; seed 002: tolerating the master taint)."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.plugins.taint_toleration import TaintToleration

from ._fixtures import cluster, node, one_plugin, pod, run_filter, run_score

MASTER = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}


def _status(taints, tolerations):
    prof = one_plugin(TaintToleration, cluster([node("n1", taints=taints)]))
    out, _, _ = run_filter(prof, pod(tolerations=tolerations))
    return out["n1"]


@pytest.mark.parametrize("taints,tolerations,fits", [
    ([MASTER], [], False),
    ([MASTER], [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}], True),  # seed 002
    ([MASTER], [{"key": "node-role.kubernetes.io/master", "operator": "Exists"}], True),  # any effect
    ([MASTER], [{"operator": "Exists"}], True),  # empty key + Exists tolerates everything
    ([MASTER], [{"key": "node-role.kubernetes.io/master", "effect": "NoExecute"}], False),
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "value": "v"}], True),  # Equal
    ([{"key": "k", "value": "v", "effect": "NoSchedule"}], [{"key": "k", "operator": "Equal", "value": "w"}], False),
    ([{"key": "k", "value": "v", "effect": "NoExecute"}], [], False),
    ([{"key": "k", "value": "v", "effect": "PreferNoSchedule"}], [], True),  # not a filter concern
])
def test_filter(taints, tolerations, fits):
    st = _status(taints, tolerations)
    assert (st is None) == fits


def test_message_names_the_first_untolerated_taint():
    taints = [{"key": "a", "value": "1", "effect": "NoSchedule"}, {"key": "b", "value": "2", "effect": "NoExecute"}]
    st = _status(taints, [{"key": "a", "operator": "Exists"}])
    assert st.reasons == ("node(s) had untolerated taint {b: 2}",)
    assert st.code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert _status([MASTER], []).reasons == ("node(s) had untolerated taint {node-role.kubernetes.io/master: }",)


def test_score_prefers_fewer_intolerable_prefer_no_schedule_taints():
    p1 = {"key": "p1", "value": "x", "effect": "PreferNoSchedule"}
    p2 = {"key": "p2", "value": "y", "effect": "PreferNoSchedule"}
    h = cluster([node("n0"), node("n1", taints=[p1]), node("n2", taints=[p1, p2])])
    prof = one_plugin(TaintToleration, h)
    assert run_score(prof, pod()) == {"n0": 100, "n1": 50, "n2": 0}
    # A PreferNoSchedule toleration of p1 removes it from the count; a NoSchedule one does not.
    assert run_score(prof, pod(tolerations=[{"key": "p1", "operator": "Exists", "effect": "PreferNoSchedule"}])) == {
        "n0": 100, "n1": 100, "n2": 0}
    assert run_score(prof, pod(tolerations=[{"key": "p1", "operator": "Exists", "effect": "NoSchedule"}])) == {
        "n0": 100, "n1": 50, "n2": 0}


def test_no_taints_all_score_max():
    prof = one_plugin(TaintToleration, cluster([node("a"), node("b")]))
    assert run_score(prof, pod()) == {"a": 100, "b": 100}


def test_taint_change_is_seen():
    h = cluster([node("n1")])
    prof = one_plugin(TaintToleration, h)
    assert run_filter(prof, pod())[0]["n1"] is None
    h.cache.update_node(node("n1", taints=[MASTER]))
    assert run_filter(prof, pod())[0]["n1"] is not None
