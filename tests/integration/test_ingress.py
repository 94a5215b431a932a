"""The built-in Ingress controller (docs/ingress.md) against a real API server: `pyk8s ingress`
with its bootstrap identity, on free ports on 127.0.0.1, proxying to real HTTP servers in a
network namespace of this module's own (selectorless Services with hand-made EndpointSlices, as
Kubernetes allows), driven with kubectl and checked with real HTTP and TLS clients."""

from __future__ import annotations

import http.client
import json
import os
import re
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster
from tests.conftest import require, require_binary
from tests.ingress_util import FAKE_CN, get, self_signed, served_cn, tls_secret, wait_for

pytestmark = pytest.mark.xdist_group("ingress")

HERE = Path(__file__).resolve().parent
NS = "ing"
K = os.getpid() % 200 + 20
SUBNET = f"198.18.{K}"  # benchmark range: not loopback or link-local, so EndpointSlices accept it
A, B = f"{SUBNET}.2", f"{SUBNET}.3"
NETNS = f"ingress-t{os.getpid()}"
VETH = f"ingh{os.getpid() % 100000}"
PEER = f"ingn{os.getpid() % 100000}"


# ---- the backends' network namespace ---------------------------------------------------------
def _ip(*args: str) -> None:
    subprocess.run(["ip", *args], check=True, capture_output=True)


@pytest.fixture(scope="module")
def backends() -> Iterator[subprocess.Popen[str]]:
    require("root (network namespaces)", os.geteuid() == 0)
    require_binary("ip")
    require_binary("nsenter")
    proc = None
    try:
        _ip("netns", "add", NETNS)
        _ip("link", "add", VETH, "type", "veth", "peer", "name", PEER)
        _ip("link", "set", PEER, "netns", NETNS)
        _ip("addr", "add", f"{SUBNET}.1/24", "dev", VETH)
        _ip("link", "set", VETH, "up")
        for a in (A, B):
            _ip("-n", NETNS, "addr", "add", f"{a}/24", "dev", PEER)
        _ip("-n", NETNS, "link", "set", PEER, "up")
        _ip("-n", NETNS, "link", "set", "lo", "up")
        specs = [f"web-a={A}:8080", f"web-b={B}:8080", f"api={A}:9090", f"fallback={B}:7070", f"tls-b={B}:6060"]
        proc = subprocess.Popen(["nsenter", f"--net=/run/netns/{NETNS}", sys.executable,
                                 str(HERE / "ingress_backend.py"), *specs],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        yield proc
    finally:
        if proc is not None:
            proc.kill()
            proc.wait()
        subprocess.run(["ip", "link", "del", VETH], capture_output=True)
        subprocess.run(["ip", "netns", "del", NETNS], capture_output=True)


# ---- the API server and the controller ----------------------------------------------------
def _ingress_kubeconfig(c: Cluster) -> str:
    """The identity `pyk8s server` writes for the controller (bootstrap RBAC binds its user)."""
    path = os.path.join(c.data_dir, "ingress.conf")
    assert os.stat(path).st_mode & 0o777 == 0o600
    return path


class Controller:
    def __init__(self, c: Cluster, publish: str = "192.0.2.77") -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyk8s.cli", "ingress", "--kubeconfig", _ingress_kubeconfig(c),
             "--ingress-bind-address", "127.0.0.1", "--ingress-http-port", "0", "--ingress-https-port", "0",
             "--publish-address", publish],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        assert self.proc.stdout is not None
        m = None
        for line in self.proc.stdout:
            m = re.search(r"Ingress controller running \(http port (\d+), https port (\d+)", line)
            if m:
                break
        if m is None:
            self.stop()
            raise AssertionError("pyk8s ingress did not start")
        self.http_port, self.https_port = int(m.group(1)), int(m.group(2))

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(10)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-ingress")))
    c.start()
    c.kubectl("create", "namespace", NS)
    yield c
    c.stop()


@pytest.fixture(scope="module")
def ctrl(cluster: Cluster, backends: Any) -> Iterator[Controller]:
    _apply(cluster, *_services())
    ctl = Controller(cluster)
    yield ctl
    ctl.stop()


def _apply(c: Cluster, *objs: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))


def _service(name: str, ports: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
            "spec": {"ports": ports}}


def _slice(name: str, svc: str, port_name: str, port: int, addrs: dict[str, bool]) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
            "metadata": {"name": name, "namespace": NS, "labels": {"kubernetes.io/service-name": svc}},
            "ports": [{"name": port_name, "port": port, "protocol": "TCP"}],
            "endpoints": [{"addresses": [a], "conditions": {"ready": r}} for a, r in addrs.items()]}


def _services() -> list[dict[str, Any]]:
    return [
        _service("web", [{"name": "http", "port": 80, "targetPort": 8080}]),
        _slice("web-1", "web", "http", 8080, {A: True, B: True}),
        _service("api", [{"name": "grpc", "port": 81, "targetPort": 9090}]),
        _slice("api-1", "api", "grpc", 9090, {A: True}),
        _service("fallback", [{"port": 82, "targetPort": 7070}]),
        _slice("fallback-1", "fallback", "", 7070, {B: True}),
        _service("empty", [{"port": 83}]),
        _slice("empty-1", "empty", "", 8080, {A: False}),
        _service("tls-b", [{"port": 84, "targetPort": 6060}]),
        _slice("tls-b-1", "tls-b", "", 6060, {B: True}),
    ]


def _path(path: str, ptype: str, svc: str, port: int | str) -> dict[str, Any]:
    p = {"number": port} if isinstance(port, int) else {"name": port}
    return {"path": path, "pathType": ptype, "backend": {"service": {"name": svc, "port": p}}}


def _ingress(name: str, spec: dict[str, Any], **meta: Any) -> dict[str, Any]:
    return {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress",
            "metadata": {"name": name, "namespace": NS, **meta}, "spec": spec}


MAIN = _ingress("main", {
    "ingressClassName": "pyk8s",
    "rules": [
        {"host": "a.example.com", "http": {"paths": [
            _path("/exact", "Exact", "api", "grpc"),
            _path("/app", "Prefix", "web", 80),
            _path("/app/admin", "Prefix", "api", 81),
            _path("/empty", "Prefix", "empty", 83),
            _path("/impl", "ImplementationSpecific", "api", 81),
        ]}},
        {"host": "*.wild.example.com", "http": {"paths": [_path("/", "Prefix", "api", 81)]}},
    ],
})


def who(port: int, path: str, host: str = "a.example.com", **kw: Any) -> dict[str, Any]:
    status, body, _ = get(port, path, host, **kw)
    assert status == 200, (status, body)
    return json.loads(body)  # type: ignore[no-any-return]


def status_line(r: bytes) -> bytes:
    return r.split(b"\r\n", 1)[0]


def raw(port: int, data: bytes) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=10) as s:
        s.sendall(data)
        out = b""
        while True:
            try:
                chunk = s.recv(65536)
            except TimeoutError:
                break
            if not chunk:
                break
            out += chunk
            if b"\r\n\r\n" in out:
                break
        return out


# ---- tests, in order: the module shares one server, controller and set of Ingresses ----------------
def test_bootstrap_creates_the_default_ingress_class_and_a_least_privilege_identity(cluster: Cluster) -> None:
    ic = json.loads(cluster.kubectl("get", "ingressclass", "pyk8s", "-o", "json").stdout)
    assert ic["spec"]["controller"] == "pyk8s.io/ingress"
    assert ic["metadata"]["annotations"]["ingressclass.kubernetes.io/is-default-class"] == "true"

    def can(*args: str) -> str:
        r = cluster.kubectl("auth", "can-i", *args, "--as", "system:pyk8s-ingress", check=False)
        return r.stdout.strip()

    assert can("watch", "ingresses.networking.k8s.io") == "yes"
    assert can("update", "ingresses.networking.k8s.io", "--subresource", "status") == "yes"
    assert can("get", "secrets", "-n", NS) == "yes"
    assert can("list", "endpointslices.discovery.k8s.io") == "yes"
    # nothing beyond what serving Ingresses needs
    assert can("update", "ingresses.networking.k8s.io") == "no"
    assert can("list", "configmaps") == "no"
    assert can("create", "secrets") == "no"
    assert can("list", "pods") == "no"


def test_disable_ingress_leaves_out_the_class_and_the_identity(tmp_path: Path) -> None:
    c = Cluster(str(tmp_path / "off"), extra_args=["--disable", "ingress",
                                                   "--disable-admission-plugins", "DefaultIngressClass"])
    c.start()
    try:
        r = c.kubectl("get", "ingressclass", "pyk8s", check=False)
        assert r.returncode != 0 and "NotFound" in r.stderr
        assert not os.path.exists(os.path.join(c.data_dir, "ingress.conf"))
        # the admission plugin turned off: a default class is not filled in
        c.kubectl("apply", "-f", "-", input=json.dumps({
            "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
            "metadata": {"name": "dflt", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
            "spec": {"controller": "example.com/x"}}))
        ing = _ingress("plain", {"defaultBackend": {"service": {"name": "x", "port": {"number": 80}}}})
        ing["metadata"]["namespace"] = "default"
        _apply(c, ing)
        got = json.loads(c.kubectl("get", "ingress", "plain", "-o", "json").stdout)
        assert "ingressClassName" not in got["spec"]
    finally:
        c.stop()


def test_default_ingress_class_admission_names_the_default_class(cluster: Cluster) -> None:
    """Upstream's DefaultIngressClass: no class and no legacy annotation -> the default class."""
    spec = {"defaultBackend": {"service": {"name": "fallback", "port": {"number": 82}}}}
    _apply(cluster, _ingress("defaulted", spec), _ingress("legacy", spec, annotations={"kubernetes.io/ingress.class": "other"}))
    got = json.loads(cluster.kubectl("get", "ingress", "-n", NS, "defaulted", "legacy", "-o", "json").stdout)["items"]
    by = {i["metadata"]["name"]: i["spec"] for i in got}
    assert by["defaulted"]["ingressClassName"] == "pyk8s"
    assert "ingressClassName" not in by["legacy"]
    # with two default classes, the newest wins (the lower name on a tie: timestamps are whole seconds)
    cluster.kubectl("apply", "-f", "-", input=json.dumps({
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "zz-newer", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"}},
        "spec": {"controller": "example.com/other"}}))
    try:
        ts = {n: json.loads(cluster.kubectl("get", "ingressclass", n, "-o", "json").stdout)["metadata"]["creationTimestamp"]
              for n in ("pyk8s", "zz-newer")}
        _apply(cluster, _ingress("defaulted2", spec))
        got2 = json.loads(cluster.kubectl("get", "ingress", "-n", NS, "defaulted2", "-o", "json").stdout)
        assert got2["spec"]["ingressClassName"] == ("zz-newer" if ts["zz-newer"] > ts["pyk8s"] else "pyk8s")
    finally:
        cluster.kubectl("delete", "ingressclass", "zz-newer")
        cluster.kubectl("delete", "ingress", "-n", NS, "defaulted", "legacy", "defaulted2")


def test_nothing_matches_answers_the_default_backend_404(ctrl: Controller, cluster: Cluster) -> None:
    status, body, _ = get(ctrl.http_port, "/")
    assert status == 404 and body == b"default backend - 404"


def test_host_and_path_rules(ctrl: Controller, cluster: Cluster) -> None:
    _apply(cluster, MAIN)
    p = ctrl.http_port
    wait_for(lambda: get(p, "/exact")[0] == 200, what="the Ingress served")
    assert who(p, "/exact")["backend"] == "api"
    assert get(p, "/exact/more")[0] == 404  # Exact is the whole path
    assert who(p, "/app")["backend"].startswith("web-")
    assert who(p, "/app/")["backend"].startswith("web-")
    assert who(p, "/app/x/y?q=1")["path"] == "/app/x/y?q=1"
    assert get(p, "/application")[0] == 404  # element-wise prefix: /app does not match /application
    assert who(p, "/app/admin/x")["backend"] == "api"  # the longest prefix wins
    assert who(p, "/impl/x")["backend"] == "api"  # ImplementationSpecific is a prefix here
    assert who(p, "/x", host="one.wild.example.com")["backend"] == "api"
    assert get(p, "/x", host="two.one.wild.example.com")[0] == 404  # a wildcard covers one label
    assert get(p, "/x", host="wild.example.com")[0] == 404
    assert who(p, "/app", host="A.Example.COM:80")["backend"].startswith("web-")  # case and port ignored
    assert get(p, "/app", host="b.example.com")[0] == 404


def test_service_port_by_number_and_by_name_and_round_robin(ctrl: Controller) -> None:
    seen = {who(ctrl.http_port, "/app")["backend"] for _ in range(6)}
    assert seen == {"web-a", "web-b"}


def test_forwarded_headers_replace_what_the_client_sent(ctrl: Controller) -> None:
    got = who(ctrl.http_port, "/app", headers={"X-Forwarded-For": "6.6.6.6", "X-Real-IP": "6.6.6.6",
                                               "X-Forwarded-Host": "evil", "Connection": "keep-alive, X-Drop",
                                               "X-Drop": "1", "X-Keep": "2"})
    h = got["headers"]
    assert h["x-forwarded-for"] == "127.0.0.1" and h["x-real-ip"] == "127.0.0.1"
    assert h["host"] == "a.example.com" and h["x-forwarded-host"] == "a.example.com"
    assert h["x-forwarded-proto"] == "http" and h["x-forwarded-port"] == str(ctrl.http_port)
    assert "x-drop" not in h and h["x-keep"] == "2"  # headers named in Connection are hop-by-hop


def test_bodies_stream_both_ways(ctrl: Controller) -> None:
    import hashlib

    body = os.urandom(3 * 1024 * 1024)
    got = who(ctrl.http_port, "/app/upload", method="POST", body=body)
    assert got["method"] == "POST" and got["body_len"] == len(body)
    assert got["body_sha256"] == hashlib.sha256(body).hexdigest()
    status, big, headers = get(ctrl.http_port, "/app/big/5000000")
    assert status == 200 and len(big) == 5000000 and headers["Content-Length"] == "5000000"
    # an answer that breaks off reaches the client as a short body on a closed connection
    conn = http.client.HTTPConnection("127.0.0.1", ctrl.http_port, timeout=10)
    try:
        conn.request("GET", "/app/abort", headers={"Host": "a.example.com"})
        r = conn.getresponse()
        assert r.status == 200
        with pytest.raises(http.client.IncompleteRead) as e:
            r.read()
        assert e.value.partial == b"0123456789"
    finally:
        conn.close()
    # HEAD: the length the backend gave, and no body; the connection stays usable
    conn = http.client.HTTPConnection("127.0.0.1", ctrl.http_port, timeout=10)
    try:
        conn.request("HEAD", "/app/h", headers={"Host": "a.example.com"})
        r = conn.getresponse()
        assert r.status == 200 and int(r.headers["Content-Length"]) > 0 and r.read() == b""
        conn.request("GET", "/app/h", headers={"Host": "a.example.com"})
        r = conn.getresponse()
        assert r.status == 200 and json.loads(r.read())["method"] == "GET"
    finally:
        conn.close()


def test_default_backend_takes_what_no_rule_matches(ctrl: Controller, cluster: Cluster) -> None:
    _apply(cluster, _ingress("fallback", {"ingressClassName": "pyk8s",
                                          "defaultBackend": {"service": {"name": "fallback", "port": {"number": 82}}}}))
    wait_for(lambda: get(ctrl.http_port, "/application")[0] == 200, what="the default backend")
    assert who(ctrl.http_port, "/application")["backend"] == "fallback"
    assert who(ctrl.http_port, "/", host="unknown.example.org")["backend"] == "fallback"
    assert who(ctrl.http_port, "/app")["backend"].startswith("web-")  # rules still win


def test_a_dead_endpoint_is_skipped_for_the_next(ctrl: Controller, cluster: Cluster) -> None:
    """ready in its slice but refusing connections (a pod that just died): as ingress-nginx's
    proxy-next-upstream, the request goes to the next endpoint instead of failing."""
    _apply(cluster, _service("flaky", [{"name": "http", "port": 80}]),
           _slice("flaky-1", "flaky", "http", 8080, {A: True}),
           _slice("flaky-2", "flaky", "http", 8099, {A: True}),  # nothing listens on 8099
           _ingress("flaky", {"ingressClassName": "pyk8s", "rules": [{"host": "flaky.example.com", "http": {
               "paths": [_path("/", "Prefix", "flaky", "http")]}}]}))
    wait_for(lambda: get(ctrl.http_port, "/", "flaky.example.com")[0] == 200, what="flaky served")
    assert {get(ctrl.http_port, "/", "flaky.example.com")[0] for _ in range(8)} == {200}
    # with only dead endpoints: 502
    _apply(cluster, _slice("flaky-1", "flaky", "http", 8098, {A: True}))
    wait_for(lambda: get(ctrl.http_port, "/", "flaky.example.com")[0] == 502, what="502 with no live endpoint")
    cluster.kubectl("delete", "ingress", "-n", NS, "flaky")


def test_no_ready_endpoint_is_503(ctrl: Controller) -> None:
    status, body, _ = get(ctrl.http_port, "/empty")
    assert status == 503 and b"503 Service Temporarily Unavailable" in body


def test_readiness_changes_are_followed_within_a_second(ctrl: Controller, cluster: Cluster) -> None:
    _apply(cluster, _slice("web-1", "web", "http", 8080, {A: True, B: False}))
    t0 = time.monotonic()
    wait_for(lambda: {who(ctrl.http_port, "/app")["backend"] for _ in range(4)} == {"web-a"}, 1.0, "web-b removed")
    assert time.monotonic() - t0 < 1.0
    _apply(cluster, _slice("web-1", "web", "http", 8080, {A: False, B: False}))
    wait_for(lambda: get(ctrl.http_port, "/app")[0] == 503, 1.0, "no endpoint left")
    _apply(cluster, _slice("web-1", "web", "http", 8080, {A: True, B: True}))
    wait_for(lambda: {who(ctrl.http_port, "/app")["backend"] for _ in range(4)} == {"web-a", "web-b"}, 1.0, "both back")


def test_status_load_balancer_and_kubectl_table(ctrl: Controller, cluster: Cluster) -> None:
    def lb() -> Any:
        ing = json.loads(cluster.kubectl("get", "ingress", "-n", NS, "main", "-o", "json").stdout)
        return (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")

    assert wait_for(lb, what="status.loadBalancer") == [{"ip": "192.0.2.77"}]
    from kubernetes import client

    with cluster.api_client() as api:  # the official client reads it back as its model
        st = client.NetworkingV1Api(api).read_namespaced_ingress_status("main", NS).status
        assert [i.ip for i in st.load_balancer.ingress] == ["192.0.2.77"]
    from tests.cluster import kubectl_binaries

    for version in kubectl_binaries():  # every installed kubectl shows upstream's columns
        out = cluster.kubectl("get", "ingress", "-n", NS, "main", version=version).stdout.splitlines()
        assert out[0].split() == ["NAME", "CLASS", "HOSTS", "ADDRESS", "PORTS", "AGE"], version
        assert out[1].split()[:5] == ["main", "pyk8s", "a.example.com,*.wild.example.com", "192.0.2.77", "80"]


# ---- TLS --------------------------------------------------------------------------------------
def _tls_secret(name: str, cert: bytes, key: bytes, typ: str = "kubernetes.io/tls") -> dict[str, Any]:
    return tls_secret(name, NS, cert, key, typ)


def test_tls_by_sni_from_two_secrets(ctrl: Controller, cluster: Cluster, tmp_path: Path) -> None:
    ca, ka = self_signed("a.example.com")
    cb, kb = self_signed("b.example.com")
    _apply(cluster, _tls_secret("tls-a", ca, ka), _tls_secret("tls-b", cb, kb))
    tls_main = json.loads(json.dumps(MAIN))
    tls_main["spec"]["tls"] = [{"hosts": ["a.example.com"], "secretName": "tls-a"}]
    tls_b = _ingress("tls-b", {"ingressClassName": "pyk8s",
                               "tls": [{"hosts": ["b.example.com"], "secretName": "tls-b"}],
                               "rules": [{"host": "b.example.com", "http": {"paths": [_path("/", "Prefix", "tls-b", 84)]}}]})
    _apply(cluster, tls_main, tls_b)
    port = ctrl.https_port
    wait_for(lambda: served_cn(port, "a.example.com") == "a.example.com", what="a's certificate")
    wait_for(lambda: served_cn(port, "b.example.com") == "b.example.com", what="b's certificate")
    assert served_cn(port, "c.example.com") == FAKE_CN
    # verified end to end with each host's own certificate as the trust anchor
    for host, cert, backend in (("a.example.com", ca, "web-"), ("b.example.com", cb, "tls-b")):
        ctx = ssl.create_default_context(cadata=cert.decode())
        got = who(port, "/app" if host.startswith("a") else "/", host=host, ctx=ctx)
        assert got["backend"].startswith(backend)
        assert got["headers"]["x-forwarded-proto"] == "https"
    # kubectl's PORTS column says 443 once an Ingress has tls
    row = cluster.kubectl("get", "ingress", "-n", NS, "main", "--no-headers").stdout.split()
    assert row[4:6] == ["80,", "443"], row
    # ssl-redirect: a TLS host reached over http is sent to https
    status, _, headers = get(ctrl.http_port, "/app?x=1")
    assert status == 308 and headers["Location"] == f"https://a.example.com:{port}/app?x=1"
    # the Secret changes: the new certificate is served
    c2, k2 = self_signed("a.example.com")
    _apply(cluster, _tls_secret("tls-a", c2, k2))
    ctx2 = ssl.create_default_context(cadata=c2.decode())
    wait_for(lambda: who(port, "/app", ctx=ctx2)["backend"].startswith("web-"), what="the renewed certificate")
    # a Secret that is not kubernetes.io/tls is not used: the default certificate is served
    cluster.kubectl("delete", "secret", "-n", NS, "tls-b")
    _apply(cluster, _tls_secret("tls-b", cb, kb, typ="Opaque"))
    wait_for(lambda: served_cn(port, "b.example.com") == FAKE_CN,
          what="the fake certificate for an Opaque secret")
    wait_for(lambda: "InvalidTLSSecret" in _events(cluster, "tls-b"), what="the InvalidTLSSecret event")


def _events(c: Cluster, ingress: str) -> str:
    return str(c.kubectl("get", "events", "-n", NS, "--field-selector",
                         f"involvedObject.kind=Ingress,involvedObject.name={ingress}").stdout)


def test_resource_backends_answer_503_with_a_warning(ctrl: Controller, cluster: Cluster) -> None:
    res = {"resource": {"apiGroup": "k8s.example.com", "kind": "StorageBucket", "name": "static"}}
    _apply(cluster, _ingress("bucket", {"ingressClassName": "pyk8s", "rules": [
        {"host": "bucket.example.com", "http": {"paths": [{"path": "/", "pathType": "Prefix", "backend": res}]}}]}))
    wait_for(lambda: get(ctrl.http_port, "/x", host="bucket.example.com")[0] == 503, what="503 for a resource backend")
    wait_for(lambda: "UnsupportedBackend" in _events(cluster, "bucket"), what="the UnsupportedBackend event")
    cluster.kubectl("delete", "ingress", "-n", NS, "bucket")


# ---- hostile input ----------------------------------------------------------------------------
def test_hostile_requests_are_refused(ctrl: Controller) -> None:
    p = ctrl.http_port
    # conflicting framing (request smuggling): refused, never forwarded
    r = raw(p, b"POST /app HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 4\r\n"
               b"Transfer-Encoding: chunked\r\n\r\n0\r\n\r\nGET /app/admin HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
    assert status_line(r).split()[1] == b"400", r[:100]
    r = raw(p, b"POST /app HTTP/1.1\r\nHost: a.example.com\r\nContent-Length: 4\r\nContent-Length: 5\r\n\r\nabcde")
    assert status_line(r).split()[1] == b"400", r[:100]
    # a huge header
    r = raw(p, b"GET /app HTTP/1.1\r\nHost: a.example.com\r\nX-Big: " + b"a" * 70000 + b"\r\n\r\n")
    assert status_line(r).split()[1] in (b"400", b"431"), r[:100]
    # traversal is resolved before routing, and the backend gets the very path that was routed
    # (over https: a.example.com has TLS by now, so http would be redirected)
    tls = ssl.create_default_context()
    tls.check_hostname, tls.verify_mode = False, ssl.CERT_NONE
    hp = ctrl.https_port
    assert who(hp, "/app/../exact", ctx=tls)["backend"] == "api"
    assert who(hp, "/app/../exact", ctx=tls)["path"] == "/exact"
    assert who(hp, "/impl/%2e%2e/app/admin/x", ctx=tls)["path"] == "/app/admin/x"
    assert who(hp, "/app//./admin", ctx=tls)["path"] == "/app/admin"
    for bad in ("/app/..%2fexact", "/app/%2F..%2Fexact", "/app/%00", "/app/..%5cexact", "/app/%zz"):
        status, body, _ = get(hp, bad, ctx=tls)
        assert status == 400, (bad, status, body)
    # absolute-form targets are refused rather than routed by a host other than Host's
    r = raw(p, b"GET http://b.example.com/app HTTP/1.1\r\nHost: a.example.com\r\n\r\n")
    assert status_line(r).split()[1] == b"400", r[:100]
    # not an open proxy: CONNECT has no path to route
    r = raw(p, b"CONNECT 10.0.0.1:22 HTTP/1.1\r\nHost: 10.0.0.1:22\r\n\r\n")
    assert status_line(r).split()[1] == b"400", r[:100]
    # two Host headers, or none in HTTP/1.1
    r = raw(p, b"GET /x HTTP/1.1\r\nHost: x.wild.example.com\r\nHost: a.example.com\r\n\r\n")
    assert status_line(r).split()[1] == b"400", r[:100]
    r = raw(p, b"GET /x HTTP/1.1\r\n\r\n")
    assert status_line(r).split()[1] == b"400", r[:100]
    # Expect: 100-continue is answered here, and the body sent after it reaches the backend
    with socket.create_connection(("127.0.0.1", p), timeout=10) as s:
        s.sendall(b"POST /x HTTP/1.1\r\nHost: x.wild.example.com\r\nExpect: 100-continue\r\n"
                  b"Content-Length: 3\r\nConnection: close\r\n\r\n")
        assert s.recv(100) == b"HTTP/1.1 100 Continue\r\n\r\n"
        s.sendall(b"abc")
        answer = b""
        while chunk := s.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_line(head) == b"HTTP/1.1 200 OK" and json.loads(body)["body_len"] == 3, answer[:200]


def test_websocket_upgrade_is_relayed(ctrl: Controller) -> None:
    import asyncio

    import aiohttp

    async def go() -> str:
        async with aiohttp.ClientSession() as s, s.ws_connect(
                f"http://127.0.0.1:{ctrl.http_port}/app/ws", headers={"Host": "api.wild.example.com"}) as ws:
            await ws.send_str("hello")
            msg = await ws.receive(timeout=5)
            return str(msg.data)

    assert asyncio.run(go()) == "api:hello"


def test_deleting_the_ingress_stops_serving_it(ctrl: Controller, cluster: Cluster) -> None:
    cluster.kubectl("delete", "ingress", "-n", NS, "fallback")
    wild = "one.wild.example.com"
    assert who(ctrl.http_port, "/x", host=wild)["backend"] == "api"
    cluster.kubectl("delete", "ingress", "-n", NS, "main")
    wait_for(lambda: get(ctrl.http_port, "/x", host=wild)[0] == 404, 1.0, "main no longer served")


def test_stopping_releases_the_status(cluster: Cluster, ctrl: Controller) -> None:
    _apply(cluster, _ingress("released", {"ingressClassName": "pyk8s",
                                          "defaultBackend": {"service": {"name": "fallback", "port": {"number": 82}}}}))
    second = Controller(cluster, publish="192.0.2.78")  # a second node beside the module's controller

    def lb() -> Any:
        ing = json.loads(cluster.kubectl("get", "ingress", "-n", NS, "released", "-o", "json").stdout)
        return (ing.get("status") or {}).get("loadBalancer", {}).get("ingress")

    wait_for(lambda: lb() == [{"ip": "192.0.2.77"}, {"ip": "192.0.2.78"}], what="both nodes in the status")
    second.stop()
    assert lb() == [{"ip": "192.0.2.77"}]


def test_the_servers_own_controller_acts_as_its_bootstrap_identity(tmp_path: Path) -> None:
    """cluster.start_ingress, as `pyk8s server` runs it beside its local kubelet: on the server's
    loop as user system:pyk8s-ingress (the loopback path, RBAC and all), publishing the node address."""
    import argparse
    import asyncio

    from pyk8s.apiserver.server import APIServer, ServerConfig
    from pyk8s.cluster import component_client, start_ingress
    from pyk8s.kubelet.node import default_node_ip

    args = argparse.Namespace(ingress_bind_address="127.0.0.1", ingress_http_port=0, ingress_https_port=0)

    async def main() -> None:
        server = APIServer(ServerConfig(data_dir=str(tmp_path), port=0))
        await server.start()
        admin = component_client(server, "test-admin", ["system:masters"], "test")
        ctl = None
        try:
            ctl = await start_ingress(server, args)
            assert ctl.server is not None and ctl.server.http_port
            ing = _ingress("own", {"defaultBackend": {"service": {"name": "none", "port": {"number": 80}}}})
            ing["metadata"]["namespace"] = "default"
            await admin.create(("networking.k8s.io", "v1", "ingresses"), ing)
            deadline = asyncio.get_running_loop().time() + 10
            while True:
                got = await admin.get(("networking.k8s.io", "v1", "ingresses"), "own", "default")
                if (got.get("status") or {}).get("loadBalancer", {}).get("ingress"):
                    break
                assert asyncio.get_running_loop().time() < deadline, got
                await asyncio.sleep(0.02)
            assert got["spec"]["ingressClassName"] == "pyk8s"
            assert got["status"]["loadBalancer"]["ingress"] == [{"ip": default_node_ip()}]
            assert any(m["manager"] == "pyk8s-ingress" and m.get("subresource") == "status"
                       for m in got["metadata"]["managedFields"])
        finally:
            if ctl is not None:
                await ctl.stop()
            await admin.close()
            await server.stop()

    asyncio.run(main())
