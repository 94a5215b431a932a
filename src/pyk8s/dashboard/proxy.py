"""/api/... and /apis/... passed to the API server with the session's credentials.

Bodies stream both ways chunk by chunk (a watch or a followed log reaches the page as the API
writes it); the API's answers, Status errors included, pass through unchanged, so the page shows
RBAC's own message. WebSocket upgrades (pods/exec and attach with the channel.k8s.io
subprotocols, as kubectl >= 1.30 speaks) are relayed frame by frame.

Only a few request headers go on: the browser's cookies stay here, and Authorization or
Impersonate-* headers from the page would let it act as someone else.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging

import aiohttp
from aiohttp import web

from .errors import status_response
from .session import Session
from .upstream import Upstream

__all__ = ["proxy_request", "FORWARD_REQUEST_HEADERS"]

log = logging.getLogger("pyk8s.dashboard")

FORWARD_REQUEST_HEADERS = ("Accept", "Content-Type", "If-Match", "If-None-Match")
FORWARD_RESPONSE_HEADERS = ("Content-Type", "Warning", "Retry-After", "Audit-Id", "Content-Encoding")
# the exec/attach subprotocols of the API server (kubectl's order of preference)
CHANNEL_PROTOCOLS = ("v5.channel.k8s.io", "v4.channel.k8s.io", "v4.base64.channel.k8s.io",
                     "channel.k8s.io", "base64.channel.k8s.io")


async def proxy_request(request: web.Request, upstream: Upstream, session: Session) -> web.StreamResponse:
    if request.headers.get("Upgrade", "").lower() == "websocket":
        return await _proxy_websocket(request, upstream, session)
    assert upstream.client is not None
    headers = {k: v for k in FORWARD_REQUEST_HEADERS if (v := request.headers.get(k)) is not None}
    headers.update(upstream.credentials(session))
    body = request.content if request.body_exists else None
    out: web.StreamResponse | None = None
    try:
        async with upstream.client.request(request.method, upstream.url(request.raw_path), headers=headers,
                                           data=body, allow_redirects=False,
                                           server_hostname=upstream.server_hostname) as resp:
            out = web.StreamResponse(status=resp.status, reason=resp.reason)
            for k in FORWARD_RESPONSE_HEADERS:
                if (v := resp.headers.get(k)) is not None:
                    out.headers[k] = v
            out.headers["Cache-Control"] = "no-store"
            if resp.headers.get("Transfer-Encoding", "").lower() != "chunked" and resp.content_length is not None:
                out.content_length = resp.content_length
            await out.prepare(request)
            async for chunk in resp.content.iter_any():
                await out.write(chunk)
            await out.write_eof()
            return out
    except (TimeoutError, ConnectionResetError, aiohttp.ClientConnectionError) as e:
        if out is not None and out.prepared:
            # the page went away, or the API ended the stream: either way this response is over
            # (a watch's page reconnects from its last resourceVersion)
            log.debug("stream %s ended: %s", request.path, e)
            return out
        return status_response(503, "ServiceUnavailable", f"the API server cannot be reached: {e}")


async def _proxy_websocket(request: web.Request, upstream: Upstream, session: Session) -> web.StreamResponse:
    assert upstream.client is not None
    offered = [p.strip() for p in request.headers.get("Sec-WebSocket-Protocol", "").split(",") if p.strip()]
    protocols = [p for p in offered if p in CHANNEL_PROTOCOLS]
    try:
        api_ws = await upstream.client.ws_connect(upstream.url(request.raw_path), protocols=protocols,
                                                  headers=upstream.credentials(session), autoping=True,
                                                  max_msg_size=0, server_hostname=upstream.server_hostname)
    except aiohttp.WSServerHandshakeError as e:
        # the API's refusal (403 from RBAC, 404, 400): its status and text, as the page can show them
        return status_response(e.status, "Forbidden" if e.status == 403 else "BadRequest",
                               f"the API server refused the stream: {e.message}")
    except (TimeoutError, aiohttp.ClientConnectionError) as e:
        return status_response(503, "ServiceUnavailable", f"the API server cannot be reached: {e}")
    ws = web.WebSocketResponse(protocols=[api_ws.protocol] if api_ws.protocol else (), max_msg_size=0,
                               autoping=True)
    await ws.prepare(request)

    async def pump(src: web.WebSocketResponse | aiohttp.ClientWebSocketResponse,
                   dst: web.WebSocketResponse | aiohttp.ClientWebSocketResponse) -> None:
        async for msg in src:
            if msg.type == aiohttp.WSMsgType.BINARY:
                await dst.send_bytes(msg.data)
            elif msg.type == aiohttp.WSMsgType.TEXT:
                await dst.send_str(msg.data)
            else:
                break

    to_api = asyncio.create_task(pump(ws, api_ws))
    to_page = asyncio.create_task(pump(api_ws, ws))
    try:
        await asyncio.wait({to_api, to_page}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (to_api, to_page):
            t.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await api_ws.close()
        await ws.close()
    return ws
