"""CPU rates from cumulative counters: the last two samples of each cgroup, as cAdvisor's housekeeping keeps.

usageNanoCores is (cpu ns between the two newest samples) / (seconds between them). A
sample younger than `min_interval` is not taken again, so on-demand scrapes arriving
together neither thrash the cache nor divide by a tiny interval.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from .cgroups import CgroupSample


@dataclass
class _Pair:
    prev: CgroupSample | None
    last: CgroupSample


class RateCache:
    def __init__(self, min_interval: float = 1.0) -> None:
        self.min_interval = min_interval
        self._pairs: dict[str, _Pair] = {}

    def fresh(self, key: str, now: float) -> CgroupSample | None:
        """The newest sample of `key` when it is younger than min_interval (no need to read again)."""
        p = self._pairs.get(key)
        if p is not None and now - p.last.time < self.min_interval:
            return p.last
        return None

    def add(self, key: str, sample: CgroupSample) -> None:
        p = self._pairs.get(key)
        if p is None or sample.cpu_ns < p.last.cpu_ns:  # new, or a counter reset (the cgroup was made again)
            self._pairs[key] = _Pair(None, sample)
        elif sample.time - p.last.time >= self.min_interval:
            self._pairs[key] = _Pair(p.last, sample)

    def nano_cores(self, key: str) -> int | None:
        """The rate between the two newest samples; None until there are two."""
        p = self._pairs.get(key)
        if p is None or p.prev is None:
            return None
        dt = p.last.time - p.prev.time
        if dt <= 0:
            return None
        return int((p.last.cpu_ns - p.prev.cpu_ns) / dt)

    def retain(self, keys: Iterable[str]) -> None:
        """Forget cgroups that are gone."""
        keep = set(keys)
        for k in [k for k in self._pairs if k not in keep]:
            del self._pairs[k]
