"""NodeAffinity: nodeSelector, required terms, matchFields PreFilter narrowing, preferred scoring."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.plugins.node_affinity import NodeAffinity

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter, run_score

NODES = [
    node("n1", labels={"zone": "a", "disktype": "ssd", "gen": "3"}),
    node("n2", labels={"zone": "b", "gen": "5"}),
    node("n3", labels={"zone": "c", "gen": "x"}),
]


def _required(*terms):
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": list(terms)}}}


def _expr(key, op, *values):
    e = {"key": key, "operator": op}
    if values:
        e["values"] = list(values)
    return {"matchExpressions": [e]}


@pytest.fixture
def prof():
    return one_plugin(NodeAffinity, cluster(NODES))


@pytest.mark.parametrize("affinity,want", [
    (_required(_expr("zone", "In", "a", "b")), ["n1", "n2"]),
    (_required(_expr("zone", "NotIn", "a")), ["n2", "n3"]),
    (_required(_expr("disktype", "Exists")), ["n1"]),
    (_required(_expr("disktype", "DoesNotExist")), ["n2", "n3"]),
    (_required(_expr("gen", "Gt", "4")), ["n2"]),  # "x" does not parse: no match
    (_required(_expr("gen", "Lt", "4")), ["n1"]),
    (_required(_expr("gen", "Gt", "four")), []),  # invalid requirement: the term matches nothing
    (_required(_expr("zone", "In", "a"), _expr("zone", "In", "c")), ["n1", "n3"]),  # terms are ORed
    (_required({"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]},
                                     {"key": "gen", "operator": "Gt", "values": ["4"]}]}), ["n2"]),  # ANDed
    (_required({}), []),  # an empty term matches nothing
    (_required({"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]}), ["n2", "n3"]),
])
def test_required_affinity(prof, affinity, want):
    assert feasible(prof, pod(affinity=affinity)) == want


def test_node_selector(prof):
    assert feasible(prof, pod(nodeSelector={"disktype": "ssd"})) == ["n1"]
    out, _, _ = run_filter(prof, pod(nodeSelector={"disktype": "hdd"}))
    assert {s.reasons for s in out.values()} == {("node(s) didn't match Pod's node affinity/selector",)}


def test_node_selector_and_affinity_both_apply(prof):
    p = pod(nodeSelector={"zone": "a"}, affinity=_required(_expr("gen", "Gt", "4")))
    assert feasible(prof, p) == []


def test_match_fields_name_pin_narrows_in_prefilter(prof):
    """seed 002 / transcript: matchFields metadata.name In [...] makes a PreFilterResult."""
    p = pod(affinity=_required({"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n2"]}]}))
    out, st, _ = run_filter(prof, p)
    assert st.is_success()
    assert out["n2"] is None
    assert out["n1"].reasons == ("node(s) didn't satisfy plugin(s) [NodeAffinity]",)
    assert out["n1"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_match_fields_in_every_term_unions_names(prof):
    p = pod(affinity=_required(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n3"]}]}))
    assert feasible(prof, p) == ["n1", "n3"]


def test_term_without_name_pin_disables_narrowing(prof):
    p = pod(affinity=_required(
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]}, _expr("zone", "In", "b")))
    out, _, _ = run_filter(prof, p)
    assert out["n3"].reasons == ("node(s) didn't match Pod's node affinity/selector",)
    assert feasible(prof, p) == ["n1", "n2"]


def test_conflicting_name_pins_reject_in_prefilter(prof):
    p = pod(affinity=_required({"matchFields": [
        {"key": "metadata.name", "operator": "In", "values": ["n1"]},
        {"key": "metadata.name", "operator": "In", "values": ["n2"]}]}))
    _, st, _ = run_filter(prof, p)
    assert st.reasons == ("pod affinity terms conflict",)


def test_added_affinity_is_enforced_first():
    args = {"addedAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
        {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["a", "b"]}]}]}}}
    prof = one_plugin(NodeAffinity, cluster(NODES), args)
    out, _, _ = run_filter(prof, pod(nodeSelector={"zone": "b"}))
    assert out["n3"].reasons == ("node(s) didn't match scheduler-enforced node affinity",)
    assert out["n1"].reasons == ("node(s) didn't match Pod's node affinity/selector",)
    assert out["n2"] is None


def test_preferred_scoring(prof):
    aff = {"nodeAffinity": {"preferredDuringSchedulingIgnoredDuringExecution": [
        {"weight": 2, "preference": _expr("zone", "In", "a", "b")},
        {"weight": 8, "preference": _expr("disktype", "Exists")},
    ]}}
    # raw: n1 10, n2 2, n3 0 -> normalised by the max
    assert run_score(prof, pod(affinity=aff)) == {"n1": 100, "n2": 20, "n3": 0}


def test_no_preference_skips_scoring(prof):
    assert run_score(prof, pod()) is None


def test_label_change_is_seen():
    h = cluster(NODES)
    prof = one_plugin(NodeAffinity, h)
    assert feasible(prof, pod(nodeSelector={"disktype": "ssd"})) == ["n1"]
    h.cache.update_node(node("n2", labels={"zone": "b", "disktype": "ssd"}))
    assert feasible(prof, pod(nodeSelector={"disktype": "ssd"})) == ["n1", "n2"]
