"""pyk8s Client with several API server URLs: when it moves on, and when it must not replay a write.

Real HTTP servers on loopback (aiohttp), standing in for API servers that are down, answer 503,
or drop a connection after reading a request.
"""

from __future__ import annotations

import asyncio
import socket
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from aiohttp import web

from pyk8s.api.errors import StatusError
from pyk8s.client import Client

CM = ("", "v1", "configmaps")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]


def closed_port() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"  # nothing listens there once closed


async def serve(handler: Handler) -> tuple[str, web.AppRunner, list[str]]:
    seen: list[str] = []

    async def h(request: web.Request) -> web.StreamResponse:
        seen.append(f"{request.method} {request.path}")
        return await handler(request)

    app = web.Application()
    app.router.add_route("*", "/{tail:.*}", h)
    runner = web.AppRunner(app)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    port = site._server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return f"http://127.0.0.1:{port}", runner, seen


async def ok(request: web.Request) -> web.StreamResponse:
    return web.json_response({"kind": "ConfigMap", "metadata": {"name": "x", "resourceVersion": "7"}},
                             status=201 if request.method == "POST" else 200)


async def unavailable(request: web.Request) -> web.StreamResponse:
    return web.json_response({"kind": "Status", "code": 503, "reason": "ServiceUnavailable", "message": "down"},
                             status=503)


async def drop(request: web.Request) -> web.StreamResponse:
    await request.read()
    assert request.transport is not None
    request.transport.close()  # the request arrived, and may have been acted on: no answer
    await asyncio.sleep(0.1)
    return web.Response()


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def test_reads_and_writes_move_on_when_a_server_cannot_be_reached():
    async def go() -> None:
        url, runner, seen = await serve(ok)
        c = Client(f"{closed_port()},{url}")
        try:
            assert (await c.get(CM, "x", "default"))["metadata"]["name"] == "x"
            assert c.server == url
            # the next request starts on the server that answered
            await c.create(CM, {"metadata": {"name": "y"}}, "default")
            assert seen == ["GET /api/v1/namespaces/default/configmaps/x", "POST /api/v1/namespaces/default/configmaps"]
        finally:
            await c.close()
            await runner.cleanup()

    run(go())


def test_a_503_moves_reads_to_the_next_server_and_fails_a_write_without_resending_it():
    async def go() -> None:
        bad, r1, seen_bad = await serve(unavailable)
        good, r2, seen_good = await serve(ok)
        c = Client([bad, good])
        try:
            await c.get(CM, "x", "default")
            assert c.server == good and seen_bad == ["GET /api/v1/namespaces/default/configmaps/x"]
            c._current = 0  # back on the unavailable one
            with pytest.raises(StatusError) as e:
                await c.create(CM, {"metadata": {"name": "y"}}, "default")
            assert e.value.code == 503 and c.server == good and seen_good == ["GET /api/v1/namespaces/default/configmaps/x"]
        finally:
            await c.close()
            await r1.cleanup()
            await r2.cleanup()

    run(go())


def test_a_write_whose_connection_dropped_is_not_replayed_on_another_server():
    async def go() -> None:
        flaky, r1, seen_flaky = await serve(drop)
        good, r2, seen_good = await serve(ok)
        c = Client([flaky, good])
        try:
            with pytest.raises(StatusError) as e:
                await c.create(CM, {"metadata": {"generateName": "p-"}}, "default")
            assert e.value.code == 503
            assert len(seen_flaky) == 1 and seen_good == []  # sent once; a second create could duplicate it
            assert c.server == good  # later requests go to the other server
        finally:
            await c.close()
            await r1.cleanup()
            await r2.cleanup()

    run(go())


def test_a_broken_watch_moves_the_client_to_the_next_server():
    async def go() -> None:
        async def watch_then_die(request: web.Request) -> web.StreamResponse:
            resp = web.StreamResponse()
            await resp.prepare(request)
            await resp.write(b'{"type":"ADDED","object":{"metadata":{"name":"a","resourceVersion":"5"}}}\n')
            assert request.transport is not None
            request.transport.close()
            return resp

        dying, r1, _ = await serve(watch_then_die)
        good, r2, _ = await serve(ok)
        c = Client([dying, good])
        got = []
        try:
            with pytest.raises(Exception):  # noqa: B017 - whichever aiohttp error a cut stream raises
                async for ev in c.watch(CM, "default", "1"):
                    got.append(ev["object"]["metadata"]["resourceVersion"])
            assert got == ["5"] and c.server == good  # the caller resumes from 5 on the next server
        finally:
            await c.close()
            await r1.cleanup()
            await r2.cleanup()

    run(go())


def test_one_server_keeps_the_old_retry_behaviour():
    c = Client("https://127.0.0.1:6443/")
    assert c.servers == ["https://127.0.0.1:6443"] and c.server == "https://127.0.0.1:6443"
    assert c.failover(c.server) is False
