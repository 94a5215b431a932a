"""glibc malloc settings for pyk8s's long-running processes (server, scheduler, controllers, ...).

Every TLS connection under uvloop (and asyncio's sslproto alike) keeps a 256 KiB read buffer
from PyMem_RawMalloc. glibc serves a block that large with mmap at first, but each time such a
block is freed it raises its mmap threshold above it, and later ones come from the heap, where
pages once written stay resident: a server holding ~170 connections (a scheduler's bind pool,
informers' watches, clients) kept ~42 MiB in these buffers though each connection reads a few
KiB at a time. A fixed threshold keeps such blocks mapped apart, so only the pages a
connection has read into count, and a freed one goes back to the system at once. Fewer malloc
arenas (glibc makes up to 8 per core for the threads: SQLite's writer, the in-process kubelet,
executors) keep freed memory where the next allocation finds it. Measured with the side-by-side
phases: see docs/memory.md.

PYK8S_MALLOC=default keeps glibc's settings; MALLOC_MMAP_THRESHOLD_ / MALLOC_ARENA_MAX set by
the user win. Other C libraries (musl) are left alone.
"""

from __future__ import annotations

import ctypes
import os

__all__ = ["tune", "MMAP_THRESHOLD", "ARENA_MAX"]

# glibc's mallopt parameters (malloc.h)
_M_MMAP_THRESHOLD = -3
_M_ARENA_MAX = -8

MMAP_THRESHOLD = 128 * 1024  # glibc's initial value, kept fixed
ARENA_MAX = 2


def tune() -> bool:
    """At process start; True when glibc took the settings."""
    if os.environ.get("PYK8S_MALLOC", "") == "default":
        return False
    try:
        mallopt = ctypes.CDLL(None).mallopt
    except (OSError, AttributeError):  # no mallopt: not glibc
        return False
    mallopt.argtypes = [ctypes.c_int, ctypes.c_int]
    mallopt.restype = ctypes.c_int
    ok = True
    if "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and ok
    if "MALLOC_ARENA_MAX" not in os.environ:
        ok = mallopt(_M_ARENA_MAX, ARENA_MAX) == 1 and ok
    return ok
