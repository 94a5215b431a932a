"""A typed-less REST client for the Kubernetes API (what client-go's dynamic client is to Go).

Every pyk8s component talks to the API through this: JSON over HTTPS keep-alive
connections, errors as StatusError with the server's Status, watches as async iterators.
"""

from __future__ import annotations

import asyncio
import logging
import ssl
import time
from collections.abc import AsyncIterator
from typing import Any
from urllib.parse import quote, urlencode

import aiohttp
import orjson

from ..api.errors import StatusError
from .http1 import ConnectionPool
from .warning_handler import log_warnings

log = logging.getLogger("pyk8s.client")

__all__ = ["Client", "GVR", "resource_path", "obj_key"]

GVR = tuple[str, str, str]  # (group, version, plural)


def resource_path(gvr: GVR, namespace: str | None = None, name: str | None = None, sub: str | None = None) -> str:
    group, version, plural = gvr
    base = f"/api/{version}" if not group else f"/apis/{group}/{version}"
    if namespace:
        base += f"/namespaces/{quote(namespace, safe='')}"
    base += f"/{plural}"
    if name:
        base += f"/{quote(name, safe='')}"
    if sub:
        base += f"/{sub}"
    return base


def obj_key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    ns = md.get("namespace")
    return f"{ns}/{md.get('name')}" if ns else md.get("name", "")


# answers that say "this API server cannot serve now" (another may): try the next one
UNAVAILABLE = (502, 503, 504)
# as client-go: a 429 (API Priority and Fairness refused the request) is sent again after the
# server's Retry-After, up to this many times, before the error reaches the caller
MAX_THROTTLED_RETRIES = 10


class Client:
    """One HTTP connection pool to an API server.

    `server` may name several API servers of one cluster (a list, or URLs separated by commas):
    requests go to one of them and move on to the next when it cannot be reached or answers
    502/503/504 (as a client behind a load balancer would see it). Reads are retried on the next
    server; writes only when the request cannot have reached the failed server (connection
    refused), so a create is never sent twice. Watches end with an error when their server
    goes away; the caller (the informer) resumes from its last resourceVersion, on the next server.
    """

    def __init__(
        self,
        server: str | list[str],
        ssl_context: ssl.SSLContext | None = None,
        token: str | None = None,
        user_agent: str = "pyk8s",
        pool_size: int = 100,
        timeout: float = 30.0,
        request_connections: int | None = None,
    ) -> None:
        urls = server.split(",") if isinstance(server, str) else list(server)
        self.servers = [u.strip().rstrip("/") for u in urls if u.strip()]
        if not self.servers:
            raise ValueError("no API server URL given")
        self._current = 0
        self.ssl_context = ssl_context
        self.headers = {"User-Agent": user_agent, "Accept": "application/json"}
        if token:
            self.headers["Authorization"] = f"Bearer {token}"
        self.pool_size = pool_size
        # request/response calls' connections (default pool_size; watches and streams stay on pool_size): a bound
        # keeps a burst from opening a TLS connection per concurrent call, each a handshake on both sides
        self.request_connections = pool_size if request_connections is None else request_connections
        self.timeout = timeout
        self._session: aiohttp.ClientSession | None = None  # watches and other streams
        self._pools: dict[str, ConnectionPool] = {}  # request/response calls, per server
        self.metrics: Any = None  # the component's RestClientMetrics (metrics/rest_client.py)

    @property
    def server(self) -> str:
        """The API server requests go to now."""
        return self.servers[self._current]

    def failover(self, failed: str) -> bool:
        """`failed` could not serve: move to the next server (unless another caller already has).
        False when there is no other server to try."""
        if len(self.servers) == 1:
            return False
        if self.servers[self._current] == failed:
            self._current = (self._current + 1) % len(self.servers)
            log.info("API server %s unavailable; using %s", failed, self.server)
        return True

    @classmethod
    def from_kubeconfig(cls, path: str, context: str | None = None, user_agent: str = "pyk8s", **kw: Any) -> Client:
        from .kubeconfig import load_kubeconfig

        kc = load_kubeconfig(path, context)
        return cls(kc.server, kc.ssl_client_context(), getattr(kc, "token", None), user_agent=user_agent, **kw)

    @property
    def session(self) -> aiohttp.ClientSession:
        if self._session is None or self._session.closed:
            conn = aiohttp.TCPConnector(ssl=self.ssl_context if self.ssl_context is not None else False,
                                        limit=self.pool_size, ttl_dns_cache=300)
            self._session = aiohttp.ClientSession(connector=conn, headers=self.headers,
                                                  json_serialize=lambda o: orjson.dumps(o).decode())
        return self._session

    def _pool(self, server: str) -> ConnectionPool:
        pool = self._pools.get(server)
        if pool is None:
            pool = self._pools[server] = ConnectionPool(server, self.ssl_context, self.headers,
                                                        self.request_connections)
        return pool

    def use_pool(self, server: str, pool: Any) -> None:
        """Send request/response calls for `server` through `pool`, which has ConnectionPool's
        request() and close(): the API server's in-process loopback (apiserver/loopback.py)."""
        self._pools[server.rstrip("/")] = pool

    async def reset_connections(self) -> None:
        """Drop every connection so that new ones present ssl_context's current certificate (rotation): idle
        ones close now, streams (watches) end and are re-established by their callers, as client-go does."""
        for pool in [p for p in self._pools.values() if isinstance(p, ConnectionPool)]:
            pool.close()  # its connections still in use are dropped with it
        self._pools = {k: v for k, v in self._pools.items() if not isinstance(v, ConnectionPool)}
        if self._session is not None:
            session, self._session = self._session, None
            await session.close()

    async def close(self) -> None:
        for pool in self._pools.values():
            pool.close()
        self._pools.clear()
        if self._session is not None:
            await self._session.close()
            self._session = None

    # ---- plain requests -------------------------------------------------------------------
    async def request(self, method: str, path: str, body: Any = None, params: dict[str, Any] | None = None,
                      content_type: str = "application/json", retries: int = 3) -> Any:
        query = ""
        if params:
            query = "?" + urlencode({k: v for k, v in params.items() if v is not None})
        data = None if body is None else (body if isinstance(body, bytes) else orjson.dumps(body))
        delay = 0.2
        several = len(self.servers) > 1
        # with several servers, every one gets `retries + 1` chances before the error surfaces
        attempts = (retries + 1) * len(self.servers)
        for attempt in range(attempts):
            server = self.server
            try:
                status, raw = await self._send(server, method, path + query, data, content_type)
                if status >= 400:
                    if several and status in UNAVAILABLE and attempt < attempts - 1:
                        self.failover(server)
                        if method == "GET":
                            continue
                    raise _status_error(status, raw)
                return orjson.loads(raw) if raw else None
            except (TimeoutError, aiohttp.ClientConnectionError) as e:
                if attempt == attempts - 1:
                    raise StatusError(503, "ServiceUnavailable", f"cannot reach the API server: {e}") from e
                if several:
                    self.failover(server)
                    # a write that may have reached the failed server is not replayed on another:
                    # the caller sees the error and re-reads (a second create could duplicate a pod)
                    if method not in ("GET", "HEAD") and not isinstance(e, aiohttp.ClientConnectorError):
                        raise StatusError(503, "ServiceUnavailable", f"cannot reach the API server: {e}") from e
                    if (attempt + 1) % len(self.servers):
                        continue  # the next server at once; back off once all were tried
                await asyncio.sleep(delay)
                delay = min(delay * 2, 2.0)
        raise AssertionError("unreachable")

    async def _send(self, server: str, method: str, target: str, data: bytes | None,
                    content_type: str) -> tuple[int, bytes]:
        """One request; a 429 that says when to come back (the Status' retryAfterSeconds, upstream's
        Retry-After) is sent again then, as client-go does: the server refused it before running
        it, so a write is safe to resend. Other 429s (an eviction a PodDisruptionBudget forbids) are
        answers, not retried."""
        for _ in range(MAX_THROTTLED_RETRIES):
            t0 = time.perf_counter()
            status, raw = await self._pool(server).request(method, target, data, content_type, self.timeout)
            if self.metrics is not None:  # rest_client_* (metrics/rest_client.py)
                self.metrics.observe(server, method, status, time.perf_counter() - t0)
            wait = _retry_after(raw) if status == 429 else None
            if wait is None:
                return status, raw
            await asyncio.sleep(wait)
        return await self._pool(server).request(method, target, data, content_type, self.timeout)  # type: ignore[no-any-return]

    async def get(self, gvr: GVR, name: str, namespace: str | None = None, sub: str | None = None) -> dict[str, Any]:
        return await self.request("GET", resource_path(gvr, namespace, name, sub))

    async def get_or_none(self, gvr: GVR, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        try:
            return await self.get(gvr, name, namespace)
        except StatusError as e:
            if e.code == 404:
                return None
            raise

    async def create_or_get(self, gvr: GVR, obj: dict[str, Any],
                            namespace: str | None = None) -> tuple[dict[str, Any], bool]:
        """(the object, True) when this call created it; (the stored one, False) when it existed."""
        try:
            return await self.create(gvr, obj, namespace), True
        except StatusError as e:
            if e.code != 409:
                raise
        return await self.get(gvr, obj["metadata"]["name"], namespace), False

    async def list(self, gvr: GVR, namespace: str | None = None, **params: Any) -> dict[str, Any]:
        return await self.request("GET", resource_path(gvr, namespace), params=_params(params))

    async def create(self, gvr: GVR, obj: dict[str, Any], namespace: str | None = None,
                     field_manager: str | None = None) -> dict[str, Any]:
        ns = namespace or (obj.get("metadata") or {}).get("namespace")
        return await self.request("POST", resource_path(gvr, ns), obj, params={"fieldManager": field_manager})

    async def update(self, gvr: GVR, obj: dict[str, Any], sub: str | None = None,
                     field_manager: str | None = None) -> dict[str, Any]:
        md = obj["metadata"]
        return await self.request("PUT", resource_path(gvr, md.get("namespace"), md["name"], sub), obj,
                                  params={"fieldManager": field_manager})

    async def update_status(self, gvr: GVR, obj: dict[str, Any], field_manager: str | None = None) -> dict[str, Any]:
        return await self.update(gvr, obj, "status", field_manager)

    async def patch(self, gvr: GVR, name: str, patch: Any, namespace: str | None = None, sub: str | None = None,
                    patch_type: str = "merge", field_manager: str | None = None, force: bool | None = None) -> dict[str, Any]:
        ct = {"merge": "application/merge-patch+json", "json": "application/json-patch+json",
              "strategic": "application/strategic-merge-patch+json", "apply": "application/apply-patch+yaml"}[patch_type]
        return await self.request("PATCH", resource_path(gvr, namespace, name, sub), patch, content_type=ct,
                                  params={"fieldManager": field_manager, "force": None if force is None else str(force).lower()})

    async def delete(self, gvr: GVR, name: str, namespace: str | None = None, grace_period: int | None = None,
                     propagation: str | None = None, preconditions: dict[str, str] | None = None) -> Any:
        body: dict[str, Any] = {}
        if grace_period is not None:
            body["gracePeriodSeconds"] = grace_period
        if propagation:
            body["propagationPolicy"] = propagation
        if preconditions:
            body["preconditions"] = preconditions
        return await self.request("DELETE", resource_path(gvr, namespace, name), body or None)

    async def delete_ignore_missing(self, gvr: GVR, name: str, namespace: str | None = None, **kw: Any) -> Any:
        try:
            return await self.delete(gvr, name, namespace, **kw)
        except StatusError as e:
            if e.code != 404:
                raise
            return None

    # ---- watch ----------------------------------------------------------------------------
    async def watch(self, gvr: GVR, namespace: str | None = None, resource_version: str | None = None,
                    timeout_seconds: int = 300, **params: Any) -> AsyncIterator[dict[str, Any]]:
        """Watch events as dicts ({"type", "object"}); ends when the server closes the stream."""
        q = _params(params)
        q.update(watch="true", allowWatchBookmarks="true", timeoutSeconds=str(timeout_seconds))
        if resource_version is not None:
            q["resourceVersion"] = resource_version
        server = self.server
        target = resource_path(gvr, namespace) + "?" + urlencode(q)
        local = getattr(self._pools.get(server), "stream", None)  # the server's in-process loopback
        t0 = time.perf_counter()
        served = await local("GET", target) if local is not None else None
        if served is not None:
            status, refusal, chunks, warning_values = served
            if self.metrics is not None:  # a watch counts once its answer's status is known, as client-go's
                self.metrics.observe(server, "GET", status, time.perf_counter() - t0)
            log_warnings(warning_values)
            if status >= 400:
                raise _status_error(status, refusal)
            async for ev in _events(chunks):
                yield ev
            return
        url = server + target
        try:
            async with self.session.get(url, timeout=aiohttp.ClientTimeout(total=None,
                                                                           sock_read=timeout_seconds + 30)) as r:
                log_warnings(r.headers.getall("Warning", ()))
                if self.metrics is not None:
                    self.metrics.observe(server, "GET", r.status, time.perf_counter() - t0)
                if r.status >= 400:
                    if r.status in UNAVAILABLE:
                        self.failover(server)
                    raise _status_error(r.status, await r.read())
                async for ev in _events(r.content.iter_any()):
                    yield ev
        except (TimeoutError, aiohttp.ClientConnectionError, aiohttp.ClientPayloadError):
            self.failover(server)  # the caller resumes from its last resourceVersion, on the next server
            raise


async def _events(chunks: AsyncIterator[bytes]) -> AsyncIterator[dict[str, Any]]:
    """Watch events from a stream's bytes, one JSON object per line."""
    buf = b""
    async for chunk in chunks:
        if b"\n" not in chunk:
            buf += chunk
            continue
        # One split per chunk: splitting off one line at a time copies the rest each time.
        lines = (buf + chunk).split(b"\n")
        buf = lines.pop()
        for line in lines:
            if line.strip():
                yield orjson.loads(line)


def _params(params: dict[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in params.items():
        if v is None:
            continue
        key = {"label_selector": "labelSelector", "field_selector": "fieldSelector", "limit": "limit",
               "resource_version": "resourceVersion", "continue_": "continue"}.get(k, k)
        out[key] = str(v)
    return out


def _retry_after(raw: bytes) -> float | None:
    """Seconds a 429's Status asks to wait (details.retryAfterSeconds, at most 60); None: it does not say."""
    try:
        seconds = (orjson.loads(raw).get("details") or {}).get("retryAfterSeconds")
    except (orjson.JSONDecodeError, AttributeError):
        return None
    return float(min(max(seconds, 1), 60)) if isinstance(seconds, int) and seconds > 0 else None


def _status_error(code: int, raw: bytes) -> StatusError:
    try:
        st = orjson.loads(raw)
        return StatusError(st.get("code", code), st.get("reason", ""), st.get("message", ""), st.get("details"))
    except Exception:
        return StatusError(code, "Unknown", raw.decode(errors="replace")[:500])
