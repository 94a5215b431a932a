"""An events.k8s.io/v1 recorder with event series, as client-go's tools/events (kube-scheduler's).

An event alike an earlier one (same type, action, reason, reporting controller and instance,
regarding and related object: not the note) is not written again as a new Event:

- the first is created;
- the second turns it into a series: one patch, `series: {count: 2, lastObservedTime}`;
- later ones only count in memory, and the series is written again every 30 minutes;
- a series not observed for 6 minutes is written a last time and forgotten, and so is a
  single event 6 minutes old.

So a pod that fails scheduling again and again (a cluster without nodes retries it with
backoff) costs at most two Event writes per pod object version, where the core/v1 recorder
(events.py) patches every repeat. The regarding reference carries the object's
resourceVersion, as client-go's does: a pod whose status changed starts a new Event.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import socket
import time
from typing import Any

import orjson

from ..api.timefmt import now_micro
from ..klog import V2
from .events import WritesInOrder, object_reference, patch_or_create
from .rest import Client

log = logging.getLogger("pyk8s.events")

EVENTS_V1 = ("events.k8s.io", "v1", "events")
FINISH_SECONDS = 6 * 60  # client-go tools/events finishTime
REFRESH_SECONDS = 30 * 60  # refreshTime



_REF_FIELDS = ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath")


def _ref_key(ref: dict[str, Any] | None) -> str:
    return "\x1f".join(str(ref.get(f, "")) for f in _REF_FIELDS) if ref else ""


class _Seen:
    """A cached Event, compact: thousands are held for 6 minutes (one per pod scheduled). Its body as
    JSON (decoded again only to write a series), its series while it has one."""

    __slots__ = ("body", "series", "seen")

    def __init__(self, ev: dict[str, Any], seen: float) -> None:
        self.body = memoryview(orjson.dumps(ev)).tobytes()  # orjson's own buffer is several times larger
        self.series: dict[str, Any] | None = None
        self.seen = seen

    def event(self) -> dict[str, Any]:
        ev: dict[str, Any] = orjson.loads(self.body)
        if self.series is not None:
            ev["series"] = dict(self.series)
        return ev


class EventsV1Recorder:
    def __init__(self, client: Client, controller: str, clock: Any = time.monotonic) -> None:
        self.client = client
        self.controller = controller
        self.instance = f"{controller}-{socket.gethostname()}"
        self.clock = clock
        # upstream's key (type, action, reason, reporting controller and instance, regarding, related):
        # the last two are this recorder's own
        self._cache: dict[str, _Seen] = {}
        self._writes = WritesInOrder()
        self._upkeep: asyncio.Task[None] | None = None

    def event(self, regarding: dict[str, Any], related: dict[str, Any] | None, type: str, reason: str,
              action: str, note: str) -> None:
        """Record asynchronously (fire and forget, as upstream's broadcaster); repeats become a series."""
        ref = object_reference(regarding)
        rel = object_reference(related) if related else None
        key = "\x1e".join((type, action, reason, _ref_key(ref), _ref_key(rel)))
        now = now_micro()
        if log.isEnabledFor(V2):
            log.log(V2, '"Event occurred" object="%s/%s" kind="%s" type="%s" reason="%s" action="%s" note="%s"',
                    ref.get("namespace", ""), ref.get("name", ""), ref.get("kind", ""), type, reason, action, note)
        hit = self._cache.get(key)
        if hit is not None:
            hit.seen = self.clock()
            if hit.series is not None:
                hit.series["count"] += 1
                hit.series["lastObservedTime"] = now
                return
            hit.series = {"count": 2, "lastObservedTime": now}
            self._submit(hit.event())
            return
        ev = {"apiVersion": "events.k8s.io/v1", "kind": "Event",
              "metadata": {"name": f"{ref.get('name', 'unknown')}.{time.time_ns():x}"[:253],
                           "namespace": ref.get("namespace") or "default"},
              "eventTime": now, "reportingController": self.controller, "reportingInstance": self.instance,
              "action": action, "reason": reason, "regarding": ref, "note": note, "type": type}
        if rel:
            ev["related"] = rel
        self._cache[key] = _Seen(ev, self.clock())
        self._submit(ev)
        if self._upkeep is None:
            self._upkeep = asyncio.ensure_future(self._keep_up())

    def _submit(self, ev: dict[str, Any]) -> None:
        """ev: what this write sends, a copy of its own (later repeats count in the cache only)."""
        self._writes.submit(ev["metadata"]["name"], lambda: self._write(ev))

    async def _write(self, ev: dict[str, Any]) -> None:
        series = ev.get("series")
        await patch_or_create(self.client, EVENTS_V1, ev, {"series": series} if series is not None else None,
                              patch_type="strategic")

    def upkeep(self) -> None:
        """Write running series again (every REFRESH_SECONDS) and end the quiet ones (upstream's
        refreshExistingEventSeries and finishSeries)."""
        now = self.clock()
        for key, hit in list(self._cache.items()):
            if now - hit.seen >= FINISH_SECONDS:
                if hit.series is not None:
                    self._submit(hit.event())  # its final count
                del self._cache[key]

    def refresh(self) -> None:
        for hit in self._cache.values():
            if hit.series is not None:
                self._submit(hit.event())

    async def _keep_up(self) -> None:
        last_refresh = self.clock()
        while True:
            await asyncio.sleep(FINISH_SECONDS)
            self.upkeep()
            if self.clock() - last_refresh >= REFRESH_SECONDS:
                last_refresh = self.clock()
                self.refresh()

    async def flush(self) -> None:
        """Wait for the writes under way; the upkeep stops (a component calls this as it stops)."""
        if self._upkeep is not None:
            self._upkeep.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._upkeep
            self._upkeep = None
        await self._writes.flush()
