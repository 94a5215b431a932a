"""Services over real runc pods on two nodes, each node a network namespace running `pyk8s agent` (and so
its service proxy) against a server on the host (tests/e2e/netns_cluster.py).

A selector Service: the endpointslice controller makes the slices from the pods, each node's proxy
programs them, and a pod reaches the Service's ClusterIP from inside its container (busybox
wget, through its node's rules); each node serves the NodePort; a pod whose readiness probe fails
leaves the Service; stopping the nodes takes their tables along.
"""

from __future__ import annotations

import collections
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.netns_cluster import NetnsCluster

pytestmark = [pytest.mark.xdist_group("service-proxy-nodes"), pytest.mark.timeout(300)]


def web_pod(name: str, node: str) -> dict[str, Any]:
    # busybox httpd answers its pod name; ready while /tmp/ready exists
    script = ("echo $(hostname) > /tmp/index.html; touch /tmp/ready; echo serving; "
              "exec httpd -f -p 8080 -h /tmp")
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox:e2e", "command": ["sh", "-c", script],
                                     "ports": [{"name": "http", "containerPort": 8080}],
                                     "readinessProbe": {"exec": {"command": ["test", "-f", "/tmp/ready"]},
                                                        "periodSeconds": 1, "failureThreshold": 1}}]}}


@pytest.fixture(scope="module")
def nc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NetnsCluster]:
    c = NetnsCluster(tmp_path_factory.mktemp("svcnodes"), nodes=2)
    with c:
        for i, node in enumerate(c.node_names):
            c.create(web_pod(f"web{i}", node))
        for i in range(2):
            c.wait_running(f"web{i}", 90)
        c.create({"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web"},
                  "spec": {"type": "NodePort", "selector": {"app": "web"},
                           "ports": [{"port": 80, "targetPort": "http"}]}})
        yield c


def fetch(nc: NetnsCluster, pod: str, ip: str, port: int = 80) -> str:
    """The body of GET / from inside the pod (busybox nc: this busybox's static wget cannot resolve)."""
    r = nc.pod_exec(pod, "sh", "-c", f"printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 2 {ip} {port}", check=False)
    lines = r.stdout.strip().splitlines()
    return lines[-1].strip() if r.returncode == 0 and lines else f"error {r.returncode} {r.stderr.strip()}"


def test_pods_reach_a_selector_service_on_both_nodes(nc: NetnsCluster) -> None:
    svc = nc.get("/api/v1/namespaces/default/services/web")
    assert svc is not None
    url = svc["spec"]["clusterIP"]
    nc.wait(lambda: fetch(nc, "web0", url) in ("web0", "web1"), 30, "the ClusterIP from a pod")
    got = collections.Counter(fetch(nc, "web0", url) for _ in range(16))
    # both endpoints, the one on the other node included (and web0 reaching itself: hairpin)
    assert set(got) == {"web0", "web1"}, got


def test_each_node_serves_the_node_port_from_the_host(nc: NetnsCluster) -> None:
    import urllib.request

    svc = nc.get("/api/v1/namespaces/default/services/web")
    assert svc is not None
    port = svc["spec"]["ports"][0]["nodePort"]

    def get(ip: str) -> str:
        try:
            with urllib.request.urlopen(f"http://{ip}:{port}/", timeout=2) as r:
                return str(r.read().decode().strip())
        except OSError as e:
            return f"error {e}"

    for ip in nc.node_ips:
        nc.wait(lambda ip=ip: get(ip) in ("web0", "web1"), 20, f"NodePort on {ip}")  # type: ignore[misc]


def test_a_pod_failing_readiness_leaves_the_service(nc: NetnsCluster) -> None:
    svc = nc.get("/api/v1/namespaces/default/services/web")
    assert svc is not None
    url = svc["spec"]["clusterIP"]

    def web1_ready() -> bool | None:
        for sl in nc.get("/apis/discovery.k8s.io/v1/namespaces/default/endpointslices?"
                         "labelSelector=kubernetes.io/service-name%3Dweb")["items"]:
            for ep in sl.get("endpoints") or ():
                if (ep.get("targetRef") or {}).get("name") == "web1":
                    return bool((ep.get("conditions") or {}).get("ready"))
        return None

    nc.pod_exec("web1", "rm", "/tmp/ready")
    try:
        nc.wait(lambda: web1_ready() is False, 60, "web1 not ready in its EndpointSlice")
        nc.wait(lambda: {fetch(nc, "web0", url) for _ in range(3)} == {"web0"}, 30, "web1 out of the Service")
        assert {fetch(nc, "web0", url) for _ in range(6)} == {"web0"}  # and it stays out
    finally:
        nc.pod_exec("web1", "touch", "/tmp/ready")
    nc.wait(lambda: web1_ready() is True, 60, "web1 ready again")
    nc.wait(lambda: "web1" in {fetch(nc, "web0", url) for _ in range(6)}, 60, "web1 back")


def test_stopping_a_node_removes_its_table(nc: NetnsCluster) -> None:
    assert "pyk8s-proxy" in nc.node_exec(1, "nft", "list", "tables").stdout
    nc.agents[1].stop()
    try:
        assert "pyk8s-proxy" not in nc.node_exec(1, "nft", "list", "tables").stdout
    finally:
        nc.agents[1].start()  # its kubelet must be back to remove web1 in teardown


def test_the_kubernetes_service_reaches_the_api_server(nc: NetnsCluster) -> None:
    """10.96.0.1:443 (the `kubernetes` Service, whose endpoints are the address the server
    advertises) from a node and from a pod: TLS with the cluster CA, /version answered."""
    import os
    import sys

    code = ("import json, ssl, sys, urllib.request\n"
            "ctx = ssl.create_default_context(cafile=sys.argv[1])\n"
            "print(json.load(urllib.request.urlopen('https://10.96.0.1/version', context=ctx, timeout=5))"
            "['gitVersion'])\n")
    ca = os.path.join(nc.cluster.data_dir, "pki", "ca.crt")
    out = nc.wait(lambda: nc.node_exec(0, sys.executable, "-c", code, ca, check=False).stdout.strip(), 20,
                  "the API through 10.96.0.1 from a node")
    assert out.startswith("v1.33")
    # from inside a pod: a TCP connection through the node's rules (busybox has no TLS client)
    r = nc.pod_exec("web1", "sh", "-c", "nc -w 1 10.96.0.1 443 </dev/null; echo rc=$?", check=False)
    assert "rc=0" in r.stdout, r.stdout + r.stderr
