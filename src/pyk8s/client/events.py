"""An event recorder: core/v1 Events with upstream's aggregation of repeats.

A repeat of the same (object, type, reason, message, source) within the correlation
window updates the existing Event's count and lastTimestamp, which kubectl shows as
"(x3 over 2m)".
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
from datetime import UTC, datetime
from typing import Any

from ..api.errors import StatusError
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
    def __init__(self, client: Client, component: str, host: str = "") -> None:
        self.client = client
        self.component = component
        self.host = host
        self.instance = f"{component}-{socket.gethostname()}"
        self._seen: dict[tuple[str, ...], tuple[str, str, int, float]] = {}  # key -> (ns, name, count, last)
        self._pending: set[asyncio.Task[Any]] = set()

    def event(self, obj: dict[str, Any], type: str, reason: str, message: str, field_path: str = "") -> None:
        """Record asynchronously (fire and forget, as upstream's broadcaster)."""
        t = asyncio.ensure_future(self._record(obj, type, reason, message, field_path))
        self._pending.add(t)
        t.add_done_callback(self._pending.discard)

    async def flush(self) -> None:
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)

    async def _record(self, obj: dict[str, Any], type: str, reason: str, message: str, field_path: str) -> None:
        ref = object_reference(obj, field_path)
        ns = ref.get("namespace") or "default"
        key = (ref.get("uid", ""), ref.get("name", ""), field_path, type, reason, message)
        prev = self._seen.get(key)
        now = _now()
        try:
            if prev is not None and time.time() - prev[3] < 600:
                ens, ename, count, _ = prev
                count += 1
                try:
                    await self.client.patch(EVENTS, ename, {"count": count, "lastTimestamp": now}, ens)
                    self._seen[key] = (ens, ename, count, time.time())
                    return
                except StatusError as e:
                    if e.code != 404:
                        raise
            name = f"{ref.get('name', 'unknown')}.{time.time_ns():x}"[:253]
            body = {
                "apiVersion": "v1", "kind": "Event",
                "metadata": {"name": name, "namespace": ns},
                "involvedObject": ref, "reason": reason, "message": message, "type": type,
                "source": {"component": self.component, **({"host": self.host} if self.host else {})},
                "firstTimestamp": now, "lastTimestamp": now, "count": 1,
                "eventTime": None, "reportingComponent": self.component, "reportingInstance": self.instance,
            }
            await self.client.create(EVENTS, body, ns)
            self._seen[key] = (ns, name, 1, time.time())
            if len(self._seen) > 4096:
                for k in list(self._seen)[:1024]:
                    del self._seen[k]
        except Exception as e:  # events are best effort
            log.debug("recording event %s %s: %s", reason, ref.get("name"), e)
