"""APIService aggregation, as upstream's kube-aggregator.

An aggregated API server written here (an external party: a small aiohttp HTTPS app on this
machine's global address) serves `wardle.example.com/v1`. It trusts the front proxy only as
kube-system/extension-apiserver-authentication tells it to: a client certificate from
`requestheader-client-ca-file` whose CN is in `requestheader-allowed-names`, and then the user
in the `requestheader-*-headers`. The API server must authorize before proxying, strip what a
client forges, verify the backend against the APIService's caBundle, report availability with
upstream's reasons, merge discovery, and answer 503 when the APIService is not available.
"""

from __future__ import annotations

import asyncio
import base64
import json
import os
import ssl
import stat
import time
from collections.abc import Iterator
from typing import Any

import pytest
from aiohttp import web
from cryptography import x509

from pyk8s.pki import certificate_pem, issue_leaf, new_ca, new_ec_key, private_key_pem, x509_name
from tests.cluster import Cluster, client_kubeconfig, raw_request, scratch_dir
from tests.https_app import ThreadedHTTPSApp, host_ip

pytestmark = pytest.mark.xdist_group("aggregation")

GROUP, VERSION = "wardle.example.com", "v1"
OTHER = "wardle2.example.com"  # the same backend, registered with a caBundle that does not vouch for it
NS = "wardle"
RESOURCES = {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": f"{GROUP}/{VERSION}", "resources": [
    {"name": "flunders", "singularName": "flunder", "namespaced": True, "kind": "Flunder", "verbs": ["get", "list",
                                                                                                    "watch"],
     "shortNames": ["fl"]},
    {"name": "flunders/status", "singularName": "", "namespaced": True, "kind": "Flunder", "verbs": ["get"]}]}


class Backend:
    """The aggregated API server: records who the front proxy says each request is from."""

    def __init__(self, front_proxy_ca: str, allowed: list[str], server_names: list[str]) -> None:
        self.ip = host_ip()
        self.seen: list[dict[str, Any]] = []
        self.allowed = allowed
        d = scratch_dir("aggr-backend-")
        ca, ca_key = new_ca("wardle-ca", __import__("datetime").timedelta(days=1))
        key = new_ec_key()
        cert = issue_leaf(ca, ca_key, x509_name("wardle"), key, server=True, sans=server_names)
        self.ca_pem = certificate_pem(ca)
        crt, kp, fpca = (os.path.join(d, n) for n in ("tls.crt", "tls.key", "fp-ca.crt"))
        for p, data in ((crt, certificate_pem(cert)), (kp, private_key_pem(key)), (fpca, front_proxy_ca.encode())):
            with open(p, "wb") as f:
                f.write(data)
        self.ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        self.ctx.load_cert_chain(crt, kp)
        self.ctx.load_verify_locations(fpca)
        self.ctx.verify_mode = ssl.CERT_OPTIONAL
        self.app = ThreadedHTTPSApp(self.ip, self.ctx, self.handle)
        self.port = self.app.port

    def _identity(self, request: web.Request) -> dict[str, Any] | None:
        sslobj = request.transport.get_extra_info("ssl_object") if request.transport else None
        der = sslobj.getpeercert(binary_form=True) if sslobj is not None else None
        if not der:
            return None
        cn = x509.load_der_x509_certificate(der).subject.get_attributes_for_oid(x509.NameOID.COMMON_NAME)[0].value
        if cn not in self.allowed:
            return None
        return {"user": request.headers.get("X-Remote-User"), "groups": request.headers.getall("X-Remote-Group", []),
                "extra": {k: v for k, v in request.headers.items() if k.lower().startswith("x-remote-extra-")},
                "authorization": request.headers.get("Authorization"), "path": request.path_qs}

    async def handle(self, request: web.Request) -> web.StreamResponse:
        who = self._identity(request)
        if who is None:
            return web.json_response({"kind": "Status", "code": 401}, status=401)
        self.seen.append(who)
        if request.path in (f"/apis/{GROUP}/{VERSION}", f"/apis/{OTHER}/{VERSION}"):
            return web.json_response(RESOURCES)
        if not request.path.startswith((f"/apis/{GROUP}/{VERSION}/", f"/apis/{OTHER}/{VERSION}/")):
            return web.json_response({"kind": "Status", "code": 404}, status=404)
        if request.path.endswith("/exec"):  # an exec-like upgrade: echo what comes, say who asked
            ws = web.WebSocketResponse(protocols=("v5.channel.k8s.io",))
            await ws.prepare(request)
            async for msg in ws:
                await ws.send_str(f"{who['user']}:{msg.data}")
            return ws
        if request.query.get("watch"):
            resp = web.StreamResponse(headers={"Content-Type": "application/json"})
            await resp.prepare(request)
            await resp.write(json.dumps({"type": "ADDED", "object": {"kind": "Flunder", "metadata": {
                "name": "f1"}}}).encode() + b"\n")
            await asyncio.sleep(30)
            return resp
        return web.json_response({"kind": "FlunderList", "apiVersion": f"{GROUP}/{VERSION}", "items": [],
                                  "metadata": {}, "who": who["user"]})

    def stop(self) -> None:
        self.app.stop()


@pytest.fixture(scope="module")
def agg(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Cluster, Backend]]:
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-aggr")), extra_args=["--disable", "metrics-server"]).start()
    try:
        cm = _wait(lambda: _get(c, "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication"))
        data = cm["data"]
        b = Backend(data["requestheader-client-ca-file"], json.loads(data["requestheader-allowed-names"]),
                    [f"wardle.{NS}.svc", f"nosuch.{NS}.svc"])
        try:
            _setup(c, b)
            yield c, b
        finally:
            b.stop()
    finally:
        c.stop()


def _get(c: Cluster, path: str) -> Any:
    r = raw_request(c, "GET", path)
    return r.json() if r.status == 200 else None


def _wait(fn: Any, timeout: float = 20.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = fn()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError("timed out")


def _apply(c: Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps(obj))


def _service(name: str, port: int = 443) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name, "namespace": NS},
            "spec": {"ports": [{"name": "https", "port": port, "protocol": "TCP"}]}}


def _slice(service: str, ip: str, port: int, ready: bool = True) -> dict[str, Any]:
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": service, "namespace": NS, "labels": {"kubernetes.io/service-name": service}},
            "addressType": "IPv4", "endpoints": [{"addresses": [ip], "conditions": {"ready": ready}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}


def _api_service(group: str, service: str, ca: bytes, port: int = 443) -> dict[str, Any]:
    return {"apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService", "metadata": {"name": f"{VERSION}.{group}"},
            "spec": {"group": group, "version": VERSION, "groupPriorityMinimum": 1000, "versionPriority": 15,
                     "service": {"namespace": NS, "name": service, "port": port},
                     "caBundle": base64.b64encode(ca).decode()}}


def _setup(c: Cluster, b: Backend) -> None:
    c.kubectl("create", "namespace", NS)
    _apply(c, _service("wardle"))
    _apply(c, _slice("wardle", b.ip, b.port))
    _apply(c, _api_service(GROUP, "wardle", b.ca_pem))


def _condition(c: Cluster, name: str) -> dict[str, Any] | None:
    obj = _get(c, f"/apis/apiregistration.k8s.io/v1/apiservices/{name}") or {}
    return next((x for x in (obj.get("status") or {}).get("conditions") or [] if x["type"] == "Available"), None)


def _wait_condition(c: Cluster, name: str, reason: str, message: str | None = None) -> dict[str, Any]:
    """The Available condition once it has this reason (and message: one reason has several)."""
    return _wait(lambda: (cond := _condition(c, name)) is not None and cond["reason"] == reason  # type: ignore[no-any-return]
                 and message in (None, cond["message"]) and cond)


def test_front_proxy_pki_and_requestheader_configmap(agg: tuple[Cluster, Backend]) -> None:
    c, _ = agg
    pki = os.path.join(c.data_dir, "pki")
    for key in ("front-proxy-ca.key", "front-proxy-client.key"):
        assert stat.S_IMODE(os.stat(os.path.join(pki, key)).st_mode) == 0o600
    data = _get(c, "/api/v1/namespaces/kube-system/configmaps/extension-apiserver-authentication")["data"]
    assert json.loads(data["requestheader-allowed-names"]) == ["front-proxy-client"]
    assert json.loads(data["requestheader-username-headers"]) == ["X-Remote-User"]
    assert json.loads(data["requestheader-group-headers"]) == ["X-Remote-Group"]
    assert json.loads(data["requestheader-extra-headers-prefix"]) == ["X-Remote-Extra-"]
    with open(os.path.join(pki, "ca.crt")) as f:
        assert data["client-ca-file"] == f.read()
    # the front proxy has a CA of its own: the cluster CA must not vouch for X-Remote-User
    assert data["requestheader-client-ca-file"] != data["client-ca-file"]


def test_available_passed_and_proxied_with_identity(agg: tuple[Cluster, Backend]) -> None:
    c, b = agg
    cond = _wait_condition(c, f"{VERSION}.{GROUP}", "Passed")
    assert cond["status"] == "True" and cond["message"] == "all checks passed"
    b.seen.clear()
    # an attacker's own identity headers reach neither the API server's authentication nor the backend
    r = raw_request(c, "GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders",
                    headers={"X-Remote-User": "attacker", "X-Remote-Group": "system:masters",
                             "X-Remote-Extra-Scopes": "evil"})
    assert r.status == 200, r.body
    assert r.json()["kind"] == "FlunderList"
    who = b.seen[-1]
    assert who["user"] == "admin"
    assert "attacker" not in json.dumps(who) and "evil" not in json.dumps(who)
    assert set(who["groups"]) == {"system:masters", "system:authenticated"}
    assert who["authorization"] is None  # the client's credentials stay with the API server
    assert who["path"] == f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders"


def test_forged_headers_without_credentials_stay_anonymous(agg: tuple[Cluster, Backend]) -> None:
    c, b = agg
    b.seen.clear()
    r = raw_request(c, "GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders", auth=False,
                    headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"})
    assert r.status == 403, r.body
    st = r.json()
    assert st["reason"] == "Forbidden" and 'User "system:anonymous" cannot list resource "flunders"' in st["message"]
    assert b.seen == []


def test_rbac_refuses_before_proxying(agg: tuple[Cluster, Backend]) -> None:
    c, b = agg
    conf = client_kubeconfig(c, "bob", ["devs"], "bob")
    b.seen.clear()
    r = c.kubectl("--kubeconfig", conf, "get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders",
                  check=False)
    assert r.returncode != 0
    assert 'User "bob" cannot list resource "flunders" in API group "wardle.example.com" in the namespace ' \
           '"wardle"' in r.stderr
    assert b.seen == []
    # granted: proxied as bob
    c.kubectl("create", "role", "fl", "-n", NS, "--verb=list", f"--resource=flunders.{GROUP}")
    c.kubectl("create", "rolebinding", "fl", "-n", NS, "--role=fl", "--user=bob")
    out = _wait(lambda: (r := c.kubectl("--kubeconfig", conf, "get", "--raw",
                                        f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders", check=False)).returncode
                == 0 and r.stdout)
    assert json.loads(out)["who"] == "bob"
    assert b.seen[-1]["groups"] == ["devs", "system:authenticated"]


def test_discovery_merged(agg: tuple[Cluster, Backend]) -> None:
    c, _ = agg
    _wait_condition(c, f"{VERSION}.{GROUP}", "Passed")
    groups = _get(c, "/apis")["groups"]
    assert {"name": GROUP, "versions": [{"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}],
            "preferredVersion": {"groupVersion": f"{GROUP}/{VERSION}", "version": VERSION}} in groups
    assert _get(c, f"/apis/{GROUP}")["preferredVersion"]["version"] == VERSION
    assert _get(c, f"/apis/{GROUP}/{VERSION}")["resources"][0]["name"] == "flunders"

    def aggregated() -> Any:
        r = raw_request(c, "GET", "/apis", headers={
            "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"})
        items = [i for i in r.json()["items"] if i["metadata"].get("name") == GROUP]
        return items[0] if items else None

    item = _wait(aggregated)
    v = item["versions"][0]
    assert v["freshness"] == "Current"
    fl = v["resources"][0]
    assert fl["resource"] == "flunders" and fl["scope"] == "Namespaced" and fl["shortNames"] == ["fl"]
    assert fl["subresources"][0]["subresource"] == "status"
    out = c.kubectl("api-resources", f"--api-group={GROUP}").stdout
    assert "flunders" in out and "fl" in out and f"{GROUP}/{VERSION}" in out


def test_watch_streams_through(agg: tuple[Cluster, Backend]) -> None:
    import http.client

    from pyk8s.client.kubeconfig import load_kubeconfig

    c, _ = agg
    kc = load_kubeconfig(c.kubeconfig)
    host, port = c.url.split("://")[1].rsplit(":", 1)
    conn = http.client.HTTPSConnection(host, int(port), context=kc.ssl_client_context(), timeout=10)
    conn.request("GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders?watch=1")
    r = conn.getresponse()
    assert r.status == 200
    line = r.readline()  # the first event arrives while the backend still holds the watch open
    assert json.loads(line)["object"]["metadata"]["name"] == "f1"
    conn.close()


def test_upgrade_spliced_through(agg: tuple[Cluster, Backend]) -> None:
    import aiohttp

    from pyk8s.client.kubeconfig import load_kubeconfig

    c, b = agg
    ctx = load_kubeconfig(c.kubeconfig).ssl_client_context()

    async def run() -> tuple[str, str | None]:
        async with aiohttp.ClientSession() as s, s.ws_connect(
                f"{c.url}/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders/f1/exec", ssl=ctx,
                protocols=("v5.channel.k8s.io",), headers={"X-Remote-User": "attacker"}) as ws:
            await ws.send_str("hello")
            msg = await ws.receive(timeout=10)
            return str(msg.data), ws.protocol

    data, proto = asyncio.run(run())
    assert data == "admin:hello" and proto == "v5.channel.k8s.io"


def test_availability_reasons(agg: tuple[Cluster, Backend]) -> None:
    c, b = agg
    group = "broken.example.com"
    name = f"{VERSION}.{group}"
    _apply(c, _api_service(group, "nosuch", b.ca_pem))
    cond = _wait_condition(c, name, "ServiceNotFound")
    assert cond["status"] == "False" and cond["message"] == f'service/nosuch in "{NS}" is not present'
    row = c.kubectl("get", "apiservice", name, "--no-headers").stdout.split()
    assert row[:2] == [name, f"{NS}/nosuch"] and row[2:4] == ["False", "(ServiceNotFound)"], row
    r = raw_request(c, "GET", f"/apis/{group}/{VERSION}/things")
    assert r.status == 503 and r.body == b"service unavailable\n"

    _apply(c, _service("nosuch", port=8443))
    cond = _wait_condition(c, name, "ServicePortError")
    assert cond["message"] == f'service/nosuch in "{NS}" is not listening on port 443'

    _apply(c, _service("nosuch"))
    cond = _wait_condition(c, name, "MissingEndpoints")
    assert cond["message"] == f'cannot find endpoints for service/nosuch in "{NS}"'
    _apply(c, _slice("nosuch", b.ip, b.port, ready=False))
    _wait_condition(c, name, "MissingEndpoints",
                    f'endpoints for service/nosuch in "{NS}" have no addresses with port name "https"')

    # ready, but the backend does not serve the group version (404): the discovery check fails
    _apply(c, _slice("nosuch", b.ip, b.port))
    cond = _wait_condition(c, name, "FailedDiscoveryCheck")
    url = f"https://{b.ip}:{b.port}/apis/{group}/{VERSION}"
    assert cond["message"] == f"failing or missing response from {url}: bad status from {url}: 404"
    # the group is listed (kubectl reports it unreachable), with no resources in the aggregated document
    assert group in [g["name"] for g in _get(c, "/apis")["groups"]]
    r = raw_request(c, "GET", f"/apis/{group}/{VERSION}/things")
    assert r.status == 503 and r.body == b"service unavailable\n"
    c.kubectl("delete", "apiservice", name)


def test_backend_certificate_not_from_ca_bundle_refused(agg: tuple[Cluster, Backend]) -> None:
    """A Service pointed at a server the caBundle does not vouch for: as upstream, the availability check
    does not verify (it passes), but no request is proxied there."""
    c, b = agg
    other_ca, _ = new_ca("other", __import__("datetime").timedelta(days=1))
    obj = _api_service(OTHER, "wardle", certificate_pem(other_ca))
    _apply(c, obj)
    _wait_condition(c, obj["metadata"]["name"], "Passed")
    b.seen.clear()
    r = raw_request(c, "GET", f"/apis/{OTHER}/{VERSION}/namespaces/{NS}/flunders")
    assert r.status == 503 and b"certificate verify failed" in r.body, r.body
    assert [w for w in b.seen if OTHER in w["path"] and "flunders" in w["path"]] == []
    c.kubectl("delete", "apiservice", obj["metadata"]["name"])


def test_unavailable_backend_answers_503(agg: tuple[Cluster, Backend]) -> None:
    c, b = agg
    name = f"{VERSION}.{GROUP}"
    _wait_condition(c, name, "Passed")
    c.kubectl("delete", "endpointslice", "-n", NS, "wardle")
    _wait_condition(c, name, "MissingEndpoints")
    r = raw_request(c, "GET", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders")
    assert r.status == 503 and r.body == b"service unavailable\n"
    assert r.headers["Content-Type"] == "text/plain; charset=utf-8"
    # the aggregated document keeps what the backend last listed, marked Stale
    doc = raw_request(c, "GET", "/apis", headers={
        "Accept": "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"}).json()
    (item,) = [i for i in doc["items"] if i["metadata"].get("name") == GROUP]
    assert item["versions"][0]["freshness"] == "Stale" and item["versions"][0]["resources"][0]["resource"] == "flunders"
    r2 = c.kubectl("get", "--raw", f"/apis/{GROUP}/{VERSION}/namespaces/{NS}/flunders", check=False)
    assert "the server is currently unable to handle the request" in r2.stderr
    _apply(c, _slice("wardle", b.ip, b.port))
    _wait_condition(c, name, "Passed")
