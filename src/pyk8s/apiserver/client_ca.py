"""`--client-ca-file`: client certificates signed by another CA bundle are accepted too.

kube-apiserver verifies client certificates against `--client-ca-file`; pyk8s issues its own
cluster CA, so the file is added to it: its certificates verify in the TLS handshake, the x509
authenticator accepts what they signed (CN is the user, O the groups, as for the cluster CA), and
the CertificateRequest names both CAs (as Go's ClientCAs does), from a bundle written beside the PKI.
"""

from __future__ import annotations

import ssl
from pathlib import Path
from typing import Any

from cryptography import x509

from .tls_client_ca import set_client_ca_list

__all__ = ["load_client_cas", "add_to_context"]

BUNDLE = "client-ca-bundle.crt"


def load_client_cas(path: str) -> list[x509.Certificate]:
    """The CA certificates of a PEM bundle; ValueError naming the file when it has none or cannot be read."""
    try:
        data = Path(path).read_bytes()
    except OSError as e:
        raise ValueError(f'unable to load client CA file "{path}": {e.strerror or e}') from None
    try:
        certs = x509.load_pem_x509_certificates(data)
    except ValueError as e:
        raise ValueError(f'unable to load client CA file "{path}": {e}') from None
    if not certs:
        raise ValueError(f'unable to load client CA file "{path}": no certificate found')
    return certs


def add_to_context(ctx: ssl.SSLContext, pki: Any, path: str) -> None:
    """Trust the bundle for client certificates in ctx and name it in the CertificateRequest."""
    ctx.load_verify_locations(cafile=path)
    bundle = Path(pki.dir) / BUNDLE
    tmp = bundle.with_suffix(".tmp")
    tmp.write_bytes(Path(pki.ca_cert_path).read_bytes().rstrip(b"\n") + b"\n" + Path(path).read_bytes())
    tmp.replace(bundle)
    set_client_ca_list(ctx, str(bundle))
