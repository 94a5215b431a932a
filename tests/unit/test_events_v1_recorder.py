"""The events.k8s.io/v1 recorder's series (client/events_v1.py), as client-go's tools/events: which repeat
writes what. The API calls go to a recording stand-in for the client; tests/integration/test_scheduler.py
checks the same against a real server through the scheduler."""

from __future__ import annotations

import asyncio
from typing import Any

from pyk8s.client.events_v1 import FINISH_SECONDS, EventsV1Recorder


class Calls:
    def __init__(self) -> None:
        self.calls: list[tuple[str, Any]] = []

    async def create(self, gvr: Any, obj: dict[str, Any], ns: str) -> dict[str, Any]:
        self.calls.append(("create", obj))
        return obj

    async def patch(self, gvr: Any, name: str, patch: Any, ns: str, patch_type: str = "merge") -> dict[str, Any]:
        self.calls.append(("patch", (name, patch, patch_type)))
        return {}


class Clock:
    t = 1000.0

    def __call__(self) -> float:
        return self.t


def pod(rv: str = "7") -> dict[str, Any]:
    return {"kind": "Pod", "apiVersion": "v1",
            "metadata": {"name": "p", "namespace": "ns", "uid": "u1", "resourceVersion": rv}}


def run(fn: Any) -> Any:
    async def main() -> Any:
        return await fn()
    return asyncio.run(main())


def test_first_is_created_second_makes_a_series_later_ones_only_count() -> None:
    client, clock = Calls(), Clock()

    async def go() -> EventsV1Recorder:
        r = EventsV1Recorder(client, "default-scheduler", clock=clock)  # type: ignore[arg-type]
        for note in ("no nodes available to schedule pods", "a different note: not part of the key", "again"):
            r.event(pod(), None, "Warning", "FailedScheduling", "Scheduling", note)
            await r.flush()
        for _ in range(3):
            r.event(pod(), None, "Warning", "FailedScheduling", "Scheduling", "x")
        await r.flush()
        return r

    r = run(go)
    (kind, ev), (kind2, (name, patch, ptype)) = client.calls
    assert kind == "create" and kind2 == "patch" and ptype == "strategic"
    assert ev["apiVersion"] == "events.k8s.io/v1" and ev["metadata"]["namespace"] == "ns"
    assert ev["note"] == "no nodes available to schedule pods" and ev["action"] == "Scheduling"
    assert ev["reportingController"] == "default-scheduler" and ev["reportingInstance"].startswith("default-scheduler-")
    assert ev["regarding"]["resourceVersion"] == "7" and "series" not in ev
    assert name == ev["metadata"]["name"] and patch["series"]["count"] == 2  # sent as it was then
    (cached,) = r._cache.values()
    assert cached.event()["series"]["count"] == 6  # counted in memory only


def test_a_new_resource_version_or_related_object_is_another_event() -> None:
    client = Calls()

    async def go() -> None:
        r = EventsV1Recorder(client, "default-scheduler")  # type: ignore[arg-type]
        r.event(pod("7"), None, "Warning", "FailedScheduling", "Scheduling", "m")
        r.event(pod("8"), None, "Warning", "FailedScheduling", "Scheduling", "m")
        r.event(pod("8"), pod("1"), "Normal", "Preempted", "Preempting", "m")
        await r.flush()

    run(go)
    assert [k for k, _ in client.calls] == ["create", "create", "create"]
    assert client.calls[2][1]["related"]["resourceVersion"] == "1"


def test_a_quiet_series_gets_its_final_count_and_is_forgotten() -> None:
    client, clock = Calls(), Clock()

    async def go() -> None:
        r = EventsV1Recorder(client, "default-scheduler", clock=clock)  # type: ignore[arg-type]
        for _ in range(4):
            r.event(pod(), None, "Warning", "FailedScheduling", "Scheduling", "m")
        r.event(pod("9"), None, "Normal", "Scheduled", "Binding", "single")
        await r.flush()
        clock.t += FINISH_SECONDS - 1
        r.upkeep()
        await r.flush()
        assert len(client.calls) == 3  # not quiet long enough yet
        clock.t += 1
        r.upkeep()  # the series: its last count; the single event: forgotten without a write
        await r.flush()
        assert not r._cache
        r.event(pod(), None, "Warning", "FailedScheduling", "Scheduling", "m")  # a new Event again
        await r.flush()

    run(go)
    # writes of different Events may interleave; those of the pod at resourceVersion 7, in order:
    mine = [(k, c) for k, c in client.calls if (c["regarding"]["resourceVersion"] == "7" if k == "create" else
                                                 c[0] == client.calls[0][1]["metadata"]["name"])]
    assert [k for k, _ in mine] == ["create", "patch", "patch", "create"]
    assert mine[2][1][1]["series"]["count"] == 4
    assert sum(1 for k, c in client.calls if k == "create" and c["reason"] == "Scheduled") == 1


def test_refresh_writes_running_series_again() -> None:
    client = Calls()

    async def go() -> None:
        r = EventsV1Recorder(client, "default-scheduler")  # type: ignore[arg-type]
        for _ in range(5):
            r.event(pod(), None, "Warning", "FailedScheduling", "Scheduling", "m")
        r.event(pod("9"), None, "Normal", "Scheduled", "Binding", "single")
        await r.flush()
        r.refresh()
        await r.flush()

    run(go)
    assert sorted(k for k, _ in client.calls) == ["create", "create", "patch", "patch"]
    patches = [c for k, c in client.calls if k == "patch"]
    assert [p[1]["series"]["count"] for p in patches] == [2, 5]
