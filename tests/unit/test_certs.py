"""PKI creation/reuse, SANs, client certs, TLS contexts and kubeconfig round trips."""

from __future__ import annotations

import socket
import ssl
import stat
import threading
from pathlib import Path

import pytest
from cryptography import x509
from cryptography.hazmat.primitives.asymmetric import rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyk8s.apiserver import certs
from pyk8s.apiserver.authn import X509Authenticator
from pyk8s.apiserver.certs import (
    cert_sans,
    ensure_pki,
    first_service_ip,
    ssl_client_context,
    ssl_server_context,
)
from pyk8s.client.kubeconfig import KubeconfigError, load_kubeconfig, write_kubeconfig
from pyk8s.pki import issue_client_cert, local_addresses


@pytest.fixture(scope="module")
def pki_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("data")
    ensure_pki(d)
    return d


def _cn(cert: x509.Certificate) -> str:
    return str(cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)[0].value)


def _orgs(cert: x509.Certificate) -> list[str]:
    return [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


def test_creates_files_with_private_key_modes(pki_dir: Path) -> None:
    pki = ensure_pki(pki_dir)
    for name in (
        "ca.crt",
        "ca.key",
        "apiserver.crt",
        "apiserver.key",
        "admin.crt",
        "admin.key",
        "sa.key",
        "sa.pub",
    ):
        assert (pki_dir / "pki" / name).is_file(), name
    for key in ("ca.key", "apiserver.key", "admin.key", "sa.key"):
        assert stat.S_IMODE((pki_dir / "pki" / key).stat().st_mode) == 0o600, key
    assert _cn(pki.ca_cert) == "pyk8s-ca"
    assert pki.ca_cert.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    pki.serving_cert.verify_directly_issued_by(pki.ca_cert)
    eku = pki.serving_cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    assert ExtendedKeyUsageOID.SERVER_AUTH in eku
    assert isinstance(pki.sa_private_key, rsa.RSAPrivateKey) and pki.sa_private_key.key_size == 2048
    assert b"BEGIN PUBLIC KEY" in pki.sa_pub_path.read_bytes()


def test_restart_reuses_everything(pki_dir: Path) -> None:
    before = {p.name: p.read_bytes() for p in (pki_dir / "pki").iterdir() if not p.name.startswith(".")}
    pki = ensure_pki(pki_dir)
    after = {p.name: p.read_bytes() for p in (pki_dir / "pki").iterdir() if not p.name.startswith(".")}
    assert before == after
    assert (
        pki.serving_cert.serial_number
        == x509.load_pem_x509_certificate(before["apiserver.crt"]).serial_number
    )


def test_serving_cert_sans() -> None:
    sans = set(ensure_pki_sans := certs.serving_sans(["api.example.com", "203.0.113.7"]))
    assert len(ensure_pki_sans) == len(sans)  # no duplicates
    for want in (
        "localhost",
        "127.0.0.1",
        "::1",
        socket.gethostname().lower(),
        "kubernetes",
        "kubernetes.default",
        "kubernetes.default.svc",
        "kubernetes.default.svc.cluster.local",
        "10.96.0.1",
        "api.example.com",
        "203.0.113.7",
    ):
        assert want in sans, want
    for a in local_addresses():
        assert a in sans


def test_serving_cert_reissued_only_when_sans_change(tmp_path: Path) -> None:
    pki = ensure_pki(tmp_path, service_cidr="10.100.0.0/16")
    assert "10.100.0.1" in pki.serving_sans and "10.96.0.1" not in pki.serving_sans
    same = ensure_pki(tmp_path, service_cidr="10.100.0.0/16")
    assert same.serving_cert.serial_number == pki.serving_cert.serial_number
    changed = ensure_pki(tmp_path, extra_sans=["my.host.example"], service_cidr="10.100.0.0/16")
    assert changed.serving_cert.serial_number != pki.serving_cert.serial_number
    assert "my.host.example" in cert_sans(changed.serving_cert)
    # the CA and everything else survive a serving-cert reissue
    assert changed.ca_cert.serial_number == pki.ca_cert.serial_number
    assert changed.sa_pub_path.read_bytes() == pki.sa_pub_path.read_bytes()


def test_expiring_serving_cert_is_renewed(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pki = ensure_pki(tmp_path)
    import datetime as dt

    monkeypatch.setattr(certs, "RENEW_BEFORE", dt.timedelta(days=400))
    renewed = ensure_pki(tmp_path)
    assert renewed.serving_cert.serial_number != pki.serving_cert.serial_number


def test_incomplete_pki_is_an_error(tmp_path: Path) -> None:
    ensure_pki(tmp_path)
    (tmp_path / "pki" / "ca.key").unlink()
    with pytest.raises(FileNotFoundError, match="ca.key"):
        ensure_pki(tmp_path)


def test_first_service_ip() -> None:
    assert first_service_ip("10.96.0.0/12") == "10.96.0.1"
    assert first_service_ip("fd00:10:96::/108") == "fd00:10:96::1"
    assert first_service_ip("10.0.0.0/24,fd00::/108") == "10.0.0.1"


def test_admin_and_client_certs(pki_dir: Path) -> None:
    pki = ensure_pki(pki_dir)
    admin = x509.load_pem_x509_certificate(pki.admin_cert_pem)
    assert _cn(admin) == "admin" and _orgs(admin) == ["system:masters"]
    cert_pem, key_pem = issue_client_cert(pki, "system:node:n1", ["system:nodes"])
    cert = x509.load_pem_x509_certificate(cert_pem)
    assert _cn(cert) == "system:node:n1" and _orgs(cert) == ["system:nodes"]
    cert.verify_directly_issued_by(pki.ca_cert)
    assert (
        ExtendedKeyUsageOID.CLIENT_AUTH
        in cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
    )
    assert b"PRIVATE KEY" in key_pem


def _serve_once(ctx: ssl.SSLContext) -> tuple[socket.socket, threading.Thread, dict[str, object]]:
    """Accept one TLS connection, record the peer cert (DER) and echo one line."""
    srv = socket.create_server(("127.0.0.1", 0))
    result: dict[str, object] = {}

    def run() -> None:
        conn, _ = srv.accept()
        try:
            with ctx.wrap_socket(conn, server_side=True) as tls:
                result["peer"] = tls.getpeercert(binary_form=True)
                tls.sendall(tls.recv(100))
        except Exception as e:  # surfaced by the test through `result`
            result["error"] = e

    t = threading.Thread(target=run, daemon=True)
    t.start()
    return srv, t, result


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1"])
def test_tls_handshake_with_client_cert(pki_dir: Path, host: str) -> None:
    pki = ensure_pki(pki_dir)
    srv, t, result = _serve_once(ssl_server_context(pki))
    port = srv.getsockname()[1]
    cctx = ssl_client_context(pki)
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        cctx.wrap_socket(raw, server_hostname=host) as c,
    ):
        c.sendall(b"ping")
        assert c.recv(100) == b"ping"
    t.join(5)
    srv.close()
    assert "error" not in result, result.get("error")
    peer = result["peer"]
    assert isinstance(peer, bytes)
    user = X509Authenticator(pki.ca_cert).authenticate(peer)
    assert user is not None and user.name == "admin" and user.groups == ["system:masters"]


def test_tls_handshake_without_client_cert(pki_dir: Path) -> None:
    pki = ensure_pki(pki_dir)
    srv, t, result = _serve_once(ssl_server_context(pki))
    port = srv.getsockname()[1]
    cctx = ssl.create_default_context(cafile=str(pki.ca_cert_path))
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        cctx.wrap_socket(raw, server_hostname="localhost") as c,
    ):
        c.sendall(b"x")
        assert c.recv(100) == b"x"
    t.join(5)
    srv.close()
    assert "error" not in result and result["peer"] is None


def test_kubeconfig_round_trip_and_handshake(pki_dir: Path, tmp_path: Path) -> None:
    pki = ensure_pki(pki_dir)
    cert_pem, key_pem = issue_client_cert(pki, "system:node:n1", ["system:nodes"])
    path = tmp_path / "sub" / "kubelet.conf"
    srv, t, result = _serve_once(ssl_server_context(pki))
    port = srv.getsockname()[1]
    write_kubeconfig(path, f"https://127.0.0.1:{port}", pki.ca_pem, cert_pem, key_pem, user="system:node:n1")
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    kc = load_kubeconfig(path)
    assert kc.server == f"https://127.0.0.1:{port}" and kc.ca_data == pki.ca_pem
    assert kc.client_cert_data == cert_pem and kc.client_key_data == key_pem and not kc.insecure
    assert kc.user == "system:node:n1" and kc.context == "pyk8s" and kc.namespace == "default"
    ctx = kc.ssl_client_context()
    assert ctx is not None
    with (
        socket.create_connection(("127.0.0.1", port)) as raw,
        ctx.wrap_socket(raw, server_hostname=kc.server_hostname) as c,
    ):
        c.sendall(b"hi")
        assert c.recv(100) == b"hi"
    t.join(5)
    srv.close()
    user = X509Authenticator(pki.ca_cert).authenticate(result["peer"])  # type: ignore[arg-type]
    assert user is not None and user.name == "system:node:n1" and user.groups == ["system:nodes"]


def test_kubeconfig_token_files_and_contexts(tmp_path: Path) -> None:
    (tmp_path / "ca.crt").write_text("x")
    (tmp_path / "tok").write_text("abc\n")
    (tmp_path / "config").write_text(
        """
apiVersion: v1
kind: Config
current-context: a
clusters:
- name: c
  cluster: {server: "https://10.0.0.1:6443/", certificate-authority: ca.crt, tls-server-name: kubernetes}
- name: insecure
  cluster: {server: "https://h:1", insecure-skip-tls-verify: true}
contexts:
- name: a
  context: {cluster: c, user: u, namespace: team}
- name: b
  context: {cluster: insecure, user: v}
users:
- name: u
  user: {tokenFile: tok}
- name: v
  user: {token: xyz}
"""
    )
    a = load_kubeconfig(tmp_path / "config")
    assert a.server == "https://10.0.0.1:6443" and a.ca_file == str(tmp_path / "ca.crt")
    assert a.token == "abc" and a.namespace == "team" and a.server_hostname == "kubernetes"
    assert a.auth_headers() == {"Authorization": "Bearer abc"}
    b = load_kubeconfig(tmp_path / "config", context="b")
    assert b.insecure and b.token == "xyz"
    ctx = b.ssl_client_context()
    assert ctx is not None and ctx.verify_mode == ssl.CERT_NONE and not ctx.check_hostname
    with pytest.raises(KubeconfigError, match='context "nope" not found'):
        load_kubeconfig(tmp_path / "config", context="nope")


def test_write_kubeconfig_with_token(tmp_path: Path) -> None:
    write_kubeconfig(tmp_path / "k", "http://127.0.0.1:8080", None, token="t0k")
    kc = load_kubeconfig(tmp_path / "k")
    assert kc.token == "t0k" and kc.ca_data is None and kc.ssl_client_context() is None
