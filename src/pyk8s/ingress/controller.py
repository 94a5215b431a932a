"""The pyk8s Ingress controller (IngressClass controller `pyk8s.io/ingress`): watches Ingresses,
IngressClasses, Services and EndpointSlices, keeps the routing table and the TLS contexts
current, serves them on a node's HTTP and HTTPS ports (proxy.py), and writes each served
Ingress's `status.loadBalancer.ingress` with this node's addresses.

Which Ingresses it serves, as ingress controllers decide it upstream: one whose
`spec.ingressClassName` (or, without it, the deprecated `kubernetes.io/ingress.class`
annotation) names an IngressClass with our controller name; with neither, one when an
IngressClass of ours is marked default (the API server's DefaultIngressClass admission fills in
the name for new Ingresses; this covers those created before the class was).

Secrets are read only for TLS: one watch per Secret a served Ingress names in `tls[]`
(field selector on its name), stopped when no Ingress names it any more.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
from dataclasses import dataclass, field
from typing import Any

from ..client import Client, EventRecorder, RateLimitingQueue, run_workers
from ..client.informer import Informer
from .certificates import SNIRouter, TLSSecretError, secret_context
from .endpoints import RoundRobin, ready_endpoints, service_port
from .policy import CONTROLLER_NAME, DEFAULT_CLASS_ANNOTATION
from .routing import Backend, RouteTable, build_table, host_matches, ingress_key

__all__ = ["IngressConfig", "IngressController", "CONTROLLER_NAME", "DEFAULT_CLASS_ANNOTATION"]

log = logging.getLogger("pyk8s.ingress")

LEGACY_CLASS_ANNOTATION = "kubernetes.io/ingress.class"
ING = ("networking.k8s.io", "v1", "ingresses")
CLASSES = ("networking.k8s.io", "v1", "ingressclasses")
SVC = ("", "v1", "services")
SLICES = ("discovery.k8s.io", "v1", "endpointslices")
SECRETS = ("", "v1", "secrets")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass
class IngressConfig:
    bind_address: str = "0.0.0.0"
    http_port: int = 80  # 0: a free port (tests)
    https_port: int = 443
    publish_addresses: list[str] = field(default_factory=list)  # status.loadBalancer.ingress[].ip
    controller_name: str = CONTROLLER_NAME
    ssl_redirect: bool = True  # ingress-nginx's ssl-redirect: TLS hosts answer http with 308 to https


def _slice_service(s: dict[str, Any]) -> list[str]:
    md = s.get("metadata") or {}
    name = (md.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [f"{md.get('namespace', '')}/{name}"] if name else []


class IngressController:
    def __init__(self, client: Client, config: IngressConfig) -> None:
        self.client = client
        self.config = config
        self.ingresses = Informer(client, ING)
        self.classes = Informer(client, CLASSES)
        self.services = Informer(client, SVC)
        self.slices = Informer(client, SLICES)
        self.slices.add_index("service", _slice_service)
        self.secrets: dict[tuple[str, str], Informer] = {}
        self.tls_contexts: dict[tuple[str, str], ssl.SSLContext] = {}
        self.tls_errors: dict[tuple[str, str], str] = {}
        self.recorder = EventRecorder(client, "pyk8s-ingress")
        self.queue = RateLimitingQueue("ingress-status")
        self.round_robin = RoundRobin()
        self._table: RouteTable | None = None
        # per backend, until a Service or EndpointSlice changes: a request costs a dict lookup, not a walk of slices
        self._endpoints: dict[Backend, list[tuple[str, int]]] = {}
        self._tls_hosts: list[tuple[str, tuple[str, str]]] = []  # (host pattern, secret key), oldest first
        self._served: dict[str, dict[str, Any]] = {}
        self._reported: dict[str, str] = {}  # ingress key -> "uid/generation" whose problems were reported
        self._workers: asyncio.Task[None] | None = None
        self.sni = SNIRouter(self.tls_context_for)
        self.server: Any = None  # proxy.IngressServer, once listening
        self.owns_client = False  # stop() closes the client
        self._stopped = False
        self._stopping: set[asyncio.Future[None]] = set()  # secret watches being stopped

    # ---- which Ingresses are ours -------------------------------------------------------
    def _our_classes(self) -> list[dict[str, Any]]:
        return [c for c in self.classes.list() if (c.get("spec") or {}).get("controller") == self.config.controller_name]

    def serves(self, ing: dict[str, Any]) -> bool:
        spec, md = ing.get("spec") or {}, ing.get("metadata") or {}
        name = spec.get("ingressClassName") or (md.get("annotations") or {}).get(LEGACY_CLASS_ANNOTATION)
        ours = self._our_classes()
        if name:
            return any(c["metadata"]["name"] == name for c in ours)
        return any((c["metadata"].get("annotations") or {}).get(DEFAULT_CLASS_ANNOTATION) == "true" for c in ours)

    # ---- state ----------------------------------------------------------------------------
    def _changed(self, *_: Any) -> None:
        self._table = None
        self._endpoints.clear()

    def _ingress_event(self, *objs: Any) -> None:
        self._table = None
        for o in objs:
            if isinstance(o, dict) and o.get("metadata"):
                self.queue.add(ingress_key(o))

    def _classes_changed(self, *_: Any) -> None:
        self._table = None
        for ing in self.ingresses.list():
            self.queue.add(ingress_key(ing))

    def table(self) -> RouteTable:
        if self._table is None:
            served = [i for i in self.ingresses.list() if self.serves(i)]
            self._served = {ingress_key(i): i for i in served}
            self._table = build_table(served)
            self._sync_tls(served)
        return self._table

    def endpoints(self, b: Backend) -> list[tuple[str, int]]:
        eps = self._endpoints.get(b)
        if eps is None:
            eps = self._endpoints[b] = self._ready(b)
        return eps

    def _ready(self, b: Backend) -> list[tuple[str, int]]:
        svc = self.services.get(f"{b.namespace}/{b.service}")
        if svc is None:
            return []
        port = service_port(svc, b.port)
        if port is None:
            return []
        return ready_endpoints(self.slices.by_index("service", f"{b.namespace}/{b.service}"), port.get("name") or "")

    def candidates(self, b: Backend) -> list[tuple[str, int]]:
        """The backend's ready endpoints, starting at the next in round-robin order."""
        eps = self.endpoints(b)
        return self.round_robin.order((b.namespace, b.service, b.port), eps) if eps else []

    # ---- TLS ------------------------------------------------------------------------------
    def _sync_tls(self, served: list[dict[str, Any]]) -> None:
        hosts: list[tuple[str, tuple[str, str]]] = []
        wanted: set[tuple[str, str]] = set()
        for ing in sorted(served, key=lambda i: ((i["metadata"].get("creationTimestamp") or ""), ingress_key(i))):
            ns = ing["metadata"].get("namespace", "")
            for t in (ing.get("spec") or {}).get("tls") or []:
                if not t.get("secretName"):
                    continue
                key = (ns, t["secretName"])
                wanted.add(key)
                hosts += [(h.lower(), key) for h in t.get("hosts") or []]
        self._tls_hosts = hosts
        for key in wanted - set(self.secrets):
            inf = Informer(self.client, SECRETS, namespace=key[0], field_selector=f"metadata.name={key[1]}")
            inf.add_handlers(lambda o, k=key: self._secret_changed(k, o), lambda _o, n, k=key: self._secret_changed(k, n),
                             lambda _o, k=key: self._secret_changed(k, None))
            self.secrets[key] = inf
            inf.start()
        for key in set(self.secrets) - wanted:
            t = asyncio.ensure_future(self.secrets.pop(key).stop())
            self._stopping.add(t)  # the loop holds tasks weakly
            t.add_done_callback(self._stopping.discard)
            self.tls_contexts.pop(key, None)
            self.tls_errors.pop(key, None)

    def _secret_changed(self, key: tuple[str, str], secret: dict[str, Any] | None) -> None:
        self.tls_contexts.pop(key, None)
        self.tls_errors.pop(key, None)
        if secret is None:
            self.tls_errors[key] = f'secret "{key[1]}" not found'
        else:
            try:
                self.tls_contexts[key] = secret_context(secret)
            except TLSSecretError as e:
                self.tls_errors[key] = str(e)
        for k, ing in self._served.items():
            if any(t.get("secretName") == key[1] for t in (ing.get("spec") or {}).get("tls") or []):
                self._reported.pop(k, None)
                self.queue.add(k)

    def tls_context_for(self, host: str) -> ssl.SSLContext | None:
        """The context of the first (oldest) TLS entry naming `host` exactly, else by wildcard."""
        self.table()
        for exact in (True, False):
            for pattern, key in self._tls_hosts:
                if (pattern == host) if exact else (pattern.startswith("*.") and host_matches(pattern, host)):
                    ctx = self.tls_contexts.get(key)
                    if ctx is not None:
                        return ctx
        return None

    def is_tls_host(self, host: str) -> bool:
        self.table()
        return any(host_matches(p, host) and key in self.tls_contexts for p, key in self._tls_hosts)

    # ---- status ---------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        self.table()
        ing = self._served.get(key)
        if ing is None:
            return  # not ours (any more), or deleted: another controller owns its status
        self._report(ing)
        lb = (ing.get("status") or {}).get("loadBalancer") or {}
        have = [e for e in lb.get("ingress") or []]
        ips = {e.get("ip") for e in have}
        missing = [a for a in self.config.publish_addresses if a not in ips]
        if not missing:
            return
        new = sorted(have + [{"ip": a} for a in missing], key=lambda e: (e.get("ip") or "", e.get("hostname") or ""))
        body = {**ing, "status": {**(ing.get("status") or {}), "loadBalancer": {**lb, "ingress": new}}}
        await self.client.update_status(ING, body, field_manager="pyk8s-ingress")

    def _report(self, ing: dict[str, Any]) -> None:
        """Warn once per generation about what this controller cannot serve."""
        md = ing["metadata"]
        mark = f"{md.get('uid', '')}/{md.get('generation', '')}"
        key = ingress_key(ing)
        if self._reported.get(key) == mark:
            return
        self._reported[key] = mark
        self.recorder.event(ing, "Normal", "Sync", "Scheduled for sync")
        spec = ing.get("spec") or {}
        backends = [spec.get("defaultBackend") or {}] + [
            p.get("backend") or {} for r in spec.get("rules") or [] for p in (r.get("http") or {}).get("paths") or []]
        for b in backends:
            if b.get("resource"):
                r = b["resource"]
                self.recorder.event(ing, "Warning", "UnsupportedBackend",
                                    f"resource backend {r.get('kind', '')}/{r.get('name', '')} is not supported "
                                    "by pyk8s-ingress: its paths answer 503")
        for t in spec.get("tls") or []:
            err = self.tls_errors.get((md.get("namespace", ""), t.get("secretName") or ""))
            if err:
                self.recorder.event(ing, "Warning", "InvalidTLSSecret",
                                    f"{t.get('secretName')}: {err}; the default certificate is served instead")

    async def _release_status(self) -> None:
        """On shutdown, take our addresses out of the statuses we wrote (ingress-nginx's
        --update-status-on-shutdown), so a stopped node is not advertised."""
        mine = set(self.config.publish_addresses)
        for ing in list(self._served.values()):
            lb = (ing.get("status") or {}).get("loadBalancer") or {}
            have = lb.get("ingress") or []
            keep = [e for e in have if e.get("ip") not in mine]
            if len(keep) == len(have):
                continue
            try:
                cur = await self.client.get(ING, ing["metadata"]["name"], ing["metadata"]["namespace"])
                lb = (cur.get("status") or {}).get("loadBalancer") or {}
                keep = [e for e in lb.get("ingress") or [] if e.get("ip") not in mine]
                cur["status"] = {**(cur.get("status") or {}), "loadBalancer": {**lb, "ingress": keep}}
                if not keep:
                    cur["status"]["loadBalancer"] = {}
                await self.client.update_status(ING, cur, field_manager="pyk8s-ingress")
            except Exception as e:  # noqa: BLE001 - best effort while stopping
                log.info("ingress %s: status not released: %s", ingress_key(ing), e)

    # ---- lifetime -------------------------------------------------------------------------
    async def start(self) -> None:
        from .proxy import IngressServer

        self.ingresses.add_handlers(self._ingress_event, self._ingress_event, self._ingress_event)
        self.classes.add_handlers(self._classes_changed, self._classes_changed, self._classes_changed)
        for inf in (self.services, self.slices):
            inf.add_handlers(self._changed, self._changed, self._changed)
        for inf in (self.ingresses, self.classes, self.services, self.slices):
            inf.start()
        await asyncio.gather(*(i.wait_synced(60) for i in (self.ingresses, self.classes, self.services, self.slices)))
        self.server = IngressServer(self)
        await self.server.start()
        self._workers = asyncio.ensure_future(run_workers(self.queue, self.sync, 2, self._sync_failed))
        for ing in self.ingresses.list():
            self.queue.add(ingress_key(ing))
        log.info("pyk8s-ingress: serving IngressClass controller %s on http %s, https %s", self.config.controller_name,
                 self.server.http_port, self.server.https_port)

    def _sync_failed(self, key: str, e: BaseException) -> None:
        log.info("ingress %s: status update failed (retrying): %s", key, e)

    async def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self.server is not None:
            await self.server.stop()
        self.queue.shutdown()
        if self._workers is not None:
            self._workers.cancel()
            await asyncio.gather(self._workers, return_exceptions=True)
        try:
            await asyncio.wait_for(self._release_status(), 3)
        except TimeoutError:
            pass
        await self.recorder.flush()
        for inf in [self.ingresses, self.classes, self.services, self.slices, *self.secrets.values()]:
            await inf.stop()
        if self.owns_client:
            await self.client.close()
