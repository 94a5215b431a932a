"""A Store that keeps chosen resources' values transformed (encrypted at rest), for any backend.

Upstream's etcd3 store runs a value transformer on every value it writes or reads; here one
wrapper does it around whichever Store the server opened (SQLite, etcd, or the main process's
store as served to API workers, which then see plaintext over their private socket). Only
the resources the encryption config lists are touched: other keys pass through after one
dict lookup, and without `--encryption-provider-config` there is no wrapper at all.

Values read through a transformer other than the writing one (an older key, or plaintext
while identity is listed) are *stale*: `stale` holds their keys, and an update that changes
nothing still rewrites them, as upstream's GuaranteedUpdate does, so that
`kubectl get secrets -A -o json | kubectl replace -f -` re-encrypts everything with the
current key.
"""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator, Callable
from typing import Any

from .delegating import DelegatingStore
from .interface import PUT, ConflictError, Event, KeyValue, RangeResult, Store
from .value import Transformer, TransformError

__all__ = ["TransformingStore", "wrap_store"]

log = logging.getLogger("pyk8s.storage.transforming")

REGISTRY = "/registry/"
_NONE: Any = object()


class TransformingStore(DelegatingStore):
    # attributes of the wrapper itself; any other assignment (e.g. synchronous) is the backend's
    _OWN = frozenset({"inner", "stale", "_resolve", "_by_prefix", "_inflight", "_feed", "_on_events", "_ad"})

    def __init__(self, inner: Store, resolve: Callable[[str, str], Transformer | None]) -> None:
        """resolve(first, second): the transformer of keys /registry/<first>/<second>/..., where first is
        a built-in's storage resource (second is then ignored) or a custom resource's group."""
        self.inner = inner
        self._resolve = resolve
        self._by_prefix: dict[str, Any] = {}
        self.stale: set[str] = set()
        # authenticated data: the key as the backend stores it (etcd: under --etcd-prefix), as upstream's
        self._ad: Callable[[str], bytes] = getattr(inner, "_ekey", None) or str.encode
        # key -> (stored bytes, plaintext) of writes in flight: their events need no decryption
        self._inflight: dict[str, tuple[bytes, bytes]] = {}

    # ---- which transformer ------------------------------------------------------------------
    def transformer(self, key: str) -> Transformer | None:
        if not key.startswith(REGISTRY):
            return None
        end = key.find("/", len(REGISTRY))
        if end < 0:
            return None
        first = key[len(REGISTRY):end]
        if "." in first:  # a custom resource: /registry/<group>/<resource>/
            end2 = key.find("/", end + 1)
            if end2 < 0:
                return None
            p = key[:end2]
        else:
            p = key[:end]
        t = self._by_prefix.get(p, _NONE)
        if t is _NONE:
            parts = p[len(REGISTRY):].split("/")
            t = self._resolve(parts[0], parts[1] if len(parts) > 1 else "")
            self._by_prefix[p] = t
        return t  # type: ignore[no-any-return]

    def _read(self, t: Transformer, kv: KeyValue, record: bool = True) -> KeyValue:
        try:
            plain, stale = t.from_storage(kv.value, self._ad(kv.key))
        except TransformError as e:
            raise TransformError(f'unable to transform key "{kv.key}": {e}') from None
        if record:  # (a watch event's previous value says nothing about what is stored now)
            if stale:
                self.stale.add(kv.key)
            elif self.stale:
                self.stale.discard(kv.key)
        return KeyValue(kv.key, plain, kv.create_revision, kv.mod_revision)

    def _kv(self, kv: KeyValue | None) -> KeyValue | None:
        if kv is None or not kv.value:
            return kv
        t = self.transformer(kv.key)
        return kv if t is None else self._read(t, kv)

    # ---- Store (start, close, revisions and compact pass through: delegating.py) -------------
    async def get(self, key: str) -> KeyValue | None:
        return self._kv(await self.inner.get(key))

    async def range(self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None,
                    count: bool = False) -> RangeResult:
        res = await self.inner.range(prefix, revision=revision, limit=limit, start_after=start_after, count=count)
        if not res.kvs:
            return res
        t = self.transformer(prefix)
        if t is not None:
            res.kvs = [self._read(t, kv) if kv.value else kv for kv in res.kvs]
        elif not self._one_resource(prefix):  # keys of several resources: each its own
            res.kvs = [self._kv(kv) or kv for kv in res.kvs]
        return res

    @staticmethod
    def _one_resource(prefix: str) -> bool:
        """Whether every key under prefix belongs to one resource (so one transformer serves all)."""
        rest = prefix[len(REGISTRY):] if prefix.startswith(REGISTRY) else ""
        parts = rest.split("/")
        return len(parts) > 1 and (("." not in parts[0]) or (len(parts) > 2))

    async def _write(self, key: str, value: bytes, t: Transformer, expected: int | None) -> KeyValue:
        stored = t.to_storage(value, self._ad(key))
        self._inflight[key] = (stored, value)
        try:
            if expected is None:
                kv = await self.inner.create(key, stored)
            else:
                kv = await self.inner.update(key, stored, expected)
        except ConflictError as e:
            raise ConflictError(key, self._kv(e.current)) from None
        finally:
            h = self._inflight.get(key)
            if h is not None and h[0] is stored:
                del self._inflight[key]
        self.stale.discard(key)
        return KeyValue(kv.key, value, kv.create_revision, kv.mod_revision)

    async def create(self, key: str, value: bytes) -> KeyValue:
        t = self.transformer(key)
        if t is None:
            return await self.inner.create(key, value)
        return await self._write(key, value, t, None)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        t = self.transformer(key)
        if t is None:
            return await self.inner.update(key, value, expected_mod_revision)
        return await self._write(key, value, t, expected_mod_revision)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        t = self.transformer(key)
        if t is None:
            return await self.inner.delete(key, expected_mod_revision)
        try:
            kv = await self.inner.delete(key, expected_mod_revision)
        except ConflictError as e:
            raise ConflictError(key, self._kv(e.current)) from None
        self.stale.discard(key)
        return self._kv(kv) or kv

    def events(self, batch: list[Event]) -> list[Event]:
        """A batch of the inner store's events with values in plaintext. A write whose value cannot be
        read (made with a key this server lacks) is logged and left out."""
        out: list[Event] | None = None
        for i, ev in enumerate(batch):
            t = self.transformer(ev.kv.key)
            if t is None:
                if out is not None:
                    out.append(ev)
                continue
            if out is None:
                out = batch[:i]
            try:
                out.append(self._event(t, ev))
            except TransformError as e:
                if ev.type == PUT:
                    log.error("watch event at revision %d left out: %s", ev.revision, e)
                else:  # a deletion still deletes: the cache holds the object it removes
                    log.error("deletion at revision %d passed on without its value: %s", ev.revision, e)
                    kv = ev.kv
                    out.append(Event(ev.type, KeyValue(kv.key, b"{}", kv.create_revision, kv.mod_revision),
                                     ev.revision))
                    self.stale.discard(kv.key)
        return batch if out is None else out

    def _event(self, t: Transformer, ev: Event) -> Event:
        prev = ev.prev
        if prev is not None and prev.value:
            try:
                prev = self._read(t, prev, record=False)
            except TransformError:
                prev = None  # only the previous value is unknown: the event itself stands
        kv = ev.kv
        h = self._inflight.get(kv.key)
        if h is not None and h[0] is kv.value:  # our own write: its plaintext is at hand
            kv = KeyValue(kv.key, h[1], kv.create_revision, kv.mod_revision)
            self.stale.discard(kv.key)
        elif kv.value:
            kv = self._read(t, kv, record=ev.type == PUT)
        if ev.type != PUT:
            self.stale.discard(kv.key)
        return Event(ev.type, kv, ev.revision, prev)

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        return self._watch(prefix, start_revision)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        async for batch in self.inner.watch(prefix, start_revision):
            out = self.events(batch)
            if out:
                yield out


class EmbeddedTransformingStore(TransformingStore):
    """Around a store that feeds the watch cache synchronously (`_on_events`, the embedded store)."""

    @property
    def _on_events(self) -> Callable[[list[Event]], None] | None:
        return self._feed

    @_on_events.setter
    def _on_events(self, fn: Callable[[list[Event]], None] | None) -> None:
        self._feed = fn
        self.inner._on_events = None if fn is None else (lambda batch: fn(self.events(batch)))  # type: ignore[attr-defined]


def wrap_store(inner: Store, resolve: Callable[[str, str], Transformer | None]) -> TransformingStore:
    if hasattr(inner, "_on_events"):
        s: TransformingStore = EmbeddedTransformingStore(inner, resolve)
        s._feed = None  # type: ignore[attr-defined]
        return s
    return TransformingStore(inner, resolve)
