"""The watch cache: every stored object in memory, per resource, fed by one store watch.

As upstream's cacher: lists with resourceVersion=0 (or a fresh consistent read) and
all watches are served from here, so thousands of watchers cost the store nothing.
Each event is serialised at most once per wire format, however many watchers get it.
Fan-out never awaits, so writers are never blocked by slow watchers: a plain JSON watch
whose connection keeps up gets the event's pre-framed chunk written straight to its
connection (Watcher.sink; 1000 watchers: ~28 us of server CPU per delivered event, was
~120 us through per-watcher queues and tasks, bench/api.py); otherwise the event goes to
the watcher's queue, and a watcher that falls too far behind is closed (the client
re-lists), as upstream closes watchers whose channel is full.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import time
from collections import deque
from collections.abc import Callable, Iterable
from typing import Any

import orjson

from ..api.compact import compact
from ..storage import DELETE, PUT, CompactedError, Event, KeyValue, Store, StoreError
from .jsonwire import NEWLINE, go_escape
from .listsnapshot import Snapshot, Snapshots

__all__ = ["CacheEvent", "ResourceCache", "CacheSet", "Watcher", "TooOldError"]

log = logging.getLogger("pyk8s.apiserver.watchcache")

ADDED, MODIFIED, DELETED, BOOKMARK, ERROR = "ADDED", "MODIFIED", "DELETED", "BOOKMARK", "ERROR"

# How much history each resource keeps for watch resumption: at least this many seconds
# and this many events, at most HISTORY_MAX_EVENTS. Upstream's watch cache keeps 75 s
# (a bookmark interval plus 15 s) in at most 100 × 1024 events per resource; a client
# resuming from further back gets 410 and lists again. Every remembered event holds its
# object and its JSON: with 5,000 heartbeating nodes, 5 minutes of it was gigabytes.
HISTORY_SECONDS = 75.0
HISTORY_MIN_EVENTS = 1000
HISTORY_MAX_EVENTS = 100 * 1024
# History events younger than this (and at most this many per resource) keep their objects
# as dicts; older ones are packed into bytes (CacheEvent.pack).
FRESH_SECONDS = 2.0
FRESH_MAX_EVENTS = 500
WATCHER_MAX_PENDING = 100_000


class TooOldError(Exception):
    def __init__(self, requested: int, oldest: int) -> None:
        super().__init__(f"too old resource version: {requested} ({oldest})")
        self.requested = requested
        self.oldest = oldest


def decode(value: bytes, revision: int) -> dict[str, Any]:
    """An object from its stored bytes, with resourceVersion taken from the revision."""
    obj = orjson.loads(value)
    md = obj.get("metadata")
    if md is None:
        md = obj["metadata"] = {}
    md["resourceVersion"] = str(revision)
    return obj


class CacheEvent:
    """One change of one object. `obj` and `prev` are shared and must be treated as immutable.

    A young event holds both objects as dicts: watchers' filters, the listeners and lagging
    watchers read them. Once FRESH_SECONDS old (or FRESH_MAX_EVENTS deep) the history keeps it
    packed (pack()): the chunk it was sent as, or its stored value; the previous object is the
    previous event of its key while the history holds that (`prev_ev`), else its stored value.
    Both are decoded again only when read (a watch resuming from an older resourceVersion with a
    selector or in another version). A replayed 200-node, 1,000-pod run (bench/cache_memory.py)
    held a pod event in ~21 KB as dicts, a lease event in ~7.5 KB.
    """

    __slots__ = ("type", "_obj", "_prev", "rev", "key", "ts", "_value", "_prev_value", "_prev_rev", "_prev_ev",
                 "_chunk", "_line")

    def __init__(self, type: str, obj: dict[str, Any], prev: dict[str, Any] | None, rev: int, key: str,
                 value: bytes | None = None, prev_kv: KeyValue | None = None,
                 prev_ev: CacheEvent | None = None) -> None:
        """prev_ev: the event that wrote prev, when the history holds it."""
        self.type = type
        self._obj: dict[str, Any] | None = obj
        self._prev = prev
        self.rev = rev
        self.key = key
        self.ts = time.monotonic()
        # what decode() turns back into obj at rev (the stored value), and prev at _prev_rev
        self._value = value or None
        self._prev_value: bytes | None = None
        self._prev_rev = 0
        self._prev_ev = prev_ev
        if prev_ev is None and prev is not None and prev_kv is not None and prev_kv.value \
                and (prev.get("metadata") or {}).get("resourceVersion") == str(prev_kv.mod_revision):
            self._prev_value = prev_kv.value
            self._prev_rev = prev_kv.mod_revision
        self._chunk: bytes | None = None
        self._line: memoryview | None = None

    @property
    def obj(self) -> dict[str, Any]:
        o = self._obj
        if o is not None:
            return o
        if self._chunk is not None:
            o = orjson.loads(self.json_line())["object"]
        elif self.type == DELETED and self._value is None and self._prev_ev is not None:  # packed: see pack()
            o = _with_rv(self._prev_ev.obj, self.rev)
        else:
            assert self._value is not None
            o = decode(self._value, self.rev)
        return o

    @property
    def prev(self) -> dict[str, Any] | None:
        p = self._prev
        if p is not None:
            return p
        if self._prev_ev is not None:
            return self._prev_ev.obj
        if self._prev_value is None:
            return None
        return decode(self._prev_value, self._prev_rev)

    def pack(self) -> None:
        """Keep bytes instead of dicts (the history's old events): see the class docstring."""
        if self._obj is None:
            return
        p = self._prev
        if p is not None and self._prev_value is None and self._prev_ev is None:
            # no stored previous value came with the event (a resync, or a store without it)
            self._prev_value = memoryview(orjson.dumps(p)).tobytes()
            self._prev_rev = int((p.get("metadata") or {}).get("resourceVersion") or 0)
        self._prev = None
        v = self._value
        if self.type == DELETED and self._prev_ev is not None:
            # the deleted object is its writer's with the deletion's revision (apply()): that event,
            # which the history holds, is kept instead of a second copy of its stored value
            self._value = self._chunk = self._line = None
        elif self._chunk is not None:
            self._value = None
        elif v is None:  # a DELETE without the last value: keep what watchers would get
            self.json_chunk()
        else:  # a copy: a value fresh from orjson.dumps holds a buffer several times its length
            self._value = memoryview(v).tobytes()
        self._obj = None

    def json_line(self) -> memoryview:
        """`{"type":..,"object":..}\n`, serialised once for every watcher (a view into json_chunk)."""
        line = self._line
        if line is None:
            c = self.json_chunk()
            line = self._line = memoryview(c)[c.index(b"\r\n") + 2:-2]
        return line

    def json_chunk(self) -> bytes:
        """json_line framed as one HTTP/1.1 chunk, built once and written to every JSON watcher."""
        c = self._chunk
        if c is None:
            line = go_escape(orjson.dumps({"type": self.type, "object": self.obj}, option=NEWLINE))
            c = self._chunk = b"%x\r\n%b\r\n" % (len(line), line)
        return c


class Watcher:
    """A registered watch: a predicate and a queue of matching events."""

    __slots__ = ("namespace", "predicate", "pending", "wakeup", "closed_reason", "cache", "sink")

    def __init__(
        self,
        cache: ResourceCache,
        namespace: str | None,
        predicate: Callable[[dict[str, Any]], bool] | None,
    ) -> None:
        self.cache = cache
        self.namespace = namespace
        self.predicate = predicate
        self.pending: deque[tuple[str, CacheEvent]] = deque()
        self.wakeup = asyncio.Event()
        self.closed_reason: str | None = None
        # Fan-out without waking the watch's task: called with an event the watcher gets as is,
        # when nothing is queued before it; returns False when it cannot take it now (then the
        # event is queued). The watch handler sets it for plain JSON watches.
        self.sink: Callable[[CacheEvent], bool] | None = None

    def offer(self, ev: CacheEvent) -> None:
        """Queue ev translated for this watcher's filter (a selector turns changes into ADDED/DELETED)."""
        if self.closed_reason is not None:
            return
        ns = self.namespace
        if ns is not None:
            md = ev.obj.get("metadata") or {}
            if md.get("namespace") != ns:
                return
        pred = self.predicate
        if pred is None:
            sink = self.sink
            if sink is not None and not self.pending and sink(ev):
                return
            self.pending.append((ev.type, ev))
        else:
            now = pred(ev.obj)
            if ev.type == ADDED:
                if now:
                    self.pending.append((ADDED, ev))
            elif ev.type == DELETED:
                if now:
                    self.pending.append((DELETED, ev))
            else:
                was = ev.prev is not None and pred(ev.prev)
                if now and was:
                    self.pending.append((MODIFIED, ev))
                elif now:
                    self.pending.append((ADDED, ev))
                elif was:
                    self.pending.append((DELETED, ev))
                else:
                    return
        if len(self.pending) > WATCHER_MAX_PENDING:
            self.close("watcher fell too far behind")
            return
        self.wakeup.set()

    def close(self, reason: str) -> None:
        self.closed_reason = reason
        self.wakeup.set()

    async def next_batch(self, timeout: float | None = None) -> list[tuple[str, CacheEvent]]:
        """Wait for events; returns [] on timeout. Raises EOFError once closed."""
        if not self.pending:
            if self.closed_reason is not None:
                raise EOFError(self.closed_reason)
            self.wakeup.clear()
            try:
                if timeout is None:
                    await self.wakeup.wait()
                else:
                    await asyncio.wait_for(self.wakeup.wait(), timeout)
            except TimeoutError:
                return []
            if not self.pending and self.closed_reason is not None:
                raise EOFError(self.closed_reason)
        out = list(self.pending)
        self.pending.clear()
        return out

    def stop(self) -> None:
        self.cache.watchers.discard(self)
        self.closed_reason = self.closed_reason or "stopped"


class ResourceCache:
    """All objects of one storage prefix, their recent history, and their watchers."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.objects: dict[str, dict[str, Any]] = {}
        self.by_namespace: dict[str, dict[str, dict[str, Any]]] = {}
        self.history: deque[CacheEvent] = deque()
        self._fresh: deque[CacheEvent] = deque()  # the history's events not packed yet, oldest first
        self._latest: dict[str, CacheEvent] = {}  # key -> its newest event, while the history holds it
        self.rev = 0  # the cache reflects the store up to this revision
        self.oldest = 0  # watches may start from any revision >= oldest
        self.watchers: set[Watcher] = set()
        # in-process consumers (RBAC index, allocators): called synchronously for every event
        self.listeners: list[Callable[[CacheEvent], None]] = []
        # paged lists' snapshots (listsnapshot.py); changed_rev: the last event of this resource
        self.snapshots = Snapshots()
        self.changed_rev = 0

    @staticmethod
    def _ns_of(key: str, prefix: str) -> str:
        rest = key[len(prefix):]
        i = rest.find("/")
        return rest[:i] if i >= 0 else ""

    def load(self, items: Iterable[tuple[str, dict[str, Any]]], rev: int) -> None:
        self.objects.clear()
        self.by_namespace.clear()
        for key, obj in items:
            compact(obj)
            self._put(key, obj)
        self.rev = rev
        self.oldest = rev
        self.changed_rev = rev
        self.snapshots.clear()
        self._latest.clear()

    def _put(self, key: str, obj: dict[str, Any]) -> None:
        self.objects[key] = obj
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        self.by_namespace.setdefault(ns, {})[key] = obj

    def _drop(self, key: str) -> None:
        obj = self.objects.pop(key, None)
        if obj is not None:
            ns = (obj.get("metadata") or {}).get("namespace") or ""
            d = self.by_namespace.get(ns)
            if d is not None:
                d.pop(key, None)
                if not d:
                    del self.by_namespace[ns]

    def apply(self, ev: Event, built: dict[str, Any] | None = None) -> CacheEvent:
        """`built`: the object ev's value was encoded from (see CacheSet.hand_over), used as is."""
        key = ev.kv.key
        prev = self.objects.get(key)
        self.snapshots.changed(prev is None or ev.type == DELETE)
        self.changed_rev = ev.revision
        if ev.type == DELETE:
            # the deleted object as last stored, with the deletion's revision (as upstream)
            obj = decode(ev.kv.value, ev.revision) if prev is None else _with_rv(prev, ev.revision)
            self._drop(key)
            ce = CacheEvent(DELETED, obj, prev, ev.revision, key, ev.kv.value, ev.prev, self._writer_of(key, prev))
        else:
            if built is not None:
                obj = built
                obj["metadata"]["resourceVersion"] = str(ev.revision)
            else:
                obj = decode(ev.kv.value, ev.revision)
            self._put(key, obj)
            ce = CacheEvent(ADDED if prev is None else MODIFIED, obj, prev, ev.revision, key, ev.kv.value, ev.prev,
                            self._writer_of(key, prev))
        self.rev = ev.revision
        self._remember(ce)
        for w in list(self.watchers):
            w.offer(ce)
        for fn in self.listeners:
            fn(ce)
        return ce

    def _writer_of(self, key: str, prev: dict[str, Any] | None) -> CacheEvent | None:
        """The history's event that wrote prev (key's current object, about to change)."""
        if prev is None:
            return None
        last = self._latest.get(key)
        if last is not None and str(last.rev) == (prev.get("metadata") or {}).get("resourceVersion"):
            return last
        return None

    def _remember(self, ce: CacheEvent) -> None:
        h = self.history
        h.append(ce)
        self._latest[ce.key] = ce
        fresh = self._fresh
        fresh.append(ce)
        if len(fresh) > FRESH_MAX_EVENTS or fresh[0].ts < ce.ts - FRESH_SECONDS:
            self.pack_older(ce.ts - FRESH_SECONDS)
        if len(h) > HISTORY_MIN_EVENTS:
            cutoff = time.monotonic() - HISTORY_SECONDS
            while len(h) > HISTORY_MIN_EVENTS and (h[0].ts < cutoff or len(h) > HISTORY_MAX_EVENTS):
                old = h.popleft()
                self.oldest = old.rev
                # no watch starts before it any more: its previous object is not needed, and the
                # event after it (its successor's prev_ev) keeps only it, not a chain
                old._prev_ev = old._prev_value = None
                if self._latest.get(old.key) is old:
                    del self._latest[old.key]
            self.snapshots.forget_before(self.oldest)

    def pack_older(self, cutoff: float) -> None:
        """Pack the history's events from before cutoff (and all but FRESH_MAX_EVENTS); compact
        the objects still current among theirs, once their writes have settled."""
        fresh = self._fresh
        objects = self.objects
        while fresh and (len(fresh) > FRESH_MAX_EVENTS or fresh[0].ts < cutoff):
            old = fresh.popleft()
            o = old._obj
            if o is not None and objects.get(old.key) is o:
                compact(o)
            old.pack()

    def list(self, namespace: str | None) -> list[dict[str, Any]]:
        if namespace is None:
            return list(self.objects.values())
        d = self.by_namespace.get(namespace)
        return list(d.values()) if d else []

    def snapshot(self) -> Snapshot:
        """The current state, immutable: kept for the continue tokens of a paged list."""
        return self.snapshots.take(self.objects, self.changed_rev, self.rev)

    def snapshot_at(self, rev: int) -> Snapshot | None:
        """A kept snapshot of the state at rev (None: gone, or never taken)."""
        cur = self.snapshots.current
        if cur is not None and cur.rev_from <= rev <= self.rev:
            cur.rev_to = max(cur.rev_to, rev)
            return cur
        return self.snapshots.at(rev)

    def count(self, namespace: str | None) -> int:
        if namespace is None:
            return len(self.objects)
        d = self.by_namespace.get(namespace)
        return len(d) if d else 0

    def watch(
        self,
        namespace: str | None,
        predicate: Callable[[dict[str, Any]], bool] | None,
        since: int,
    ) -> tuple[Watcher, builtins.list[tuple[str, CacheEvent]]]:
        """A watcher for events after revision `since`, with the backlog it must replay first."""
        if since < self.oldest:
            raise TooOldError(since, self.oldest)
        w = Watcher(self, namespace, predicate)
        backlog: list[CacheEvent] = []
        if since < self.rev:
            for ce in reversed(self.history):
                if ce.rev <= since:
                    break
                backlog.append(ce)
            backlog.reverse()
        self.watchers.add(w)
        for ce in backlog:
            w.offer(ce)
        return w, []


def _with_rv(obj: dict[str, Any], rev: int) -> dict[str, Any]:
    out = dict(obj)
    md = dict(out.get("metadata") or {})
    md["resourceVersion"] = str(rev)
    out["metadata"] = md
    return out


class CacheSet:
    """Routes store events to per-resource caches. One store watch for everything under /registry/."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self.caches: dict[str, ResourceCache] = {}
        self.rev = 0
        self._task: asyncio.Task[None] | None = None
        self._fresh_waiters: list[tuple[int, asyncio.Future[None]]] = []
        # The embedded store calls on_events before acknowledging writes; a remote store (etcd)
        # is followed through a watch, so events can arrive while a cache is being loaded.
        self._sync_feed = hasattr(store, "_on_events")
        self._loading: dict[str, list[list[Event]]] = {}  # prefix -> buffers of events seen during its load
        # key -> (value, object): objects whose writes are in flight, see hand_over
        self._handed: dict[str, tuple[bytes, dict[str, Any]]] = {}

    @staticmethod
    def prefix_of(key: str) -> str:
        # /registry/<resource>/... for built-ins, /registry/<group>/<resource>/... for custom resources
        parts = key.split("/", 4)
        if len(parts) > 3 and "." in parts[2]:
            return f"/registry/{parts[2]}/{parts[3]}/"
        return f"/registry/{parts[2]}/"

    async def ensure(self, prefix: str) -> ResourceCache:
        c = self.caches.get(prefix)
        if c is not None:
            return c
        c = ResourceCache(prefix)
        buf: list[Event] = []
        self._loading.setdefault(prefix, []).append(buf)
        try:
            res = await self.store.range(prefix)
        finally:
            bufs = self._loading[prefix]
            bufs.remove(buf)
            if not bufs:
                del self._loading[prefix]
        c.load(((kv.key, decode(kv.value, kv.mod_revision)) for kv in res.kvs), res.revision)
        # registered only once loaded; the embedded store's range has no await point, so no
        # event can fall between the range and the registration
        other = self.caches.get(prefix)
        if other is not None:
            return other
        self.caches[prefix] = c
        # a followed store's events newer than the range that arrived while it ran
        for ev in buf:
            if ev.revision > c.rev:
                c.apply(ev)
        if self._sync_feed:
            # the range was read at the store's latest revision: everything up to it is known
            self.rev = max(self.rev, res.revision)
        # (a followed store: self.rev says how far the watch has fed *every* cache; this one
        # may be ahead of it, and events up to its revision are skipped as they come)
        return c

    def drop(self, prefix: str) -> None:
        c = self.caches.pop(prefix, None)
        if c:
            for w in list(c.watchers):
                w.close("resource removed")

    def hand_over(self, key: str, value: bytes, obj: dict[str, Any]) -> None:
        """obj is what `value`, about to be written at key, decodes to (without resourceVersion):
        if that very value comes back as the write's event, the cache keeps obj instead of
        decoding the value again (the embedded store passes the value through). The caller
        must not change obj any more, and takes it back with take_back once the write is done."""
        self._handed[key] = (value, obj)

    def take_back(self, key: str, value: bytes) -> None:
        h = self._handed.get(key)
        if h is not None and h[0] is value:
            del self._handed[key]

    def on_events(self, events: list[Event]) -> None:
        """Feed from the store (synchronously for the embedded store, so reads follow writes)."""
        caches = self.caches
        loading = self._loading
        handed = self._handed
        for ev in events:
            p = self.prefix_of(ev.kv.key)
            c = caches.get(p)
            if c is not None and ev.revision > c.rev:
                built = None
                if handed and ev.type == PUT:
                    h = handed.get(ev.kv.key)
                    if h is not None and h[0] is ev.kv.value:  # the same bytes object: the same content
                        built = h[1]
                        del handed[ev.kv.key]
                c.apply(ev, built)
            elif c is None and loading and p in loading:
                for buf in loading[p]:
                    buf.append(ev)
        if events:
            self.rev = events[-1].revision
            for c in caches.values():
                if c.rev < self.rev:
                    # nothing of this resource changed: it is still current up to here
                    c.rev = self.rev
        if self._fresh_waiters:
            keep = []
            for rev, fut in self._fresh_waiters:
                if rev <= self.rev:
                    if not fut.done():
                        fut.set_result(None)
                else:
                    keep.append((rev, fut))
            self._fresh_waiters = keep

    async def follow(self, from_revision: int) -> None:
        """For stores that cannot call on_events synchronously: follow a store watch, for good.

        Every cache was loaded at or after from_revision. The store's watch resumes by itself
        after transient errors; if the history this cache has not seen was compacted away
        (a long partition), every cache is re-read and its watchers are told to re-list.
        """
        self.rev = max(self.rev, from_revision)
        rev = from_revision
        while True:
            try:
                async for batch in self.store.watch("/registry/", rev + 1):
                    self.on_events(batch)
                    rev = batch[-1].revision
            except CompactedError as e:
                log.error("store history compacted past the watch cache (%s); re-reading every resource", e)
                try:
                    rev = await self._resync()
                except StoreError as e2:
                    log.error("re-reading the store failed: %s", e2)
                    await asyncio.sleep(1.0)
                continue
            except StoreError as e:
                log.error("store watch failed: %s; resuming from revision %d", e, rev)
            await asyncio.sleep(1.0)

    async def _resync(self) -> int:
        """Re-read every cache at one revision; the differences reach listeners as events."""
        rev = await self.store.current_revision()
        for prefix, c in list(self.caches.items()):
            res = await self.store.range(prefix, revision=rev)
            now = {kv.key: kv for kv in res.kvs}
            for key in [k for k in c.objects if k not in now]:
                c.apply(Event(DELETE, KeyValue(key, b"", 0, rev), rev))
            for key, kv in now.items():
                old = c.objects.get(key)
                if old is None or (old.get("metadata") or {}).get("resourceVersion") != str(kv.mod_revision):
                    c.apply(Event(PUT, kv, kv.mod_revision))
            # history is no longer in revision order: watches resume only from here, after a re-list
            c.history.clear()
            c._fresh.clear()
            c._latest.clear()
            c.snapshots.clear()
            c.rev = c.oldest = c.changed_rev = rev
            for w in list(c.watchers):
                w.close("watch cache re-read after compaction")
        self.rev = max(self.rev, rev)
        self.on_events([])  # wake consistent readers waiting for this revision
        return rev

    async def wait_fresh(self, rev: int, timeout: float = 3.0) -> None:
        if rev <= self.rev:
            return
        fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._fresh_waiters.append((rev, fut))
        await asyncio.wait_for(fut, timeout)
