"""Request authentication as kube-apiserver does it.

Authenticators (each returns a `UserInfo`, None for "not my credential", or raises
`AuthenticationError` for a credential it owns but rejects):

* `X509Authenticator`        client certs verified by the cluster CA: CN -> user, O -> groups
* `TokenFileAuthenticator`   static `--token-auth-file` CSV: token,user,uid,"group1,group2"
* `ServiceAccountTokenAuthenticator`  RS256/ES256 JWTs as TokenRequest issues them

`Authenticator` chains them with upstream's union semantics: x509 first, then the bearer
token against every token authenticator; the first success wins, "system:authenticated" is
appended; if every authenticator failed with an error the request gets 401 "Unauthorized"
(never anonymous: a bad credential is not "no credential"). With no credential at all the
result is None, or `system:anonymous` in `system:unauthenticated` when anonymous is enabled.

`issue_service_account_token` is the matching signer (the TokenRequest subresource uses it).
"""

from __future__ import annotations

import base64
import binascii
import csv
import datetime as dt
import hashlib
import io
import json
import os
import time
import uuid
import warnings
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from cryptography import x509
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, padding, rsa
from cryptography.hazmat.primitives.asymmetric.utils import decode_dss_signature, encode_dss_signature
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

from pyk8s.api.errors import new_unauthorized

__all__ = [
    "UserInfo",
    "AuthenticationError",
    "Authenticator",
    "X509Authenticator",
    "TokenFileAuthenticator",
    "ServiceAccountTokenAuthenticator",
    "ServiceAccountGetter",
    "issue_service_account_token",
    "parse_token_file",
    "anonymous_user",
    "bearer_token_from_headers",
    "key_id",
    "jwks",
    "openid_configuration",
    "service_account_username",
    "DEFAULT_ISSUER",
    "ANONYMOUS",
    "ALL_AUTHENTICATED",
    "ALL_UNAUTHENTICATED",
    "SYSTEM_PRIVILEGED_GROUP",
    "NODES_GROUP",
    "SERVICE_ACCOUNTS_GROUP",
    "CREDENTIAL_ID_KEY",
    "POD_NAME_KEY",
    "POD_UID_KEY",
    "NODE_NAME_KEY",
    "NODE_UID_KEY",
]

# Well-known names (k8s.io/apiserver/pkg/authentication/user and .../serviceaccount).
# Long CNs (system:node:<253-char name>) are legal for Go but trip cryptography's X.520 length
# warning on every parse; the warning is noise for us.
warnings.filterwarnings("ignore", message="Attribute's length must be", category=UserWarning)

ANONYMOUS = "system:anonymous"
ALL_AUTHENTICATED = "system:authenticated"
ALL_UNAUTHENTICATED = "system:unauthenticated"
SYSTEM_PRIVILEGED_GROUP = "system:masters"
NODES_GROUP = "system:nodes"
SERVICE_ACCOUNTS_GROUP = "system:serviceaccounts"
SERVICE_ACCOUNT_USERNAME_PREFIX = "system:serviceaccount:"

CREDENTIAL_ID_KEY = "authentication.kubernetes.io/credential-id"
POD_NAME_KEY = "authentication.kubernetes.io/pod-name"
POD_UID_KEY = "authentication.kubernetes.io/pod-uid"
NODE_NAME_KEY = "authentication.kubernetes.io/node-name"
STALE_TOKEN_ANNOTATION = "authentication.k8s.io/stale-token"  # audit annotation for a token past its warnafter
NODE_UID_KEY = "authentication.kubernetes.io/node-uid"

DEFAULT_ISSUER = "https://kubernetes.default.svc.cluster.local"
# go-jose's DefaultLeeway, which upstream's claim validation uses for exp/nbf/iat.
JWT_LEEWAY = 60.0
WEBSOCKET_BEARER_PREFIX = "base64url.bearer.authorization.k8s.io."

PublicKey = rsa.RSAPublicKey | ec.EllipticCurvePublicKey
SigningKey = rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey


@dataclass
class UserInfo:
    """An authenticated (or anonymous) identity, as upstream's user.Info."""

    name: str
    uid: str = ""
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)

    def to_wire(self) -> dict[str, Any]:
        """authentication.k8s.io/v1 UserInfo (TokenReview/SelfSubjectReview status.userInfo)."""
        d: dict[str, Any] = {"username": self.name}
        if self.uid:
            d["uid"] = self.uid
        if self.groups:
            d["groups"] = list(self.groups)
        if self.extra:
            d["extra"] = {k: list(v) for k, v in self.extra.items()}
        return d


class AuthenticationError(Exception):
    """A credential that an authenticator recognised but rejected."""


def anonymous_user() -> UserInfo:
    return UserInfo(ANONYMOUS, groups=[ALL_UNAUTHENTICATED])


def service_account_username(namespace: str, name: str) -> str:
    return f"{SERVICE_ACCOUNT_USERNAME_PREFIX}{namespace}:{name}"


def _aggregate(errors: Sequence[BaseException]) -> str:
    """Upstream's utilerrors.NewAggregate(...).Error(): one message, or "[a, b]" de-duplicated."""
    msgs: list[str] = []
    for e in errors:
        m = str(e)
        if m not in msgs:
            msgs.append(m)
    if len(msgs) == 1:
        return msgs[0]
    return "[" + ", ".join(msgs) + "]"


# --------------------------------------------------------------------------- x509


class X509Authenticator:
    """Client certificates: verified against the CA bundle, CN -> user, O -> groups."""

    def __init__(
        self, ca_certs: x509.Certificate | Iterable[x509.Certificate], clock: Callable[[], float] = time.time
    ):
        self.ca_certs = [ca_certs] if isinstance(ca_certs, x509.Certificate) else list(ca_certs)
        self._clock = clock

    def _verify(self, cert: x509.Certificate) -> None:
        now = dt.datetime.fromtimestamp(self._clock(), dt.UTC)
        serial = format(cert.serial_number, "d")
        if now < cert.not_valid_before_utc:
            raise AuthenticationError(
                f"verifying certificate SN={serial} failed: x509: certificate has expired or is not yet valid"
            )
        if now > cert.not_valid_after_utc:
            raise AuthenticationError(
                f"verifying certificate SN={serial} failed: x509: certificate has expired or is not yet valid"
            )
        try:
            eku = cert.extensions.get_extension_for_class(x509.ExtendedKeyUsage).value
        except x509.ExtensionNotFound:
            eku = None  # no EKU extension means any usage, as in Go's verifier
        if (
            eku is not None
            and ExtendedKeyUsageOID.CLIENT_AUTH not in eku
            and ExtendedKeyUsageOID.ANY_EXTENDED_KEY_USAGE not in eku
        ):
            raise AuthenticationError(
                f"verifying certificate SN={serial} failed: x509: certificate specifies an incompatible key usage"
            )
        for ca in self.ca_certs:
            try:
                cert.verify_directly_issued_by(ca)
            except (ValueError, TypeError, InvalidSignature):
                continue
            # the TLS handshake leaves every validity period to this check (certs.ssl_server_context)
            if not ca.not_valid_before_utc <= now <= ca.not_valid_after_utc:
                raise AuthenticationError(
                    f"verifying certificate SN={serial} failed: x509: certificate has expired or is not yet valid"
                )
            return
        raise AuthenticationError(
            f"verifying certificate SN={serial} failed: x509: certificate signed by unknown authority"
        )

    def authenticate(self, peercert_der: bytes) -> UserInfo | None:
        try:
            cert = x509.load_der_x509_certificate(peercert_der)
        except ValueError as e:
            raise AuthenticationError(f"x509: malformed certificate: {e}") from e
        self._verify(cert)
        cns = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
        cn = str(cns[0].value) if cns else ""
        if not cn:
            return None  # upstream: no CommonName -> no opinion
        orgs = [str(a.value) for a in cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]
        fp = hashlib.sha256(peercert_der).hexdigest()
        return UserInfo(cn, groups=orgs, extra={CREDENTIAL_ID_KEY: [f"X509SHA256={fp}"]})


# --------------------------------------------------------------------------- static token file


def parse_token_file(text: str, path: str = "") -> dict[str, UserInfo]:
    """Parse upstream's token CSV: token,user,uid[,"group1,group2"]; extra columns ignored."""
    tokens: dict[str, UserInfo] = {}
    for record in csv.reader(io.StringIO(text)):
        if not record:
            continue  # blank line (Go's csv reader skips these too)
        if len(record) < 3:
            raise ValueError(
                f"token file '{path}' must have at least 3 columns (token, user name, user uid), found {len(record)}"
            )
        token = record[0]
        if not token:
            continue  # upstream logs "empty token has been found" and skips the record
        info = UserInfo(record[1], uid=record[2])
        if len(record) >= 4:
            # Go splits "" into [""]; an empty group name can never match a binding, so drop it.
            info.groups = [g for g in record[3].split(",") if g]
        tokens[token] = info  # duplicates: last one wins, as upstream's map assignment
    return tokens


class TokenFileAuthenticator:
    """Static bearer tokens from a `--token-auth-file`."""

    def __init__(self, tokens: Mapping[str, UserInfo]):
        self.tokens = dict(tokens)

    @classmethod
    def from_file(cls, path: str | os.PathLike[str]) -> TokenFileAuthenticator:
        with open(path, encoding="utf-8", newline="") as f:
            return cls(parse_token_file(f.read(), str(path)))

    def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> UserInfo | None:
        info = self.tokens.get(token)
        if info is None:
            return None
        return UserInfo(info.name, info.uid, list(info.groups), {k: list(v) for k, v in info.extra.items()})


# --------------------------------------------------------------------------- JWT helpers


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _b64url_decode(s: str) -> bytes:
    if any(c in s for c in "=+/ \n"):
        raise ValueError("not raw base64url")
    return base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))


def key_id(public_key: PublicKey) -> str:
    """Upstream's keyIDFromPublicKey: base64url(sha256(DER SubjectPublicKeyInfo)), unpadded."""
    der = public_key.public_bytes(serialization.Encoding.DER, serialization.PublicFormat.SubjectPublicKeyInfo)
    return _b64url(hashlib.sha256(der).digest())


def _alg_for(key: SigningKey | PublicKey) -> str:
    if isinstance(key, (rsa.RSAPrivateKey, rsa.RSAPublicKey)):
        return "RS256"
    if isinstance(key, (ec.EllipticCurvePrivateKey, ec.EllipticCurvePublicKey)):
        curve = key.curve.name
        if curve == "secp256r1":
            return "ES256"
        if curve == "secp384r1":
            return "ES384"
        if curve == "secp521r1":
            return "ES512"
    raise ValueError(f"unsupported service account signing key type {type(key).__name__}")


_HASHES: dict[str, Callable[[], hashes.HashAlgorithm]] = {
    "256": hashes.SHA256,
    "384": hashes.SHA384,
    "512": hashes.SHA512,
}
_EC_SIZES = {"ES256": 32, "ES384": 48, "ES512": 66}


def _sign(key: SigningKey, alg: str, data: bytes) -> bytes:
    h = _HASHES[alg[2:]]()
    if isinstance(key, rsa.RSAPrivateKey):
        return key.sign(data, padding.PKCS1v15(), h)
    r, s = decode_dss_signature(key.sign(data, ec.ECDSA(h)))
    n = _EC_SIZES[alg]
    return r.to_bytes(n, "big") + s.to_bytes(n, "big")  # JWS uses raw r||s, not DER


def _verify(key: PublicKey, alg: str, data: bytes, sig: bytes) -> bool:
    try:
        if _alg_for(key) != alg:
            return False
        h = _HASHES[alg[2:]]()
        if isinstance(key, rsa.RSAPublicKey):
            key.verify(sig, data, padding.PKCS1v15(), h)
        else:
            n = _EC_SIZES[alg]
            if len(sig) != 2 * n:
                return False
            der = encode_dss_signature(int.from_bytes(sig[:n], "big"), int.from_bytes(sig[n:], "big"))
            key.verify(der, data, ec.ECDSA(h))
    except (InvalidSignature, ValueError, KeyError):
        return False
    return True


def jwks(public_keys: Iterable[PublicKey]) -> dict[str, Any]:
    """The JSON Web Key Set served at /openid/v1/jwks."""
    keys = []
    for k in public_keys:
        entry: dict[str, Any] = {"use": "sig", "kid": key_id(k), "alg": _alg_for(k)}
        if isinstance(k, rsa.RSAPublicKey):
            nums = k.public_numbers()
            entry.update(
                kty="RSA",
                n=_b64url(nums.n.to_bytes((nums.n.bit_length() + 7) // 8, "big")),
                e=_b64url(nums.e.to_bytes((nums.e.bit_length() + 7) // 8, "big")),
            )
        else:
            nums_ec = k.public_numbers()
            size = _EC_SIZES[entry["alg"]]
            entry.update(
                kty="EC",
                crv={"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}[entry["alg"]],
                x=_b64url(nums_ec.x.to_bytes(size, "big")),
                y=_b64url(nums_ec.y.to_bytes(size, "big")),
            )
        keys.append(entry)
    return {"keys": keys}


def openid_configuration(issuer: str, jwks_uri: str, public_keys: Iterable[PublicKey] = ()) -> dict[str, Any]:
    """The document served at /.well-known/openid-configuration."""
    algs = sorted({_alg_for(k) for k in public_keys}) or ["RS256"]
    return {
        "issuer": issuer,
        "jwks_uri": jwks_uri,
        "response_types_supported": ["id_token"],
        "subject_types_supported": ["public"],
        "id_token_signing_alg_values_supported": algs,
    }


def _ref(obj: Mapping[str, Any] | None) -> dict[str, str] | None:
    """{name, uid} from a wire object (metadata.name/uid) or an already-flat {name, uid}."""
    if obj is None:
        return None
    meta = obj.get("metadata", obj)
    ref = {"name": str(meta.get("name") or ""), "uid": str(meta.get("uid") or "")}
    return {k: v for k, v in ref.items() if v}


# --------------------------------------------------------------------------- service account tokens


def issue_service_account_token(
    key: SigningKey,
    namespace: str,
    sa_name: str,
    sa_uid: str,
    audiences: Sequence[str],
    expiration_seconds: int,
    bound_pod: Mapping[str, Any] | None = None,
    *,
    bound_secret: Mapping[str, Any] | None = None,
    bound_node: Mapping[str, Any] | None = None,
    issuer: str = DEFAULT_ISSUER,
    warn_after_seconds: int | None = None,
    now: float | None = None,
) -> tuple[str, int]:
    """Sign a bound service-account token as TokenRequest does; returns (jwt, exp unix seconds).

    bound_pod/bound_secret/bound_node are wire objects (or {"name","uid"}); a pod-bound token
    also carries the pod's node when `bound_node` is given (ServiceAccountTokenPodNodeInfo).
    """
    iat = int(now if now is not None else time.time())
    exp = iat + int(expiration_seconds)
    k8s: dict[str, Any] = {"namespace": namespace, "serviceaccount": {"name": sa_name, "uid": sa_uid}}
    if bound_pod is not None:
        k8s["pod"] = _ref(bound_pod)
    elif bound_secret is not None:
        k8s["secret"] = _ref(bound_secret)
    if bound_node is not None:
        k8s["node"] = _ref(bound_node)
    if warn_after_seconds:
        k8s["warnafter"] = iat + int(warn_after_seconds)
    claims = {
        "aud": list(audiences),
        "exp": exp,
        "iat": iat,
        "iss": issuer,
        "jti": str(uuid.uuid4()),
        "kubernetes.io": k8s,
        "nbf": iat,
        "sub": service_account_username(namespace, sa_name),
    }
    alg = _alg_for(key)
    header = {"alg": alg, "kid": key_id(key.public_key())}
    signing_input = (
        _b64url(json.dumps(header, separators=(",", ":")).encode())
        + "."
        + _b64url(json.dumps(claims, separators=(",", ":"), sort_keys=True).encode())
    )
    sig = _sign(key, alg, signing_input.encode("ascii"))
    return signing_input + "." + _b64url(sig), exp


class ServiceAccountGetter(Protocol):
    """Live lookups that keep bound tokens honest (each returns a wire object or None)."""

    def get_service_account(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_pod(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_secret(self, namespace: str, name: str) -> Mapping[str, Any] | None: ...
    def get_node(self, name: str) -> Mapping[str, Any] | None: ...


def _parse_ts(v: Any) -> float | None:
    if not v:
        return None
    try:
        return dt.datetime.fromisoformat(str(v).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class ServiceAccountTokenAuthenticator:
    """Verifies service-account JWTs signed by any of `public_keys`.

    Tokens whose (unverified) `iss` is not one of `issuers` are not ours (None). `audiences` are
    the API server's implicit audiences (--api-audiences, defaulting to the issuers); a token must
    share at least one. With a `getter`, the service account (and bound pod/secret/node) must still
    exist with the same UID, as upstream's validator checks.
    """

    def __init__(
        self,
        public_keys: PublicKey | Iterable[PublicKey],
        issuers: Sequence[str] = (DEFAULT_ISSUER,),
        audiences: Sequence[str] | None = None,
        getter: ServiceAccountGetter | None = None,
        clock: Callable[[], float] = time.time,
        leeway: float = JWT_LEEWAY,
    ):
        if isinstance(public_keys, (rsa.RSAPublicKey, ec.EllipticCurvePublicKey)):
            public_keys = [public_keys]
        self.public_keys = list(public_keys)
        self._kids = {id(k): key_id(k) for k in self.public_keys}
        self.issuers = list(issuers)
        self.audiences = list(audiences) if audiences is not None else list(issuers)
        self.getter = getter
        self._clock = clock
        self.leeway = leeway

    def _issuer_matches(self, token: str) -> bool:
        parts = token.split(".")
        if len(parts) != 3:
            return False
        try:
            payload = json.loads(_b64url_decode(parts[1]))
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return False
        return isinstance(payload, dict) and payload.get("iss") in self.issuers

    def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> UserInfo | None:
        if not self._issuer_matches(token):
            return None
        h64, p64, s64 = token.split(".")
        try:
            header = json.loads(_b64url_decode(h64))
            claims = json.loads(_b64url_decode(p64))
            sig = _b64url_decode(s64)
        except (ValueError, binascii.Error, UnicodeDecodeError) as e:
            raise AuthenticationError(f"invalid token format: {e}") from e
        if not isinstance(header, dict) or not isinstance(claims, dict):
            raise AuthenticationError("square/go-jose: error in cryptographic primitive")
        alg = header.get("alg")
        signing_input = f"{h64}.{p64}".encode("ascii")
        kid = header.get("kid")
        # try the key the header names first, then the rest (upstream tries every key)
        keys = sorted(self.public_keys, key=lambda k: self._kids[id(k)] != kid)
        if not isinstance(alg, str) or not any(_verify(k, alg, signing_input, sig) for k in keys):
            raise AuthenticationError("square/go-jose: error in cryptographic primitive")

        token_auds = claims.get("aud")
        if isinstance(token_auds, str):
            token_auds = [token_auds]
        if not isinstance(token_auds, list):
            token_auds = []
        if not token_auds:
            token_auds = list(self.audiences)  # legacy tokens carry no audience
        requested = list(audiences) if audiences else list(self.audiences)
        if not set(token_auds) & set(requested) and self.audiences:
            raise AuthenticationError(
                f"token audiences {_go_quote_list(token_auds)} is invalid for the target audiences {_go_quote_list(requested)}"
            )
        return self._validate(claims)

    def _validate(self, claims: Mapping[str, Any]) -> UserInfo:
        now = self._clock()
        try:
            exp, nbf, iat = (
                None if claims.get(c) is None else float(claims[c]) for c in ("exp", "nbf", "iat")
            )
        except (TypeError, ValueError) as e:
            raise AuthenticationError(
                "service account token claims could not be validated due to unexpected validation error"
            ) from e
        if exp is not None and now - self.leeway > exp:
            raise AuthenticationError("service account token has expired")
        if nbf is not None and now + self.leeway < nbf:
            raise AuthenticationError("service account token is not valid yet")
        if iat is not None and now + self.leeway < iat:
            raise AuthenticationError(
                "service account token claims could not be validated due to unexpected validation error"
            )
        k8s = claims.get("kubernetes.io")
        if not isinstance(k8s, dict):
            raise AuthenticationError(
                "service account token claims could not be validated due to unexpected private claim"
            )
        ns = str(k8s.get("namespace") or "")
        sa_claim = k8s.get("serviceaccount")
        sa: dict[str, Any] = sa_claim if isinstance(sa_claim, dict) else {}
        sa_name, sa_uid = str(sa.get("name") or ""), str(sa.get("uid") or "")
        if not ns or not sa_name:
            raise AuthenticationError(
                "service account token claims could not be validated due to unexpected private claim"
            )
        pod = k8s.get("pod") if isinstance(k8s.get("pod"), dict) else None
        secret = k8s.get("secret") if isinstance(k8s.get("secret"), dict) else None
        node = k8s.get("node") if isinstance(k8s.get("node"), dict) else None
        if self.getter is not None:
            self._check_live(now, ns, sa_name, sa_uid, pod, secret, node)

        extra: dict[str, list[str]] = {}
        if pod and pod.get("name") and pod.get("uid"):
            extra[POD_NAME_KEY] = [str(pod["name"])]
            extra[POD_UID_KEY] = [str(pod["uid"])]
        if node and node.get("name"):
            extra[NODE_NAME_KEY] = [str(node["name"])]
            if node.get("uid"):
                extra[NODE_UID_KEY] = [str(node["uid"])]
        jti = claims.get("jti")
        if isinstance(jti, str) and jti:
            extra[CREDENTIAL_ID_KEY] = [f"JTI={jti}"]
        warn_after = k8s.get("warnafter")
        if isinstance(warn_after, (int, float)) and warn_after and now > warn_after:
            # an extended kube-api-access token used past its requested lifetime: a client that never
            # re-reads the token file, which upstream flags in the audit log (token_request.py)
            from .audit.filter import add_annotation  # the audit filter imports this module

            add_annotation(STALE_TOKEN_ANNOTATION, f"subject: {claims.get('sub', '')}, seconds after warning "
                                                   f"threshold: {int(now - warn_after)}")
        return UserInfo(
            service_account_username(ns, sa_name),
            uid=sa_uid,
            groups=[SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{ns}"],
            extra=extra,
        )

    def _check_live(
        self,
        now: float,
        ns: str,
        sa_name: str,
        sa_uid: str,
        pod: Mapping[str, Any] | None,
        secret: Mapping[str, Any] | None,
        node: Mapping[str, Any] | None,
    ) -> None:
        assert self.getter is not None
        cutoff = now - self.leeway  # things deleted before now-leeway invalidate their tokens

        def deleted(obj: Mapping[str, Any]) -> bool:
            ts = _parse_ts((obj.get("metadata") or {}).get("deletionTimestamp"))
            return ts is not None and ts < cutoff

        def uid(obj: Mapping[str, Any]) -> str:
            return str((obj.get("metadata") or {}).get("uid") or "")

        sa_obj = self.getter.get_service_account(ns, sa_name)
        if sa_obj is None:
            raise AuthenticationError(f'serviceaccounts "{sa_name}" not found')
        if deleted(sa_obj):
            raise AuthenticationError(f"service account {ns}/{sa_name} has been deleted")
        if uid(sa_obj) != sa_uid:
            raise AuthenticationError(f"service account UID ({uid(sa_obj)}) does not match claim ({sa_uid})")
        if secret is not None:
            s = self.getter.get_secret(ns, str(secret.get("name") or ""))
            if s is None or deleted(s):
                raise AuthenticationError("service account token has been invalidated")
            if uid(s) != str(secret.get("uid") or ""):
                raise AuthenticationError(
                    f"secret UID ({uid(s)}) does not match service account secret ref claim ({secret.get('uid', '')})"
                )
        if pod is not None:
            p = self.getter.get_pod(ns, str(pod.get("name") or ""))
            if p is None or deleted(p):
                raise AuthenticationError("service account token has been invalidated")
            if uid(p) != str(pod.get("uid") or ""):
                raise AuthenticationError(
                    f"pod UID ({uid(p)}) does not match service account pod ref claim ({pod.get('uid', '')})"
                )
        elif node is not None:
            # node-bound (not pod-bound) tokens are validated against the live Node
            n = self.getter.get_node(str(node.get("name") or ""))
            if n is None or deleted(n):
                raise AuthenticationError("service account token has been invalidated")
            if uid(n) != str(node.get("uid") or ""):
                raise AuthenticationError(
                    f"node UID ({uid(n)}) does not match service account node ref claim ({node.get('uid', '')})"
                )


def _go_quote_list(items: Sequence[str]) -> str:
    """Go's %q of a []string: ["a" "b"]."""
    return "[" + " ".join(json.dumps(i) for i in items) + "]"


# --------------------------------------------------------------------------- the chain


class TokenAuthenticatorLike(Protocol):
    def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> UserInfo | None: ...


def _header(headers: Mapping[str, str], name: str) -> str | None:
    v = headers.get(name)
    if v is not None:
        return v
    lname = name.lower()
    for k, val in headers.items():
        if k.lower() == lname:
            return val
    return None


def bearer_token_from_headers(headers: Mapping[str, str]) -> str | None:
    """The bearer token of a request, or None when it carries none.

    `Authorization: Bearer <t>` (scheme case-insensitive), or for WebSocket upgrades the
    `base64url.bearer.authorization.k8s.io.<t>` subprotocol, as upstream accepts.
    """
    auth = (_header(headers, "Authorization") or "").strip()
    if auth:
        parts = auth.split(" ", 2)
        if len(parts) >= 2 and parts[0].lower() == "bearer" and parts[1]:
            return parts[1]
        return None
    upgrade = (_header(headers, "Upgrade") or "").lower()
    connection = (_header(headers, "Connection") or "").lower()
    if upgrade == "websocket" and "upgrade" in connection:
        for proto in (_header(headers, "Sec-WebSocket-Protocol") or "").split(","):
            proto = proto.strip()
            if proto.startswith(WEBSOCKET_BEARER_PREFIX):
                try:
                    tok = _b64url_decode(proto[len(WEBSOCKET_BEARER_PREFIX) :]).decode("utf-8")
                except (ValueError, binascii.Error, UnicodeDecodeError):
                    return None
                return tok or None
    return None


def _with_authenticated_group(u: UserInfo) -> UserInfo:
    """Upstream's AuthenticatedGroupAdder."""
    if u.name == ANONYMOUS or ALL_AUTHENTICATED in u.groups or ALL_UNAUTHENTICATED in u.groups:
        return u
    return UserInfo(u.name, u.uid, [*u.groups, ALL_AUTHENTICATED], u.extra)


class Authenticator:
    """The request authentication chain."""

    def __init__(
        self,
        x509_auth: X509Authenticator | None = None,
        token_authenticators: Sequence[TokenAuthenticatorLike] = (),
        anonymous: bool = False,
    ):
        self.x509 = x509_auth
        self.token_authenticators = list(token_authenticators)
        self.anonymous = anonymous

    @classmethod
    def for_pki(
        cls,
        pki: Any,
        token_auth_file: str | os.PathLike[str] | None = None,
        issuers: Sequence[str] = (DEFAULT_ISSUER,),
        api_audiences: Sequence[str] | None = None,
        sa_getter: ServiceAccountGetter | None = None,
        anonymous: bool = False,
    ) -> Authenticator:
        """The usual kube-apiserver set-up over a `certs.Pki`."""
        tokens: list[TokenAuthenticatorLike] = []
        if token_auth_file:
            tokens.append(TokenFileAuthenticator.from_file(token_auth_file))
        tokens.append(ServiceAccountTokenAuthenticator(pki.sa_public_key, issuers, api_audiences, sa_getter))
        return cls(X509Authenticator(pki.ca_cert), tokens, anonymous)

    def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> UserInfo:
        """Authenticate a bare token (TokenReview); raises AuthenticationError with upstream's text."""
        errors: list[BaseException] = []
        for a in self.token_authenticators:
            try:
                u = a.authenticate_token(token, audiences)
            except AuthenticationError as e:
                errors.append(e)
                continue
            if u is not None:
                return _with_authenticated_group(u)
        if not errors:
            raise AuthenticationError("invalid bearer token")
        raise AuthenticationError(_aggregate(errors))

    def authenticate_details(
        self, headers: Mapping[str, str], peercert_der: bytes | None = None
    ) -> tuple[UserInfo | None, list[str]]:
        """Like `authenticate` but returns (user, error messages) instead of raising."""
        errors: list[str] = []
        if peercert_der and self.x509 is not None:
            try:
                u = self.x509.authenticate(peercert_der)
                if u is not None:
                    return _with_authenticated_group(u), []
            except AuthenticationError as e:
                errors.append(str(e))
        if self.token_authenticators:
            token = bearer_token_from_headers(headers)
            if token is not None:
                try:
                    return self.authenticate_token(token), []
                except AuthenticationError as e:
                    errors.append(str(e))
        if errors:
            return None, errors
        return (anonymous_user() if self.anonymous else None), []

    def authenticate(self, headers: Mapping[str, str], peercert_der: bytes | None = None) -> UserInfo | None:
        """The request's user; None without credentials (unless anonymous is enabled, then
        system:anonymous); StatusError 401 "Unauthorized" when credentials were presented but
        none was accepted."""
        user, errors = self.authenticate_details(headers, peercert_der)
        if errors:
            raise new_unauthorized()
        return user
