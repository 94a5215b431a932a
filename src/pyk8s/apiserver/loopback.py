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

Watches take it too (stream()): the watch handler writes into an aiohttp StreamResponse as it
does for a network client, and the writer and transport below hand what it writes to the
client as byte chunks, without TLS or chunked framing. Logs, exec and proxies still use the
network.
"""

from __future__ import annotations

import asyncio
from collections import deque
from collections.abc import AsyncIterator
from typing import Any

from aiohttp import HttpVersion11
from multidict import CIMultiDict, CIMultiDictProxy

from .appkeys import LOOPBACK
from .http1 import FastRequest, _streams, response_body, takes_connection


class _Stream:
    """What a loopback watch's handler wrote, waiting for the client to read it."""

    def __init__(self) -> None:
        self.q: deque[bytes] = deque()
        self.pending = 0  # bytes written and not yet read: the watch handler's back-pressure signal
        self.eof = False
        self.closed = False  # the client stopped reading
        self.started: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.warnings: list[str] = []  # the answer's Warning headers (a deprecated version's)
        self._waiter: asyncio.Future[None] | None = None

    def push(self, data: bytes) -> None:
        if self.closed or not data:
            return
        self.q.append(data)
        self.pending += len(data)
        self._wake()

    def end(self) -> None:
        self.eof = True
        self._wake()

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def chunks(self) -> AsyncIterator[bytes]:
        while True:
            if self.q:
                data = b"".join(self.q) if len(self.q) > 1 else self.q[0]
                self.q.clear()
                self.pending = 0
                yield data
                continue
            if self.eof:
                return
            self._waiter = asyncio.get_running_loop().create_future()
            await self._waiter
            self._waiter = None


class _Writer:
    """The part of aiohttp's payload writer that StreamResponse and handlers._direct_sink use."""

    length: int | None = None
    buffer_size = 0
    output_size = 0
    _compress = None

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream
        self.chunked = False

    def enable_chunking(self) -> None:
        self.chunked = True  # framing is not needed in-process: chunks are handed over whole

    def enable_compression(self, *args: Any, **kwargs: Any) -> None:
        raise RuntimeError("no compression on loopback streams")

    async def write_headers(self, status_line: str, headers: Any) -> None:
        self.stream.warnings = list(headers.getall("Warning", ()))
        if not self.stream.started.done():
            self.stream.started.set_result(None)

    def send_headers(self) -> None:
        pass

    async def write(self, data: bytes | bytearray | memoryview, *args: Any, **kwargs: Any) -> None:
        self.stream.push(bytes(data))

    async def write_eof(self, data: bytes = b"") -> None:
        self.stream.push(bytes(data))
        self.stream.end()

    async def drain(self) -> None:
        pass

    def set_eof(self) -> None:
        pass


class _Transport:
    """handlers._direct_sink writes pre-framed HTTP/1.1 chunks here; the client gets their payload."""

    def __init__(self, stream: _Stream) -> None:
        self.stream = stream

    def write(self, data: bytes) -> None:
        # a write may hold several chunks: each is "<hex size>\r\n<payload>\r\n"
        parts = []
        i, end = 0, len(data)
        while i < end:
            j = data.index(b"\r\n", i)
            start = j + 2
            stop = start + int(data[i:j], 16)
            parts.append(data[start:stop])
            i = stop + 2
        self.stream.push(parts[0] if len(parts) == 1 else b"".join(parts))

    def is_closing(self) -> bool:
        return self.stream.closed

    def get_write_buffer_size(self) -> int:
        return self.stream.pending

    def get_extra_info(self, name: str, default: Any = None) -> Any:
        return default


class StreamRequest(FastRequest):
    """A loopback request whose answer may stream (aiohttp's StreamResponse.prepare works on it)."""

    __slots__ = ("_payload_writer",)
    _payload_writer: _Writer
    version = HttpVersion11
    keep_alive = True

    async def _prepare_hook(self, response: Any) -> None:
        # as aiohttp's Request does (Audit-Id, the audit log's ResponseStarted)
        await self.app.on_response_prepare.send(self, response)  # type: ignore[arg-type]


class LoopbackPool:
    """The request/response part of client/http1.py's ConnectionPool, served in-process."""

    def __init__(self, server: Any, peer_cert: bytes, headers: dict[str, str], fallback: Any) -> None:
        self.server = server
        self.peer_cert = peer_cert  # DER of the certificate issued to this component
        self.fixed = [(k, v) for k, v in headers.items()]
        self.fallback = fallback  # the network pool, for requests that stream
        self.loop = asyncio.get_running_loop()  # the server's: its objects are not thread-safe

    def _local(self) -> bool:
        """Whether a call can go straight in: the server is up and this is its event loop."""
        return self.server.app is not None and asyncio.get_running_loop() is self.loop

    async def request(self, method: str, target: str, body: bytes | None, content_type: str | None,
                      timeout: float) -> tuple[int, bytes]:
        server = self.server
        if not self._local() or _streams(target):
            return await self.fallback.request(method, target, body, content_type, timeout)  # type: ignore[no-any-return]
        h: CIMultiDict[str] = CIMultiDict(self.fixed)
        if body is not None:
            h["Content-Type"] = content_type or "application/json"
            h["Content-Length"] = str(len(body))
        req = FastRequest(method, target, CIMultiDictProxy(h), body or b"", None, server.app,  # type: ignore[arg-type]
                          self.peer_cert)
        req[LOOPBACK] = True
        # the server's work runs to its end as it would for a network client that gave up
        # waiting: a caller's timeout or cancellation does not cut a write in half
        task = asyncio.ensure_future(server._entry(req))
        async with asyncio.timeout(timeout):
            resp = await asyncio.shield(task)
        return resp.status, response_body(resp)

    async def stream(self, method: str, target: str) -> tuple[int, bytes, AsyncIterator[bytes], list[str]] | None:
        """A watch served in-process: (status, body of a refusal, chunks of the stream, its Warning
        headers), or None when it must go over the network (another thread's loop, or a kind of
        stream we do not carry)."""
        server = self.server
        if not self._local() or method != "GET" or takes_connection(target.partition("?")[0]):
            return None
        stream = _Stream()
        req = StreamRequest(method, target, CIMultiDictProxy(CIMultiDict(self.fixed)), b"", _Transport(stream),  # type: ignore[arg-type]
                            server.app, self.peer_cert)
        req._payload_writer = _Writer(stream)
        req[LOOPBACK] = True
        task = asyncio.ensure_future(server._entry(req))
        done, _ = await asyncio.wait([task, stream.started], return_when=asyncio.FIRST_COMPLETED)
        if not stream.started.done():
            stream.started.cancel()
        if task in done and not task.result().prepared:  # refused (403, 410 ...): an ordinary answer
            resp = task.result()
            return resp.status, response_body(resp), _empty(), list(resp.headers.getall("Warning", ()))

        async def finish() -> None:  # as aiohttp ends a handler's streamed answer
            try:
                resp = await task
                await resp.write_eof()
            finally:
                stream.end()

        ender = asyncio.ensure_future(finish())

        async def chunks() -> AsyncIterator[bytes]:
            try:
                async for data in stream.chunks():
                    yield data
            finally:
                stream.closed = True
                if not task.done():
                    task.cancel()  # the client went away: the watch ends, as on a closed connection
                await asyncio.gather(ender, return_exceptions=True)

        return 200, b"", chunks(), stream.warnings

    def close(self) -> None:
        self.fallback.close()


async def _empty() -> AsyncIterator[bytes]:
    return
    yield b""  # an async generator that yields nothing
