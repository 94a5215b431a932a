"""Embedded SQLite backend: an MVCC log of revisions, in WAL mode, with group commit.

Layout (one row per write, like kine's): `kv(rev PK, key, created, deleted, prev_rev, value)`.
The newest row of a key is its current value; a row with deleted=1 is a tombstone.
Compaction removes rows superseded at or before the compact revision.

Writes go through one writer thread that drains every queued write into one
transaction (group commit): concurrent clients share one fsync (synchronous=FULL), so
an acknowledged write survives kill -9 and power loss. The writer keeps the current
revision of every key in memory to check preconditions without reading the database.
Reads run on the event loop thread with their own connection; WAL lets them proceed
while the writer commits.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import os
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

from ..datadir import create_private_file, ensure_private_file
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

__all__ = ["SQLiteStore"]

# lock file -> (descriptor, stores of this process using it)
_LOCKS: dict[str, tuple[int, int]] = {}

_SCHEMA = """
CREATE TABLE IF NOT EXISTS kv (
    rev INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    created INTEGER NOT NULL,
    deleted INTEGER NOT NULL DEFAULT 0,
    prev_rev INTEGER NOT NULL DEFAULT 0,
    value BLOB
);
CREATE INDEX IF NOT EXISTS kv_key_rev ON kv(key, rev);
CREATE TABLE IF NOT EXISTS meta (name TEXT PRIMARY KEY, value INTEGER NOT NULL);
"""

_MAX_BATCH = 2000


@dataclass(slots=True)
class _Op:
    kind: str  # create | update | delete | compact
    key: str
    value: bytes | None
    expected: int
    future: asyncio.Future[Any]


def _prefix_end(prefix: str) -> str:
    """The smallest string greater than every string starting with prefix."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1) if prefix else "\U0010ffff"


class SQLiteStore(Store):
    def __init__(
        self,
        path: str,
        *,
        synchronous: str = "FULL",
        on_events: Callable[[list[Event]], None] | None = None,
    ) -> None:
        self.path = path
        self.synchronous = synchronous
        self._loop: asyncio.AbstractEventLoop | None = None
        self._queue: queue.SimpleQueue[_Op | None] = queue.SimpleQueue()
        self._thread: threading.Thread | None = None
        self._rconn: sqlite3.Connection | None = None
        self._revision = 0  # published on the loop after commit
        self._wrev = 0  # the writer thread's own latest revision
        self._compacted = 0
        # writer-private: key -> (create_rev, mod_rev) of live keys
        self._live: dict[str, tuple[int, int]] = {}
        self._watchers: list[_Watcher] = []
        self._on_events = on_events
        self._closed = False
        self._lock_path: str | None = None
        self.batches = 0  # commits made (for benchmarks: writes per fsync)

    # ---- lifecycle -------------------------------------------------------------------------
    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={self.synchronous}")
        conn.execute("PRAGMA busy_timeout=10000")
        return conn

    async def start(self) -> None:
        self._loop = asyncio.get_running_loop()
        d = os.path.dirname(os.path.abspath(self.path))
        os.makedirs(d, exist_ok=True)
        # every object's plaintext: 0600 whatever the umask (SQLite gives its WAL and SHM the db's mode)
        create_private_file(self.path)
        self._lock()
        for suffix in ("-wal", "-shm", "-journal"):
            ensure_private_file(self.path + suffix)
        conn = sqlite3.connect(self.path, isolation_level=None)
        conn.execute("PRAGMA auto_vacuum=INCREMENTAL")  # only takes effect on a new database
        conn.executescript(_SCHEMA)
        conn.close()
        wconn = self._connect()
        row = wconn.execute("SELECT max(rev) FROM kv").fetchone()
        self._revision = max(row[0] or 0, self._meta(wconn, "revision"))
        self._compacted = self._meta(wconn, "compacted")
        self._wrev = self._revision
        # the live set: newest row per key that is not a tombstone
        for key, created, rev, deleted in wconn.execute(
            "SELECT key, created, rev, deleted FROM kv WHERE rev IN (SELECT max(rev) FROM kv GROUP BY key)"
        ):
            if not deleted:
                self._live[key] = (created, rev)
        self._rconn = self._connect()
        self._thread = threading.Thread(target=self._writer, args=(wconn,), name="sqlite-writer", daemon=True)
        self._thread.start()

    def _lock(self) -> None:
        """One process per database: the writer keeps revisions and live keys in memory, so a
        second writer would hand out revisions the first already used. A POSIX lock: not held by
        forked children, and released by the kernel when the process dies (kill -9 included)."""
        path = os.path.realpath(self.path) + ".lock"
        held = _LOCKS.get(path)
        if held is not None:  # this process already holds it (a second store for reading, as migrate's)
            _LOCKS[path] = (held[0], held[1] + 1)
            self._lock_path = path
            return
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            try:
                holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            finally:
                os.close(fd)
            raise StoreError(f"the SQLite database {self.path} is in use by another process (pid {holder}): "
                             "one pyk8s server per database") from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, str(os.getpid()).encode(), 0)
        _LOCKS[path] = (fd, 1)
        self._lock_path = path

    def _unlock(self) -> None:
        path, self._lock_path = self._lock_path, None
        if path is None or path not in _LOCKS:
            return
        fd, n = _LOCKS[path]
        if n > 1:
            _LOCKS[path] = (fd, n - 1)
        else:
            del _LOCKS[path]
            os.close(fd)  # closing any descriptor of the file drops a POSIX lock: only the last one

    @staticmethod
    def _meta(conn: sqlite3.Connection, name: str) -> int:
        row = conn.execute("SELECT value FROM meta WHERE name=?", (name,)).fetchone()
        return int(row[0]) if row else 0

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._queue.put(None)
        if self._thread:
            await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        if self._rconn:
            self._rconn.close()
        self._unlock()
        for w in list(self._watchers):
            w.close(StoreError("store closed"))

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    # ---- reads -----------------------------------------------------------------------------
    async def get(self, key: str) -> KeyValue | None:
        assert self._rconn is not None
        row = self._rconn.execute(
            "SELECT rev, created, deleted, value FROM kv WHERE key=? ORDER BY rev DESC LIMIT 1", (key,)
        ).fetchone()
        if row is None or row[2]:
            return None
        return KeyValue(key, row[3], row[1], row[0])

    async def range(
        self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None, count: bool = False
    ) -> RangeResult:
        assert self._rconn is not None
        conn = self._rconn
        # One read transaction so the revision and the rows agree.
        conn.execute("BEGIN")
        try:
            current = conn.execute("SELECT max(rev) FROM kv").fetchone()[0] or 0
            current = max(current, self._compacted)
            rev = revision or current
            if revision:
                if revision < self._compacted:
                    raise CompactedError(revision, self._compacted)
                if revision > current:
                    raise FutureRevisionError(revision, current)
            lo = prefix if start_after is None else start_after + "\x00"
            hi = _prefix_end(prefix)
            sql = (
                "SELECT kv.key, kv.created, kv.rev, kv.value FROM kv JOIN "
                "(SELECT key AS k, max(rev) AS r FROM kv WHERE key >= ? AND key < ? AND rev <= ? GROUP BY key) m "
                "ON kv.rev = m.r WHERE kv.deleted = 0 ORDER BY kv.key"
            )
            params: list[Any] = [lo, hi, rev]
            if limit:
                sql += " LIMIT ?"
                params.append(limit + 1)
            rows = conn.execute(sql, params).fetchall()
            more = bool(limit) and len(rows) > limit
            if more:
                rows = rows[:limit]
            total = -1
            if count:
                total = conn.execute(
                    "SELECT count(*) FROM kv JOIN (SELECT max(rev) AS r FROM kv WHERE key >= ? AND key < ? "
                    "AND rev <= ? GROUP BY key) m ON kv.rev = m.r WHERE kv.deleted = 0",
                    (lo, hi, rev),
                ).fetchone()[0]
        finally:
            conn.execute("COMMIT")
        return RangeResult([KeyValue(k, v, c, r) for k, c, r, v in rows], rev, more, total)

    def _history(self, prefix: str, after_rev: int, upto_rev: int) -> list[Event]:
        """Events under prefix with after_rev < rev <= upto_rev, read from the log."""
        assert self._rconn is not None
        hi = _prefix_end(prefix)
        out: list[Event] = []
        rows = self._rconn.execute(
            "SELECT a.rev, a.key, a.created, a.deleted, a.value, a.prev_rev, p.value, p.created "
            "FROM kv a LEFT JOIN kv p ON p.rev = a.prev_rev "
            "WHERE a.rev > ? AND a.rev <= ? AND a.key >= ? AND a.key < ? ORDER BY a.rev",
            (after_rev, upto_rev, prefix, hi),
        ).fetchall()
        for rev, key, created, deleted, value, prev_rev, pvalue, pcreated in rows:
            prev = KeyValue(key, pvalue, pcreated, prev_rev) if prev_rev and pvalue is not None else None
            if deleted:
                kv = KeyValue(key, pvalue if pvalue is not None else b"", created, rev)
                out.append(Event(DELETE, kv, rev, prev))
            else:
                out.append(Event(PUT, KeyValue(key, value, created, rev), rev, prev))
        return out

    # ---- writes ----------------------------------------------------------------------------
    def _submit(self, kind: str, key: str, value: bytes | None, expected: int) -> asyncio.Future[Any]:
        if self._closed:
            raise StoreError("store closed")
        assert self._loop is not None
        fut: asyncio.Future[Any] = self._loop.create_future()
        self._queue.put(_Op(kind, key, value, expected, fut))
        return fut

    async def create(self, key: str, value: bytes) -> KeyValue:
        return await self._submit("create", key, value, 0)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        return await self._submit("update", key, value, expected_mod_revision)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        return await self._submit("delete", key, None, expected_mod_revision)

    async def compact(self, revision: int) -> None:
        await self._submit("compact", "", None, revision)

    def _writer(self, conn: sqlite3.Connection) -> None:
        """The single writer: drain the queue, apply every op in one transaction, commit once."""
        q = self._queue
        while True:
            op = q.get()
            if op is None:
                conn.close()
                return
            batch = [op]
            stop = False
            while len(batch) < _MAX_BATCH:
                try:
                    nxt = q.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    stop = True
                    break
                batch.append(nxt)
            self._apply_batch(conn, batch)
            if stop:
                conn.close()
                return

    def _apply_batch(self, conn: sqlite3.Connection, batch: list[_Op]) -> None:
        results: list[tuple[_Op, Any, bool]] = []  # (op, result or exception, ok)
        events: list[Event] = []
        rev = self._wrev
        live = self._live
        undo: list[tuple[str, tuple[int, int] | None]] = []
        compact_to = 0
        try:
            conn.execute("BEGIN IMMEDIATE")
            for op in batch:
                cur = live.get(op.key)
                if op.kind == "compact":
                    compact_to = max(compact_to, op.expected)
                    results.append((op, None, True))
                    continue
                if op.kind == "create":
                    if cur is not None:
                        results.append((op, KeyExistsError(op.key), False))
                        continue
                    rev += 1
                    conn.execute(
                        "INSERT INTO kv(rev, key, created, deleted, prev_rev, value) VALUES (?,?,?,0,0,?)",
                        (rev, op.key, rev, op.value),
                    )
                    kv = KeyValue(op.key, op.value or b"", rev, rev)
                    undo.append((op.key, cur))
                    live[op.key] = (rev, rev)
                    events.append(Event(PUT, kv, rev, None))
                    results.append((op, kv, True))
                    continue
                # update / delete
                if cur is None:
                    results.append((op, KeyNotFoundError(op.key), False))
                    continue
                created, mod = cur
                if op.expected and op.expected != mod:
                    results.append((op, ConflictError(op.key, None), False))
                    continue
                prev_value = conn.execute("SELECT value FROM kv WHERE rev=?", (mod,)).fetchone()
                prev = KeyValue(op.key, prev_value[0] if prev_value else b"", created, mod)
                rev += 1
                if op.kind == "update":
                    conn.execute(
                        "INSERT INTO kv(rev, key, created, deleted, prev_rev, value) VALUES (?,?,?,0,?,?)",
                        (rev, op.key, created, mod, op.value),
                    )
                    kv = KeyValue(op.key, op.value or b"", created, rev)
                    undo.append((op.key, cur))
                    live[op.key] = (created, rev)
                    events.append(Event(PUT, kv, rev, prev))
                    results.append((op, kv, True))
                else:
                    conn.execute(
                        "INSERT INTO kv(rev, key, created, deleted, prev_rev, value) VALUES (?,?,?,1,?,NULL)",
                        (rev, op.key, created, mod),
                    )
                    kv = KeyValue(op.key, prev.value, created, rev)
                    undo.append((op.key, cur))
                    del live[op.key]
                    events.append(Event(DELETE, kv, rev, prev))
                    results.append((op, kv, True))
            if rev != self._wrev:
                conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('revision', ?)", (rev,))
            conn.execute("COMMIT")
        except Exception as e:  # the whole batch failed: nothing was written
            with contextlib.suppress(Exception):
                conn.execute("ROLLBACK")
            for key, old in reversed(undo):
                if old is None:
                    live.pop(key, None)
                else:
                    live[key] = old
            err = StoreError(f"storage write failed: {e}")
            results = [(op, err, False) for op in batch]
            events = []
            rev = self._wrev
        self._wrev = rev
        self.batches += 1
        new_rev = rev
        if compact_to:
            self._do_compact(conn, min(compact_to, new_rev))
        assert self._loop is not None
        try:
            self._loop.call_soon_threadsafe(self._committed, new_rev, events, results)
        except RuntimeError:  # loop closed during shutdown
            pass

    def _do_compact(self, conn: sqlite3.Connection, to: int) -> None:
        if to <= self._compacted:
            return
        # In chunks, so a large compaction never holds the write lock for long.
        lo = self._compacted
        step = 20000
        while lo < to:
            hi = min(lo + step, to)
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "DELETE FROM kv WHERE rev IN (SELECT prev_rev FROM kv WHERE rev > ? AND rev <= ? AND prev_rev > 0)",
                (lo, hi),
            )
            conn.execute("DELETE FROM kv WHERE deleted = 1 AND rev > ? AND rev <= ?", (lo, hi))
            conn.execute("INSERT OR REPLACE INTO meta(name, value) VALUES ('compacted', ?)", (hi,))
            conn.execute("COMMIT")
            lo = hi
        self._compacted = to
        with contextlib.suppress(sqlite3.Error):
            conn.execute("PRAGMA incremental_vacuum")
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def _committed(self, new_rev: int, events: list[Event], results: list[tuple[_Op, Any, bool]]) -> None:
        """On the loop: publish the revision, fan out events, then resolve the writers' futures.

        Events reach watchers (the API server's watch cache) before any client hears its
        write succeeded, so a client reading after its write sees it.
        """
        self._revision = new_rev
        if events:
            if self._on_events is not None:
                self._on_events(events)
            for w in self._watchers:
                w.offer(events)
        for op, res, ok in results:
            if op.future.done():
                continue
            if ok:
                op.future.set_result(res)
            else:
                op.future.set_exception(res)

    # ---- watch -----------------------------------------------------------------------------
    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        return self._watch(prefix, start_revision)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        w = _Watcher(prefix)
        self._watchers.append(w)
        try:
            if start_revision and start_revision <= self._compacted:
                raise CompactedError(start_revision, self._compacted)
            upto = self._revision
            last = upto
            if start_revision and start_revision <= upto:
                hist = self._history(prefix, start_revision - 1, upto)
                if hist:
                    yield hist
            elif not start_revision:
                last = upto
            while True:
                batch = await w.get()
                batch = [e for e in batch if e.revision > last]
                if batch:
                    last = batch[-1].revision
                    yield batch
        finally:
            if w in self._watchers:
                self._watchers.remove(w)


class _Watcher:
    __slots__ = ("prefix", "_pending", "_event", "_error")

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self._pending: deque[list[Event]] = deque()
        self._event = asyncio.Event()
        self._error: BaseException | None = None

    def offer(self, events: list[Event]) -> None:
        p = self.prefix
        mine = [e for e in events if e.kv.key.startswith(p)]
        if mine:
            self._pending.append(mine)
            self._event.set()

    def close(self, err: BaseException) -> None:
        self._error = err
        self._event.set()

    async def get(self) -> list[Event]:
        while not self._pending:
            if self._error:
                raise self._error
            self._event.clear()
            await self._event.wait()
        out: list[Event] = []
        while self._pending:
            out.extend(self._pending.popleft())
        return out


def monotonic() -> float:
    return time.monotonic()
