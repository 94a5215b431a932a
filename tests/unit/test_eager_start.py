"""eager_start: a coroutine's first step runs at once; if it must wait, a Task finishes it as a
Task would have run it from the start (results, errors, cancellation, context variables)."""

from __future__ import annotations

import asyncio
import contextvars

import pytest

from pyk8s.apiserver import eager_start

_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("eager_test", default=None)


async def _waits_on(fut: asyncio.Future[int], log: list[object]) -> None:
    token = _var.set("inside")
    try:
        log.append(("got", await fut))
        await asyncio.sleep(0)
        log.append(("var", _var.get()))
    finally:
        _var.reset(token)  # raises ValueError if reset in another context than it was set in


def _started(log: list[object]) -> tuple[asyncio.Future[int], asyncio.Task[None]]:
    """_waits_on started eagerly: the future it waits on and the Task that finishes it."""
    fut: asyncio.Future[int] = asyncio.get_running_loop().create_future()
    task = eager_start.start(_waits_on(fut, log))
    assert task is not None and not log
    return fut, task


def test_a_coroutine_that_never_waits_runs_to_its_end_without_a_task() -> None:
    async def main() -> None:
        log: list[str] = []

        async def quick() -> None:
            _var.set("leaked?")
            log.append("done")

        assert eager_start.start(quick()) is None
        assert log == ["done"] and _var.get() is None  # its context was a copy

    asyncio.run(main())


def test_a_waiting_coroutine_is_finished_by_a_task_in_its_own_context() -> None:
    async def main() -> None:
        log: list[object] = []
        fut, task = _started(log)
        asyncio.get_running_loop().call_later(0.01, fut.set_result, 5)
        await task
        assert log == [("got", 5), ("var", "inside")] and _var.get() is None

    asyncio.run(main())


def test_the_awaited_futures_error_reaches_the_coroutine() -> None:
    async def main() -> None:
        log: list[object] = []
        fut, task = _started(log)
        asyncio.get_running_loop().call_later(0.01, fut.set_exception, ValueError("boom"))
        with pytest.raises(ValueError, match="boom"):
            await task
        assert log == []

    asyncio.run(main())


def test_cancelling_the_task_cancels_the_coroutine_where_it_waits() -> None:
    async def main() -> None:
        log: list[object] = []
        fut, task = _started(log)
        await asyncio.sleep(0)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert fut.cancelled() and log == []

        # cancelled while the coroutine yields to the loop (asyncio.sleep(0)): not lost either
        async def yields() -> None:
            await asyncio.sleep(0)
            log.append("ran on")

        yielding = eager_start.start(yields())
        assert yielding is not None
        yielding.cancel()
        with pytest.raises(asyncio.CancelledError):
            await yielding
        assert log == []

        # cancelled after the awaited future got its result: the coroutine still sees the cancellation
        fut2, task = _started(log)
        await asyncio.sleep(0)
        fut2.set_result(1)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert log == []

    asyncio.run(main())
