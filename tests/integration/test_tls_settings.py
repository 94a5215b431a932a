"""Every TLS listener speaks TLS 1.2/1.3 only, and on 1.2 only upstream's forward-secret AEAD
suites (ECDHE with AES-GCM or ChaCha20-Poly1305): a client offering TLS 1.1, CBC suites or RSA
key exchange is refused at the handshake, as kube-apiserver's and the kubelet's defaults do."""

from __future__ import annotations

import os
import socket
import ssl
import threading
from collections.abc import Iterator
from urllib.parse import urlparse

import pytest

from pyk8s.kubelet.server import server_tls_context
from tests.cluster import Cluster

pytestmark = [pytest.mark.timeout(60), pytest.mark.filterwarnings("ignore:ssl.TLSVersion:DeprecationWarning")]


def _client(cafile: str, *, version: ssl.TLSVersion | None = None, ciphers: str | None = None,
            alpn: list[str] | None = None) -> ssl.SSLContext:
    ctx = ssl.create_default_context(cafile=cafile)
    ctx.check_hostname = False
    if version is not None:
        ctx.minimum_version = ctx.maximum_version = version
    if ciphers is not None:
        # @SECLEVEL=0: let this client offer what OpenSSL would otherwise not even send
        ctx.set_ciphers(ciphers + ":@SECLEVEL=0")
    if alpn:
        ctx.set_alpn_protocols(alpn)
    return ctx


def _handshake(host: str, port: int, ctx: ssl.SSLContext) -> ssl.SSLSocket:
    raw = socket.create_connection((host, port), timeout=10)
    try:
        return ctx.wrap_socket(raw, server_hostname=host)
    except BaseException:
        raw.close()
        raise


@pytest.fixture(scope="module")
def apiserver(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int, str]]:
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-tls")))
    c.start()
    u = urlparse(c.url)
    assert u.hostname is not None and u.port is not None
    yield u.hostname, u.port, os.path.join(c.data_dir, "pki", "ca.crt")
    c.stop()


@pytest.fixture(scope="module")
def kubelet_listener(apiserver: tuple[str, int, str]) -> Iterator[tuple[str, int, str]]:
    """The kubelet's serving context (server_tls_context) on a real socket, with the cluster's certs."""
    _, _, ca = apiserver
    pki = os.path.dirname(ca)
    ctx = server_tls_context(os.path.join(pki, "apiserver.crt"), os.path.join(pki, "apiserver.key"), ca)
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    stop = threading.Event()

    def serve() -> None:
        srv.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            try:
                with ctx.wrap_socket(conn, server_side=True) as s:
                    s.settimeout(5)
                    s.sendall(b"ok")
            except (ssl.SSLError, OSError):
                conn.close()

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield "127.0.0.1", port, ca
    stop.set()
    t.join(5)
    srv.close()


LISTENERS = ["apiserver", "kubelet_listener"]


@pytest.mark.parametrize("listener", LISTENERS)
def test_tls12_with_ecdhe_aead_and_tls13_are_accepted(listener: str, request: pytest.FixtureRequest) -> None:
    """A guard for the hardening (passes before it too): what upstream's clients use still works."""
    host, port, ca = request.getfixturevalue(listener)
    with _handshake(host, port, _client(ca, version=ssl.TLSVersion.TLSv1_3)) as s:
        assert s.version() == "TLSv1.3"
    with _handshake(host, port, _client(ca, version=ssl.TLSVersion.TLSv1_2)) as s:
        name, proto, _ = s.cipher()
        assert proto == "TLSv1.2" and name.startswith("ECDHE-") and ("GCM" in name or "CHACHA20" in name)
    with _handshake(host, port, _client(ca, alpn=["h2", "http/1.1"])) as s:
        assert s.selected_alpn_protocol() == "http/1.1"  # no HTTP/2: our HTTP stacks do not speak it


# what a downgrading client (or an old one) may offer; each must fail the handshake. Before the
# hardening, the ECDHE-ECDSA CBC suites with SHA-2 MACs were accepted (the serving keys are ECDSA).
BAD_OFFERS = [
    (ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-SHA256:ECDHE-ECDSA-AES256-SHA384"),  # CBC, SHA-2 MAC
    (ssl.TLSVersion.TLSv1_2, "ECDHE-RSA-AES128-SHA256:ECDHE-RSA-AES256-SHA384"),
    (ssl.TLSVersion.TLSv1_2, "ECDHE-ECDSA-AES128-SHA:ECDHE-ECDSA-AES256-SHA:ECDHE-RSA-AES128-SHA"),  # CBC, SHA-1
    (ssl.TLSVersion.TLSv1_2, "AES128-GCM-SHA256:AES256-GCM-SHA384:AES128-SHA256"),  # RSA key exchange
    (ssl.TLSVersion.TLSv1_2, "DHE-RSA-AES128-GCM-SHA256:DHE-RSA-AES256-GCM-SHA384"),  # finite-field DHE
    (ssl.TLSVersion.TLSv1_1, "ALL"),
    (ssl.TLSVersion.TLSv1, "ALL"),
]


@pytest.mark.parametrize("listener", LISTENERS)
def test_old_protocols_and_suites_without_ecdhe_aead_are_refused(listener: str, request: pytest.FixtureRequest
                                                                 ) -> None:
    host, port, ca = request.getfixturevalue(listener)
    accepted = []
    for version, ciphers in BAD_OFFERS:
        try:
            with _handshake(host, port, _client(ca, version=version, ciphers=ciphers)) as s:
                accepted.append(s.cipher())
        except (ssl.SSLError, ConnectionResetError):
            pass
    assert accepted == []
