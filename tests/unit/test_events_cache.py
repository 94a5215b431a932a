"""Event correlation as client-go's record.EventCorrelator (tools/record/events_cache.go)."""

from __future__ import annotations

from typing import Any

from pyk8s.client.events_cache import COMBINED_PREFIX, EventCorrelator


class Clock:
    def __init__(self) -> None:
        self.t = 1000.0

    def __call__(self) -> float:
        return self.t


def event(message: str, reason: str = "SuccessfulCreate", obj: str = "rs", n: int = 0) -> dict[str, Any]:
    return {"metadata": {"name": f"{obj}.{n:x}", "namespace": "default"},
            "involvedObject": {"kind": "ReplicaSet", "namespace": "default", "name": obj, "uid": f"uid-{obj}",
                               "apiVersion": "apps/v1"},
            "reason": reason, "message": message, "type": "Normal", "source": {"component": "replicaset-controller"},
            "firstTimestamp": f"t{n}", "lastTimestamp": f"t{n}", "count": 1,
            "reportingComponent": "replicaset-controller", "reportingInstance": "replicaset-controller-host"}


def test_a_repeat_patches_the_first_event_with_its_count():
    c = EventCorrelator(Clock())
    first = c.correlate(event("Back-off", n=1))
    again = c.correlate(event("Back-off", n=2))
    assert first is not None and first.patch is None
    assert again is not None and again.event["metadata"]["name"] == "rs.1"
    assert again.patch == {"count": 2, "lastTimestamp": "t2", "message": "Back-off"}
    assert again.event["firstTimestamp"] == "t1"


def test_the_tenth_similar_message_starts_one_combined_event():
    """Nine distinct messages are nine Events; from the tenth on they are one combined Event, patched."""
    c = EventCorrelator(Clock())
    out = [c.correlate(event(f"Created pod: rs-{i}", n=i)) for i in range(12)]
    assert all(o is not None for o in out)
    assert [o.patch is None for o in out if o] == [True] * 10 + [False] * 2
    combined = [o for o in out[9:] if o]
    assert {o.event["metadata"]["name"] for o in combined} == {combined[0].event["metadata"]["name"]}
    assert combined[0].event["message"] == COMBINED_PREFIX + "Created pod: rs-9"
    assert combined[2].patch == {"count": 3, "lastTimestamp": "t11", "message": COMBINED_PREFIX + "Created pod: rs-11"}


def test_spam_filter_allows_a_burst_of_25_per_object_then_one_per_five_minutes():
    clock = Clock()
    c = EventCorrelator(clock)
    written = [c.correlate(event(f"Created pod: rs-{i}", n=i)) for i in range(100)]
    assert sum(1 for w in written if w is not None) == 25
    # another object has its own bucket
    assert c.correlate(event("Created pod: other-0", obj="other")) is not None
    clock.t += 300
    assert c.correlate(event("Created pod: rs-100", n=100)) is not None
    assert c.correlate(event("Created pod: rs-101", n=101)) is None


def test_similar_messages_are_counted_per_ten_minutes():
    clock = Clock()
    c = EventCorrelator(clock)
    for i in range(9):
        c.correlate(event(f"m{i}", reason="Pulled", n=i))
    clock.t += 601
    later = c.correlate(event("m9", reason="Pulled", n=9))
    assert later is not None and later.event["message"] == "m9" and later.patch is None
