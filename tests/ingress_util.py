"""Clients for the Ingress controller's tests (tests/integration/test_ingress.py,
tests/e2e/test_ingress_nodes.py): plain HTTP(S) requests with a chosen Host and SNI, the
certificate a port serves for a name, and self-signed certificates for TLS Secrets."""

from __future__ import annotations

import base64
import datetime as dt
import http.client
import socket
import ssl
import time
from collections.abc import Callable
from typing import Any

FAKE_CN = "Kubernetes Ingress Controller Fake Certificate"


def wait_for(cond: Callable[[], Any], timeout: float = 10.0, what: str = "condition") -> Any:
    """cond()'s first true value, polled every 20 ms; connection errors and failed asserts
    (a port not yet listening, a route not yet served) count as not yet."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = cond()
            if last:
                return last
        except (OSError, AssertionError, KeyError, ValueError) as e:
            last = e
        time.sleep(0.02)
    raise AssertionError(f"{what} not reached within {timeout}s (last: {last!r})")


def get(port: int, path: str, host: str = "a.example.com", headers: dict[str, str] | None = None,
        method: str = "GET", body: bytes | None = None, ctx: ssl.SSLContext | None = None,
        sni: str | None = None, addr: str = "127.0.0.1") -> tuple[int, bytes, Any]:
    """One request to addr:port with this Host header (over TLS with `ctx`, SNI `sni` or the host)."""
    if ctx is not None:
        conn: http.client.HTTPConnection = http.client.HTTPSConnection(addr, port, context=ctx, timeout=10)
        sock = socket.create_connection((addr, port), timeout=10)
        conn.sock = ctx.wrap_socket(sock, server_hostname=sni or host)
    else:
        conn = http.client.HTTPConnection(addr, port, timeout=10)
    try:
        conn.request(method, path, body=body, headers={"Host": host, **(headers or {})})
        r = conn.getresponse()
        return r.status, r.read(), r.headers
    finally:
        conn.close()


def self_signed(host: str) -> tuple[bytes, bytes]:
    """A certificate for `host` (its own CA) and its key, PEM."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, host)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(minutes=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName(host)]), critical=False)
            .sign(key, hashes.SHA256()))
    return (cert.public_bytes(serialization.Encoding.PEM),
            key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                              serialization.NoEncryption()))


def tls_secret(name: str, namespace: str, cert: bytes, key: bytes, typ: str = "kubernetes.io/tls") -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Secret", "type": typ, "metadata": {"name": name, "namespace": namespace},
            "data": {"tls.crt": base64.b64encode(cert).decode(), "tls.key": base64.b64encode(key).decode()}}


def served_cn(port: int, sni: str, addr: str = "127.0.0.1") -> str:
    """The common name of the certificate addr:port serves for this server name."""
    from cryptography import x509

    ctx = ssl.create_default_context()
    ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    with socket.create_connection((addr, port), timeout=10) as s, ctx.wrap_socket(s, server_hostname=sni) as t:
        der = t.getpeercert(binary_form=True)
    assert der is not None
    cert = x509.load_der_x509_certificate(der)
    return str(cert.subject.get_attributes_for_oid(x509.oid.NameOID.COMMON_NAME)[0].value)
