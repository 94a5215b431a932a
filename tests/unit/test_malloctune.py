"""glibc malloc settings of the long-running processes (pyk8s/malloctune.py).

PYK8S_MALLOC=lowmem's case: a 256 KiB block (a TLS connection's read buffer) allocated after a
larger block was freed. glibc's default raises its mmap threshold on that free and serves the
next block from the heap, where written pages stay resident; with lowmem the block is mapped on
its own. The default leaves the threshold to glibc (mapping every buffer costs far more CPU).
"""

from __future__ import annotations

import os
import subprocess
import sys

from tests.conftest import require

_PROBE = """
import ctypes, sys
from pyk8s import malloctune
tuned = malloctune.tune()

class MallInfo2(ctypes.Structure):
    _fields_ = [(n, ctypes.c_size_t) for n in
                ("arena", "ordblks", "smblks", "hblks", "hblkhd", "usmblks", "fsmblks", "uordblks", "fordblks",
                 "keepcost")]

libc = ctypes.CDLL(None)
libc.mallinfo2.restype = MallInfo2
libc.malloc.restype = ctypes.c_void_p
libc.free.argtypes = [ctypes.c_void_p]
big = libc.malloc(1024 * 1024)
libc.free(big)                    # glibc's default now raises its threshold past 1 MiB
before = libc.mallinfo2().hblks
buf = libc.malloc(256 * 1024)     # a connection's read buffer
mapped = libc.mallinfo2().hblks - before
libc.free(buf)
print(tuned, mapped)
"""


def _probe(env: dict[str, str]) -> list[str]:
    out = subprocess.run([sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, timeout=60,
                         env={k: v for k, v in {**os.environ, **env}.items() if not k.startswith("MALLOC_")})
    return out.stdout.split()


def test_large_buffers_stay_mapped_apart_after_a_larger_one_was_freed_in_lowmem_mode() -> None:
    require("glibc's malloc (its dynamic mmap threshold)", _probe({"PYK8S_MALLOC": "default"}) == ["False", "0"])
    assert _probe({"PYK8S_MALLOC": "lowmem"}) == ["True", "1"]
    assert _probe({}) == ["True", "0"]  # by default only the arenas are set: the threshold stays glibc's
