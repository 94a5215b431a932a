"""PodTopologySpread: skew filter, minDomains, inclusion policies, matchLabelKeys, scoring, defaults."""

from __future__ import annotations

from pyk8s.scheduler.plugins.pod_topology_spread import PodTopologySpread
from pyk8s.scheduler.selectors import selector_from_set

from ._fixtures import cluster, feasible, node, one_plugin, pod, run_filter, run_score

ZONE = "topology.kubernetes.io/zone"
HOST = "kubernetes.io/hostname"
NODES = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}),
         node("x", labels={ZONE: "z2"}), node("y", labels={ZONE: "z2"})]
FOO = {"app": "foo"}


def _foo_on(*nodes, **kw):
    return [pod(f"foo-{i}", labels=FOO, node_name=n, **kw) for i, n in enumerate(nodes)]


def _c(key, skew=1, when="DoNotSchedule", **extra):
    return {"maxSkew": skew, "topologyKey": key, "whenUnsatisfiable": when,
            "labelSelector": {"matchLabels": FOO}, **extra}


def _spread(*constraints, labels=FOO, **kw):
    return pod("new", labels=labels, topologySpreadConstraints=list(constraints), **kw)


def test_zone_skew():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "b", "x")))
    # z1 has 2, z2 has 1: placing in z1 gives skew 2+1-1 = 2 > 1
    out, _, _ = run_filter(prof, _spread(_c(ZONE)))
    assert [n for n, s in out.items() if s is None] == ["x", "y"]
    assert out["a"].reasons == ("node(s) didn't match pod topology spread constraints",)
    assert out["a"].code.name == "UNSCHEDULABLE"


def test_hostname_skew():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "b", "x")))
    assert feasible(prof, _spread(_c(HOST))) == ["y"]
    assert feasible(prof, _spread(_c(HOST, skew=2))) == ["a", "b", "x", "y"]


def test_missing_topology_label_is_unresolvable():
    prof = one_plugin(PodTopologySpread, cluster(NODES + [node("nolabel")], _foo_on("a")))
    out, _, _ = run_filter(prof, _spread(_c(ZONE)))
    assert out["nolabel"].reasons == ("node(s) didn't match pod topology spread constraints (missing required label)",)
    assert out["nolabel"].code.name == "UNSCHEDULABLE_AND_UNRESOLVABLE"


def test_pod_not_matching_its_own_selector():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "b", "x")))
    assert feasible(prof, _spread(_c(ZONE), labels={"app": "bar"})) == ["a", "b", "x", "y"]


def test_min_domains_treats_global_minimum_as_zero():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "b", "x")))
    assert feasible(prof, _spread(_c(ZONE, minDomains=3))) == []
    assert feasible(prof, _spread(_c(ZONE, skew=2, minDomains=3))) == ["x", "y"]


def test_node_affinity_policy():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "b")))
    # Honor (default): only z1 nodes (matching the nodeSelector) form domains -> min is z1's 2
    p = _spread(_c(ZONE), nodeSelector={ZONE: "z1"})
    assert feasible(prof, p) == ["a", "b", "x", "y"]
    p = _spread(_c(ZONE, nodeAffinityPolicy="Ignore"), nodeSelector={ZONE: "z1"})
    assert feasible(prof, p) == ["x", "y"]  # z2 counts with 0 pods


def test_node_taints_policy():
    nodes = NODES[:2] + [node("x", labels={ZONE: "z2"}, taints=[{"key": "k", "effect": "NoSchedule"}])]
    prof = one_plugin(PodTopologySpread, cluster(nodes, _foo_on("a")))
    assert feasible(prof, _spread(_c(ZONE))) == ["x"]  # Ignore (default): z2 is a domain with 0
    assert feasible(prof, _spread(_c(ZONE, nodeTaintsPolicy="Honor"))) == ["a", "b", "x"]  # only z1 counts


def test_match_label_keys_narrow_the_selector():
    old = [pod(f"old-{i}", labels={**FOO, "pod-template-hash": "v1"}, node_name=n) for i, n in enumerate("ab")]
    prof = one_plugin(PodTopologySpread, cluster(NODES, old))
    c = _c(ZONE, matchLabelKeys=["pod-template-hash"])
    assert feasible(prof, _spread(c, labels={**FOO, "pod-template-hash": "v2"})) == ["a", "b", "x", "y"]
    assert feasible(prof, _spread(c, labels={**FOO, "pod-template-hash": "v1"})) == ["x", "y"]


def test_terminating_and_other_namespace_pods_do_not_count():
    pods = _foo_on("a", "b")
    pods[0]["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    pods.append(pod("elsewhere", namespace="other", labels=FOO, node_name="b"))
    prof = one_plugin(PodTopologySpread, cluster(NODES, pods))
    assert feasible(prof, _spread(_c(HOST))) == ["a", "x", "y"]


def test_schedule_anyway_constraints_do_not_filter():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "a", "a")))
    _, st, _ = run_filter(prof, _spread(_c(HOST, when="ScheduleAnyway")))
    assert st.is_success()
    assert feasible(prof, _spread(_c(HOST, when="ScheduleAnyway"))) == ["a", "b", "x", "y"]


# -- scoring -----------------------------------------------------------------------------------

def test_score_hostname():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "a", "b")))
    # weight log(4+2): a 2*1.79 = 3.58 -> 4, b 1.79 -> 2, x y 0; normalised 100*(max+min-s)/max
    assert run_score(prof, _spread(_c(HOST, when="ScheduleAnyway"))) == {"a": 0, "b": 50, "x": 100, "y": 100}


def test_score_zone():
    prof = one_plugin(PodTopologySpread, cluster(NODES, _foo_on("a", "a", "b")))
    # z1 holds 3; weight log(2 zones + 2) = 1.386 -> 4.16 -> 4; z2 0
    assert run_score(prof, _spread(_c(ZONE, when="ScheduleAnyway"))) == {"a": 0, "b": 0, "x": 100, "y": 100}


def test_score_ignores_nodes_without_the_keys():
    prof = one_plugin(PodTopologySpread, cluster(NODES + [node("bare")], _foo_on("a")))
    got = run_score(prof, _spread(_c(ZONE, when="ScheduleAnyway")))
    assert got["bare"] == 0
    assert got["x"] == 100 and got["a"] == 0


def test_system_default_constraints_need_workload_selectors():
    nodes = [node("a", labels={ZONE: "z1"}), node("b", labels={ZONE: "z1"}), node("x", labels={ZONE: "z2"}),
             node("n")]
    pods = _foo_on("a", "a")
    plain = one_plugin(PodTopologySpread, cluster(nodes, pods))
    assert run_score(plain, pod("new", labels=FOO)) is None  # no Service/ReplicaSet known: no selector
    h = cluster(nodes, pods, workload_selectors=lambda p: [selector_from_set(FOO)])
    prof = one_plugin(PodTopologySpread, h)
    # hostname maxSkew 3 (weight log 6), zone maxSkew 5 (pairs z1, z2 and "" for n: weight log 5)
    # a: 2*1.792+2 + 2*1.609+4 = 12.80 -> 13; b: 2 + 7.22 -> 9; x: 2 + 4 -> 6; n: 2 (no zone label)
    # normalised 100*(13+2-s)/13
    assert run_score(prof, pod("new", labels=FOO)) == {"a": 15, "b": 46, "x": 69, "n": 100}
    _, st, _ = run_filter(prof, pod("new", labels=FOO))
    assert st.is_success()  # defaults are ScheduleAnyway: PreFilter skips


def test_list_defaulting_uses_given_constraints():
    args = {"defaultingType": "List", "defaultConstraints": [
        {"maxSkew": 1, "topologyKey": ZONE, "whenUnsatisfiable": "DoNotSchedule"}]}
    h = cluster(NODES, _foo_on("a", "b", "x"), workload_selectors=lambda p: [selector_from_set(FOO)])
    prof = one_plugin(PodTopologySpread, h, args)
    assert feasible(prof, pod("new", labels=FOO)) == ["x", "y"]


def test_add_and_remove_pod_extensions_update_domain_counts():
    """What preemption does: removing matching pods from a node lowers its domain's count."""
    import numpy as np

    from pyk8s.scheduler.framework import CycleState
    from pyk8s.scheduler.podinfo import pod_info

    pods = _foo_on("a", "a", "x")
    h = cluster(NODES, pods)
    prof = one_plugin(PodTopologySpread, h)
    p = pod_info(_spread(_c(HOST)))
    table = h.cache.table
    state = CycleState()
    prof.run_pre_filter(state, p, table)
    row = table.index["a"]
    rows = np.arange(table.n)
    assert not prof.run_filter_with_nominated_pods(state, p, table, row).is_success()
    for victim in [h.cache.get_pod(pods[0]), h.cache.get_pod(pods[1])]:
        table.remove_pod(row, victim)
        prof.run_pre_filter_extension_remove_pod(state, p, victim, table, row)
    assert prof.run_filter_with_nominated_pods(state, p, table, row).is_success()
    other_ns = pod_info(pod("o", namespace="other", labels=FOO))
    prof.run_pre_filter_extension_add_pod(state, p, other_ns, table, row)  # other namespaces never count
    assert prof.run_filter_with_nominated_pods(state, p, table, row).is_success()
    assert rows.size == 4
