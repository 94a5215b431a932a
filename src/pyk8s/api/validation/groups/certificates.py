"""certificates.k8s.io/v1 CertificateSigningRequest validation, as upstream's
pkg/apis/certificates/validation: the request must be a PEM CSR with a valid
signature, usages known and unique, a `domain/path` signer name, and coherent
Approved/Denied/Failed conditions. Spec immutability is the strategy's (it copies the
old spec on update), so it is not an error here.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, duplicate, forbidden, index, invalid, not_supported, required, too_long
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import DNS1123_SUBDOMAIN_MAX, is_dns1123_label, is_dns1123_subdomain, name_is_dns_subdomain
from ._common import go_generic, is_int, spec_of

__all__ = ["validate_csr", "validate_csr_update", "validate_signer_name", "VALIDATORS", "UPDATE_VALIDATORS",
           "KEY_USAGES", "LEGACY_UNKNOWN_SIGNER"]

LEGACY_UNKNOWN_SIGNER = "kubernetes.io/legacy-unknown"
KEY_USAGES = sorted([
    "signing", "digital signature", "content commitment", "key encipherment", "key agreement", "data encipherment",
    "cert sign", "crl sign", "encipher only", "decipher only", "any", "server auth", "client auth", "code signing",
    "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user", "timestamping", "ocsp signing",
    "microsoft sgc", "netscape sgc",
])


def _go_bytes(b: bytes) -> GoValue:
    return GoValue("[]byte{" + ", ".join(f"0x{x:x}" for x in b) + "}")


def _decode(raw: Any) -> bytes:
    if not isinstance(raw, str):
        return b""
    try:
        return base64.b64decode(raw, validate=True)
    except (binascii.Error, ValueError):
        return raw.encode()


def _pem_blocks(data: bytes) -> list[tuple[str, dict[str, str], bytes]]:
    """pem.Decode over all blocks: (type, headers, DER)."""
    blocks: list[tuple[str, dict[str, str], bytes]] = []
    text = data.decode("latin-1")
    while True:
        start = text.find("-----BEGIN ")
        if start < 0:
            return blocks
        head_end = text.find("-----", start + 11)
        if head_end < 0:
            return blocks
        typ = text[start + 11:head_end]
        end_marker = f"-----END {typ}-----"
        end = text.find(end_marker, head_end)
        if end < 0:
            return blocks
        body = text[head_end + 5:end].strip("\r\n")
        headers: dict[str, str] = {}
        lines = body.splitlines()
        while lines and ":" in lines[0]:
            k, _, v = lines.pop(0).partition(":")
            headers[k.strip()] = v.strip()
        try:
            der = base64.b64decode("".join(x.strip() for x in lines if x.strip()))
        except (binascii.Error, ValueError):
            return blocks
        blocks.append((typ, headers, der))
        text = text[end + len(end_marker):]


def _csr_error(pem: bytes) -> str | None:
    blocks = _pem_blocks(pem)
    if not blocks or blocks[0][0] != "CERTIFICATE REQUEST":
        return "PEM block type must be CERTIFICATE REQUEST"
    from cryptography import x509

    try:
        csr = x509.load_der_x509_csr(blocks[0][2])
    except ValueError:
        return "x509: malformed certificate request"
    if not csr.is_signature_valid:
        from cryptography.hazmat.primitives.asymmetric import ec, ed25519

        key = csr.public_key()
        if isinstance(key, ec.EllipticCurvePublicKey):
            return "x509: ECDSA verification failure"
        if isinstance(key, ed25519.Ed25519PublicKey):
            return "x509: Ed25519 verification failure"
        return "crypto/rsa: verification error"
    return None


def _certificate_error(pem: bytes) -> str | None:
    if not pem:
        return None
    blocks = _pem_blocks(pem)
    if not blocks:
        return "must contain at least one CERTIFICATE PEM block"
    from cryptography import x509

    for typ, headers, der in blocks:
        if typ != "CERTIFICATE":
            return f'only CERTIFICATE PEM blocks are allowed, found "{typ}"'
        if headers:
            return "no headers are allowed on CERTIFICATE PEM blocks"
        try:
            x509.load_der_x509_certificate(der)
        except ValueError as e:
            return f"invalid certificate: {e}"
    return None


def validate_signer_name(path: str, name: str) -> list[FieldError]:
    """core's ValidateSignerName: `example.com/signer-name`."""
    if not name:
        return [required(path)]
    segments = name.split("/")
    if len(segments) != 2:
        return [invalid(path, name, "must be a fully qualified domain and path of the form 'example.com/signer-name'")]
    domain, rest = segments
    errs: list[FieldError] = []
    if len(domain) > DNS1123_SUBDOMAIN_MAX:
        errs.append(too_long(path, DNS1123_SUBDOMAIN_MAX))
    labels = domain.split(".")
    for lbl in labels:
        msgs = is_dns1123_label(lbl)
        if msgs:
            errs += [invalid(path, domain, f'validating label "{lbl}": {m}') for m in msgs]
            break
    if len(labels) < 2:
        errs.append(invalid(path, domain, "should be a domain with at least two segments separated by dots"))
    for comp in rest.split("."):
        msgs = is_dns1123_subdomain(comp)
        if msgs:
            errs += [invalid(path, rest, f'validating component "{comp}": {m}') for m in msgs]
            break
    if len(rest) > DNS1123_SUBDOMAIN_MAX - 1:
        errs.append(too_long(path, DNS1123_SUBDOMAIN_MAX - 1))
    return errs


def _conditions(obj: dict[str, Any], allow_duplicates: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    path = "status.conditions"
    conds = (obj.get("status") or {}).get("conditions") or []
    seen: set[str] = set()
    approved = denied = False
    for i, c in enumerate(conds):
        if not isinstance(c, dict):
            continue
        cp = index(path, i)
        typ, status = c.get("type") or "", c.get("status") or ""
        if not typ:
            errs.append(required(child(cp, "type")))
        if status not in ("True", "False", "Unknown"):
            errs.append(not_supported(child(cp, "status"), status, ["True", "False", "Unknown"]))
        if typ in ("Approved", "Denied"):
            approved |= typ == "Approved"
            denied |= typ == "Denied"
            if status != "True":
                errs.append(not_supported(child(cp, "status"), status, ["True"]))
        if not allow_duplicates:
            if typ in seen:
                errs.append(duplicate(child(cp, "type"), typ))
            seen.add(typ)
    if approved and denied:
        errs.append(invalid(path, GoValue(go_generic(conds, "[]certificates.CertificateSigningRequestCondition")),
                            "Approved and Denied conditions are mutually exclusive"))
    return errs


def _csr(obj: dict[str, Any], allow_legacy_signer: bool = False, allow_duplicate_conditions: bool = False,
         check_certificate: bool = True) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    spec = spec_of(obj)
    pem = _decode(spec.get("request"))
    err = _csr_error(pem)
    if err:
        errs.append(invalid("spec.request", _go_bytes(pem), err))
    usages = spec.get("usages") or []
    if not usages:
        errs.append(required("spec.usages"))
    exp = spec.get("expirationSeconds")
    if is_int(exp) and exp < 600:
        errs.append(invalid("spec.expirationSeconds", exp, "may not specify a duration less than 600 seconds (10 minutes)"))
    for i, u in enumerate(usages):
        if u not in KEY_USAGES:
            errs.append(not_supported(index("spec.usages", i), u, KEY_USAGES))
    seen: set[str] = set()
    for i, u in enumerate(usages):
        if u in seen:
            errs.append(duplicate(index("spec.usages", i), u))
        seen.add(u)
    signer = spec.get("signerName") or ""
    if signer == LEGACY_UNKNOWN_SIGNER and not allow_legacy_signer:
        errs.append(invalid("spec.signerName", signer, "the legacy signerName is not allowed via this API version"))
    else:
        errs += validate_signer_name("spec.signerName", signer)
    errs += _conditions(obj, allow_duplicate_conditions)
    if check_certificate:
        cert_err = _certificate_error(_decode((obj.get("status") or {}).get("certificate")))
        if cert_err:
            errs.append(invalid("status.certificate", "<certificate data>", cert_err))
    return errs


def validate_csr(obj: dict[str, Any]) -> list[FieldError]:
    return _csr(obj)


def validate_csr_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    old_signer = spec_of(old).get("signerName")
    old_types = [c.get("type") for c in (old.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    errs = _csr(new, allow_legacy_signer=old_signer == LEGACY_UNKNOWN_SIGNER,
                allow_duplicate_conditions=len(old_types) != len(set(old_types)),
                check_certificate=(old.get("status") or {}).get("certificate") is None)
    new_conds = [c.get("type") for c in (new.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    for t in ("Approved", "Denied", "Failed"):
        if new_conds.count(t) < old_types.count(t):
            errs.append(forbidden("status.conditions", f'updates may not remove a condition of type "{t}"'))
    old_cert = (old.get("status") or {}).get("certificate")
    if old_cert and (new.get("status") or {}).get("certificate") != old_cert:
        errs.append(forbidden("status.certificate", "updates may not modify existing certificate content"))
    return errs + validate_object_meta_update(new, old)


VALIDATORS = {("certificates.k8s.io", "CertificateSigningRequest"): validate_csr}
UPDATE_VALIDATORS = {("certificates.k8s.io", "CertificateSigningRequest"): validate_csr_update}
