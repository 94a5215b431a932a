"""apiserver/http1.py: the request the handlers see reads exactly as aiohttp's would, and the
requests it must not answer itself are recognised."""

from __future__ import annotations

import asyncio

import pytest
from aiohttp.http_parser import HttpRequestParser
from multidict import CIMultiDict, CIMultiDictProxy

from pyk8s.apiserver.http1 import FastRequest, HTTP1Protocol, _streams

TARGETS = [
    "/api/v1/namespaces/default/pods",
    "/api/v1/namespaces/a%2Fb/pods/x%20y",
    "/api/v1/pods?labelSelector=app+in+%28a%2Cb%29&limit=500",
    "/api/v1/pods?labelSelector=app%20notin%20(a,b),!c&fieldSelector=spec.nodeName%3Dn1",
    "/api/v1/pods?x=&y&x=2&z=%E2%9C%93",
    "/apis/apps/v1/namespaces/d/deployments/web?fieldManager=kubectl-client-side-apply&fieldValidation=Strict",
    "/api/v1/namespaces/d/configmaps?dryRun=All&continue=eyJ2IjoibWV0YS5rOHMuaW8vdjEifQ%3D%3D",
    "/version/",
]


def _aiohttp_view(raw: bytes):  # type: ignore[no-untyped-def]
    async def parse():  # type: ignore[no-untyped-def]
        class Proto:
            transport = None

        p = HttpRequestParser(Proto(), asyncio.get_running_loop(), 2**16, max_line_size=8190, max_field_size=65536)
        msgs, _, _ = p.feed_data(raw)
        return msgs[0][0]

    return asyncio.run(parse())


@pytest.mark.parametrize("target", TARGETS)
def test_path_and_query_as_aiohttp_reads_them(target: str) -> None:
    raw = f"GET {target} HTTP/1.1\r\nHost: x\r\nAccept: application/json\r\n\r\n".encode()
    want = _aiohttp_view(raw)
    headers = CIMultiDictProxy(CIMultiDict([("Host", "x"), ("Accept", "application/json")]))
    got = FastRequest("GET", target, headers, b"", None, None)  # type: ignore[arg-type]
    assert got.path == want.url.path
    assert list(got.query.items()) == list(want.url.query.items())
    assert got.path_qs == want.url.path_qs
    assert got.headers["accept"] == "application/json"


@pytest.mark.parametrize("target,streams", [
    ("/api/v1/pods?watch=true", True),
    ("/api/v1/pods?watch=1&resourceVersion=5", True),
    ("/api/v1/watch/namespaces/d/pods", True),
    ("/api/v1/namespaces/d/pods/p/log?follow=true", True),
    ("/api/v1/namespaces/d/pods/p/exec?command=sh", True),
    ("/api/v1/namespaces/d/pods/p/attach", True),
    ("/api/v1/namespaces/d/pods/p/portforward", True),
    ("/api/v1/namespaces/d/services/s/proxy/healthz", True),
    ("/api/v1/nodes/n1/proxy/metrics", True),
    ("/api/v1/namespaces/d/pods", False),
    ("/api/v1/namespaces/d/pods/p/status", False),
    ("/api/v1/namespaces/d/pods/p/binding", False),
    ("/apis/apps/v1/namespaces/d/deployments/web/scale", False),
    ("/api/v1/namespaces/logging/configmaps/logs", False),
    # a configmap named "log" goes to aiohttp too: a wrong guess that way costs speed, not correctness
    ("/api/v1/namespaces/d/configmaps/log", True),
])
def test_streaming_requests_are_left_to_aiohttp(target: str, streams: bool) -> None:
    assert _streams(target) is streams


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.out = bytearray()
        self.proto: asyncio.BaseProtocol | None = None
        self.closing = False

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.out += data

    def is_closing(self) -> bool:
        return self.closing

    def close(self) -> None:
        self.closing = True

    def set_protocol(self, protocol: asyncio.BaseProtocol) -> None:
        self.proto = protocol

    def pause_reading(self) -> None:
        pass

    def resume_reading(self) -> None:
        pass


class _Fallback(asyncio.Protocol):
    def __init__(self) -> None:
        self.data = b""

    def data_received(self, data: bytes) -> None:
        self.data += data


@pytest.mark.parametrize("raw", [
    b"GET /api/v1/pods?watch=1 HTTP/1.1\r\nHost: x\r\n\r\n",
    b"POST /api/v1/namespaces/d/pods HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n",
    b"GET /api/v1/namespaces/d/pods/p/exec HTTP/1.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
    b"HEAD /version HTTP/1.1\r\nHost: x\r\n\r\n",
    b"GET /version HTTP/1.0\r\n\r\n",
    b"GET /version HTTP/1.1\r\nHost x\r\n\r\n",
    b"GET /version HTTP/1.1\r\n Folded: header\r\n\r\n",
    b"POST /api/v1/namespaces HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    b"POST /api/v1/namespaces HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\n",
    b"GET http://x/version HTTP/1.1\r\n\r\n",
])
def test_unusual_requests_are_handed_over_with_their_bytes(raw: bytes) -> None:
    async def run() -> None:
        fb = _Fallback()
        t = _Transport()

        async def entry(req: object) -> object:
            raise AssertionError("answered by http1.py")

        p = HTTP1Protocol(entry, None, lambda: fb, set(), 3 << 20)  # type: ignore[arg-type]
        p.connection_made(t)
        p.data_received(raw[:5])
        p.data_received(raw[5:])
        await asyncio.sleep(0)
        assert t.proto is fb and fb.data == raw and not t.out

    asyncio.run(run())


def test_plain_requests_are_answered_in_order_and_pipelined() -> None:
    async def run() -> None:
        from aiohttp import web

        t = _Transport()
        seen: list[str] = []

        async def entry(req: FastRequest) -> web.Response:
            seen.append(req.method + " " + req.path)
            await asyncio.sleep(0.01 if len(seen) == 1 else 0)  # the first is slower: answers stay in order
            return web.Response(body=await req.read() or b"{}", status=201 if req.method == "POST" else 200,
                                content_type="application/json")

        p = HTTP1Protocol(entry, None, lambda: _Fallback(), set(), 3 << 20)  # type: ignore[arg-type]
        p.connection_made(t)
        p.data_received(b"POST /a HTTP/1.1\r\nContent-Length: 7\r\n\r\n{\"a\":1}GET /b HTTP/1.1\r\n\r\nGET /c HTTP/1.1\r\n"
                        b"Connection: close\r\n\r\n")
        for _ in range(100):
            if t.closing:
                break
            await asyncio.sleep(0.01)
        assert seen == ["POST /a", "GET /b", "GET /c"]
        out = bytes(t.out)
        assert out.startswith(b"HTTP/1.1 201 Created\r\n")
        assert out.index(b"HTTP/1.1 200 OK") > out.index(b'{"a":1}')
        assert out.count(b"HTTP/1.1 200 OK") == 2 and out.count(b"Content-Length:") == 3
        assert b"Connection: close\r\n" in out and t.closing

    asyncio.run(run())


def test_body_over_the_limit_is_refused_without_reading_it() -> None:
    t = _Transport()
    p = HTTP1Protocol(None, None, lambda: _Fallback(), set(), 1000)  # type: ignore[arg-type]
    p.connection_made(t)
    p.data_received(b"POST /api/v1/namespaces/d/configmaps HTTP/1.1\r\nContent-Length: 5000\r\n\r\n{")
    out = bytes(t.out)
    assert out.startswith(b"HTTP/1.1 413 ") and b'"reason":"RequestEntityTooLarge"' in out
    assert b"Request entity too large: limit is 1000" in out and t.closing
