"""The metrics server: an aggregated API server for metrics.k8s.io/v1beta1 (docs/metrics-server.md).

It reads kube-system/extension-apiserver-authentication for whom to trust (auth.py), watches
nodes and pods, scrapes every kubelet each `metric_resolution` seconds (scraper.py), keeps the
last two points (storage.py) and serves NodeMetrics and PodMetrics over HTTPS (api.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import ssl
import tempfile
from dataclasses import dataclass
from typing import Any

import orjson
from aiohttp import web

from ..api import errors as E
from ..client.informer import Informer
from ..tlsdefaults import harden_server_context
from . import api
from .auth import CONFIGMAP, Attributes, DelegatedAuth, RequestHeaderConfig
from .scraper import Scraper
from .storage import MetricsStorage

__all__ = ["MetricsServerOptions", "MetricsServer"]

log = logging.getLogger("pyk8s.metrics-server")

_PREFIX = f"/apis/{api.GROUP}/{api.VERSION}"


@dataclass
class MetricsServerOptions:
    bind_address: str = "0.0.0.0"
    secure_port: int = 4443  # metrics-server's former default (its pod's 10250 is the kubelet's port on a host)
    metric_resolution: float = 15.0  # --metric-resolution
    kubelet_request_timeout: float = 10.0


def _status_response(e: E.StatusError) -> web.Response:
    return web.Response(body=orjson.dumps(e.status()), status=e.code, content_type="application/json",
                        headers=dict(e.headers))


# What the informers keep: the answers read a pod's labels, a node's labels and its kubelet's
# address and port (as upstream's metrics-server holds pods as metadata only).
_KEPT_METADATA = ("name", "namespace", "uid", "resourceVersion", "labels")


def _metadata_only(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata") or {}
    return {"metadata": {k: md[k] for k in _KEPT_METADATA if k in md}}


def _node_view(obj: dict[str, Any]) -> dict[str, Any]:
    out = _metadata_only(obj)
    st = obj.get("status") or {}
    out["status"] = {k: st[k] for k in ("addresses", "daemonEndpoints") if k in st}
    return out


class MetricsServer:
    def __init__(self, client: Any, options: MetricsServerOptions, serving_cert_pem: bytes, serving_key_pem: bytes,
                 kubelet_ssl: ssl.SSLContext, kubelet_token: str | None = None) -> None:
        self.client = client
        self.options = options
        self.storage = MetricsStorage()
        self.nodes = Informer(client, ("", "v1", "nodes"), transform=_node_view)
        self.pods = Informer(client, ("", "v1", "pods"), transform=_metadata_only)
        self.metrics = api.MetricsAPI(self.storage, self.nodes, self.pods)
        self.scraper = Scraper(kubelet_ssl, kubelet_token, min(options.kubelet_request_timeout,
                                                               options.metric_resolution))
        self._cert, self._key = serving_cert_pem, serving_key_pem
        self.auth: DelegatedAuth | None = None
        self.port = options.secure_port
        self._runner: web.AppRunner | None = None
        self._tasks: list[asyncio.Task[Any]] = []

    async def _requestheader(self) -> RequestHeaderConfig:
        """The ConfigMap the API server publishes; waited for, as upstream's delegated authn requires it."""
        while True:
            cm = await self.client.get_or_none(("", "v1", "configmaps"), CONFIGMAP[1], CONFIGMAP[0])
            if cm is not None and (cm.get("data") or {}).get("requestheader-client-ca-file"):
                return RequestHeaderConfig.from_configmap(cm)
            await asyncio.sleep(0.5)

    def _ssl(self, cfg: RequestHeaderConfig) -> ssl.SSLContext:
        ctx = harden_server_context(ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER))
        with tempfile.TemporaryDirectory(prefix="pyk8s-metrics-tls-") as d:  # 0700, gone once loaded
            crt, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
            fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "wb") as f:
                f.write(self._key)
            with open(crt, "wb") as f:
                f.write(self._cert)
            ctx.load_cert_chain(crt, key)
        ctx.load_verify_locations(cadata=cfg.ca_pem())
        ctx.verify_mode = ssl.CERT_OPTIONAL  # tokens and anonymous requests come without one
        return ctx

    async def start(self) -> None:
        cfg = await asyncio.wait_for(self._requestheader(), 60)
        self.auth = DelegatedAuth(self.client, cfg)
        self.nodes.start()
        self.pods.start()
        app = web.Application()
        app.router.add_route("*", "/{tail:.*}", self._entry)
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.options.bind_address, self.options.secure_port,
                           ssl_context=self._ssl(cfg), reuse_address=True)
        await site.start()
        sockets = getattr(site._server, "sockets", None)
        if sockets:
            self.port = sockets[0].getsockname()[1]
        self._tasks.append(asyncio.create_task(self._scrape_loop(), name="metrics-scrape"))
        log.info("metrics server listening on %s:%d", self.options.bind_address, self.port)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await self.nodes.stop()
        await self.pods.stop()
        await self.scraper.close()
        if self._runner is not None:
            await self._runner.cleanup()

    async def _scrape_loop(self) -> None:
        loop = asyncio.get_running_loop()
        with contextlib.suppress(TimeoutError):
            await self.nodes.wait_synced(30)
        while True:
            started = loop.time()
            try:
                self.storage.store(await self.scraper.scrape(self.nodes.list()))
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("scrape round failed")
            await asyncio.sleep(max(0.0, self.options.metric_resolution - (loop.time() - started)))

    # ---- HTTP ------------------------------------------------------------------------------
    async def _entry(self, request: web.Request) -> web.StreamResponse:
        try:
            return await self._serve(request)
        except E.StatusError as e:
            return _status_response(e)

    async def _serve(self, request: web.Request) -> web.StreamResponse:
        assert self.auth is not None
        sslobj = request.transport.get_extra_info("ssl_object") if request.transport is not None else None
        peer = sslobj.getpeercert(binary_form=True) if sslobj is not None else None
        try:
            user = await self.auth.authenticate(request, peer)
        except E.StatusError as e:
            log.warning("TokenReview failed: %s", e.message)
            user = None
        if user is None:
            raise E.new_unauthorized()
        path = request.path.rstrip("/") or "/"
        if request.method not in ("GET", "HEAD"):
            raise E.StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                         "resource", {})
        parts = path[len(_PREFIX):].strip("/").split("/") if path.startswith(_PREFIX + "/") else []
        if not parts:
            await self.auth.authorize(user, Attributes(verb="get", path=path))
            if path in ("/healthz", "/livez", "/readyz"):
                return web.Response(text="ok")
            doc = {"/apis": {"kind": "APIGroupList", "apiVersion": "v1", "groups": [api.api_group()]},
                   f"/apis/{api.GROUP}": api.api_group(), _PREFIX: api.resource_list()}.get(path)
            if doc is None:
                raise E.new_not_found("", "")
            return web.json_response(doc)
        ns: str | None = None
        if parts[0] == "namespaces" and len(parts) >= 3:
            ns, parts = parts[1], parts[2:]
        resource, name = parts[0], (parts[1] if len(parts) == 2 else "")
        if len(parts) > 2 or resource not in ("nodes", "pods") or (resource == "nodes" and ns is not None) \
                or (resource == "pods" and name and ns is None):
            raise E.new_not_found("", "")
        verb = "get" if name else ("watch" if request.query.get("watch") in ("1", "true") else "list")
        await self.auth.authorize(user, Attributes(verb=verb, group=api.GROUP, resource=resource, namespace=ns or "",
                                                   name=name))
        if verb == "watch":
            raise E.StatusError(405, "MethodNotAllowed", "the server does not allow this method on the requested "
                                                         "resource", {})
        return self.metrics.serve(request, ns, resource, name)
