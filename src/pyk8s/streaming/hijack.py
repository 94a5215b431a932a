"""Taking over an aiohttp server connection after `101 Switching Protocols` (SPDY/3.1, raw splices).

aiohttp only knows the WebSocket upgrade; for anything else it would keep parsing
the connection as HTTP. `hijack()` writes the 101 through aiohttp (so its response
bookkeeping stays consistent), then installs a payload parser that hands every later
byte to us, and returns a ByteConn over the request's transport. The handler must
keep running while the connection is in use and return the response object at the
end (aiohttp then closes the connection, as it was told to with force_close()).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Mapping
from typing import Any

from aiohttp import web

HIGH_WATER = 256 * 1024  # pause reading from the peer past this much unread input


class _Feed:
    """The payload-parser interface aiohttp's protocol calls (feed_data/feed_eof)."""

    def __init__(self, conn: HijackedConn) -> None:
        self.conn = conn

    def feed_data(self, data: bytes) -> tuple[bool, bytes]:
        self.conn._on_data(bytes(data))
        return False, b""

    def feed_eof(self) -> None:
        self.conn._on_eof()


class HijackedConn:
    """A ByteConn over an aiohttp request's transport (see conn.ByteConn)."""

    def __init__(self, request: web.BaseRequest) -> None:
        self.request = request
        self.protocol: Any = request.protocol
        self.transport = request.transport
        self._chunks: list[bytes] = []
        self._size = 0
        self._eof = False
        self._waiter: asyncio.Future[None] | None = None
        self._paused = False

    def _wake(self) -> None:
        w = self._waiter
        if w is not None and not w.done():
            w.set_result(None)

    def _on_data(self, data: bytes) -> None:
        if not data:
            return
        self._chunks.append(data)
        self._size += len(data)
        if self._size > HIGH_WATER and not self._paused and self.transport is not None:
            with contextlib.suppress(Exception):
                self.transport.pause_reading()
                self._paused = True
        self._wake()

    def _on_eof(self) -> None:
        self._eof = True
        self._wake()

    async def read(self) -> bytes:
        while not self._chunks:
            if self._eof or self.transport is None or self.transport.is_closing():
                return b""
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        data = b"".join(self._chunks)
        self._chunks.clear()
        self._size = 0
        if self._paused and self.transport is not None:
            self._paused = False
            with contextlib.suppress(Exception):
                self.transport.resume_reading()
        return data

    async def write(self, data: bytes) -> None:
        t = self.transport
        if t is None or t.is_closing():
            raise ConnectionResetError("connection closed")
        t.write(data)
        # aiohttp's protocol implements the flow-control half of asyncio's streams
        await self.protocol._drain_helper()

    async def close(self) -> None:
        t = self.transport
        if t is not None and not t.is_closing():
            t.close()
        self._on_eof()


class UpgradeResponse(web.StreamResponse):
    """A 101 response whose connection we keep after the headers."""

    def __init__(self, headers: Mapping[str, str] | list[tuple[str, str]]) -> None:
        super().__init__(status=101, reason="Switching Protocols")
        items = headers.items() if isinstance(headers, Mapping) else headers
        for k, v in items:
            self.headers.add(k, v)
        self.force_close()
        self.conn: HijackedConn | None = None

    async def prepare(self, request: web.BaseRequest) -> Any:
        writer = await super().prepare(request)
        if self.conn is None and writer is not None:
            self.conn = HijackedConn(request)
            # the 101 must leave before any upgraded byte (aiohttp would otherwise send it with the first body write)
            writer.send_headers()
            request.protocol.set_parser(_Feed(self.conn))  # type: ignore[arg-type]
            request.protocol.keep_alive(False)
        return writer

    async def write_eof(self, data: bytes = b"") -> None:
        # nothing of HTTP follows an upgraded connection
        if self.conn is not None:
            await self.conn.close()


async def hijack(request: web.BaseRequest, headers: Mapping[str, str] | list[tuple[str, str]]) -> tuple[UpgradeResponse, HijackedConn]:
    resp = UpgradeResponse(headers)
    await resp.prepare(request)
    assert resp.conn is not None
    return resp, resp.conn
