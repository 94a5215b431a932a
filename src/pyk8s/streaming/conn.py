"""Bidirectional byte pipes: the interface the SPDY session and the proxies read and write."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Protocol

__all__ = ["ByteConn", "StreamsConn"]


class ByteConn(Protocol):
    """A bidirectional byte pipe: a hijacked HTTP connection, a TCP stream, or a WebSocket tunnel."""

    async def read(self) -> bytes:
        """Next chunk; b"" at EOF."""
        ...

    async def write(self, data: bytes) -> None: ...

    async def close(self) -> None: ...


class StreamsConn:
    """ByteConn over asyncio streams (the client side in tests; the API server's leg to a kubelet or a proxy target)."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    async def read(self) -> bytes:
        try:
            return await self.reader.read(65536)
        except (ConnectionError, OSError):
            return b""

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def close(self) -> None:
        with contextlib.suppress(Exception):
            self.writer.close()
