"""`pyk8s sim` nodes' kubelet API: declared usage in /metrics/resource and /stats/summary of the node a pod
runs on, reached as metrics-server reaches a kubelet (the node's InternalIP and kubeletEndpoint port), with
a kubelet's authentication and authorization."""

from __future__ import annotations

import http.client
import json
import os
import signal
import ssl
import subprocess
import sys
import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.client_certs import cert_files
from tests.cluster import client_kubeconfig, raw_request
from tests.ha_helper import wait_for

pytestmark = [pytest.mark.xdist_group("sim-stats"), pytest.mark.timeout(120)]

PREFIX = "kstats-sim-"


def _api(cluster: Any, method: str, path: str, body: Any = None) -> Any:
    r = raw_request(cluster, method, path, body)
    assert r.status < 400, (method, path, r.status, r.body[:300])
    return r.json()


@pytest.fixture(scope="module")
def sim(cluster):
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", "2", "--name-prefix", PREFIX,
                             "--creating-seconds", "0", "--cleanup"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        assert proc.stdout is not None
        port = 0
        deadline = time.monotonic() + 30
        while not port and time.monotonic() < deadline:
            line = proc.stdout.readline()
            if "kubelet API (stats) on port" in line:
                port = int(line.rsplit(" ", 1)[1])
        assert port, "pyk8s sim did not say its kubelet port"
        wait_for(lambda: len([n for n in _api(cluster, "GET", "/api/v1/nodes")["items"]
                           if n["metadata"]["name"].startswith(PREFIX)]) == 2, 30, "the simulated nodes")
        for name, sub in (("sim-metrics", "nodes/metrics"), ("sim-nothing", None)):
            _api(cluster, "POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}})
            if sub:
                _api(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
                    "metadata": {"name": f"kstats-{name}"},
                    "rules": [{"apiGroups": [""], "resources": [sub, "nodes/stats"], "verbs": ["get"]}]})
                _api(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
                    "metadata": {"name": f"kstats-{name}"},
                    "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                "name": f"kstats-{name}"},
                    "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]})
        yield port
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=30)


def _token(cluster: Any, sa: str) -> str:
    return str(_api(cluster, "POST", f"/api/v1/namespaces/default/serviceaccounts/{sa}/token",
                    {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})["status"]["token"])


def _endpoint(cluster: Any, node: str) -> tuple[str, int]:
    """Where metrics-server dials a node: its InternalIP and status.daemonEndpoints.kubeletEndpoint.Port."""
    n = _api(cluster, "GET", f"/api/v1/nodes/{node}")
    (ip,) = [a["address"] for a in n["status"]["addresses"] if a["type"] == "InternalIP"]
    return ip, n["status"]["daemonEndpoints"]["kubeletEndpoint"]["Port"]


def _get(ep: tuple[str, int], path: str, token: str | None = None, cert: tuple[str, str] | None = None
         ) -> tuple[int, bytes]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # a kubelet's self-signed serving certificate
    if cert:
        ctx.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection(ep[0], ep[1], context=ctx, timeout=10)
    try:
        conn.request("GET", path, headers={"Authorization": f"Bearer {token}"} if token else {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def _pod_cpu(body: bytes, pod: str) -> tuple[float, float, float]:
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    (cpu,) = [s for s in fams["pod_cpu_usage_seconds"].samples if s.labels["pod"] == pod]
    (mem,) = [s for s in fams["container_memory_working_set_bytes"].samples if s.labels["pod"] == pod]
    return cpu.value, float(cpu.timestamp or 0), mem.value


def test_declared_usage_in_the_nodes_resource_metrics(cluster, sim):
    node, other = f"{PREFIX}0", f"{PREFIX}1"
    _api(cluster, "POST", "/api/v1/namespaces/default/pods", {
        "metadata": {"name": "busy", "annotations": {"sim.pyk8s.io/cpu-usage": "250m",
                                                     "sim.pyk8s.io/memory-usage": "64Mi"}},
        "spec": {"nodeName": node, "containers": [{"name": "app", "image": "busybox"}]}})
    wait_for(lambda: (_api(cluster, "GET", "/api/v1/namespaces/default/pods/busy").get("status") or {})
          .get("phase") == "Running", 30, "pod busy running")
    ep = _endpoint(cluster, node)
    assert ep[0].startswith("127.10.") and ep[1] == sim
    token = _token(cluster, "sim-metrics")
    status, body = _get(ep, "/metrics/resource", token)
    assert status == 200, body[:300]
    cpu0, t0, mem = _pod_cpu(body, "busy")
    assert mem == 64 * 1024 * 1024
    wait_for(lambda: time.time() - t0 >= 2, 5, "a 2 s window")
    cpu1, t1, _ = _pod_cpu(_get(ep, "/metrics/resource", token)[1], "busy")
    assert abs((cpu1 - cpu0) / (t1 - t0) - 0.25) < 0.025, (cpu0, cpu1, t0, t1)
    summary = json.loads(_get(ep, "/stats/summary", token)[1])
    assert summary["node"]["nodeName"] == node
    (p,) = summary["pods"]
    assert p["podRef"]["name"] == "busy" and p["cpu"]["usageNanoCores"] == 250_000_000
    # another node's address is another node: the pod is not there
    other_summary = json.loads(_get(_endpoint(cluster, other), "/stats/summary", token)[1])
    assert other_summary["node"]["nodeName"] == other and other_summary["pods"] == []
    # the declared usage follows the annotation
    raw_request(cluster, "PATCH", "/api/v1/namespaces/default/pods/busy",
                {"metadata": {"annotations": {"sim.pyk8s.io/cpu-usage": "1"}}},
                {"Content-Type": "application/merge-patch+json"})
    wait_for(lambda: json.loads(_get(ep, "/stats/summary", token)[1])["pods"][0]["cpu"]["usageNanoCores"]
          == 10**9, 10, "the new usage")


def test_simulated_kubelet_refuses_as_a_kubelet(cluster, sim):
    ep = _endpoint(cluster, f"{PREFIX}0")
    assert _get(ep, "/metrics/resource") == (401, b"Unauthorized\n")
    status, body = _get(ep, "/metrics/resource", _token(cluster, "sim-nothing"))
    assert status == 403 and body == (b"Forbidden (user=system:serviceaccount:default:sim-nothing, verb=get, "
                                      b"resource=nodes, subresource(s)=[metrics])\n")
    # an address that is no node of this simulator answers nothing about any node
    assert _get(("127.0.0.1", sim), "/stats/summary", _token(cluster, "sim-metrics"))[0] == 404


def test_client_certificate_users_are_authorized_by_their_groups(cluster, sim, tmp_path):
    """A scraper with a certificate of the cluster CA (as metrics-server's) is its CN and O: allowed through a
    binding of its group, refused without one."""
    _api(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
        "metadata": {"name": "kstats-scrapers"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "kstats-sim-metrics"},
        "subjects": [{"kind": "Group", "name": "kstats-scrapers", "apiGroup": "rbac.authorization.k8s.io"}]})
    ep = _endpoint(cluster, f"{PREFIX}1")
    os.makedirs(tmp_path / "ok")
    os.makedirs(tmp_path / "no")
    ok = cert_files(client_kubeconfig(cluster, "kstats-scraper", ["kstats-scrapers"], "kstats-scraper"),
                     str(tmp_path / "ok"))
    no = cert_files(client_kubeconfig(cluster, "kstats-stranger", ["others"], "kstats-stranger"),
                     str(tmp_path / "no"))
    status, body = _get(ep, "/metrics/resource", cert=ok)
    assert status == 200 and b"node_cpu_usage_seconds_total" in body
    assert _get(ep, "/metrics/resource", cert=no) == (403, b"Forbidden (user=kstats-stranger, verb=get, "
                                                          b"resource=nodes, subresource(s)=[metrics])\n")
