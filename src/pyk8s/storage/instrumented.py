"""etcd_request_duration_seconds{operation,type} around any backend (SQLite, etcd, remote).

As upstream's etcd3 store: each storage call is timed by operation (get, list, create,
update, delete, compact) and object type (the resource, "deployments.apps"); reads served
from the watch cache never reach the store and are not counted, as upstream's."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable

from ..metrics.core import Hist
from .delegating import DelegatingStore
from .interface import Event, KeyValue, RangeResult, Store

__all__ = ["InstrumentedStore"]


class InstrumentedStore(DelegatingStore):
    _OWN = frozenset({"inner", "_hists", "_types", "_bounds", "_type_of"})

    def __init__(self, inner: Store, hists: dict[tuple[str, str], Hist], bounds: tuple[float, ...],
                 type_of: Callable[[str], str]) -> None:
        """type_of(segment): the type label of keys under /registry/<segment>/."""
        self.inner = inner
        self._hists = hists
        self._bounds = bounds
        self._type_of = type_of
        self._types: dict[str, str] = {}

    def _observe(self, op: str, key: str, t0: float) -> None:
        seg = key[10:].partition("/")[0] if key.startswith("/registry/") else ""
        typ = self._types.get(seg)
        if typ is None:
            typ = self._types[seg] = self._type_of(seg) if seg else ""
        k = (op, typ)
        h = self._hists.get(k)
        if h is None:
            h = self._hists[k] = Hist(self._bounds)
        h.observe(time.perf_counter() - t0)

    async def get(self, key: str) -> KeyValue | None:
        t0 = time.perf_counter()
        try:
            return await self.inner.get(key)
        finally:
            self._observe("get", key, t0)

    async def range(self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None,
                    count: bool = False) -> RangeResult:
        t0 = time.perf_counter()
        try:
            return await self.inner.range(prefix, revision=revision, limit=limit, start_after=start_after,
                                          count=count)
        finally:
            self._observe("list", prefix, t0)

    async def create(self, key: str, value: bytes) -> KeyValue:
        t0 = time.perf_counter()
        try:
            return await self.inner.create(key, value)
        finally:
            self._observe("create", key, t0)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        t0 = time.perf_counter()
        try:
            return await self.inner.update(key, value, expected_mod_revision)
        finally:
            self._observe("update", key, t0)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        t0 = time.perf_counter()
        try:
            return await self.inner.delete(key, expected_mod_revision)
        finally:
            self._observe("delete", key, t0)

    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        return self.inner.watch(prefix, start_revision)

    async def compact(self, revision: int) -> None:
        t0 = time.perf_counter()
        try:
            await self.inner.compact(revision)
        finally:
            self._observe("compact", "", t0)
