"""Per-key exponential back-off as client-go's flowcontrol.Backoff (container restarts, image pulls)."""

from __future__ import annotations

import time
from collections.abc import Callable


def go_duration(seconds: float) -> str:
    """A duration as Go prints it: 10s, 1m20s, 5m0s, 1.5s."""
    if seconds < 60:
        return f"{seconds:g}s"
    m, s = divmod(int(seconds), 60)
    if m < 60:
        return f"{m}m{s}s"
    h, m = divmod(m, 60)
    return f"{h}h{m}m{s}s"


class Backoff:
    def __init__(self, initial: float = 10.0, maximum: float = 300.0, clock: Callable[[], float] = time.time) -> None:
        self.initial = initial
        self.max = maximum
        self.clock = clock
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (backoff, last update)

    def _expired(self, event_time: float, last_update: float) -> bool:
        # stable for twice the maximum (a container running 10 minutes starts over at the initial delay)
        return event_time - last_update > 2 * self.max

    def get(self, key: str) -> float:
        e = self._entries.get(key)
        return e[0] if e else 0.0

    def until(self, key: str) -> float:
        """When the current back-off of `key` (counted from its last update) ends; 0 without one."""
        e = self._entries.get(key)
        return e[1] + e[0] if e else 0.0

    def is_in_backoff_since(self, key: str, event_time: float) -> bool:
        e = self._entries.get(key)
        if e is None or self._expired(event_time, e[1]):
            return False
        return self.clock() - event_time < e[0]

    def is_in_backoff_since_update(self, key: str, now: float | None = None) -> bool:
        e = self._entries.get(key)
        now = self.clock() if now is None else now
        if e is None or self._expired(now, e[1]):
            return False
        return now - e[1] < e[0]

    def next(self, key: str, event_time: float) -> None:
        e = self._entries.get(key)
        if e is None or self._expired(event_time, e[1]):
            backoff = self.initial
        else:
            backoff = min(e[0] * 2, self.max)
        self._entries[key] = (backoff, self.clock())

    def reset(self, key: str) -> None:
        self._entries.pop(key, None)

    def gc(self) -> None:
        now = self.clock()
        for k in [k for k, (_, last) in self._entries.items() if now - last > 2 * self.max]:
            del self._entries[k]
