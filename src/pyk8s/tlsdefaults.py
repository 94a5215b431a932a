"""TLS settings every listener of the project shares (API server, kubelet server).

As upstream's serving defaults: TLS 1.2 and 1.3 only, and for TLS 1.2 only forward-secret
AEAD suites (ECDHE key exchange with AES-GCM or ChaCha20-Poly1305): no CBC, no RSA key
exchange, no SHA-1 MACs. TLS 1.3 suites are all AEAD and stay OpenSSL's.

ALPN offers http/1.1 only: neither HTTP stack of the API server (http1.py, aiohttp) speaks
HTTP/2, and a client that negotiated h2 would fail on the first frame (docs/security.md).
"""

from __future__ import annotations

import ssl

__all__ = ["TLS12_CIPHERS", "harden_server_context"]

# OpenSSL names of the ECDHE + AEAD suites, in upstream's order of preference
TLS12_CIPHERS = ":".join((
    "ECDHE-ECDSA-AES128-GCM-SHA256",
    "ECDHE-RSA-AES128-GCM-SHA256",
    "ECDHE-ECDSA-AES256-GCM-SHA384",
    "ECDHE-RSA-AES256-GCM-SHA384",
    "ECDHE-ECDSA-CHACHA20-POLY1305",
    "ECDHE-RSA-CHACHA20-POLY1305",
))


def harden_server_context(ctx: ssl.SSLContext) -> ssl.SSLContext:
    """Restrict a serving context to upstream's protocol versions, suites and ALPN."""
    ctx.minimum_version = ssl.TLSVersion.TLSv1_2
    ctx.maximum_version = ssl.TLSVersion.TLSv1_3
    ctx.set_ciphers(TLS12_CIPHERS)
    ctx.options |= ssl.OP_NO_COMPRESSION | ssl.OP_CIPHER_SERVER_PREFERENCE | ssl.OP_NO_RENEGOTIATION
    ctx.set_alpn_protocols(["http/1.1"])
    return ctx
