"""Child processes `pyk8s server` starts and keeps alive: API workers and the scheduler.

Each child dies with the server, even after kill -9: the kernel sends it SIGKILL when the server
goes (PR_SET_PDEATHSIG, set between fork and exec, then a check that the server did not die
before it was set). It is restarted with a doubling backoff if it exits on its own, and says it
is ready with one line on its stdout. It runs in a session of its own, so only the server tells
it when to stop. Before a child starts, an orphan of an earlier server doing the same job (see
orphans.py) is stopped, so a restarted server never runs two schedulers side by side.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
import threading
from collections.abc import Callable, Sequence

from .orphans import stop_orphans

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1
try:  # loaded here, not in the child: between fork and exec the child only makes the call
    _prctl: Callable[..., int] | None = ctypes.CDLL(None, use_errno=True).prctl
except (OSError, AttributeError):  # pragma: no cover (not Linux)
    _prctl = None


def die_with_parent(parent_pid: int) -> Callable[[], None]:
    """What the child runs before exec so that it dies with `parent_pid`, even after kill -9.

    SIGKILL, not SIGTERM: once the server is gone a child's clean shutdown has nothing left to
    do (its API went with the server) and could only hang on it, while the child's successor,
    started by the next server, must not find it still running. The signal is sent when the
    *thread* that forked exits: children are started from the server's main thread (its event
    loop), which lives as long as the process."""
    def preexec() -> None:
        if _prctl is not None:
            _prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        if os.getppid() != parent_pid:  # the server died between fork and prctl: no signal will come
            os._exit(1)
    return preexec


class ChildProcess:
    """One supervised child: `argv` run until stop(), ready once it prints `ready_line`."""

    def __init__(self, name: str, argv: Sequence[str], ready_line: bytes,
                 env: Callable[[], dict[str, str]] | None = None, stop_timeout: float = 10.0,
                 identity: Sequence[str] = ()) -> None:
        """`identity`: the arguments that name this job for this data dir (e.g. `scheduler
        --kubeconfig <data-dir>/scheduler.conf`); an orphan whose command line holds them is
        stopped before this child starts. Empty: the whole argv."""
        self.name = name
        self.argv = list(argv)
        self.identity = list(identity or argv[1:])
        self.ready_line = ready_line
        self.env = env or (lambda: dict(os.environ))
        self.stop_timeout = stop_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.ready = asyncio.Event()
        self.starts = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        if threading.current_thread() is not threading.main_thread():
            log.warning("%s started from a thread: it may outlive the server if that thread ends", self.name)
        self._task = asyncio.create_task(self._keep(), name=self.name)

    async def _keep(self) -> None:
        backoff = 1.0
        while not self._stopping:
            self.ready.clear()
            await stop_orphans(self.identity, self.name)
            proc = await asyncio.create_subprocess_exec(
                *self.argv, stdout=asyncio.subprocess.PIPE, stderr=None, env=self.env(),
                # own session: a Ctrl-C at the terminal reaches the server alone, which then stops
                # its children in order (no restart races with a child that quit first)
                preexec_fn=die_with_parent(os.getpid()), start_new_session=True)
            self.proc = proc
            self.starts += 1
            assert proc.stdout is not None
            async for line in proc.stdout:  # read to the end: a full pipe would block the child
                if line.startswith(self.ready_line):
                    self.ready.set()
                    backoff = 1.0
            rc = await proc.wait()
            if self._stopping:
                return
            log.warning("%s exited with %s; restarting in %.0fs", self.name, rc, backoff)
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, 30.0)

    async def stop(self) -> None:
        """SIGTERM (the child shuts down cleanly, e.g. releases its lease), SIGKILL after stop_timeout."""
        self._stopping = True
        p = self.proc
        if p is not None and p.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                p.terminate()
            try:
                await asyncio.wait_for(p.wait(), self.stop_timeout)
            except TimeoutError:
                with contextlib.suppress(ProcessLookupError):
                    p.kill()
                await p.wait()
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
