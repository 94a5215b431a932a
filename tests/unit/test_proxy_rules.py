"""Pure rule generation of the service proxy (pyk8s.proxy.serviceport and nftables_rules)."""

from __future__ import annotations

from typing import Any

from pyk8s.proxy.nftables_rules import TableConfig, diff, fragment, full_sync
from pyk8s.proxy.serviceport import service_ports

CFG = TableConfig(cluster_cidr="10.244.0.0/16")


def svc(name: str, ip: str, **spec: Any) -> dict[str, Any]:
    s = {"metadata": {"namespace": "ns", "name": name},
         "spec": {"clusterIP": ip, "clusterIPs": [ip], "ports": [{"name": "p", "port": 80, "protocol": "TCP"}]}}
    s["spec"].update(spec)
    return s


def slice_(name: str, eps: list[tuple[str, str, dict[str, Any]]], port: int = 8080, port_name: str = "p",
           family: str = "IPv4") -> dict[str, Any]:
    return {"metadata": {"namespace": "ns", "name": f"{name}-x", "labels": {"kubernetes.io/service-name": name}},
            "addressType": family, "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [ip], "nodeName": node, "conditions": cond} for ip, node, cond in eps]}


def ready(ip: str, node: str = "n1") -> tuple[str, str, dict[str, Any]]:
    return ip, node, {"ready": True}


def test_headless_and_external_name_services_get_no_rules() -> None:
    assert service_ports(svc("h", "None"), [], 4, "n1") == []
    assert service_ports(svc("e", "", type="ExternalName", externalName="x.example"), [], 4, "n1") == []
    other = svc("o", "10.96.0.9")
    other["metadata"]["labels"] = {"service.kubernetes.io/service-proxy-name": "someone-else"}
    assert service_ports(other, [], 4, "n1") == []


def test_only_ready_endpoints_then_serving_terminating_ones() -> None:
    s = svc("w", "10.96.0.5")
    eps = [ready("10.244.0.2"), ("10.244.0.3", "n1", {"ready": False, "serving": True, "terminating": True})]
    (sp,) = service_ports(s, [slice_("w", eps)], 4, "n1")
    assert [e.ip for e in sp.cluster_endpoints] == ["10.244.0.2"]
    eps[0] = ("10.244.0.2", "n1", {"ready": False, "serving": False, "terminating": True})
    (sp,) = service_ports(s, [slice_("w", eps)], 4, "n1")
    assert [e.ip for e in sp.cluster_endpoints] == ["10.244.0.3"]


def test_named_port_comes_from_each_slice_and_the_family_filters_slices() -> None:
    s = svc("w", "10.96.0.5")
    slices = [slice_("w", [ready("10.244.0.2")], port=8080), slice_("w", [ready("10.244.0.3")], port=9090),
              slice_("w", [ready("fd00::3")], port=7070, family="IPv6"), slice_("w", [ready("10.244.0.4")], port_name="q")]
    (sp,) = service_ports(s, slices, 4, "n1")
    assert [(e.ip, e.port) for e in sp.cluster_endpoints] == [("10.244.0.2", 8080), ("10.244.0.3", 9090)]
    assert service_ports(s, slices, 6, "n1") == []  # no IPv6 ClusterIP


def test_no_endpoints_reject_and_local_policy_without_local_endpoints_drops() -> None:
    s = svc("w", "10.96.0.5")
    fr = fragment(CFG, service_ports(s, [], 4, "n1"))
    assert fr.elements["no-endpoint-services"] == {"10.96.0.5 . tcp . 80": "goto reject-chain"}
    assert "service-ips" not in fr.elements
    s = svc("w", "10.96.0.5", internalTrafficPolicy="Local")
    fr = fragment(CFG, service_ports(s, [slice_("w", [ready("10.244.1.2", "n2")])], 4, "n1"))
    assert fr.elements["no-endpoint-services"] == {"10.96.0.5 . tcp . 80": "drop"}


def test_cluster_ip_traffic_from_outside_the_cluster_cidr_is_masqueraded_and_hairpin_too() -> None:
    fr = fragment(CFG, service_ports(svc("w", "10.96.0.5"), [slice_("w", [ready("10.244.0.2")])], 4, "n1"))
    (chain,) = [c for c in fr.chains if c.startswith("service-")]
    assert fr.chains[chain][0] == ("ip daddr 10.96.0.5 tcp dport 80 ip saddr != 10.244.0.0/16 "
                                   "jump mark-for-masquerade")
    (ep,) = [c for c in fr.chains if c.startswith("endpoint-")]
    assert fr.chains[ep] == ["ip saddr 10.244.0.2 jump mark-for-masquerade",
                             "meta l4proto tcp dnat to 10.244.0.2:8080"]


def test_external_traffic_policy_local_uses_local_endpoints_for_nodeports() -> None:
    s = svc("w", "10.96.0.5", type="NodePort", externalTrafficPolicy="Local",
            ports=[{"name": "p", "port": 80, "protocol": "TCP", "nodePort": 30080}])
    fr = fragment(CFG, service_ports(s, [slice_("w", [ready("10.244.0.2"), ready("10.244.1.2", "n2")])], 4, "n1"))
    (local,) = [c for c in fr.chains if c.startswith("local-")]
    assert fr.chains[local] == [f"goto {[c for c in fr.chains if '10.244.0.2' in c][0]}"]
    (ext,) = [c for c in fr.chains if c.startswith("external-")]
    assert fr.elements["service-nodeports"] == {"tcp . 30080": f"goto {ext}"}
    assert "mark-for-masquerade" not in fr.chains[ext][-1]


def test_ipv6_rules_use_ip6_and_bracketed_dnat() -> None:
    cfg = TableConfig(family="ip6", cluster_cidr="fd00:10:244::/56")
    s = svc("w", "fd00::5", clusterIPs=["10.96.0.5", "fd00::5"], ipFamilies=["IPv4", "IPv6"])
    fr = fragment(cfg, service_ports(s, [slice_("w", [ready("fd00:10:244::2")], family="IPv6")], 6, "n1"))
    (ep,) = [c for c in fr.chains if c.startswith("endpoint-")]
    assert fr.chains[ep][-1] == "meta l4proto tcp dnat to [fd00:10:244::2]:8080"
    assert "fd00::5 . tcp . 80" in fr.elements["service-ips"]


def _many(n: int, eps: int = 10) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    svcs = [svc(f"s{i}", f"10.96.{i // 250}.{i % 250 + 1}") for i in range(n)]
    slices = [slice_(f"s{i}", [ready(f"10.244.{i // 25}.{(i % 25) * 10 + j}") for j in range(eps)])
              for i in range(n)]
    return svcs, slices


def test_an_endpoint_change_touches_only_that_services_chains() -> None:
    """As upstream's nftables mode: a sync's transaction grows with the change, not the table."""
    svcs, slices = _many(300)
    frags = [fragment(CFG, service_ports(s, [sl], 4, "n1")) for s, sl in zip(svcs, slices, strict=True)]
    first = full_sync(CFG, frags, set(), set())
    assert len(first) > 300 * 10
    slices[7]["endpoints"].pop()
    new = fragment(CFG, service_ports(svcs[7], [slices[7]], 4, "n1"))
    cmds = [c for phase in diff(CFG, frags[7], new) for c in phase]
    assert 0 < len(cmds) < 10, cmds
    assert all("ns/s7/" in c or "service-ips" not in c for c in cmds)
    assert not any("ns/s8/" in c for c in cmds)
    removed = [c for c in cmds if c.startswith("delete chain")]
    assert len(removed) == 1 and "__" in removed[0]  # the endpoint's chain
    assert [c for phase in diff(CFG, new, new) for c in phase] == []


def test_a_full_sync_removes_what_an_earlier_run_left_and_keeps_what_it_reuses() -> None:
    fr = fragment(CFG, service_ports(svc("w", "10.96.0.5"), [slice_("w", [ready("10.244.0.2")])], 4, "n1"))
    keep = next(c for c in fr.chains if c.startswith("service-"))
    cmds = full_sync(CFG, [fr], {keep, "service-OLD-ns/gone/tcp/p", "services"}, {"affinity-OLD-x", "service-ips"})
    assert cmds[1] == "flush table ip pyk8s-proxy"
    assert "delete chain ip pyk8s-proxy service-OLD-ns/gone/tcp/p" in cmds
    assert "delete set ip pyk8s-proxy affinity-OLD-x" in cmds
    assert not any(c.startswith("delete") and (keep in c or c.endswith(" services") or "service-ips" in c)
                   for c in cmds)


def test_session_affinity_sets_carry_the_timeout() -> None:
    s = svc("w", "10.96.0.5", sessionAffinity="ClientIP", sessionAffinityConfig={"clientIP": {"timeoutSeconds": 30}})
    fr = fragment(CFG, service_ports(s, [slice_("w", [ready("10.244.0.2"), ready("10.244.0.3")])], 4, "n1"))
    assert list(fr.sets.values()) == [30, 30]
    cmds = diff(CFG, None, fr)[0]
    assert any("flags dynamic,timeout ; timeout 30s" in c for c in cmds)
    s["spec"]["sessionAffinityConfig"]["clientIP"]["timeoutSeconds"] = 60
    fr2 = fragment(CFG, service_ports(s, [slice_("w", [ready("10.244.0.2"), ready("10.244.0.3")])], 4, "n1"))
    assert set(fr2.sets).isdisjoint(fr.sets)  # a new timeout is a new set; the old ones are deleted
    last = diff(CFG, fr, fr2)[2]
    assert sum(c.startswith("delete set") for c in last) == 2
