"""The whole cluster network, as a user's first real app meets it: three nodes (each in its own network
namespace, `pyk8s agent` with its kubelet, service proxy, flannel routes and network policy), the server
on the host with cluster DNS, and busybox pods calling each other by Service name.

A frontend pod on node 0 calls the `web` Service by its short name, its namespace-qualified name and
its full name (resolv.conf search paths, cluster DNS, the proxy's DNAT to pods on all three nodes,
flannel between nodes); a StatefulSet's pods by their stable names; an ExternalName alias; a NodePort
on every node from the host; a pod reaching the API server through `kubernetes.default.svc` with
kubectl's in-cluster config; and teardown leaving no namespace, link or route behind.
"""

from __future__ import annotations

import os
import re
import urllib.request

import pytest

from tests.cluster import kubectl_binaries
from tests.e2e.netns_cluster import NetnsCluster, leftovers

pytestmark = [pytest.mark.xdist_group("cluster-network"), pytest.mark.timeout(300)]

NS = "demo"
HTTPD = ("mkdir -p /www && echo $(hostname) > /www/index.html && echo ok > /tmp/ready && "
         "exec httpd -f -p 8080 -h /www")


def _web() -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": NS},
        "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "web"}},
                 "template": {"metadata": {"labels": {"app": "web"}}, "spec": {
                     "terminationGracePeriodSeconds": 0,
                     # one per node, so the calls below cross nodes
                     "topologySpreadConstraints": [{"maxSkew": 1, "topologyKey": "kubernetes.io/hostname",
                                                    "whenUnsatisfiable": "DoNotSchedule",
                                                    "labelSelector": {"matchLabels": {"app": "web"}}}],
                     "containers": [{"name": "httpd", "image": "busybox:e2e", "command": ["sh", "-c", HTTPD],
                                     "ports": [{"name": "http", "containerPort": 8080}],
                                     "readinessProbe": {"exec": {"command": ["cat", "/tmp/ready"]},
                                                        "periodSeconds": 1}}]}}}}


def _apply(nc: NetnsCluster, doc: dict) -> None:
    import json

    nc.kubectl("apply", "-f", "-", input=json.dumps(doc))


def _in_pod(nc: NetnsCluster, pod: str, script: str, timeout: float = 30) -> str:
    r = nc.pod_exec(pod, "sh", "-c", script, ns=NS, check=False, timeout=timeout)
    return r.stdout + r.stderr


@pytest.fixture(scope="module")
def net(tmp_path_factory: pytest.TempPathFactory):
    nc = NetnsCluster(tmp_path_factory.mktemp("cluster-network"), nodes=3)
    with nc:
        nc.kubectl("create", "namespace", NS)
        _apply(nc, _web())
        _apply(nc, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": NS},
                    "spec": {"type": "NodePort", "selector": {"app": "web"},
                             "ports": [{"name": "http", "port": 80, "targetPort": "http"}]}})
        _apply(nc, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "db", "namespace": NS},
                    "spec": {"clusterIP": "None", "selector": {"app": "db"},
                             "ports": [{"name": "http", "port": 8080}]}})
        _apply(nc, {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
                    "spec": {"serviceName": "db", "replicas": 2, "selector": {"matchLabels": {"app": "db"}},
                             "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                                 "terminationGracePeriodSeconds": 0,
                                 "containers": [{"name": "db", "image": "busybox:e2e",
                                                 "command": ["sh", "-c", HTTPD]}]}}}})
        _apply(nc, {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "alias", "namespace": NS},
                    "spec": {"type": "ExternalName", "externalName": f"web.{NS}.svc.cluster.local"}})
        kubectl = kubectl_binaries()["1.33"]
        _apply(nc, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "frontend", "namespace": NS},
                    "spec": {"nodeName": nc.node_names[0], "terminationGracePeriodSeconds": 0,
                             "containers": [{"name": "c", "image": "busybox:e2e", "command": ["sleep", "3600"],
                                             "volumeMounts": [{"name": "kubectl", "mountPath": "/usr/local/bin/kubectl",
                                                               "readOnly": True}]}],
                             "volumes": [{"name": "kubectl", "hostPath": {"path": os.path.realpath(kubectl),
                                                                          "type": "File"}}]}})
        nc.wait(lambda: len([p for p in nc.pods(NS, "app=web") if _ready(p)]) == 3, 90, "3 web pods ready")
        nc.wait(lambda: len([p for p in nc.pods(NS, "app=db") if _ready(p)]) == 2, 90, "2 db pods ready")
        nc.wait_running("frontend", 60, ns=NS)
        yield nc
    assert leftovers(nc.tag) == []


def _ready(p: dict) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions", []))


def test_frontend_calls_backend_by_name_across_nodes(net: NetnsCluster) -> None:
    pods = net.pods(NS, "app=web")
    assert {p["spec"]["nodeName"] for p in pods} == set(net.node_names)  # one per node
    names = {p["metadata"]["name"] for p in pods}
    seen: set[str] = set()
    for host in ("web", f"web.{NS}", f"web.{NS}.svc.cluster.local"):
        out = _in_pod(net, "frontend", f"for i in 1 2 3 4 5 6 7 8 9; do wget -q -O - http://{host}/; done")
        got = set(out.split())
        assert got <= names, (host, out)
        seen |= got
    assert len(seen) >= 2, seen  # spread over pods on other nodes too


def test_resolv_conf_and_cluster_dns_records(net: NetnsCluster) -> None:
    conf = _in_pod(net, "frontend", "cat /etc/resolv.conf")
    assert f"search {NS}.svc.cluster.local svc.cluster.local cluster.local" in conf
    assert "nameserver 10.96.0.10" in conf and "options ndots:5" in conf
    svc = net.get(f"/api/v1/namespaces/{NS}/services/web")
    out = _in_pod(net, "frontend", f"nslookup web.{NS}.svc.cluster.local")
    assert svc["spec"]["clusterIP"] in out, out
    db0 = net.pod("db-0", NS)["status"]["podIP"]
    out = _in_pod(net, "frontend", f"nslookup db-0.db.{NS}.svc.cluster.local")
    assert db0 in out, out
    assert _in_pod(net, "frontend", f"wget -q -O - http://db-0.db.{NS}.svc.cluster.local:8080/").strip() == "db-0"
    out = _in_pod(net, "frontend", f"nslookup -type=srv _http._tcp.db.{NS}.svc.cluster.local")
    assert "db-0.db" in out and "db-1.db" in out, out
    out = _in_pod(net, "frontend", f"nslookup alias.{NS}.svc.cluster.local")
    assert f"web.{NS}.svc.cluster.local" in out, out  # the CNAME
    out = _in_pod(net, "frontend", "nslookup no-such-service.default.svc.cluster.local")
    assert "NXDOMAIN" in out or "can't find" in out, out


def test_nodeport_on_every_node_from_the_host(net: NetnsCluster) -> None:
    svc = net.get(f"/api/v1/namespaces/{NS}/services/web")
    port = svc["spec"]["ports"][0]["nodePort"]
    names = {p["metadata"]["name"] for p in net.pods(NS, "app=web")}
    for ip in net.node_ips:
        with urllib.request.urlopen(f"http://{ip}:{port}/", timeout=10) as r:
            assert r.read().decode().strip() in names


def test_each_nodes_proxy_serves_its_metrics_on_the_node_loopback(net: NetnsCluster) -> None:
    """`pyk8s agent`'s service proxy: kube-proxy's 127.0.0.1:10249/metrics in the node's own network."""
    import sys

    from prometheus_client.parser import text_string_to_metric_families

    fetch = "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"
    for node in range(len(net.node_ips)):
        text = net.node_exec(node, sys.executable, "-c", fetch, "http://127.0.0.1:10249/metrics").stdout
        syncs = [s for f in text_string_to_metric_families(text) for s in f.samples
                 if s.name == "kubeproxy_sync_proxy_rules_duration_seconds_count"]
        assert syncs and syncs[0].value >= 1, text[:2000]
        # loopback only, as upstream's default: not on the node's address
        r = net.node_exec(node, sys.executable, "-c", fetch, f"http://{net.node_ips[node]}:10249/metrics", check=False)
        assert r.returncode != 0


def test_kubectl_in_a_pod_reaches_the_api_through_the_kubernetes_service(net: NetnsCluster) -> None:
    env = _in_pod(net, "frontend", "echo $KUBERNETES_SERVICE_HOST:$KUBERNETES_SERVICE_PORT")
    assert env.strip() == "10.96.0.1:443"
    out = _in_pod(net, "frontend", "kubectl auth whoami -o jsonpath='{.status.userInfo.username}'")
    assert out.strip() == f"system:serviceaccount:{NS}:default", out
    out = _in_pod(net, "frontend", "kubectl get pods 2>&1")
    assert re.search(r'forbidden: User "system:serviceaccount:demo:default" cannot list resource "pods"', out), out
