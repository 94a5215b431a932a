"""Many watches over one WebSocket (`/dashboard/watch`), as the page's store opens them.

Why: a browser opens at most 6 HTTP/1.1 connections per host, and each watch holds one for as
long as a page shows its collection; a page with six tables would starve every other request
(the click on "Scale" would wait for ever). WebSockets are not counted against that limit.

The page sends `{"id": N, "path": "/api/v1/pods?watch=1&resourceVersion=..."}` to start a watch
and `{"id": N, "stop": true}` to end it. The dashboard runs it against the API with the session's
credentials (so RBAC decides, as for every proxied call) and sends each watch event as
`{"id": N, "event": <the API's line>}`; when the stream ends, `{"id": N, "end": true}` with the
HTTP `status` and the API's `error` Status if the API refused it (410 Gone: list again).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from typing import Any
from urllib.parse import parse_qs, urlsplit

import aiohttp
from aiohttp import web

from .session import Session
from .upstream import Upstream

__all__ = ["MAX_WATCHES", "watch_mux"]

log = logging.getLogger("pyk8s.dashboard")

# per socket: a page shows a few dozen collections at most
MAX_WATCHES = 256
MAX_LINE = 16 * 1024 * 1024


def _valid(path: Any) -> str | None:
    """The path if it names a watch under /api or /apis (nothing else goes through here)."""
    if not isinstance(path, str) or not path.startswith(("/api/", "/apis/")) or "\\" in path or ".." in path:
        return None
    u = urlsplit(path)
    if u.scheme or u.netloc or parse_qs(u.query).get("watch", [""])[0] not in ("1", "true"):
        return None
    return path


async def watch_mux(request: web.Request, upstream: Upstream, session: Session) -> web.StreamResponse:
    assert upstream.client is not None
    client = upstream.client
    ws = web.WebSocketResponse(heartbeat=30.0, max_msg_size=64 * 1024)
    await ws.prepare(request)
    watches: dict[int, asyncio.Task[None]] = {}
    send_lock = asyncio.Lock()

    async def send(obj_json: str) -> None:
        async with send_lock:
            if not ws.closed:
                await ws.send_str(obj_json)

    async def run(wid: int, path: str) -> None:
        end: dict[str, Any] = {"id": wid, "end": True}
        try:
            headers = {"Accept": "application/json", **upstream.credentials(session)}
            async with client.get(upstream.url(path), headers=headers, server_hostname=upstream.server_hostname) as resp:
                end["status"] = resp.status
                if resp.status != 200:
                    body = await resp.read()
                    try:
                        end["error"] = json.loads(body)
                    except ValueError:
                        end["error"] = {"message": body.decode(errors="replace")}
                    return
                prefix = f'{{"id":{wid},"event":'
                buf = b""
                async for chunk in resp.content.iter_any():
                    buf += chunk
                    *lines, buf = buf.split(b"\n")
                    for line in lines:
                        if line.strip():
                            await send(prefix + line.decode() + "}")
                    if len(buf) > MAX_LINE:
                        raise ValueError("watch event too large")
        except asyncio.CancelledError:
            end = {}
            raise
        except (aiohttp.ClientError, TimeoutError, ValueError) as e:
            end["error"] = {"message": f"the watch ended: {e}"}
        finally:
            watches.pop(wid, None)
            if end:
                with contextlib.suppress(Exception):
                    await send(json.dumps(end))

    try:
        async for msg in ws:
            if msg.type != aiohttp.WSMsgType.TEXT:
                continue
            try:
                req = json.loads(msg.data)
                wid = int(req["id"])
            except (ValueError, KeyError, TypeError):
                continue
            if req.get("stop"):
                if (t := watches.get(wid)) is not None:
                    t.cancel()
                continue
            path = _valid(req.get("path"))
            if path is None or wid in watches or len(watches) >= MAX_WATCHES:
                reason = "too many watches" if len(watches) >= MAX_WATCHES else "not a watch of /api or /apis"
                await send(json.dumps({"id": wid, "end": True, "status": 400,
                                       "error": {"kind": "Status", "code": 400, "reason": "BadRequest",
                                                 "message": reason}}))
                continue
            watches[wid] = asyncio.create_task(run(wid, path))
    finally:
        for t in list(watches.values()):
            t.cancel()
        for t in list(watches.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
    return ws
