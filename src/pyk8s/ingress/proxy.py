"""The Ingress controller's data path: aiohttp servers on the node's HTTP and HTTPS ports that
route each request by the controller's table and stream it to a ready endpoint and back.

As ingress-nginx: the backend gets the request's Host, and X-Forwarded-For / X-Real-IP set to
the peer's address (a client's own X-Forwarded-* are replaced, not trusted), X-Forwarded-Proto,
-Host, -Port and -Scheme; hop-by-hop headers are dropped both ways; bodies stream in both
directions (no buffering, Content-Encoding passed through). Answers of our own: 404 from the
default backend when nothing matches, 503 when the backend has no ready endpoint (or is a
resource backend), 502 when no endpoint can be reached (up to 3 are tried), 504 when it does
not answer, 400 for a path we refuse to route (routing.normalize_path) and without exactly one
Host header (HTTP/1.1), 308 to https for a TLS host reached over http (ssl-redirect). aiohttp's parser
refuses malformed and ambiguous requests (Content-Length with Transfer-Encoding, repeated
Content-Length, header lines over 8190 bytes, more than 128 headers) with 400.

`python -m bench ingress` (client, proxy and backend on one 2-core machine shared with other
work, load about 12), against the same requests straight to the backend, three runs: p50 latency
0.35-0.43x of direct (640-850 against 270-330 us), small requests at 32 concurrent 0.34-0.38x
(570-680 against 1,470-1,780 req/s), downloads (19 and 200 MiB) 0.34-0.65x. Every request crosses two
aiohttp HTTP stacks here where the direct one crosses one.
"""

from __future__ import annotations

import asyncio
import logging
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

import aiohttp
from aiohttp import web

from .routing import BadPath, normalize_path

if TYPE_CHECKING:
    from .controller import IngressController

__all__ = ["IngressServer"]

log = logging.getLogger("pyk8s.ingress")

HOP_BY_HOP = frozenset(("connection", "keep-alive", "proxy-connection", "proxy-authenticate", "proxy-authorization",
                        "te", "trailer", "transfer-encoding", "upgrade"))
FORWARDED = frozenset(("x-forwarded-for", "x-forwarded-host", "x-forwarded-port", "x-forwarded-proto",
                       "x-forwarded-scheme", "x-scheme", "x-real-ip", "forwarded"))
# answered here (100 Continue), not passed on: the backend gets the body without waiting
NOT_FORWARDED = frozenset(("host", "content-length", "expect"))
MAX_HEAD_FIELD = 8190  # bytes per header line and request line (nginx's 8k large_client_header_buffers)
CONNECT_TIMEOUT = 5.0  # ingress-nginx's proxy-connect-timeout
READ_TIMEOUT = 60.0  # proxy-read-timeout
NEXT_UPSTREAM_TRIES = 3  # proxy-next-upstream-tries
NOT_FOUND_BODY = b"default backend - 404"
UNAVAILABLE_BODY = (b"<html>\r\n<head><title>503 Service Temporarily Unavailable</title></head>\r\n<body>\r\n"
                    b"<center><h1>503 Service Temporarily Unavailable</h1></center>\r\n</body>\r\n</html>\r\n")


def _plain(status: int, body: bytes, content_type: str = "text/plain") -> web.Response:
    return web.Response(status=status, body=body, content_type=content_type)


def request_host(request: web.BaseRequest) -> str:
    """The Host header without its port, lowercased ([v6] keeps its brackets)."""
    host = request.headers.get("Host", "").strip().lower()
    if host.startswith("["):
        return host[:host.find("]") + 1] if "]" in host else host
    return host.rsplit(":", 1)[0] if ":" in host else host


def _request_headers(request: web.BaseRequest, secure: bool, local_port: int) -> dict[str, str]:
    drop = HOP_BY_HOP | FORWARDED | NOT_FORWARDED | {
        t.strip().lower() for t in request.headers.get("Connection", "").split(",")}
    out: dict[str, str] = {}
    for k, v in request.headers.items():
        if k.lower() not in drop:
            out[k] = f"{out[k]}, {v}" if k in out else v
    peer = request.remote or ""
    proto = "https" if secure else "http"
    out.update({"Host": request.headers.get("Host", ""), "X-Real-IP": peer, "X-Forwarded-For": peer,
                "X-Forwarded-Host": request.headers.get("Host", ""), "X-Forwarded-Port": str(local_port),
                "X-Forwarded-Proto": proto, "X-Forwarded-Scheme": proto, "X-Scheme": proto})
    if request.headers.get("Content-Length") is not None:
        out["Content-Length"] = request.headers["Content-Length"]
    return out


class IngressServer:
    def __init__(self, controller: IngressController) -> None:
        self.controller = controller
        self.http_port = 0
        self.https_port = 0
        self._runner: web.ServerRunner | None = None
        self._session: aiohttp.ClientSession | None = None

    async def start(self) -> None:
        cfg = self.controller.config
        self._session = aiohttp.ClientSession(
            connector=aiohttp.TCPConnector(limit=0, limit_per_host=0, keepalive_timeout=60),
            auto_decompress=False, cookie_jar=aiohttp.DummyCookieJar(),
            timeout=aiohttp.ClientTimeout(total=None, connect=CONNECT_TIMEOUT, sock_read=READ_TIMEOUT))
        server = web.Server(self.handle, max_line_size=MAX_HEAD_FIELD, max_field_size=MAX_HEAD_FIELD,
                            keepalive_timeout=75.0)
        self._runner = web.ServerRunner(server, handle_signals=False, shutdown_timeout=2.0)
        await self._runner.setup()
        http = web.TCPSite(self._runner, cfg.bind_address, cfg.http_port, reuse_address=True)
        https = web.TCPSite(self._runner, cfg.bind_address, cfg.https_port, ssl_context=self.controller.sni.default,
                            reuse_address=True)
        try:
            await http.start()
            await https.start()
        except BaseException:
            await self.stop()
            raise
        self.http_port = _bound_port(http)
        self.https_port = _bound_port(https)

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._session is not None:
            await self._session.close()
            self._session = None

    async def handle(self, request: web.BaseRequest) -> web.StreamResponse:
        raw_path, _, query = request.raw_path.partition("?")
        try:
            path = normalize_path(raw_path)
        except BadPath as e:
            return _plain(400, f"400 Bad Request: {e}".encode())
        hosts = request.headers.getall("Host", [])
        if len(hosts) > 1 or (not hosts and request.version >= (1, 1)):
            # RFC 9112 3.2: exactly one Host in HTTP/1.1; two could route one way and be read another
            return _plain(400, b"400 Bad Request: exactly one Host header is required")
        host = request_host(request)
        secure = request.secure
        ctrl = self.controller
        backend = ctrl.table().match(host, path)
        if backend is None:
            return _plain(404, NOT_FOUND_BODY)
        if not secure and ctrl.config.ssl_redirect and ctrl.is_tls_host(host):
            port = "" if self.https_port == 443 else f":{self.https_port}"
            loc = f"https://{host}{port}{request.raw_path}"
            return web.Response(status=308, headers={"Location": loc}, body=b"", content_type="text/html")
        if backend.resource:
            return _plain(503, UNAVAILABLE_BODY, "text/html")
        endpoints = ctrl.candidates(backend)
        if not endpoints:
            return _plain(503, UNAVAILABLE_BODY, "text/html")
        sent = raw_path if path == raw_path else quote(path, safe="/:@!$&()*+,;=~-._")
        suffix = sent + (f"?{query}" if query else "")
        local_port = self.https_port if secure else self.http_port
        headers = _request_headers(request, secure, local_port)
        if request.headers.get("Upgrade", "").lower() == "websocket":
            return await self._websocket(request, f"http://{endpoints[0][0]}:{endpoints[0][1]}{suffix}", headers)
        body = request.content if request.body_exists else None
        if body is not None and request.headers.get("Expect", "").lower() == "100-continue":
            await request.writer.write(b"HTTP/1.1 100 Continue\r\n\r\n")  # the client may send its body now
        assert self._session is not None
        tries = endpoints[:NEXT_UPSTREAM_TRIES]
        for i, (addr, ep_port) in enumerate(tries):
            target = f"http://{addr}:{ep_port}{suffix}"
            try:
                up = await self._session.request(request.method, target, headers=headers, data=body,
                                                 allow_redirects=False,
                                                 skip_auto_headers=("User-Agent", "Accept", "Accept-Encoding"))
                break
            except (aiohttp.ClientConnectorError, aiohttp.ConnectionTimeoutError) as e:
                # nothing reached that endpoint: the next one may take the request (ingress-nginx's
                # proxy-next-upstream "error timeout", 3 tries)
                log.info("ingress %s/%s: %s: %s", backend.namespace, backend.ingress, target, e)
                if i + 1 == len(tries):
                    return _plain(504 if isinstance(e, TimeoutError) else 502,
                                  b"504 Gateway Time-out" if isinstance(e, TimeoutError) else b"502 Bad Gateway")
            except TimeoutError:
                return _plain(504, b"504 Gateway Time-out")
            except (aiohttp.ClientError, OSError) as e:
                log.info("ingress %s/%s: %s %s: %s", backend.namespace, backend.ingress, request.method, target, e)
                return _plain(502, b"502 Bad Gateway")
        async with up:
            resp = web.StreamResponse(status=up.status, reason=up.reason)
            drop = HOP_BY_HOP | {t.strip().lower() for t in up.headers.get("Connection", "").split(",")}
            for k, v in up.headers.items():
                if k.lower() not in drop:
                    resp.headers.add(k, v)
            await resp.prepare(request)
            try:
                async for chunk in up.content.iter_any():
                    await resp.write(chunk)
                await resp.write_eof()
            except (aiohttp.ClientError, OSError, TimeoutError) as e:
                # the answer has begun: the client can only learn of the failure by the connection closing
                log.info("ingress %s/%s: %s: %s", backend.namespace, backend.ingress, target, e)
                if request.transport is not None:
                    request.transport.close()
            return resp

    async def _websocket(self, request: web.BaseRequest, target: str, headers: dict[str, str]) -> web.StreamResponse:
        """A WebSocket upgrade, relayed message by message (both sides are aiohttp's)."""
        assert self._session is not None
        protocols = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
        for h in ("Sec-WebSocket-Key", "Sec-WebSocket-Version", "Sec-WebSocket-Protocol", "Sec-WebSocket-Extensions"):
            headers.pop(h, None)
        try:
            up = await self._session.ws_connect(target, headers=headers, protocols=protocols, autoping=False)
        except (TimeoutError, aiohttp.ClientError, OSError):
            return _plain(502, b"502 Bad Gateway")
        ws = web.WebSocketResponse(protocols=[up.protocol] if up.protocol else (), autoping=False)
        await ws.prepare(request)

        async def pump(src: Any, dst: Any) -> None:
            async for msg in src:
                if msg.type == aiohttp.WSMsgType.TEXT:
                    await dst.send_str(msg.data)
                elif msg.type == aiohttp.WSMsgType.BINARY:
                    await dst.send_bytes(msg.data)
                elif msg.type == aiohttp.WSMsgType.PING:
                    await dst.ping(msg.data)
                elif msg.type == aiohttp.WSMsgType.PONG:
                    await dst.pong(msg.data)
                else:
                    break
            await dst.close()

        async with up:
            await asyncio.gather(pump(ws, up), pump(up, ws), return_exceptions=True)
        return ws


def _bound_port(site: web.TCPSite) -> int:
    server = site._server  # asyncio.Server: the port the kernel chose for port 0
    assert server is not None
    return int(server.sockets[0].getsockname()[1])  # type: ignore[attr-defined]
