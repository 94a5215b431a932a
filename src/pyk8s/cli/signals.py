"""Waiting for SIGINT/SIGTERM in a component's main coroutine."""

from __future__ import annotations

import asyncio
import signal

__all__ = ["until_terminated"]


async def until_terminated() -> None:
    """Return when the process is asked to stop (SIGINT or SIGTERM)."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:  # pragma: no cover
            pass
    await stop.wait()
