"""The Store interface: etcd's key/revision/watch model, for every backend.

One global revision counts every write (create, update, delete); it is each object's
resourceVersion and the point watches resume from. Values are opaque bytes (the
object's JSON without metadata.resourceVersion, which readers fill in from
mod_revision, exactly as upstream's etcd3 store does).
"""

from __future__ import annotations

import abc
from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = [
    "KeyValue",
    "Event",
    "RangeResult",
    "Store",
    "StoreError",
    "KeyExistsError",
    "KeyNotFoundError",
    "ConflictError",
    "CompactedError",
    "FutureRevisionError",
    "PUT",
    "DELETE",
]

PUT = "PUT"
DELETE = "DELETE"


@dataclass(slots=True, frozen=True)
class KeyValue:
    key: str
    value: bytes
    create_revision: int
    mod_revision: int


@dataclass(slots=True, frozen=True)
class Event:
    """A change at `revision`. For DELETE, `kv` holds the last value before deletion."""

    type: str  # PUT or DELETE
    kv: KeyValue
    revision: int
    prev: KeyValue | None = None

    @property
    def is_create(self) -> bool:
        return self.type == PUT and self.kv.create_revision == self.kv.mod_revision


@dataclass(slots=True)
class RangeResult:
    kvs: list[KeyValue]
    revision: int  # the revision the range was read at
    more: bool  # whether keys past the last returned one exist at that revision
    count: int  # keys in range after start_after at that revision, past the limit (-1 if not computed)


class StoreError(Exception):
    pass


class KeyExistsError(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key exists: {key}")
        self.key = key


class KeyNotFoundError(StoreError):
    def __init__(self, key: str) -> None:
        super().__init__(f"key not found: {key}")
        self.key = key


class ConflictError(StoreError):
    """The precondition on mod_revision failed; `current` is the value now stored."""

    def __init__(self, key: str, current: KeyValue | None) -> None:
        super().__init__(f"conflict on {key}")
        self.key = key
        self.current = current


class CompactedError(StoreError):
    """The requested revision has been compacted away (upstream answers 410 Gone)."""

    def __init__(self, requested: int, compacted: int) -> None:
        super().__init__(f"revision {requested} compacted (compact revision {compacted})")
        self.requested = requested
        self.compacted = compacted


class FutureRevisionError(StoreError):
    def __init__(self, requested: int, current: int) -> None:
        super().__init__(f"revision {requested} is in the future (current {current})")
        self.requested = requested
        self.current = current


class Store(abc.ABC):
    """Async key-value store with etcd semantics. Keys are strings; prefixes end with '/'."""

    @abc.abstractmethod
    async def start(self) -> None: ...

    @abc.abstractmethod
    async def close(self) -> None: ...

    @property
    @abc.abstractmethod
    def revision(self) -> int:
        """The latest committed revision."""

    @property
    @abc.abstractmethod
    def compacted_revision(self) -> int: ...

    async def current_revision(self) -> int:
        """The revision a consistent read must reflect, asked of the store itself.

        The embedded store publishes every commit before acknowledging it, so its
        `revision` is already that; a remote store (etcd) asks the cluster.
        """
        return self.revision

    @abc.abstractmethod
    async def get(self, key: str) -> KeyValue | None: ...

    @abc.abstractmethod
    async def range(
        self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None, count: bool = False
    ) -> RangeResult:
        """Keys under prefix at revision (0: latest), in key order, after start_after."""

    @abc.abstractmethod
    async def create(self, key: str, value: bytes) -> KeyValue:
        """Create key; raise KeyExistsError if it exists."""

    @abc.abstractmethod
    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        """Replace key if its mod_revision matches (0: unconditionally); raise ConflictError or KeyNotFoundError."""

    @abc.abstractmethod
    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        """Delete key (precondition as update); returns the deleted value with the deletion revision as mod_revision."""

    @abc.abstractmethod
    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        """Events under prefix with revision >= start_revision, in revision order, batched.

        Raises CompactedError (on first iteration) when start_revision is compacted.
        """

    @abc.abstractmethod
    async def compact(self, revision: int) -> None: ...
