"""Filesystem numbers for the Summary API: statvfs of a filesystem, and cached `du` of directories.

Walking a container's writable layer or a volume is too slow for a scrape's path, so sizes
are measured by housekeeping (at most every `ttl` seconds per directory) and served from
the cache, as cAdvisor's fsHandler does.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass


@dataclass(frozen=True)
class FsInfo:
    capacity: int
    available: int
    inodes: int
    inodes_free: int


def statvfs(path: str) -> FsInfo | None:
    try:
        st = os.statvfs(path)
    except OSError:
        return None
    return FsInfo(st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize, st.f_files, st.f_ffree)


def disk_usage(path: str) -> tuple[int, int]:
    """(bytes on disk, inodes) under `path`, not crossing into other filesystems; hard links once."""
    total, inodes = 0, 0
    seen: set[tuple[int, int]] = set()
    try:
        dev = os.lstat(path).st_dev
    except OSError:
        return 0, 0
    stack = [path]
    while stack:
        d = stack.pop()
        try:
            it = os.scandir(d)
        except OSError:
            continue
        with it:
            for e in it:
                try:
                    st = e.stat(follow_symlinks=False)
                except OSError:
                    continue
                if st.st_dev != dev or (st.st_ino, st.st_dev) in seen:
                    continue
                seen.add((st.st_ino, st.st_dev))
                inodes += 1
                total += st.st_blocks * 512
                if e.is_dir(follow_symlinks=False):
                    stack.append(e.path)
    return total, inodes


class DuCache:
    def __init__(self, ttl: float = 60.0) -> None:
        self.ttl = ttl
        self._sizes: dict[str, tuple[float, int, int]] = {}
        self._wanted: set[str] = set()

    def get(self, path: str) -> tuple[int, int] | None:
        """The last measured (bytes, inodes), or None before the first measurement; asks for one."""
        self._wanted.add(path)
        v = self._sizes.get(path)
        return (v[1], v[2]) if v else None

    def refresh(self) -> None:
        """Measure what was asked for and is stale; forget what nobody asked for since the last refresh.
        Blocking: run it on a worker thread."""
        now = time.monotonic()
        wanted, self._wanted = self._wanted, set()
        for p in list(self._sizes):
            if p not in wanted:
                del self._sizes[p]
        for p in wanted:
            v = self._sizes.get(p)
            if v is None or now - v[0] >= self.ttl:
                size, inodes = disk_usage(p)
                self._sizes[p] = (now, size, inodes)
