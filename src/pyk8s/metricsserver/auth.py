"""The metrics server's delegated authentication and authorization, as a generic aggregated API server's.

Who (upstream's DelegatingAuthenticationOptions, configured from
kube-system/extension-apiserver-authentication):
- a client certificate signed by `requestheader-client-ca-file` whose CN is in
  `requestheader-allowed-names`: the front proxy; the user is what its
  `requestheader-*-headers` say. Those headers mean nothing on any other connection;
- a client certificate signed by `client-ca-file`: CN the user, O the groups;
- a bearer token: whatever a TokenReview says;
- nothing: system:anonymous.
What (DelegatingAuthorizationOptions): a SubjectAccessReview per request, decisions cached
10 s, system:masters always allowed and /healthz, /livez, /readyz open, as upstream's defaults.
"""

from __future__ import annotations

import json
import logging
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID

from ..api import errors as E

__all__ = ["RequestHeaderConfig", "DelegatedAuth", "ALWAYS_ALLOW_PATHS", "UserInfo", "Attributes"]

log = logging.getLogger("pyk8s.metrics-server")

TOKENREVIEWS = ("authentication.k8s.io", "v1", "tokenreviews")
SARS = ("authorization.k8s.io", "v1", "subjectaccessreviews")
CONFIGMAP = ("kube-system", "extension-apiserver-authentication")
ALWAYS_ALLOW_PATHS = frozenset(("/healthz", "/livez", "/readyz"))
ALWAYS_ALLOW_GROUPS = frozenset(("system:masters",))
CACHE_TTL = 10.0
CACHE_MAX = 4096


@dataclass
class UserInfo:
    name: str
    uid: str = ""
    groups: list[str] = field(default_factory=list)
    extra: dict[str, list[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Attributes:
    """What a request asks, for the SubjectAccessReview: a resource (metrics.k8s.io) or a path."""

    verb: str
    path: str = ""
    resource: str = ""
    namespace: str = ""
    name: str = ""
    group: str = ""


@dataclass
class RequestHeaderConfig:
    client_cas: list[x509.Certificate] = field(default_factory=list)
    requestheader_cas: list[x509.Certificate] = field(default_factory=list)
    allowed_names: list[str] = field(default_factory=list)
    username_headers: list[str] = field(default_factory=list)
    group_headers: list[str] = field(default_factory=list)
    extra_prefixes: list[str] = field(default_factory=list)
    uid_headers: list[str] = field(default_factory=list)

    @classmethod
    def from_configmap(cls, cm: dict[str, Any]) -> RequestHeaderConfig:
        d = cm.get("data") or {}

        def certs(key: str) -> list[x509.Certificate]:
            return x509.load_pem_x509_certificates(d[key].encode()) if d.get(key) else []

        def strings(key: str) -> list[str]:
            return [str(x) for x in json.loads(d[key])] if d.get(key) else []

        return cls(certs("client-ca-file"), certs("requestheader-client-ca-file"),
                   strings("requestheader-allowed-names"), strings("requestheader-username-headers"),
                   strings("requestheader-group-headers"), strings("requestheader-extra-headers-prefix"),
                   strings("requestheader-uid-headers"))

    def ca_pem(self) -> str:
        from cryptography.hazmat.primitives.serialization import Encoding

        return "".join(c.public_bytes(Encoding.PEM).decode() for c in self.client_cas + self.requestheader_cas)


def _issued_by(cert: x509.Certificate, cas: list[x509.Certificate]) -> bool:
    for ca in cas:
        try:
            cert.verify_directly_issued_by(ca)
            return True
        except (ValueError, TypeError, Exception):  # noqa: BLE001 - InvalidSignature and friends: not this CA
            continue
    return False


def _cn_orgs(cert: x509.Certificate) -> tuple[str, list[str]]:
    cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
    orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
    return (str(cn[0].value) if cn else ""), [str(o.value) for o in orgs]


class DelegatedAuth:
    def __init__(self, client: Any, config: RequestHeaderConfig) -> None:
        self.client = client
        self.config = config
        self._tokens: dict[str, tuple[float, UserInfo | None]] = {}
        self._decisions: dict[tuple[Any, ...], tuple[float, bool, str]] = {}

    # ---- who -------------------------------------------------------------------------------
    def _from_headers(self, request: web.Request) -> UserInfo | None:
        c = self.config
        name = next((request.headers[h] for h in c.username_headers if request.headers.get(h)), "")
        if not name:
            return None
        groups = [g for h in c.group_headers for g in request.headers.getall(h, [])]
        extra: dict[str, list[str]] = {}
        for k, v in request.headers.items():
            for p in c.extra_prefixes:
                if k.lower().startswith(p.lower()):
                    extra.setdefault(unquote(k[len(p):]).lower(), []).append(v)
        uid = next((request.headers[h] for h in c.uid_headers if request.headers.get(h)), "")
        return UserInfo(name=name, uid=uid, groups=groups, extra=extra)

    async def authenticate(self, request: web.Request, peer_der: bytes | None) -> UserInfo | None:
        """The user, or None for credentials that do not authenticate (401)."""
        if peer_der:
            cert = x509.load_der_x509_certificate(peer_der)
            if _issued_by(cert, self.config.requestheader_cas):
                cn, _ = _cn_orgs(cert)
                if self.config.allowed_names and cn not in self.config.allowed_names:
                    log.info("front-proxy certificate with CN %r is not in requestheader-allowed-names", cn)
                    return None
                return self._from_headers(request)
            if _issued_by(cert, self.config.client_cas):
                cn, orgs = _cn_orgs(cert)
                return UserInfo(name=cn, groups=[*orgs, "system:authenticated"])
            return None
        auth = request.headers.get("Authorization", "")
        scheme, _, token = auth.partition(" ")
        if scheme.lower() == "bearer" and token.strip():
            return await self._review_token(token.strip())
        return UserInfo(name="system:anonymous", groups=["system:unauthenticated"])

    async def _review_token(self, token: str) -> UserInfo | None:
        now = time.monotonic()
        hit = self._tokens.get(token)
        if hit is not None and hit[0] > now:
            return hit[1]
        out = await self.client.create(TOKENREVIEWS, {"apiVersion": "authentication.k8s.io/v1",
                                                      "kind": "TokenReview", "spec": {"token": token}})
        st = out.get("status") or {}
        user = None
        if st.get("authenticated"):
            u = st.get("user") or {}
            user = UserInfo(name=u.get("username", ""), uid=u.get("uid", ""), groups=list(u.get("groups") or []),
                            extra={k: list(v) for k, v in (u.get("extra") or {}).items()})
        if len(self._tokens) > CACHE_MAX:
            self._tokens.clear()
        self._tokens[token] = (now + CACHE_TTL, user)
        return user

    # ---- what ------------------------------------------------------------------------------
    async def authorize(self, user: UserInfo, attrs: Attributes) -> None:
        """Raises the 403 Status upstream answers for a denied request."""
        if not attrs.resource and attrs.path in ALWAYS_ALLOW_PATHS:
            return
        if ALWAYS_ALLOW_GROUPS & set(user.groups):
            return
        key = (user.name, user.uid, tuple(user.groups), tuple(sorted((k, tuple(v)) for k, v in user.extra.items())),
               attrs)
        now = time.monotonic()
        hit = self._decisions.get(key)
        if hit is None or hit[0] <= now:
            spec: dict[str, Any] = {"user": user.name, "groups": list(user.groups)}
            if user.uid:
                spec["uid"] = user.uid
            if user.extra:
                spec["extra"] = user.extra
            if attrs.resource:
                spec["resourceAttributes"] = {"verb": attrs.verb, "group": attrs.group, "version": "v1beta1",
                                              "resource": attrs.resource, "namespace": attrs.namespace,
                                              "name": attrs.name}
            else:
                spec["nonResourceAttributes"] = {"verb": attrs.verb, "path": attrs.path}
            out = await self.client.create(SARS, {"apiVersion": "authorization.k8s.io/v1",
                                                  "kind": "SubjectAccessReview", "spec": spec})
            st = out.get("status") or {}
            if len(self._decisions) > CACHE_MAX:
                self._decisions.clear()
            hit = self._decisions[key] = (now + CACHE_TTL, bool(st.get("allowed")), str(st.get("reason") or ""))
        if not hit[1]:
            raise E.new_forbidden_request(user.name, attrs.verb, path=attrs.path, group=attrs.group,
                                          resource=attrs.resource, namespace=attrs.namespace, name=attrs.name,
                                          reason=hit[2])
