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
from collections.abc import Awaitable, Callable
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import now_rfc3339
from ..klog import V2
from .events_cache import Correlated, EventCorrelator
from .rest import Client

log = logging.getLogger("pyk8s.events")

EVENTS = ("", "v1", "events")




def object_reference(obj: dict[str, Any], field_path: str = "") -> dict[str, Any]:
    md = obj.get("metadata") or {}
    ref = {"kind": obj.get("kind", ""), "namespace": md.get("namespace", ""), "name": md.get("name", ""),
           "uid": md.get("uid", ""), "apiVersion": obj.get("apiVersion", ""),
           "resourceVersion": md.get("resourceVersion", "")}
    if field_path:
        ref["fieldPath"] = field_path
    return {k: v for k, v in ref.items() if v}


class WritesInOrder:
    """Fire-and-forget writes: those of one Event in call order (a patch must not overtake its
    create), those of different Events at once."""

    def __init__(self) -> None:
        self._pending: set[asyncio.Task[Any]] = set()
        self._last: dict[str, asyncio.Task[Any]] = {}  # Event name -> its latest write

    def submit(self, name: str, write: Callable[[], Awaitable[None]]) -> None:
        t = asyncio.ensure_future(self._after(self._last.get(name), write))
        self._last[name] = t
        self._pending.add(t)
        t.add_done_callback(lambda done: self._done(name, done))

    @staticmethod
    async def _after(before: asyncio.Task[Any] | None, write: Callable[[], Awaitable[None]]) -> None:
        if before is not None:
            await asyncio.gather(before, return_exceptions=True)
        await write()

    def _done(self, name: str, t: asyncio.Task[Any]) -> None:
        self._pending.discard(t)
        if self._last.get(name) is t:
            del self._last[name]

    async def flush(self) -> None:
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)


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
        self._writes = WritesInOrder()

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str, field_path: str = "") -> None:
        """Record asynchronously (fire and forget, as upstream's broadcaster).

        Correlation (aggregation, repeat counting, the spam filter) happens here, in call order;
        the writes of one Event follow each other, those of different Events run concurrently.
        """
        ref = object_reference(obj, field_path)
        ns = ref.get("namespace") or "default"
        now = now_rfc3339()
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
        self._writes.submit(c.event["metadata"]["name"], lambda: self._write(c))

    async def flush(self) -> None:
        await self._writes.flush()

    async def _write(self, c: Correlated) -> None:
        if self._slots is None:
            await self._send(c)
            return
        async with self._slots:
            await self._send(c)

    async def _send(self, c: Correlated) -> None:
        await patch_or_create(self.client, EVENTS, c.event, c.patch)


async def patch_or_create(client: Client, gvr: tuple[str, str, str], ev: dict[str, Any], patch: Any,
                          patch_type: str = "merge") -> None:
    """Patch the Event (patch not None), or create it: also when the patch finds it gone (its TTL, or
    its create never landed), as upstream's sinks do. Best effort: a failure is logged, not raised."""
    ns = ev["metadata"]["namespace"]
    try:
        if patch is not None:
            try:
                await client.patch(gvr, ev["metadata"]["name"], patch, ns, patch_type=patch_type)
                return
            except StatusError as e:
                if e.code != 404:
                    raise
        await client.create(gvr, ev, ns)
    except Exception as e:
        regarding = ev.get("involvedObject") or ev.get("regarding") or {}
        log.debug("recording event %s %s: %s", ev.get("reason"), regarding.get("name"), e)
