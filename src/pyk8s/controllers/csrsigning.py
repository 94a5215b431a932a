"""CSR signing controller: issues certificates for approved CSRs of the kubernetes.io signers.

As upstream's csrsigning (pkg/controller/certificates/signer): one signer each for
`kubernetes.io/kube-apiserver-client`, `kubernetes.io/kube-apiserver-client-kubelet` and
`kubernetes.io/kubelet-serving`, all signing with the cluster CA given by
`--cluster-signing-cert-file/--cluster-signing-key-file` (the controller manager's options
`cluster_signing_cert_file`/`cluster_signing_key_file`). An approved CSR that its signer's
rules refuse gets a `Failed` condition (reason SignerValidationFailure) instead of a
certificate. Certificates last spec.expirationSeconds (at least 10 minutes), capped by
`--cluster-signing-duration` (a year by default) and by the CA's own expiry.
"""

from __future__ import annotations

import base64
import binascii
import datetime as dt
import logging
import secrets
from typing import Any

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ed448, ed25519
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from ..api.errors import StatusError
from .base import GVRS, Controller

__all__ = ["CSRSigningController", "SIGNERS", "signer_validation_error", "certificate_duration", "sign_csr",
           "DEFAULT_SIGNING_DURATION", "subject_common_name", "KUBELET_CLIENT", "load_signing_ca"]

log = logging.getLogger("pyk8s.controllers.csrsigning")

KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"
KUBELET_CLIENT = "kubernetes.io/kube-apiserver-client-kubelet"
KUBELET_SERVING = "kubernetes.io/kubelet-serving"
SIGNERS = (KUBE_APISERVER_CLIENT, KUBELET_CLIENT, KUBELET_SERVING)

DEFAULT_SIGNING_DURATION = 365 * 24 * 3600.0  # --cluster-signing-duration's default, 8760h
MIN_DURATION = 600.0  # upstream's lower bound on a requested duration (twice the backdate)
BACKDATE = 300.0  # certificates start 5 minutes early, for clocks a little behind
SHORT = 8 * 3600.0  # below this lifetime the end is not backdated

_KUBELET_SERVING_USAGES = ({"digital signature", "key encipherment", "server auth"},
                           {"digital signature", "server auth"})
_KUBELET_CLIENT_USAGES = ({"digital signature", "key encipherment", "client auth"},
                          {"digital signature", "client auth"})

_KEY_USAGES = {  # KeyUsage flags, by the keyword arguments of cryptography's KeyUsage
    "signing": "digital_signature", "digital signature": "digital_signature",
    "content commitment": "content_commitment", "key encipherment": "key_encipherment",
    "key agreement": "key_agreement", "data encipherment": "data_encipherment", "cert sign": "key_cert_sign",
    "crl sign": "crl_sign", "encipher only": "encipher_only", "decipher only": "decipher_only",
}
_EXT_KEY_USAGES = {
    "any": x509.ObjectIdentifier("2.5.29.37.0"), "server auth": ExtendedKeyUsageOID.SERVER_AUTH,
    "client auth": ExtendedKeyUsageOID.CLIENT_AUTH, "code signing": ExtendedKeyUsageOID.CODE_SIGNING,
    "email protection": ExtendedKeyUsageOID.EMAIL_PROTECTION, "s/mime": ExtendedKeyUsageOID.EMAIL_PROTECTION,
    "ipsec end system": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.5"),
    "ipsec tunnel": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.6"),
    "ipsec user": x509.ObjectIdentifier("1.3.6.1.5.5.7.3.7"), "timestamping": ExtendedKeyUsageOID.TIME_STAMPING,
    "ocsp signing": ExtendedKeyUsageOID.OCSP_SIGNING,
    "microsoft sgc": x509.ObjectIdentifier("1.3.6.1.4.1.311.10.3.3"),
    "netscape sgc": x509.ObjectIdentifier("2.16.840.1.113730.4.1"),
}


def _sans(req: x509.CertificateSigningRequest) -> x509.SubjectAlternativeName | None:
    try:
        return req.extensions.get_extension_for_class(x509.SubjectAlternativeName).value
    except x509.ExtensionNotFound:
        return None


def _san_counts(req: x509.CertificateSigningRequest) -> dict[str, int]:
    san = _sans(req)
    if san is None:
        return {"dns": 0, "ip": 0, "email": 0, "uri": 0}
    return {"dns": len(san.get_values_for_type(x509.DNSName)), "ip": len(san.get_values_for_type(x509.IPAddress)),
            "email": len(san.get_values_for_type(x509.RFC822Name)),
            "uri": len(san.get_values_for_type(x509.UniformResourceIdentifier))}


def subject_common_name(req: x509.CertificateSigningRequest) -> str:
    cns = req.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    return str(cns[0].value) if cns else ""


def _subject(req: x509.CertificateSigningRequest) -> tuple[list[str], str]:
    orgs = [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
    return orgs, subject_common_name(req)


def _go_list(items: set[str]) -> str:
    return "[" + " ".join(sorted(items)) + "]"


def signer_validation_error(signer: str, req: x509.CertificateSigningRequest, usages: list[str]) -> str | None:
    """Why the signer refuses this request (upstream's messages), or None."""
    used = set(usages)
    orgs, cn = _subject(req)
    if signer == KUBE_APISERVER_CLIENT:
        for u in usages:
            if u not in ("digital signature", "key encipherment", "client auth"):
                return f"invalid usage for client certificate: {u}"
        if "client auth" not in used:
            return "missing required usage for client certificate: client auth"
        return None
    sans = _san_counts(req)
    if signer == KUBELET_SERVING:
        if orgs != ["system:nodes"]:
            return "subject organization is not system:nodes"
        if not sans["dns"] and not sans["ip"]:
            return "DNS or IP subjectAltName is required"
        if sans["email"]:
            return "Email subjectAltNames are not allowed"
        if sans["uri"]:
            return "URI subjectAltNames are not allowed"
        if used not in _KUBELET_SERVING_USAGES:
            return f"usages did not match {_go_list(_KUBELET_SERVING_USAGES[0])}"
        if not cn.startswith("system:node:"):
            return "subject common name does not begin with system:node:"
        return None
    if signer == KUBELET_CLIENT:
        if orgs != ["system:nodes"]:
            return "subject organization is not system:nodes"
        for kind, what in (("dns", "DNS"), ("email", "Email"), ("ip", "IP"), ("uri", "URI")):
            if sans[kind]:
                return f"{what} subjectAltNames are not allowed"
        if not cn.startswith("system:node:"):
            return "subject common name does not begin with system:node:"
        if used not in _KUBELET_CLIENT_USAGES:
            return f"usages did not match {_go_list(_KUBELET_CLIENT_USAGES[0])}"
        return None
    return f'unrecognized signerName: "{signer}"'


def certificate_duration(expiration_seconds: Any, max_duration: float) -> float:
    """The requested lifetime, at least 10 minutes, at most the signer's."""
    if not isinstance(expiration_seconds, int) or isinstance(expiration_seconds, bool):
        return max_duration
    return min(max(float(expiration_seconds), MIN_DURATION), max_duration)


def sign_csr(ca_cert: x509.Certificate, ca_key: Any, req: x509.CertificateSigningRequest, usages: list[str],
             ttl: float, now: dt.datetime) -> bytes:
    """A leaf certificate for req, as upstream's PermissiveSigningPolicy: subject and SANs from the
    request, its extensions dropped, the usages asked for, not a CA, 5 minutes backdated."""
    not_before = now - dt.timedelta(seconds=BACKDATE)
    not_after = now + dt.timedelta(seconds=ttl if ttl < SHORT else ttl - BACKDATE)
    ca_end = ca_cert.not_valid_after_utc
    if not_after >= ca_end:
        not_after = ca_end
    if now >= ca_end:
        raise ValueError(f"refusing to sign a certificate that expired in the past: NotAfter={ca_end}")
    flags = {v: False for v in set(_KEY_USAGES.values())}
    ext: list[x509.ObjectIdentifier] = []
    for u in usages:
        if u in _KEY_USAGES:
            flags[_KEY_USAGES[u]] = True
        elif u in _EXT_KEY_USAGES:
            if _EXT_KEY_USAGES[u] not in ext:
                ext.append(_EXT_KEY_USAGES[u])
        else:
            raise ValueError(f'unrecognized usage values: "{u}"')
    b = (x509.CertificateBuilder().subject_name(req.subject).issuer_name(ca_cert.subject)
         .public_key(req.public_key()).serial_number(secrets.randbits(127) | 1)
         .not_valid_before(not_before).not_valid_after(not_after))
    san = _sans(req)
    if san is not None:
        b = b.add_extension(san, critical=False)
    if any(flags.values()):
        b = b.add_extension(x509.KeyUsage(**flags), critical=True)
    if ext:
        b = b.add_extension(x509.ExtendedKeyUsage(sorted(ext, key=lambda o: o.dotted_string)), critical=False)
    b = b.add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
    try:
        ski = ca_cert.extensions.get_extension_for_class(x509.SubjectKeyIdentifier).value
        b = b.add_extension(x509.AuthorityKeyIdentifier.from_issuer_subject_key_identifier(ski), critical=False)
    except x509.ExtensionNotFound:
        pass
    algorithm = None if isinstance(ca_key, (ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)) else hashes.SHA256()
    cert = b.sign(ca_key, algorithm)
    return cert.public_bytes(serialization.Encoding.PEM)


def load_signing_ca(cert_file: str, key_file: str) -> tuple[x509.Certificate, Any]:
    """The CA certificate and key the signers use; OSError or ValueError naming the file."""
    try:
        with open(cert_file, "rb") as f:
            cert = x509.load_pem_x509_certificate(f.read())
    except ValueError as e:
        raise ValueError(f"error reading CA cert file {cert_file!r}: {e}") from None
    try:
        with open(key_file, "rb") as f:
            key = serialization.load_pem_private_key(f.read(), None)
    except (ValueError, TypeError) as e:
        raise ValueError(f"error reading CA key file {key_file!r}: {e}") from None
    return cert, key


def _approved(csr: dict[str, Any]) -> bool:
    approved = denied = failed = False
    for c in (csr.get("status") or {}).get("conditions") or []:
        t = c.get("type")
        approved |= t == "Approved"
        denied |= t == "Denied"
        failed |= t == "Failed" and c.get("status") == "True"
    return approved and not denied and not failed


def _now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class CSRSigningController(Controller):
    name = "csrsigning"
    component = "csrsigning-controller"

    def setup(self) -> None:
        opts = self.ctx.options
        self.ca_cert: x509.Certificate | None = None
        self.ca_key: Any = None
        self.max_duration = float(opts.get("cluster_signing_duration") or DEFAULT_SIGNING_DURATION)
        cert_file, key_file = opts.get("cluster_signing_cert_file"), opts.get("cluster_signing_key_file")
        if not cert_file or not key_file:
            log.info("csrsigning: no --cluster-signing-cert-file/--cluster-signing-key-file: not signing")
            return
        try:
            self.ca_cert, self.ca_key = load_signing_ca(cert_file, key_file)
        except (OSError, ValueError) as e:
            log.error("csrsigning: not signing: %s", e)
            return
        self.csrs = self.ctx.informer("certificatesigningrequests")
        self.csrs.add_handlers(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))

    async def sync(self, key: str) -> None:
        if self.ca_cert is None:
            return
        csr = self.csrs.get(key)
        if csr is None:
            return
        spec = csr.get("spec") or {}
        if (csr.get("status") or {}).get("certificate") or not _approved(csr) or spec.get("signerName") not in SIGNERS:
            return
        try:
            req = x509.load_pem_x509_csr(base64.b64decode(spec.get("request") or "", validate=True))
        except (binascii.Error, ValueError) as e:
            raise ValueError(f"unable to parse csr {key!r}: {e}") from None
        usages = list(spec.get("usages") or [])
        status = dict(csr.get("status") or {})
        problem = signer_validation_error(spec["signerName"], req, usages)
        if problem is not None:
            status["conditions"] = list(status.get("conditions") or []) + [{
                "type": "Failed", "status": "True", "reason": "SignerValidationFailure", "message": problem,
                "lastUpdateTime": _now_rfc3339()}]
        else:
            ttl = certificate_duration(spec.get("expirationSeconds"), self.max_duration)
            pem = sign_csr(self.ca_cert, self.ca_key, req, usages, ttl, dt.datetime.now(dt.UTC))
            status["certificate"] = base64.b64encode(pem).decode()
        try:
            await self.client.update_status(GVRS["certificatesigningrequests"], {**csr, "status": status})
        except StatusError as e:
            if e.code != 404:  # a conflict re-queues; the informer brings the newer object
                raise
