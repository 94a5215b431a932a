"""The kubelet certificate manager's rotation deadline and the bootstrap token's detached JWS (pure logic)."""

from __future__ import annotations

import datetime as dt
import random

from cryptography import x509
from cryptography.hazmat.primitives import hashes

from pyk8s import bootstraptoken as bt
from pyk8s.kubelet.tls_bootstrap import rotation_deadline
from pyk8s.pki import new_ec_key, x509_name


def _cert(not_before: dt.datetime, not_after: dt.datetime) -> x509.Certificate:
    key = new_ec_key()
    return (x509.CertificateBuilder().subject_name(x509_name("n")).issuer_name(x509_name("n"))
            .public_key(key.public_key()).serial_number(1).not_valid_before(not_before).not_valid_after(not_after)
            .sign(key, hashes.SHA256()))


def test_deadline_is_70_to_90_percent_of_the_life() -> None:
    t0 = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    cert = _cert(t0, t0 + dt.timedelta(hours=10))
    rng = random.Random(7)
    deadlines = [rotation_deadline(cert, t0.timestamp() - 1, rng) - t0.timestamp() for _ in range(200)]
    assert min(deadlines) >= 7 * 3600 and max(deadlines) <= 9 * 3600
    assert max(deadlines) - min(deadlines) > 3600  # jittered, not one fixed point


def test_backdated_short_certificate_is_not_due_at_once() -> None:
    """Signers backdate notBefore by 5 minutes: a 30 s certificate counts its life from its arrival."""
    now = dt.datetime(2030, 1, 1, tzinfo=dt.UTC)
    cert = _cert(now - dt.timedelta(minutes=5), now + dt.timedelta(seconds=30))
    d = rotation_deadline(cert, now.timestamp(), random.Random(1)) - now.timestamp()
    assert 21 <= d <= 27


def test_detached_jws_shape_and_key() -> None:
    sig = bt.detached_signature("content", "abcdef", "0123456789abcdef")
    header, payload, mac = sig.split(".")
    assert payload == "" and header and mac
    assert bt.verify_detached(sig, "content", "abcdef", "0123456789abcdef")
    assert not bt.verify_detached(sig, "content!", "abcdef", "0123456789abcdef")
    assert not bt.verify_detached(sig, "content", "abcdef", "0123456789abcdee")
