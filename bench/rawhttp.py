"""A lean HTTP/1.1 keep-alive client for load generation: requests as prepared bytes, one in flight.

The benchmarks run the load on the same 2 cores as the server, so every microsecond the
client spends is taken from the server. aiohttp's client costs ~400 us of CPU per request;
this one parses only the status line and Content-Length (the API server always sends it for
non-watch answers) and costs a fraction of that, as upstream's Go load generators do.
"""

from __future__ import annotations

import asyncio
import ssl
from urllib.parse import urlparse


class _Conn(asyncio.Protocol):
    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._want = -1  # body length still expected once the head is in; -1: reading the head
        self._head_end = 0
        self._status = 0
        self._done: asyncio.Future[tuple[int, bytes]] | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        if self._done is not None and not self._done.done():
            self._done.set_exception(exc or ConnectionError("connection closed"))

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        if self._want < 0:
            end = buf.find(b"\r\n\r\n")
            if end < 0:
                return
            head = bytes(buf[:end]).split(b"\r\n")
            self._status = int(head[0].split(b" ", 2)[1])
            length = 0
            for line in head[1:]:
                k, _, v = line.partition(b":")
                if k.strip().lower() == b"content-length":
                    length = int(v)
                    break
            self._head_end = end + 4
            self._want = length
        if len(buf) - self._head_end >= self._want:
            body = bytes(buf[self._head_end:self._head_end + self._want])
            del buf[:self._head_end + self._want]
            self._want = -1
            if self._done is not None and not self._done.done():
                self._done.set_result((self._status, body))

    async def roundtrip(self, request: bytes) -> tuple[int, bytes]:
        assert self.transport is not None
        self._done = asyncio.get_running_loop().create_future()
        self.transport.write(request)
        return await self._done


class RawClient:
    """Connections to one server; `request` bytes come from `build`."""

    def __init__(self, url: str, ssl_ctx: ssl.SSLContext | None) -> None:
        u = urlparse(url)
        self.host, self.port = u.hostname or "127.0.0.1", u.port or 443
        self.ssl_ctx = ssl_ctx

    async def connect(self) -> _Conn:
        _, conn = await asyncio.get_running_loop().create_connection(_Conn, self.host, self.port, ssl=self.ssl_ctx)
        return conn

    def build(self, method: str, path: str, body: bytes = b"", content_type: str = "application/json") -> bytes:
        head = (f"{method} {path} HTTP/1.1\r\nHost: {self.host}:{self.port}\r\nAccept: application/json\r\n"
                f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n")
        return head.encode() + body
