"""HTTP/1.1 for the API server's plain requests, with aiohttp kept for everything that streams.

aiohttp's server spends about 100 µs of the event loop on every request (its request and
payload objects, router, response preparation and writer): as much as the whole TLS layer,
and a sixth of a pod create. Most API calls are one request, one body, one answer, so this
protocol reads those itself and calls the same entry point (APIServer._entry) with a small
request object that offers what the handlers use of aiohttp's (method, path, query, headers,
read(), transport, app, per-request items); the handlers' web.Response is written out here.

Anything else on a connection is handed to aiohttp, with the bytes read so far, before it is
answered: watches, logs, exec/attach/port-forward, proxies, upgrades, chunked or 100-continue
bodies, methods other than the five verbs, oversized or unusual requests. From then on aiohttp
owns the connection, so its behaviour (and its error answers to malformed input) is unchanged.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from collections.abc import Awaitable, Callable
from email.utils import formatdate
from typing import Any

from aiohttp import web
from multidict import CIMultiDict, CIMultiDictProxy, MultiDict, MultiDictProxy
from yarl import URL

from ..api import errors as E
from . import commit_answer, eager_start
from .handlers import status_response
from .header_limits import MAX_HEADER_BYTES, RESPONSE_431

log = logging.getLogger("pyk8s.apiserver.http")

_METHODS = frozenset({"GET", "POST", "PUT", "PATCH", "DELETE"})
# subresources and path parts whose answers stream, or that take over the connection
_STREAMING_TAILS = ("/log", "/exec", "/attach", "/portforward")
_MAX_HEAD = 16 * 1024  # longer heads (up to MAX_HEADER_BYTES) go to aiohttp, which applies its own limits
_HANDOFF_HEADERS = frozenset({"transfer-encoding", "upgrade", "expect"})
_NO_QUERY: MultiDictProxy[str] = MultiDictProxy(MultiDict())


class FastRequest:
    """The parts of aiohttp's web.Request that the API handlers use, for a fully read request."""

    __slots__ = ("method", "headers", "transport", "app", "peer_cert", "_raw_path", "_qs", "_url",
                 "_body", "_items", "_query")

    def __init__(self, method: str, target: str, headers: CIMultiDictProxy[str], body: bytes,
                 transport: asyncio.BaseTransport, app: web.Application, peer_cert: bytes | None = None) -> None:
        self.method = method
        self.peer_cert = peer_cert  # the client certificate (DER), read once per connection
        self.headers = headers
        self.transport: asyncio.BaseTransport | None = transport
        self.app = app
        self._raw_path, _, self._qs = target.partition("?")
        self._url: URL | None = None  # built when first needed: most requests need only the path
        self._body = body
        self._items: dict[str, Any] = {}
        self._query: MultiDictProxy[str] | None = None

    def _parsed(self) -> URL:
        if self._url is None:
            # built as aiohttp's parser builds it: path decoded, query parsed with '+' as space
            self._url = URL.build(path=self._raw_path, query_string=self._qs, encoded=True)
        return self._url

    @property
    def path(self) -> str:
        if "%" not in self._raw_path:  # nothing to decode: the path as sent (what yarl gives too)
            return self._raw_path
        return self._parsed().path

    @property
    def path_qs(self) -> str:
        return self._parsed().path_qs

    @property
    def raw_path(self) -> str:
        """The request target as sent (aiohttp's Request.raw_path)."""
        return self._parsed().raw_path_qs

    @property
    def query(self) -> MultiDictProxy[str]:
        if self._query is None:
            self._query = self._parsed().query if self._qs else _NO_QUERY
        return self._query

    @property
    def can_read_body(self) -> bool:
        return bool(self._body)

    async def read(self) -> bytes:
        return self._body

    def get(self, key: str, default: Any = None) -> Any:
        return self._items.get(key, default)

    def __getitem__(self, key: str) -> Any:
        return self._items[key]

    def __setitem__(self, key: str, value: Any) -> None:
        self._items[key] = value


def takes_connection(path: str) -> bool:
    """Logs, exec/attach/port-forward and proxies: answers that stream from elsewhere or take
    over the connection (never served without a socket, see loopback.py)."""
    return "/proxy" in path or path.rstrip("/").endswith(_STREAMING_TAILS)


def _streams(target: str) -> bool:
    """Whether a request's answer streams (aiohttp serves those): a watch, or takes_connection."""
    path, _, qs = target.partition("?")
    return "watch" in qs or "/watch/" in path or takes_connection(path)


def response_body(resp: web.StreamResponse) -> bytes:
    """The body of a handler's (unprepared) web.Response: handlers give bytes or nothing."""
    body = getattr(resp, "body", None)
    if body is None:
        return b""
    if not isinstance(body, (bytes, bytearray)):
        raise TypeError(f"response body of type {type(body).__name__}")
    return bytes(body)


class _Date:
    """The Date header, formatted once a second."""

    sec = -1
    value = b""

    @classmethod
    def get(cls) -> bytes:
        now = int(time.time())
        if now != cls.sec:
            cls.sec, cls.value = now, formatdate(now, usegmt=True).encode()
        return cls.value


_OWN_HEADERS = frozenset(("content-length", "connection", "date", "transfer-encoding"))  # written below
_STATUS_LINES: dict[tuple[int, str], bytes] = {}


def _status_line(status: int, reason: str) -> bytes:
    line = _STATUS_LINES.get((status, reason))
    if line is None:
        line = b"HTTP/1.1 %d %s\r\n" % (status, reason.encode("latin-1"))
        if len(_STATUS_LINES) < 256:  # the standard reasons; a custom one is not kept
            _STATUS_LINES[(status, reason)] = line
    return line


def serialize(resp: web.StreamResponse, keep_alive: bool) -> bytes:
    """Status line, headers and body of a handler's (unprepared) web.Response."""
    status = resp.status
    body = response_body(resp)
    lines = []
    has_ct = False
    for k, v in resp.headers.items():
        lk = k.lower()
        if lk in _OWN_HEADERS:
            continue
        if lk == "content-type":
            has_ct = True
        lines.append(f"{k}: {v}\r\n")
    if status >= 200 and status not in (204, 304):
        if body and not has_ct:
            lines.append("Content-Type: application/octet-stream\r\n")
        lines.append(f"Content-Length: {len(body)}\r\n")
    else:
        body = b""
    head = "".join(lines)
    # one line per header: a CR or LF inside a name or value would split the response (aiohttp refuses them)
    if head.count("\n") != len(lines) or head.count("\r") != len(lines):
        raise ValueError("newline in a response header")
    # UTF-8, as Go writes a header's bytes (and aiohttp does)
    return b"".join((_status_line(status, resp.reason), head.encode(), b"Date: ", _Date.get(),
                     b"\r\n\r\n" if keep_alive else b"\r\nConnection: close\r\n\r\n", body))


class HTTP1Protocol(asyncio.Protocol):
    """One client connection: plain requests answered here, in order; the rest handed to aiohttp."""

    __slots__ = ("entry", "app", "fallback", "conns", "max_body", "transport", "buf", "busy", "closed", "task",
                 "last_active", "paused", "peer_cert", "draining", "starting")

    def __init__(self, entry: Callable[[Any], Awaitable[web.StreamResponse]], app: web.Application,
                 fallback: Callable[[], asyncio.Protocol], conns: set[HTTP1Protocol], max_body: int) -> None:
        self.entry = entry
        self.app = app
        self.fallback = fallback
        self.conns = conns
        self.max_body = max_body
        self.last_active = time.monotonic()
        self.paused = False
        self.peer_cert: bytes | None = None
        self.transport: asyncio.Transport | None = None
        self.buf = bytearray()
        self.busy = False
        self.closed = False
        self.task: asyncio.Task[None] | None = None
        self.draining = False  # the server shuts down (shutdown.py): answer what runs, start nothing
        self.starting = False  # a request's first step runs now, inside _next

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]
        self.conns.add(self)
        sslobj = transport.get_extra_info("ssl_object")  # the handshake is done by now
        if sslobj is not None:
            try:
                self.peer_cert = sslobj.getpeercert(binary_form=True)
            except (ValueError, AttributeError):
                pass
        sock = transport.get_extra_info("socket")
        if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
            try:  # answers go out in one write: Nagle's algorithm would only hold them back
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            except OSError:
                pass

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.conns.discard(self)

    def data_received(self, data: bytes) -> None:
        self.buf += data
        if not self.busy:
            self._next()
        elif len(self.buf) > self.max_body + _MAX_HEAD and self.transport is not None and not self.paused:
            self.paused = True  # a client sending ahead of its answers waits for them
            self.transport.pause_reading()

    def eof_received(self) -> bool | None:
        return None  # close our side too

    def _next(self) -> None:
        """Start the next complete request in the buffer, or hand the connection over."""
        buf = self.buf
        end = buf.find(b"\r\n\r\n")
        if end < 0:
            if len(buf) > MAX_HEADER_BYTES:
                self._refuse_head()
            return
        if end > _MAX_HEAD:
            if end > MAX_HEADER_BYTES:
                self._refuse_head()
            else:
                self._hand_off()
            return
        if self.draining:
            self._refuse_draining()
            return
        try:
            lines = bytes(buf[:end]).decode("ascii").split("\r\n")
            method, target, version = lines[0].split(" ")
        except (UnicodeDecodeError, ValueError):
            self._hand_off()
            return
        if method not in _METHODS or version != "HTTP/1.1" or not target.startswith("/") \
                or _streams(target):
            self._hand_off()
            return
        headers: CIMultiDict[str] = CIMultiDict()
        length = 0
        keep_alive = True
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep or not name or name != name.strip() or " " in name or "\t" in name:
                self._hand_off()  # obs-fold, a malformed line: aiohttp's parser answers it
                return
            value = value.strip(" \t")
            lname = name.lower()
            if lname in _HANDOFF_HEADERS:
                self._hand_off()
                return
            if lname == "content-length":
                if "content-length" in headers or not value.isdigit():
                    self._hand_off()
                    return
                length = int(value)
            elif lname == "connection" and "close" in value.lower():
                keep_alive = False
            headers.add(name, value)
        if length > self.max_body:
            self._refuse_body()
            return
        start = end + 4
        if len(buf) < start + length:
            return  # the body is still coming
        body = bytes(buf[start:start + length])
        del buf[:start + length]
        self.busy = True
        assert self.transport is not None
        req = FastRequest(method, target, CIMultiDictProxy(headers), body, self.transport, self.app, self.peer_cert)
        # served now, without a Task, unless it has to wait (eager_start.py): most requests never do
        self.starting = True
        try:
            self.task = eager_start.start(self._serve(req, keep_alive))
        finally:
            self.starting = False

    async def _serve(self, req: FastRequest, keep_alive: bool) -> None:
        try:
            resp = await self.entry(req)
            if self.draining:
                keep_alive = False  # the server shuts down (since or during this request): the last answer
            data = serialize(resp, keep_alive)
        except asyncio.CancelledError:
            raise
        except Exception:  # the entry point answers errors itself; this is a bug: end the connection
            stored = commit_answer.after_failure(req, "serialising")  # unless a write was stored: say so
            if stored is not None:
                data = serialize(stored, keep_alive)
            else:
                log.exception("internal error serving %s %s", req.method, req.path_qs)
                keep_alive = False
                data = (b"HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\nConnection: close\r\n"
                        b"Date: " + _Date.get() + b"\r\n\r\n")
        finally:
            self.task = None
        if self.starting:
            # answered without waiting, inside data_received: written on the loop's next turn with
            # the other connections' answers, as a Task's would be (the client then reads them in
            # one go; writing each at once costs both sides more wake-ups per request under load)
            asyncio.get_running_loop().call_soon(self._answer, data, keep_alive)
        else:
            self._answer(data, keep_alive)

    def _answer(self, data: bytes, keep_alive: bool) -> None:
        t = self.transport
        if self.closed or t is None or t.is_closing():
            return
        t.write(data)
        self.last_active = time.monotonic()
        if not keep_alive:
            t.close()
            return
        self.busy = False
        if self.paused:
            self.paused = False
            t.resume_reading()
        if self.buf:
            self._next()

    def _refuse_body(self) -> None:
        """413 as upstream answers a body over its limit; the connection ends, the rest unread."""
        self.busy = True
        self.buf = bytearray()
        assert self.transport is not None
        err = E.new_request_entity_too_large(f"limit is {self.max_body}")
        self.transport.write(serialize(status_response(err), keep_alive=False))
        self.transport.close()

    def _refuse_head(self) -> None:
        """431 as upstream's Go server answers a head over its limit; the connection ends."""
        self.busy = True
        self.buf = bytearray()
        assert self.transport is not None
        self.transport.write(RESPONSE_431)
        self.transport.close()

    def _hand_off(self) -> None:
        """Give the connection, and what it sent so far, to aiohttp's protocol for good."""
        t = self.transport
        if t is None or t.is_closing():
            return
        self.conns.discard(self)
        proto = self.fallback()
        data = bytes(self.buf)
        self.buf = bytearray()
        self.busy = True  # nothing more is read here
        if self.paused:
            self.paused = False
            t.resume_reading()
        t.set_protocol(proto)
        proto.connection_made(t)
        if data:
            proto.data_received(data)

    def _refuse_draining(self) -> None:
        """A request that arrived after the server began to shut down: not started, 429 (retry)."""
        from .shutdown import retry_after_response

        self.busy = True
        self.buf = bytearray()
        assert self.transport is not None
        self.transport.write(serialize(retry_after_response(), keep_alive=False))
        self.transport.close()

    def drain(self, idle_grace: float) -> None:
        """The server shuts down: the request in flight is answered last; an idle connection is
        closed once idle for `idle_grace` (a request on its way then gets 429, not a reset).
        Idle counts from the first call at the earliest: bytes that came while the loop was busy
        are only read once it runs again."""
        if not self.draining:
            self.draining = True
            self.last_active = time.monotonic()
        t = self.transport
        if self.busy or t is None or t.is_closing():
            return
        if self.buf:
            self._next()  # a request whose head came whole is refused, its body unread
            if self.busy:
                return
        if time.monotonic() - self.last_active >= idle_grace:
            t.close()  # idle, or a head that did not come whole within the grace

    def abort(self) -> None:
        if self.transport is not None:
            self.transport.abort()

    def close_idle(self) -> None:
        if not self.busy and self.transport is not None:
            self.transport.close()
