"""Watch cache snapshots for paged lists (apiserver/listsnapshot.py) through ResourceCache."""

from __future__ import annotations

import orjson

from pyk8s.apiserver.listsnapshot import MAX_SNAPSHOTS
from pyk8s.apiserver.watchcache import ResourceCache
from pyk8s.storage import DELETE, PUT, Event, KeyValue

P = "/registry/configmaps/"


def _put(c: ResourceCache, ns: str, name: str, rev: int, v: str = "x") -> None:
    body = orjson.dumps({"metadata": {"name": name, "namespace": ns}, "data": {"v": v}})
    c.apply(Event(PUT, KeyValue(f"{P}{ns}/{name}", body, rev, rev), rev))


def _del(c: ResourceCache, ns: str, name: str, rev: int) -> None:
    c.apply(Event(DELETE, KeyValue(f"{P}{ns}/{name}", b"{}", 1, rev), rev))


def _names(items: list[dict]) -> list[str]:
    return [o["metadata"]["name"] for o in items]


def test_pages_keep_the_state_of_their_revision() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    for i in range(10):
        _put(c, "a", f"cm-{i}", 2 + i)
    _put(c, "b", "cm-0", 12)  # another namespace, after a's keys
    snap = c.snapshot()
    items, nxt, remaining = snap.page(P + "a/", None, 4, None)
    assert _names(items) == ["cm-0", "cm-1", "cm-2", "cm-3"] and nxt == P + "a/cm-3" and remaining == 6
    _del(c, "a", "cm-5", 13)
    _put(c, "a", "cm-6", 14, "new")
    _put(c, "a", "cm-55", 15)
    again = c.snapshot_at(12)
    assert again is snap
    items, nxt, remaining = again.page(P + "a/", nxt, 4, None)
    assert _names(items) == ["cm-4", "cm-5", "cm-6", "cm-7"] and remaining == 2
    assert items[2]["data"] == {"v": "x"}
    items, nxt, remaining = again.page(P + "a/", nxt, 4, None)
    assert _names(items) == ["cm-8", "cm-9"] and nxt is None and remaining is None  # never b's
    # the current state is a new snapshot, valid from its last change on
    now = c.snapshot()
    assert now is not snap and (now.rev_from, now.rev_to) == (15, 15)
    assert c.snapshot_at(14) is None and c.snapshot_at(11) is None and c.snapshot_at(12) is snap


def test_selector_pages_and_the_resource_wide_prefix() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    for i in range(6):
        _put(c, "a" if i < 3 else "b", f"cm-{i}", 2 + i)
    snap = c.snapshot()
    odd = snap.page(P, None, 2, lambda o: int(o["metadata"]["name"][3:]) % 2 == 1)
    assert _names(odd[0]) == ["cm-1", "cm-3"] and odd[1] == P + "b/cm-3" and odd[2] is None
    rest = snap.page(P, odd[1], 2, lambda o: int(o["metadata"]["name"][3:]) % 2 == 1)
    assert _names(rest[0]) == ["cm-5"] and rest[1] is None


def test_an_unchanged_resource_shares_its_snapshot_and_at_most_max_are_kept() -> None:
    c = ResourceCache(P)
    c.load([], 1)
    _put(c, "a", "cm", 2)
    first = c.snapshot()
    c.rev = 9  # other resources were written: this one is still the same
    assert c.snapshot() is first and c.snapshot_at(7) is first and first.rev_to == 9
    for i in range(MAX_SNAPSHOTS):
        _put(c, "a", "cm", 10 + i, str(i))
        c.snapshot()
    assert c.snapshot_at(5) is None  # evicted: the store answers
    assert c.snapshot_at(10) is not None
