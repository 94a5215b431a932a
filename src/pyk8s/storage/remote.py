"""The embedded store shared with API worker processes over a unix socket.

`pyk8s server --api-workers N` runs N-1 extra API server processes beside the main one, so
request handling (decoding, validation, admission, managedFields, encoding) uses every core
instead of one: CPython runs Python code on one core per process. The main process owns the
SQLite store (one writer: group commit, the revision counter and durability stay exactly as
with one process) and serves it to the workers with `StoreServer`; each worker's `RemoteStore`
is a `Store` like the etcd backend: its watch cache follows a watch, consistent reads first ask
the owner for its current revision.

Wire format, both ways: frames of `>II` (header length, blob length), an orjson header, then
the blob: the values named in the header, back to back (object JSON stays raw bytes). Requests
carry an id that the answers repeat; a watch answers with any number of event frames.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import os
import struct
from collections.abc import AsyncIterator
from typing import Any

import orjson

from .interface import (
    DELETE,
    PUT,
    CompactedError,
    ConflictError,
    Event,
    FutureRevisionError,
    KeyExistsError,
    KeyNotFoundError,
    KeyValue,
    RangeResult,
    Store,
    StoreError,
)

__all__ = ["RemoteStore", "StoreServer"]

log = logging.getLogger(__name__)

_HEAD = struct.Struct(">II")


def _frame(header: list[Any], blobs: list[bytes] | tuple[bytes, ...] = ()) -> bytes:
    h = orjson.dumps(header)
    body = b"".join(blobs)
    return _HEAD.pack(len(h), len(body)) + h + body


class _Framed(asyncio.Protocol):
    """Splits the byte stream into (header, blob) frames for `on_frame`."""

    def __init__(self) -> None:
        self._buf = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        buf = self._buf
        buf += data
        pos = 0
        n = len(buf)
        while n - pos >= 8:
            hl, bl = _HEAD.unpack_from(buf, pos)
            end = pos + 8 + hl + bl
            if end > n:
                break
            header = orjson.loads(bytes(buf[pos + 8:pos + 8 + hl]))
            blob = bytes(buf[pos + 8 + hl:end])
            pos = end
            self.on_frame(header, blob)
        if pos:
            del buf[:pos]

    def send(self, frame: bytes) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(frame)

    def on_frame(self, header: list[Any], blob: bytes) -> None:
        raise NotImplementedError


# ---- values on the wire ------------------------------------------------------------------------

def _kv_head(kv: KeyValue) -> list[Any]:
    return [kv.key, kv.create_revision, kv.mod_revision, len(kv.value)]


def _kv_from(h: list[Any], blob: bytes, pos: int) -> tuple[KeyValue, int]:
    end = pos + h[3]
    return KeyValue(h[0], blob[pos:end], h[1], h[2]), end


def _event_head(e: Event) -> list[Any]:
    p = e.prev
    return [e.type == PUT, e.kv.key, e.kv.create_revision, e.kv.mod_revision, e.revision, len(e.kv.value),
            p.create_revision if p else 0, p.mod_revision if p else 0, len(p.value) if p else -1]


def _error_head(e: BaseException) -> list[Any]:
    if isinstance(e, KeyExistsError):
        return ["exists", e.key]
    if isinstance(e, KeyNotFoundError):
        return ["notfound", e.key]
    if isinstance(e, ConflictError):
        return ["conflict", e.key]
    if isinstance(e, CompactedError):
        return ["compacted", e.requested, e.compacted]
    if isinstance(e, FutureRevisionError):
        return ["future", e.requested, e.current]
    return ["store", str(e)]


def _error_from(h: list[Any]) -> StoreError:
    kind = h[0]
    if kind == "exists":
        return KeyExistsError(h[1])
    if kind == "notfound":
        return KeyNotFoundError(h[1])
    if kind == "conflict":
        return ConflictError(h[1], None)
    if kind == "compacted":
        return CompactedError(h[1], h[2])
    if kind == "future":
        return FutureRevisionError(h[1], h[2])
    return StoreError(h[1])


# ---- the owner's side --------------------------------------------------------------------------

class StoreServer:
    """Serves `store` (the main process's embedded store) on a unix socket to API workers."""

    def __init__(self, store: Store, path: str) -> None:
        self.store = store
        self.path = path
        self._server: asyncio.AbstractServer | None = None
        self._conns: set[_ServerConn] = set()

    async def start(self) -> None:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)
        loop = asyncio.get_running_loop()
        old = os.umask(0o177)  # the socket gives full access to the store: owner only
        try:
            self._server = await loop.create_unix_server(lambda: _ServerConn(self), self.path)
        finally:
            os.umask(old)

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        for c in list(self._conns):
            c.close()
        with contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)


class _ServerConn(_Framed):
    def __init__(self, owner: StoreServer) -> None:
        super().__init__()
        self.owner = owner
        self.store = owner.store
        self._watches: dict[int, asyncio.Task[None]] = {}
        self._tasks: set[asyncio.Task[None]] = set()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        super().connection_made(transport)
        self.owner._conns.add(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._conns.discard(self)
        for t in list(self._watches.values()) + list(self._tasks):
            t.cancel()

    def close(self) -> None:
        if self.transport is not None:
            self.transport.close()

    def on_frame(self, h: list[Any], blob: bytes) -> None:
        rid, op = h[0], h[1]
        if op == "watch":
            self._watches[rid] = asyncio.ensure_future(self._watch(rid, h[2], h[3]))
        elif op == "cancel":
            t = self._watches.pop(rid, None)
            if t is not None:
                t.cancel()
        elif op == "range":  # its answer carries many values
            self._spawn(self._range(rid, h))
        elif op == "rev":
            self.send(_frame([rid, "ok", self.store.revision, self.store.compacted_revision]))
        else:
            self._spawn(self._call(rid, op, h, blob))

    def _spawn(self, coro: Any) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    async def _call(self, rid: int, op: str, h: list[Any], blob: bytes) -> None:
        s = self.store
        try:
            if op == "create":
                kv: KeyValue | None = await s.create(h[2], blob)
            elif op == "update":
                kv = await s.update(h[2], blob, h[3])
            elif op == "delete":
                kv = await s.delete(h[2], h[3])
            elif op == "get":
                kv = await s.get(h[2])
            elif op == "compact":
                await s.compact(h[3])
                kv = None
            else:
                raise StoreError(f"unknown store operation {op!r}")
        except StoreError as e:
            self.send(_frame([rid, "err", *_error_head(e)]))
            return
        except Exception as e:  # the worker must hear of it, not hang
            log.exception("store %s for a worker failed", op)
            self.send(_frame([rid, "err", "store", f"storage error: {e}"]))
            return
        if kv is None:
            self.send(_frame([rid, "ok", None]))
        else:
            self.send(_frame([rid, "ok", _kv_head(kv)], (kv.value,)))

    async def _range(self, rid: int, h: list[Any]) -> None:
        try:
            r = await self.store.range(h[2], revision=h[3], limit=h[4], start_after=h[5], count=h[6])
        except StoreError as e:
            self.send(_frame([rid, "err", *_error_head(e)]))
            return
        self.send(_frame([rid, "ok", r.revision, r.more, r.count, [_kv_head(kv) for kv in r.kvs]],
                         [kv.value for kv in r.kvs]))

    async def _watch(self, rid: int, prefix: str, start: int) -> None:
        try:
            async for batch in self.store.watch(prefix, start):
                blobs: list[bytes] = []
                for e in batch:
                    blobs.append(e.kv.value)
                    if e.prev is not None:
                        blobs.append(e.prev.value)
                self.send(_frame([rid, "ev", [_event_head(e) for e in batch]], blobs))
        except StoreError as e:
            self.send(_frame([rid, "err", *_error_head(e)]))
        except asyncio.CancelledError:
            pass
        finally:
            self._watches.pop(rid, None)


# ---- the worker's side -------------------------------------------------------------------------

class _ClientConn(_Framed):
    def __init__(self, owner: RemoteStore) -> None:
        super().__init__()
        self.owner = owner

    def on_frame(self, h: list[Any], blob: bytes) -> None:
        self.owner._answer(h, blob)

    def connection_lost(self, exc: Exception | None) -> None:
        self.owner._lost(exc)


class RemoteStore(Store):
    """A `Store` served by another process's `StoreServer` (`unix://PATH`)."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._conn: _ClientConn | None = None
        self._ids = itertools.count(1)
        self._calls: dict[int, asyncio.Future[Any]] = {}
        self._watches: dict[int, asyncio.Queue[Any]] = {}
        self._revision = 0
        self._compacted = 0
        self._closed = False
        self.on_lost: Any = None  # called once the connection to the owner is gone (a worker exits then)

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        try:
            _, self._conn = await loop.create_unix_connection(lambda: _ClientConn(self), self.path)
        except OSError as e:
            raise StoreError(f"cannot reach the store at {self.path}: {e}") from None
        await self.current_revision()

    async def close(self) -> None:
        self._closed = True
        if self._conn is not None and self._conn.transport is not None:
            self._conn.transport.close()

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def _lost(self, exc: Exception | None) -> None:
        err = StoreError("store closed" if self._closed else f"lost the store connection: {exc or 'closed'}")
        for f in self._calls.values():
            if not f.done():
                f.set_exception(err)
        self._calls.clear()
        for q in self._watches.values():
            q.put_nowait(err)
        self._conn = None
        if self.on_lost is not None and not self._closed:
            self.on_lost()

    def _answer(self, h: list[Any], blob: bytes) -> None:
        rid, status = h[0], h[1]
        q = self._watches.get(rid)
        if q is not None:
            if status == "ev":
                events = self._events(h[2], blob)
                if events:
                    self._revision = max(self._revision, events[-1].revision)
                q.put_nowait(events)
            else:
                q.put_nowait(_error_from(h[2:]))
            return
        f = self._calls.pop(rid, None)
        if f is None or f.done():
            return
        if status == "err":
            err = _error_from(h[2:])
            if isinstance(err, CompactedError):
                self._compacted = max(self._compacted, err.compacted)
            f.set_exception(err)
        else:
            f.set_result((h, blob))

    @staticmethod
    def _events(heads: list[list[Any]], blob: bytes) -> list[Event]:
        out: list[Event] = []
        pos = 0
        for put, key, created, mod, rev, vlen, pcreated, pmod, plen in heads:
            value = blob[pos:pos + vlen]
            pos += vlen
            prev = None
            if plen >= 0:
                prev = KeyValue(key, blob[pos:pos + plen], pcreated, pmod)
                pos += plen
            out.append(Event(PUT if put else DELETE, KeyValue(key, value, created, mod), rev, prev))
        return out

    async def _call(self, header: list[Any], value: bytes = b"") -> tuple[list[Any], bytes]:
        if self._conn is None:
            raise StoreError("store closed" if self._closed else f"not connected to the store at {self.path}")
        rid = next(self._ids)
        fut: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._calls[rid] = fut
        self._conn.send(_frame([rid, *header], (value,) if value else ()))
        return await fut

    def _kv(self, h: list[Any], blob: bytes) -> KeyValue:
        kv, _ = _kv_from(h, blob, 0)
        if kv.mod_revision > self._revision:
            self._revision = kv.mod_revision
        return kv

    async def current_revision(self) -> int:
        h, _ = await self._call(["rev"])
        self._revision = max(self._revision, h[2])
        self._compacted = max(self._compacted, h[3])
        return int(h[2])

    async def get(self, key: str) -> KeyValue | None:
        h, blob = await self._call(["get", key])
        return None if h[2] is None else self._kv(h[2], blob)

    async def range(
        self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None, count: bool = False
    ) -> RangeResult:
        h, blob = await self._call(["range", prefix, revision, limit, start_after, count])
        kvs: list[KeyValue] = []
        pos = 0
        for kh in h[5]:
            kv, pos = _kv_from(kh, blob, pos)
            kvs.append(kv)
        self._revision = max(self._revision, h[2])
        return RangeResult(kvs, h[2], h[3], h[4])

    async def create(self, key: str, value: bytes) -> KeyValue:
        h, blob = await self._call(["create", key], value)
        return self._kv(h[2], blob)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        h, blob = await self._call(["update", key, expected_mod_revision], value)
        return self._kv(h[2], blob)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        h, blob = await self._call(["delete", key, expected_mod_revision])
        return self._kv(h[2], blob)

    async def compact(self, revision: int) -> None:
        await self._call(["compact", "", revision])

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        return self._watch(prefix, start_revision)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        if self._conn is None:
            raise StoreError("store closed" if self._closed else f"not connected to the store at {self.path}")
        rid = next(self._ids)
        q: asyncio.Queue[Any] = asyncio.Queue()
        self._watches[rid] = q
        self._conn.send(_frame([rid, "watch", prefix, start_revision]))
        try:
            while True:
                item = await q.get()
                if isinstance(item, BaseException):
                    raise item
                if item:
                    yield item
        finally:
            self._watches.pop(rid, None)
            if self._conn is not None:
                self._conn.send(_frame([rid, "cancel"]))
