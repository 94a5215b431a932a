"""The nodes/services/pods `proxy` subresources, as upstream's.

`kubectl get --raw /api/v1/namespaces/NS/pods/NAME/proxy/PATH` (and services, nodes) reach the
target through the API server with every HTTP method, its query and its body; `kubectl proxy`
reaches them too. As upstream's proxyutil.IsProxyableIP, a loopback or link-local target is
refused (`address not allowed`): the API server must not open its own host's services.
The targets are small HTTP(S) echo servers on this machine's global address.
"""

from __future__ import annotations

import http.server
import json
import os
import re
import socket
import ssl
import subprocess
import threading
import time
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import Cluster, kubectl_binaries, raw_request

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("resource-proxy")

NODE = "px-node"
PODS = "/api/v1/namespaces/default/pods"


def _host_ip() -> str | None:
    """This machine's address on its default route (no packet is sent)."""
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        s.connect(("192.0.2.1", 9))
        return str(s.getsockname()[0])
    except OSError:
        return None
    finally:
        s.close()


class _Echo(http.server.BaseHTTPRequestHandler):
    def _answer(self) -> None:
        n = int(self.headers.get("Content-Length") or 0)
        body = self.rfile.read(n).decode() if n else ""
        out = json.dumps({"method": self.command, "path": self.path, "body": body,
                          "xff": self.headers.get("X-Forwarded-For"), "auth": self.headers.get("Authorization"),
                          "tls": isinstance(self.connection, ssl.SSLSocket)}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("X-Echo", "yes")
        self.send_header("Content-Length", str(len(out)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(out)

    do_GET = do_HEAD = do_POST = do_PUT = do_PATCH = do_DELETE = _answer

    def log_message(self, *args: Any) -> None:
        pass


def _serve(tls_dir: str | None = None) -> http.server.ThreadingHTTPServer:
    srv = http.server.ThreadingHTTPServer(("0.0.0.0", 0), _Echo)
    if tls_dir is not None:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(os.path.join(tls_dir, "tls.crt"), os.path.join(tls_dir, "tls.key"))
        srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


@pytest.fixture(scope="module")
def env(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    ip = _host_ip()
    if ip is None:
        pytest.skip("no global address on this machine")
    d = str(tmp_path_factory.mktemp("kubelet-tls"))
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=px",
                    "-keyout", os.path.join(d, "tls.key"), "-out", os.path.join(d, "tls.crt")],
                   check=True, capture_output=True)
    plain, tls = _serve(), _serve(d)
    port, kport = plain.server_address[1], tls.server_address[1]
    node = {"metadata": {"name": NODE}, "status": {
        "addresses": [{"type": "InternalIP", "address": ip}], "daemonEndpoints": {"kubeletEndpoint": {"Port": kport}}}}
    r = raw_request(cluster, "POST", "/api/v1/nodes", node)
    assert r.status == 201, r.body
    assert _set_node_status(cluster, NODE, node["status"]) == 200
    for name, pod_ip in (("px", ip), ("px-lo", "127.0.0.1"), ("px-ll", "169.254.169.254")):
        pod = {"metadata": {"name": name, "labels": {"app": name}}, "spec": {"nodeName": NODE, "containers": [
            {"name": "c", "image": "busybox", "ports": [{"containerPort": port}]}]}}
        r = raw_request(cluster, "POST", PODS, pod)
        assert r.status == 201, r.body
        got = r.json()
        got["status"] = {**got.get("status", {}), "phase": "Running", "podIP": pod_ip, "podIPs": [{"ip": pod_ip}]}
        r = raw_request(cluster, "PUT", f"{PODS}/{name}/status", got)
        assert r.status == 200, r.body
    yield {"ip": ip, "port": port, "kport": kport}
    plain.shutdown()
    tls.shutdown()


def _set_node_status(cluster: Cluster, name: str, status: dict[str, Any]) -> int:
    r = raw_request(cluster, "PATCH", f"/api/v1/nodes/{name}/status", {"status": status},
                    headers={"Content-Type": "application/merge-patch+json"})
    return r.status


def _get_raw(cluster: Cluster, path: str) -> dict[str, Any]:
    r = cluster.kubectl("get", "--raw", path)
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_pod_proxy_every_method(cluster: Cluster, env: dict[str, Any]) -> None:
    got = _get_raw(cluster, f"{PODS}/px/proxy/hello/there?x=1&y=2")
    assert (got["method"], got["path"], got["tls"]) == ("GET", "/hello/there?x=1&y=2", False)
    assert got["auth"] is None  # the API server's credentials are not passed on
    for method in ("POST", "PUT", "PATCH", "DELETE"):
        r = raw_request(cluster, method, f"{PODS}/px/proxy/m", b"payload-" + method.encode(),
                        headers={"Content-Type": "text/plain"})
        assert r.status == 200, (method, r.body)
        assert r.headers["X-Echo"] == "yes"
        assert r.json()["method"] == method and r.json()["body"] == "payload-" + method
    got = _get_raw(cluster, f"{PODS}/http:px:{env['port']}/proxy/")
    assert got["path"] == "/"


def test_python_client_pod_proxy(cluster: Cluster, env: dict[str, Any]) -> None:
    from kubernetes import client

    api = client.CoreV1Api(cluster.api_client())
    text = api.connect_get_namespaced_pod_proxy_with_path("px", "default", "from/client")
    assert "/from/client" in str(text)


@pytest.mark.parametrize("pod", ["px-lo", "px-ll"])
def test_loopback_and_link_local_pods_are_refused(cluster: Cluster, env: dict[str, Any], pod: str) -> None:
    r = raw_request(cluster, "GET", f"{PODS}/{pod}/proxy/")
    assert r.status == 400
    assert r.json()["message"] == "address not allowed" and r.json()["reason"] == "BadRequest"
    r = cluster.kubectl("get", "--raw", f"{PODS}/{pod}/proxy/", check=False)
    assert r.returncode == 1 and "address not allowed" in r.stderr


def test_bad_proxy_names(cluster: Cluster, env: dict[str, Any]) -> None:
    r = raw_request(cluster, "GET", f"{PODS}/ftp:px:80/proxy/")
    assert r.status == 400 and r.json()["message"] == 'invalid pod request "ftp:px:80"'
    r = raw_request(cluster, "GET", f"{PODS}/nope/proxy/")
    assert r.status == 404 and r.json()["message"] == 'pods "nope" not found'


def test_service_proxy_reaches_a_pod_endpoint(cluster: Cluster, env: dict[str, Any]) -> None:
    svc = {"metadata": {"name": "pxs"}, "spec": {"ports": [{"port": 80, "targetPort": env["port"]}]}}
    assert raw_request(cluster, "POST", "/api/v1/namespaces/default/services", svc).status == 201
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/services/pxs/proxy/")
    assert r.status == 503 and r.json()["message"] == 'no endpoints available for service "pxs"'
    eps = {"metadata": {"name": "pxs"}, "subsets": [{
        "addresses": [{"ip": env["ip"], "targetRef": {"kind": "Pod", "namespace": "default", "name": "px"}}],
        "ports": [{"port": env["port"]}]}]}
    assert raw_request(cluster, "POST", "/api/v1/namespaces/default/endpoints", eps).status == 201
    got = _get_raw(cluster, "/api/v1/namespaces/default/services/pxs/proxy/svc?q=1")
    assert got["path"] == "/svc?q=1"
    got = _get_raw(cluster, "/api/v1/namespaces/default/services/pxs:80/proxy/by-port")
    assert got["path"] == "/by-port"
    r = raw_request(cluster, "POST", "/api/v1/namespaces/default/services/pxs/proxy/post", b"b")
    assert r.status == 200 and r.json()["method"] == "POST"
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/services/pxs:81/proxy/")
    assert r.status == 503 and r.json()["message"] == 'no service port 81 found for service "pxs"'


def test_service_endpoint_that_is_no_pods_ip_is_not_used(cluster: Cluster, env: dict[str, Any]) -> None:
    """As upstream's isValidAddress: a hand-written endpoint that is no pod's address is skipped."""
    svc = {"metadata": {"name": "pxs-lo"}, "spec": {"ports": [{"port": 80}]}}
    assert raw_request(cluster, "POST", "/api/v1/namespaces/default/services", svc).status == 201
    eps = {"metadata": {"name": "pxs-lo"}, "subsets": [{"addresses": [{"ip": "192.0.2.77"}],
                                                         "ports": [{"port": env["port"]}]}]}
    assert raw_request(cluster, "POST", "/api/v1/namespaces/default/endpoints", eps).status == 201
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/services/pxs-lo/proxy/")
    assert r.status == 503, r.body


def test_node_proxy_uses_the_kubelet_port_over_tls(cluster: Cluster, env: dict[str, Any]) -> None:
    got = _get_raw(cluster, f"/api/v1/nodes/{NODE}/proxy/healthz")
    assert (got["path"], got["tls"]) == ("/healthz", True)
    got = _get_raw(cluster, f"/api/v1/nodes/{NODE}:{env['port']}/proxy/other")  # another port: plain HTTP
    assert (got["path"], got["tls"]) == ("/other", False)


def test_node_on_loopback_is_refused(cluster: Cluster, env: dict[str, Any]) -> None:
    node = {"metadata": {"name": "px-lo-node"}}
    r = raw_request(cluster, "POST", "/api/v1/nodes", node)
    assert r.status == 201
    status = {"addresses": [{"type": "InternalIP", "address": "127.0.0.1"}],
              "daemonEndpoints": {"kubeletEndpoint": {"Port": env["kport"]}}}
    assert _set_node_status(cluster, "px-lo-node", status) == 200
    r = raw_request(cluster, "GET", "/api/v1/nodes/px-lo-node/proxy/healthz")
    assert r.status == 400 and r.json()["message"] == "address not allowed"


def test_rbac_verbs_follow_the_method(cluster: Cluster, env: dict[str, Any]) -> None:
    ns = "/apis/rbac.authorization.k8s.io/v1/namespaces/default"
    role = {"metadata": {"name": "px-get"}, "rules": [{"apiGroups": [""], "resources": ["pods/proxy"], "verbs": ["get"]}]}
    assert raw_request(cluster, "POST", f"{ns}/roles", role).status == 201
    rb = {"metadata": {"name": "px-get"}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role",
                                                      "name": "px-get"},
          "subjects": [{"kind": "User", "name": "px-alice", "apiGroup": "rbac.authorization.k8s.io"}]}
    assert raw_request(cluster, "POST", f"{ns}/rolebindings", rb).status == 201
    alice = {"Impersonate-User": "px-alice"}
    deadline = time.monotonic() + 10
    while raw_request(cluster, "GET", f"{PODS}/px/proxy/a", headers=alice).status != 200:
        assert time.monotonic() < deadline
        time.sleep(0.1)
    r = raw_request(cluster, "HEAD", f"{PODS}/px/proxy/a", headers=alice)  # HEAD is a get, as upstream
    assert r.status == 200 and r.headers["X-Echo"] == "yes"
    r = raw_request(cluster, "POST", f"{PODS}/px/proxy/a", b"x", headers=alice)
    assert r.status == 403
    assert r.json()["message"] == ('pods "px" is forbidden: User "px-alice" cannot create resource "pods/proxy" '
                                   'in API group "" in the namespace "default"')
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/services/pxs/proxy/", headers=alice)
    assert r.status == 403


def test_kubectl_proxy_reaches_the_pod(cluster: Cluster, env: dict[str, Any]) -> None:
    binary = list(kubectl_binaries().values())[-1]
    envv = dict(os.environ, KUBECONFIG=cluster.kubeconfig, HOME=cluster.home)
    p = subprocess.Popen([binary, "proxy", "--port=0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=envv)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert m, line
        url = f"http://127.0.0.1:{m.group(1)}{PODS}/px/proxy/via-kubectl-proxy?z=9"
        with urllib.request.urlopen(url, timeout=10) as resp:
            got = json.loads(resp.read())
        assert got["path"] == "/via-kubectl-proxy?z=9"
    finally:
        p.terminate()
        p.wait(10)
