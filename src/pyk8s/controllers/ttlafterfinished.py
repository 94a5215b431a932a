"""TTL-after-finished controller: deletes Jobs `ttlSecondsAfterFinished` after they finish.

As upstream's pkg/controller/ttlafterfinished: the clock starts at the lastTransitionTime of
the Complete or Failed condition; a Job not yet due is requeued for exactly when it expires;
before deleting, the Job is read fresh from the API (the TTL may have been changed) and
deleted in the foreground with a UID precondition, so its pods go first.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import parse_time_or_none
from .base import GVRS, Controller, split_key

__all__ = ["TTLAfterFinishedController", "finish_time", "time_left"]


def finish_time(job: dict[str, Any]) -> float | None:
    for c in (job.get("status") or {}).get("conditions") or ():
        if c.get("type") in ("Complete", "Failed") and c.get("status") == "True":
            return parse_time_or_none(c.get("lastTransitionTime"))
    return None


def needs_cleanup(job: dict[str, Any]) -> bool:
    return (job.get("spec") or {}).get("ttlSecondsAfterFinished") is not None and finish_time(job) is not None \
        and not (job.get("metadata") or {}).get("deletionTimestamp")


def time_left(job: dict[str, Any], now: float) -> float | None:
    """Seconds until the Job expires (<= 0: due), or None when it never does."""
    if not needs_cleanup(job):
        return None
    finished = finish_time(job)
    assert finished is not None
    return finished + int(job["spec"]["ttlSecondsAfterFinished"]) - now


class TTLAfterFinishedController(Controller):
    name = "ttl-after-finished"
    component = "ttl-after-finished-controller"
    workers = 2

    def __init__(self, ctx: Any, clock: Callable[[], float] = time.time) -> None:
        super().__init__(ctx)
        self.clock = clock

    def setup(self) -> None:
        self.jobs = self.ctx.informer("jobs")
        self.jobs.add_handlers(on_add=self._maybe, on_update=lambda o, n: self._maybe(n))

    def _maybe(self, job: dict[str, Any]) -> None:
        if needs_cleanup(job):
            self.enqueue(job)

    async def sync(self, key: str) -> None:
        job = self.jobs.get(key)
        if job is None:
            return
        left = time_left(job, self.clock())
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        ns, name = split_key(key)
        # the cache may be stale: the TTL may have been raised or removed meanwhile
        fresh = await self.client.get_or_none(GVRS["jobs"], name, ns)
        if fresh is None:
            return
        left = time_left(fresh, self.clock())
        if left is None:
            return
        if left > 0:
            self.enqueue_after(key, left)
            return
        try:
            await self.client.delete(GVRS["jobs"], name, ns, propagation="Foreground",
                                     preconditions={"uid": fresh["metadata"]["uid"]})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
