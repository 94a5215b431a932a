"""The client CA names in the TLS CertificateRequest, as Go's crypto/tls server sends them.

kube-apiserver's TLS config sets ClientCAs, so its CertificateRequest lists the subject of
every CA it accepts client certificates from (`openssl s_client` prints them under
"Acceptable client certificate CA names"); clients holding several certificates pick by it.
Python's ssl module verifies against load_verify_locations() but has no call for that list
(OpenSSL's SSL_CTX_set_client_CA_list), so it is set here through libssl itself, on the
SSL_CTX that the SSLContext object wraps.
"""

from __future__ import annotations

import ctypes
import logging
import ssl
import sys

__all__ = ["set_client_ca_list"]

log = logging.getLogger("pyk8s.apiserver.tls")

_libssl: ctypes.CDLL | None = None


def _lib() -> ctypes.CDLL:
    """libssl as the _ssl module loaded it (a handle on _ssl resolves its dependencies' symbols),
    so the SSL_CTX and the functions come from one OpenSSL."""
    global _libssl
    if _libssl is None:
        import _ssl

        lib = ctypes.CDLL(_ssl.__file__)
        lib.SSL_load_client_CA_file.argtypes = [ctypes.c_char_p]
        lib.SSL_load_client_CA_file.restype = ctypes.c_void_p
        lib.SSL_CTX_set_client_CA_list.argtypes = [ctypes.c_void_p, ctypes.c_void_p]
        lib.SSL_CTX_set_client_CA_list.restype = None
        lib.SSL_CTX_get_verify_mode.argtypes = [ctypes.c_void_p]
        lib.SSL_CTX_get_verify_mode.restype = ctypes.c_int
        _libssl = lib
    return _libssl


def _ssl_ctx_pointer(lib: ctypes.CDLL, ctx: ssl.SSLContext) -> int:
    """The SSL_CTX* of an SSLContext: CPython's PySSLContext starts with PyObject_HEAD, then it.
    Checked against the context's verify mode before anything is written through it."""
    ptr = ctypes.c_void_p.from_address(id(ctx) + sys.getsizeof(object())).value
    if not ptr:
        raise RuntimeError("no SSL_CTX in this SSLContext")
    want = {ssl.CERT_NONE: 0, ssl.CERT_OPTIONAL: 1, ssl.CERT_REQUIRED: 3}[ctx.verify_mode]
    if lib.SSL_CTX_get_verify_mode(ptr) != want:
        raise RuntimeError("unexpected SSLContext layout")
    return ptr


def set_client_ca_list(ctx: ssl.SSLContext, ca_file: str) -> bool:
    """Announce the subjects of the certificates in ca_file as acceptable client CAs.

    False (and a warning) where this Python's ssl module is not CPython's over a shared libssl:
    client certificates still verify then, only the list is missing from the handshake."""
    if sys.implementation.name != "cpython":
        log.warning("TLS: cannot announce client CA names on %s", sys.implementation.name)
        return False
    try:
        lib = _lib()
        ptr = _ssl_ctx_pointer(lib, ctx)
        names = lib.SSL_load_client_CA_file(ca_file.encode())
        if not names:
            raise RuntimeError(f"no certificates read from {ca_file}")
        # the context takes ownership of the name stack
        lib.SSL_CTX_set_client_CA_list(ptr, names)
    except (OSError, AttributeError, RuntimeError) as e:
        log.warning("TLS: cannot announce client CA names: %s", e)
        return False
    return True
