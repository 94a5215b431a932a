"""Ending background tasks (components' loops) on stop."""

from __future__ import annotations

import asyncio
from typing import Any


async def cancel(task: asyncio.Task[Any] | None) -> None:
    """Cancel `task` and wait until it has ended (its errors no longer matter)."""
    if task is not None:
        task.cancel()
        try:
            await task
        except (asyncio.CancelledError, Exception):
            pass
