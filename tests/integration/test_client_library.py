"""The client library against a real server: informers, leader election, events."""

import asyncio

from pyk8s.client import Client, EventRecorder, InformerFactory, LeaderElector
from tests.cluster import BOTH_DATASTORES

pytestmark = BOTH_DATASTORES  # the same answers from SQLite and from etcd

CM = ("", "v1", "configmaps")


def test_informer_lists_then_watches(cluster):
    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        await c.create(CM, {"metadata": {"name": "inf-a", "namespace": "default"}})
        f = InformerFactory(c)
        inf = f.informer(CM, "default")
        seen = []
        inf.add_handlers(on_add=lambda o: seen.append(("add", o["metadata"]["name"])),
                         on_update=lambda o, n: seen.append(("update", n["metadata"]["name"])),
                         on_delete=lambda o: seen.append(("delete", o["metadata"]["name"])))
        f.start()
        await f.wait_synced(10)
        assert inf.get("default/inf-a") is not None
        await c.create(CM, {"metadata": {"name": "inf-b", "namespace": "default"}})
        await c.patch(CM, "inf-b", {"data": {"x": "1"}}, "default")
        await c.delete(CM, "inf-b", "default")
        for _ in range(100):
            if ("delete", "inf-b") in seen:
                break
            await asyncio.sleep(0.05)
        assert [s for s in seen if s[1] == "inf-b"] == [("add", "inf-b"), ("update", "inf-b"), ("delete", "inf-b")]
        await f.stop()
        await c.close()

    asyncio.run(main())


def test_only_one_leader_and_handover(cluster):
    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        # generous timings: the assertion is about who leads, not how fast on a loaded machine
        a = LeaderElector(c, "test-lock", identity="a", lease_duration=3, renew_deadline=2.5, retry_period=0.3)
        b = LeaderElector(c, "test-lock", identity="b", lease_duration=3, renew_deadline=2.5, retry_period=0.3)
        leading = []

        async def work(name):
            leading.append(name)
            await asyncio.sleep(3600)

        ta = asyncio.create_task(a.run(lambda: work("a")))
        for _ in range(100):
            if a.is_leader:
                break
            await asyncio.sleep(0.05)
        tb = asyncio.create_task(b.run(lambda: work("b")))
        await asyncio.sleep(1.0)
        assert leading == ["a"] and a.is_leader and not b.is_leader
        ta.cancel()  # the leader dies without releasing
        for _ in range(200):
            if b.is_leader:
                break
            await asyncio.sleep(0.1)
        assert b.is_leader and leading == ["a", "b"]
        tb.cancel()
        await c.close()

    asyncio.run(main())


def test_event_recorder_aggregates_repeats(cluster):
    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        obj = await c.create(CM, {"metadata": {"name": "ev-target", "namespace": "default"}})
        obj["kind"], obj["apiVersion"] = "ConfigMap", "v1"
        r = EventRecorder(c, "test-controller")
        for _ in range(3):
            r.event(obj, "Warning", "Oops", "it broke")
            await r.flush()
        evs = await c.list(("", "v1", "events"), "default",
                           field_selector="involvedObject.name=ev-target,reason=Oops")
        assert len(evs["items"]) == 1 and evs["items"][0]["count"] == 3
        await c.close()

    asyncio.run(main())


def test_event_recorder_combines_similar_events_and_filters_spam(cluster):
    """client-go's EventCorrelator: 9 Events, then one combined Event patched on; 25 writes per object at most."""
    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        obj = await c.create(CM, {"metadata": {"name": "ev-spam", "namespace": "default"}})
        obj["kind"], obj["apiVersion"] = "ConfigMap", "v1"
        r = EventRecorder(c, "test-controller")
        for i in range(30):
            r.event(obj, "Normal", "Created", f"Created thing {i}")
        await r.flush()
        evs = (await c.list(("", "v1", "events"), "default", field_selector="involvedObject.name=ev-spam"))["items"]
        single = sorted(e["message"] for e in evs if not e["message"].startswith("(combined"))
        combined = [e for e in evs if e["message"].startswith("(combined")]
        assert single == sorted(f"Created thing {i}" for i in range(9))
        # calls 10..25 spend the rest of the 25-token burst on the combined Event; 26..30 are dropped
        assert len(combined) == 1 and combined[0]["count"] == 16
        assert combined[0]["message"] == "(combined from similar events): Created thing 24"
        await c.close()

    asyncio.run(main())


def test_scheduler_informers_keep_no_managed_fields_and_updates_keep_the_stored_ones(cluster):
    """As kube-scheduler's and kube-controller-manager's informers (their transform sets managedFields
    to nil): the cache holds objects without them, and writing such an object back with an update
    keeps the entries the server stored (upstream: a nil managedFields in an update is not a reset)."""
    from pyk8s.scheduler.runner import SchedulerRunner

    pods = ("", "v1", "pods")

    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        await c.create(pods, {"metadata": {"name": "mf-a", "namespace": "default", "labels": {"a": "1"}},
                              "spec": {"containers": [{"name": "c", "image": "pause"}]}})
        runner = SchedulerRunner(c, leader_elect=False)
        seen = []
        runner.pods.add_handlers(on_add=seen.append, on_update=lambda o, n: seen.append(n))
        runner.pods.start()
        await runner.pods.wait_synced(10)
        await c.patch(pods, "mf-a", {"metadata": {"labels": {"b": "2"}}}, "default")
        for _ in range(100):
            if any(o["metadata"]["labels"].get("b") for o in seen):
                break
            await asyncio.sleep(0.05)
        cached = runner.pods.get("default/mf-a")
        assert cached is not None and cached["metadata"]["labels"] == {"a": "1", "b": "2"}
        assert all("managedFields" not in o["metadata"] for o in [*seen, cached])
        stored = await c.get(pods, "mf-a", "default")
        managers = {e["manager"] for e in stored["metadata"]["managedFields"]}
        assert len(managers) >= 1
        cached["metadata"]["labels"]["c"] = "3"
        # unconditional (the scheduler may write the pod's status meanwhile), as pods allow
        body = {**cached, "metadata": {k: v for k, v in cached["metadata"].items() if k != "resourceVersion"}}
        updated = await c.request("PUT", "/api/v1/namespaces/default/pods/mf-a", body)
        assert {e["manager"] for e in updated["metadata"]["managedFields"]} >= managers
        assert any("f:c" in str(e.get("fieldsV1")) for e in updated["metadata"]["managedFields"])
        await runner.pods.stop()
        await c.delete(pods, "mf-a", "default", grace_period=0)
        await c.close()

    asyncio.run(main())


def test_compacting_informers_share_equal_strings_once_objects_settle(cluster, monkeypatch):
    """compact=True (the scheduler's and the controller-manager's informers): an object still
    stored SETTLE_SECONDS after it arrived is rewritten with shared equal strings, and stays equal
    to what the server holds."""
    from pyk8s.client import informer as informer_mod

    monkeypatch.setattr(informer_mod, "SETTLE_SECONDS", 0.2)
    monkeypatch.setattr(informer_mod, "SETTLE_BATCH", 1)  # one object per turn: the rest on later turns

    async def main():
        c = Client.from_kubeconfig(cluster.kubeconfig)
        for name in ("cmp-a", "cmp-b"):
            await c.create(CM, {"metadata": {"name": name, "namespace": "default", "labels": {"tier": "backend-x"}},
                                "data": {"k": "same-value"}})
        f = InformerFactory(c, compact=True)
        inf = f.informer(CM, "default", label_selector="tier=backend-x")
        f.start()
        await f.wait_synced(10)
        a, b = inf.get("default/cmp-a"), inf.get("default/cmp-b")
        assert a["data"]["k"] == b["data"]["k"]
        for _ in range(100):
            if a["data"]["k"] is b["data"]["k"]:
                break
            await asyncio.sleep(0.05)
        assert a["data"]["k"] is b["data"]["k"]
        assert a["metadata"]["labels"]["tier"] is b["metadata"]["labels"]["tier"]
        assert a == await c.get(CM, "cmp-a", "default")
        await f.stop()
        for name in ("cmp-a", "cmp-b"):
            await c.delete(CM, name, "default")
        await c.close()

    asyncio.run(main())
