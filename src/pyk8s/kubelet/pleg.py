"""The pod lifecycle event generator: relists the runtime every second and wakes pods whose containers changed.

It also indexes sandboxes and containers by pod UID, which is how a restarted kubelet's
pod workers find (and adopt) what is already running, and how housekeeping finds
containers of pods nobody knows any more.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable
from typing import Any

from .containers import POD_UID

log = logging.getLogger("pyk8s.kubelet.pleg")


class PLEG:
    def __init__(self, runtime: Any, on_change: Callable[[str], None], period: float = 1.0) -> None:
        self.runtime = runtime
        self.on_change = on_change
        self.period = period
        self.sandboxes: dict[str, set[str]] = {}  # uid -> sandbox ids
        self.containers: dict[str, set[str]] = {}  # uid -> container ids
        self._states: dict[str, tuple[str, str]] = {}  # container id -> (uid, state)
        self._task: asyncio.Task[None] | None = None
        self.relisted = asyncio.Event()

    def known(self, uid: str) -> tuple[set[str], set[str]]:
        return set(self.sandboxes.get(uid, ())), set(self.containers.get(uid, ()))

    def note(self, uid: str, sandbox_id: str = "", container_id: str = "") -> None:
        if sandbox_id:
            self.sandboxes.setdefault(uid, set()).add(sandbox_id)
        if container_id:
            self.containers.setdefault(uid, set()).add(container_id)

    def forget(self, uid: str) -> None:
        self.sandboxes.pop(uid, None)
        for cid in self.containers.pop(uid, set()):
            self._states.pop(cid, None)

    def uids(self) -> set[str]:
        return set(self.sandboxes) | set(self.containers)

    async def relist(self) -> None:
        sbs = await self.runtime.list_sandboxes()
        cs = await self.runtime.list_containers()
        sandboxes: dict[str, set[str]] = {}
        for sb in sbs:
            sandboxes.setdefault(sb.config.uid, set()).add(sb.id)
        containers: dict[str, set[str]] = {}
        states: dict[str, tuple[str, str]] = {}
        changed: set[str] = set()
        for c in cs:
            uid = c.labels.get(POD_UID, "")
            if not uid:
                continue
            containers.setdefault(uid, set()).add(c.id)
            states[c.id] = (uid, c.state)
            if self._states.get(c.id) != (uid, c.state):
                changed.add(uid)
        for cid, (uid, _) in self._states.items():
            if cid not in states:
                changed.add(uid)
        self.sandboxes, self.containers, self._states = sandboxes, containers, states
        self.relisted.set()
        for uid in changed:
            self.on_change(uid)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="pleg")

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.period)
            try:
                await self.relist()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("PLEG relist failed")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
