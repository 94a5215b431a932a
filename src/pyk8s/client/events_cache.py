"""Event correlation, as client-go's record.EventCorrelator: aggregation, repeat counting, spam filter.

Three steps per event, in upstream's order:

1. Aggregate: events alike but for their message (same source, object, type, reason) are
   counted per 10 minutes; from the 10th distinct message on they become one event whose
   message reads "(combined from similar events): <latest message>".
2. Observe: a repeat of an event already written (same key, message included) becomes a
   patch of that Event's count, lastTimestamp and message instead of a new object.
3. Filter: every source+object pair has a token bucket (25 burst, one more every 5 minutes);
   without a token the event is dropped. A ReplicaSet creating 10,000 pods therefore writes
   some 25 Events, not 10,000, as upstream's controllers do.

Pure logic over wire-form Event dicts; the clock is injectable for tests.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

__all__ = ["Correlated", "EventCorrelator"]

MAX_LRU_ENTRIES = 4096
AGGREGATE_MAX_EVENTS = 10
AGGREGATE_INTERVAL = 600.0
SPAM_BURST = 25
SPAM_QPS = 1.0 / 300.0
COMBINED_PREFIX = "(combined from similar events): "

K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    def __init__(self, size: int) -> None:
        self.size = size
        self._d: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        v = self._d.get(key)
        if v is not None:
            self._d.move_to_end(key)
        return v

    def put(self, key: K, value: V) -> None:
        self._d[key] = value
        self._d.move_to_end(key)
        if len(self._d) > self.size:
            self._d.popitem(last=False)


def _object_key(ev: dict[str, Any]) -> tuple[str, ...]:
    src, obj = ev.get("source") or {}, ev.get("involvedObject") or {}
    return (src.get("component", ""), src.get("host", ""), obj.get("kind", ""), obj.get("namespace", ""),
            obj.get("name", ""), obj.get("uid", ""), obj.get("apiVersion", ""))


def event_key(ev: dict[str, Any]) -> tuple[str, ...]:
    """What makes two events the same event (upstream's getEventKey)."""
    return (*_object_key(ev), (ev.get("involvedObject") or {}).get("fieldPath", ""), ev.get("type", ""),
            ev.get("reason", ""), ev.get("message", ""))


def aggregate_key(ev: dict[str, Any]) -> tuple[str, ...]:
    """What makes events similar (upstream's EventAggregatorByReasonFunc, without the message)."""
    return (*_object_key(ev), ev.get("type", ""), ev.get("reason", ""), ev.get("reportingComponent", ""),
            ev.get("reportingInstance", ""))


@dataclass
class _Aggregate:
    messages: set[str] = field(default_factory=set)
    last: float = 0.0


@dataclass
class _Observed:
    name: str
    count: int
    first_timestamp: str


@dataclass
class _Bucket:
    tokens: float
    last: float


@dataclass
class Correlated:
    """What to write: `event` (its name set); `patch` for an Event already written, else None (create)."""

    event: dict[str, Any]
    patch: dict[str, Any] | None


class EventCorrelator:
    def __init__(self, clock: Callable[[], float] = time.time, max_events: int = AGGREGATE_MAX_EVENTS,
                 max_interval: float = AGGREGATE_INTERVAL, burst: int = SPAM_BURST, qps: float = SPAM_QPS,
                 cache_size: int = MAX_LRU_ENTRIES) -> None:
        self.clock = clock
        self.max_events = max_events
        self.max_interval = max_interval
        self.burst = burst
        self.qps = qps
        self._aggregates: _LRU[tuple[str, ...], _Aggregate] = _LRU(cache_size)
        self._observed: _LRU[tuple[str, ...], _Observed] = _LRU(cache_size)
        self._buckets: _LRU[tuple[str, ...], _Bucket] = _LRU(cache_size)

    def correlate(self, ev: dict[str, Any]) -> Correlated | None:
        """The write for `ev` (a new Event with its name set), or None when the spam filter drops it."""
        now = self.clock()
        ev, key = self._aggregate(ev, now)
        result = self._observe(ev, key)
        if not self._allow(ev, now):
            return None
        return result

    def _aggregate(self, ev: dict[str, Any], now: float) -> tuple[dict[str, Any], tuple[str, ...]]:
        akey = aggregate_key(ev)
        rec = self._aggregates.get(akey)
        if rec is None or now - rec.last > self.max_interval:
            rec = _Aggregate()
        rec.messages.add(ev.get("message", ""))
        rec.last = now
        self._aggregates.put(akey, rec)
        if len(rec.messages) < self.max_events:
            return ev, event_key(ev)
        rec.messages.pop()  # keeps the set bounded, as upstream's PopAny
        obj_name = (ev.get("involvedObject") or {}).get("name", "")
        combined = {**ev, "metadata": {**ev["metadata"], "name": f"{obj_name}.{time.time_ns():x}"[:253]},
                    "message": COMBINED_PREFIX + ev.get("message", ""), "count": 1}
        return combined, akey

    def _observe(self, ev: dict[str, Any], key: tuple[str, ...]) -> Correlated:
        last = self._observed.get(key)
        if last is None:
            self._observed.put(key, _Observed(ev["metadata"]["name"], int(ev.get("count") or 1),
                                              ev.get("firstTimestamp", "")))
            return Correlated(ev, None)
        last.count += 1
        ev = {**ev, "metadata": {**ev["metadata"], "name": last.name}, "count": last.count,
              "firstTimestamp": last.first_timestamp}
        return Correlated(ev, {"count": last.count, "lastTimestamp": ev.get("lastTimestamp"),
                               "message": ev.get("message", "")})

    def _allow(self, ev: dict[str, Any], now: float) -> bool:
        key = _object_key(ev)
        b = self._buckets.get(key)
        if b is None:
            b = _Bucket(float(self.burst), now)
            self._buckets.put(key, b)
        b.tokens = min(float(self.burst), b.tokens + (now - b.last) * self.qps)
        b.last = now
        if b.tokens < 1.0:
            return False
        b.tokens -= 1.0
        return True
