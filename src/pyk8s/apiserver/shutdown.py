"""Graceful stop of the API server's HTTP side, as kube-apiserver's with its default flags.

Upstream, on SIGTERM: no delay (--shutdown-delay-duration 0), the listener closes, watches end
at once (--shutdown-watch-termination-grace-period 0) and the requests in flight are let finish
(bounded by the request timeout, 60 s) before storage closes. A request that arrives on an open
connection after that point is not started but answered 429 with `Retry-After: 5` and
`Connection: close` (upstream's WithRetryAfter, what --shutdown-send-retry-after=true does): the
client retries, on another server, and never has a write acknowledged that was lost or one
left in doubt. Go also answers the requests it lets finish with `Connection: close` and closes
idle connections at once; here an idle connection gets IDLE_GRACE to send the request it may
have on the way, which then gets the 429 instead of a reset.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from aiohttp import web

MESSAGE = "The apiserver is shutting down, please try again later.\n"
RETRY_AFTER = "5"
IN_FLIGHT_TIMEOUT = 10.0  # how long requests in flight may take to finish (upstream: 60 s)
IDLE_GRACE = 0.5  # a connection idle this long since the stop began has no request on the way
# what aiohttp's connections (watches, logs, exec, port-forward, proxies) get to end; long-running
# ones are cut after it, as upstream does not wait for them
HANDED_OFF_GRACE = 2.0


def retry_after_response() -> web.Response:
    """Upstream's answer to a request that arrives while the server shuts down (http.Error: text)."""
    resp = web.Response(status=429, text=MESSAGE, content_type="text/plain", charset="utf-8",
                        headers={"Retry-After": RETRY_AFTER, "X-Content-Type-Options": "nosniff",
                                 "Connection": "close"})
    resp.force_close()
    return resp


def is_watch(request: Any) -> bool:
    return "/watch/" in request.path or request.query.get("watch", "") not in ("", "0", "false")


def end_watches(server: Any) -> None:
    """The first step, at SIGTERM: end every watch and refuse new ones, so that watchers go to
    another server and this one stops fanning events out while its components stop."""
    server.stopping = True
    close_watches(server.caches)


def close_watches(caches: Any) -> None:
    """End every watch now: each client sees its stream end cleanly and watches again elsewhere."""
    if caches is None:
        return
    for c in caches.caches.values():
        for w in list(c.watchers):
            w.close("server shutting down")


async def drain(server: Any, timeout: float = IN_FLIGHT_TIMEOUT) -> None:
    """Stop taking connections and requests, end watches, and wait (bounded) for the requests in
    flight to be answered; every connection http1.py serves is closed when this returns."""
    server.draining = True  # requests reaching the entry point from now on are refused (429)
    end_watches(server)
    if server._listener is not None:
        server._listener.close()
    deadline = time.monotonic() + timeout
    conns = server._conns
    while time.monotonic() < deadline:
        running = [c for c in conns if not _closing(c)]
        if not running:
            break
        for conn in running:
            conn.drain(IDLE_GRACE)
        await asyncio.sleep(0.02)
    # the closing ones get a moment to send their last answer; past that, what is left is cut
    flush_deadline = min(deadline, time.monotonic() + 1.0)
    while conns and time.monotonic() < flush_deadline:
        await asyncio.sleep(0.02)
    for conn in list(conns):
        conn.abort()


def _closing(conn: Any) -> bool:
    t = conn.transport
    return bool(conn.closed or t is None or t.is_closing())
