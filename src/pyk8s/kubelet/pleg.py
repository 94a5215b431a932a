"""The pod lifecycle event generator: watches the runtime's containers and wakes pods whose containers changed.

Every second it re-reads the containers that can still change (not yet exited); every
ten seconds, and at start, it relists everything. It also indexes sandboxes and
containers by pod UID, which is how a restarted kubelet's pod workers find (and adopt)
what is already running, and how housekeeping finds containers of pods nobody knows.
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
    def __init__(self, runtime: Any, on_change: Callable[[str], None], period: float = 1.0,
                 full_period: float = 10.0) -> None:
        self.runtime = runtime
        self.on_change = on_change
        self.period = period
        self.full_period = full_period
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
            self._states.setdefault(container_id, (uid, "created"))

    def seen(self, uid: str, container_id: str, state: str) -> None:
        """The pod's worker has read this container's state itself (and acted on it): no wake-up for that change.
        Spares each new pod a second full sync a second after its containers start."""
        if container_id in self._states:
            self._states[container_id] = (uid, state)

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
        for cid, (uid, _state) in self._states.items():
            if cid not in states:
                try:  # created while we listed? keep it; otherwise it is gone
                    st = await self.runtime.container_status(cid)
                    states[cid] = (uid, st.state)
                    containers.setdefault(uid, set()).add(cid)
                except Exception:  # noqa: BLE001 - NotFound
                    changed.add(uid)
        for uid, sids in self.sandboxes.items():
            for sid in sids - sandboxes.get(uid, set()):
                with contextlib.suppress(Exception):
                    await self.runtime.sandbox_status(sid)
                    sandboxes.setdefault(uid, set()).add(sid)
        self.sandboxes, self.containers, self._states = sandboxes, containers, states
        self.relisted.set()
        for uid in changed:
            self.on_change(uid)

    async def recheck(self) -> None:
        """Re-read only the containers that may still change state (exited ones never do)."""
        from .runtime.interface import EXITED, NotFound

        for cid, (uid, state) in list(self._states.items()):
            if state == EXITED:
                continue
            try:
                st = await self.runtime.container_status(cid)
                new = st.state
            except NotFound:
                self._states.pop(cid, None)
                self.on_change(uid)
                continue
            if new != state and cid in self._states:
                self._states[cid] = (uid, new)
                self.on_change(uid)

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="pleg")

    async def _run(self) -> None:
        last_full = asyncio.get_running_loop().time()
        while True:
            await asyncio.sleep(self.period)
            try:
                now = asyncio.get_running_loop().time()
                if now - last_full >= self.full_period:
                    last_full = now
                    await self.relist()
                else:
                    await self.recheck()
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
