"""SPDY/3.1 framing and a minimal session, as kubectl's SPDY client (moby/spdystream) speaks it.

Only what Kubernetes' streaming protocols need: streams opened by the peer with
SYN_STREAM (headers pick the stream's role), answered with SYN_REPLY, DATA in both
directions with FIN half-closes, RST_STREAM, PING echo, GOAWAY. Header blocks are
compressed with one zlib stream per direction, primed with the SPDY/3 dictionary and
sync-flushed after every block (draft-mbelshe-httpbis-spdy-00, 2.6.10).

spdystream does no flow control (it never sends WINDOW_UPDATE and ignores those it
gets), so neither do we: honouring the 64 KiB initial window would stall every stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import struct
import zlib
from collections.abc import Awaitable, Callable

from ...streaming.conn import ByteConn, StreamsConn  # noqa: F401  (StreamsConn: re-exported for clients)

log = logging.getLogger("pyk8s.kubelet.streaming.spdy")

VERSION = 3

SYN_STREAM = 1
SYN_REPLY = 2
RST_STREAM = 3
SETTINGS = 4
PING = 6
GOAWAY = 7
HEADERS = 8
WINDOW_UPDATE = 9

FLAG_FIN = 0x01
FLAG_UNIDIRECTIONAL = 0x02

# RST_STREAM status codes
PROTOCOL_ERROR = 1
INVALID_STREAM = 2
REFUSED_STREAM = 3
CANCEL = 5
INTERNAL_ERROR = 6

MAX_DATA = 32 * 1024  # what we put in one DATA frame (the protocol allows 16 MiB)
STREAM_BUFFER = 1024 * 1024  # unread bytes per stream before we stop reading the connection


def _dictionary() -> bytes:
    """The SPDY/3 header-compression dictionary: length-prefixed words, then a run of common values."""
    words = (
        "options head post put delete trace accept accept-charset accept-encoding accept-language "
        "accept-ranges age allow authorization cache-control connection content-base content-encoding "
        "content-language content-length content-location content-md5 content-range content-type date etag "
        "expect expires from host if-match if-modified-since if-none-match if-range if-unmodified-since "
        "last-modified location max-forwards pragma proxy-authenticate proxy-authorization range referer "
        "retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate "
        "method get status"
    ).split() + ["200 OK", "version", "HTTP/1.1", "url", "public", "set-cookie", "keep-alive", "origin"]
    tail = (
        "100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505"
        "203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized"
        "403 Forbidden404 Not Found500 Internal Server Error501 Not Implemented503 Service Unavailable"
        "Jan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMT"
        "chunked,text/html,image/png,image/jpg,image/gif,application/xml,application/xhtml+xml,text/plain,"
        "text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0."
    )
    out = bytearray()
    for w in words:
        out += struct.pack(">I", len(w)) + w.encode()
    return bytes(out) + tail.encode()


DICTIONARY = _dictionary()


class ProtocolError(Exception):
    pass


# ---------------------------------------------------------------------------- header blocks


class HeaderCodec:
    """One direction's zlib state each way: header blocks share a single compression stream."""

    def __init__(self) -> None:
        self._c = zlib.compressobj(9, zlib.DEFLATED, 15, 8, zlib.Z_DEFAULT_STRATEGY, DICTIONARY)
        self._d = zlib.decompressobj(15, DICTIONARY)

    def encode(self, headers: dict[str, list[str]]) -> bytes:
        raw = bytearray(struct.pack(">I", len(headers)))
        for name, values in headers.items():
            n = name.lower().encode()  # spdystream rejects upper-case names
            v = "\x00".join(values).encode()
            raw += struct.pack(">I", len(n)) + n + struct.pack(">I", len(v)) + v
        return self._c.compress(bytes(raw)) + self._c.flush(zlib.Z_SYNC_FLUSH)

    def decode(self, block: bytes) -> dict[str, list[str]]:
        try:
            raw = self._d.decompress(block)
        except zlib.error as e:
            raise ProtocolError(f"header block: {e}") from e
        try:
            (n,) = struct.unpack_from(">I", raw, 0)
            off = 4
            out: dict[str, list[str]] = {}
            for _ in range(n):
                (ln,) = struct.unpack_from(">I", raw, off)
                name = raw[off + 4: off + 4 + ln].decode("latin-1").lower()
                off += 4 + ln
                (lv,) = struct.unpack_from(">I", raw, off)
                value = raw[off + 4: off + 4 + lv].decode("latin-1")
                off += 4 + lv
                out.setdefault(name, []).extend(value.split("\x00"))
        except struct.error as e:
            raise ProtocolError("truncated header block") from e
        return out


# ---------------------------------------------------------------------------- frames


def control_frame(ftype: int, flags: int, payload: bytes) -> bytes:
    return struct.pack(">HHI", 0x8000 | VERSION, ftype, (flags << 24) | len(payload)) + payload


def data_frame(stream_id: int, data: bytes, fin: bool = False) -> bytes:
    return struct.pack(">II", stream_id & 0x7FFFFFFF, ((FLAG_FIN if fin else 0) << 24) | len(data)) + data


class Frame:
    __slots__ = ("control", "type", "flags", "stream_id", "payload")

    def __init__(self, control: bool, ftype: int, flags: int, stream_id: int, payload: bytes) -> None:
        self.control = control
        self.type = ftype
        self.flags = flags
        self.stream_id = stream_id
        self.payload = payload


class FrameReader:
    """Incremental parser: feed bytes, take whole frames."""

    def __init__(self) -> None:
        self._buf = bytearray()

    def feed(self, data: bytes) -> list[Frame]:
        self._buf += data
        frames: list[Frame] = []
        buf = self._buf
        while len(buf) >= 8:
            w0, w1 = struct.unpack_from(">II", buf, 0)
            length = w1 & 0xFFFFFF
            if len(buf) < 8 + length:
                break
            payload = bytes(buf[8: 8 + length])
            flags = w1 >> 24
            if w0 & 0x80000000:
                version = (w0 >> 16) & 0x7FFF
                if version != VERSION:
                    raise ProtocolError(f"unsupported SPDY version {version}")
                ftype = w0 & 0xFFFF
                sid = struct.unpack_from(">I", payload, 0)[0] & 0x7FFFFFFF if ftype in (
                    SYN_STREAM, SYN_REPLY, RST_STREAM, HEADERS, WINDOW_UPDATE) and length >= 4 else 0
                frames.append(Frame(True, ftype, flags, sid, payload))
            else:
                frames.append(Frame(False, 0, flags, w0 & 0x7FFFFFFF, payload))
            del buf[: 8 + length]
        return frames


# ---------------------------------------------------------------------------- transport


# ---------------------------------------------------------------------------- session


class Stream:
    """One SPDY stream. `read()` returns b"" once the peer half-closed (FIN) or reset it."""

    def __init__(self, session: Session, stream_id: int, headers: dict[str, list[str]]) -> None:
        self.session = session
        self.id = stream_id
        self.headers = headers
        self._data: asyncio.Queue[bytes] = asyncio.Queue()
        self._buffered = 0
        self._drained = asyncio.Event()
        self._drained.set()
        self.abandoned = False  # nobody reads this stream any more: what arrives is dropped
        self.remote_closed = False
        self.local_closed = False
        self.reset_by_peer = False
        self.replied = asyncio.Event()

    def header(self, name: str, default: str = "") -> str:
        v = self.headers.get(name.lower())
        return v[0] if v else default

    def _on_data(self, data: bytes, fin: bool) -> None:
        if self.remote_closed:
            return
        if data and not self.abandoned:
            self._data.put_nowait(data)
            self._buffered += len(data)
            if self._buffered > STREAM_BUFFER:
                self._drained.clear()
        if fin:
            self.remote_closed = True
            self._data.put_nowait(b"")

    def _on_reset(self) -> None:
        self.reset_by_peer = True
        self.local_closed = True
        self._drained.set()
        if not self.remote_closed:
            self.remote_closed = True
            self._data.put_nowait(b"")

    async def read(self) -> bytes:
        if self.remote_closed and self._data.empty():
            return b""
        data = await self._data.get()
        self._buffered -= len(data)
        if self._buffered <= STREAM_BUFFER:
            self._drained.set()
        return data

    def abandon(self) -> None:
        """Stop buffering what the peer still sends on this stream (it would hold up the whole connection)."""
        self.abandoned = True
        while not self._data.empty():
            self._data.get_nowait()
        self._buffered = 0
        self._drained.set()

    async def write(self, data: bytes) -> None:
        if self.local_closed:
            raise ConnectionResetError(f"write on closed stream {self.id}")
        for i in range(0, len(data), MAX_DATA):
            await self.session._send(data_frame(self.id, data[i: i + MAX_DATA]))

    async def close(self) -> None:
        """Half-close: FIN, nothing more from us."""
        if self.local_closed:
            return
        self.local_closed = True
        with contextlib.suppress(ConnectionError, OSError):
            await self.session._send(data_frame(self.id, b"", fin=True))

    async def reset(self, status: int = CANCEL) -> None:
        self.local_closed = True
        self._on_reset()
        with contextlib.suppress(ConnectionError, OSError):
            await self.session._send(control_frame(RST_STREAM, 0, struct.pack(">II", self.id, status)))


class Session:
    """A SPDY connection. The server side answers every peer stream with SYN_REPLY and hands it to `on_stream`."""

    def __init__(self, conn: ByteConn, *, server: bool,
                 on_stream: Callable[[Stream], Awaitable[None] | None] | None = None) -> None:
        self.conn = conn
        self.server = server
        self.on_stream = on_stream
        self.codec = HeaderCodec()
        self.streams: dict[int, Stream] = {}
        self.incoming: asyncio.Queue[Stream | None] = asyncio.Queue()
        self._next_id = 2 if server else 1
        self._next_ping = 2 if server else 1
        self._pings: dict[int, asyncio.Future[None]] = {}
        self._wlock = asyncio.Lock()
        self._reader: asyncio.Task[None] | None = None
        self.closed = asyncio.Event()
        self.went_away = False
        self._last_peer_id = 0

    def start(self) -> None:
        self._reader = asyncio.get_running_loop().create_task(self._read_loop(), name="spdy-read")

    async def _send(self, frame: bytes) -> None:
        if self.closed.is_set():
            raise ConnectionResetError("SPDY connection closed")
        async with self._wlock:  # a frame is written whole, never interleaved
            await self.conn.write(frame)

    async def _send_with_headers(self, ftype: int, flags: int, prefix: bytes, headers: dict[str, list[str]]) -> None:
        if self.closed.is_set():
            raise ConnectionResetError("SPDY connection closed")
        async with self._wlock:
            # compress under the write lock: header blocks must reach the peer in compression order
            await self.conn.write(control_frame(ftype, flags, prefix + self.codec.encode(headers)))

    async def _read_loop(self) -> None:
        parser = FrameReader()
        try:
            while True:
                chunk = await self.conn.read()
                if not chunk:
                    break
                for f in parser.feed(chunk):
                    await self._handle(f)
        except ProtocolError as e:
            log.info("SPDY protocol error: %s", e)
            with contextlib.suppress(Exception):
                await self._send(control_frame(GOAWAY, 0, struct.pack(">II", self._last_peer_id, 1)))
        except (ConnectionError, OSError):
            pass
        finally:
            self._shutdown()

    def _shutdown(self) -> None:
        if self.closed.is_set():
            return
        self.closed.set()
        for s in list(self.streams.values()):
            s._on_reset()
        self.incoming.put_nowait(None)
        for fut in self._pings.values():
            if not fut.done():
                fut.set_exception(ConnectionResetError("connection closed"))

    async def _handle(self, f: Frame) -> None:
        if not f.control:
            s = self.streams.get(f.stream_id)
            if s is not None:
                s._on_data(f.payload, bool(f.flags & FLAG_FIN))
                # A reader that falls behind stops us reading the connection, as spdystream's unbuffered
                # channels do: SPDY here has no per-stream flow control to push back with.
                await s._drained.wait()
            return
        if f.type == SYN_STREAM:
            if len(f.payload) < 10:
                raise ProtocolError("short SYN_STREAM")
            headers = self.codec.decode(f.payload[10:])  # always decode: the zlib stream must advance
            sid = f.stream_id
            peer_parity = 1 if self.server else 0
            if sid % 2 != peer_parity or sid <= self._last_peer_id or self.went_away:
                await self._send(control_frame(RST_STREAM, 0, struct.pack(">II", sid, PROTOCOL_ERROR)))
                return
            self._last_peer_id = sid
            s = Stream(self, sid, headers)
            self.streams[sid] = s
            if f.flags & FLAG_FIN:
                s._on_data(b"", True)
            if f.flags & FLAG_UNIDIRECTIONAL:
                s.local_closed = True
            await self._send_with_headers(SYN_REPLY, 0, struct.pack(">I", sid), {})
            s.replied.set()
            if self.on_stream is not None:
                r = self.on_stream(s)
                if r is not None:
                    await r
            else:
                self.incoming.put_nowait(s)
        elif f.type == SYN_REPLY:
            self.codec.decode(f.payload[4:])
            s = self.streams.get(f.stream_id)
            if s is not None:
                s.replied.set()
                if f.flags & FLAG_FIN:
                    s._on_data(b"", True)
        elif f.type == HEADERS:
            self.codec.decode(f.payload[4:])
            s = self.streams.get(f.stream_id)
            if s is not None and f.flags & FLAG_FIN:
                s._on_data(b"", True)
        elif f.type == RST_STREAM:
            s = self.streams.pop(f.stream_id, None)
            if s is not None:
                s._on_reset()
        elif f.type == PING:
            (pid,) = struct.unpack(">I", f.payload[:4])
            if pid % 2 == self._next_ping % 2:  # the answer to one of ours
                fut = self._pings.pop(pid, None)
                if fut is not None and not fut.done():
                    fut.set_result(None)
            else:
                await self._send(control_frame(PING, 0, f.payload[:4]))
        elif f.type == GOAWAY:
            self.went_away = True
        # SETTINGS, WINDOW_UPDATE: nothing to do (no flow control, see the module doc)

    # ---- client-side helpers (tests, and tunnels that originate streams)

    async def open_stream(self, headers: dict[str, str], fin: bool = False) -> Stream:
        sid = self._next_id
        self._next_id += 2
        s = Stream(self, sid, {k.lower(): [v] for k, v in headers.items()})
        self.streams[sid] = s
        await self._send_with_headers(SYN_STREAM, FLAG_FIN if fin else 0, struct.pack(">IIBB", sid, 0, 0, 0), s.headers)
        if fin:
            s.local_closed = True
        return s

    async def ping(self, timeout: float = 10.0) -> None:
        pid = self._next_ping
        self._next_ping += 2
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._pings[pid] = fut
        await self._send(control_frame(PING, 0, struct.pack(">I", pid)))
        await asyncio.wait_for(fut, timeout)

    async def accept(self) -> Stream | None:
        """The next stream the peer opened (server side without `on_stream`); None once the connection is gone."""
        s = await self.incoming.get()
        if s is None:
            self.incoming.put_nowait(None)
        return s

    async def close(self) -> None:
        """GOAWAY, then close the transport (after what we queued has been written)."""
        if not self.closed.is_set():
            with contextlib.suppress(Exception):
                await self._send(control_frame(GOAWAY, 0, struct.pack(">II", self._last_peer_id, 0)))
        self._shutdown()
        # the reader stops before the transport closes (a WebSocket tunnel wants no pending receive then)
        if self._reader is not None and self._reader is not asyncio.current_task():
            self._reader.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._reader
        await self.conn.close()
