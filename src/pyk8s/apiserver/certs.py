"""The cluster PKI kept under <data-dir>/pki/: a CA, the API server's serving cert,
an admin client cert and the service-account signing key pair.

Layout follows kubeadm's names so the files look familiar:

    pki/ca.crt  ca.key            cluster CA (CN=pyk8s-ca, EC P-256)
    pki/apiserver.crt  .key       serving cert (SANs: localhost, host names/IPs, kubernetes.default.svc..., 10.96.0.1)
    pki/admin.crt  admin.key      client cert CN=admin, O=system:masters
    pki/sa.key  sa.pub            RSA 2048 key pair signing service-account tokens

`ensure_pki` is idempotent: files are created on first start and reused afterwards; the
serving cert is reissued only when the requested SAN set changed (or it is about to expire,
or no longer chains to the CA). Issuing leaf certificates (and finding the machine's
addresses) is in pyk8s/pki.py, which the kubelet uses too.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import fcntl
import ipaddress
import os
import socket
import ssl
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

from ..datadir import ensure_private_dir, ensure_private_file, write_atomic
from ..pki import (
    PrivateKey,
    certificate_pem,
    issue_leaf,
    local_addresses,
    new_ca,
    new_ec_key,
    private_key_pem,
    utc_now,
    x509_name,
)
from .tls_client_ca import set_client_ca_list

__all__ = [
    "Pki",
    "ensure_pki",
    "copy_shared_pki",
    "ssl_server_context",
    "ssl_client_context",
    "serving_sans",
    "first_service_ip",
    "cert_sans",
    "CA_NAME",
]

CA_NAME = "pyk8s-ca"
CA_VALIDITY = dt.timedelta(days=3650)
# Reissue leaves this long before they expire, so a restart never serves an expired cert.
RENEW_BEFORE = dt.timedelta(days=30)

SERVICE_DNS_NAMES = (
    "kubernetes",
    "kubernetes.default",
    "kubernetes.default.svc",
    "kubernetes.default.svc.cluster.local",
)


@dataclass
class Pki:
    """Paths and loaded objects of a data dir's PKI."""

    dir: Path
    ca_cert_path: Path
    ca_key_path: Path
    serving_cert_path: Path
    serving_key_path: Path
    admin_cert_path: Path
    admin_key_path: Path
    sa_key_path: Path
    sa_pub_path: Path
    ca_cert: x509.Certificate
    ca_key: PrivateKey
    serving_cert: x509.Certificate
    sa_private_key: rsa.RSAPrivateKey
    sa_public_key: rsa.RSAPublicKey
    serving_sans: tuple[str, ...]

    @property
    def ca_pem(self) -> bytes:
        return self.ca_cert.public_bytes(serialization.Encoding.PEM)

    @property
    def admin_cert_pem(self) -> bytes:
        return self.admin_cert_path.read_bytes()

    @property
    def admin_key_pem(self) -> bytes:
        return self.admin_key_path.read_bytes()


# --------------------------------------------------------------------------- helpers


def _load_key(path: Path) -> PrivateKey:
    key = serialization.load_pem_private_key(path.read_bytes(), password=None)
    if not isinstance(key, (ec.EllipticCurvePrivateKey, rsa.RSAPrivateKey)):
        raise ValueError(f"{path}: unsupported private key type {type(key).__name__}")
    return key


def _load_cert(path: Path) -> x509.Certificate:
    return x509.load_pem_x509_certificate(path.read_bytes())


def _same_public_key(cert: x509.Certificate, key: PrivateKey) -> bool:
    fmt = (serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return cert.public_key().public_bytes(*fmt) == key.public_key().public_bytes(*fmt)


def _issued_by(cert: x509.Certificate, ca: x509.Certificate) -> bool:
    try:
        cert.verify_directly_issued_by(ca)
    except (ValueError, TypeError, InvalidSignature):
        return False
    return True


def _needs_renewal(cert: x509.Certificate) -> bool:
    return cert.not_valid_after_utc - RENEW_BEFORE < utc_now()


def _norm_san(san: str) -> str:
    """Canonical form for comparison: IPs compressed, DNS names lower-cased."""
    try:
        return str(ipaddress.ip_address(san))
    except ValueError:
        return san.strip().lower().rstrip(".")


def cert_sans(cert: x509.Certificate) -> list[str]:
    """The DNS and IP SANs of a certificate as strings."""
    try:
        ext = cert.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return []
    out: list[str] = list(ext.get_values_for_type(x509.DNSName))
    out += [str(ip) for ip in ext.get_values_for_type(x509.IPAddress)]
    return out


# --------------------------------------------------------------------------- SANs


def first_service_ip(service_cidr: str) -> str:
    """The first usable address of the service CIDR: what the `kubernetes` Service gets (10.96.0.1).

    A dual-stack value ("10.96.0.0/12,fd00::/108") uses the first (primary) range, as upstream does.
    """
    primary = service_cidr.split(",")[0].strip()
    net = ipaddress.ip_network(primary, strict=False)
    return str(net.network_address + 1)


def serving_sans(extra_sans: Iterable[str] = (), service_cidr: str = "10.96.0.0/12") -> list[str]:
    """The SANs the API server's serving cert should carry, de-duplicated, in a stable order."""
    wanted = ["localhost", "127.0.0.1", "::1"]
    host = socket.gethostname().strip().lower()
    if host:
        wanted.append(host)
    wanted += local_addresses()
    wanted += SERVICE_DNS_NAMES
    wanted.append(first_service_ip(service_cidr))
    wanted += [s for s in extra_sans if s and s.strip()]
    out: list[str] = []
    seen: set[str] = set()
    for s in wanted:
        n = _norm_san(s)
        if n not in seen:
            seen.add(n)
            out.append(n)
    return out


# --------------------------------------------------------------------------- issuing


def _new_ca() -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    return new_ca(CA_NAME, CA_VALIDITY)


# --------------------------------------------------------------------------- ensure_pki


@contextlib.contextmanager
def _locked(pki_dir: Path) -> Iterator[None]:
    """Serialize concurrent starts on one data dir (two processes must not mint two CAs)."""
    fd = os.open(pki_dir / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)


def _ensure_ca(ca_crt: Path, ca_key: Path) -> tuple[x509.Certificate, PrivateKey, bool]:
    """Load the CA, or create it; the bool says whether it is new (leaves must be reissued)."""
    if ca_crt.exists() and ca_key.exists():
        cert, key = _load_cert(ca_crt), _load_key(ca_key)
        if not _same_public_key(cert, key):
            raise ValueError(f"{ca_crt} does not match {ca_key}")
        return cert, key, False
    if ca_crt.exists() != ca_key.exists():
        # Half a CA is unrecoverable without silently invalidating every issued credential.
        missing = ca_key if ca_crt.exists() else ca_crt
        raise FileNotFoundError(
            f"PKI is incomplete: {missing} is missing (remove {ca_crt.parent} to start over)"
        )
    cert, key = _new_ca()
    write_atomic(ca_key, private_key_pem(key), 0o600)
    write_atomic(ca_crt, certificate_pem(cert), 0o644)
    return cert, key, True


def _leaf_ok(crt: Path, key_path: Path, ca: x509.Certificate) -> bool:
    if not (crt.exists() and key_path.exists()):
        return False
    try:
        cert, key = _load_cert(crt), _load_key(key_path)
    except ValueError:
        return False
    return _same_public_key(cert, key) and _issued_by(cert, ca) and not _needs_renewal(cert)


def ensure_pki(
    data_dir: str | os.PathLike[str], extra_sans: Iterable[str] = (), service_cidr: str = "10.96.0.0/12"
) -> Pki:
    """Create (first start) or load (later starts) the PKI under <data_dir>/pki/."""
    pki_dir = Path(data_dir) / "pki"
    ensure_private_dir(data_dir)
    ensure_private_dir(pki_dir)
    p = {
        "ca_cert_path": pki_dir / "ca.crt",
        "ca_key_path": pki_dir / "ca.key",
        "serving_cert_path": pki_dir / "apiserver.crt",
        "serving_key_path": pki_dir / "apiserver.key",
        "admin_cert_path": pki_dir / "admin.crt",
        "admin_key_path": pki_dir / "admin.key",
        "sa_key_path": pki_dir / "sa.key",
        "sa_pub_path": pki_dir / "sa.pub",
    }
    for k in ("ca_key_path", "serving_key_path", "admin_key_path", "sa_key_path"):
        ensure_private_file(p[k])  # e.g. copied in by hand with a looser mode
    sans = serving_sans(extra_sans, service_cidr)
    with _locked(pki_dir):
        ca_cert, ca_key, new_ca = _ensure_ca(p["ca_cert_path"], p["ca_key_path"])

        # serving cert: reissue when missing, stale, or its SAN set differs from what is wanted now
        srv_crt, srv_key = p["serving_cert_path"], p["serving_key_path"]
        reissue = new_ca or not _leaf_ok(srv_crt, srv_key, ca_cert)
        if not reissue:
            have = {_norm_san(s) for s in cert_sans(_load_cert(srv_crt))}
            reissue = have != set(sans)
        if reissue:
            key = new_ec_key()
            cert = issue_leaf(ca_cert, ca_key, x509_name("kube-apiserver"), key, server=True, sans=sans)
            write_atomic(srv_key, private_key_pem(key), 0o600)
            write_atomic(srv_crt, certificate_pem(cert), 0o644)

        # admin client cert
        adm_crt, adm_key = p["admin_cert_path"], p["admin_key_path"]
        if new_ca or not _leaf_ok(adm_crt, adm_key, ca_cert):
            key = new_ec_key()
            cert = issue_leaf(ca_cert, ca_key, x509_name("admin", ["system:masters"]), key, server=False)
            write_atomic(adm_key, private_key_pem(key), 0o600)
            write_atomic(adm_crt, certificate_pem(cert), 0o644)

        # service-account signing keys: independent of the CA, never rotated here (rotation
        # would invalidate every issued token)
        sa_key_path, sa_pub_path = p["sa_key_path"], p["sa_pub_path"]
        if sa_key_path.exists():
            sa_key = serialization.load_pem_private_key(sa_key_path.read_bytes(), password=None)
            if not isinstance(sa_key, rsa.RSAPrivateKey):
                raise ValueError(f"{sa_key_path}: expected an RSA private key")
        else:
            sa_key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
            write_atomic(sa_key_path, private_key_pem(sa_key), 0o600)
        pub_pem = sa_key.public_key().public_bytes(
            serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo
        )
        if not sa_pub_path.exists() or sa_pub_path.read_bytes() != pub_pem:
            write_atomic(sa_pub_path, pub_pem, 0o644)

        serving = _load_cert(srv_crt)
    return Pki(
        dir=pki_dir,
        ca_cert=ca_cert,
        ca_key=ca_key,
        serving_cert=serving,
        sa_private_key=sa_key,
        sa_public_key=sa_key.public_key(),
        serving_sans=tuple(_norm_san(s) for s in cert_sans(serving)),
        **p,
    )


# --------------------------------------------------------------------------- TLS contexts


_X509_V_FLAG_NO_CHECK_TIME = 0x200000  # OpenSSL's flag; Python's ssl has no name for it


def ssl_server_context(pki: Pki) -> ssl.SSLContext:
    """TLS context for the API server: requests (not requires) a client cert verified by the CA.

    With CERT_OPTIONAL an anonymous or token-bearing client still connects, while one that
    presents a cert gets it verified during the handshake; the handler then reads it with
    `transport.get_extra_info("ssl_object").getpeercert(binary_form=True)`.
    """
    from ..tlsdefaults import harden_server_context

    ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
    ctx.load_cert_chain(str(pki.serving_cert_path), str(pki.serving_key_path))
    ctx.load_verify_locations(cafile=str(pki.ca_cert_path))
    ctx.verify_mode = ssl.CERT_OPTIONAL
    # the handshake checks the chain but not the validity period: an expired (or not yet valid)
    # client certificate must reach the x509 authenticator, which checks the time and answers
    # 401 Unauthorized as kube-apiserver's does, rather than end the connection mid-handshake
    ctx.verify_flags |= _X509_V_FLAG_NO_CHECK_TIME
    set_client_ca_list(ctx, str(pki.ca_cert_path))  # as Go's ClientCAs: the CertificateRequest names the CA
    return ctx


def ssl_client_context(
    pki: Pki,
    cert_path: str | os.PathLike[str] | None = None,
    key_path: str | os.PathLike[str] | None = None,
) -> ssl.SSLContext:
    """TLS client context trusting the cluster CA; presents the admin cert unless another is given."""
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=str(pki.ca_cert_path))
    ctx.load_cert_chain(str(cert_path or pki.admin_cert_path), str(key_path or pki.admin_key_path))
    return ctx


# --------------------------------------------------------------------------- several API servers

SHARED_PKI_FILES = ("ca.crt", "ca.key", "sa.key", "sa.pub")


def copy_shared_pki(source: str | os.PathLike[str], data_dir: str | os.PathLike[str]) -> list[str]:
    """Give a further API server the cluster's CA and service-account key pair (kubeadm's
    "copy the certificates to the other control-plane nodes"): client certificates and
    service-account tokens of one server are then valid on all. `source` is another server's
    data dir or its pki/ folder. Files already present are kept (they must match: a data
    dir holding another CA is refused). Each server still issues its own serving certificate
    (its own SANs) and admin certificate from the shared CA. Returns the files copied."""
    src = Path(source)
    if (src / "pki" / "ca.crt").exists():
        src = src / "pki"
    dst = Path(data_dir) / "pki"
    ensure_private_dir(data_dir)
    ensure_private_dir(dst)
    copied: list[str] = []
    with _locked(dst):
        for name in SHARED_PKI_FILES:
            s, d = src / name, dst / name
            if not s.exists():
                raise FileNotFoundError(f"{s} is missing: give the data dir (or pki/ folder) of a running server")
            data = s.read_bytes()
            if d.exists():
                if d.read_bytes() != data:
                    raise ValueError(f"{d} differs from {s}: this data dir belongs to another cluster")
                continue
            write_atomic(d, data, 0o600 if name.endswith(".key") else 0o644)
            copied.append(name)
    return copied
