"""In-process components reach the API server without a socket (apiserver/loopback.py):
plain requests and watches.

A real APIServer runs in this process on a free port; a component client (cluster.py) gets
the loopback pool. Its answers must be the network's answers, byte for byte where nothing
differs (uid, timestamps), with the component's own identity under RBAC.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.apiserver.loopback import LoopbackPool
from pyk8s.apiserver.server import APIServer, ServerConfig
from pyk8s.client import Client
from pyk8s.cluster import component_client

CM = ("", "v1", "configmaps")


def _admin(server: APIServer, loopback: bool = True) -> Client:
    return component_client(server, "system:kube-controller-manager", ["system:masters"], "test/loopback",
                            loopback=loopback)


def _nobody(server: APIServer) -> Client:
    return component_client(server, "someone", [], "test/loopback")


def _run(tmp: Path, body: Any) -> None:
    async def main() -> None:
        server = APIServer(ServerConfig(data_dir=str(tmp), port=0))
        await server.start()
        try:
            await body(server)
        finally:
            await server.stop()

    asyncio.run(main())


def test_loopback_answers_as_the_network_does(tmp_path: Path) -> None:
    async def body(server: APIServer) -> None:
        loop_c, net_c = _admin(server), _admin(server, loopback=False)
        assert isinstance(loop_c._pool(server.url), LoopbackPool)
        try:
            a = await loop_c.create(CM, {"metadata": {"name": "a", "labels": {"x": "1"}}, "data": {"k": "v"}},
                                    "default")
            b = await net_c.create(CM, {"metadata": {"name": "b", "labels": {"x": "1"}}, "data": {"k": "v"}},
                                   "default")
            for o in (a, b):
                for f in ("name", "uid", "creationTimestamp", "resourceVersion"):
                    o["metadata"].pop(f)
                o["metadata"]["managedFields"][0].pop("time")
            assert a == b  # same defaults, same managedFields manager (from the User-Agent)
            assert (await loop_c.get(CM, "b", "default"))["metadata"]["name"] == "b"
            with pytest.raises(StatusError) as e:
                await loop_c.create(CM, {"metadata": {"name": "a"}}, "default")
            assert e.value.code == 409 and e.value.message == 'configmaps "a" already exists'
            with pytest.raises(StatusError) as e:
                await loop_c.create(CM, {"metadata": {"name": "Bad_Name"}}, "default")
            assert e.value.code == 422
            listed = await loop_c.list(CM, "default", label_selector="x=1")
            assert sorted(i["metadata"]["name"] for i in listed["items"]) == ["a", "b"]
        finally:
            await loop_c.close()
            await net_c.close()

    _run(tmp_path, body)


def test_loopback_keeps_the_components_identity(tmp_path: Path) -> None:
    async def body(server: APIServer) -> None:
        nobody = _nobody(server)
        try:
            with pytest.raises(StatusError) as e:
                await nobody.list(("", "v1", "secrets"), "kube-system")
            assert e.value.code == 403
            assert 'User "someone" cannot list resource "secrets"' in e.value.message
        finally:
            await nobody.close()

    _run(tmp_path, body)


def test_a_cancelled_caller_does_not_cut_the_write(tmp_path: Path) -> None:
    async def body(server: APIServer) -> None:
        c = _admin(server)
        try:
            t = asyncio.ensure_future(c.create(CM, {"metadata": {"name": "late"}}, "default"))
            await asyncio.sleep(0)
            await asyncio.sleep(0)
            t.cancel()
            with pytest.raises(asyncio.CancelledError):
                await t
            for _ in range(100):
                try:
                    await c.get(CM, "late", "default")
                    break
                except StatusError:
                    await asyncio.sleep(0.02)
            else:
                raise AssertionError("the write the caller gave up on was lost")
        finally:
            await c.close()

    _run(tmp_path, body)


def test_watches_in_process(tmp_path: Path) -> None:
    async def body(server: APIServer) -> None:
        c: Client = _admin(server)
        nobody = _nobody(server)
        assert server.caches is not None
        cms = next(cache for prefix, cache in server.caches.caches.items() if prefix.endswith("/configmaps/"))
        try:
            events: list[tuple[str, str]] = []

            async def watch() -> None:
                async for ev in c.watch(CM, "default", timeout_seconds=5):
                    events.append((ev["type"], ev["object"]["metadata"]["name"]))
                    if events[-1] == ("DELETED", "seen"):
                        return

            before = len(cms.watchers)
            w = asyncio.ensure_future(watch())
            await asyncio.sleep(0.3)
            assert len(cms.watchers) == before + 1
            await c.create(CM, {"metadata": {"name": "seen"}}, "default")
            await c.patch(CM, "seen", {"data": {"a": "b"}}, "default")
            await c.delete(CM, "seen", "default")
            await asyncio.wait_for(w, 5)
            assert events[-3:] == [("ADDED", "seen"), ("MODIFIED", "seen"), ("DELETED", "seen")]
            for _ in range(50):  # the client stopped reading: the server's watcher is gone
                if len(cms.watchers) == before:
                    break
                await asyncio.sleep(0.02)
            assert len(cms.watchers) == before

            with pytest.raises(StatusError) as e:
                async for _ in nobody.watch(("", "v1", "secrets"), "kube-system", timeout_seconds=5):
                    pass
            assert e.value.code == 403

            # a resourceVersion the cache no longer has: the stream carries upstream's ERROR event
            cms.oldest = server.store.revision  # type: ignore[union-attr]
            got = [ev async for ev in c.watch(CM, "default", resource_version="1", timeout_seconds=5)]
            assert got[0]["type"] == "ERROR" and got[0]["object"]["code"] == 410
        finally:
            await c.close()
            await nobody.close()

    _run(tmp_path, body)


def test_a_burst_of_writes_reaches_an_in_process_watch_whole(tmp_path: Path) -> None:
    """Concurrent writes commit together and the watch's sink gathers them into one write: the
    loopback stream must hand each event over whole and in order, as the network does."""
    async def body(server: APIServer) -> None:
        c: Client = _admin(server)
        names = [f"burst-{i:03d}" for i in range(120)]
        try:
            got: list[dict[str, Any]] = []

            async def watch() -> None:
                async for ev in c.watch(CM, "default", timeout_seconds=10):
                    got.append(ev)
                    if len(got) == len(names):
                        return

            w = asyncio.ensure_future(watch())
            await asyncio.sleep(0.3)
            await asyncio.gather(*(c.create(CM, {"metadata": {"name": n}}, "default") for n in names))
            await asyncio.wait_for(w, 10)
            assert sorted(ev["object"]["metadata"]["name"] for ev in got) == names
            rvs = [int(ev["object"]["metadata"]["resourceVersion"]) for ev in got]
            assert rvs == sorted(rvs) and {ev["type"] for ev in got} == {"ADDED"}
        finally:
            await c.close()

    _run(tmp_path, body)


def test_loopback_transport_takes_several_chunks_in_one_write() -> None:
    """What the watch sink writes is HTTP/1.1 chunks; one write may carry several."""
    from pyk8s.apiserver.loopback import _Stream, _Transport

    async def main() -> list[bytes]:
        s = _Stream()
        t = _Transport(s)
        t.write(b"4\r\nab\nc\r\n")
        t.write(b"3\r\nde\n\r\n11\r\n" + b"x" * 16 + b"\n\r\n")
        return list(s.q)

    assert asyncio.run(main()) == [b"ab\nc", b"de\n" + b"x" * 16 + b"\n"]


def test_streams_other_than_watches_use_the_network(tmp_path: Path) -> None:
    async def body(server: APIServer) -> None:
        c = _admin(server)
        try:
            pool = c._pool(server.url)
            assert isinstance(pool, LoopbackPool)
            assert await pool.stream("GET", "/api/v1/namespaces/d/pods/p/log?follow=true") is None
            assert await pool.stream("GET", "/api/v1/nodes/n/proxy/metrics") is None
        finally:
            await c.close()

    _run(tmp_path, body)


DEP_V1BETA2 = ("apps", "v1beta2", "deployments")
DEP_WARNING = "apps/v1beta2 Deployment is deprecated in v1.9+, unavailable in v1.16+; use apps/v1 Deployment"


def test_watches_of_deprecated_versions_warn(tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    """A watch of a built-in deprecated version carries upstream's Warning header, over the network
    (the official client reads it) and in-process, where our client logs it as client-go's default
    WarningHandler does."""
    async def body(server: APIServer) -> None:
        kubeconfig = str(tmp_path / "admin.conf")
        server.write_admin_kubeconfig(kubeconfig)

        def official_watch() -> list[str]:
            from kubernetes import client, config

            api = config.new_client_from_config(kubeconfig)
            assert isinstance(api, client.ApiClient)
            url = api.configuration.host + "/apis/apps/v1beta2/namespaces/default/deployments?watch=true&timeoutSeconds=1"
            resp = api.call_api("GET", url)
            return list(resp.response.headers.getlist("Warning"))

        assert await asyncio.to_thread(official_watch) == [f'299 - "{DEP_WARNING}"']
        for loopback in (True, False):
            c = _admin(server, loopback=loopback)
            try:
                caplog.clear()
                with caplog.at_level("WARNING", logger="pyk8s.client"):
                    async for _ in c.watch(DEP_V1BETA2, "default", timeout_seconds=1):
                        pass
                assert [r.getMessage() for r in caplog.records if r.name == "pyk8s.client"] == [DEP_WARNING], \
                    loopback
                # a refused watch of it warns too (upstream warns before the handler runs)
                caplog.clear()
                with caplog.at_level("WARNING", logger="pyk8s.client"), pytest.raises(StatusError):
                    async for _ in c.watch(DEP_V1BETA2, "default", timeout_seconds=1, resourceVersion="x"):
                        pass
                assert DEP_WARNING in [r.getMessage() for r in caplog.records], loopback
                caplog.clear()
                with caplog.at_level("WARNING", logger="pyk8s.client"):
                    async for _ in c.watch(("apps", "v1", "deployments"), "default", timeout_seconds=1):
                        pass
                assert not [r for r in caplog.records if r.name == "pyk8s.client"]  # apps/v1: none
            finally:
                await c.close()

    _run(tmp_path, body)
