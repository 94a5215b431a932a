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


def open_store(
    endpoint: str,
    data_dir: str,
    *,
    etcd_cafile: str | None = None,
    etcd_certfile: str | None = None,
    etcd_keyfile: str | None = None,
    prefix: str = "/registry",
) -> Store:
    """A store for a datastore endpoint.

    `sqlite://PATH` (default: <data-dir>/state.db), `etcd://host:port[,host:port...]`
    (TLS when a CA or client certificate is given; keys under `prefix`), or `unix://PATH`:
    another `pyk8s server`'s embedded store, served to its API workers (storage/remote.py).
    """
    import os

    if not endpoint or endpoint.startswith("sqlite://"):
        path = endpoint[len("sqlite://"):] if endpoint else ""
        from .sqlite import SQLiteStore

        return SQLiteStore(path or os.path.join(data_dir, "state.db"))
    if endpoint.startswith(("etcd://", "http://", "https://")):
        from .etcd import EtcdStore, parse_etcd_endpoint

        return EtcdStore(parse_etcd_endpoint(endpoint), prefix=prefix, cafile=etcd_cafile,
                         certfile=etcd_certfile, keyfile=etcd_keyfile)
    if endpoint.startswith("unix://"):  # the main server's embedded store, for its API workers
        from .remote import RemoteStore

        return RemoteStore(endpoint[len("unix://"):])
    raise ValueError(f"unsupported datastore endpoint {endpoint!r} (use sqlite://PATH or etcd://HOST:PORT[,...])")
