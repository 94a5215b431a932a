"""Children of an earlier `pyk8s server` that outlived it, found in /proc and stopped.

A child dies with its server (supervisor.die_with_parent), but one started by an older pyk8s,
or by hand with the same identity, may still run when the server comes back on the same data
dir: a second scheduler or controller manager beside the new one would race it (leader election
only makes that harmless once the old one's Lease expires). Before starting a child, the server
stops every process doing the same job (its command line holds the child's identity, e.g.
`scheduler --kubeconfig <data-dir>/scheduler.conf`) whose parent is not a live `pyk8s server`,
and waits until it is gone. Children of a live server, this one's included, are left alone.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import Sequence

log = logging.getLogger(__name__)

_ENTRY_POINTS = (b"pyk8s", b"pyk8s.cli")


def _argv(pid: int) -> list[bytes]:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _stat(pid: int) -> tuple[str, int] | None:
    """(state, parent pid) of a process, None once it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        return fields[0].decode(), int(fields[1])
    except (OSError, IndexError, ValueError):
        return None


def is_server(argv: Sequence[bytes]) -> bool:
    """`pyk8s server ...` or `python -m pyk8s.cli server ...`, not one of its API workers."""
    if b"--api-worker" in argv:
        return False
    return any(os.path.basename(a) in _ENTRY_POINTS and b == b"server" for a, b in zip(argv, argv[1:], strict=False))


def holds(argv: Sequence[bytes], identity: Sequence[bytes]) -> bool:
    """Whether `identity` appears in `argv` as consecutive arguments."""
    n = len(identity)
    return n > 0 and any(list(argv[i:i + n]) == list(identity) for i in range(len(argv) - n + 1))


def find_orphans(identity: Sequence[str]) -> list[int]:
    """Live processes running `identity` whose parent is not a live `pyk8s server`."""
    want = [a.encode() for a in identity]
    me = os.getpid()
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == me:
            continue
        pid = int(d)
        if not holds(_argv(pid), want):
            continue
        st = _stat(pid)
        if st is None or st[0] in ("Z", "X"):
            continue
        parent = _stat(st[1])
        if parent is not None and parent[0] not in ("Z", "X") and is_server(_argv(st[1])):
            continue  # a live server's own child (ours, or another server's on purpose)
        out.append(pid)
    return sorted(out)


async def stop_orphans(identity: Sequence[str], name: str, timeout: float = 10.0) -> None:
    """SIGKILL the orphans doing `identity`'s job and wait until they are gone (bounded)."""
    pids = find_orphans(identity)
    if not pids:
        return
    log.warning("%s: stopping pid %s, left running by an earlier server", name, ", ".join(map(str, pids)))
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while pids and loop.time() < deadline:
        for pid in pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)
        await asyncio.sleep(0.02)
        pids = [p for p in pids if (st := _stat(p)) is not None and st[0] not in ("Z", "X")]
    if pids:
        log.warning("%s: pid %s still running after %.0fs", name, ", ".join(map(str, pids)), timeout)
