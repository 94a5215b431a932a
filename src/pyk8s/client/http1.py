"""A lean HTTP/1.1 keep-alive connection pool for the client's request/response calls.

Components (scheduler, controllers, kubelet, simulated nodes) make thousands of small requests a
second, and many run in the API server's own process, so client CPU is server CPU. aiohttp's
client costs ~300 us of CPU per request on this machine; this pool parses just what a
request/response call needs (status, Content-Length or chunked framing, Connection: close)
and costs a third of that. Watches and other streams stay on aiohttp.

Failures look like aiohttp's to the caller (`rest.Client.request` retries and fails over on
them): connection errors raise aiohttp.ClientConnectionError subclasses and a stale keep-alive
connection that the server closed raises ServerDisconnectedError.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
import time
from collections import deque
from urllib.parse import urlsplit

import aiohttp
from aiohttp.client_reqrep import ConnectionKey

__all__ = ["ConnectionPool"]

IDLE_TTL = 30.0  # seconds an idle connection is kept (the server's keep-alive timeout is 75 s)
_NO_BODY = (204, 304)


class _Conn(asyncio.Protocol):
    __slots__ = ("transport", "_buf", "_waiter", "closed", "used_at")

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self._buf = bytearray()
        self._waiter: asyncio.Future[None] | None = None
        self.closed = False
        self.used_at = time.monotonic()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self._wake()

    def data_received(self, data: bytes) -> None:
        self._buf += data
        self._wake()

    def eof_received(self) -> bool | None:
        self.closed = True
        self._wake()
        return None

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    async def _more(self) -> None:
        """Wait for more bytes; a closed connection raises ServerDisconnectedError."""
        if self.closed:
            raise aiohttp.ServerDisconnectedError()
        self._waiter = asyncio.get_running_loop().create_future()
        try:
            await self._waiter
        finally:
            self._waiter = None
        if self.closed and not self._buf:
            raise aiohttp.ServerDisconnectedError()

    async def _read_until(self, sep: bytes) -> bytes:
        while True:
            i = self._buf.find(sep)
            if i >= 0:
                out = bytes(self._buf[:i])
                del self._buf[:i + len(sep)]
                return out
            if self.closed:
                raise aiohttp.ServerDisconnectedError()
            await self._more()

    async def _read_exact(self, n: int) -> bytes:
        while len(self._buf) < n:
            if self.closed:
                raise aiohttp.ServerDisconnectedError()
            await self._more()
        out = bytes(self._buf[:n])
        del self._buf[:n]
        return out

    async def roundtrip(self, request: bytes, method: str) -> tuple[int, bytes, bool]:
        """Send one request; (status, body, whether the connection can be reused)."""
        assert self.transport is not None
        self._buf.clear()
        self.transport.write(request)
        head = await self._read_until(b"\r\n\r\n")
        try:
            status = int(head[9:12])  # "HTTP/1.1 200 OK"
        except ValueError:
            raise aiohttp.ClientResponseError(None, (), message=f"bad status line {head[:80]!r}") from None  # type: ignore[arg-type]
        low = head.lower()  # header names are case-insensitive; one search each beats a parse per line
        length = -1
        i = low.find(b"\r\ncontent-length:")
        if i >= 0:
            end = low.find(b"\r\n", i + 2)
            length = int(low[i + 17:end if end >= 0 else len(low)])
        chunked = False
        j = low.find(b"\r\ntransfer-encoding:")
        if j >= 0:
            end = low.find(b"\r\n", j + 2)
            chunked = b"chunked" in low[j:end if end >= 0 else len(low)]
        keep = low.find(b"\r\nconnection: close") < 0
        if method == "HEAD" or status in _NO_BODY or 100 <= status < 200:
            body = b""
        elif chunked:
            body = await self._read_chunked()
        elif length >= 0:
            body = await self._read_exact(length)
        else:  # no framing: the body runs to the end of the connection
            while not self.closed:
                with contextlib.suppress(aiohttp.ServerDisconnectedError):
                    await self._more()
            body = bytes(self._buf)
            keep = False
        self.used_at = time.monotonic()
        return status, body, keep and not self.closed

    async def _read_chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size_line = await self._read_until(b"\r\n")
            size = int(size_line.split(b";", 1)[0].strip() or b"0", 16)
            if size == 0:
                await self._read_until(b"\r\n")  # the (empty) trailer section
                return b"".join(parts)
            parts.append(await self._read_exact(size))
            await self._read_exact(2)

    def close(self) -> None:
        self.closed = True
        if self.transport is not None:
            self.transport.close()


class ConnectionPool:
    """Keep-alive connections to one API server; at most `limit` open at once (0: no limit)."""

    def __init__(self, url: str, ssl_context: ssl.SSLContext | None, headers: dict[str, str], limit: int) -> None:
        u = urlsplit(url)
        self.host = u.hostname or "127.0.0.1"
        self.port = u.port or (443 if u.scheme == "https" else 80)
        self.ssl_context = ssl_context if u.scheme == "https" else None
        self.prefix = u.path.rstrip("/")  # a server URL may sit under a path (behind a proxy)
        host = f"[{self.host}]" if ":" in self.host else self.host
        fixed = "".join(f"{k}: {v}\r\n" for k, v in headers.items())
        self._fixed = f"Host: {host}:{self.port}\r\n{fixed}".encode()
        self._idle: deque[_Conn] = deque()
        # limit 0 means no limit, as aiohttp's TCPConnector(limit=0) (the kubelet keeps a watch per
        # referenced ConfigMap and Secret on its client)
        self._slots: asyncio.Semaphore | contextlib.nullcontext[None] = (
            asyncio.Semaphore(limit) if limit > 0 else contextlib.nullcontext())

    async def _connect(self) -> _Conn:
        loop = asyncio.get_running_loop()
        try:
            _, conn = await loop.create_connection(_Conn, self.host, self.port, ssl=self.ssl_context)
        except ssl.SSLError as e:
            raise aiohttp.ClientConnectorError(self._key(), OSError(str(e))) from e
        except OSError as e:
            raise aiohttp.ClientConnectorError(self._key(), e) from e
        return conn

    def _key(self) -> ConnectionKey:
        """What aiohttp's ClientConnectorError describes the failed connection with."""
        tls = self.ssl_context is not None
        return ConnectionKey(self.host, self.port, tls, self.ssl_context or True, None, None, None, None)

    def _take_idle(self) -> _Conn | None:
        now = time.monotonic()
        while self._idle:
            c = self._idle.pop()  # the most recently used: the least likely to have been closed
            if not c.closed and now - c.used_at < IDLE_TTL:
                return c
            c.close()
        return None

    async def request(self, method: str, target: str, body: bytes | None, content_type: str | None,
                      timeout: float) -> tuple[int, bytes]:
        head = f"{method} {self.prefix}{target} HTTP/1.1\r\n".encode() + self._fixed
        if body is not None:
            head += f"Content-Type: {content_type}\r\nContent-Length: {len(body)}\r\n\r\n".encode()
            req = head + body
        else:
            req = head + b"\r\n"
        async with self._slots:
            async with asyncio.timeout(timeout):
                conn = self._take_idle()
                reused = conn is not None
                if conn is None:
                    conn = await self._connect()
                try:
                    status, data, keep = await conn.roundtrip(req, method)
                except aiohttp.ServerDisconnectedError:
                    conn.close()
                    if not reused or method not in ("GET", "HEAD"):
                        raise  # a write may have reached the server: the caller decides about retrying
                    # an idle connection the server had closed: a read is sent again on a new one
                    conn = await self._connect()
                    status, data, keep = await conn.roundtrip(req, method)
                except BaseException:
                    conn.close()
                    raise
            if keep:
                self._idle.append(conn)
            else:
                conn.close()
            return status, data

    def close(self) -> None:
        while self._idle:
            self._idle.pop().close()

