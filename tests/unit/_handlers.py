"""The API server's request handlers over a real SQLite store and watch cache, without HTTP, for
calling them in-process; and a watch on what the cache keeps of each write."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from pyk8s.api.resources import Registry, builtin_registry
from pyk8s.apiserver import admission, watchcache
from pyk8s.apiserver.handlers import ResourceHandler
from pyk8s.apiserver.rest import RestStorage
from pyk8s.storage.sqlite import SQLiteStore

from ._same import same


@dataclass
class Handlers:
    registry: Registry
    store: SQLiteStore
    rest: RestStorage
    h: ResourceHandler


async def start_handlers(tmp: Path) -> Handlers:
    registry = builtin_registry()
    store = SQLiteStore(str(tmp / "state.db"), synchronous="OFF")
    caches = watchcache.CacheSet(store)
    store._on_events = caches.on_events
    await store.start()
    rest = RestStorage(store, caches, registry)
    admission.install(rest, "10.96.0.0/12")
    return Handlers(registry, store, rest, ResourceHandler(rest, registry))


@dataclass
class HandOvers:
    shared: list[str]  # keys of writes whose object the cache kept as handed over
    decoded: int  # writes the cache decoded from the stored bytes
    differ: list[tuple[Any, Any]]  # (kept, decoded) where they were not the same


def check_hand_overs(monkeypatch: pytest.MonkeyPatch) -> HandOvers:
    """From now on, every object the cache keeps instead of decoding is compared with the decoding
    (values, types, key order). Failures are collected: the store's callback would only log them."""
    seen = HandOvers([], 0, [])
    apply = watchcache.ResourceCache.apply

    def checking_apply(self: watchcache.ResourceCache, ev: Any, built: Any = None) -> Any:
        want = watchcache.decode(ev.kv.value, ev.revision) if ev.type == watchcache.PUT else None
        ce = apply(self, ev, built)
        if built is not None:
            if not (ce.obj is built and same(built, want)):
                seen.differ.append((built, want))
            seen.shared.append(ev.kv.key)
        elif want is not None:
            seen.decoded += 1
        return ce

    monkeypatch.setattr(watchcache.ResourceCache, "apply", checking_apply)
    return seen
