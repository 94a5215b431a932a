"""flannel's route planning (pyk8s.flannel.plan): which route each other node's pod network gets."""

from __future__ import annotations

from typing import Any

from pyk8s.flannel.plan import HOST_GW, VXLAN, node_annotations, plan_routes


def node(name: str, cidr: str, ip: str, mac: str = "0a:00:00:00:00:01", backend: str = "auto",
         **extra_ann: str) -> dict[str, Any]:
    return {"metadata": {"name": name, "annotations": {**node_annotations(backend, ip, mac, 1), **extra_ann}},
            "spec": {"podCIDR": cidr}}


def plan(nodes: list[dict[str, Any]], backend: str = "auto", link: set[str] | None = None) -> dict[str, Any]:
    on_link = link if link is not None else {"10.0.0.2", "10.0.0.3"}
    return plan_routes("me", "10.0.0.1", "10.244.0.0/24", nodes, backend, lambda ip: ip in on_link)


def test_auto_routes_directly_on_the_link_and_through_vxlan_elsewhere() -> None:
    routes = plan([node("a", "10.244.1.0/24", "10.0.0.2"), node("b", "10.244.2.0/24", "192.168.9.9", "0a:00:00:00:00:02")])
    assert routes["10.244.1.0/24"].mode == HOST_GW and routes["10.244.1.0/24"].public_ip == "10.0.0.2"
    b = routes["10.244.2.0/24"]
    assert (b.mode, b.vtep_mac, b.vtep_ip, b.public_ip) == (VXLAN, "0a:00:00:00:00:02", "10.244.2.0", "192.168.9.9")


def test_host_gw_skips_nodes_off_the_link_and_vxlan_encapsulates_everything() -> None:
    nodes = [node("a", "10.244.1.0/24", "10.0.0.2"), node("b", "10.244.2.0/24", "192.168.9.9")]
    assert set(plan(nodes, HOST_GW)) == {"10.244.1.0/24"}
    assert {r.mode for r in plan(nodes, VXLAN).values()} == {VXLAN}


def test_nodes_without_flannel_ourselves_and_our_address_get_no_route() -> None:
    bare = {"metadata": {"name": "fake"}, "spec": {"podCIDR": "10.244.5.0/24"}}  # a simulated node: no annotations
    assert plan([bare, node("me", "10.244.0.0/24", "10.0.0.1"),
                 node("same-host", "10.244.3.0/24", "10.0.0.1"), node("no-cidr", "", "10.0.0.2")]) == {}


def test_a_node_cannot_take_our_pods_or_another_nodes_subnet() -> None:
    """A Node's annotations and podCIDR are written by that node: overlapping or bogus ones are ignored."""
    nodes = [node("evil", "10.244.0.0/16", "10.0.0.2"),  # covers our own subnet
             node("a", "10.244.1.0/24", "10.0.0.3"), node("dup", "10.244.1.0/24", "10.0.0.2"),
             node("bad-ip", "10.244.7.0/24", "not-an-ip"),
             node("bad-json", "10.244.8.0/24", "192.168.1.1", **{"flannel.alpha.coreos.com/backend-data": "{"}),
             node("bad-mac", "10.244.9.0/24", "192.168.1.2", mac="")]
    routes = plan(nodes)
    assert set(routes) == {"10.244.1.0/24"} and routes["10.244.1.0/24"].node == "a"


def test_annotations_have_flannels_names_and_shapes() -> None:
    ann = node_annotations("vxlan", "10.0.0.1", "0a:00:00:00:00:01", 1)
    assert ann == {"flannel.alpha.coreos.com/backend-type": "vxlan",
                   "flannel.alpha.coreos.com/backend-data": '{"VNI":1,"VtepMAC":"0a:00:00:00:00:01"}',
                   "flannel.alpha.coreos.com/public-ip": "10.0.0.1",
                   "flannel.alpha.coreos.com/kube-subnet-manager": "true"}
    assert node_annotations("host-gw", "10.0.0.1", "", 1)["flannel.alpha.coreos.com/backend-data"] == "null"


def test_only_what_routes_are_made_of_counts_as_a_change() -> None:
    from pyk8s.flannel.plan import route_inputs

    a = node("a", "10.244.1.0/24", "10.0.0.2")
    beat = {**a, "status": {"conditions": [{"type": "Ready", "status": "True"}]}}
    moved = node("a", "10.244.1.0/24", "10.0.0.9")
    assert route_inputs(a) == route_inputs(beat) != route_inputs(moved)
