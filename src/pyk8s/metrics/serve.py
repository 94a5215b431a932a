"""Serving a component's registry: the secure port of kube-scheduler (10259) and
kube-controller-manager (10257), and kube-proxy's plain localhost port (10249).

The secure port authenticates and authorizes as upstream's delegated authentication and
authorization do: a bearer token is checked with a TokenReview, a client certificate against
the cluster's CA (the one the component's kubeconfig trusts), no credentials is
system:anonymous; then a SubjectAccessReview asks the API server whether that user may `get`
the path (/metrics: the nonResourceURL RBAC grants to system:monitoring and cluster-admin).
/healthz, /readyz and /livez are always allowed, as upstream's --authorization-always-allow-paths.
Answers are cached for 10 s (upstream's allowed/denied cache TTLs are longer) so a scraper
costs the API server at most one review per identity per 10 s.
"""

from __future__ import annotations

import logging
import os
import ssl
import tempfile
import time
from typing import Any

from aiohttp import web
from cryptography import x509
from cryptography.x509.oid import NameOID
from prometheus_client import CollectorRegistry

from ..api import errors as E
from .core import exposition

__all__ = ["SecureMetricsServer", "PlainMetricsServer", "ALWAYS_ALLOW"]

log = logging.getLogger("pyk8s.metrics")
ALWAYS_ALLOW = frozenset({"/healthz", "/readyz", "/livez"})
_TTL = 10.0
_AUTHN = ("authentication.k8s.io", "v1", "tokenreviews")
_AUTHZ = ("authorization.k8s.io", "v1", "subjectaccessreviews")


async def _ok(request: web.Request) -> web.Response:
    return web.Response(text="ok")


async def _listen(registry: CollectorRegistry, host: str, port: int, ssl_context: ssl.SSLContext | None,
                  middlewares: tuple[Any, ...] = ()) -> tuple[web.AppRunner, int]:
    """/metrics and the health paths on host:port; the runner and the port bound (for port 0)."""

    async def metrics(request: web.Request) -> web.Response:
        body, ct = exposition(registry, request.headers.get("Accept", ""))
        return web.Response(body=body, headers={"Content-Type": ct})

    app = web.Application(middlewares=middlewares)
    app.router.add_get("/metrics", metrics)
    for p in ALWAYS_ALLOW:
        app.router.add_get(p, _ok)
    runner = web.AppRunner(app, access_log=None, handle_signals=False)
    await runner.setup()
    site = web.TCPSite(runner, host, port, ssl_context=ssl_context, reuse_address=True)
    await site.start()
    srv = getattr(site, "_server", None)
    if port == 0 and srv is not None and srv.sockets:
        port = srv.sockets[0].getsockname()[1]
    return runner, port


def _status(e: E.StatusError) -> web.Response:
    import orjson

    return web.Response(status=e.code, body=orjson.dumps(e.status()), content_type="application/json")


class SecureMetricsServer:
    """HTTPS /metrics (and health) with delegated authentication and authorization."""

    def __init__(self, client: Any, registry: CollectorRegistry, port: int, host: str = "0.0.0.0",
                 ca_pem: bytes | None = None, component: str = "") -> None:
        self.client = client
        self.registry = registry
        self.port = port
        self.host = host
        self.ca_pem = ca_pem
        self.component = component
        self._runner: web.AppRunner | None = None
        self._cache: dict[tuple[Any, ...], tuple[float, Any]] = {}

    def _ssl(self) -> ssl.SSLContext:
        from ..pki import self_signed_serving_cert
        from ..tlsdefaults import harden_server_context

        # upstream generates a self-signed serving certificate when given none (--tls-cert-file unset)
        chain, key = self_signed_serving_cert(self.component or "localhost", ["localhost", "127.0.0.1"])
        ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
        with tempfile.TemporaryDirectory() as d:  # 0700: the key never sits where others can read it
            cert_path, key_path = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
            with open(cert_path, "wb") as f:
                f.write(chain)
            with open(os.open(key_path, os.O_WRONLY | os.O_CREAT, 0o600), "wb") as f:
                f.write(key)
            ctx.load_cert_chain(cert_path, key_path)
        if self.ca_pem:
            ctx.load_verify_locations(cadata=self.ca_pem.decode())
            ctx.verify_mode = ssl.CERT_OPTIONAL  # a client certificate is one way to authenticate
        return ctx

    async def start(self) -> None:
        self._runner, self.port = await _listen(self.registry, self.host, self.port, self._ssl(), (self._auth,))
        log.debug("serving securely on %s:%d", self.host, self.port)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()

    @web.middleware
    async def _auth(self, request: web.Request, handler: Any) -> web.StreamResponse:
        try:
            user, groups = await self._authenticate(request)
            if request.path not in ALWAYS_ALLOW:
                await self._authorize(user, groups, request.path, request.method.lower())
        except E.StatusError as e:
            return _status(e)
        return await handler(request)  # type: ignore[no-any-return]

    def _cached(self, key: tuple[Any, ...]) -> Any:
        hit = self._cache.get(key)
        if hit is not None and time.monotonic() - hit[0] < _TTL:
            return hit[1]
        return None

    def _remember(self, key: tuple[Any, ...], value: Any) -> None:
        if len(self._cache) > 1024:
            self._cache.clear()
        self._cache[key] = (time.monotonic(), value)

    async def _authenticate(self, request: web.Request) -> tuple[str, tuple[str, ...]]:
        auth = request.headers.get("Authorization", "")
        if auth.lower().startswith("bearer "):
            token = auth[7:].strip()
            key = ("token", token)
            hit = self._cached(key)
            if hit is None:
                review = await self.client.create(_AUTHN, {"apiVersion": "authentication.k8s.io/v1",
                                                           "kind": "TokenReview", "spec": {"token": token}})
                st = review.get("status") or {}
                u = st.get("user") or {}
                hit = (str(u.get("username", "")), tuple(u.get("groups") or ())) if st.get("authenticated") else ()
                self._remember(key, hit)
            if not hit:
                raise E.new_unauthorized()
            return hit  # type: ignore[no-any-return]
        peer = request.transport.get_extra_info("peercert") if request.transport is not None else None
        sslobj = request.transport.get_extra_info("ssl_object") if request.transport is not None else None
        der = sslobj.getpeercert(binary_form=True) if sslobj is not None and peer else None
        if der:  # verified against the cluster CA in the handshake
            cert = x509.load_der_x509_certificate(der)
            cn = cert.subject.get_attributes_for_oid(NameOID.COMMON_NAME)
            orgs = cert.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)
            return str(cn[0].value) if cn else "", (*(str(o.value) for o in orgs), "system:authenticated")
        return "system:anonymous", ("system:unauthenticated",)

    async def _authorize(self, user: str, groups: tuple[str, ...], path: str, verb: str) -> None:
        key = ("sar", user, groups, path, verb)
        allowed = self._cached(key)
        if allowed is None:
            review = await self.client.create(_AUTHZ, {
                "apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview",
                "spec": {"user": user, "groups": list(groups), "nonResourceAttributes": {"path": path, "verb": verb}}})
            allowed = bool((review.get("status") or {}).get("allowed"))
            self._remember(key, allowed)
        if not allowed:
            raise E.StatusError(403, "Forbidden", f'forbidden: User "{user}" cannot {verb} path "{path}"', {})


class PlainMetricsServer:
    """kube-proxy's --metrics-bind-address: plain HTTP /metrics and /healthz, localhost by default
    (upstream serves it without authentication: only what runs on the node reaches 127.0.0.1)."""

    def __init__(self, registry: CollectorRegistry, host: str, port: int) -> None:
        self.registry, self.host, self.port = registry, host, port
        self._runner: web.AppRunner | None = None

    async def start(self) -> None:
        self._runner, self.port = await _listen(self.registry, self.host, self.port, None)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()


def parse_bind_address(value: str, default_port: int) -> tuple[str, int]:
    """host:port, as upstream's --metrics-bind-address ("" or port 0: not served)."""
    host, _, port = value.rpartition(":")
    if not host:
        return value or "127.0.0.1", default_port
    return host.strip("[]"), int(port)
