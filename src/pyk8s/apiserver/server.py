"""The API server: store, watch cache, REST handlers, discovery, OpenAPI, authn/authz, over HTTPS.

Plain requests (one body in, one answer out) are read and answered by http1.py; aiohttp
carries everything else (chosen for chunked streaming with back-pressure and WebSocket and
SPDY upgrades in one well-kept package): http1.py hands such connections to it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import ssl
import time
from dataclasses import dataclass, field
from typing import Any

import orjson
from aiohttp import web

from .. import KUBERNETES_VERSION, gctune
from ..api import errors as E
from ..api.resources import Registry, builtin_registry
from ..datadir import ensure_private_dir
from ..storage import Store, open_store
from . import appkeys, commit_answer, impersonation, shutdown
from .audit import AuditOptions, on_response_prepare, record_authorization, set_audit_id_header
from .authz import RequestAttributes, forbidden_error
from .codec import MAX_REQUEST_BYTES
from .discovery import Discovery
from .feature_gates import DEFAULTS as FEATURE_GATE_DEFAULTS
from .handlers import ResourceHandler, status_response
from .header_limits import MAX_FIELD_BYTES, MAX_HEADER_BYTES, handler_factory
from .http1 import FastRequest, HTTP1Protocol
from .jsonwire import NEWLINE
from .pretty import indent_if_wanted
from .query_params import validate_field_manager
from .request import RequestInfo, parse_path, request_verb
from .rest import RequestContext, RestStorage
from .serving_address import DEFAULT_BIND_ADDRESS, check_family, default_advertise_address, is_specific
from .warning_headers import add_warnings, warning_value
from .watchcache import CacheSet

log = logging.getLogger("pyk8s.apiserver")

__all__ = ["ServerConfig", "APIServer"]

# aiohttp's read limit, for the bodies it reads (chunked ones): above upstream's 3 MiB, which
# decode_body and http1.py enforce with upstream's 413
CLIENT_MAX_SIZE = 4 * 1024 * 1024
KEEPALIVE_TIMEOUT = 75.0  # seconds an idle keep-alive connection is kept, aiohttp's default
_OPTIONS_KIND = {"POST": "CreateOptions", "PUT": "UpdateOptions", "PATCH": "PatchOptions"}


@dataclass
class ServerConfig:
    data_dir: str = "./data"
    bind_address: str = DEFAULT_BIND_ADDRESS  # upstream's 0.0.0.0: pods reach the server (serving_address.py)
    port: int = 6443
    datastore_endpoint: str = ""
    etcd_cafile: str | None = None
    etcd_certfile: str | None = None
    etcd_keyfile: str | None = None
    etcd_prefix: str = "/registry"
    token_auth_file: str | None = None
    service_cidr: str = "10.96.0.0/12"
    cluster_cidr: str = "10.244.0.0/16"
    advertise_address: str | None = None
    extra_sans: list[str] = field(default_factory=list)
    tls: bool = True
    # requests without credentials are system:anonymous, authorized by RBAC (upstream's --anonymous-auth)
    anonymous_auth: bool = True
    enable_bootstrap_token_auth: bool = True  # kube-system bootstrap-token Secrets (bootstrap_token_auth.py)
    # --authorization-mode (authz_modes.py) and the admission plugins toggled on/off (admission_plugins.py)
    authorization_modes: tuple[str, ...] = ("RBAC",)
    client_ca_file: str | None = None  # --client-ca-file: another CA whose client certificates are accepted
    admission_enable: frozenset[str] = frozenset()
    admission_disable: frozenset[str] = frozenset()
    admission_control_config_file: str | None = None  # upstream's AdmissionConfiguration (PodSecurity's part)
    disabled_components: frozenset[str] = frozenset()  # --disable: components not run (bootstrap skips their objects)
    bookmark_interval: float = 60.0
    compaction_interval: float = 60.0
    compaction_window: float = 300.0
    kubeconfig_path: str | None = None
    synchronous: str = "FULL"
    # the kubernetes Service's endpoints: "lease" (upstream's default: every live API server) or "none"
    endpoint_reconciler_type: str = "lease"
    master_lease_ttl: float = 15.0  # upstream's DefaultEndpointReconcilerTTL
    master_lease_interval: float = 10.0  # upstream's DefaultEndpointReconcilerInterval
    # share the port with other processes (SO_REUSEPORT): the main server and its API workers
    reuse_port: bool = False
    # an API worker of a main server (--api-workers): serves requests only; the main server
    # bootstraps, compacts, reconciles endpoints and writes the kubeconfig
    api_worker: bool = False
    # --encryption-provider-config, loaded (encryptionconfig.EncryptionConfig): resources kept encrypted
    encryption: Any = None
    audit: AuditOptions | None = None  # --audit-policy-file and --audit-log-* (audit/options.py)
    # API Priority and Fairness (flowcontrol.py); off: the plain in-flight limits below
    enable_priority_and_fairness: bool = True
    max_requests_inflight: int = 400  # upstream's defaults; APF shares their sum among priority levels
    max_mutating_requests_inflight: int = 200
    # --service-account-extend-token-expiration: kube-api-access tokens valid a year, flagged after 3607 s
    extend_token_expiration: bool = True
    # --feature-gates (feature_gates.py): name -> on
    feature_gates: dict[str, bool] = field(default_factory=lambda: dict(FEATURE_GATE_DEFAULTS))


def _version_info() -> dict[str, str]:
    import platform

    major, minor = KUBERNETES_VERSION.lstrip("v").split(".")[:2]
    return {
        "major": major,
        "minor": minor,
        # v1.33 reports its compatibility versions too (emulating itself, compatible with one minor back)
        "emulationMajor": major,
        "emulationMinor": minor,
        "minCompatibilityMajor": major,
        "minCompatibilityMinor": str(int(minor) - 1),
        "gitVersion": f"{KUBERNETES_VERSION}+pyk8s",
        "gitCommit": "0000000000000000000000000000000000000000",
        "gitTreeState": "clean",
        "buildDate": "2026-01-01T00:00:00Z",
        "goVersion": f"python{platform.python_version()}",
        "compiler": "cpython",
        "platform": f"linux/{'amd64' if platform.machine() in ('x86_64', 'AMD64') else platform.machine()}",
    }


class APIServer:
    def __init__(self, config: ServerConfig, registry: Registry | None = None) -> None:
        self.config = config
        from .httplog import wrap

        self._entry = wrap(self._entry)  # type: ignore[method-assign,assignment]  # --v=3: a line per request
        self.registry = registry or builtin_registry()
        self.store: Store | None = None
        self.caches: CacheSet | None = None
        self.rest: RestStorage | None = None
        self.handler: ResourceHandler | None = None
        self.discovery = Discovery(self.registry)
        self.app: web.Application | None = None
        self._runner: web.AppRunner | None = None
        self._listener: asyncio.Server | None = None
        self._conns: set[HTTP1Protocol] = set()  # connections http1.py answers (not handed to aiohttp)
        # shutting down (shutdown.py): watches are refused once `stopping`, every request once `draining`
        self.stopping = False
        self.draining = False
        self._tasks: list[asyncio.Task[Any]] = []
        self.pki: Any = None
        self.authenticator: Any = None
        self.authorizer: Any = None
        self.vap: Any = None  # the ValidatingAdmissionPolicy plug-in (apiserver/vap/)
        self.port = config.port
        self.advertise_address = default_advertise_address(config.bind_address, config.advertise_address)
        check_family(self.advertise_address, config.service_cidr, config.endpoint_reconciler_type)
        self.started_at = 0.0
        self.crds: Any = None
        self._cert_users: dict[bytes, tuple[Any, float]] = {}  # DER -> (user, monotonic deadline)
        self._ha: list[Any] = []  # endpoint reconciler and identity lease (endpoint_reconciler.py)
        self.audit = config.audit.build() if config.audit is not None else None
        self.flowcontrol: Any = None  # the APF or max-in-flight filter (flowcontrol.py)
        self.aggregator: Any = None  # APIService proxying (aggregator.py)
        self.webhooks: Any = None  # admission webhooks (webhooks/)
        self.metrics: Any = None  # apiserver/metrics.py's APIServerMetrics; None with --disable metrics

    @property
    def url(self) -> str:
        scheme = "https" if self.config.tls else "http"
        host = self.config.bind_address
        if host == "0.0.0.0":
            host = "127.0.0.1"
        elif ":" in host:  # IPv6 (asyncio binds it v6-only): in brackets, :: reached on ::1
            host = "[::1]" if host == "::" else f"[{host}]"
        return f"{scheme}://{host}:{self.port}"

    # ---- lifecycle ------------------------------------------------------------------------
    async def start(self) -> None:
        t0 = time.monotonic()
        # Every object lives in memory here and a write allocates hundreds of containers: with
        # CPython's default threshold (700) collections cost ~200 us per pod create (bench/api.py).
        gctune.tune()
        cfg = self.config
        ensure_private_dir(cfg.data_dir)  # state and keys: owner only (datadir.py)
        self.store = open_store(cfg.datastore_endpoint, cfg.data_dir, etcd_cafile=cfg.etcd_cafile,
                                etcd_certfile=cfg.etcd_certfile, etcd_keyfile=cfg.etcd_keyfile,
                                prefix=cfg.etcd_prefix)
        if cfg.encryption is not None:  # encryption at rest: every backend, behind the Store interface
            from ..storage.transforming import wrap_store

            self.store = wrap_store(self.store, cfg.encryption.key_resolver(self.registry))
        if "metrics" not in cfg.disabled_components:  # /metrics (apiserver/metrics.py; off for benchmarks)
            from .metrics import install as install_metrics

            install_metrics(self)
        self.caches = CacheSet(self.store)
        embedded = hasattr(self.store, "_on_events")
        if embedded:
            self.store._on_events = self.caches.on_events  # type: ignore[attr-defined]  # embedded store: caches follow every commit synchronously
        if cfg.synchronous != "FULL" and hasattr(self.store, "synchronous"):
            self.store.synchronous = cfg.synchronous
        await self.store.start()
        follow_from = self.store.revision  # every cache below is loaded at this revision or later
        self.rest = RestStorage(self.store, self.caches, self.registry)
        self.rest.stale_keys = getattr(self.store, "stale", None)
        self.rest.list_from_cache_snapshot = cfg.feature_gates.get("ListFromCacheSnapshot", True)
        for r in self.registry.all():
            if not r.virtual:
                await self.rest.cache_for(r)
        if not embedded:
            # a remote store (etcd) cannot feed the caches before it acknowledges a write: follow its
            # watch; consistent reads wait for it to reach the store's current revision (rest.fresh)
            self._tasks.append(asyncio.create_task(self.caches.follow(follow_from), name="cache-follow"))
        self.handler = ResourceHandler(self.rest, self.registry, cfg.bookmark_interval)
        if self.metrics is not None:  # watch events and admission steps (apiserver/metrics.py)
            self.metrics.attach(self.handler, self.rest)
        from . import admission

        self.allocator = admission.install(self.rest, cfg.service_cidr)
        from .admission_plugins import apply as apply_admission_plugins

        if "PodSecurity" not in cfg.admission_disable:
            from .podsecurity import install as install_pod_security

            install_pod_security(self.rest, cfg.admission_control_config_file)
        apply_admission_plugins(self.rest, set(cfg.admission_enable), set(cfg.admission_disable),
                                cfg.admission_control_config_file)
        if "ValidatingAdmissionPolicy" not in cfg.admission_disable:  # CEL policies (apiserver/vap/)
            from .vap import install as install_vap

            self.vap = install_vap(self)
        self._setup_security()
        from .webhooks import install as install_webhooks

        # admission webhooks (docs/admission.md)
        self.webhooks = install_webhooks(self, cfg.admission_disable, cfg.admission_control_config_file)
        from . import crds, flowcontrol

        self.flowcontrol = flowcontrol.make(self)

        self.crds = crds.CRDManager(self)
        await self.crds.start()
        from . import typemeta

        # rows an earlier version stored with a foreign kind, custom resources' included
        await typemeta.repair_stored(self.registry, self.rest)
        self.app = self._build_app()
        if self.audit is not None:
            self.audit.open()
        from . import kubelet_proxy

        self.app[appkeys.KUBELET_PROXY] = kubelet_proxy.make(self)
        self._runner = web.AppRunner(self.app, access_log=None, handle_signals=False,
                                     shutdown_timeout=shutdown.HANDED_OFF_GRACE)
        await self._runner.setup()
        ssl_ctx = self._ssl_context() if cfg.tls else None
        assert self._runner.server is not None
        fallback = handler_factory(self._runner.server)
        app, conns = self.app, self._conns
        serve = self._entry

        def protocol() -> HTTP1Protocol:
            return HTTP1Protocol(serve, app, fallback, conns, MAX_REQUEST_BYTES)

        self._listener = await asyncio.get_running_loop().create_server(
            protocol, cfg.bind_address, cfg.port, ssl=ssl_ctx, backlog=1024, reuse_address=True,
            reuse_port=cfg.reuse_port or None)
        self._tasks.append(asyncio.create_task(self._close_idle_connections(), name="idle-connections"))
        if cfg.port == 0:
            self.port = self._listener.sockets[0].getsockname()[1]  # for tests that ask for any free port
        from .aggregation import install as install_aggregation

        install_aggregation(self)  # APIService proxying, availability, merged discovery (docs/aggregation.md)
        if cfg.api_worker:
            self.started_at = time.time()
            log.info("API worker listening on %s (started in %.2fs)", self.url, time.monotonic() - t0)
            return
        from . import bootstrap

        await bootstrap.run(self)
        from .endpoint_reconciler import IdentityLease, LeaseEndpointReconciler

        if cfg.endpoint_reconciler_type == "lease":
            self._ha.append(LeaseEndpointReconciler(self, cfg.master_lease_ttl, cfg.master_lease_interval))
        self._ha.append(IdentityLease(self))
        for part in self._ha:
            await part.start()
        self._tasks.append(asyncio.create_task(self._compactor(), name="compactor"))
        if cfg.kubeconfig_path is None:
            cfg.kubeconfig_path = os.path.join(cfg.data_dir, "kubeconfig.yaml")
        self.write_admin_kubeconfig(cfg.kubeconfig_path)
        self.started_at = time.time()
        log.info("API server listening on %s (started in %.2fs)", self.url, time.monotonic() - t0)

    async def stop_listening(self) -> None:
        """Stop accepting connections (API workers serve the port); open ones are served to the end."""
        if self._listener is not None:
            self._listener.close()  # the listening socket only: open connections are served to the end

    def begin_shutdown(self) -> None:
        """SIGTERM: watches end now and no new one starts (plain requests are served until stop())."""
        shutdown.end_watches(self)

    async def stop(self) -> None:
        if self._runner is not None:
            # first, as upstream: no new requests, watches end, the requests in flight are answered
            await shutdown.drain(self)
        for part in reversed(self._ha):
            await part.stop()
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            try:
                await t
            except (asyncio.CancelledError, Exception):
                pass
        if self.crds is not None:
            await self.crds.stop()
        if self.webhooks is not None:
            await self.webhooks.client.close()  # pooled connections to webhooks
        if self._runner is not None:
            shutdown.close_watches(self.caches)  # any that began while the others were drained
            await self._runner.cleanup()  # the connections handed to aiohttp
        if self.store is not None:
            await self.store.close()
        if self.audit is not None:
            self.audit.close()

    # ---- security -------------------------------------------------------------------------
    def _setup_security(self) -> None:
        from .authn import Authenticator
        from .authz import RBACAuthorizer, RBACIndex
        from .certs import ensure_pki

        cfg = self.config
        sans = list(cfg.extra_sans)
        for addr in (self.advertise_address, cfg.bind_address):  # what clients and pods connect to
            if addr not in sans and is_specific(addr):
                sans.append(addr)
        self.pki = ensure_pki(cfg.data_dir, sans, cfg.service_cidr)
        self.authenticator = Authenticator.for_pki(
            self.pki, token_auth_file=cfg.token_auth_file, sa_getter=_CacheGetter(self),
            anonymous=cfg.anonymous_auth,
        )
        if cfg.enable_bootstrap_token_auth:
            from .bootstrap_token_auth import BootstrapTokenAuthenticator

            self.authenticator.token_authenticators.append(BootstrapTokenAuthenticator(_CacheGetter(self).get_secret))
        if cfg.client_ca_file and self.authenticator.x509 is not None:
            from .client_ca import load_client_cas

            self.authenticator.x509.ca_certs.extend(load_client_cas(cfg.client_ca_file))
        self.rbac = RBACIndex()
        assert self.rest is not None and self.caches is not None
        for plural in ("roles", "clusterroles", "rolebindings", "clusterrolebindings"):
            r = self.registry.get("rbac.authorization.k8s.io", "v1", plural)
            assert r is not None
            cache = self.caches.caches[self.registry.storage_resource(r).key_prefix()]
            for obj in cache.list(None):
                self.rbac.upsert(obj)
            cache.listeners.append(self._rbac_event)
        self.authorizer = self._authorizer(RBACAuthorizer(self.rbac))
        from .rbac_escalation import EscalationCheck

        self.rest.mutating.append(EscalationCheck(self.authorizer).admit)
        from .csr_admission import CSRAdmission

        csr = CSRAdmission(self.authorizer)  # CSR strategy (requester's identity, approval) and its admission
        self.rest.mutating.insert(0, csr.prepare)
        self.rest.validating.append(csr.validate)

    def _authorizer(self, rbac: Any) -> Any:
        """RBAC alone, or the union of --authorization-mode's modes (authz_modes.py)."""
        modes = list(self.config.authorization_modes)
        if modes == ["RBAC"]:
            return rbac
        from .authz import bootstrap_policy
        from .authz_modes import UnionAuthorizer
        from .node_authorizer import NodeAuthorizer

        node = None
        if "Node" in modes:
            assert self.caches is not None
            pod_res = self.registry.get("", "v1", "pods")
            assert pod_res is not None
            pods = self.caches.caches[self.registry.storage_resource(pod_res).key_prefix()]
            getter = _CacheGetter(self)
            rules = next(r["rules"] for r in bootstrap_policy(False) if r["kind"] == "ClusterRole"
                         and r["metadata"]["name"] == "system:node")
            node = NodeAuthorizer(pods.list, getter._get, rules)
        return UnionAuthorizer(modes, rbac, node)

    def _rbac_event(self, ce: Any) -> None:
        if ce.type == "DELETED":
            self.rbac.delete(ce.obj)
        else:
            self.rbac.upsert(ce.obj)

    def _ssl_context(self) -> ssl.SSLContext:
        from .certs import ssl_server_context

        ctx = ssl_server_context(self.pki)
        if self.config.client_ca_file:
            from .client_ca import add_to_context

            add_to_context(ctx, self.pki, self.config.client_ca_file)
        return ctx

    def sign_token(self, namespace: str, name: str, uid: str, audiences: list[str], expiration: int,
                   binding: Any, warn_after: int | None = None) -> tuple[str, str]:
        """A service-account JWT bound as token_request.Binding says; (token, expiry as RFC 3339)."""
        from ..api.timefmt import format_time
        from .authn import issue_service_account_token

        token, exp = issue_service_account_token(self.pki.sa_private_key, namespace, name, uid, audiences, expiration,
                                                 binding.pod, bound_secret=binding.secret, bound_node=binding.node,
                                                 warn_after_seconds=warn_after)
        return token, exp if isinstance(exp, str) else format_time(exp)

    def write_admin_kubeconfig(self, path: str) -> None:
        from ..client.kubeconfig import write_kubeconfig

        p = self.pki
        write_kubeconfig(path, self.url, p.ca_cert_path.read_bytes(), p.admin_cert_path.read_bytes(),
                         p.admin_key_path.read_bytes())

    # ---- compaction -----------------------------------------------------------------------
    async def _compactor(self) -> None:
        """Every interval, compact history older than the window (upstream: 5 minutes)."""
        cfg = self.config
        samples: list[tuple[float, int]] = []
        assert self.store is not None
        while True:
            await asyncio.sleep(max(0.2, min(cfg.compaction_interval / 5, 10.0)))
            now = time.monotonic()
            samples.append((now, self.store.revision))
            target = 0
            while samples and now - samples[0][0] >= cfg.compaction_window:
                target = samples.pop(0)[1]
            if target and target > self.store.compacted_revision:
                try:
                    await self.store.compact(target)
                except Exception:  # compaction is best effort; it runs again next round
                    log.exception("compaction failed")

    # ---- HTTP -----------------------------------------------------------------------------
    async def _close_idle_connections(self) -> None:
        """Close keep-alive connections idle for KEEPALIVE_TIMEOUT, as aiohttp does with its own."""
        while True:
            await asyncio.sleep(KEEPALIVE_TIMEOUT / 5)
            cutoff = time.monotonic() - KEEPALIVE_TIMEOUT
            for c in list(self._conns):
                if c.last_active < cutoff:
                    c.close_idle()

    def _build_app(self) -> web.Application:
        app = web.Application(client_max_size=CLIENT_MAX_SIZE, handler_args={
            "max_field_size": MAX_FIELD_BYTES, "max_line_size": MAX_HEADER_BYTES})
        app[appkeys.SERVER] = self
        app[appkeys.AUTHENTICATOR] = self.authenticator
        app[appkeys.AUTHORIZER] = self.authorizer
        app[appkeys.API_AUDIENCE] = "https://kubernetes.default.svc.cluster.local"
        app[appkeys.TOKEN_SIGNER] = self.sign_token
        app.router.add_route("*", "/{tail:.*}", self._entry)
        app.on_response_prepare.append(on_response_prepare)  # Audit-Id and ResponseStarted of streams
        return app

    def _peer_cert(self, request: web.Request) -> bytes | None:
        if isinstance(request, FastRequest):
            return request.peer_cert
        transport = request.transport
        if transport is None:
            return None
        sslobj = transport.get_extra_info("ssl_object")
        if sslobj is None:
            return None
        try:
            return sslobj.getpeercert(binary_form=True)
        except (ValueError, AttributeError):
            return None

    async def _entry(self, request: web.Request) -> web.StreamResponse:
        if self.stopping and (self.draining or shutdown.is_watch(request)):
            return shutdown.retry_after_response()
        if self.audit is not None:
            resp = await self.audit.serve(request, self._serve_request)
        else:
            resp = await self._serve_request(request)
            if not resp.prepared:
                set_audit_id_header(request, resp, False)  # upstream answers it with or without auditing
        indent_if_wanted(request, resp)  # ?pretty, curl and browsers (pretty.py)
        return resp

    async def _serve_request(self, request: web.Request) -> web.StreamResponse:
        path = request.path
        if len(path) > 1 and path.endswith("/"):
            path = path.rstrip("/")  # kr8s sends /api/ and /version/
        try:
            user = self._authenticate(request, self._peer_cert(request))
            if user is None:  # no credentials and --anonymous-auth=false: 401 everywhere, as upstream
                raise E.new_unauthorized()
            if self.audit is not None:  # before impersonation: a refused impersonation is audited too
                self.audit.authenticated(request, path, user)
            if impersonation.requested(request.headers):
                as_user = impersonation.impersonate(user, request.headers, self.authorizer)
                if as_user is not None:  # never cached: the certificate's own user stays in _cert_users
                    request[impersonation.IMPERSONATOR_KEY] = user
                    user = as_user
            return await self._route(request, path, user)
        except E.StatusError as e:
            if e.code >= 500 and (stored := commit_answer.after_failure(request, "the handler")) is not None:
                return stored
            resp = status_response(e)
            # warnings gathered before the failure still reach the client, as upstream's do
            ctx = request.get("pyk8s.ctx")
            add_warnings(resp.headers, ctx.warnings if ctx is not None else ())
            return resp
        except asyncio.CancelledError:
            raise
        except ConnectionResetError:
            raise
        except web.HTTPRequestEntityTooLarge:  # aiohttp's own read limit, on chunked bodies
            return status_response(E.new_request_entity_too_large(f"limit is {MAX_REQUEST_BYTES}"))
        except Exception as e:
            if (stored := commit_answer.after_failure(request, "the handler")) is not None:
                return stored
            log.exception("internal error serving %s %s", request.method, request.path_qs)
            if self.audit is not None:
                self.audit.panicked(request, e)
            return status_response(E.new_internal_error(e))

    def _authenticate(self, request: web.Request, peer: bytes | None) -> Any:
        # Checking a client certificate on every request costs half a millisecond, so its identity
        # is remembered (bounded) until a minute has passed or the certificate expires, whichever
        # comes first: an expired certificate is refused from its first second, as upstream's.
        if peer and "Authorization" not in request.headers:
            hit = self._cert_users.get(peer)
            now = time.monotonic()
            if hit is not None and now < hit[1]:
                return hit[0]
            user = self.authenticator.authenticate(request.headers, peer)
            if user is not None:
                from cryptography import x509

                if len(self._cert_users) > 4096:
                    self._cert_users.clear()
                left = x509.load_der_x509_certificate(peer).not_valid_after_utc.timestamp() - time.time()
                self._cert_users[peer] = (user, now + min(60.0, left))
            return user
        return self.authenticator.authenticate(request.headers, peer)

    def _authorize(self, user: Any, info: RequestInfo, verb: str, path: str, field_selector: str = "") -> None:
        if info.is_resource:
            attrs = RequestAttributes(verb=verb, api_group=info.group, resource=info.resource,
                                      subresource=info.subresource, name=info.name,
                                      namespace=info.namespace or ("" if info.resource != "namespaces" else info.name),
                                      resource_request=True)
            if info.resource == "namespaces":
                attrs.namespace = info.name if info.name else ""
            if field_selector and verb in ("list", "watch"):
                from .selector_attributes import with_field_selector

                with_field_selector(attrs, field_selector)
        else:
            attrs = RequestAttributes(verb=verb, path=path, resource_request=False)
        ok, reason = self.authorizer.authorize(user, attrs)
        if self.audit is not None:
            record_authorization(ok, reason)
        if not ok:
            raise forbidden_error(user, attrs, reason)

    async def _route(self, request: web.Request, path: str, user: Any) -> web.StreamResponse:
        # what the path names and the verb, once for APF, authorization and the handlers
        info = parse_path(path)
        verb = request_verb(request.method, info, request.query.get("watch") if info.is_resource else None)
        if self.metrics is not None:
            self.metrics.routed(request, info, verb)  # what apiserver_request_total labels the request with
        # API Priority and Fairness after authentication, before authorization, as upstream's filter chain
        if self.flowcontrol is not None:
            return await self.flowcontrol.serve(request, path, user, info, verb,  # type: ignore[no-any-return]
                                                self._route_admitted)
        return await self._route_admitted(request, path, user, info, verb)

    async def _route_admitted(self, request: web.Request, path: str, user: Any, info: RequestInfo,
                              verb: str) -> web.StreamResponse:
        m = request.method
        if not info.prefix:
            # health and version too: the bootstrap policy opens them to everyone (system:public-info-viewer)
            self._authorize(user, info, verb, path)
            if path in ("/healthz", "/livez", "/readyz") or path.startswith(("/healthz/", "/livez/", "/readyz/")):
                return web.Response(text="ok", content_type="text/plain")
            if path == "/version":
                # as upstream's WriteRawJSON: indented
                return web.Response(text=json.dumps(_version_info(), indent=2), content_type="application/json")
            return await self._non_resource(request, path)
        if info.prefix == "apis" and info.version and self.aggregator is not None \
                and (ref := self.aggregator.remote(info.group, info.version)):
            # an aggregated API server's group version: authorized here, then proxied (aggregator.py)
            self._authorize(user, info, verb if info.is_resource else "get", path,
                            request.query.get("fieldSelector", "") if info.is_resource else "")
            return await self.aggregator.proxy(request, user, ref)
        if not info.is_resource:
            self._authorize(user, info, "get", path)
            return self._discovery(request, info)
        res = self.registry.get(info.group, info.version, info.resource)
        if res is None:
            raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
        q = request.query
        self._authorize(user, info, verb, path, q.get("fieldSelector", ""))
        fm = q.get("fieldManager", "")
        if fm and m in _OPTIONS_KIND:
            validate_field_manager(fm, _OPTIONS_KIND[m])
        if not fm and m in ("POST", "PUT", "PATCH"):
            from ..api.patch import manager_from_user_agent

            fm = manager_from_user_agent(None, request.headers.get("User-Agent", ""))
        ctx = RequestContext(
            user=user,
            field_manager=fm,
            dry_run=q.get("dryRun") == "All",
            field_validation=q.get("fieldValidation") or _default_field_validation(request),
            user_agent=request.headers.get("User-Agent", ""),
            verb=verb,
        )
        request["pyk8s.ctx"] = ctx
        if q.get("dryRun") not in (None, "", "All"):
            raise E.new_bad_request(f'dryRun: Unsupported value: "{q.get("dryRun")}": supported values: "All"')
        if ctx.field_validation not in ("Strict", "Warn", "Ignore"):
            raise E.new_bad_request(f"fieldValidation: Invalid value: {ctx.field_validation!r}: must be one of "
                                    "Ignore, Warn, or Strict".replace("'", '"'))
        assert self.handler is not None
        deprecated = res.deprecation_warning  # a deprecated CRD version's
        if res.deprecated_replacement:  # a built-in deprecated version's
            from ..api.conversion import deprecation_warning

            deprecated = deprecation_warning(res.group, res.version, res.kind)
        if deprecated:
            # before the handler, as upstream's: errors and watches (whose headers go out before it
            # returns) warn too
            ctx.warnings.append(deprecated)
        resp = await self.handler.handle(request, info, res, ctx)
        if deprecated and not resp.prepared:
            w = warning_value(deprecated)
            if w not in resp.headers.getall("Warning", ()):  # writes carry ctx.warnings already
                resp.headers.add("Warning", w)
        return resp

    def _discovery(self, request: web.Request, info: RequestInfo) -> web.StreamResponse:
        accept = request.headers.get("Accept")
        hostport = f"{self.advertise_address}:{self.port}"
        if info.prefix == "api" and not info.version:
            body, ct, etag = self.discovery.root(True, accept, hostport)
        elif info.prefix == "apis" and not info.group:
            body, ct, etag = self.discovery.root(False, accept, hostport)
        elif info.prefix == "apis" and not info.version:
            g = self.discovery.api_group(info.group)
            if g is None:
                raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
            body, ct, etag = orjson.dumps(g, option=NEWLINE), "application/json", ""
        else:
            rl = self.discovery.resource_list(info.group, info.version)
            if rl is None:
                raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})
            body, ct, etag = orjson.dumps(rl, option=NEWLINE), "application/json", ""
        headers = {"Content-Type": ct, "Vary": "Accept"}
        if etag:
            headers["ETag"] = etag
            if request.headers.get("If-None-Match") == etag:
                return web.Response(status=304, headers=headers)
        return web.Response(body=body, headers=headers)

    async def _non_resource(self, request: web.Request, path: str) -> web.StreamResponse:
        from . import openapi_routes

        if path.startswith("/openapi/"):
            return openapi_routes.serve(self, request, path)
        if path == "/.well-known/openid-configuration" or path == "/openid/v1/jwks":
            from .authn import jwks, openid_configuration

            if path == "/openid/v1/jwks":
                return web.json_response(jwks([self.pki.sa_public_key]))
            return web.json_response(openid_configuration(
                "https://kubernetes.default.svc.cluster.local", f"{self.url}/openid/v1/jwks", [self.pki.sa_public_key]))
        if path in ("/metrics", "/metrics/slis") and self.metrics is not None:
            return self.metrics.response(request, path == "/metrics/slis")
        if path == "/":
            paths = sorted({"/api", "/api/v1", "/apis", "/healthz", "/livez", "/readyz", "/version", "/openapi/v2",
                            "/openapi/v3"} | {f"/apis/{g}" for g in self.registry.groups() if g}
                           | {f"/apis/{g}/{v}" for g in self.registry.groups() if g for v in self.registry.versions(g)})
            return web.json_response({"paths": paths})
        raise E.StatusError(404, "NotFound", "the server could not find the requested resource", {})


def _default_field_validation(request: web.Request) -> str:
    # upstream's default for requests that do not say is Warn (kubectl always says Strict)
    return "Warn"


class _CacheGetter:
    """Live lookups for bound service account tokens, from the watch cache."""

    def __init__(self, server: APIServer) -> None:
        self.s = server

    def _get(self, group: str, resource: str, ns: str | None, name: str) -> dict[str, Any] | None:
        r = self.s.registry.get(group, "v1", resource)
        if r is None or self.s.caches is None:
            return None
        c = self.s.caches.caches.get(self.s.registry.storage_resource(r).key_prefix())
        return c.objects.get(r.key(ns, name)) if c else None

    def get_service_account(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("", "serviceaccounts", namespace, name)

    def get_pod(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("", "pods", namespace, name)

    def get_secret(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._get("", "secrets", namespace, name)

    def get_node(self, name: str) -> dict[str, Any] | None:
        return self._get("", "nodes", None, name)
