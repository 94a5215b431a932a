"""Pure logic of the CSR controllers: the cleaner's deadlines (upstream's csrcleaner: issued,
denied or failed for an hour, pending for a day, or holding an expired certificate) and the
signer's certificate lifetime (expirationSeconds, at least 10 minutes, at most the signer's)."""

from __future__ import annotations

import base64
import datetime as dt
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from pyk8s.api.timefmt import format_time
from pyk8s.controllers.csrcleaner import should_clean
from pyk8s.controllers.csrsigning import certificate_duration, sign_csr

NOW = 1_800_000_000.0
HOUR = 3600.0


def _at(offset: float) -> str:
    return format_time(NOW + offset)


def _csr(created: float = -60, conds: list[dict[str, Any]] | None = None, cert: str = "") -> dict[str, Any]:
    status: dict[str, Any] = {}
    if conds:
        status["conditions"] = conds
    if cert:
        status["certificate"] = cert
    return {"metadata": {"name": "x", "creationTimestamp": _at(created)}, "status": status}


def _cert(not_after: dt.datetime) -> str:
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "x")])
    c = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
         .serial_number(1).not_valid_before(not_after - dt.timedelta(days=1)).not_valid_after(not_after)
         .sign(key, hashes.SHA256()))
    return base64.b64encode(c.public_bytes(serialization.Encoding.PEM)).decode()


def test_pending_csrs_go_after_a_day():
    assert not should_clean(_csr(created=-23 * HOUR), NOW)
    assert should_clean(_csr(created=-25 * HOUR), NOW)


def test_denied_and_failed_go_after_an_hour():
    for t in ("Denied", "Failed"):
        assert not should_clean(_csr(conds=[{"type": t, "status": "True", "lastUpdateTime": _at(-59 * 60)}]), NOW)
        assert should_clean(_csr(conds=[{"type": t, "status": "True", "lastUpdateTime": _at(-61 * 60)}]), NOW)


def test_approved_goes_an_hour_after_issue_or_when_its_certificate_expired():
    fresh = _cert(dt.datetime.fromtimestamp(NOW, dt.UTC) + dt.timedelta(days=30))
    old_approval = [{"type": "Approved", "status": "True", "lastUpdateTime": _at(-2 * HOUR)}]
    new_approval = [{"type": "Approved", "status": "True", "lastUpdateTime": _at(-60)}]
    assert should_clean(_csr(conds=old_approval, cert=fresh), NOW)
    assert not should_clean(_csr(conds=new_approval, cert=fresh), NOW)
    # approved but not issued (yet): kept, whatever its age, as upstream
    assert not should_clean(_csr(created=-48 * HOUR, conds=old_approval), NOW)
    expired = _cert(dt.datetime.fromtimestamp(NOW, dt.UTC) - dt.timedelta(minutes=1))
    assert should_clean(_csr(conds=new_approval, cert=expired), NOW)


def test_certificate_duration():
    year = 365 * 24 * HOUR
    assert certificate_duration(None, year) == year
    assert certificate_duration(3600, year) == 3600
    assert certificate_duration(10 * year, year) == year
    assert certificate_duration(60, year) == 600  # the signer's floor (the API refuses < 600 anyway)


def test_sign_csr_backdates_and_keeps_to_the_ca_lifetime():
    ca_key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.fromtimestamp(NOW, dt.UTC).replace(microsecond=0)
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ca")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name).public_key(ca_key.public_key())
          .serial_number(7).not_valid_before(now - dt.timedelta(days=1)).not_valid_after(now + dt.timedelta(days=2))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    req = (x509.CertificateSigningRequestBuilder()
           .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "u")]))
           .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)  # dropped
           .sign(key, hashes.SHA256()))
    long = x509.load_pem_x509_certificate(sign_csr(ca, ca_key, req, ["client auth"], 365 * 24 * HOUR, now))
    assert long.not_valid_before_utc == now - dt.timedelta(minutes=5)
    assert long.not_valid_after_utc == ca.not_valid_after_utc  # never past the CA
    assert not long.extensions.get_extension_for_class(x509.BasicConstraints).value.ca
    day = x509.load_pem_x509_certificate(sign_csr(ca, ca_key, req, ["client auth"], 24 * HOUR, now))
    assert day.not_valid_after_utc == now + dt.timedelta(hours=24) - dt.timedelta(minutes=5)
    short = x509.load_pem_x509_certificate(sign_csr(ca, ca_key, req, ["client auth"], HOUR, now))
    assert short.not_valid_after_utc == now + dt.timedelta(hours=1)
