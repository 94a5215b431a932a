"""Shared informers: list+watch caches with indexes and event handlers (client-go's reflector + indexer).

An informer lists, then watches from the list's resourceVersion, re-listing on 410 or
any broken stream. Handlers run on the event loop in order; they must not block.
"""

from __future__ import annotations

import asyncio
import builtins
import logging
import random
import time
from collections import deque
from collections.abc import Callable
from typing import Any

from ..api.compact import compact as compact_object
from ..api.errors import StatusError
from .rest import GVR, Client, obj_key

log = logging.getLogger("pyk8s.informer")

__all__ = ["Informer", "InformerFactory", "namespace_index", "strip_managed_fields"]

Transform = Callable[[dict[str, Any]], dict[str, Any]]

# compact=True: an object still stored this long after it arrived is compacted (api/compact.py)
SETTLE_SECONDS = 2.0
SETTLE_BATCH = 500  # objects compacted per turn of the loop

Handler = Callable[..., Any]


def namespace_index(obj: dict[str, Any]) -> list[str]:
    return [(obj.get("metadata") or {}).get("namespace", "")]


def strip_managed_fields(obj: dict[str, Any]) -> dict[str, Any]:
    """An informer transform, as kube-scheduler's and kube-controller-manager's: their caches drop
    metadata.managedFields, 40% of a pod held as dicts, which no controller reads (an update
    without managedFields keeps the stored ones)."""
    md = obj.get("metadata")
    if md is not None and "managedFields" in md:
        del md["managedFields"]
    return obj


class Informer:
    def __init__(self, client: Client, gvr: GVR, namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, resync: float = 0.0, transform: Transform | None = None,
                 compact: bool = False) -> None:
        """transform: applied to every object before it is stored and handed to handlers (client-go's
        SetTransform); it may change the object, which this informer alone holds. compact: objects
        that stay stored SETTLE_SECONDS are compacted in place (equal values: handlers holding them
        see no change), once per write however many writes a burst brings."""
        self.client = client
        self.transform = transform
        self.compact = compact
        self._young: deque[tuple[float, str, dict[str, Any]]] = deque()
        self._settle_handle: asyncio.TimerHandle | None = None
        self.gvr = gvr
        self.namespace = namespace
        self.label_selector = label_selector
        self.field_selector = field_selector
        self.resync = resync
        self.store: dict[str, dict[str, Any]] = {}
        self.indexers: dict[str, Callable[[dict[str, Any]], list[str]]] = {"namespace": namespace_index}
        self.indices: dict[str, dict[str, set[str]]] = {"namespace": {}}
        self.handlers: list[tuple[Handler | None, Handler | None, Handler | None]] = []
        self.synced = asyncio.Event()
        self.resource_version = ""
        self._task: asyncio.Task[None] | None = None
        self._resync_task: asyncio.Task[None] | None = None

    # ---- configuration ------------------------------------------------------------------
    def add_handlers(self, on_add: Handler | None = None, on_update: Handler | None = None,
                     on_delete: Handler | None = None) -> None:
        self.handlers.append((on_add, on_update, on_delete))
        # late handlers see what is already known, as client-go does
        if on_add is not None:
            for obj in list(self.store.values()):
                on_add(obj)

    def add_index(self, name: str, fn: Callable[[dict[str, Any]], list[str]]) -> None:
        self.indexers[name] = fn
        idx: dict[str, set[str]] = {}
        for k, o in self.store.items():
            for v in fn(o):
                idx.setdefault(v, set()).add(k)
        self.indices[name] = idx

    # ---- reads --------------------------------------------------------------------------
    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)

    def list(self, namespace: str | None = None) -> builtins.list[dict[str, Any]]:
        if namespace is None:
            return list(self.store.values())
        return self.by_index("namespace", namespace)

    def by_index(self, name: str, value: str) -> builtins.list[dict[str, Any]]:
        keys = self.indices.get(name, {}).get(value, ())
        return [self.store[k] for k in keys if k in self.store]

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> None:
        if self._task is None:
            self._task = asyncio.create_task(self._run(), name=f"informer-{self.gvr[2]}")
            if self.resync:
                self._resync_task = asyncio.create_task(self._resync_loop())

    async def stop(self) -> None:
        for t in (self._task, self._resync_task):
            if t is not None:
                t.cancel()
                try:
                    await t
                except (asyncio.CancelledError, Exception):
                    pass
        self._task = self._resync_task = None
        if self._settle_handle is not None:
            self._settle_handle.cancel()
            self._settle_handle = None

    async def wait_synced(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self.synced.wait(), timeout)

    # ---- internals ----------------------------------------------------------------------
    def _index_add(self, key: str, obj: dict[str, Any]) -> None:
        for name, fn in self.indexers.items():
            idx = self.indices.setdefault(name, {})
            for v in fn(obj):
                idx.setdefault(v, set()).add(key)

    def _index_remove(self, key: str, obj: dict[str, Any]) -> None:
        for name, fn in self.indexers.items():
            idx = self.indices.get(name, {})
            for v in fn(obj):
                s = idx.get(v)
                if s is not None:
                    s.discard(key)
                    if not s:
                        del idx[v]

    def _dispatch(self, kind: int, *args: Any) -> None:
        for h in self.handlers:
            fn = h[kind]
            if fn is not None:
                try:
                    fn(*args)
                except Exception:
                    log.exception("informer %s handler failed", self.gvr[2])

    def _apply(self, typ: str, obj: dict[str, Any]) -> None:
        if self.transform is not None:
            obj = self.transform(obj)
        key = obj_key(obj)
        old = self.store.get(key)
        if typ == "DELETED":
            if old is not None:
                del self.store[key]
                self._index_remove(key, old)
            self._dispatch(2, obj)
            return
        if old is not None:
            self._index_remove(key, old)
        self.store[key] = obj
        self._index_add(key, obj)
        if self.compact:
            self._young.append((time.monotonic(), key, obj))
            if self._settle_handle is None:
                self._settle_handle = asyncio.get_running_loop().call_later(SETTLE_SECONDS, self._settle)
        if old is None:
            self._dispatch(0, obj)
        else:
            self._dispatch(1, old, obj)

    def _settle(self) -> None:
        """Compact the objects stored SETTLE_SECONDS ago that are still the stored ones."""
        self._settle_handle = None
        young, store = self._young, self.store
        cutoff = time.monotonic() - SETTLE_SECONDS
        budget = SETTLE_BATCH  # a list of thousands settles in parts, other callbacks running between
        while young and young[0][0] <= cutoff and budget:
            _, key, obj = young.popleft()
            if store.get(key) is obj:
                compact_object(obj)
                budget -= 1
        if young:
            delay = young[0][0] + SETTLE_SECONDS - time.monotonic() if budget else 0.0
            self._settle_handle = asyncio.get_running_loop().call_later(max(delay, 0.01), self._settle)

    def _replace(self, items: builtins.list[dict[str, Any]]) -> None:
        new_keys = set()
        for obj in items:
            key = obj_key(obj)
            new_keys.add(key)
            old = self.store.get(key)
            if old is None or old.get("metadata", {}).get("resourceVersion") != obj.get("metadata", {}).get("resourceVersion"):
                self._apply("MODIFIED" if old is not None else "ADDED", obj)
        for key in [k for k in self.store if k not in new_keys]:
            self._apply("DELETED", self.store[key])

    async def _list(self) -> None:
        items: builtins.list[dict[str, Any]] = []
        cont = None
        while True:
            page = await self.client.list(self.gvr, self.namespace, label_selector=self.label_selector,
                                          field_selector=self.field_selector, limit=500, continue_=cont)
            items.extend(page.get("items") or [])
            cont = (page.get("metadata") or {}).get("continue")
            if not cont:
                self.resource_version = page["metadata"]["resourceVersion"]
                break
        self._replace(items)

    async def _run(self) -> None:
        backoff = 0.5
        need_list = True
        while True:
            try:
                if need_list:
                    await self._list()
                    self.synced.set()
                    need_list = False
                async for ev in self.client.watch(self.gvr, self.namespace, self.resource_version,
                                                  timeout_seconds=random.randint(300, 600),
                                                  label_selector=self.label_selector,
                                                  field_selector=self.field_selector):
                    typ, obj = str(ev.get("type")), ev.get("object") or {}
                    if typ == "ERROR":
                        if obj.get("code") == 410:
                            need_list = True
                        break
                    rv = (obj.get("metadata") or {}).get("resourceVersion")
                    if rv:
                        self.resource_version = rv
                    if typ != "BOOKMARK":
                        self._apply(typ, obj)
                backoff = 0.5
            except asyncio.CancelledError:
                raise
            except StatusError as e:
                if e.code == 410:
                    need_list = True
                    continue
                log.debug("informer %s: %s", self.gvr[2], e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10)
                need_list = need_list or e.code >= 500
            except Exception as e:
                log.debug("informer %s: watch broke: %s", self.gvr[2], e)
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 10)

    async def _resync_loop(self) -> None:
        while True:
            await asyncio.sleep(self.resync)
            for obj in list(self.store.values()):
                self._dispatch(1, obj, obj)


class InformerFactory:
    """One informer per (resource, namespace): shared by every controller of a process."""

    def __init__(self, client: Client, resync: float = 0.0, transform: Transform | None = None,
                 compact: bool = False) -> None:
        self.client = client
        self.resync = resync
        self.transform = transform  # every informer's (see Informer)
        self.compact = compact
        self._informers: dict[tuple[GVR, str | None, str, Transform | None], Informer] = {}

    def informer(self, gvr: GVR, namespace: str | None = None, label_selector: str | None = None,
                 field_selector: str | None = None, transform: Transform | None = None) -> Informer:
        """transform: this informer's own instead of the factory's (a component that reads a few
        fields of a big, often written kind keeps only those); informers differ by it."""
        key = (gvr, namespace, f"{label_selector}|{field_selector}", transform)
        inf = self._informers.get(key)
        if inf is None:
            inf = Informer(self.client, gvr, namespace, label_selector, field_selector, self.resync,
                           transform or self.transform, self.compact)
            self._informers[key] = inf
        return inf

    def start(self) -> None:
        for inf in self._informers.values():
            inf.start()

    async def wait_synced(self, timeout: float | None = 60) -> None:
        await asyncio.gather(*(i.wait_synced(timeout) for i in self._informers.values()))

    async def stop(self) -> None:
        for inf in self._informers.values():
            await inf.stop()
