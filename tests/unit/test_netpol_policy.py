"""NetworkPolicy semantics (pyk8s.netpol.policy) and the nft diff (pyk8s.netpol.nftables), pure logic.

The packets themselves are tested in tests/e2e/test_networkpolicy_rig.py."""

from __future__ import annotations

from typing import Any

from pyk8s.netpol.nftables import render_diff
from pyk8s.netpol.policy import compute_ruleset, effective_policy_types, pod_info

NODE = "n1"


def pod(ns: str, name: str, ip: str, labels: dict[str, str], node: str = NODE, ports: Any = (),
        **extra: Any) -> dict[str, Any]:
    spec: dict[str, Any] = {"nodeName": node, "containers": [{"name": "c", "ports": [
        {"name": n, "containerPort": p, "protocol": proto} for n, p, proto in ports]}]}
    spec.update(extra.pop("spec", {}))
    return {"metadata": {"namespace": ns, "name": name, "labels": labels}, "spec": spec,
            "status": {"podIP": ip, "phase": extra.pop("phase", "Running")}}


def policy(ns: str, name: str, **spec: Any) -> dict[str, Any]:
    spec.setdefault("podSelector", {})
    return {"metadata": {"namespace": ns, "name": name}, "spec": spec}


PODS = [pod("x", "a", "10.0.0.1", {"pod": "a"}, ports=[("http", 8080, "TCP"), ("dns", 53, "UDP")]),
        pod("x", "b", "10.0.0.2", {"pod": "b"}, ports=[("http", 9090, "TCP")]),
        pod("y", "a", "10.0.1.1", {"pod": "a"}, node="n2"),
        pod("y", "h", "10.9.9.9", {"pod": "a"}, spec={"hostNetwork": True}),
        pod("y", "done", "10.0.1.7", {"pod": "a"}, phase="Succeeded")]
NS = {"x": {"team": "red"}, "y": {"team": "blue"}}


def sets_of(rs: Any, suffix: str) -> list[frozenset[str]]:
    return [s.elements for n, s in sorted(rs.sets.items()) if n.endswith(suffix)]


def test_policy_types_default_as_upstream() -> None:
    assert effective_policy_types({}) == (True, False)
    assert effective_policy_types({"egress": [{}]}) == (True, True)
    assert effective_policy_types({"policyTypes": ["Egress"], "ingress": [{}]}) == (False, True)


def test_pods_without_their_own_live_ip_take_no_part() -> None:
    assert pod_info(PODS[3]) is None and pod_info(PODS[4]) is None
    assert pod_info(pod("x", "p", "", {})) is None
    assert pod_info(pod("x", "v6", "fd00::1", {})) is None


def test_only_local_selected_pods_are_isolated_with_one_chain_per_policy_combination() -> None:
    rs = compute_ruleset([policy("x", "p1"), policy("x", "p2", podSelector={"matchLabels": {"pod": "a"}}),
                          policy("y", "remote")], PODS, NS, NODE)
    assert set(rs.ingress) == {"10.0.0.1", "10.0.0.2"} and rs.egress == {}
    assert rs.ingress["10.0.0.1"] != rs.ingress["10.0.0.2"]
    combo = rs.chains[rs.ingress["10.0.0.1"]]
    assert combo[-1] == "drop" and len(combo) == 3  # both policies, then drop (default deny)
    assert not any("remote" in r for c in rs.chains.values() for r in c)
    # each isolated local pod may always reach itself (through its own Service)
    assert rs.sets["self-pairs"].elements == {"10.0.0.1 . 10.0.0.1", "10.0.0.2 . 10.0.0.2"}


def test_peers_namespace_and_pod_selectors_and_the_terminal_pod_left_out() -> None:
    rs = compute_ruleset([policy("x", "p", ingress=[{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "blue"}}, "podSelector": {"matchLabels": {"pod": "a"}}},
        {"podSelector": {"matchLabels": {"pod": "b"}}}]}])], PODS, NS, NODE)
    assert sets_of(rs, "-peers") == [frozenset({"10.0.1.1", "10.0.0.2"})]


def test_null_selector_is_absent_and_invalid_selector_selects_nothing() -> None:
    rs = compute_ruleset([policy("x", "p", ingress=[
        {"from": [{"namespaceSelector": {}, "podSelector": None}]},
        {"from": [{"podSelector": {"matchExpressions": [{"key": "pod", "operator": "Bogus"}]}}]}])], PODS, NS, NODE)
    assert sets_of(rs, "-peers") == [frozenset({"10.0.0.1", "10.0.0.2", "10.0.1.1"}), frozenset()]


def test_ip_block_except_is_carved_out_and_elements_never_overlap() -> None:
    rs = compute_ruleset([policy("x", "p", ingress=[{"from": [
        {"ipBlock": {"cidr": "10.1.0.0/30", "except": ["10.1.0.1/32", "10.2.0.0/16"]}},
        {"ipBlock": {"cidr": "10.1.0.0/31"}}, {"ipBlock": {"cidr": "fd00::/64"}}]}])], PODS, NS, NODE)
    # 10.1.0.0/30 minus .1 = {.0, .2/31}; plus 10.1.0.0/31 again: {.0/30} minus nothing... merged exactly
    assert sets_of(rs, "-peers") == [frozenset({"10.1.0.0/30"})]
    rs = compute_ruleset([policy("x", "p", ingress=[{"from": [
        {"ipBlock": {"cidr": "10.1.0.0/24", "except": ["10.1.0.128/25", "10.1.0.5/32"]}}]}])], PODS, NS, NODE)
    assert sets_of(rs, "-peers") == [frozenset({"10.1.0.0/30", "10.1.0.4", "10.1.0.6/31", "10.1.0.8/29",
                                                "10.1.0.16/28", "10.1.0.32/27", "10.1.0.64/26"})]


def test_ports_end_port_protocols_merge_and_named_ports_resolve_per_destination() -> None:
    rs = compute_ruleset([policy("x", "p", ingress=[{"ports": [
        {"port": 80, "endPort": 90}, {"port": 85}, {"port": 91}, {"protocol": "UDP"}, {"port": "http"},
        {"port": "dns", "protocol": "UDP"}, {"port": "dns"}]}])], PODS, NS, NODE)
    assert sets_of(rs, "-ports") == [frozenset({"tcp . 80-91", "udp . 0-65535"})]
    # http on each selected pod with its own number; dns only as UDP (the TCP "dns" names nothing)
    assert sets_of(rs, "-named") == [frozenset({"10.0.0.1 . tcp . 8080", "10.0.0.2 . tcp . 9090",
                                                "10.0.0.1 . udp . 53"})]


def test_egress_named_port_resolves_on_any_destination_pod_and_unknown_name_allows_nothing() -> None:
    rs = compute_ruleset([policy("x", "p", policyTypes=["Egress"], egress=[
        {"ports": [{"port": "http"}]}, {"ports": [{"port": "nope"}]}])], PODS, NS, NODE)
    assert sets_of(rs, "-named") == [frozenset({"10.0.0.1 . tcp . 8080", "10.0.0.2 . tcp . 9090"}), frozenset()]
    assert all("ip daddr . meta l4proto" in r for r in rs.chains[next(c for c in rs.chains if c.endswith("-eg"))])


def test_diff_touches_only_what_changed() -> None:
    pols = [policy("x", "p", ingress=[{"from": [{"podSelector": {}}]}])]
    old = compute_ruleset(pols, PODS, NS, NODE)
    assert render_diff("t", old, old) == ""
    moved = [pod("x", "b", "10.0.0.3", {"pod": "b"}), *PODS[:1]]
    new = compute_ruleset(pols, moved, NS, NODE)
    script = render_diff("t", old, new).splitlines()
    name = next(iter(new.sets))
    assert f"delete element inet t {name} {{ 10.0.0.2 }}" in script
    assert f"add element inet t {name} {{ 10.0.0.3 }}" in script
    assert "delete element inet t ingress-pods { 10.0.0.2 }" in script
    assert not any(line.startswith(("flush", "delete chain", "delete set", "add rule")) for line in script)
    gone = render_diff("t", old, compute_ruleset([], PODS, NS, NODE)).splitlines()
    assert gone[-1].startswith("delete set") and any(line.startswith("delete chain") for line in gone)


def test_hostile_status_and_specs_never_reach_nft_unparsed_nor_widen_access() -> None:
    """A pod status is written by kubelets (or anyone with pods/status): an address that is not one, or a
    port out of range, must neither break the transaction (nft syntax) nor open more than asked."""
    evil = [pod("x", "e1", "10.0.0.9 }; flush ruleset; add element inet t s { 1.2.3.4", {"pod": "a"}),
            pod("x", "e2", "010.0.0.9", {"pod": "a"}),
            pod("x", "e3", "10.0.0.8", {"pod": "a"}, ports=[("http", 70000, "TCP"), ("http", True, "TCP")])]
    assert pod_info(evil[0]) is None and pod_info(evil[1]) is None
    assert pod_info(evil[2]) is not None and pod_info(evil[2]).ports == ()  # type: ignore[union-attr]
    rs = compute_ruleset([policy("x", "p", ingress=[{"from": [{"podSelector": {}}], "ports": [
        {"port": 0}, {"port": 70000}, {"port": 80, "endPort": 99999}, {"port": "http"}, {"port": 1.5}]}])],
        evil, NS, NODE)
    assert sets_of(rs, "-peers") == [frozenset({"10.0.0.8"})]
    assert sets_of(rs, "-ports") == [frozenset({"tcp . 80"})]
    assert sets_of(rs, "-named") == []  # "http" named nothing valid: no rule for it


def test_a_stored_name_cannot_inject_into_the_rule_comment() -> None:
    rs = compute_ruleset([policy("x", 'p" accept; flush ruleset; "', ingress=[{}])], PODS, NS, NODE)
    (rule,) = rs.chains[next(c for c in rs.chains if c.startswith("pol-"))]
    assert rule == 'accept comment "x/p accept flush ruleset  ingress[0]"'
