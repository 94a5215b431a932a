"""An event recorder: core/v1 Events with upstream's aggregation of repeats.

Events go through client-go's correlation (events_cache.py): a repeat of the same (object,
type, reason, message, source) updates the existing Event's count and lastTimestamp, which
kubectl shows as "(x3 over 2m)"; many similar events about one object are combined, and a
source+object pair is rate-limited (25 burst, then one per 5 minutes).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from datetime import UTC, datetime
from typing import Any

from ..api.errors import StatusError
from ..klog import V2
from .events_cache import Correlated, EventCorrelator
from .rest import Client

log = logging.getLogger("pyk8s.events")

EVENTS = ("", "v1", "events")


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _micro_now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def object_reference(obj: dict[str, Any], field_path: str = "") -> dict[str, Any]:
    md = obj.get("metadata") or {}
    ref = {"kind": obj.get("kind", ""), "namespace": md.get("namespace", ""), "name": md.get("name", ""),
           "uid": md.get("uid", ""), "apiVersion": obj.get("apiVersion", ""),
           "resourceVersion": md.get("resourceVersion", "")}
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


class EventRecorder:
    def __init__(self, client: Client, component: str, host: str = "", max_in_flight: int = 0) -> None:
        """`max_in_flight` > 0: at most that many Event writes at once, the rest queued in call order (upstream's
        broadcaster writes to its sink one at a time): a burst of events then does not queue ahead of the component's
        other API calls in its connection pool, nor flood the API server while those wait."""
        self.client = client
        self._slots: asyncio.Semaphore | None = asyncio.Semaphore(max_in_flight) if max_in_flight > 0 else None
        self.component = component
        self.host = host
        self.instance = f"{component}-{socket.gethostname()}"
        self.correlator = EventCorrelator()
        self._pending: set[asyncio.Task[Any]] = set()
        self._last_write: dict[str, asyncio.Task[Any]] = {}  # Event name -> its latest write

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str, field_path: str = "") -> None:
        """Record asynchronously (fire and forget, as upstream's broadcaster).

        Correlation (aggregation, repeat counting, the spam filter) happens here, in call order;
        the writes of one Event follow each other, those of different Events run concurrently.
        """
        ref = object_reference(obj, field_path)
        ns = ref.get("namespace") or "default"
        now = _now()
        body = {
            "apiVersion": "v1", "kind": "Event",
            "metadata": {"name": f"{ref.get('name', 'unknown')}.{time.time_ns():x}"[:253], "namespace": ns},
            "involvedObject": ref, "reason": reason, "message": message, "type": type,
            "source": {"component": self.component, **({"host": self.host} if self.host else {})},
            "firstTimestamp": now, "lastTimestamp": now, "count": 1,
            "eventTime": None, "reportingComponent": self.component, "reportingInstance": self.instance,
        }
        c = self.correlator.correlate(body)
        if c is None:
            return  # the spam filter dropped it, as upstream's does
        if log.isEnabledFor(V2):  # a component's per-object actions, as upstream's broadcaster logs its events
            log.log(V2, '"Event occurred" source="%s" object="%s/%s" kind="%s" type="%s" reason="%s" message="%s"',
                    self.component, ns, ref.get("name", ""), ref.get("kind", ""), type, reason, message)
        name = c.event["metadata"]["name"]
        t = asyncio.ensure_future(self._write(c, self._last_write.get(name)))
        self._last_write[name] = t
        self._pending.add(t)
        t.add_done_callback(lambda done: self._written(name, done))

    def _written(self, name: str, t: asyncio.Task[Any]) -> None:
        self._pending.discard(t)
        if self._last_write.get(name) is t:
            del self._last_write[name]

    async def flush(self) -> None:
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def _write(self, c: Correlated, before: asyncio.Task[Any] | None) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)  # a patch must not overtake its create
        if self._slots is None:
            await self._send(c)
            return
        async with self._slots:
            await self._send(c)

    async def _send(self, c: Correlated) -> None:
        ev = c.event
        ns = ev["metadata"]["namespace"]
        try:
            if c.patch is not None:
                try:
                    await self.client.patch(EVENTS, ev["metadata"]["name"], c.patch, ns)
                    return
                except StatusError as e:
                    if e.code != 404:
                        raise
                    # removed meanwhile (TTL, or the create never landed): create it again, as upstream
            await self.client.create(EVENTS, ev, ns)
        except Exception as e:  # events are best effort
            log.debug("recording event %s %s: %s", ev.get("reason"), ev["involvedObject"].get("name"), e)
