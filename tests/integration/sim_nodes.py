"""Simulated nodes (`pyk8s.sim.Simulator`) for a test's cluster, run on a thread of their own."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from typing import Any


@contextlib.contextmanager
def simulated_nodes(kubeconfig: str, count: int, **kw: Any) -> Iterator[None]:
    """`count` registered simulated nodes for the duration of the block (Simulator's keyword arguments)."""
    from pyk8s.client import Client
    from pyk8s.sim import Simulator

    stop = threading.Event()
    registered = threading.Event()
    errors: list[BaseException] = []

    def run() -> None:
        async def main() -> None:
            c = Client.from_kubeconfig(kubeconfig)
            sim = Simulator(c, count, **kw)
            await sim.start()
            try:
                await sim.wait_nodes_registered(30)
                registered.set()
                while not stop.is_set():
                    await asyncio.sleep(0.1)
            finally:
                await sim.stop()
                await c.close()

        try:
            asyncio.run(main())
        except BaseException as e:  # noqa: BLE001 - reported to the test
            errors.append(e)
            registered.set()

    t = threading.Thread(target=run, daemon=True)
    t.start()
    try:
        assert registered.wait(60) and not errors, errors
        yield
    finally:
        stop.set()
        t.join(30)
