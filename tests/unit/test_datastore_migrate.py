"""storage/migrate.py: a consistent, paged copy of every key between stores (SQLite and a real etcd)."""

from __future__ import annotations

import asyncio
import os
import time
from typing import Any

import pytest

from pyk8s.storage import Store
from pyk8s.storage.etcd import EtcdStore
from pyk8s.storage.migrate import PAGE, Progress, TargetNotEmptyError, migrate, resource_of
from pyk8s.storage.sqlite import SQLiteStore

pytestmark = pytest.mark.timeout(60)


def run(coro: Any) -> Any:
    return asyncio.run(coro)


async def contents(s: Store) -> dict[str, bytes]:
    return {kv.key: kv.value for kv in (await s.range("/registry/")).kvs}


async def fill(s: Store, n: int) -> None:
    """n configmaps with some history: updates and deletes leave gaps in the revisions."""
    for i in range(n):
        await s.create(f"/registry/configmaps/ns{i % 3}/cm{i:05d}", b'{"i": %d}' % i)
    kv = await s.get("/registry/configmaps/ns0/cm00000")
    assert kv is not None
    await s.update(kv.key, b'{"i": "updated"}', kv.mod_revision)
    await s.delete("/registry/configmaps/ns1/cm00001")
    await s.create("/registry/example.com/widgets/ns0/w1", b"{}")
    await s.create("/registry/namespaces/ns0", b"{}")


def test_resource_of():
    assert resource_of("/registry/configmaps/default/x") == "configmaps"
    assert resource_of("/registry/namespaces/default") == "namespaces"
    assert resource_of("/registry/example.com/widgets/default/w") == "widgets.example.com"
    assert resource_of("/registry/example.com/clusterwidgets/w") == "clusterwidgets.example.com"
    assert resource_of("/registry/masterleases/10.0.0.1") == "masterleases"


def test_sqlite_to_sqlite_pages_and_refuses_a_non_empty_target(tmp_path):
    async def main() -> None:
        src, dst = SQLiteStore(str(tmp_path / "a.db")), SQLiteStore(str(tmp_path / "b.db"))
        await src.start()
        await dst.start()
        try:
            await fill(src, PAGE * 2 + 7)  # three pages
            want = await contents(src)
            await src.create("/registry/masterleases/10.0.0.1", b"{}")  # ephemeral: not copied
            seen: list[Progress] = []
            res = await migrate(src, dst, progress=seen.append)
            assert await contents(dst) == want
            assert res.keys == len(want) and res.skipped == 1 and res.source_revision == src.revision
            assert res.by_resource == {"configmaps": PAGE * 2 + 6, "widgets.example.com": 1, "namespaces": 1}
            assert seen[-1].done == seen[-1].total == len(want) + 1 and seen[-1].phase == "copying"
            # the target numbers its writes itself: one revision per key
            assert res.target_revision == dst.revision == len(want)

            await dst.create("/registry/configmaps/ns9/stray", b"{}")
            with pytest.raises(TargetNotEmptyError) as e:
                await migrate(src, dst)
            assert e.value.keys == len(want) + 1
            res = await migrate(src, dst, force=True)
            assert res.replaced == len(want) + 1 and await contents(dst) == want
        finally:
            await src.close()
            await dst.close()

    run(main())


def test_a_write_to_the_source_during_the_copy_is_reported(tmp_path):
    async def main() -> None:
        path = str(tmp_path / "a.db")
        src, dst = SQLiteStore(path), SQLiteStore(str(tmp_path / "b.db"))
        await src.start()
        await dst.start()
        writes: list[asyncio.Task[Any]] = []
        try:
            await fill(src, PAGE + 1)

            def meanwhile(p: Progress) -> None:  # a server still running on the source
                if not writes:
                    writes.append(asyncio.ensure_future(src.create("/registry/configmaps/ns0/late", b"{}")))

            res = await migrate(src, dst, progress=meanwhile, reopen_source=lambda: SQLiteStore(path))
            assert res.source_changed
            assert "/registry/configmaps/ns0/late" not in await contents(dst)  # the snapshot's revision only
            res = await migrate(src, dst, force=True, reopen_source=lambda: SQLiteStore(path))
            assert not res.source_changed
        finally:
            await asyncio.gather(*writes)
            await src.close()
            await dst.close()

    run(main())


def test_etcd_prefixes_both_ways(tmp_path):
    """SQLite -> etcd under one prefix -> etcd under another -> SQLite; other prefixes' writes are not changes."""
    from tests.cluster import shared_etcd

    etcd = shared_etcd()
    tag = f"{os.getpid()}-{time.monotonic_ns()}"

    async def main() -> None:
        src, back = SQLiteStore(str(tmp_path / "a.db")), SQLiteStore(str(tmp_path / "back.db"))
        one = EtcdStore(etcd.endpoints, prefix=f"/one-{tag}")
        two = EtcdStore(etcd.endpoints, prefix=f"/two-{tag}")
        neighbour = EtcdStore(etcd.endpoints, prefix=f"/neighbour-{tag}")
        stores = [src, back, one, two, neighbour]
        for s in stores:
            await s.start()
        try:
            await fill(src, 50)
            want = await contents(src)
            await migrate(src, one)
            assert await contents(one) == want

            writes: list[asyncio.Task[Any]] = []

            def neighbour_writes(p: Progress) -> None:  # another cluster on the same etcd
                writes.append(asyncio.ensure_future(neighbour.create(f"/registry/configmaps/x/n{len(writes)}", b"{}")))

            res = await migrate(one, two, progress=neighbour_writes,
                                reopen_source=lambda: EtcdStore(etcd.endpoints, prefix=f"/one-{tag}"))
            await asyncio.gather(*writes)
            assert writes and not res.source_changed
            assert await contents(two) == want
            await migrate(two, back)
            assert await contents(back) == want
        finally:
            for s in stores:
                await s.close()

    run(main())


def test_cli_with_etcd_tls_both_ways(tmp_path, capsys):
    """`pyk8s datastore migrate` with --etcd-cafile/--etcd-certfile/--etcd-keyfile, as `pyk8s server` takes them."""
    from pyk8s.apiserver.certs import ensure_pki
    from pyk8s.cli.main import main as cli
    from tests.etcd_helper import EtcdCluster

    pki = ensure_pki(tmp_path / "pki-home", ["127.0.0.1"])
    tls = {"cert": str(pki.serving_cert_path), "key": str(pki.serving_key_path), "ca": str(pki.ca_cert_path),
           "client_cert": str(pki.admin_cert_path), "client_key": str(pki.admin_key_path)}
    flags = ["--etcd-cafile", tls["ca"], "--etcd-certfile", tls["client_cert"], "--etcd-keyfile", tls["client_key"]]
    src, back = tmp_path / "a.db", tmp_path / "back.db"

    async def make() -> dict[str, bytes]:
        s = SQLiteStore(str(src))
        await s.start()
        try:
            await fill(s, 20)
            return await contents(s)
        finally:
            await s.close()

    async def read(path: str) -> dict[str, bytes]:
        s = SQLiteStore(path)
        await s.start()
        try:
            return await contents(s)
        finally:
            await s.close()

    want = run(make())
    with EtcdCluster(tmp_path / "etcd", 1, tls=tls) as c:
        assert cli(["datastore", "migrate", "--from", f"sqlite://{src}", "--to", c.endpoint, "--etcd-prefix",
                    "/tls", *flags]) == 0
        out = capsys.readouterr()
        assert f"copied {len(want)} keys" in out.out and f"to {c.endpoint} (prefix /tls)" in out.out
        assert "  configmaps" in out.out and "copying" in out.err
        r = c.etcdctl(c.members[0], "get", "/tls/namespaces/ns0", "--print-value-only")
        assert r.stdout.strip() == "{}"
        # without the client certificate etcd refuses, and the command says why
        assert cli(["datastore", "migrate", "--from", c.endpoint, "--to", f"sqlite://{back}",
                    "--etcd-cafile", tls["ca"]]) == 1
        assert "cannot reach etcd" in capsys.readouterr().err
        assert cli(["datastore", "migrate", "--from", c.endpoint, "--etcd-prefix", "/tls", "--to",
                    f"sqlite://{back}", "--quiet", *flags]) == 0
        assert run(read(str(back))) == want
