"""InterPodAffinity: required (anti-)affinity, existing pods' anti-affinity, namespaces, scoring."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.framework import Handle
from pyk8s.scheduler.plugins.inter_pod_affinity import InterPodAffinity

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter, run_score

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NODES = [node("n1", labels={ZONE: "a"}), node("n2", labels={ZONE: "a"}), node("n3", labels={ZONE: "b"}),
         node("nozone")]


def _term(labels, key, **extra):
    return {"labelSelector": {"matchLabels": labels}, "topologyKey": key, **extra}


def _affinity(kind, *terms, required=True):
    field = "requiredDuringSchedulingIgnoredDuringExecution" if required else "preferredDuringSchedulingIgnoredDuringExecution"
    return {kind: {field: list(terms)}}


def test_required_affinity_follows_the_topology_of_matching_pods():
    h = cluster(NODES, [pod("db", labels={"app": "db"}, node_name="n1")])
    prof = one_plugin(InterPodAffinity, h)
    p = pod("web", labels={"app": "web"}, affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE)))
    out, _, _ = run_filter(prof, p)
    assert [n for n, s in out.items() if s is None] == ["n1", "n2"]
    assert out["n3"].reasons == ("node(s) didn't match pod affinity rules",)
    assert out["n3"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"
    assert out["nozone"].reasons == ("node(s) didn't match pod affinity rules",)  # topology key missing


def test_first_pod_of_a_self_affine_group_may_go_anywhere_with_the_key():
    prof = one_plugin(InterPodAffinity, cluster(NODES))
    p = pod("web", labels={"app": "web"}, affinity=_affinity("podAffinity", _term({"app": "web"}, ZONE)))
    assert feasible(prof, p) == ["n1", "n2", "n3"]
    other = pod("x", labels={"app": "x"}, affinity=_affinity("podAffinity", _term({"app": "web"}, ZONE)))
    assert feasible(prof, other) == []  # it does not match its own term


def test_required_anti_affinity():
    h = cluster(NODES, [pod("w1", labels={"app": "web"}, node_name="n1")])
    prof = one_plugin(InterPodAffinity, h)
    p = pod("w2", labels={"app": "web"}, affinity=_affinity("podAntiAffinity", _term({"app": "web"}, HOST)))
    out, _, _ = run_filter(prof, p)
    assert out["n1"].reasons == ("node(s) didn't match pod anti-affinity rules",)
    assert out["n1"].code.name == "UNSCHEDULABLE"
    assert [n for n, s in out.items() if s is None] == ["n2", "n3", "nozone"]


def test_existing_pods_anti_affinity_is_respected():
    guard = pod("guard", labels={"app": "guard"}, node_name="n1",
                affinity=_affinity("podAntiAffinity", _term({"app": "web"}, ZONE)))
    prof = one_plugin(InterPodAffinity, cluster(NODES, [guard]))
    out, _, _ = run_filter(prof, pod("w", labels={"app": "web"}))
    assert out["n1"].reasons == out["n2"].reasons == ("node(s) didn't satisfy existing pods anti-affinity rules",)
    assert out["n3"] is None and out["nozone"] is None
    assert feasible(prof, pod("other", labels={"app": "other"})) == ["n1", "n2", "n3", "nozone"]


def test_namespaces_of_terms():
    db = pod("db", namespace="data", labels={"app": "db"}, node_name="n3")
    prof = one_plugin(InterPodAffinity, cluster(NODES, [db]))
    same_ns = pod("w", labels={"app": "web"}, affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE)))
    assert feasible(prof, same_ns) == []  # default: only the pod's own namespace
    listed = pod("w", labels={"app": "web"},
                 affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE, namespaces=["data"])))
    assert feasible(prof, listed) == ["n3"]
    everywhere = pod("w", labels={"app": "web"},
                     affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE, namespaceSelector={})))
    assert feasible(prof, everywhere) == ["n3"]


def test_namespace_selector_uses_namespace_labels():
    db = pod("db", namespace="data", labels={"app": "db"}, node_name="n3")
    labels = {"data": {"team": "storage"}, "default": {}}
    h = cluster(NODES, [db], namespace_labels=lambda ns: labels.get(ns, {}))
    prof = one_plugin(InterPodAffinity, h)
    sel = {"matchLabels": {"team": "storage"}}
    p = pod("w", affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE, namespaceSelector=sel)))
    assert feasible(prof, p) == ["n3"]
    sel = {"matchLabels": {"team": "web"}}
    p = pod("w", affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE, namespaceSelector=sel)))
    assert feasible(prof, p) == []


def test_no_terms_anywhere_skips():
    prof = one_plugin(InterPodAffinity, cluster(NODES))
    _, st, _ = run_filter(prof, pod())
    assert st.is_success()


# -- scoring -----------------------------------------------------------------------------------

def _weighted(weight, term):
    return {"weight": weight, "podAffinityTerm": term}


def test_preferred_affinity_and_anti_affinity():
    h = cluster(NODES[:3], [pod("db", labels={"app": "db"}, node_name="n1")])
    prof = one_plugin(InterPodAffinity, h)
    aff = _affinity("podAffinity", _weighted(5, _term({"app": "db"}, ZONE)), required=False)
    assert run_score(prof, pod("w", affinity=aff)) == {"n1": 100, "n2": 100, "n3": 0}
    anti = _affinity("podAntiAffinity", _weighted(5, _term({"app": "db"}, ZONE)), required=False)
    assert run_score(prof, pod("w", affinity=anti)) == {"n1": 0, "n2": 0, "n3": 100}


def test_existing_pods_preferences_and_hard_affinity_weight():
    fan = pod("fan", labels={"app": "fan"}, node_name="n3", affinity=_affinity(
        "podAffinity", _weighted(10, _term({"app": "web"}, HOST)), required=False))
    buddy = pod("buddy", labels={"app": "buddy"}, node_name="n2",
                affinity=_affinity("podAffinity", _term({"app": "web"}, HOST)))
    h = cluster(NODES[:3], [fan, buddy])
    prof = one_plugin(InterPodAffinity, h)
    # n3 +10 (fan's preference), n2 +1 (buddy's required term times hardPodAffinityWeight 1)
    assert run_score(prof, pod("w", labels={"app": "web"})) == {"n1": 0, "n2": 10, "n3": 100}
    prof = one_plugin(InterPodAffinity, h, {"hardPodAffinityWeight": 0})
    assert run_score(prof, pod("w", labels={"app": "web"})) == {"n1": 0, "n2": 0, "n3": 100}
    prof = one_plugin(InterPodAffinity, h, {"ignorePreferredTermsOfExistingPods": True})
    assert run_score(prof, pod("w", labels={"app": "web"})) is None


def test_scoring_skips_without_any_term():
    prof = one_plugin(InterPodAffinity, cluster(NODES, [pod("db", labels={"app": "db"}, node_name="n1")]))
    assert run_score(prof, pod("w")) is None


def test_add_and_remove_pod_extensions_update_counts():
    """What preemption does: removing the only matching pod makes anti-affinity pass."""
    from pyk8s.scheduler.framework import CycleState
    from pyk8s.scheduler.podinfo import pod_info

    w1 = pod("w1", labels={"app": "web"}, node_name="n1")
    h = cluster(NODES, [w1])
    prof = one_plugin(InterPodAffinity, h)
    p = pod_info(pod("w2", labels={"app": "web"}, affinity=_affinity("podAntiAffinity", _term({"app": "web"}, ZONE))))
    state = CycleState()
    prof.run_pre_filter(state, p, h.cache.table)
    row = h.cache.table.index["n1"]
    assert not prof.run_filter_with_nominated_pods(state, p, h.cache.table, row).is_success()
    victim = h.cache.get_pod(w1)
    h.cache.table.remove_pod(row, victim)
    prof.run_pre_filter_extension_remove_pod(state, p, victim, h.cache.table, row)
    assert prof.run_filter_with_nominated_pods(state, p, h.cache.table, row).is_success()
    h.cache.table.add_pod(row, victim)
    prof.run_pre_filter_extension_add_pod(state, p, victim, h.cache.table, row)
    assert not prof.run_filter_with_nominated_pods(state, p, h.cache.table, row).is_success()


@pytest.mark.parametrize("n_pods", [50])
def test_many_pods_counted_through_the_label_index(n_pods):
    pods = [pod(f"db{i}", labels={"app": "db", "i": str(i)}, node_name="n1") for i in range(n_pods)]
    pods += [pod(f"x{i}", labels={"app": "x"}, node_name="n3") for i in range(n_pods)]
    prof = one_plugin(InterPodAffinity, cluster(NODES, pods))
    p = pod("w", affinity=_affinity("podAffinity", _term({"app": "db"}, ZONE)))
    assert feasible(prof, p) == ["n1", "n2"]


def test_handle_default_namespace_labels():
    assert Handle().namespace_labels("demo") == {"kubernetes.io/metadata.name": "demo"}
