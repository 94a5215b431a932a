"""The watch cache's history kept packed (apiserver/watchcache.py CacheEvent.pack).

Events older than FRESH_SECONDS or deeper than FRESH_MAX_EVENTS hold bytes instead of dicts;
a watch resuming from an old resourceVersion must still get exactly what it got from dicts
(upstream's watch cache: selector transitions as ADDED/MODIFIED/DELETED, the deleted object at
the deletion's resourceVersion), and the history must cost about its JSON, not its dicts.
"""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import orjson

from pyk8s.apiserver import watchcache
from pyk8s.apiserver.watchcache import CacheEvent, ResourceCache
from pyk8s.storage import DELETE, PUT, Event, KeyValue

P = "/registry/pods/"


def _pod(name: str, color: str, i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "ns", "labels": {"color": color, "app": "a<b>&c"},
                         "managedFields": [{"manager": "m", "operation": "Update", "fieldsType": "FieldsV1",
                                            "fieldsV1": {"f:metadata": {"f:labels": {".": {}, "f:color": {}}},
                                                         "f:status": {f"f:c{j}": {} for j in range(20)}}}]},
            "spec": {"containers": [{"name": f"c{j}", "image": "pause", "args": [str(i), "x" * 10]}
                                    for j in range(5)]},
            "status": {"phase": "Running", "conditions": [{"type": f"T{j}", "status": "True"} for j in range(8)]}}


def _copy(b: bytes) -> bytes:
    return memoryview(b).tobytes()


class _Store:
    """Emits events as the embedded store does: each with the key's previous value."""

    def __init__(self, c: ResourceCache) -> None:
        self.c = c
        self.rev = 1
        self.last: dict[str, KeyValue] = {}

    def put(self, obj: dict[str, Any], with_prev: bool = True) -> CacheEvent:
        self.rev += 1
        key = f"{P}ns/{obj['metadata']['name']}"
        prev = self.last.get(key)
        if prev is not None:  # the embedded store reads the previous row: a bytes object of its own
            prev = KeyValue(key, _copy(prev.value), prev.create_revision, prev.mod_revision)
        # a copy, as a store's read gives: orjson's output keeps a buffer several times its length
        value = _copy(orjson.dumps(obj))
        kv = self.last[key] = KeyValue(key, value, prev.create_revision if prev else self.rev, self.rev)
        return self.c.apply(Event(PUT, kv, self.rev, prev if with_prev else None))

    def delete(self, name: str, value: bool = True) -> CacheEvent:
        self.rev += 1
        key = f"{P}ns/{name}"
        prev = self.last.pop(key)
        kv = KeyValue(key, prev.value if value else b"", prev.create_revision, self.rev)
        return self.c.apply(Event(DELETE, kv, self.rev, prev if value else None))


def _pack_all(c: ResourceCache) -> None:
    # what the history holds FRESH_SECONDS later: one more event packs every older one
    for ce in c.history:
        ce.ts -= 2 * watchcache.FRESH_SECONDS


def _watch_all(c: ResourceCache, since: int, pred: Any) -> list[tuple[str, dict[str, Any]]]:
    w, _ = c.watch("ns", pred, since)
    out = [(t, ce.obj) for t, ce in w.pending]
    w.stop()
    return out


def _history(st: _Store) -> list[int]:
    """Writes whose selector transitions a resumed watch must translate; returns revisions to resume from."""
    marks = []
    for i in range(3):
        st.put(_pod(f"p{i}", "red", 0))
    marks.append(st.rev)
    st.put(_pod("p0", "blue", 1))      # red -> blue: DELETED for a red watcher
    st.put(_pod("p1", "red", 1))       # red -> red: MODIFIED
    marks.append(st.rev)
    st.put(_pod("p0", "red", 2))       # blue -> red: ADDED
    st.put(_pod("p3", "blue", 0), with_prev=False)
    st.delete("p1")                    # DELETED with the last state at the deletion's revision
    st.put(_pod("p3", "red", 1), with_prev=False)  # a store event without the previous value
    st.delete("p2", value=False)       # a delete without the last value (a re-read after compaction)
    return marks


def test_a_resumed_watch_gets_the_same_events_from_packed_history() -> None:
    def red(o: dict[str, Any]) -> bool:
        return o["metadata"]["labels"]["color"] == "red"

    fresh_c, packed_c = ResourceCache(P), ResourceCache(P)
    fresh_c.load([], 1)
    packed_c.load([], 1)
    marks = _history(_Store(fresh_c))
    _history(_Store(packed_c))
    _pack_all(packed_c)
    other = _pod("x", "red", 0)
    other["metadata"]["namespace"] = "other"
    packed_c.apply(Event(PUT, KeyValue(f"{P}other/x", orjson.dumps(other), 99, 99), 99))
    assert all(ce._obj is None and ce._prev is None for ce in list(packed_c.history)[:-1])
    for since in (1, *marks):
        for pred in (red, None):
            want = _watch_all(fresh_c, since, pred)
            got = _watch_all(packed_c, since, pred)
            assert [t for t, _ in got] == [t for t, _ in want] and got == want, (since, pred)
    types = [t for t, _ in _watch_all(packed_c, marks[0], red)]
    assert types == ["DELETED", "MODIFIED", "ADDED", "DELETED", "ADDED", "DELETED"]
    deleted = [o for t, o in _watch_all(packed_c, marks[1], None) if t == "DELETED"]
    assert [o["metadata"]["resourceVersion"] for o in deleted] == ["9", "11"]
    # the JSON every watcher gets is the same bytes as before packing, HTML characters escaped as Go does
    fresh_lines = [bytes(ce.json_line()) for ce in fresh_c.history]
    packed_lines = [bytes(ce.json_line()) for ce in list(packed_c.history)[:-1]]
    assert packed_lines == fresh_lines and b"a\\u003cb\\u003e\\u0026c" in packed_lines[0]
    assert all(ce.json_chunk().endswith(bytes(ce.json_line()) + b"\r\n") for ce in packed_c.history)


def test_packed_history_costs_about_its_json() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    st = _Store(c)
    for i in range(50):
        st.put(_pod(f"p{i}", "red", 0))
    gc.collect()
    tracemalloc.start()
    try:
        base = tracemalloc.get_traced_memory()[0]
        n = 2000
        for i in range(n):
            st.put(_pod(f"p{i % 50}", "red", i + 1)).json_chunk()  # as a JSON watcher does
        _pack_all(c)
        st.put(_pod("p0", "red", 0))
        st.last.clear()  # the store does not keep the values
        gc.collect()
        per_event = (tracemalloc.get_traced_memory()[0] - base) / n
    finally:
        tracemalloc.stop()
    size = len(orjson.dumps(_pod("p1", "red", 1)))
    # a packed event: its chunk (the previous object is the previous event's); as dicts it was ~6x the JSON
    assert per_event < 1.8 * size, (per_event, size)


def test_young_events_keep_their_dicts_and_old_ones_are_packed() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    st = _Store(c)
    first = st.put(_pod("p0", "red", 0))
    second = st.put(_pod("p0", "blue", 1))
    assert first._obj is not None and second._prev is c.history[0].obj  # fresh: shared dicts, as before
    for i in range(watchcache.FRESH_MAX_EVENTS):
        st.put(_pod(f"q{i}", "red", 0))
    assert first._obj is None and second._obj is None  # packed by count
    assert c.objects[f"{P}ns/p0"]["metadata"]["labels"]["color"] == "blue"  # the current object is untouched
    last = st.put(_pod("p0", "red", 2))
    _pack_all(c)
    st.put(_pod("p9", "red", 0))
    assert last._obj is None and last.prev == {**second.obj} and last.obj["metadata"]["resourceVersion"] == str(last.rev)


def test_events_leaving_the_history_release_what_came_before_them(monkeypatch: Any) -> None:
    monkeypatch.setattr(watchcache, "HISTORY_MIN_EVENTS", 5)
    monkeypatch.setattr(watchcache, "HISTORY_SECONDS", 0.0)
    c = ResourceCache(P)
    c.load([], 1)
    st = _Store(c)
    events = [st.put(_pod("p0", "red" if i % 2 else "blue", i)) for i in range(40)]
    st.put(_pod("p1", "red", 0))
    _pack_all(c)
    st.put(_pod("p2", "red", 0))
    held = list(c.history)
    assert len(held) == 5 and c.oldest == held[0].rev - 1
    first = held[0]
    # the first event still in the history finds its previous object in the event before it,
    # which keeps nothing of its own past: no chain back to the first write
    assert first._prev_ev is events[-4] and events[-4]._prev_ev is None and events[-4]._prev_value is None
    assert first.obj["metadata"]["labels"]["color"] == "red"  # events[37]
    assert first.prev is not None and first.prev["metadata"]["labels"]["color"] == "blue"
    assert set(c._latest) == {ev.key for ev in held}
    # a red watcher resuming from the oldest revision still sees the transitions
    assert [t for t, _ in _watch_all(c, c.oldest, lambda o: o["metadata"]["labels"]["color"] == "red")] == [
        "ADDED", "DELETED", "ADDED", "ADDED", "ADDED"]


def test_a_packed_deletion_keeps_no_copy_of_the_object_it_deleted() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    st = _Store(c)
    written = st.put(_pod("p0", "red", 0))
    gone = st.delete("p0")
    line = bytes(gone.json_chunk())  # as a JSON watcher does
    st.put(_pod("p1", "red", 0))
    _pack_all(c)
    st.put(_pod("p2", "red", 0))
    # the deleted object is its writer's: the event points there, with nothing of its own
    assert gone._obj is None and gone._chunk is None and gone._value is None and gone._prev_ev is written
    assert gone.obj["metadata"]["resourceVersion"] == str(gone.rev)
    assert {**gone.obj, "metadata": {**gone.obj["metadata"], "resourceVersion": "x"}} == {
        **written.obj, "metadata": {**written.obj["metadata"], "resourceVersion": "x"}}
    assert bytes(gone.json_chunk()) == line  # what a watch resuming before it gets: the same bytes
    # the writer leaving the history first does not take the deleted object with it
    written._prev_ev = written._prev_value = None
    assert gone.prev is not None and gone.prev["metadata"]["name"] == "p0"
