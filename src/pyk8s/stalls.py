"""PYK8S_STALL_TRACE=<file>: catch a component's event loop in the act of stalling, for the benches.

A watcher thread posts a no-op to the loop every 50 ms and waits for it to run. When it has not
run within PYK8S_STALL_SECONDS (default 0.25), the loop is held: by one long synchronous stretch, or
by more ready callbacks than it gets through in that time (saturation). The thread takes the main
thread's stack right then, which names the stretch in the first case and samples the busy work in
the second. One entry per stall is appended (wall clock, pid, program, how long the loop was held,
the stack as it was when the threshold passed). Off unless the variable is set; the cost is one
callback per 50 ms.
"""

from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
import traceback
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["watched"]

T = TypeVar("T")
PERIOD = 0.05


async def watched(coro: Coroutine[Any, Any, T]) -> T:
    """Run coro, watched for stalls when PYK8S_STALL_TRACE is set."""
    path = os.environ.get("PYK8S_STALL_TRACE")
    if path:
        threshold = float(os.environ.get("PYK8S_STALL_SECONDS", "0.25"))
        _start(asyncio.get_running_loop(), threading.get_ident(), path, threshold)
    return await coro


def _start(loop: asyncio.AbstractEventLoop, main: int, path: str, threshold: float) -> None:
    prog = " ".join(sys.argv[1:3])

    def watch() -> None:
        while not loop.is_closed():
            ran = threading.Event()
            t0 = time.monotonic()
            try:
                loop.call_soon_threadsafe(ran.set)
            except RuntimeError:  # closed meanwhile
                return
            if not ran.wait(threshold):
                frame = sys._current_frames().get(main)
                stack = "".join(traceback.format_stack(frame)) if frame is not None else "(no frame)\n"
                ran.wait()
                held = time.monotonic() - t0
                with os.fdopen(os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600), "a") as f:
                    f.write(f"== {time.time():.3f} pid {os.getpid()} {prog!r}: loop held {held:.3f}s; at "
                            f"{threshold}s it was in\n{stack}")
            time.sleep(PERIOD)

    threading.Thread(target=watch, name="stall-watch", daemon=True).start()
