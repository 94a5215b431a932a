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


def test_kubectl_proxy_reaches_the_pod(cluster: Cluster, env: dict[str, Any], kubectl_proxy: str) -> None:
    url = f"{kubectl_proxy}{PODS}/px/proxy/via-kubectl-proxy?z=9"
    with urllib.request.urlopen(url, timeout=10) as resp:
        got = json.loads(resp.read())
    assert got["path"] == "/via-kubectl-proxy?z=9"

PAGE = ('<!DOCTYPE html><html><head><LINK HREF="/static/site.css" rel=stylesheet></head><body>'
        '<a href="/docs/">docs</a> <a href="rel/page">rel</a> <a href="http://{backend}/abs?q=1">abs</a> '
        '<a href="https://example.com/x">other</a><img src="/i.png"/><script>var s = "<a href=\'/no\'>";</script>'
        '</body></html>')


def _html_backend(ip: str) -> tuple[int, Any]:
    """An aiohttp target on this machine's global address: HTML (plain, gzip, deflate), a
    redirect, a JSON body with links, a WebSocket echo, and an endpoint that refuses upgrades."""
    import asyncio
    import gzip
    import zlib

    from aiohttp import WSMsgType, web

    async def page(request: web.Request) -> web.StreamResponse:
        body = PAGE.format(backend=request.host).encode()
        enc = request.match_info["enc"]
        if enc == "gzip":
            body = gzip.compress(body)
        elif enc == "deflate":
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            body = c.compress(body) + c.flush()
        headers = {"Content-Type": "text/html; charset=utf-8", "Access-Control-Allow-Origin": "*",
                   "X-Forwarded-Uri-Seen": request.headers.get("X-Forwarded-Uri", "")}
        if enc != "plain":
            headers["Content-Encoding"] = enc
        return web.Response(body=body, headers=headers)

    async def redirect(request: web.Request) -> web.StreamResponse:
        return web.Response(status=302, headers={"Location": "/landing/"})

    async def json_links(request: web.Request) -> web.StreamResponse:
        return web.json_response({"href": "/not/rewritten"})

    async def ws(request: web.Request) -> web.StreamResponse:
        sock = web.WebSocketResponse(protocols=["echo.v1"])
        await sock.prepare(request)
        seen = {k: request.headers.get(k) for k in ("Authorization", "Impersonate-User", "X-Forwarded-For")}
        await sock.send_json(seen)
        async for msg in sock:
            if msg.type == WSMsgType.TEXT:
                await sock.send_str("echo:" + msg.data)
            elif msg.type == WSMsgType.BINARY:
                await sock.send_bytes(b"echo:" + msg.data)
        return sock

    async def no_upgrade(request: web.Request) -> web.StreamResponse:
        return web.Response(text="plain")

    async def teapot(request: web.Request) -> web.StreamResponse:
        return web.Response(status=418, text="no upgrade for you")

    app = web.Application()
    app.router.add_get("/page/{enc}", page)
    app.router.add_get("/redirect", redirect)
    app.router.add_get("/json", json_links)
    app.router.add_get("/ws", ws)
    app.router.add_get("/no-upgrade", no_upgrade)
    app.router.add_get("/teapot", teapot)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    loop.run_until_complete(runner.setup())
    site = web.TCPSite(runner, ip, 0)
    loop.run_until_complete(site.start())
    port = runner.addresses[0][1]
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def stop() -> None:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(10)
        loop.call_soon_threadsafe(loop.stop)

    return port, stop


@pytest.fixture(scope="module")
def html_pod(cluster: Cluster, env: dict[str, Any]) -> Iterator[dict[str, Any]]:
    port, stop = _html_backend(env["ip"])
    pod = {"metadata": {"name": "px-html"}, "spec": {"nodeName": NODE, "containers": [
        {"name": "c", "image": "busybox", "ports": [{"containerPort": port}]}]}}
    r = raw_request(cluster, "POST", PODS, pod)
    assert r.status == 201, r.body
    got = r.json()
    got["status"] = {**got.get("status", {}), "phase": "Running", "podIP": env["ip"], "podIPs": [{"ip": env["ip"]}]}
    assert raw_request(cluster, "PUT", f"{PODS}/px-html/status", got).status == 200
    yield {"port": port, "backend": f"{env['ip']}:{port}"}
    stop()


@pytest.fixture(scope="module")
def kubectl_proxy(cluster: Cluster) -> Iterator[str]:
    binary = list(kubectl_binaries().values())[-1]
    envv = dict(os.environ, KUBECONFIG=cluster.kubeconfig, HOME=cluster.home)
    p = subprocess.Popen([binary, "proxy", "--port=0"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                         env=envv)
    try:
        assert p.stdout is not None
        line = p.stdout.readline()
        m = re.search(r"127\.0\.0\.1:(\d+)", line)
        assert m, line
        yield f"http://127.0.0.1:{m.group(1)}"
    finally:
        p.terminate()
        p.wait(10)


HTML_PREFIX = f"{PODS}/px-html/proxy"


@pytest.mark.parametrize("enc", ["plain", "gzip", "deflate"])
def test_proxied_html_links_go_through_the_proxy(cluster: Cluster, html_pod: dict[str, Any], kubectl_proxy: str,
                                                  enc: str) -> None:
    """Upstream's proxy transport: absolute paths and links to the target itself move under the
    proxy prefix, in gzip and deflate bodies too; relative links, other hosts and script text stay."""
    import gzip
    import zlib

    req = urllib.request.Request(f"{kubectl_proxy}{HTML_PREFIX}/page/{enc}", headers={"Accept-Encoding": enc})
    with urllib.request.urlopen(req, timeout=10) as resp:
        raw = resp.read()
        headers = resp.headers
    body = (gzip.decompress(raw) if enc == "gzip" else zlib.decompress(raw, -15) if enc == "deflate" else raw).decode()
    assert body == (
        f'<!DOCTYPE html><html><head><link href="{HTML_PREFIX}/static/site.css" rel="stylesheet"></head><body>'
        f'<a href="{HTML_PREFIX}/docs/">docs</a> <a href="rel/page">rel</a> <a href="{HTML_PREFIX}/abs?q=1">abs</a> '
        f'<a href="https://example.com/x">other</a><img src="{HTML_PREFIX}/i.png"/>'
        '<script>var s = "<a href=\'/no\'>";</script></body></html>')
    assert headers["Access-Control-Allow-Origin"] is None  # upstream drops the target's CORS headers
    assert headers["X-Forwarded-Uri-Seen"] == f"{HTML_PREFIX}/page/{enc}"
    assert int(headers["Content-Length"]) == len(raw)


def test_proxy_rewrites_redirects_and_only_html(cluster: Cluster, html_pod: dict[str, Any]) -> None:
    r = raw_request(cluster, "GET", f"{HTML_PREFIX}/redirect")
    assert r.status == 302 and r.headers["Location"] == f"{HTML_PREFIX}/landing/"
    r = raw_request(cluster, "GET", f"{HTML_PREFIX}/json")
    assert r.json() == {"href": "/not/rewritten"}
    # the prefix without a slash: upstream redirects so that relative links resolve under it
    r = raw_request(cluster, "GET", f"{HTML_PREFIX}?a=1")
    assert r.status == 301 and r.headers["Location"] == f"{HTML_PREFIX}/?a=1"


def test_websocket_upgrades_reach_the_target(cluster: Cluster, html_pod: dict[str, Any], kubectl_proxy: str) -> None:
    """A WebSocket through `kubectl proxy` and straight to the API server: spliced once the target
    switches protocols, with the subprotocol it chose; the API server's credentials stay behind."""
    import asyncio

    import aiohttp

    from pyk8s.client.kubeconfig import load_kubeconfig

    async def talk(url: str, **kw: Any) -> list[Any]:
        async with aiohttp.ClientSession() as s, s.ws_connect(url, protocols=["echo.v1"], **kw) as ws:
            assert ws.protocol == "echo.v1"
            seen = await ws.receive_json(timeout=10)
            await ws.send_str("hi")
            text = await ws.receive_str(timeout=10)
            await ws.send_bytes(b"\x00\x01")
            data = await ws.receive_bytes(timeout=10)
            return [seen, text, data]

    seen, text, data = asyncio.run(talk(f"{kubectl_proxy}{HTML_PREFIX}/ws"))
    assert (text, data) == ("echo:hi", b"echo:\x00\x01")
    ssl_ctx = load_kubeconfig(cluster.kubeconfig).ssl_client_context()
    seen, text, _ = asyncio.run(talk(f"{cluster.url}{HTML_PREFIX}/ws", ssl=ssl_ctx,
                                     headers={"Impersonate-User": "px-ws-admin",
                                              "Impersonate-Group": "system:masters"}))
    assert text == "echo:hi"
    assert seen["Authorization"] is None and seen["Impersonate-User"] is None and seen["X-Forwarded-For"]


def test_upgrades_are_authorized_and_refusals_relayed(cluster: Cluster, html_pod: dict[str, Any]) -> None:
    import asyncio

    import aiohttp

    from pyk8s.client.kubeconfig import load_kubeconfig

    ssl_ctx = load_kubeconfig(cluster.kubeconfig).ssl_client_context()

    async def status(path: str, headers: dict[str, str] | None = None) -> tuple[int, str]:
        async with aiohttp.ClientSession() as s:
            try:
                async with s.ws_connect(f"{cluster.url}{path}", ssl=ssl_ctx, headers=headers or {}):
                    return 101, ""
            except aiohttp.WSServerHandshakeError as e:
                return e.status, e.message

    # no rights on pods/proxy: refused before anything reaches the target
    assert asyncio.run(status(f"{HTML_PREFIX}/ws", {"Impersonate-User": "px-nobody"}))[0] == 403
    # a target that answers without switching protocols: upstream's 500, never a spliced plain answer
    r = raw_request(cluster, "GET", f"{HTML_PREFIX}/no-upgrade",
                    headers={"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert r.status == 500 and r.json()["message"] == "invalid upgrade response: status code 200"
    # a target's own refusal is relayed as it was
    r = raw_request(cluster, "GET", f"{HTML_PREFIX}/teapot",
                    headers={"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                             "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ=="})
    assert r.status == 418 and r.body == b"no upgrade for you"
