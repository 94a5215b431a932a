"""Endpoints and EndpointSlice controllers through a real server.

Pods here are bound to Node objects we create and their status is written by the test
(what a kubelet would report), so addresses and readiness are under the test's control.
Upstream references: pkg/controller/endpoint, pkg/controller/endpointslice, and the
observed transcript (`kubectl get endpoints` shows <none>, a placeholder slice <unset>).
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from tests.cluster import Cluster
from tests.integration.test_gc import get_or_none, req, wait_for

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
SVCS = f"/api/v1/namespaces/{NS}/services"
EPS = f"/api/v1/namespaces/{NS}/endpoints"
SLICES = f"/apis/discovery.k8s.io/v1/namespaces/{NS}/endpointslices"
MERGE = "application/merge-patch+json"


def node(c: Cluster, name: str, zone: str | None = None) -> None:
    if get_or_none(c, f"/api/v1/nodes/{name}") is not None:
        return
    labels = {"kubernetes.io/hostname": name}
    if zone:
        labels["topology.kubernetes.io/zone"] = zone
    req(c, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name, "labels": labels}})


def pod(c: Cluster, name: str, labels: dict[str, str], node_name: str = "ep-node1",
        ports: list[dict[str, Any]] | None = None, finalizers: list[str] | None = None, **spec: Any) -> dict[str, Any]:
    wait_for(lambda: get_or_none(c, f"/api/v1/namespaces/{NS}/serviceaccounts/default"), what="default SA")
    md: dict[str, Any] = {"name": name, "labels": labels}
    if finalizers:
        md["finalizers"] = finalizers
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": md,
            "spec": {"nodeName": node_name, "containers": [{"name": "c", "image": "nginx", "ports": ports or []}],
                     **spec}}
    return req(c, "POST", PODS, body)


def set_status(c: Cluster, name: str, ip: str | None, ready: bool, phase: str = "Running") -> None:
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    st: dict[str, Any] = {"phase": phase, "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": now}]}
    if ip:
        st["podIP"] = ip
        st["podIPs"] = [{"ip": ip}]
    req(c, "PATCH", f"{PODS}/{name}/status", {"status": st}, MERGE)


def service(c: Cluster, name: str, selector: dict[str, str] | None, ports: list[dict[str, Any]],
            **spec: Any) -> dict[str, Any]:
    body = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "labels": {"team": "a"}},
            "spec": {"ports": ports, **spec}}
    if selector is not None:
        body["spec"]["selector"] = selector
    return req(c, "POST", SVCS, body)


def slices_of(c: Cluster, svc: str) -> list[dict[str, Any]]:
    return req(c, "GET", f"{SLICES}?labelSelector=kubernetes.io%2Fservice-name%3D{svc}")["items"]


def force_delete(c: Cluster, path: str) -> None:
    from tests.cluster import raw_request

    raw_request(c, "DELETE", path, {"gracePeriodSeconds": 0})


def test_addresses_ready_not_ready_and_named_ports(cluster):
    node(cluster, "ep-node1", zone="zone-a")
    svc = service(cluster, "web", {"app": "web"},
                  [{"name": "http", "port": 80, "targetPort": "http"}, {"name": "metrics", "port": 9100}])
    pod(cluster, "web-1", {"app": "web"}, ports=[{"name": "http", "containerPort": 8080}])
    pod(cluster, "web-2", {"app": "web"}, ports=[{"name": "http", "containerPort": 9090}])
    pod(cluster, "web-3", {"app": "web"}, ports=[{"name": "http", "containerPort": 8080}])  # no IP yet
    pod(cluster, "other", {"app": "other"}, ports=[{"name": "http", "containerPort": 8080}])
    set_status(cluster, "web-1", "10.244.1.5", ready=True)
    set_status(cluster, "web-2", "10.244.1.6", ready=False)
    set_status(cluster, "other", "10.244.1.9", ready=True)

    def endpoints_settled():
        ep = get_or_none(cluster, f"{EPS}/web")
        if not ep or len(ep.get("subsets") or []) != 2:
            return None
        return ep

    ep = wait_for(endpoints_settled, what="two subsets")
    by_ports = {tuple(p["port"] for p in s["ports"]): s for s in ep["subsets"]}
    ready = by_ports[(8080, 9100)]
    assert [a["ip"] for a in ready["addresses"]] == ["10.244.1.5"] and "notReadyAddresses" not in ready
    a = ready["addresses"][0]
    assert a["nodeName"] == "ep-node1"
    assert a["targetRef"]["kind"] == "Pod" and a["targetRef"]["name"] == "web-1" and a["targetRef"]["namespace"] == NS
    nr = by_ports[(9090, 9100)]
    assert [a["ip"] for a in nr["notReadyAddresses"]] == ["10.244.1.6"] and "addresses" not in nr
    assert sorted((p["name"], p["protocol"]) for p in nr["ports"]) == [("http", "TCP"), ("metrics", "TCP")]
    assert ep["metadata"]["labels"] == {"team": "a"}
    assert "endpoints.kubernetes.io/last-change-trigger-time" in ep["metadata"]["annotations"]

    slices = wait_for(lambda: (lambda s: s if len(s) == 2 and all(x.get("endpoints") for x in s) else None)(
        slices_of(cluster, "web")), what="two slices")
    for s in slices:
        md = s["metadata"]
        assert md["generateName"] == "web-" and md["name"].startswith("web-")
        assert md["labels"] == {"team": "a", "kubernetes.io/service-name": "web",
                                "endpointslice.kubernetes.io/managed-by": "endpointslice-controller.k8s.io"}
        assert md["ownerReferences"] == [{"apiVersion": "v1", "kind": "Service", "name": "web",
                                          "uid": svc["metadata"]["uid"], "controller": True,
                                          "blockOwnerDeletion": True}]
        assert s["addressType"] == "IPv4"
        assert "endpoints.kubernetes.io/last-change-trigger-time" in md["annotations"]
    by_ip = {s["endpoints"][0]["addresses"][0]: s for s in slices}
    e1 = by_ip["10.244.1.5"]["endpoints"][0]
    assert e1["conditions"] == {"ready": True, "serving": True, "terminating": False}
    assert e1["nodeName"] == "ep-node1" and e1["zone"] == "zone-a" and e1["targetRef"]["name"] == "web-1"
    assert sorted((p["name"], p["port"]) for p in by_ip["10.244.1.5"]["ports"]) == [("http", 8080), ("metrics", 9100)]
    e2 = by_ip["10.244.1.6"]["endpoints"][0]
    assert e2["conditions"] == {"ready": False, "serving": False, "terminating": False}

    # readiness flips move the address
    set_status(cluster, "web-2", "10.244.1.6", ready=True)
    wait_for(lambda: all("notReadyAddresses" not in s for s in get_or_none(cluster, f"{EPS}/web")["subsets"]),
             what="web-2 ready")
    out = cluster.kubectl("get", "endpoints", "web").stdout
    assert "10.244.1.5:8080" in out and "10.244.1.6:9090" in out
    desc = cluster.kubectl("describe", "svc", "web").stdout
    assert "10.244.1.5:8080" in desc


def test_placeholder_slice_and_empty_endpoints(cluster):
    node(cluster, "ep-node1")
    service(cluster, "empty", {"app": "empty"}, [{"port": 80, "targetPort": 80}])
    pod(cluster, "empty-1", {"app": "empty"})  # Pending, no IP: not an endpoint
    ep = wait_for(lambda: get_or_none(cluster, f"{EPS}/empty"), what="endpoints")
    assert not ep.get("subsets")
    s = wait_for(lambda: slices_of(cluster, "empty"), what="placeholder slice")
    assert len(s) == 1 and not s[0].get("endpoints") and not s[0].get("ports")
    out = cluster.kubectl("get", "endpoints", "empty").stdout.splitlines()
    assert out[0].split() == ["NAME", "ENDPOINTS", "AGE"] and out[1].split()[:2] == ["empty", "<none>"]
    out = cluster.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=empty").stdout.splitlines()
    assert out[1].split()[1:4] == ["IPv4", "<unset>", "<unset>"]
    placeholder = s[0]["metadata"]["name"]
    set_status(cluster, "empty-1", "10.244.2.7", ready=True)
    s = wait_for(lambda: (lambda x: x if len(x) == 1 and x[0].get("endpoints") else None)(slices_of(cluster, "empty")),
                 what="placeholder filled")
    assert s[0]["metadata"]["name"] == placeholder  # reused rather than deleted and recreated
    assert s[0]["ports"] == [{"name": "", "port": 80, "protocol": "TCP"}]
    out = cluster.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=empty").stdout.splitlines()
    assert out[1].split()[1:4] == ["IPv4", "80", "10.244.2.7"]


def test_terminating_pods_and_publish_not_ready_addresses(cluster):
    node(cluster, "ep-node1")
    service(cluster, "term", {"app": "term"}, [{"port": 80}])
    service(cluster, "term-all", {"app": "term"}, [{"port": 80}], publishNotReadyAddresses=True)
    pod(cluster, "term-1", {"app": "term"}, finalizers=["example.com/hold"])
    pod(cluster, "term-2", {"app": "term"})
    set_status(cluster, "term-1", "10.244.3.1", ready=True)
    set_status(cluster, "term-2", "10.244.3.2", ready=False)
    wait_for(lambda: len((get_or_none(cluster, f"{EPS}/term") or {}).get("subsets") or []) == 1
             and len(get_or_none(cluster, f"{EPS}/term")["subsets"][0].get("addresses") or []) == 1, what="term eps")
    req(cluster, "DELETE", f"{PODS}/term-1")  # graceful: stays Terminating (its node has no kubelet)

    def excluded():
        ep = get_or_none(cluster, f"{EPS}/term")
        ips = [a["ip"] for s in ep.get("subsets") or [] for a in (s.get("addresses") or []) + (s.get("notReadyAddresses") or [])]
        return ips == ["10.244.3.2"]

    wait_for(excluded, what="terminating pod out of Endpoints")

    def term_slice():
        eps = [e for s in slices_of(cluster, "term") for e in s.get("endpoints") or []]
        t = [e for e in eps if e["targetRef"]["name"] == "term-1"]
        return t[0] if t and t[0]["conditions"]["terminating"] else None

    e = wait_for(term_slice, what="terminating endpoint in slice")
    assert e["conditions"] == {"ready": False, "serving": True, "terminating": True}
    # publishNotReadyAddresses: everything with an IP is a ready address, terminating or not
    ep = wait_for(lambda: (lambda ep: ep if ep and sum(len(s.get("addresses") or []) for s in ep.get("subsets") or []) == 2
                           else None)(get_or_none(cluster, f"{EPS}/term-all")), what="term-all")
    assert all("notReadyAddresses" not in s for s in ep["subsets"])
    eps = {e["targetRef"]["name"]: e["conditions"] for s in slices_of(cluster, "term-all") for e in s.get("endpoints") or []}
    assert eps["term-1"] == {"ready": True, "serving": True, "terminating": True}
    assert eps["term-2"] == {"ready": True, "serving": False, "terminating": False}
    req(cluster, "PATCH", f"{PODS}/term-1", {"metadata": {"finalizers": None}}, MERGE)
    force_delete(cluster, f"{PODS}/term-1")


def test_selector_change_and_service_deletion(cluster):
    node(cluster, "ep-node1")
    service(cluster, "sel", {"app": "blue"}, [{"port": 80}])
    pod(cluster, "sel-blue", {"app": "blue"})
    pod(cluster, "sel-green", {"app": "green"})
    set_status(cluster, "sel-blue", "10.244.4.1", ready=True)
    set_status(cluster, "sel-green", "10.244.4.2", ready=True)

    def ips():
        ep = get_or_none(cluster, f"{EPS}/sel") or {}
        return sorted(a["ip"] for s in ep.get("subsets") or [] for a in s.get("addresses") or [])

    wait_for(lambda: ips() == ["10.244.4.1"], what="blue")
    req(cluster, "PATCH", f"{SVCS}/sel", {"spec": {"selector": {"app": "green"}}}, MERGE)
    wait_for(lambda: ips() == ["10.244.4.2"], what="green")
    wait_for(lambda: [e["addresses"][0] for s in slices_of(cluster, "sel") for e in s.get("endpoints") or []]
             == ["10.244.4.2"], what="green slice")
    # pod label change moves it in and out
    req(cluster, "PATCH", f"{PODS}/sel-blue", {"metadata": {"labels": {"app": "green"}}}, MERGE)
    wait_for(lambda: ips() == ["10.244.4.1", "10.244.4.2"], what="relabelled pod joins")
    force_delete(cluster, f"{PODS}/sel-blue")
    wait_for(lambda: ips() == ["10.244.4.2"], what="deleted pod leaves")
    req(cluster, "DELETE", f"{SVCS}/sel")
    wait_for(lambda: get_or_none(cluster, f"{EPS}/sel") is None, what="endpoints deleted with the service")
    wait_for(lambda: not slices_of(cluster, "sel"), what="slices collected with the service")


def test_slices_hold_at_most_100_endpoints(cluster):
    node(cluster, "ep-node1")
    service(cluster, "big", {"app": "big"}, [{"port": 80}])
    n = 130
    pod(cluster, "big-0", {"app": "big"})  # waits for the default service account

    async def bulk() -> None:
        # one keep-alive client: 260 requests over fresh TLS connections would dominate the test
        from pyk8s.client import Client

        cl = Client.from_kubeconfig(cluster.kubeconfig)
        pods = ("", "v1", "pods")

        async def one(i: int) -> None:
            if i:
                await cl.create(pods, {"apiVersion": "v1", "kind": "Pod",
                                       "metadata": {"name": f"big-{i}", "labels": {"app": "big"}},
                                       "spec": {"nodeName": "ep-node1", "containers": [{"name": "c", "image": "x"}]}},
                                NS)
            ip = f"10.245.{i // 200}.{i % 200 + 1}"
            await cl.patch(pods, f"big-{i}", {"status": {"phase": "Running", "podIP": ip, "podIPs": [{"ip": ip}],
                                                         "conditions": [{"type": "Ready", "status": "True"}]}},
                           NS, sub="status")

        await asyncio.gather(*(one(i) for i in range(n)))
        await cl.close()

    asyncio.run(bulk())

    def settled():
        s = slices_of(cluster, "big")
        counts = sorted(len(x.get("endpoints") or []) for x in s)
        return counts if sum(counts) == n else None

    counts = wait_for(settled, timeout=30, what="130 endpoints in slices")
    assert max(counts) <= 100 and len(counts) == 2, counts
    ep = get_or_none(cluster, f"{EPS}/big")
    assert sum(len(s.get("addresses") or []) for s in ep["subsets"]) == n
    req(cluster, "DELETE", f"/api/v1/namespaces/{NS}/pods?labelSelector=app%3Dbig", {"gracePeriodSeconds": 0})


def test_selectorless_and_kubernetes_services_are_left_alone(cluster):
    service(cluster, "manual", None, [{"port": 80}])
    time.sleep(1.0)
    assert get_or_none(cluster, f"{EPS}/manual") is None
    assert slices_of(cluster, "manual") == []
    # the kubernetes service: never a managed slice from this controller
    s = [x for x in slices_of(cluster, "kubernetes")
         if x["metadata"]["labels"].get("endpointslice.kubernetes.io/managed-by") == "endpointslice-controller.k8s.io"]
    assert s == []
