"""The etcd store keeps the Store contract on a real etcd: the SQLite store's scenarios, plus
etcdctl interoperability, watches across an etcd restart, and a 3-member cluster losing a member.

Each test starts its own etcd on free loopback ports (tests/etcd_helper.py) and stops it
however the test ends. Without etcd the tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import asyncio
import json
import time

import pytest

from pyk8s.storage import CompactedError, ConflictError, Event, KeyExistsError, KeyNotFoundError, StoreError
from pyk8s.storage.etcd import EtcdStore, parse_etcd_endpoint
from tests.etcd_helper import EtcdCluster, etcdctl, free_port

pytestmark = pytest.mark.timeout(60)


def run(coro):
    return asyncio.run(coro)


@pytest.fixture
def etcd(tmp_path):
    with EtcdCluster(tmp_path / "etcd", 1) as c:
        yield c


async def _open(c: EtcdCluster, **kw) -> EtcdStore:
    s = EtcdStore(c.endpoints, **kw)
    await s.start()
    return s


def test_endpoint_parsing():
    assert parse_etcd_endpoint("etcd://127.0.0.1:2379") == ["127.0.0.1:2379"]
    assert parse_etcd_endpoint("etcd://a:1,b:2") == ["a:1", "b:2"]
    assert parse_etcd_endpoint("https://a:1,https://b") == ["a:1", "b:2379"]


def test_revisions_increase_per_write_and_preconditions_hold(etcd):
    async def main():
        s = await _open(etcd)
        base = s.revision
        a = await s.create("/registry/pods/default/a", b"1")
        b = await s.create("/registry/pods/default/b", b"2")
        assert (a.mod_revision, b.mod_revision) == (base + 1, base + 2)
        assert a.create_revision == a.mod_revision
        with pytest.raises(KeyExistsError):
            await s.create("/registry/pods/default/a", b"x")
        u = await s.update("/registry/pods/default/a", b"3", a.mod_revision)
        assert u.mod_revision == base + 3 and u.create_revision == base + 1
        with pytest.raises(ConflictError) as ce:
            await s.update("/registry/pods/default/a", b"4", a.mod_revision)
        assert ce.value.current is not None and ce.value.current.value == b"3"
        with pytest.raises(KeyNotFoundError):
            await s.update("/registry/pods/default/zz", b"4", 0)
        with pytest.raises(KeyNotFoundError):
            await s.update("/registry/pods/default/zz", b"4", 7)
        with pytest.raises(ConflictError):
            await s.delete("/registry/pods/default/b", expected_mod_revision=a.mod_revision)
        d = await s.delete("/registry/pods/default/b", expected_mod_revision=b.mod_revision)
        assert d.mod_revision == base + 4 and d.value == b"2" and d.create_revision == base + 2
        with pytest.raises(KeyNotFoundError):
            await s.delete("/registry/pods/default/b")
        assert await s.get("/registry/pods/default/b") is None
        got = await s.get("/registry/pods/default/a")
        assert got is not None and got.value == b"3" and got.mod_revision == base + 3
        assert s.revision == base + 4
        assert await s.current_revision() == base + 4
        await s.close()

    run(main())


def test_concurrent_creates_of_one_key_one_wins(etcd):
    async def main():
        s = await _open(etcd)
        res = await asyncio.gather(*(s.create("/registry/cm/ns/race", str(i).encode()) for i in range(20)),
                                   return_exceptions=True)
        ok = [r for r in res if not isinstance(r, BaseException)]
        assert len(ok) == 1 and all(isinstance(r, KeyExistsError) for r in res if r not in ok)
        await s.close()

    run(main())


def test_range_at_revision_with_paging(etcd):
    async def main():
        s = await _open(etcd)
        for i in range(10):
            await s.create(f"/registry/cm/ns/k{i:02d}", str(i).encode())
        await s.create("/registry/cm/ns2/other", b"x")  # outside the listed prefix
        r5 = s.revision
        await s.update("/registry/cm/ns/k00", b"changed", 0)
        await s.delete("/registry/cm/ns/k01")
        page = await s.range("/registry/cm/ns/", revision=r5, limit=4, count=True)
        assert [kv.key[-3:] for kv in page.kvs] == ["k00", "k01", "k02", "k03"] and page.more and page.count == 10
        assert page.kvs[0].value == b"0" and page.revision == r5
        rest = await s.range("/registry/cm/ns/", revision=r5, start_after=page.kvs[-1].key)
        assert len(rest.kvs) == 6 and not rest.more and rest.count == -1
        mid = await s.range("/registry/cm/ns/", revision=r5, start_after=page.kvs[-1].key, limit=3, count=True)
        assert [kv.key[-3:] for kv in mid.kvs] == ["k04", "k05", "k06"] and mid.more and mid.count == 6
        now = await s.range("/registry/cm/ns/")
        assert len(now.kvs) == 9 and now.kvs[0].value == b"changed" and now.revision == s.revision
        assert not now.more
        from pyk8s.storage import FutureRevisionError

        with pytest.raises(FutureRevisionError):
            await s.range("/registry/cm/ns/", revision=s.revision + 100)
        await s.close()

    run(main())


def test_watch_from_revision_replays_then_follows(etcd):
    async def main():
        s = await _open(etcd)
        await s.create("/registry/a/1", b"1")
        r2 = (await s.create("/registry/a/2", b"2")).mod_revision
        await s.create("/registry/b/1", b"x")
        it = s.watch("/registry/a/", r2).__aiter__()
        first = await asyncio.wait_for(it.__anext__(), 5)
        assert [e.kv.key for e in first] == ["/registry/a/2"] and first[0].is_create
        await s.delete("/registry/a/1")
        u = await s.update("/registry/a/2", b"22", r2)
        got: list[Event] = []
        while len(got) < 2:
            got += await asyncio.wait_for(it.__anext__(), 5)
        d, m = got
        assert d.type == "DELETE" and d.kv.value == b"1" and d.prev is not None and d.prev.value == b"1"
        assert m.type == "PUT" and not m.is_create and m.revision == u.mod_revision
        assert m.prev is not None and m.prev.value == b"2"
        await it.aclose()
        # a watch "from now" sees only later writes
        it = s.watch("/registry/a/", 0).__aiter__()
        nxt = asyncio.ensure_future(it.__anext__())
        await asyncio.sleep(0.2)
        await s.create("/registry/a/3", b"3")
        batch = await asyncio.wait_for(nxt, 5)
        assert [e.kv.key for e in batch] == ["/registry/a/3"]
        await it.aclose()
        await s.close()

    run(main())


def test_compaction_makes_old_revisions_gone(etcd):
    async def main():
        s = await _open(etcd)
        kv = await s.create("/registry/k/churn", b"x")
        early = kv.mod_revision
        for i in range(50):
            kv = await s.update("/registry/k/churn", b"y%d" % i, kv.mod_revision)
        await s.compact(s.revision)
        assert s.compacted_revision == s.revision
        with pytest.raises(CompactedError):
            await s.range("/registry/k/", revision=early)
        with pytest.raises(CompactedError):
            async for _ in s.watch("/registry/k/", early):
                pass
        await s.compact(early)  # already compacted past it: nothing to do
        got = await s.get("/registry/k/churn")
        assert got is not None and got.value == b"y49"
        # the compact revision itself is still readable, as in etcd
        assert (await s.range("/registry/k/", revision=s.compacted_revision)).kvs[0].value == b"y49"
        await s.close()

    run(main())


def test_etcdctl_sees_our_keys_and_prefix_is_mapped(etcd):
    async def main():
        s = await _open(etcd)
        await s.create("/registry/pods/default/web", b'{"kind":"Pod"}')
        await s.create("/registry/configmaps/kube-system/x", b"{}")
        other = await _open(etcd, prefix="/cluster-b")
        await other.create("/registry/pods/default/web", b'{"kind":"Pod","b":1}')
        assert len((await s.range("/registry/pods/")).kvs) == 1  # the two prefixes do not mix
        got = await other.range("/registry/pods/")
        assert [kv.key for kv in got.kvs] == ["/registry/pods/default/web"] and got.kvs[0].value.endswith(b"1}")
        await s.close()
        await other.close()

    run(main())
    url = f"http://{etcd.endpoints[0]}"
    r = etcdctl(url, "get", "--prefix", "/registry/pods/default/", "--keys-only")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["/registry/pods/default/web"]
    r = etcdctl(url, "get", "/registry/pods/default/web", "--print-value-only")
    assert json.loads(r.stdout) == {"kind": "Pod"}
    r = etcdctl(url, "get", "--prefix", "/cluster-b/", "--keys-only")
    assert r.stdout.split() == ["/cluster-b/pods/default/web"]
    # and a key written by etcdctl is an object to the store
    assert etcdctl(url, "put", "/registry/configmaps/default/from-etcdctl", "{}").returncode == 0

    async def read():
        s = await _open(etcd)
        kv = await s.get("/registry/configmaps/default/from-etcdctl")
        await s.close()
        return kv

    kv = run(read())
    assert kv is not None and kv.value == b"{}"


def test_current_revision_is_not_held_up_by_writes_outside_the_prefix(etcd):
    """A consistent reader waits for our watch to reach etcd's revision, unless only other keys changed."""

    async def main():
        s = await _open(etcd)
        other = await _open(etcd, prefix="/cluster-b")
        seen: list[int] = []

        async def follow() -> None:
            async for batch in s.watch("/registry/", s.revision + 1):
                seen.extend(e.revision for e in batch)

        task = asyncio.create_task(follow())
        await asyncio.sleep(0.1)
        mine = (await s.create("/registry/cm/ns/a", b"1")).mod_revision
        foreign = [(await other.create(f"/registry/cm/ns/{i}", b"x")).mod_revision for i in range(3)]
        t0 = time.monotonic()
        rev = await s.current_revision()
        took = time.monotonic() - t0
        assert rev == mine < foreign[-1] and took < 1.0, (rev, mine, foreign, took)
        assert seen == [mine]
        # a write of ours after foreign ones: its revision is required
        mine2 = (await s.update("/registry/cm/ns/a", b"2", mine)).mod_revision
        await other.create("/registry/cm/ns/later", b"x")
        assert await s.current_revision() >= mine2 and mine2 in seen
        # a deletion of ours is never mistaken for "nothing changed"
        await other.create("/registry/cm/ns/later2", b"x")
        d = await s.delete("/registry/cm/ns/a")
        assert await s.current_revision() >= d.mod_revision and d.mod_revision in seen
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        # no watch on the API root: etcd's own revision
        assert await s.current_revision() == (await other.current_revision())
        await s.close()
        await other.close()

    run(main())


def test_watch_survives_an_etcd_restart(etcd):
    """kill -9 etcd and restart it on the same data dir and port: the watch resumes, losing nothing."""

    async def main():
        s = await _open(etcd)
        start = s.revision + 1
        events: list[Event] = []

        async def follow() -> None:
            async for batch in s.watch("/registry/", start):
                events.extend(batch)

        task = asyncio.create_task(follow())
        acked: dict[str, int] = {}
        for i in range(20):
            acked[f"/registry/cm/ns/before-{i}"] = (await s.create(f"/registry/cm/ns/before-{i}", b"v")).mod_revision
        member = etcd.members[0]
        member.kill()
        # writes while etcd is down fail after the retry budget, with etcd's message
        s.retry_budget = 0.3
        with pytest.raises(StoreError):
            await s.create("/registry/cm/ns/while-down", b"v")
        s.retry_budget = 10.0
        await asyncio.get_running_loop().run_in_executor(None, etcd.restart, member)
        for i in range(20):
            acked[f"/registry/cm/ns/after-{i}"] = (await s.create(f"/registry/cm/ns/after-{i}", b"v")).mod_revision
        deadline = time.monotonic() + 20
        while (not events or events[-1].revision < max(acked.values())) and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
        task.cancel()
        await asyncio.gather(task, return_exceptions=True)
        revs = [e.revision for e in events]
        assert revs == sorted(set(revs)), "events repeated or out of order"
        by_key = {e.kv.key: e.revision for e in events}
        assert {k: by_key.get(k) for k in acked} == acked
        await s.close()

    run(main())


def _leader(c: EtcdCluster) -> int:
    """Index of the current leader among the running members."""
    for i, m in enumerate(c.members):
        if not m.running:
            continue
        r = etcdctl(f"http://{m.endpoint}", "endpoint", "status", "-w", "json")
        if r.returncode != 0:
            continue
        st = json.loads(r.stdout)[0]["Status"]
        if st["leader"] == st["header"]["member_id"]:
            return i
    raise AssertionError("no leader")


def test_three_members_one_killed_under_writes_loses_no_acknowledged_write(tmp_path):
    async def main(c: EtcdCluster) -> tuple[int, list[str], float]:
        s = EtcdStore(c.endpoints)
        await s.start()
        acked: dict[str, int] = {}
        failed: list[str] = []
        stop = asyncio.Event()
        slowest = 0.0

        async def writer(w: int) -> None:
            nonlocal slowest
            i = 0
            while not stop.is_set():
                key = f"/registry/cm/ns/w{w}-{i}"
                t0 = time.monotonic()
                try:
                    acked[key] = (await s.create(key, f"{w}-{i}".encode())).mod_revision
                    slowest = max(slowest, time.monotonic() - t0)
                except StoreError as e:
                    failed.append(str(e))
                i += 1

        tasks = [asyncio.create_task(writer(w)) for w in range(8)]
        while len(acked) < 200:
            await asyncio.sleep(0.01)
        leader = _leader(c)
        before = len(acked)
        t_kill = time.monotonic()
        c.members[leader].kill()
        while len(acked) < before + 200 and time.monotonic() - t_kill < 20:
            await asyncio.sleep(0.01)
        stop.set()
        await asyncio.gather(*tasks)
        assert len(acked) >= before + 200, "writes did not resume after the leader died"
        now = {kv.key: kv.mod_revision for kv in (await s.range("/registry/cm/ns/")).kvs}
        lost = [k for k in acked if k not in now]
        assert not lost, f"{len(lost)} acknowledged writes lost"
        assert all(now[k] == rev for k, rev in acked.items())
        await s.close()
        return len(acked), failed, slowest

    with EtcdCluster(tmp_path / "etcd", 3) as c:
        n, failed, slowest = run(main(c))
        print(f"3 members, leader killed: {n} acknowledged creates, none lost; {len(failed)} failed; slowest write {slowest:.1f}s")
        # the survivors agree: read from each of them directly
        for m in c.members:
            if m.running:
                r = etcdctl(f"http://{m.endpoint}", "get", "--prefix", "/registry/cm/ns/", "--keys-only", "--limit=1",
                            "-w", "json")
                assert json.loads(r.stdout)["count"] == n
        # the store bridges the election by retrying; on a loaded machine an election can outlast
        # that, and such a write fails with etcd's message (it is not acknowledged, so not "lost")
        assert len(failed) <= 8 and all(f.startswith("etcd") for f in failed), failed


def test_no_leader_surfaces_as_store_error_with_etcds_message(tmp_path):
    async def main(c: EtcdCluster) -> None:
        s = EtcdStore([c.members[0].endpoint], retry_budget=1.0, request_timeout=3.0)
        await s.start()
        await s.create("/registry/cm/ns/a", b"1")
        c.members[1].kill()
        c.members[2].kill()
        t0 = time.monotonic()
        with pytest.raises(StoreError) as ei:
            await s.create("/registry/cm/ns/b", b"2")
        assert "no leader" in str(ei.value) or "timed out" in str(ei.value), str(ei.value)
        assert time.monotonic() - t0 < 8
        with pytest.raises(StoreError):
            await s.current_revision()
        await asyncio.get_running_loop().run_in_executor(None, c.restart, c.members[1])
        s.retry_budget = 10.0
        assert (await s.create("/registry/cm/ns/c", b"3")).value == b"3"
        # the refused write may still commit once a quorum is back (etcd had it in its log):
        # a failed write is "not acknowledged", never "certainly not done"
        b = await s.get("/registry/cm/ns/b")
        assert b is None or b.value == b"2"
        await s.close()

    with EtcdCluster(tmp_path / "etcd", 3) as c:
        run(main(c))


def test_unreachable_etcd_fails_start_quickly():
    async def main() -> None:
        s = EtcdStore([f"127.0.0.1:{free_port()}"], retry_budget=0.5)
        t0 = time.monotonic()
        with pytest.raises(StoreError) as ei:
            await s.start()
        assert "cannot reach etcd" in str(ei.value)
        assert time.monotonic() - t0 < 5

    run(main())


def test_tls_with_client_certificates(tmp_path):
    """etcd serving TLS and requiring client certificates, as kube-apiserver's etcd usually does."""
    from pyk8s.apiserver.certs import ensure_pki
    from pyk8s.storage import open_store

    pki = ensure_pki(tmp_path / "pki-home", ["127.0.0.1"])
    tls = {"cert": str(pki.serving_cert_path), "key": str(pki.serving_key_path), "ca": str(pki.ca_cert_path),
           "client_cert": str(pki.admin_cert_path), "client_key": str(pki.admin_key_path)}
    with EtcdCluster(tmp_path / "etcd", 1, tls=tls) as c:

        async def main() -> None:
            s = open_store(c.endpoint, str(tmp_path), etcd_cafile=tls["ca"], etcd_certfile=tls["client_cert"],
                           etcd_keyfile=tls["client_key"])
            await s.start()
            kv = await s.create("/registry/cm/ns/tls", b"1")
            assert (await s.get("/registry/cm/ns/tls")) == kv
            await s.close()
            # without a client certificate etcd refuses the connection
            bare = EtcdStore(c.endpoints, cafile=tls["ca"], retry_budget=0.5)
            with pytest.raises(StoreError):
                await bare.start()

        run(main())
        r = c.etcdctl(c.members[0], "get", "/registry/cm/ns/tls", "--print-value-only")
        assert r.stdout.strip() == "1"
