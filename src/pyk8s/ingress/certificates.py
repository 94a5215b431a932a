"""TLS for the Ingress controller's HTTPS port: one server context per kubernetes.io/tls Secret,
chosen by SNI from the Ingresses' `tls[].hosts`, and a self-signed default certificate for
every other name (ingress-nginx's "Kubernetes Ingress Controller Fake Certificate")."""

from __future__ import annotations

import datetime as dt
import os
import ssl
import tempfile
from base64 import b64decode
from collections.abc import Callable
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.serialization import load_pem_private_key
from cryptography.x509.oid import NameOID

from ..pki import certificate_pem, new_ec_key, private_key_pem
from ..tlsdefaults import harden_server_context
from .routing import host_matches

__all__ = ["FAKE_CERT_CN", "fake_certificate", "server_context", "secret_context", "SNIRouter", "TLSSecretError"]

FAKE_CERT_CN = "Kubernetes Ingress Controller Fake Certificate"


class TLSSecretError(ValueError):
    """A Secret that cannot serve TLS (wrong type, missing or mismatched key pair)."""


def fake_certificate() -> tuple[bytes, bytes]:
    """A fresh self-signed certificate and key (PEM), as ingress-nginx makes at start."""
    key = new_ec_key()
    name = x509.Name([x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Acme Co"),
                      x509.NameAttribute(NameOID.COMMON_NAME, FAKE_CERT_CN)])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5)).not_valid_after(now + dt.timedelta(days=365))
            .add_extension(x509.SubjectAlternativeName([x509.DNSName("ingress.local")]), critical=False)
            .sign(key, hashes.SHA256()))
    return certificate_pem(cert), private_key_pem(key)


def server_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """A hardened serving context for one key pair. ssl loads chains only from files: they live
    for the call in a private (0700) directory, the key file 0600."""
    ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    with tempfile.TemporaryDirectory(prefix="pyk8s-ingress-") as d:
        cert_path, key_path = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        with open(os.open(cert_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(cert_pem)
        with open(os.open(key_path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600), "wb") as f:
            f.write(key_pem)
        try:
            ctx.load_cert_chain(cert_path, key_path)
        except ssl.SSLError as e:
            raise TLSSecretError(f"the certificate and key do not form a key pair: {e.reason or e}") from None
    return ctx


def secret_context(secret: dict[str, Any]) -> ssl.SSLContext:
    """The serving context of a kubernetes.io/tls Secret, or TLSSecretError saying why not."""
    if secret.get("type") != "kubernetes.io/tls":
        raise TLSSecretError(f"secret is of type {secret.get('type') or 'Opaque'!r}, not kubernetes.io/tls")
    data = secret.get("data") or {}
    try:
        cert_pem, key_pem = b64decode(data.get("tls.crt") or ""), b64decode(data.get("tls.key") or "")
    except ValueError:
        raise TLSSecretError("tls.crt or tls.key is not base64") from None
    if not cert_pem or not key_pem:
        raise TLSSecretError("tls.crt or tls.key is empty")
    try:
        x509.load_pem_x509_certificate(cert_pem)
        load_pem_private_key(key_pem, None)
    except (ValueError, TypeError) as e:
        raise TLSSecretError(f"tls.crt or tls.key is not PEM: {e}") from None
    return server_context(cert_pem, key_pem)


class SNIRouter:
    """Chooses the context for a TLS handshake by its server name. `lookup(host)` gives the
    context of the Secret whose Ingress names that host in `tls[].hosts`, or None for the
    default certificate."""

    def __init__(self, lookup: Callable[[str], ssl.SSLContext | None]) -> None:
        self.lookup = lookup
        cert, key = fake_certificate()
        self.default = server_context(cert, key)
        self.default.sni_callback = self._choose

    def _choose(self, sslobj: ssl.SSLObject, server_name: str | None, _ctx: ssl.SSLContext) -> None:
        if server_name:
            ctx = self.lookup(server_name.lower())
            if ctx is not None:
                sslobj.context = ctx
        return None


def tls_hosts_match(hosts: list[str], host: str) -> bool:
    return any(host_matches(h.lower(), host) for h in hosts)
