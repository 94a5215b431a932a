"""Rate-limited work queues, as client-go's workqueue: a key is never processed by two
workers at once, is coalesced while waiting, and failures come back with per-item
exponential backoff (5 ms doubling to 1000 s) under an overall 10 qps / 100 burst bucket."""

from __future__ import annotations

import asyncio
import heapq
import logging
import time
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["RateLimitingQueue", "run_workers"]

log = logging.getLogger(__name__)


class RateLimitingQueue:
    def __init__(self, name: str = "", base_delay: float = 0.005, max_delay: float = 1000.0,
                 qps: float = 10.0, burst: int = 100, metrics: Any = None) -> None:
        self.name = name
        # metrics/workqueue.py's QueueMetrics: workqueue_* for this queue's name (None: not counted)
        self.metrics = metrics
        if metrics is not None:
            metrics.queue = self
        self.base_delay = base_delay
        self.max_delay = max_delay
        self.qps, self.burst = qps, burst
        self._tokens = float(burst)
        self._last = time.monotonic()
        self._queue: deque[Any] = deque()
        self._dirty: set[Any] = set()
        self._processing: set[Any] = set()
        self._failures: dict[Any, int] = {}
        self._waiting: list[tuple[float, int, Any]] = []
        self._due: dict[Any, float] = {}  # item -> its ready time in _waiting
        self._seq = 0
        # workers waiting in get(), each on its own future: an add wakes one of them directly
        # (an asyncio.Condition needed a task per add to take its lock, which cost more than the add)
        self._getters: deque[asyncio.Future[None]] = deque()
        self._timer: asyncio.Handle | None = None
        self._timer_due = 0.0
        self._shutdown = False

    def __len__(self) -> int:
        return len(self._queue)

    def add(self, item: Any) -> None:
        if self._shutdown or item in self._dirty:
            return
        self._dirty.add(item)
        if self.metrics is not None:
            self.metrics.added(item)
        if item in self._processing:
            return  # re-queued when the current processing is done
        self._queue.append(item)
        self._notify()

    def _notify(self) -> None:
        getters = self._getters
        while getters:
            fut = getters.popleft()
            if not fut.done():
                fut.set_result(None)
                return

    def add_after(self, item: Any, delay: float) -> None:
        """Add `item` once `delay` has passed. As client-go's delaying queue, an item already waiting
        keeps the earlier of its two ready times, so a burst of delayed adds costs one entry."""
        if delay <= 0:
            self.add(item)
            return
        due = time.monotonic() + delay
        waiting = self._due.get(item)
        if waiting is not None and waiting <= due:
            return
        self._due[item] = due
        self._seq += 1
        heapq.heappush(self._waiting, (due, self._seq, item))
        self._arm()

    def _arm(self) -> None:
        if not self._waiting:
            return
        when = self._waiting[0][0]
        # our own deadline: uvloop turns call_later(0) into a plain Handle that has no when()
        if self._timer is not None and self._timer_due <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_due = when
        self._timer = asyncio.get_event_loop().call_later(max(0.0, when - time.monotonic()), self._fire)

    def _fire(self) -> None:
        self._timer = None
        now = time.monotonic()
        while self._waiting and self._waiting[0][0] <= now:
            due, _, item = heapq.heappop(self._waiting)
            if self._due.get(item) != due:
                continue  # superseded by an earlier ready time, already delivered
            del self._due[item]
            self.add(item)
        self._arm()

    def when(self, item: Any) -> float:
        """The rate limiter: the larger of the per-item backoff and the token bucket's wait."""
        n = self._failures.get(item, 0)
        self._failures[item] = n + 1
        per_item = min(self.base_delay * (2 ** n), self.max_delay)
        now = time.monotonic()
        self._tokens = min(self.burst, self._tokens + (now - self._last) * self.qps)
        self._last = now
        self._tokens -= 1
        bucket = 0.0 if self._tokens >= 0 else -self._tokens / self.qps
        return max(per_item, bucket)

    def add_rate_limited(self, item: Any) -> None:
        if self.metrics is not None:
            self.metrics.retried()
        self.add_after(item, self.when(item))

    def forget(self, item: Any) -> None:
        self._failures.pop(item, None)

    def num_requeues(self, item: Any) -> int:
        return self._failures.get(item, 0)

    async def get(self) -> Any:
        while not self._queue:
            if self._shutdown:
                raise asyncio.CancelledError()
            fut: asyncio.Future[None] = asyncio.get_running_loop().create_future()
            self._getters.append(fut)
            try:
                await fut
            except asyncio.CancelledError:
                if fut.done() and not fut.cancelled():
                    self._notify()  # woken, then cancelled: the wake-up goes to another worker
                raise
        item = self._queue.popleft()
        self._dirty.discard(item)
        self._processing.add(item)
        if self.metrics is not None:
            self.metrics.started(item)
        return item

    def done(self, item: Any) -> None:
        self._processing.discard(item)
        if self.metrics is not None:
            self.metrics.finished(item)
        if item in self._dirty:
            self._queue.append(item)
            self._notify()

    def shutdown(self) -> None:
        self._shutdown = True
        if self._timer is not None:
            self._timer.cancel()
        while self._getters:  # every waiting worker ends
            self._notify()


async def run_workers(queue: RateLimitingQueue, sync: Callable[[Any], Awaitable[None]], workers: int = 1,
                      on_error: Callable[[Any, BaseException], None] | None = None) -> None:
    """Run `workers` loops of get -> sync -> forget/requeue (the controller pattern)."""

    async def worker() -> None:
        while True:
            item = await queue.get()
            try:
                await sync(item)
                queue.forget(item)
            except asyncio.CancelledError:
                queue.done(item)
                raise
            except Exception as e:
                if on_error is not None:
                    try:
                        on_error(item, e)
                    except Exception:  # a broken error handler must not end the worker
                        log.exception("error handler failed for %r", item)
                queue.add_rate_limited(item)
            finally:
                queue.done(item)

    await asyncio.gather(*(worker() for _ in range(workers)))
