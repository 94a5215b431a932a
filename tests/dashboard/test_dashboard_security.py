"""The dashboard's defences, attacked over the wire (no browser needed to forge requests).

A real `pyk8s server`, one `pyk8s dashboard` in kubeconfig mode (the admin's kubeconfig, so any
hole would be an admin back door) and one in token mode. Each test is an attack a web page the
user visits, or another local user, could make.
"""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
import time
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.dashboard.browser import Dashboard, wait
from tests.e2e.kubelet_harness import free_kubelet_port

pytestmark = [pytest.mark.xdist_group("dashboard-security"), pytest.mark.timeout(120)]

CSRF = {"X-Pyk8s-Dashboard": "1"}


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    # the server's own dashboard (`--dashboard`) too, on a free port
    c = Cluster(str(tmp_path_factory.mktemp("dash-sec")),
                ["--dashboard", "--dashboard-port", str(free_kubelet_port())]).start()
    c.kubectl("create", "serviceaccount", "viewer", "-n", "default")
    c.kubectl("create", "rolebinding", "viewer-view", "--clusterrole=view", "--serviceaccount=default:viewer",
              "-n", "default")
    yield c
    c.stop()


@pytest.fixture(scope="module")
def kdash(cluster: Cluster):
    d = Dashboard(cluster.kubeconfig).start()
    yield d
    d.stop()
    assert not d.errors()


@pytest.fixture(scope="module")
def tdash(cluster: Cluster):
    d = Dashboard(cluster.kubeconfig, auth="token").start()
    yield d
    d.stop()
    assert not d.errors()


@pytest.fixture(scope="module")
def viewer_token(cluster: Cluster) -> str:
    return cluster.kubectl("create", "token", "viewer", "-n", "default").stdout.strip()


class Resp:
    def __init__(self, r: http.client.HTTPResponse) -> None:
        self.status = r.status
        self.headers = r.headers
        self.body = r.read()

    def json(self) -> Any:
        return json.loads(self.body)


def request(d: Dashboard, method: str, path: str, headers: dict[str, str] | None = None, body: Any = None,
            host: str | None = None, timeout: float = 15.0) -> Resp:
    conn = http.client.HTTPConnection("127.0.0.1", d.port, timeout=timeout)
    hdrs = {"Host": f"127.0.0.1:{d.port}" if host is None else host, **(headers or {})}
    data = json.dumps(body) if body is not None and not isinstance(body, (str, bytes)) else body
    payload = data.encode() if isinstance(data, str) else data
    if payload is not None:
        hdrs.setdefault("Content-Type", "application/json")
        hdrs["Content-Length"] = str(len(payload))
    conn.putrequest(method, path, skip_host=True, skip_accept_encoding=True)
    for k, v in hdrs.items():
        conn.putheader(k, v)
    conn.endheaders(payload)
    try:
        return Resp(conn.getresponse())
    finally:
        conn.close()


def signed_in(d: Dashboard) -> str:
    """A session cookie header, from the printed URL's access secret (kubeconfig mode)."""
    r = request(d, "GET", f"/?secret={d.secret}")
    assert r.status == 303 and r.headers["Location"] == "/"
    cookie = r.headers["Set-Cookie"]
    assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
    return cookie.split(";", 1)[0]


def token_session(d: Dashboard, token: str) -> str:
    r = request(d, "POST", "/dashboard/login", {**CSRF}, {"token": token})
    assert r.status == 200, r.body
    assert token not in r.body.decode()  # the token never goes back to the page
    return r.headers["Set-Cookie"].split(";", 1)[0]


def status_of(r: Resp) -> dict[str, Any]:
    s = r.json()
    assert s["kind"] == "Status" and s["code"] == r.status, s
    return s


def test_access_secret_is_required_in_kubeconfig_mode(kdash: Dashboard):
    """Another local user, or a page guessing the port, gets nothing without the printed secret."""
    r = request(kdash, "GET", "/api/v1/namespaces")
    assert r.status == 401 and status_of(r)["reason"] == "Unauthorized"
    r = request(kdash, "GET", "/?secret=" + "x" * len(kdash.secret))
    assert r.status == 401 and "Set-Cookie" not in r.headers
    r = request(kdash, "GET", "/api/v1/namespaces", {"Cookie": f"pyk8s-dashboard-session-{kdash.port}=forged"})
    assert r.status == 401
    cookie = signed_in(kdash)
    r = request(kdash, "GET", "/api/v1/namespaces", {"Cookie": cookie})
    assert r.status == 200 and r.json()["kind"] == "NamespaceList"


@pytest.mark.parametrize("host", ["evil.example:{port}", "evil.example", "127.0.0.1:1", "127.0.0.1.nip.io:{port}",
                                  ""])
def test_forged_host_is_refused_against_dns_rebinding(kdash: Dashboard, host: str):
    """A page whose name resolves to 127.0.0.1 sends its own name as Host: refused, cookie or not."""
    cookie = signed_in(kdash)
    for path in ("/", "/api/v1/namespaces", f"/?secret={kdash.secret}"):
        r = request(kdash, "GET", path, {"Cookie": cookie}, host=host.format(port=kdash.port))
        assert r.status == 403, (host, path, r.body)
        assert "not allowed" in status_of(r)["message"]
        assert "Set-Cookie" not in r.headers
    assert request(kdash, "GET", "/", host=f"localhost:{kdash.port}").status == 200


def test_cross_origin_post_is_refused(cluster: Cluster, kdash: Dashboard):
    """CSRF: a form or fetch from another origin (even another port on 127.0.0.1, the same *site* for
    SameSite cookies) cannot create anything, with or without the custom header."""
    cookie = signed_in(kdash)
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "csrf"}, "data": {"a": "b"}}
    path = "/api/v1/namespaces/default/configmaps"
    attempts = [
        {"Cookie": cookie, "Origin": "http://evil.example"},
        {"Cookie": cookie, "Origin": "http://evil.example", **CSRF},
        {"Cookie": cookie, "Origin": f"http://127.0.0.1:{kdash.port + 1}", **CSRF},
        {"Cookie": cookie, "Origin": "null", **CSRF},
        {"Cookie": cookie},  # a form post without Origin: no custom header
        {"Cookie": cookie, "Content-Type": "text/plain"},
    ]
    for h in attempts:
        r = request(kdash, "POST", path, h, cm)
        assert r.status == 403, (h, r.body)
        assert status_of(r)["reason"] == "Forbidden"
    assert request(kdash, "DELETE", "/api/v1/namespaces/default", {"Cookie": cookie}).status == 403
    assert cluster.kubectl("get", "configmap", "csrf", check=False).returncode != 0
    assert cluster.kubectl("get", "namespace", "default").returncode == 0
    # the page's own request goes through
    r = request(kdash, "POST", path, {"Cookie": cookie, "Origin": f"http://127.0.0.1:{kdash.port}", **CSRF}, cm)
    assert r.status == 201, r.body
    cluster.kubectl("delete", "configmap", "csrf")


def _upgrade(d: Dashboard, headers: dict[str, str]) -> Resp:
    return request(d, "GET", "/api/v1/namespaces/default/pods/x/exec?command=sh&stdin=true&stdout=true&tty=true",
                   {"Connection": "Upgrade", "Upgrade": "websocket", "Sec-WebSocket-Version": "13",
                    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==", "Sec-WebSocket-Protocol": "v5.channel.k8s.io",
                    **headers})


def test_cross_origin_websocket_is_refused(kdash: Dashboard):
    """A page elsewhere opening an exec WebSocket (browsers send cookies and Origin with it) is refused
    before anything reaches the API; so is an upgrade without Origin."""
    cookie = signed_in(kdash)
    for origin in ("http://evil.example", f"http://localhost:{kdash.port + 1}", "null"):
        r = _upgrade(kdash, {"Cookie": cookie, "Origin": origin})
        assert r.status == 403 and "cross-origin" in status_of(r)["message"]
    r = _upgrade(kdash, {"Cookie": cookie})
    assert r.status == 403 and "Origin" in status_of(r)["message"]
    # same origin: it reaches the API, which answers for the pod that is not there
    r = _upgrade(kdash, {"Cookie": cookie, "Origin": f"http://127.0.0.1:{kdash.port}"})
    assert r.status == 404, r.body


def test_static_files_stay_in_the_bundle(kdash: Dashboard):
    """No path leads out of the packaged static/ folder (the dashboard's own source and keys beside it)."""
    assert request(kdash, "GET", "/static/app.js").status == 200
    for path in ("/static/..", "/static/.", "/static/../server.py", "/static/%2e%2e/server.py",
                 "/static/..%2fserver.py", "/static/%2e%2e%2f__init__.py", "/static//etc/passwd"):
        r = request(kdash, "GET", path)
        assert r.status == 404 and b"import" not in r.body, (path, r.status)


def test_security_headers_on_every_answer(kdash: Dashboard):
    cookie = signed_in(kdash)
    for path, headers in (("/", {}), ("/static/app.js", {}), ("/api/v1/namespaces", {"Cookie": cookie}),
                          ("/api/v1/namespaces?watch=1&timeoutSeconds=1", {"Cookie": cookie}),
                          ("/api/v1/nope", {})):
        r = request(kdash, "GET", path, headers)
        csp = r.headers["Content-Security-Policy"]
        assert "script-src 'self';" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
        assert r.headers["X-Frame-Options"] == "DENY"
        assert r.headers["X-Content-Type-Options"] == "nosniff"
        assert r.headers["Referrer-Policy"] == "no-referrer"


def test_bad_token_is_refused_with_the_apis_401(tdash: Dashboard):
    for token in ("not-a-token", "eyJhbGciOiJSUzI1NiJ9.e30.c2ln"):
        r = request(tdash, "POST", "/dashboard/login", CSRF, {"token": token})
        assert r.status == 401 and "Set-Cookie" not in r.headers
        assert status_of(r)["message"] == "Unauthorized"
    for body in ({"token": ""}, {"token": 5}, {"token": "a b"}, {"token": "x" * 20000}, [1], "not json", b"\xff"):
        r = request(tdash, "POST", "/dashboard/login", CSRF, body)
        assert r.status == 400 and status_of(r)["reason"] == "BadRequest", (body, r.body)
    # no secret URL opens a token-mode dashboard
    assert request(tdash, "GET", "/?secret=anything").status == 401
    r = request(tdash, "GET", "/dashboard/session")
    assert r.status == 401 and r.headers["X-Pyk8s-Dashboard-Auth"] == "token"


def test_token_session_acts_as_that_user_only(cluster: Cluster, tdash: Dashboard, viewer_token: str):
    """A view-bound ServiceAccount reads, is refused writes with RBAC's own message, and cannot use
    headers from the page to become someone else."""
    cookie = token_session(tdash, viewer_token)
    who = request(tdash, "GET", "/dashboard/session", {"Cookie": cookie}).json()
    assert who["user"]["username"] == "system:serviceaccount:default:viewer"
    assert request(tdash, "GET", "/api/v1/namespaces/default/pods", {"Cookie": cookie}).status == 200
    r = request(tdash, "DELETE", "/api/v1/namespaces/default/serviceaccounts/viewer", {"Cookie": cookie, **CSRF})
    assert r.status == 403
    assert status_of(r)["message"] == ('serviceaccounts "viewer" is forbidden: User '
                                       '"system:serviceaccount:default:viewer" cannot delete resource '
                                       '"serviceaccounts" in API group "" in the namespace "default"')
    admin_kc = cluster.kubectl("config", "view", "--raw", "-o", "json").stdout
    assert "client-certificate-data" in admin_kc
    for h in ({"Impersonate-User": "admin", "Impersonate-Group": "system:masters"},
              {"Authorization": "Bearer not-the-session's"}):
        r = request(tdash, "GET", "/api/v1/namespaces/kube-system/secrets", {"Cookie": cookie, **h})
        assert r.status == 403 and "system:serviceaccount:default:viewer" in status_of(r)["message"], h
    assert request(tdash, "POST", "/dashboard/logout", {"Cookie": cookie, **CSRF}).status == 200
    assert request(tdash, "GET", "/api/v1/namespaces/default/pods", {"Cookie": cookie}).status == 401


def test_watch_streams_through_the_proxy_event_by_event(cluster: Cluster, kdash: Dashboard):
    """A watch reaches the page as the API writes it, not when the response ends."""
    cookie = signed_in(kdash)
    rv = request(kdash, "GET", "/api/v1/namespaces/default/configmaps", {"Cookie": cookie}).json()
    sock = socket.create_connection(("127.0.0.1", kdash.port), timeout=10)
    try:
        sock.sendall((f"GET /api/v1/namespaces/default/configmaps?watch=1&resourceVersion="
                      f"{rv['metadata']['resourceVersion']} HTTP/1.1\r\nHost: 127.0.0.1:{kdash.port}\r\n"
                      f"Cookie: {cookie}\r\n\r\n").encode())
        cluster.kubectl("create", "configmap", "streamed", "--from-literal=k=v")
        got = b""
        deadline = time.monotonic() + 10
        while b'"streamed"' not in got and time.monotonic() < deadline:
            got += sock.recv(65536)
        assert b"200 OK" in got.split(b"\r\n", 1)[0] and b'"ADDED"' in got and b'"streamed"' in got
    finally:
        sock.close()
        cluster.kubectl("delete", "configmap", "streamed", check=False)


def test_server_dashboard_is_token_mode_only(cluster: Cluster, viewer_token: str):
    """`pyk8s server --dashboard` never lends the server's admin credentials: no secret URL, no
    session without a token, and a signed-in token acts as its own user."""
    line = wait(lambda: next((ln for ln in cluster.output if "dashboard:" in ln), None), 30, "the dashboard's URL")
    url = line.split("dashboard:", 1)[1].split()[0]
    assert "secret" not in url and url.startswith("http://127.0.0.1:")
    d = Dashboard(cluster.kubeconfig)
    d.url = url
    assert request(d, "GET", "/").status == 200
    assert request(d, "GET", "/?secret=anything").status == 401
    r = request(d, "GET", "/dashboard/session")
    assert r.status == 401 and r.headers["X-Pyk8s-Dashboard-Auth"] == "token"
    assert request(d, "GET", "/api/v1/namespaces/kube-system/secrets").status == 401
    cookie = token_session(d, viewer_token)
    r = request(d, "GET", "/api/v1/namespaces/kube-system/secrets", {"Cookie": cookie})
    assert r.status == 403 and "system:serviceaccount:default:viewer" in status_of(r)["message"]
    assert request(d, "GET", "/api/v1/namespaces/default/pods", {"Cookie": cookie}).status == 200


async def _mux(d: Dashboard, cookie: str, messages: list[dict[str, Any]], until: Any,
               origin: str | None = None) -> list[dict[str, Any]]:
    """Open /dashboard/watch, send `messages`, collect answers until `until(answers)`."""
    import aiohttp

    headers = {"Cookie": cookie, "Origin": origin or f"http://127.0.0.1:{d.port}"}
    got: list[dict[str, Any]] = []
    async with aiohttp.ClientSession() as s, s.ws_connect(f"http://127.0.0.1:{d.port}/dashboard/watch",
                                                          headers=headers) as ws:
        for m in messages:
            await ws.send_json(m)
        while not until(got):
            msg = await asyncio.wait_for(ws.receive(), 10)
            got.append(json.loads(msg.data))
    return got


def test_watch_socket_is_guarded_and_carries_the_users_rbac(cluster: Cluster, kdash: Dashboard, tdash: Dashboard,
                                                            viewer_token: str):
    """The page's multiplexed watch socket: same origin and a session only, watches of /api and /apis
    only, each run with the session's credentials (RBAC's refusal comes back as the watch's end)."""
    import aiohttp

    cookie = signed_in(kdash)
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        asyncio.run(_mux(kdash, cookie, [], lambda g: True, origin="http://evil.example"))
    assert e.value.status == 403
    with pytest.raises(aiohttp.WSServerHandshakeError) as e:
        asyncio.run(_mux(kdash, "pyk8s-dashboard-session-1=forged", [], lambda g: True))
    assert e.value.status == 401
    bad = ["/version?watch=1", "/api/v1/namespaces/default/pods", "http://evil.example/api/v1/pods?watch=1",
           "/api/v1/../../version?watch=1"]
    got = asyncio.run(_mux(kdash, cookie, [{"id": i, "path": p} for i, p in enumerate(bad)],
                           lambda g: len(g) == len(bad)))
    assert all(g["end"] and g["status"] == 400 for g in got), got
    # a view-bound ServiceAccount: secrets elsewhere are refused with RBAC's message; configmaps stream
    vcookie = token_session(tdash, viewer_token)

    def created(g: list[dict[str, Any]]) -> bool:
        if len(g) == 1 and g[0].get("end"):
            cluster.kubectl("create", "configmap", "via-mux")
        return any(x.get("event", {}).get("object", {}).get("metadata", {}).get("name") == "via-mux" for x in g)

    got = asyncio.run(_mux(tdash, vcookie, [
        {"id": 1, "path": "/api/v1/namespaces/kube-system/secrets?watch=1"},
        {"id": 2, "path": "/api/v1/namespaces/default/configmaps?watch=1"}], created))
    end = next(g for g in got if g["id"] == 1)
    assert end["end"] and end["status"] == 403
    assert end["error"]["message"] == ('secrets is forbidden: User "system:serviceaccount:default:viewer" cannot '
                                       'watch resource "secrets" in API group "" in the namespace "kube-system"')
    assert any(g["id"] == 2 and g["event"]["type"] == "ADDED" for g in got)
    cluster.kubectl("delete", "configmap", "via-mux")
