"""Immutable snapshots of a watch cache, for paged lists (upstream's ListFromCacheSnapshot).

A paged LIST (`limit`) is answered from one snapshot of the resource's cache taken when its
first page is served: the continue token carries the snapshot's resourceVersion, and every
later page is cut from the same snapshot while it is kept, so the pages together are exactly
the objects at that revision without reading the store. Cached objects are never changed in
place (the cache replaces them), so a snapshot is two lists of references in key order: one
sort of the key set when the set has changed since the last snapshot, then O(n) pointer copies.

A snapshot covers a revision range [rev_from, rev_to]: the resource did not change between the
last event it reflects and the cache revision it was last handed out at, so it answers for
any revision in between. Snapshots are kept at most MAX_SNAPSHOTS per resource, and no longer
than the cache keeps the history of their revisions (upstream drops them with its watch cache
history); a continue token whose snapshot is gone is served from the store at its revision.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections import deque
from collections.abc import Callable
from typing import Any

__all__ = ["Snapshot", "Snapshots", "Page", "MAX_SNAPSHOTS"]

MAX_SNAPSHOTS = 32

# (items, key of the last item when more keys follow it, remainingItemCount or None)
Page = tuple[list[dict[str, Any]], str | None, int | None]


def prefix_end(prefix: str) -> str:
    """The first key past every key that starts with prefix (prefixes end with '/')."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


class Snapshot:
    """The objects of one resource in key order at every revision in [rev_from, rev_to]."""

    __slots__ = ("keys", "objs", "rev_from", "rev_to")

    def __init__(self, keys: list[str], objs: list[dict[str, Any]], rev_from: int, rev_to: int) -> None:
        self.keys = keys
        self.objs = objs
        self.rev_from = rev_from
        self.rev_to = rev_to

    def page(
        self,
        prefix: str,
        start_after: str | None,
        limit: int,
        predicate: Callable[[dict[str, Any]], bool] | None,
    ) -> Page:
        """Up to limit (0: all) matching objects under prefix after start_after, in key order."""
        keys = self.keys
        lo = bisect_left(keys, prefix)
        hi = bisect_left(keys, prefix_end(prefix), lo)
        if start_after is not None:
            lo = max(lo, bisect_right(keys, start_after, lo, hi))
        objs = self.objs
        if predicate is None:
            end = hi if not limit else min(hi, lo + limit)
            items = objs[lo:end]
            if end < hi:
                # as upstream's etcd3 store: how many keys remain, only without a selector
                return items, keys[end - 1], hi - end
            return items, None, None
        items = []
        i = lo
        while i < hi:
            o = objs[i]
            i += 1
            if predicate(o):
                items.append(o)
                if limit and len(items) >= limit:
                    break
        if limit and len(items) >= limit and i < hi:
            return items, keys[i - 1], None
        return items, None, None


class Snapshots:
    """The snapshots one resource's cache keeps, newest last."""

    __slots__ = ("ring", "current", "_sorted_keys")

    def __init__(self) -> None:
        self.ring: deque[Snapshot] = deque()
        # the newest snapshot while the resource has not changed since it was taken
        self.current: Snapshot | None = None
        self._sorted_keys: list[str] | None = None  # the key set in order, until it changes

    def changed(self, key_set_changed: bool) -> None:
        """An object of the resource was written: the current state needs a new snapshot."""
        self.current = None
        if key_set_changed:
            self._sorted_keys = None

    def take(self, objects: dict[str, dict[str, Any]], changed_rev: int, rev: int) -> Snapshot:
        """The snapshot of `objects` (the state since changed_rev), valid up to rev."""
        cur = self.current
        if cur is not None:
            cur.rev_to = max(cur.rev_to, rev)
            return cur
        keys = self._sorted_keys
        if keys is None:
            keys = self._sorted_keys = sorted(objects)
        snap = Snapshot(keys, [objects[k] for k in keys], changed_rev, rev)
        self.current = snap
        self.ring.append(snap)
        while len(self.ring) > MAX_SNAPSHOTS:
            self.ring.popleft()
        return snap

    def at(self, rev: int) -> Snapshot | None:
        """The kept snapshot that holds the state at rev, if any."""
        for s in reversed(self.ring):
            if s.rev_from <= rev <= s.rev_to:
                return s
            if s.rev_to < rev:
                break
        return None

    def forget_before(self, oldest: int) -> None:
        """Drop snapshots of revisions the cache's history no longer reaches."""
        ring = self.ring
        while ring and ring[0].rev_to < oldest:
            s = ring.popleft()
            if s is self.current:
                self.current = None

    def clear(self) -> None:
        self.ring.clear()
        self.current = None
        self._sorted_keys = None
