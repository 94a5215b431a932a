"""Child processes `pyk8s server` starts and keeps alive: API workers and the scheduler.

Each child dies with the server, even after kill -9 (PR_SET_PDEATHSIG), is restarted with a
doubling backoff if it exits on its own, and says it is ready with one line on its stdout. It
runs in a session of its own, so only the server tells it when to stop.
"""

from __future__ import annotations

import asyncio
import contextlib
import ctypes
import logging
import os
import signal
from collections.abc import Callable, Sequence

log = logging.getLogger(__name__)

_PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    """In the child before exec: SIGTERM when the server goes, even after kill -9."""
    with contextlib.suppress(Exception):
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGTERM)


class ChildProcess:
    """One supervised child: `argv` run until stop(), ready once it prints `ready_line`."""

    def __init__(self, name: str, argv: Sequence[str], ready_line: bytes,
                 env: Callable[[], dict[str, str]] | None = None, stop_timeout: float = 10.0) -> None:
        self.name = name
        self.argv = list(argv)
        self.ready_line = ready_line
        self.env = env or (lambda: dict(os.environ))
        self.stop_timeout = stop_timeout
        self.proc: asyncio.subprocess.Process | None = None
        self.ready = asyncio.Event()
        self.starts = 0
        self._task: asyncio.Task[None] | None = None
        self._stopping = False

    def start(self) -> None:
        self._task = asyncio.create_task(self._keep(), name=self.name)

    async def _keep(self) -> None:
        backoff = 1.0
        while not self._stopping:
            self.ready.clear()
            proc = await asyncio.create_subprocess_exec(
                *self.argv, stdout=asyncio.subprocess.PIPE, stderr=None, env=self.env(),
                # own session: a Ctrl-C at the terminal reaches the server alone, which then stops
                # its children in order (no restart races with a child that quit first)
                preexec_fn=die_with_parent, start_new_session=True)
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
