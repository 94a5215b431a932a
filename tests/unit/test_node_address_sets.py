"""The node-address sets kept from Node events by the DNS server's client ACL and the built-in load
balancer: heartbeats (status updates that change no address) must not rebuild them, and a real
change of address, readiness or exclusion must."""

from __future__ import annotations

from typing import Any

from pyk8s.api.nodeview import node_ip_view as acl_view
from pyk8s.dns.acl import ClientACL
from pyk8s.proxy.servicelb import EXCLUDE_LABEL, ingress_for, lb_view, node_addresses, node_contribution


def node(name: str, *addrs: tuple[str, str], ready: bool = True, labels: dict[str, str] | None = None,
         heartbeat: str = "2026-11-27T00:00:00Z") -> dict[str, Any]:
    return {"metadata": {"name": name, "labels": labels or {}},
            "status": {"addresses": [{"type": t, "address": a} for t, a in addrs],
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False",
                                       "lastHeartbeatTime": heartbeat}]}}


def test_acl_follows_address_changes_and_ignores_heartbeats() -> None:
    acl = ClientACL([])
    acl.set_node(node("n1", ("InternalIP", "198.51.100.7")))
    assert acl.allows("198.51.100.7")
    ips = acl._node_ips
    acl.set_node(node("n1", ("InternalIP", "198.51.100.7"), heartbeat="2026-11-27T00:00:10Z"))
    assert acl._node_ips is ips  # not rebuilt
    acl.set_node(node("n1", ("InternalIP", "198.51.100.8")))
    assert acl.allows("198.51.100.8")
    assert not acl.allows("198.51.100.7")  # the old address is no node's any more
    acl.delete_node(node("n1"))
    assert not acl.allows("198.51.100.8")
    acl.delete_node(node("n1"))  # a second delete is harmless


def test_servicelb_addresses() -> None:
    nodes = [
        node("a", ("InternalIP", "10.0.0.10")),
        node("b", ("InternalIP", "10.0.0.9"), ("ExternalIP", "203.0.113.5")),  # external wins
        node("c", ("InternalIP", "10.0.0.2"), ready=False),
        node("d", ("InternalIP", "10.0.0.3"), labels={EXCLUDE_LABEL: ""}),
        node("e", ("InternalIP", "fd00::1")),
    ]
    assert node_contribution(nodes[2]) == () and node_contribution(nodes[3]) == ()
    assert node_addresses(nodes) == ["10.0.0.10", "203.0.113.5", "fd00::1"]  # address order, not string order
    svc = {"metadata": {"name": "s", "namespace": "default", "creationTimestamp": "2026-11-27T00:00:00Z"},
           "spec": {"type": "LoadBalancer", "ports": [{"port": 80}], "ipFamilies": ["IPv4"]}}
    dual = {"metadata": {"name": "t", "namespace": "default", "creationTimestamp": "2026-11-27T00:00:01Z"},
            "spec": {"type": "LoadBalancer", "ports": [{"port": 81}], "ipFamilies": ["IPv6", "IPv4"]}}
    taken = dict(svc, metadata=dict(svc["metadata"], name="u", creationTimestamp="2026-11-27T00:00:02Z"))
    out = ingress_for([svc, dual, taken], nodes)
    assert [i["ip"] for i in out["default/s"]] == ["10.0.0.10", "203.0.113.5"]
    assert [i["ip"] for i in out["default/t"]] == ["10.0.0.10", "203.0.113.5", "fd00::1"]
    assert out["default/u"] == []  # port 80 is the older Service's


def test_servicelb_keeps_only_what_it_reads_of_a_node() -> None:
    full = node("b", ("InternalIP", "10.0.0.9"), ("ExternalIP", "203.0.113.5"), ("Hostname", "b"),
                labels={"kubernetes.io/hostname": "b", "zone": "z1"})
    full["metadata"].update(resourceVersion="7", managedFields=[{"manager": "kubelet"}], annotations={"a": "b"})
    full["status"]["conditions"].append({"type": "MemoryPressure", "status": "False"})
    full["status"].update(capacity={"cpu": "4"}, images=[{"names": ["busybox"]}], nodeInfo={"kubeletVersion": "v"})
    view = lb_view(full)
    assert view == {"metadata": {"name": "b", "resourceVersion": "7", "labels": {}},
                    "status": {"conditions": [{"type": "Ready", "status": "True"}],
                               "addresses": [{"type": "InternalIP", "address": "10.0.0.9"},
                                             {"type": "ExternalIP", "address": "203.0.113.5"}]}}
    cases = [full, node("c", ("InternalIP", "10.0.0.2"), ready=False),
             node("d", ("InternalIP", "10.0.0.3"), labels={EXCLUDE_LABEL: ""}), {"metadata": {"name": "e"}}]
    for n in cases:
        assert node_contribution(lb_view(n)) == node_contribution(n), n
    # a heartbeat gives the same view: nothing to redo
    assert lb_view(node("a", ("InternalIP", "10.0.0.1"))) == lb_view(
        node("a", ("InternalIP", "10.0.0.1"), heartbeat="2026-11-27T00:00:10Z"))


def test_dns_acl_keeps_only_the_addresses_of_a_node() -> None:
    full = node("n1", ("InternalIP", "198.51.100.7"), ("Hostname", "n1"), ("ExternalIP", "203.0.113.9"))
    full["metadata"].update(resourceVersion="3", labels={"a": "b"}, managedFields=[{"manager": "kubelet"}])
    view = acl_view(full)
    assert view == {"metadata": {"name": "n1", "resourceVersion": "3"},
                    "status": {"addresses": [{"type": "InternalIP", "address": "198.51.100.7"},
                                             {"type": "ExternalIP", "address": "203.0.113.9"}]}}
    whole, viewed = ClientACL([]), ClientACL([])
    whole.set_node(full)
    viewed.set_node(view)
    assert whole.node_addresses == viewed.node_addresses == {"n1": {"198.51.100.7", "203.0.113.9"}}
    assert acl_view({"metadata": {"name": "x"}}) == {"metadata": {"name": "x", "resourceVersion": None},
                                                    "status": {"addresses": []}}
