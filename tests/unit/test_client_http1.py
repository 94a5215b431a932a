"""The client's HTTP/1.1 pool against a scripted server: framing, keep-alive, and failures as aiohttp's."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import aiohttp
import pytest

from pyk8s.client.http1 import ConnectionPool

Answer = Callable[[bytes, int], bytes | None]  # (request, count of requests on this connection) -> reply


async def _serve(answer: Answer) -> tuple[asyncio.AbstractServer, int, list[int]]:
    """A plain TCP server; `answer` None closes the connection without replying. Returns its port and
    a list that counts accepted connections."""
    conns: list[int] = []

    async def handle(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
        conns.append(1)
        n = 0
        while True:
            head = await r.readuntil(b"\r\n\r\n") if not r.at_eof() else b""
            if not head:
                break
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            body = await r.readexactly(length) if length else b""
            n += 1
            reply = answer(head + body, n)
            if reply is None:
                w.close()
                return
            w.write(reply)
            await w.drain()

    srv = await asyncio.start_server(handle, "127.0.0.1", 0)
    return srv, srv.sockets[0].getsockname()[1], conns


def _pool(port: int, limit: int = 4) -> ConnectionPool:
    return ConnectionPool(f"http://127.0.0.1:{port}", None, {"User-Agent": "t", "Accept": "application/json"}, limit)


def test_content_length_chunked_and_keep_alive() -> None:
    async def main() -> None:
        def answer(req: bytes, n: int) -> bytes:
            if b"/chunked" in req:
                return (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                        b"5\r\nhello\r\n6;ext=1\r\n world\r\n0\r\n\r\n")
            if b"POST" in req:
                assert req.endswith(b'{"a":1}') and b"Content-Length: 7" in req and b"Host: 127.0.0.1:" in req
                return b'HTTP/1.1 201 Created\r\ncontent-length: 2\r\n\r\n{}'
            return b"HTTP/1.1 404 Not Found\r\nContent-Length: 3\r\nConnection: keep-alive\r\n\r\nno!"

        srv, port, conns = await _serve(answer)
        pool = _pool(port)
        assert await pool.request("GET", "/chunked", None, None, 5) == (200, b"hello world")
        assert await pool.request("POST", "/x", b'{"a":1}', "application/json", 5) == (201, b"{}")
        assert await pool.request("GET", "/missing", None, None, 5) == (404, b"no!")
        assert len(conns) == 1  # one connection served all three
        pool.close()
        unlimited = _pool(port, limit=0)  # 0: no limit, as aiohttp's connector
        got = await asyncio.gather(*(unlimited.request("GET", "/missing", None, None, 5) for _ in range(5)))
        assert got == [(404, b"no!")] * 5
        unlimited.close()
        srv.close()

    asyncio.run(main())


def test_connection_close_is_honoured() -> None:
    async def main() -> None:
        srv, port, conns = await _serve(lambda req, n: b"HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx")
        pool = _pool(port)
        for _ in range(3):
            assert await pool.request("GET", "/", None, None, 5) == (200, b"x")
        assert len(conns) == 3
        pool.close()
        srv.close()

    asyncio.run(main())


def test_stale_connection_retries_reads_only() -> None:
    async def main() -> None:
        # every connection answers its first request, then drops the second unanswered
        srv, port, conns = await _serve(lambda req, n: b"HTTP/1.1 200 OK\r\nContent-Length: 1\r\n\r\nx" if n == 1 else None)
        pool = _pool(port, limit=1)
        assert await pool.request("GET", "/", None, None, 5) == (200, b"x")
        assert await pool.request("GET", "/", None, None, 5) == (200, b"x")  # resent on a new connection
        assert len(conns) == 2
        with pytest.raises(aiohttp.ServerDisconnectedError):  # a write may have landed: not resent
            await pool.request("POST", "/", b"{}", "application/json", 5)
        pool.close()
        srv.close()

    asyncio.run(main())


def test_refused_connection_and_timeout_look_like_aiohttp() -> None:
    async def main() -> None:
        srv, port, _ = await _serve(lambda req, n: b"")
        pool = _pool(port)
        with pytest.raises(TimeoutError):  # the server never answers
            await pool.request("GET", "/", None, None, 0.3)
        srv.close()
        await srv.wait_closed()
        with pytest.raises(aiohttp.ClientConnectorError):
            await _pool(port).request("GET", "/", None, None, 5)

    asyncio.run(main())
