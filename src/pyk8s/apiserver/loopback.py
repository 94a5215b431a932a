"""Loopback requests: the components in the API server's process call it without a socket.

The scheduler and controllers run on the server's event loop and talk to it as API clients.
Over HTTPS each of their requests paid TLS and HTTP framing twice, once on each side of a
local socket, all on that one loop: about 200 µs, as much as the request's own work for a
binding or an event. A LoopbackPool stands in for the client's connection pool
(client/http1.py): it builds the same request object http1.py builds (headers as the client
sends them, the component's own certificate as the authenticated peer) and awaits the
server's entry point. Everything after that is the ordinary request path: authentication,
RBAC, admission, validation, the same answers. Bodies stay bytes both ways, so the client
never shares an object with the server's cache.

Only plain requests take this path; watches and other streams still use the network.
"""

from __future__ import annotations

import asyncio
from typing import Any

from multidict import CIMultiDict, CIMultiDictProxy

from .http1 import FastRequest, _streams


class LoopbackPool:
    """The request/response part of client/http1.py's ConnectionPool, served in-process."""

    def __init__(self, server: Any, peer_cert: bytes, headers: dict[str, str], fallback: Any) -> None:
        self.server = server
        self.peer_cert = peer_cert  # DER of the certificate issued to this component
        self.fixed = [(k, v) for k, v in headers.items()]
        self.fallback = fallback  # the network pool, for requests that stream
        self.loop = asyncio.get_running_loop()  # the server's: its objects are not thread-safe

    async def request(self, method: str, target: str, body: bytes | None, content_type: str | None,
                      timeout: float) -> tuple[int, bytes]:
        server = self.server
        if server.app is None or _streams(method, target) or asyncio.get_running_loop() is not self.loop:
            return await self.fallback.request(method, target, body, content_type, timeout)  # type: ignore[no-any-return]
        h: CIMultiDict[str] = CIMultiDict(self.fixed)
        if body is not None:
            h["Content-Type"] = content_type or "application/json"
            h["Content-Length"] = str(len(body))
        req = FastRequest(method, target, CIMultiDictProxy(h), body or b"", None, server.app,  # type: ignore[arg-type]
                          self.peer_cert)
        # the server's work runs to its end as it would for a network client that gave up
        # waiting: a caller's timeout or cancellation does not cut a write in half
        task = asyncio.ensure_future(server._entry(req))
        async with asyncio.timeout(timeout):
            resp = await asyncio.shield(task)
        data = getattr(resp, "body", None)
        if data is None:
            data = b""
        elif not isinstance(data, (bytes, bytearray)):
            raise TypeError(f"loopback answer body of type {type(data).__name__}")
        return resp.status, bytes(data)

    def close(self) -> None:
        self.fallback.close()
