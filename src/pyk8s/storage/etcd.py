"""etcd v3 backend: the Store interface on a real etcd cluster, over gRPC (etcd3aio's stubs).

Keys keep the API server's layout: `/registry/pods/ns/name` is stored as is under the
default prefix, or with the leading `/registry` replaced by a configured prefix, so
`etcdctl get --prefix /registry/pods/` shows our objects as it shows kube-apiserver's.
Revisions, compaction and watches are etcd's own: every write is one etcd revision.

Writes are single transactions with a precondition (create: create_revision == 0; update
and delete: mod_revision == expected, or "exists" when expected is 0); the failure branch
reads the key so a refusal says why (exists / not found / conflict) in the same round trip.

Failure handling: every request carries the `hasleader` metadata (clientv3's
WithRequireLeader), so a member without a leader answers `etcdserver: no leader` at once
instead of letting the request hang. Unavailable errors are retried for a bounded time
(a leader election, an etcd restart); after that the etcd message surfaces as StoreError.
A write retried after an ambiguous failure (the first attempt may have committed) is
recognised by its value: API objects carry a fresh uid, so equal bytes mean our write.

Watches track the revision of the last event they delivered and, after a transient error
(member killed, etcd restarted), re-create the etcd watch from the next revision, so no
event is lost or repeated. etcd's compaction notice surfaces as CompactedError.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import socket
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any, TypeVar

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

__all__ = ["EtcdStore", "parse_etcd_endpoint"]

log = logging.getLogger("pyk8s.storage.etcd")

API_ROOT = "/registry"  # the API server's keys start with this; mapped to the configured prefix
_REQUIRE_LEADER = (("hasleader", "true"),)
_COMPACTED = "required revision has been compacted"
_FUTURE = "required revision is a future revision"
# Errors after which a request may be retried: the member is unreachable, has no leader,
# lost its leader mid-request, or dropped the proposal. Some are ambiguous for writes
# (the write may have committed); the write paths handle that.
_RETRY_MESSAGES = ("no leader", "leader changed", "request timed out", "proposal dropped", "not capable",
                   "too many requests", "stopped")

T = TypeVar("T")


def parse_etcd_endpoint(endpoint: str) -> list[str]:
    """`etcd://h1:p1,h2:p2` (also `http://` per host, as kube-apiserver's --etcd-servers) -> ['h1:p1', ...]."""
    rest = endpoint[len("etcd://"):] if endpoint.startswith("etcd://") else endpoint
    out: list[str] = []
    for part in rest.split(","):
        part = part.strip().rstrip("/")
        for scheme in ("http://", "https://", "etcd://"):
            if part.startswith(scheme):
                part = part[len(scheme):]
        if not part:
            continue
        if ":" not in part.rsplit("]", 1)[-1]:
            part += ":2379"
        out.append(part)
    if not out:
        raise ValueError(f"no etcd endpoints in {endpoint!r}")
    return out


def _prefix_end(prefix: bytes) -> bytes:
    """The smallest key greater than every key starting with prefix (etcd's range_end for a prefix)."""
    b = bytearray(prefix)
    for i in range(len(b) - 1, -1, -1):
        if b[i] < 0xFF:
            b[i] += 1
            return bytes(b[: i + 1])
    return b"\x00"


class EtcdStore(Store):
    def __init__(
        self,
        endpoints: Sequence[str],
        *,
        prefix: str = API_ROOT,
        cafile: str | None = None,
        certfile: str | None = None,
        keyfile: str | None = None,
        request_timeout: float = 10.0,
        retry_budget: float = 5.0,
    ) -> None:
        if not endpoints:
            raise ValueError("at least one etcd endpoint is needed")
        self.endpoints = list(endpoints)
        self.prefix = "/" + prefix.strip("/") if prefix.strip("/") else ""
        self.cafile, self.certfile, self.keyfile = cafile, certfile, keyfile
        self.request_timeout = request_timeout  # one attempt's gRPC deadline
        self.retry_budget = retry_budget  # how long unavailability is retried before it surfaces
        self._channel: Any = None
        self._kv: Any = None
        self._watch_stub: Any = None
        self._pb: Any = None
        self._revision = 0
        self._compacted = 0
        # per live watch on the API root: the revision up to which it has delivered every
        # event (see current_revision); 0 until etcd says where a watch "from now" starts
        self._root: dict[int, int] = {}
        self._delivered_changed: asyncio.Event | None = None
        self._closed = False

    # ---- keys ------------------------------------------------------------------------------
    def _ekey(self, key: str) -> bytes:
        if self.prefix != API_ROOT and (key == API_ROOT or key.startswith(API_ROOT + "/")):
            key = self.prefix + key[len(API_ROOT):]
        return key.encode()

    def _akey(self, key: bytes) -> str:
        s = key.decode()
        if self.prefix != API_ROOT and (s == self.prefix or s.startswith(self.prefix + "/")):
            s = API_ROOT + s[len(self.prefix):]
        return s

    # ---- lifecycle -------------------------------------------------------------------------
    def _target(self) -> tuple[str, list[tuple[str, Any]]]:
        """A gRPC target for all endpoints (round robin) and the channel options."""
        opts: list[tuple[str, Any]] = [
            ("grpc.max_receive_message_length", -1),  # a full list of a large resource can be big
            ("grpc.max_send_message_length", 16 * 1024 * 1024),
            ("grpc.keepalive_time_ms", 10_000),
            ("grpc.keepalive_timeout_ms", 5_000),
            ("grpc.keepalive_permit_without_calls", 1),
            # reconnect quickly after an etcd restart (gRPC's default backoff grows to 2 minutes)
            ("grpc.initial_reconnect_backoff_ms", 100),
            ("grpc.min_reconnect_backoff_ms", 100),
            ("grpc.max_reconnect_backoff_ms", 1_000),
            ("grpc.enable_retries", 0),  # retries are ours: writes need to know about them
        ]
        if len(self.endpoints) == 1:
            return self.endpoints[0], opts
        addrs: list[str] = []
        for ep in self.endpoints:
            host, _, port = ep.rpartition(":")
            host = host.strip("[]")
            try:
                ip: ipaddress.IPv4Address | ipaddress.IPv6Address | None = ipaddress.ip_address(host)
            except ValueError:
                ip = None
            if ip is not None and ip.version == 6:
                raise ValueError("several IPv6 etcd endpoints are not supported; give one")
            if ip is None:  # gRPC's ipv4: list takes addresses only: resolve names once, here
                host = str(socket.getaddrinfo(host, int(port), socket.AF_INET, socket.SOCK_STREAM)[0][4][0])
            addrs.append(f"{host}:{port}")
        opts.append(("grpc.lb_policy_name", "round_robin"))
        if self.cafile:  # verify every member against the first endpoint's name
            opts.append(("grpc.ssl_target_name_override", self.endpoints[0].rpartition(":")[0].strip("[]")))
        return "ipv4:" + ",".join(addrs), opts

    async def start(self) -> None:
        import grpc
        import grpc.aio
        from etcd3aio._protobuf import rpc_pb2, rpc_pb2_grpc

        self._pb = rpc_pb2
        target, opts = self._target()
        if self.cafile or self.certfile:
            def read(p: str | None) -> bytes | None:
                if not p:
                    return None
                with open(p, "rb") as f:
                    return f.read()

            creds = grpc.ssl_channel_credentials(read(self.cafile), read(self.keyfile), read(self.certfile))
            self._channel = grpc.aio.secure_channel(target, creds, options=opts)
        else:
            self._channel = grpc.aio.insecure_channel(target, options=opts)
        self._kv = rpc_pb2_grpc.KVStub(self._channel)
        self._watch_stub = rpc_pb2_grpc.WatchStub(self._channel)
        self._delivered_changed = asyncio.Event()
        try:
            await self.current_revision()
        except StoreError as e:
            await self._channel.close()
            raise StoreError(f"cannot reach etcd at {','.join(self.endpoints)}: {e}") from None

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._channel is not None:
            await self._channel.close()

    @property
    def revision(self) -> int:
        return self._revision

    @property
    def compacted_revision(self) -> int:
        return self._compacted

    def _seen(self, header: Any) -> int:
        rev = int(header.revision)
        if rev > self._revision:
            self._revision = rev
        return rev

    # ---- requests --------------------------------------------------------------------------
    @staticmethod
    def _retryable(e: Any) -> bool:
        import grpc

        code = e.code()
        if code in (grpc.StatusCode.UNAVAILABLE, grpc.StatusCode.DEADLINE_EXCEEDED):
            return True
        details = (e.details() or "").lower()
        return any(m in details for m in _RETRY_MESSAGES)

    @staticmethod
    def _slow_failure(e: Any) -> bool:
        import grpc

        return e.code() == grpc.StatusCode.DEADLINE_EXCEEDED or "timed out" in (e.details() or "")

    @staticmethod
    def _error(e: Any) -> StoreError:
        details = e.details() or e.code().name
        return StoreError(details if details.startswith("etcdserver") else f"etcd: {details}")

    async def _call(self, fn: Callable[..., Awaitable[T]], req: Any, on_retry: Callable[[], None] | None = None) -> T:
        """One unary RPC, retried while etcd is unavailable for up to retry_budget seconds."""
        import grpc.aio

        if self._closed:
            raise StoreError("store closed")
        deadline = time.monotonic() + self.retry_budget
        backoff = 0.05
        slow_retries = 2
        while True:
            try:
                return await fn(req, timeout=self.request_timeout, metadata=_REQUIRE_LEADER)
            except grpc.aio.AioRpcError as e:
                if self._closed or not self._retryable(e):
                    raise self._rpc_error(e) from None
                if time.monotonic() + backoff > deadline:
                    # a request stranded on a dead leader times out only after etcd's own request
                    # timeout (about 6 s): that alone must not use up the budget for the election
                    if slow_retries == 0 or not self._slow_failure(e):
                        raise self._rpc_error(e) from None
                    slow_retries -= 1
                log.debug("etcd request failed (%s), retrying", e.details())
                if on_retry is not None:
                    on_retry()
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 0.5)

    def _rpc_error(self, e: Any) -> StoreError:
        details = e.details() or ""
        if _COMPACTED in details:
            return CompactedError(0, self._compacted)
        if _FUTURE in details:
            return FutureRevisionError(0, self._revision)
        return self._error(e)

    def _kv_of(self, kv: Any) -> KeyValue:
        return KeyValue(self._akey(kv.key), bytes(kv.value), int(kv.create_revision), int(kv.mod_revision))

    # ---- reads -----------------------------------------------------------------------------
    async def current_revision(self) -> int:
        """The revision a consistent reader of the API root must have seen.

        A linearizable one-key Range answers etcd's current revision. When a watch on the
        API root feeds the API server's cache and has not reached that revision, the gap
        may hold only writes to other keys (another cluster's prefix on a shared etcd),
        for which no event will ever come; then the delivered revision suffices if nothing
        under our prefix changed in between.
        """
        pb = self._pb
        resp = await self._call(self._kv.Range, pb.RangeRequest(key=self._ekey(API_ROOT), keys_only=True, limit=1))
        rev = self._seen(resp.header)
        changed = self._delivered_changed
        assert changed is not None
        deadline = time.monotonic() + 3.0
        while self._root and time.monotonic() < deadline:
            upto = min(self._root.values())
            if upto >= rev:
                break
            changed.clear()
            try:  # events in flight normally arrive within milliseconds
                await asyncio.wait_for(changed.wait(), 0.05)
                continue
            except TimeoutError:
                pass
            if upto and await self.unchanged_since(upto):
                return upto
        return rev

    async def unchanged_since(self, rev: int) -> bool:
        """Whether the keys under our prefix are now exactly what they were at rev.

        In one read-only transaction: every live key was last modified at or before rev
        (a range compare), and as many keys are live now as at rev; together these mean
        no key was created, changed or deleted since.
        """
        pb = self._pb
        key = self._ekey(API_ROOT + "/")
        end = _prefix_end(key)
        req = pb.TxnRequest(
            compare=[pb.Compare(target=pb.Compare.MOD, result=pb.Compare.LESS, key=key, range_end=end,
                                mod_revision=rev + 1)],
            success=[pb.RequestOp(request_range=pb.RangeRequest(key=key, range_end=end, count_only=True)),
                     pb.RequestOp(request_range=pb.RangeRequest(key=key, range_end=end, count_only=True,
                                                                revision=rev))],
        )
        try:
            resp = await self._call(self._kv.Txn, req)
        except CompactedError:
            return False
        self._seen(resp.header)
        if not resp.succeeded:
            return False
        now, then = resp.responses[0].response_range.count, resp.responses[1].response_range.count
        return now == then

    async def get(self, key: str) -> KeyValue | None:
        resp = await self._call(self._kv.Range, self._pb.RangeRequest(key=self._ekey(key)))
        self._seen(resp.header)
        return self._kv_of(resp.kvs[0]) if resp.kvs else None

    async def range(
        self, prefix: str, *, revision: int = 0, limit: int = 0, start_after: str | None = None, count: bool = False
    ) -> RangeResult:
        pb = self._pb
        p = self._ekey(prefix)
        end = _prefix_end(p)
        lo = p if start_after is None else self._ekey(start_after) + b"\x00"
        req = pb.RangeRequest(key=lo, range_end=end, revision=revision, limit=limit)
        try:
            resp = await self._call(self._kv.Range, req)
        except CompactedError:  # etcd does not say where it compacted: revision + 1 at least
            raise CompactedError(revision, self._note_compacted(revision + 1)) from None
        except FutureRevisionError:
            raise FutureRevisionError(revision, self._revision) from None
        cur = self._seen(resp.header)
        at = revision or cur
        total = -1
        if count:
            total = int(resp.count)  # etcd counts the whole range from lo, past the limit
        return RangeResult([self._kv_of(kv) for kv in resp.kvs], at, bool(resp.more), total)

    def _note_compacted(self, rev: int) -> int:
        if rev > self._compacted:
            self._compacted = rev
        return self._compacted

    # ---- writes ----------------------------------------------------------------------------
    async def _txn(self, compare: Any, success: Any, failure: Any) -> tuple[Any, bool]:
        """A transaction, and whether an earlier attempt of it failed ambiguously."""
        retried = False

        def note() -> None:
            nonlocal retried
            retried = True

        pb = self._pb
        resp = await self._call(self._kv.Txn, pb.TxnRequest(compare=compare, success=success, failure=failure), note)
        self._seen(resp.header)
        return resp, retried

    def _exists(self, k: bytes) -> Any:
        pb = self._pb
        return pb.Compare(target=pb.Compare.CREATE, result=pb.Compare.GREATER, key=k, create_revision=0)

    def _mod_is(self, k: bytes, rev: int) -> Any:
        pb = self._pb
        return pb.Compare(target=pb.Compare.MOD, result=pb.Compare.EQUAL, key=k, mod_revision=rev)

    async def create(self, key: str, value: bytes) -> KeyValue:
        pb = self._pb
        k = self._ekey(key)
        resp, retried = await self._txn(
            [pb.Compare(target=pb.Compare.CREATE, result=pb.Compare.EQUAL, key=k, create_revision=0)],
            [pb.RequestOp(request_put=pb.PutRequest(key=k, value=value))],
            [pb.RequestOp(request_range=pb.RangeRequest(key=k))],
        )
        if resp.succeeded:
            rev = int(resp.header.revision)
            return KeyValue(key, value, rev, rev)
        kvs = resp.responses[0].response_range.kvs
        if retried and kvs and kvs[0].value == value:
            return self._kv_of(kvs[0])  # our first attempt committed before its answer was lost
        raise KeyExistsError(key)

    async def update(self, key: str, value: bytes, expected_mod_revision: int) -> KeyValue:
        pb = self._pb
        k = self._ekey(key)
        cond = self._mod_is(k, expected_mod_revision) if expected_mod_revision else self._exists(k)
        resp, retried = await self._txn(
            [cond],
            [pb.RequestOp(request_put=pb.PutRequest(key=k, value=value, prev_kv=True))],
            [pb.RequestOp(request_range=pb.RangeRequest(key=k))],
        )
        if resp.succeeded:
            prev = resp.responses[0].response_put.prev_kv
            rev = int(resp.header.revision)
            return KeyValue(key, value, int(prev.create_revision) or rev, rev)
        kvs = resp.responses[0].response_range.kvs
        if not kvs:
            raise KeyNotFoundError(key)
        cur = self._kv_of(kvs[0])
        if retried and cur.value == value and cur.mod_revision > expected_mod_revision:
            return cur  # our first attempt committed before its answer was lost
        raise ConflictError(key, cur)

    async def delete(self, key: str, expected_mod_revision: int = 0) -> KeyValue:
        pb = self._pb
        k = self._ekey(key)
        cond = self._mod_is(k, expected_mod_revision) if expected_mod_revision else self._exists(k)
        resp, retried = await self._txn(
            [cond],
            [pb.RequestOp(request_delete_range=pb.DeleteRangeRequest(key=k, prev_kv=True))],
            [pb.RequestOp(request_range=pb.RangeRequest(key=k))],
        )
        if resp.succeeded:
            prevs = resp.responses[0].response_delete_range.prev_kvs
            rev = int(resp.header.revision)
            if not prevs:  # cannot happen: the compare saw the key in the same transaction
                raise KeyNotFoundError(key)
            return KeyValue(key, bytes(prevs[0].value), int(prevs[0].create_revision), rev)
        kvs = resp.responses[0].response_range.kvs
        if not kvs:
            if retried:  # perhaps deleted by our first attempt, perhaps by someone else: say so
                raise StoreError(f"etcd: outcome of deleting {key} unknown after a failed attempt")
            raise KeyNotFoundError(key)
        raise ConflictError(key, self._kv_of(kvs[0]))

    async def compact(self, revision: int) -> None:
        try:
            resp = await self._call(self._kv.Compact, self._pb.CompactionRequest(revision=revision, physical=False))
        except CompactedError:  # already compacted at or past it (another API server, or etcd's own)
            self._note_compacted(revision)
            return
        except FutureRevisionError:
            raise FutureRevisionError(revision, self._revision) from None
        self._seen(resp.header)
        self._note_compacted(revision)

    # ---- keys with a time to live ----------------------------------------------------------
    async def put_with_ttl(self, key: str, value: bytes, ttl: float) -> int:
        """Put `key` on a new etcd lease of `ttl` seconds, so that etcd deletes it when it is not
        put again in time (kube-apiserver's master leases under /registry/masterleases/). The
        lease a previous put used runs out by itself. Returns the write's revision."""
        import math

        from etcd3aio._protobuf import rpc_pb2_grpc

        pb = self._pb
        stub = rpc_pb2_grpc.LeaseStub(self._channel)
        grant = await self._call(stub.LeaseGrant, pb.LeaseGrantRequest(TTL=max(1, math.ceil(ttl))))
        resp = await self._call(self._kv.Put, pb.PutRequest(key=self._ekey(key), value=value, lease=grant.ID))
        return self._seen(resp.header)

    # ---- watch -----------------------------------------------------------------------------
    def watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        return self._watch(prefix, start_revision)

    def _event(self, ev: Any) -> Event:
        key = self._akey(ev.kv.key)
        rev = int(ev.kv.mod_revision)
        pkv = ev.prev_kv if ev.HasField("prev_kv") else None
        prev = self._kv_of(pkv) if pkv is not None and pkv.mod_revision else None
        if ev.type == 1:  # DELETE: etcd's kv is a tombstone; the interface wants the last value
            value = prev.value if prev is not None else b""
            created = prev.create_revision if prev is not None else 0
            return Event(DELETE, KeyValue(key, value, created, rev), rev, prev)
        return Event(PUT, KeyValue(key, bytes(ev.kv.value), int(ev.kv.create_revision), rev), rev, prev)

    async def _watch(self, prefix: str, start_revision: int) -> AsyncIterator[list[Event]]:
        import grpc.aio

        if self._closed:
            raise StoreError("store closed")
        pb = self._pb
        k = self._ekey(prefix)
        end = _prefix_end(k)
        root = prefix.rstrip("/") == API_ROOT
        next_rev = start_revision  # 0: from now; pinned to a number once etcd says what "now" is
        backoff = 0.1
        slot = id(object())
        if root:
            self._root[slot] = max(start_revision - 1, 0)
        try:
            while True:
                stop = asyncio.Event()

                async def requests(rev: int = next_rev, stop: asyncio.Event = stop) -> AsyncIterator[Any]:
                    yield pb.WatchRequest(create_request=pb.WatchCreateRequest(
                        key=k, range_end=end, start_revision=rev, prev_kv=True, progress_notify=True,
                        fragment=True))
                    await stop.wait()  # keep the request stream open as long as the watch lives

                call = self._watch_stub.Watch(requests(), metadata=_REQUIRE_LEADER)
                pending: list[Event] = []  # events of a fragmented response
                try:
                    async for resp in call:
                        self._seen(resp.header)
                        if resp.compact_revision:
                            comp = self._note_compacted(int(resp.compact_revision))
                            raise CompactedError(next_rev, comp)
                        if resp.canceled:
                            raise StoreError(f"etcd canceled the watch: {resp.cancel_reason or 'no reason given'}")
                        if resp.created:
                            if not next_rev:
                                next_rev = int(resp.header.revision) + 1
                                if root:
                                    self._delivered(slot, next_rev - 1)
                            continue
                        backoff = 0.1
                        if resp.events:
                            pending.extend(self._event(e) for e in resp.events)
                            if resp.fragment:
                                continue
                            batch, pending = pending, []
                            next_rev = batch[-1].revision + 1
                            if root:  # the consumer applies the batch before anyone else runs
                                self._delivered(slot, batch[-1].revision)
                            yield batch
                        elif not pending:
                            # a progress notification: etcd sends these only to watchers that have
                            # been sent every event up to the header's revision
                            rev = int(resp.header.revision)
                            if rev >= next_rev:
                                next_rev = rev + 1
                                if root:
                                    self._delivered(slot, rev)
                    if self._closed:
                        return
                    log.warning("etcd watch stream on %s ended; re-creating it from revision %d", prefix, next_rev)
                except grpc.aio.AioRpcError as e:
                    if self._closed:
                        raise StoreError("store closed") from None
                    err = self._rpc_error(e)
                    if isinstance(err, CompactedError):
                        raise CompactedError(next_rev, self._compacted) from None
                    if not self._retryable(e):
                        raise err from None
                    log.info("etcd watch on %s interrupted (%s); resuming from revision %d",
                             prefix, e.details(), next_rev)
                finally:
                    stop.set()
                    call.cancel()
                await asyncio.sleep(backoff)
                backoff = min(backoff * 2, 1.0)
        finally:
            self._root.pop(slot, None)

    def _delivered(self, slot: int, rev: int) -> None:
        if rev > self._root.get(slot, 0):
            self._root[slot] = rev
            if self._delivered_changed is not None:
                self._delivered_changed.set()
