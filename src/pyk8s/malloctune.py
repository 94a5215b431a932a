"""glibc malloc settings for pyk8s's long-running processes (server, scheduler, controllers, ...).

Fewer malloc arenas: glibc makes up to 8 per core for the threads (SQLite's writer, the
in-process kubelet, executors); two keep freed memory where the next allocation finds it.

PYK8S_MALLOC=lowmem also fixes glibc's mmap threshold at 128 KiB. Every TLS connection under
uvloop (and asyncio's sslproto alike) takes a 256 KiB read buffer from PyMem_RawMalloc; glibc's
dynamic threshold serves such blocks from the heap once a larger one was freed, where written
pages stay resident (a server holding ~170 connections kept ~42 MiB in these buffers). Fixed,
each buffer is mapped apart and only the pages a connection read into count, but every buffer
is then an mmap and munmap with fresh zeroed pages: measured with `bench api` on a quiet
machine, server CPU per pod create 375 against 655-684 us, GETs 16,500/s against ~6,000/s, a
list of 10,000 pods 156 against 249 ms. So it is for memory-bound set-ups only, not the default.

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
    if os.environ.get("PYK8S_MALLOC", "") == "lowmem" and "MALLOC_MMAP_THRESHOLD_" not in os.environ:
        ok = mallopt(_M_MMAP_THRESHOLD, MMAP_THRESHOLD) == 1 and ok
    if "MALLOC_ARENA_MAX" not in os.environ:
        ok = mallopt(_M_ARENA_MAX, ARENA_MAX) == 1 and ok
    return ok
