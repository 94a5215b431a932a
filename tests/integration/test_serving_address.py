"""Where the API server listens and what it advertises: upstream's --bind-address / --advertise-address.

kube-apiserver listens on 0.0.0.0 and advertises the node's address (the default route's
interface) in the `kubernetes` Endpoints, so pods reach it; the serving certificate covers that
address, the first service IP and the `kubernetes.default.svc...` names. Requests on the node's
address are authenticated and authorized like any other: anonymous gets /version, not the API.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
from collections.abc import Iterator
from typing import Any

import pytest
from cryptography import x509

from pyk8s.pki import local_addresses
from tests.cluster import REPO, Cluster, raw_request
from tests.conftest import require

pytestmark = [pytest.mark.xdist_group("serving_address")]

SERVICE_NAMES = {"kubernetes", "kubernetes.default", "kubernetes.default.svc", "kubernetes.default.svc.cluster.local",
                 "localhost"}


def node_address() -> str:
    addrs = [a for a in local_addresses() if ":" not in a]
    require("a non-loopback IPv4 address", bool(addrs))
    return addrs[0]


@pytest.fixture(scope="module")
def started(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Start servers with the given flags, stopping every one at the end of the module."""
    servers: list[Cluster] = []

    def start(*args: str) -> Cluster:
        c = Cluster(str(tmp_path_factory.mktemp("serving-address")), extra_args=list(args))
        servers.append(c)
        return c.start()

    try:
        yield start
    finally:
        for c in servers:
            c.stop()


def kubernetes_endpoints(c: Cluster) -> tuple[str, int]:
    ep = raw_request(c, "GET", "/api/v1/namespaces/default/endpoints/kubernetes").json()
    sl = raw_request(c, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").json()
    ip, port = ep["subsets"][0]["addresses"][0]["ip"], ep["subsets"][0]["ports"][0]["port"]
    assert sl["endpoints"][0]["addresses"] == [ip] and sl["ports"][0]["port"] == port
    return ip, port


def https_get(c: Cluster, host: str, path: str, server_name: str | None = None,
              headers: dict[str, str] | None = None) -> tuple[int, bytes]:
    """GET without credentials on `host`, verifying the serving certificate against the cluster CA."""
    ctx = ssl.create_default_context(cafile=os.path.join(c.data_dir, "pki", "ca.crt"))
    with socket.create_connection((host, c.port), 5) as raw, \
            ctx.wrap_socket(raw, server_hostname=server_name or host) as s:
        extra = "".join(f"{k}: {v}\r\n" for k, v in (headers or {}).items())
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {host}\r\n{extra}Connection: close\r\n\r\n".encode())
        data = b""
        while chunk := s.recv(65536):
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split()[1]), body


def serving_sans(c: Cluster) -> set[str]:
    cert = x509.load_pem_x509_certificate(open(os.path.join(c.data_dir, "pki", "apiserver.crt"), "rb").read())
    san = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    return set(san.get_values_for_type(x509.DNSName)) | {str(i) for i in san.get_values_for_type(x509.IPAddress)}


def test_default_listens_on_the_node_address_and_advertises_it(started: Any) -> None:
    c = started()
    ip, port = kubernetes_endpoints(c)
    assert ip in local_addresses() and port == c.port  # the node's address and the real port, not 443
    assert {ip, "10.96.0.1", "127.0.0.1"} | SERVICE_NAMES <= serving_sans(c)
    # reachable on the advertised address with the certificate verified, for the names pods use too
    for name in (ip, "kubernetes.default.svc", "kubernetes.default.svc.cluster.local", "10.96.0.1"):
        status, body = https_get(c, ip, "/version", name)
        assert status == 200 and b'"gitVersion"' in body, name
    # what the network may ask without credentials: health and version only, as upstream's bootstrap RBAC
    for path in ("/healthz", "/livez", "/readyz"):
        assert https_get(c, ip, path)[0] == 200, path
    status, body = https_get(c, ip, "/api/v1/namespaces/default/secrets")
    assert status == 403 and b'User \\"system:anonymous\\" cannot list resource \\"secrets\\"' in body
    for path in ("/api", "/apis", "/openapi/v2", "/openapi/v3", "/metrics", "/logs/", "/openid/v1/jwks",
                 "/.well-known/openid-configuration", "/api/v1/nodes/x/proxy/", "/debug/pprof/"):
        status, body = https_get(c, ip, path)
        assert status == 403 and b'User \\"system:anonymous\\" cannot get ' in body, (path, body[:200])
    status, body = https_get(c, ip, "/api", headers={"Authorization": "Bearer not-a-token"})
    assert status == 401 and b'"reason":"Unauthorized"' in body
    # the admin kubeconfig still works
    assert c.kubectl("get", "--raw", "/api/v1/namespaces/default/services/kubernetes").returncode == 0

    # the opt-out: loopback only, with an address of another machine (a load balancer) advertised
    c = started("--bind-address", "127.0.0.1", "--advertise-address", "198.51.100.9")
    assert kubernetes_endpoints(c) == ("198.51.100.9", c.port)
    assert "198.51.100.9" in serving_sans(c)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection((ip, c.port), 5).close()
    assert https_get(c, "127.0.0.1", "/version")[0] == 200


@pytest.mark.parametrize("flag", ["--bind-address", "--advertise-address"])
def test_address_flags_take_ip_addresses_only(flag: str, tmp_path: Any) -> None:
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path), "--port", "0",
                        flag, "localhost"], capture_output=True, text=True, cwd=str(REPO), timeout=30)
    assert r.returncode == 2
    assert f'invalid argument "localhost" for "{flag}" flag: failed to parse IP: "localhost"' in r.stderr
    assert not os.path.exists(os.path.join(tmp_path, "pki"))


def test_advertise_address_family_must_match_the_service_range(tmp_path: Any) -> None:
    """The single-stack kubernetes Service cannot list an address of the other family (upstream's check)."""
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path), "--port", "0",
                        "--advertise-address", "2001:db8::1"], capture_output=True, text=True, cwd=str(REPO), timeout=30)
    assert r.returncode == 1
    assert 'pyk8s: service IP family "10.96.0.0/12" must match public address family "2001:db8::1"' in r.stderr
