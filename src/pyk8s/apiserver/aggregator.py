"""APIService aggregation, as upstream's kube-aggregator proxy handler.

An APIService with `spec.service` hands every request under `/apis/<group>/<version>` to that
Service: the API server first authenticates and authorizes the request as its own (the
aggregator runs behind kube-apiserver's whole filter chain), then dials a ready endpoint of
the Service's EndpointSlices over TLS, verifying the serving certificate against
`spec.caBundle` for the name `<service>.<namespace>.svc` (or not, with
`insecureSkipTLSVerify`), presenting the front-proxy client certificate (front_proxy.py), and
naming the user in `X-Remote-User`/`X-Remote-Group`/`X-Remote-Extra-*`. Whatever such headers
the client sent, and its own credentials, are dropped first: only the front proxy speaks for a
user. Watches stream through and upgrades (exec-like) are spliced.

As upstream, an APIService whose `Available` condition is not True answers 503 `service
unavailable` (plain text, Go's http.Error); so does one whose Service has no ready endpoint.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import random
import ssl
from typing import Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from .front_proxy import FrontProxy, ensure_front_proxy
from .http1 import FastRequest
from .upgrade_splice import hostport, is_upgrade, splice

__all__ = ["Aggregator", "APIServiceRef", "EndpointError", "resolve_endpoint", "identity_headers"]

log = logging.getLogger("pyk8s.aggregator")

# hop-by-hop headers, the credentials the API server consumed, and identity headers a client may forge
_DROP_REQUEST = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                           "te", "trailer", "transfer-encoding", "upgrade", "host", "authorization",
                           "content-length", "impersonate-user", "impersonate-group", "impersonate-uid"))
_DROP_RESPONSE = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "te", "trailer",
                            "transfer-encoding", "upgrade", "content-length"))
_FORGEABLE_PREFIXES = ("x-remote-", "impersonate-extra-")
TIMEOUT = aiohttp.ClientTimeout(total=None, sock_connect=10.0)


class EndpointError(Exception):
    """Why a Service has no endpoint to dial: (availability reason, upstream's message)."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


class APIServiceRef:
    """What the proxy needs of one APIService with a Service behind it."""

    __slots__ = ("name", "group", "version", "namespace", "service", "port", "ca_bundle", "insecure", "available")

    def __init__(self, obj: dict[str, Any]) -> None:
        spec = obj.get("spec") or {}
        svc = spec.get("service") or {}
        self.name: str = obj["metadata"]["name"]
        self.group: str = spec.get("group") or ""
        self.version: str = spec.get("version") or ""
        self.namespace: str = svc.get("namespace") or ""
        self.service: str = svc.get("name") or ""
        self.port: int = int(svc.get("port") or 443)
        ca = spec.get("caBundle") or ""
        self.ca_bundle: bytes = base64.b64decode(ca) if isinstance(ca, str) and ca else b""
        self.insecure: bool = bool(spec.get("insecureSkipTLSVerify"))
        self.available = any(c.get("type") == "Available" and c.get("status") == "True"
                             for c in (obj.get("status") or {}).get("conditions") or [])

    @classmethod
    def insecure_marker(cls) -> APIServiceRef:
        return cls({"metadata": {"name": ""}, "spec": {"insecureSkipTLSVerify": True}})

    @property
    def server_name(self) -> str:
        return f"{self.service}.{self.namespace}.svc"


def identity_headers(user: Any) -> list[tuple[str, str]]:
    """upstream's SetAuthProxyHeaders: one X-Remote-Group per group, extra keys path-escaped."""
    out = [("X-Remote-User", user.name)]
    if getattr(user, "uid", ""):
        out.append(("X-Remote-Uid", user.uid))
    out += [("X-Remote-Group", g) for g in user.groups]
    for k, vs in (getattr(user, "extra", None) or {}).items():
        out += [(f"X-Remote-Extra-{quote(k, safe='')}", v) for v in vs]
    return out


def resolve_endpoint(service: dict[str, Any] | None, slices: list[dict[str, Any]], ref: APIServiceRef) -> tuple[str, int]:
    """A ready endpoint (address, port) of the Service's port ref.port, as upstream's
    ResolveEndpoint; EndpointError with the availability controller's reason otherwise."""
    where = f'service/{ref.service} in "{ref.namespace}"'
    if service is None:
        raise EndpointError("ServiceNotFound", f"{where} is not present")
    spec = service.get("spec") or {}
    if spec.get("type") == "ExternalName":
        return str(spec.get("externalName") or ""), ref.port
    port = next((p for p in spec.get("ports") or [] if int(p.get("port") or 0) == ref.port), None)
    if port is None:
        raise EndpointError("ServicePortError", f"{where} is not listening on port {ref.port}")
    if not slices:
        raise EndpointError("MissingEndpoints", f"cannot find endpoints for {where}")
    port_name = port.get("name") or ""
    candidates: list[tuple[str, int]] = []
    for sl in slices:
        sp = next((p for p in sl.get("ports") or [] if (p.get("name") or "") == port_name), None)
        if sp is None or not sp.get("port"):
            continue
        for ep in sl.get("endpoints") or []:
            if (ep.get("conditions") or {}).get("ready") is False:
                continue  # nil means ready, as upstream reads it
            for addr in (ep.get("addresses") or [])[:1]:
                candidates.append((str(addr), int(sp["port"])))
    if not candidates:
        raise EndpointError("MissingEndpoints", f'endpoints for {where} have no addresses with port name "{port_name}"')
    return random.choice(candidates)


def _plain_error(text: str, status: int) -> web.Response:
    """Go's http.Error, which upstream's proxyError writes."""
    return web.Response(status=status, text=text + "\n", content_type="text/plain", charset="utf-8",
                        headers={"X-Content-Type-Options": "nosniff"})


class Aggregator:
    """The proxy side (every API process); the availability controller lives in apiservice_availability.py."""

    def __init__(self, server: Any) -> None:
        self.server = server
        self.front: FrontProxy = ensure_front_proxy(server.pki.dir)
        self._contexts: dict[tuple[bytes, bool], ssl.SSLContext] = {}
        self._session: aiohttp.ClientSession | None = None
        self._remote: dict[tuple[str, str], APIServiceRef] = {}
        c = self._cache("apiregistration.k8s.io", "v1", "apiservices")
        if c is not None:
            c.listeners.append(self._index)
        self._index()

    # ---- what the caches say -------------------------------------------------------------
    def _cache(self, group: str, version: str, resource: str) -> Any:
        s = self.server
        r = s.registry.get(group, version, resource)
        return s.caches.caches.get(s.registry.storage_resource(r).key_prefix()) if r is not None else None

    def api_services(self) -> list[dict[str, Any]]:
        c = self._cache("apiregistration.k8s.io", "v1", "apiservices")
        return c.list(None) if c is not None else []

    def remote(self, group: str, version: str) -> APIServiceRef | None:
        """The APIService serving group/version through a Service, or None (served here): one dict
        lookup, as it runs for every request under /apis."""
        return self._remote.get((group, version))

    def remote_groups(self) -> set[str]:
        return {g for g, _ in self._remote}

    def _index(self, ce: Any = None) -> None:
        """Rebuild the (group, version) -> APIServiceRef table from the cache (few objects, rare writes)."""
        remote = {}
        for o in self.api_services():
            spec = o.get("spec") or {}
            if spec.get("service"):
                ref = APIServiceRef(o)
                remote[(ref.group, ref.version)] = ref
        self._remote = remote

    def endpoint(self, ref: APIServiceRef) -> tuple[str, int]:
        svcs = self._cache("", "v1", "services")
        key = f"{svcs.prefix}{ref.namespace}/{ref.service}" if svcs is not None else ""
        service = svcs.objects.get(key) if svcs is not None else None
        eps = self._cache("discovery.k8s.io", "v1", "endpointslices")
        slices = [s for s in (eps.list(ref.namespace) if eps is not None else [])
                  if ((s.get("metadata") or {}).get("labels") or {}).get("kubernetes.io/service-name") == ref.service]
        return resolve_endpoint(service, slices, ref)

    def context(self, ref: APIServiceRef) -> ssl.SSLContext:
        k = (ref.ca_bundle, ref.insecure)
        ctx = self._contexts.get(k)
        if ctx is None:
            if len(self._contexts) > 64:
                self._contexts.clear()
            ctx = self._contexts[k] = self.front.client_context(ref.ca_bundle, ref.insecure)
        return ctx

    def check_context(self) -> ssl.SSLContext:
        """The availability check's TLS: the front-proxy certificate, the server's not verified."""
        return self.context(APIServiceRef.insecure_marker())

    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            self._session = aiohttp.ClientSession(timeout=TIMEOUT, auto_decompress=False,
                                                  connector=aiohttp.TCPConnector(limit=0))
        return self._session

    async def close(self) -> None:
        if self._session is not None:
            await self._session.close()

    # ---- proxying ------------------------------------------------------------------------
    async def proxy(self, request: web.Request, user: Any, ref: APIServiceRef) -> web.StreamResponse:
        """Hand an authenticated and authorized request to ref's Service."""
        if not ref.available:
            return _plain_error("service unavailable", 503)
        try:
            host, port = self.endpoint(ref)
        except EndpointError:
            return _plain_error("service unavailable", 503)
        if asyncio.current_task() is None:
            await asyncio.sleep(0)  # http1.py runs a request's first step outside a Task; aiohttp's timers need one
        ctx = self.context(ref)
        server_name = None if ref.insecure else ref.server_name
        if is_upgrade(request.headers):
            return await self._upgrade(request, user, host, port, ctx, server_name)
        headers: list[tuple[str, str]] = [(k, v) for k, v in request.headers.items() if _keep(k)]
        headers += identity_headers(user)
        body = await request.read() if request.can_read_body else None
        url = f"https://{hostport(host, port)}{request.raw_path}"
        try:
            up = await self.session().request(request.method, url, headers=headers, data=body, ssl=ctx,
                                              server_hostname=server_name, allow_redirects=False)
        except (TimeoutError, aiohttp.ClientError, OSError, ssl.SSLError) as e:
            log.info("aggregated API %s: %s", ref.name, e)  # upstream's responder: the error, plain, 503
            return _plain_error(str(e) or type(e).__name__, 503)
        async with up:
            if type(request) is FastRequest:
                # a plain request answered by http1.py or the loopback (watches reach aiohttp or the
                # loopback's StreamRequest, upgrades aiohttp): the whole answer at once
                whole = web.Response(status=up.status, reason=up.reason, body=await up.read())
                for k, v in up.headers.items():
                    if k.lower() not in _DROP_RESPONSE:
                        whole.headers.add(k, v)
                return whole
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            for k, v in up.headers.items():
                if k.lower() not in _DROP_RESPONSE:
                    resp.headers.add(k, v)
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)  # a watch's events as they come
            except (TimeoutError, aiohttp.ClientError, OSError):
                return resp
            await resp.write_eof()
            return resp

    async def _upgrade(self, request: web.Request, user: Any, host: str, port: int, ctx: ssl.SSLContext,
                       server_name: str | None) -> web.StreamResponse:
        lines = [f"{request.method} {request.raw_path} HTTP/1.1", f"Host: {hostport(host, port)}"]
        lines += [f"{k}: {v}" for k, v in request.headers.items()
                  if k.lower() in ("connection", "upgrade") or _keep(k)]
        lines += [f"{k}: {v}" for k, v in identity_headers(user)]
        head = ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")

        async def refused(status: int, reason: str, headers: list[tuple[str, str]], body: bytes) -> web.StreamResponse:
            answer = web.Response(status=status, reason=reason, body=body)
            for k, v in headers:
                if k.lower() not in _DROP_RESPONSE:
                    answer.headers.add(k, v)
            answer.force_close()
            return answer

        return await splice(request, host, port, ctx, head, lambda k: k not in ("content-length", "transfer-encoding"),
                            refused, server_hostname=server_name)


def _keep(name: str) -> bool:
    low = name.lower()
    return low not in _DROP_REQUEST and not low.startswith(_FORGEABLE_PREFIXES)
