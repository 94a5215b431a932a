"""Certificates signed by the cluster CA, for whoever holds it: the API server (its own and
its clients' certificates, see apiserver/certs.py for the CA and the files under pki/),
`pyk8s server`'s components and the in-process kubelet (its serving certificate).

Below the API server on purpose: a kubelet issues its serving certificate without importing it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import ipaddress
import json
import os
import shutil
import socket
import subprocess
import warnings
from collections.abc import Sequence
from typing import Protocol

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

__all__ = [
    "CertificateAuthority",
    "PrivateKey",
    "BACKDATE",
    "LEAF_VALIDITY",
    "utc_now",
    "new_ec_key",
    "private_key_pem",
    "certificate_pem",
    "x509_name",
    "subject_key_id",
    "key_usage",
    "issue_leaf",
    "issue_client_cert",
    "issue_serving_cert",
    "local_addresses",
]

PrivateKey = ec.EllipticCurvePrivateKey | rsa.RSAPrivateKey

# Long CNs (system:node:<253-char name>) are legal for Go but trip cryptography's X.520 length
# warning on every parse; the warning is noise for us.
warnings.filterwarnings("ignore", message="Attribute's length must be", category=UserWarning)

LEAF_VALIDITY = dt.timedelta(days=365)
# Backdate notBefore to tolerate clock skew between components.
BACKDATE = dt.timedelta(minutes=5)


class CertificateAuthority(Protocol):
    """What issuing needs of a PKI (apiserver.certs.Pki is one)."""

    @property
    def ca_cert(self) -> x509.Certificate: ...

    @property
    def ca_key(self) -> PrivateKey: ...


def utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)


def private_key_pem(key: PrivateKey) -> bytes:
    return key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.TraditionalOpenSSL,
        serialization.NoEncryption(),
    )


def certificate_pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def new_ec_key() -> ec.EllipticCurvePrivateKey:
    return ec.generate_private_key(ec.SECP256R1())


def x509_name(cn: str, orgs: Sequence[str] = ()) -> x509.Name:
    # X.520 caps CN at 64 chars, but node names (system:node:<253-char name>) exceed it and Go
    # does not enforce the cap, so neither do we; an empty CN is left out.
    attrs = [x509.NameAttribute(NameOID.ORGANIZATION_NAME, o, _validate=False) for o in orgs]
    if cn:
        attrs.append(x509.NameAttribute(NameOID.COMMON_NAME, cn, _validate=False))
    return x509.Name(attrs)


def _general_name(san: str) -> x509.GeneralName:
    try:
        return x509.IPAddress(ipaddress.ip_address(san))
    except ValueError:
        return x509.DNSName(san)


def subject_key_id(key: PrivateKey) -> x509.SubjectKeyIdentifier:
    return x509.SubjectKeyIdentifier.from_public_key(key.public_key())


def key_usage(*, key_encipherment: bool, signs_certs: bool) -> x509.KeyUsage:
    """Digital signature always; encipherment for RSA keys (and the CA's); cert and CRL signing for a CA."""
    return x509.KeyUsage(
        digital_signature=True,
        content_commitment=False,
        key_encipherment=key_encipherment,
        data_encipherment=False,
        key_agreement=False,
        key_cert_sign=signs_certs,
        crl_sign=signs_certs,
        encipher_only=False,
        decipher_only=False,
    )


def issue_leaf(
    ca_cert: x509.Certificate,
    ca_key: PrivateKey,
    subject: x509.Name,
    key: PrivateKey,
    *,
    server: bool,
    sans: Sequence[str] = (),
    validity: dt.timedelta = LEAF_VALIDITY,
) -> x509.Certificate:
    now = utc_now()
    # Never outlive the CA: verifiers reject a leaf valid past its issuer.
    not_after = min(now + validity, ca_cert.not_valid_after_utc)
    b = (
        x509.CertificateBuilder()
        .subject_name(subject)
        .issuer_name(ca_cert.subject)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(not_after)
        .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
        .add_extension(
            key_usage(key_encipherment=isinstance(key, rsa.RSAPrivateKey), signs_certs=False),
            critical=True,
        )
        .add_extension(
            x509.ExtendedKeyUsage(
                [ExtendedKeyUsageOID.SERVER_AUTH if server else ExtendedKeyUsageOID.CLIENT_AUTH]
            ),
            critical=False,
        )
        .add_extension(subject_key_id(key), critical=False)
        .add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(ca_key.public_key()),  # type: ignore[arg-type]
            critical=False,
        )
    )
    if sans:
        b = b.add_extension(x509.SubjectAlternativeName([_general_name(s) for s in sans]), critical=False)
    return b.sign(ca_key, hashes.SHA256())


def new_ca(cn: str, validity: dt.timedelta) -> tuple[x509.Certificate, ec.EllipticCurvePrivateKey]:
    """A self-signed CA certificate and its key."""
    key = new_ec_key()
    now = utc_now()
    name = x509_name(cn)
    cert = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - BACKDATE)
        .not_valid_after(now + validity)
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .add_extension(key_usage(key_encipherment=True, signs_certs=True), critical=True)
        .add_extension(subject_key_id(key), critical=False)
        .sign(key, hashes.SHA256())
    )
    return cert, key


def self_signed_serving_cert(host: str, sans: Sequence[str]) -> tuple[bytes, bytes]:
    """A serving chain + key (PEM) under a throwaway CA of its own, as upstream's kubelet makes one
    (`<host>-ca@<unix time>` signing `<host>@<unix time>`) when it is given no certificate."""
    stamp = int(utc_now().timestamp())
    ca_cert, ca_key = new_ca(f"{host}-ca@{stamp}", LEAF_VALIDITY)
    key = new_ec_key()
    cert = issue_leaf(ca_cert, ca_key, x509_name(f"{host}@{stamp}"), key, server=True, sans=sans)
    return certificate_pem(cert) + certificate_pem(ca_cert), private_key_pem(key)


def issue_client_cert(ca: CertificateAuthority, cn: str, orgs: Sequence[str] = ()) -> tuple[bytes, bytes]:
    """A fresh client cert + key (PEM) signed by the cluster CA: CN -> user, O -> groups.

    Kubelets use CN=system:node:<name>, O=system:nodes.
    """
    key = new_ec_key()
    cert = issue_leaf(ca.ca_cert, ca.ca_key, x509_name(cn, orgs), key, server=False)
    return certificate_pem(cert), private_key_pem(key)


def issue_serving_cert(ca: CertificateAuthority, cn: str, sans: Sequence[str]) -> tuple[bytes, bytes]:
    """A serving cert + key (PEM) signed by the cluster CA, e.g. for a kubelet's port 10250."""
    key = new_ec_key()
    cert = issue_leaf(ca.ca_cert, ca.ca_key, x509_name(cn), key, server=True, sans=sans)
    return certificate_pem(cert), private_key_pem(key)


# --------------------------------------------------------------------------- addresses


# Pod-network plumbing (ours, CNI's, tests') comes and goes; its addresses are not the machine's,
# and counting them would re-issue the serving certificate whenever a bridge appeared.
_VIRTUAL_LINK_KINDS = frozenset({"bridge", "veth", "vxlan", "geneve", "ipip", "gre", "wireguard", "tun"})


def _ip_json_addresses() -> list[str] | None:
    """Global addresses from `ip -j -d addr`, pod-network links left out; None when `ip` fails."""
    ip = shutil.which("ip") or next((p for p in ("/usr/sbin/ip", "/sbin/ip") if os.path.exists(p)), None)
    if not ip:
        return None
    try:
        out = subprocess.run([ip, "-j", "-d", "addr"], capture_output=True, timeout=3, check=True).stdout
        links = json.loads(out or b"[]")
    except (OSError, subprocess.SubprocessError, ValueError):
        return None
    addrs: list[str] = []
    for link in links:
        if (link.get("linkinfo") or {}).get("info_kind") in _VIRTUAL_LINK_KINDS:
            continue
        for info in link.get("addr_info", []):
            local = info.get("local")
            if local and info.get("scope") not in ("host", "link"):
                addrs.append(local)
    return addrs


def _socket_addresses(hostname: str) -> list[str]:
    addrs: list[str] = []
    with contextlib.suppress(OSError):
        for *_, sockaddr in socket.getaddrinfo(hostname, None):
            addrs.append(str(sockaddr[0]))
    # The source address of the default route; connect() on UDP sends no packet.
    for family, target in ((socket.AF_INET, "10.255.255.255"), (socket.AF_INET6, "fd00::1")):
        with contextlib.suppress(OSError), socket.socket(family, socket.SOCK_DGRAM) as s:
            s.connect((target, 1))
            addrs.append(str(s.getsockname()[0]))
    return addrs


def local_addresses() -> list[str]:
    """The machine's non-loopback, non-link-local IP addresses (IPv4 first, de-duplicated)."""
    # the default route's source address always counts, even when its link is a veth (containers)
    raw = (_ip_json_addresses() or []) + _socket_addresses(socket.gethostname())
    seen: dict[str, ipaddress.IPv4Address | ipaddress.IPv6Address] = {}
    for a in raw:
        try:
            ip = ipaddress.ip_address(a.split("%")[0])
        except ValueError:
            continue
        if ip.is_loopback or ip.is_link_local or ip.is_unspecified or ip.is_multicast:
            continue
        seen.setdefault(str(ip), ip)
    return sorted(seen, key=lambda s: (seen[s].version, seen[s]))
