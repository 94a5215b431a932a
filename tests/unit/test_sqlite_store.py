"""The SQLite store keeps etcd's semantics: one revision per write, preconditions, history, compaction."""

import asyncio
import os

import pytest

from pyk8s.storage import CompactedError, ConflictError, KeyExistsError, KeyNotFoundError, StoreError
from pyk8s.storage.sqlite import SQLiteStore


def run(coro):
    return asyncio.run(coro)


async def _open(tmp_path, **kw):
    s = SQLiteStore(str(tmp_path / "state.db"), **kw)
    await s.start()
    return s


def test_revisions_increase_per_write_and_preconditions_hold(tmp_path):
    async def main():
        s = await _open(tmp_path)
        a = await s.create("/registry/pods/default/a", b"1")
        b = await s.create("/registry/pods/default/b", b"2")
        assert (a.mod_revision, b.mod_revision) == (1, 2)
        with pytest.raises(KeyExistsError):
            await s.create("/registry/pods/default/a", b"x")
        u = await s.update("/registry/pods/default/a", b"3", a.mod_revision)
        assert u.mod_revision == 3 and u.create_revision == 1
        with pytest.raises(ConflictError):
            await s.update("/registry/pods/default/a", b"4", a.mod_revision)
        with pytest.raises(KeyNotFoundError):
            await s.update("/registry/pods/default/zz", b"4", 0)
        d = await s.delete("/registry/pods/default/b")
        assert d.mod_revision == 4 and d.value == b"2"
        assert await s.get("/registry/pods/default/b") is None
        assert (await s.get("/registry/pods/default/a")).value == b"3"
        await s.close()

    run(main())


def test_range_at_revision_with_paging(tmp_path):
    async def main():
        s = await _open(tmp_path)
        for i in range(10):
            await s.create(f"/registry/cm/ns/k{i:02d}", str(i).encode())
        r5 = s.revision
        await s.update("/registry/cm/ns/k00", b"changed", 0)
        await s.delete("/registry/cm/ns/k01")
        page = await s.range("/registry/cm/ns/", revision=r5, limit=4, count=True)
        assert [kv.key[-3:] for kv in page.kvs] == ["k00", "k01", "k02", "k03"] and page.more and page.count == 10
        assert page.kvs[0].value == b"0"
        rest = await s.range("/registry/cm/ns/", revision=r5, start_after=page.kvs[-1].key)
        assert len(rest.kvs) == 6 and not rest.more
        # the count is of the keys from the start key on, as etcd counts a continued range
        mid = await s.range("/registry/cm/ns/", revision=r5, start_after=page.kvs[-1].key, limit=3, count=True)
        assert [kv.key[-3:] for kv in mid.kvs] == ["k04", "k05", "k06"] and mid.more and mid.count == 6
        now = await s.range("/registry/cm/ns/")
        assert len(now.kvs) == 9 and now.kvs[0].value == b"changed"
        await s.close()

    run(main())


def test_restart_keeps_every_write_and_revision(tmp_path):
    async def main():
        s = await _open(tmp_path)
        await asyncio.gather(*(s.create(f"/k/{i}", b"v") for i in range(200)))
        rev = s.revision
        await s.close()
        s2 = await _open(tmp_path)
        assert s2.revision == rev == 200
        assert len((await s2.range("/k/")).kvs) == 200
        kv = await s2.create("/k/new", b"v")
        assert kv.mod_revision == 201
        await s2.close()

    run(main())


def test_group_commit_shares_commits(tmp_path):
    async def main():
        s = await _open(tmp_path)
        await asyncio.gather(*(s.create(f"/k/{i}", b"v") for i in range(1000)))
        assert s.batches < 1000
        await s.close()

    run(main())


def test_watch_from_revision_replays_then_follows(tmp_path):
    async def main():
        s = await _open(tmp_path)
        await s.create("/a/1", b"1")
        r2 = (await s.create("/a/2", b"2")).mod_revision
        await s.create("/b/1", b"x")
        it = s.watch("/a/", r2).__aiter__()
        first = await it.__anext__()
        assert [e.kv.key for e in first] == ["/a/2"]
        await s.delete("/a/1")
        nxt = await asyncio.wait_for(it.__anext__(), 2)
        assert nxt[0].type == "DELETE" and nxt[0].kv.value == b"1"
        await it.aclose()
        await s.close()

    run(main())


def test_compaction_bounds_history_and_file_size(tmp_path):
    async def main():
        s = await _open(tmp_path, synchronous="NORMAL")
        kv = await s.create("/k/churn", b"x" * 2000)
        db = str(tmp_path / "state.db")
        sizes = []
        for _ in range(10):  # 10,000 updates of one object, compacted every 1,000
            for _ in range(1000):
                kv = await s.update("/k/churn", b"y" * 2000, kv.mod_revision)
            await s.compact(s.revision)
            sizes.append(os.path.getsize(db) + os.path.getsize(db + "-wal"))
        # one compaction window of history (about 1000 * 2 KB) bounds the file; it does not grow with churn
        assert max(sizes[3:]) <= max(sizes[:3]) * 1.2, sizes
        assert sizes[-1] < 6 * 1024 * 1024, sizes
        with pytest.raises(CompactedError):
            await s.range("/k/", revision=5)
        with pytest.raises(CompactedError):
            async for _ in s.watch("/k/", 5):
                pass
        assert (await s.get("/k/churn")).value == b"y" * 2000
        await s.close()

    run(main())


def test_one_process_per_database(tmp_path):
    """A second process on the same database is refused (it would reuse revisions); the lock
    goes with its holder, kill -9 included. A second store of the same process shares it."""
    import signal
    import subprocess
    import sys

    path = str(tmp_path / "state.db")
    holder = subprocess.Popen(
        [sys.executable, "-c", "import asyncio, sys\n"
         "from pyk8s.storage.sqlite import SQLiteStore\n"
         "async def main():\n"
         f"    s = SQLiteStore({path!r}); await s.start(); print('ok', flush=True); sys.stdin.read()\n"
         "asyncio.run(main())"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "ok"

        async def refused() -> None:
            s = SQLiteStore(path)
            with pytest.raises(StoreError, match=rf"in use by another process \(pid {holder.pid}\)"):
                await s.start()
            await s.close()

        asyncio.run(refused())
        assert oct(os.stat(path + ".lock").st_mode & 0o777) == "0o600"
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()

    async def after() -> None:
        a, b = SQLiteStore(path), SQLiteStore(path)
        await a.start()
        await b.start()  # the same process: shared
        await b.close()
        kv = await a.create("/registry/x", b"1")  # still the only writer's
        assert kv.mod_revision >= 1
        await a.close()

    asyncio.run(after())
