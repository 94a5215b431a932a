"""Copy a cluster's whole state from one datastore to another (SQLite <-> etcd, or same to same).

Every key under the API root (`/registry`, mapped to each etcd side's prefix) is read from the
source at one revision (a consistent snapshot, paged) and created in the target with its value
unchanged. The target must be empty unless `force`, which first deletes every key under the
target's prefix, so the result is the source's state and nothing else.

What does not carry over is the revision history: the target numbers its writes itself, so
every object's resourceVersion (its key's mod_revision) is new, and older resourceVersions mean
nothing there. Clients relist: a watch or a list from a resourceVersion of the old store is
answered 410 Gone (too old) or "too large resource version", and informers relist on those, as
after k3s moves a cluster from SQLite to etcd. uids, generations, timestamps and managedFields
are in the values, so they are unchanged.

Not copied: the API servers' master leases (`/registry/masterleases/<ip>`). They are
ephemeral: upstream puts them on etcd leases of a few seconds, and every running API server
re-creates its own within its renew interval. A copy would lose the etcd lease (or the
expiry a store without TTLs keeps in the value), so an old server's entry could outlive it
in the `kubernetes` Endpoints.

The source's servers should be stopped: a write made during the copy is not copied. The copy
checks the source's revision afterwards and says so (`source_changed`) if it moved.
"""

from __future__ import annotations

import asyncio
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field

from .interface import KeyValue, Store, StoreError

__all__ = ["EPHEMERAL", "ROOT", "MigrationResult", "TargetNotEmptyError", "migrate", "resource_of"]

ROOT = "/registry/"  # the API server's keys; each store maps it to its own prefix
EPHEMERAL = ("/registry/masterleases/",)  # keys that live only as long as their writer (see above)
PAGE = 500
CONCURRENCY = 64  # creates in flight: SQLite commits them in groups, etcd pipelines them


class TargetNotEmptyError(StoreError):
    def __init__(self, keys: int) -> None:
        super().__init__(f"the target datastore already holds {keys} keys (use --force to replace them)")
        self.keys = keys


@dataclass(slots=True)
class Progress:
    """Where a copy is, for a progress line: phase is "clearing" (with --force) or "copying"."""

    phase: str
    done: int
    total: int
    started: float


@dataclass(slots=True)
class MigrationResult:
    keys: int = 0
    bytes: int = 0
    source_revision: int = 0  # the revision the source was read at
    target_revision: int = 0  # the target's revision after the copy
    replaced: int = 0  # keys deleted from the target first (force)
    skipped: int = 0  # ephemeral keys not copied (EPHEMERAL)
    by_resource: Counter[str] = field(default_factory=Counter)
    source_changed: bool = False  # the source's revision moved during the copy: writes may be missing
    seconds: float = 0.0


def resource_of(key: str) -> str:
    """`/registry/configmaps/ns/n` -> configmaps; `/registry/example.com/widgets/ns/n` -> widgets.example.com."""
    parts = key.split("/")
    if len(parts) < 3 or not parts[2]:
        return key
    # as the watch cache: a dotted second segment is an API group (custom resources, CRDs)
    if len(parts) > 4 and "." in parts[2]:
        return f"{parts[3]}.{parts[2]}"
    return parts[2]


async def _pages(store: Store, revision: int, first_after: str | None = None):  # type: ignore[no-untyped-def]
    """Pages of keys under ROOT at one revision (0: the latest, then pinned to what the first page read)."""
    after = first_after
    while True:
        page = await store.range(ROOT, revision=revision, limit=PAGE, start_after=after)
        revision = page.revision
        if page.kvs:
            yield page
            after = page.kvs[-1].key
        if not page.more or not page.kvs:
            return


async def _bounded(items: list[KeyValue], op: Callable[[KeyValue], object], limit: int) -> None:
    sem = asyncio.Semaphore(limit)

    async def one(kv: KeyValue) -> None:
        async with sem:
            await op(kv)  # type: ignore[misc]

    await asyncio.gather(*(one(kv) for kv in items))


async def migrate(
    source: Store,
    target: Store,
    *,
    force: bool = False,
    progress: Callable[[Progress], None] | None = None,
    reopen_source: Callable[[], Store] | None = None,
) -> MigrationResult:
    """Copy every key under ROOT from source to target (both started); see the module docstring.

    reopen_source: a fresh store on the source's endpoint, to read its revision after the copy
    from the datastore itself (an embedded store remembers only its own writes).
    """
    t0 = time.monotonic()
    out = MigrationResult()
    note = progress or (lambda p: None)

    existing = await target.range(ROOT, limit=1, count=True)
    if existing.kvs:
        if not force:
            raise TargetNotEmptyError(existing.count if existing.count >= 0 else len(existing.kvs))
        total = existing.count
        started = time.monotonic()
        # every page is read at the latest revision: the deletes move the target on
        while True:
            page = await target.range(ROOT, limit=PAGE)
            if not page.kvs:
                break
            await _bounded(page.kvs, lambda kv: target.delete(kv.key), CONCURRENCY)
            out.replaced += len(page.kvs)
            note(Progress("clearing", out.replaced, max(total, out.replaced), started))

    head = await source.range(ROOT, limit=1, count=True)
    out.source_revision = head.revision
    total = max(head.count, 0)
    started = time.monotonic()
    note(Progress("copying", 0, total, started))

    async def put(kv: KeyValue) -> None:
        await target.create(kv.key, kv.value)
        out.by_resource[resource_of(kv.key)] += 1
        out.bytes += len(kv.value)

    async for page in _pages(source, out.source_revision):
        kvs = [kv for kv in page.kvs if not kv.key.startswith(EPHEMERAL)]
        out.skipped += len(page.kvs) - len(kvs)
        await _bounded(kvs, put, CONCURRENCY)
        out.keys += len(kvs)
        note(Progress("copying", out.keys + out.skipped, max(total, out.keys + out.skipped), started))

    out.target_revision = await target.current_revision()
    if reopen_source is not None:
        again = reopen_source()
        await again.start()
        try:
            # etcd's revision also counts other prefixes' writes: ask about our keys only
            unchanged = getattr(again, "unchanged_since", None)
            if unchanged is not None:
                out.source_changed = not await unchanged(out.source_revision)
            else:
                out.source_changed = await again.current_revision() != out.source_revision
        finally:
            await again.close()
    out.seconds = time.monotonic() - t0
    return out
