"""Storage backends behind one etcd-shaped interface."""

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

__all__ = [
    "DELETE",
    "PUT",
    "CompactedError",
    "ConflictError",
    "Event",
    "FutureRevisionError",
    "KeyExistsError",
    "KeyNotFoundError",
    "KeyValue",
    "RangeResult",
    "Store",
    "StoreError",
    "open_store",
]


def open_store(endpoint: str, data_dir: str) -> Store:
    """A store for a datastore endpoint: `sqlite://PATH` (default: <data-dir>/state.db) or `etcd://...`."""
    import os

    if not endpoint or endpoint.startswith("sqlite://"):
        path = endpoint[len("sqlite://"):] if endpoint else ""
        from .sqlite import SQLiteStore

        return SQLiteStore(path or os.path.join(data_dir, "state.db"))
    raise ValueError(f"unsupported datastore endpoint {endpoint!r} (etcd support is a later issue)")
