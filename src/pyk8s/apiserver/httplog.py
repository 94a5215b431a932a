"""Upstream's httplog: one line per request at `--v=3`, with verb, URI, latency, user agent, audit ID,
source and status: `"HTTP" verb="LIST" URI="/api/v1/pods?limit=500" latency="2.1ms" ... resp=200`.

`wrap` returns the handler itself below v=3, so the request path pays nothing unless asked.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..klog import V3

log = logging.getLogger(__name__)
Handler = Callable[[Any], Awaitable[Any]]


def _verb(request: Any) -> str:
    """HTTP method, with GET told apart as upstream's CleanVerb does: LIST and WATCH for collections."""
    m = request.method
    if m != "GET":
        return m
    if request.query.get("watch") in ("true", "1"):
        return "WATCH"
    ctx = request.get("pyk8s.ctx")
    v = getattr(ctx, "verb", "")
    return v.upper() if v in ("list", "watch") else m


def _latency(seconds: float) -> str:
    """Go's time.Duration string for the common ranges (µs, ms, s)."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.3f}µs"
    if seconds < 1:
        return f"{seconds * 1e3:.6g}ms"
    return f"{seconds:.6g}s"


def wrap(handler: Handler) -> Handler:
    if not log.isEnabledFor(V3):
        return handler

    async def logged(request: Any) -> Any:
        t0 = time.perf_counter()
        resp = None
        try:
            resp = await handler(request)
            return resp
        finally:
            status = resp.status if resp is not None else 0
            audit_id = resp.headers.get("Audit-Id", "") if resp is not None else ""
            transport = request.transport
            peer = transport.get_extra_info("peername") if transport is not None else None
            src = f"{peer[0]}:{peer[1]}" if isinstance(peer, tuple) and len(peer) >= 2 else ""
            log.log(V3, '"HTTP" verb="%s" URI="%s" latency="%s" userAgent="%s" audit-ID="%s" srcIP="%s" resp=%d',
                    _verb(request), request.path_qs, _latency(time.perf_counter() - t0),
                    request.headers.get("User-Agent", ""), audit_id, src, status)

    return logged
