"""Start a coroutine at once, and make a Task of it only if it has to wait.

Most plain API requests (a GET from the watch cache, an authorization failure, a 404) are
answered without ever waiting on I/O, so a Task per request (created, scheduled, stepped on the
next loop iteration) is pure overhead: a few µs of the ~25 µs the server's own Python spends on
a GET (bench/get_throughput.py). Python 3.12's eager task factory does this for every task;
on 3.11 this module does it for the one call site that needs it (http1.py).

The first step runs in a fresh copy of the caller's context, and a Task that finishes the
coroutine runs in that same context, so context variables set in the first step (the audit
event's) reset in the context they were set in, as inside a Task.
"""

from __future__ import annotations

import asyncio
import contextvars
from collections.abc import Coroutine
from typing import Any

__all__ = ["start"]


def start(coro: Coroutine[Any, Any, None]) -> asyncio.Task[None] | None:
    """Run the coroutine's first step now: None when that finished it, else the Task finishing it."""
    ctx = contextvars.copy_context()
    try:
        yielded = ctx.run(coro.send, None)
    except StopIteration:
        return None
    return asyncio.get_running_loop().create_task(_finish(coro, yielded), context=ctx)


async def _finish(coro: Coroutine[Any, Any, None], yielded: Any) -> None:
    """Step the coroutine as a Task would: wait for the future it yielded, then resume it."""
    while True:
        try:
            if yielded is None:  # a bare yield (asyncio.sleep(0)): one turn of the loop
                await asyncio.sleep(0)
            else:
                yielded._asyncio_future_blocking = False  # taken over, as a Task takes it
                await yielded
        except BaseException as e:
            if not _outcome_of(yielded, e):
                # from outside (a cancellation of this Task): into the coroutine, where it waits
                try:
                    yielded = coro.throw(e)
                except StopIteration:
                    return
                continue
            # the future's own error: the coroutine's await reads it again from the future
        try:
            yielded = coro.send(None)
        except StopIteration:
            return


def _outcome_of(fut: Any, e: BaseException) -> bool:
    """Whether `e` is the future's own result (its exception, or its cancellation)."""
    if fut is None or not fut.done():
        return False
    if fut.cancelled():
        return isinstance(e, asyncio.CancelledError)
    return fut.exception() is e
