"""A connection upgrade relayed to a backend: the request goes on, and once the backend
answers 101 the two connections are spliced byte for byte (upstream's UpgradeAwareHandler
tryUpgrade). Used by the kubelet leg of exec/attach/portforward and by the proxy subresources.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import Awaitable, Callable
from typing import Any

from aiohttp import web

from ..api import errors as E
from ..streaming.conn import StreamsConn
from ..streaming.hijack import hijack

__all__ = ["splice", "is_upgrade", "read_response_head", "read_body", "hostport", "Refusal"]

CONNECT_TIMEOUT = 10.0
MAX_ERROR_BODY = 64 * 1024
# what to answer when the backend does not switch protocols: (status, reason, headers, body)
Refusal = Callable[[int, str, list[tuple[str, str]], bytes], Awaitable[web.StreamResponse]]


def is_upgrade(headers: Any) -> bool:
    """httpstream.IsUpgradeRequest: a Connection header naming `upgrade`."""
    return any(tok.strip().lower() == "upgrade" for v in headers.getall("Connection", ()) for tok in v.split(","))


def hostport(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


async def splice(request: web.Request, host: str, port: int, ssl_ctx: ssl.SSLContext | None, head: bytes,
                 keep_response: Callable[[str], bool], refused: Refusal,
                 server_hostname: str | None = None) -> web.StreamResponse:
    """Send head (the request line and headers) to host:port, and splice on 101; otherwise
    refused decides the answer. keep_response picks the 101's headers the client gets;
    server_hostname: the name TLS verifies (default host)."""
    try:
        reader, writer = await asyncio.wait_for(
            asyncio.open_connection(host, port, ssl=ssl_ctx, server_hostname=(server_hostname or host) if ssl_ctx else None,
                                    limit=1024 * 1024), CONNECT_TIMEOUT)
    except (TimeoutError, OSError) as e:
        raise E.new_service_unavailable(f"error trying to reach service: {e}") from e
    backend = StreamsConn(reader, writer)
    try:
        writer.write(head)
        await writer.drain()
        status, reason, headers = await read_response_head(reader)
    except (OSError, asyncio.IncompleteReadError, ValueError) as e:
        await backend.close()
        raise E.new_service_unavailable(f"error dialing backend: {e}") from e
    if status != 101:
        try:
            body = await read_body(reader, headers)
        finally:
            await backend.close()
        return await refused(status, reason, headers, body)
    resp, client = await hijack(request, [(k, v) for k, v in headers if keep_response(k.lower())])

    async def pump(src: Any, dst: Any) -> None:
        try:
            while True:
                data = await src.read()
                if not data:
                    break
                await dst.write(data)
        except (ConnectionError, OSError):
            pass

    loop = asyncio.get_running_loop()
    up = loop.create_task(pump(client, backend))
    down = loop.create_task(pump(backend, client))
    try:
        # once one side ends, the other is closed too, as upstream's
        await asyncio.wait({up, down}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for t in (up, down):
            t.cancel()
        for t in (up, down):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        await backend.close()
        await client.close()
    return resp


async def read_response_head(reader: asyncio.StreamReader) -> tuple[int, str, list[tuple[str, str]]]:
    raw = await reader.readuntil(b"\r\n\r\n")
    lines = raw.decode("latin-1").split("\r\n")
    parts = lines[0].split(" ", 2)
    if len(parts) < 2 or not parts[0].startswith("HTTP/"):
        raise ValueError(f"malformed status line {lines[0]!r}")
    headers = []
    for line in lines[1:]:
        if not line:
            continue
        k, _, v = line.partition(":")
        headers.append((k.strip(), v.strip()))
    return int(parts[1]), parts[2] if len(parts) > 2 else "", headers


async def read_body(reader: asyncio.StreamReader, headers: list[tuple[str, str]]) -> bytes:
    h = {k.lower(): v for k, v in headers}
    try:
        if "content-length" in h:
            n = min(int(h["content-length"]), MAX_ERROR_BODY)
            return await asyncio.wait_for(reader.readexactly(n), 10)
        if "chunked" in h.get("transfer-encoding", "").lower():
            out = bytearray()
            while len(out) < MAX_ERROR_BODY:
                size = int((await asyncio.wait_for(reader.readline(), 10)).split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    break
                out += await asyncio.wait_for(reader.readexactly(size + 2), 10)
                del out[-2:]
            return bytes(out)
        return await asyncio.wait_for(reader.read(MAX_ERROR_BODY), 10)
    except (TimeoutError, asyncio.IncompleteReadError, ValueError, OSError):
        return b""
