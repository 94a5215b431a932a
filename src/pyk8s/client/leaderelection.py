"""Leader election on a coordination.k8s.io/v1 Lease, as client-go's leaderelection.

Defaults as kube-controller-manager's: lease 15 s, renew deadline 10 s, retry every 2 s.
Only the holder acts; a holder that cannot renew within the deadline stops leading.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import now_micro
from .rest import Client

log = logging.getLogger("pyk8s.leaderelection")

LEASES = ("coordination.k8s.io", "v1", "leases")


def default_identity() -> str:
    """`<hostname>_<uuid>`, as kube-controller-manager and kube-scheduler name their lease holders."""
    return f"{socket.gethostname()}_{uuid.uuid4()}"



def _parse(ts: str | None) -> float:
    if not ts:
        return 0.0
    ts = ts.rstrip("Z")
    fmt = "%Y-%m-%dT%H:%M:%S.%f" if "." in ts else "%Y-%m-%dT%H:%M:%S"
    return datetime.strptime(ts, fmt).replace(tzinfo=UTC).timestamp()


class LeaderElector:
    def __init__(self, client: Client, name: str, namespace: str = "kube-system", identity: str | None = None,
                 lease_duration: float = 15.0, renew_deadline: float = 10.0, retry_period: float = 2.0) -> None:
        self.client = client
        self.name = name
        self.namespace = namespace
        self.identity = identity or default_identity()
        self.lease_duration = lease_duration
        self.renew_deadline = renew_deadline
        self.retry_period = retry_period
        self.is_leader = False
        self._observed: tuple[str, float] = ("", 0.0)  # (holder+renewTime seen, local time seen)

    async def _try(self) -> bool:
        lease = await self.client.get_or_none(LEASES, self.name, self.namespace)
        now = now_micro()
        if lease is None:
            body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                    "metadata": {"name": self.name, "namespace": self.namespace},
                    "spec": {"holderIdentity": self.identity, "leaseDurationSeconds": int(self.lease_duration),
                             "acquireTime": now, "renewTime": now, "leaseTransitions": 0}}
            try:
                await self.client.create(LEASES, body)
                return True
            except StatusError as e:
                if e.code == 409:
                    return False
                raise
        spec = lease.get("spec") or {}
        holder = spec.get("holderIdentity") or ""
        record = f"{holder}|{spec.get('renewTime')}"
        if record != self._observed[0]:
            # measured with our own clock, as client-go does: clocks of other hosts may differ
            self._observed = (record, time.monotonic())
        expired = time.monotonic() > self._observed[1] + float(spec.get("leaseDurationSeconds") or self.lease_duration)
        if holder and holder != self.identity and not expired:
            return False
        new_spec = dict(spec)
        if holder != self.identity:
            new_spec["acquireTime"] = now
            new_spec["leaseTransitions"] = int(spec.get("leaseTransitions") or 0) + 1
        new_spec.update(holderIdentity=self.identity, renewTime=now, leaseDurationSeconds=int(self.lease_duration))
        lease["spec"] = new_spec
        try:
            await self.client.update(LEASES, lease)
        except StatusError as e:
            if e.code == 409:
                return False
            raise
        return True

    async def run(self, lead: Callable[[], Awaitable[Any]]) -> None:
        """Block until leading, run `lead()` while leading; return when leadership is lost."""
        while True:
            try:
                if await self._try():
                    break
            except Exception as e:
                log.debug("leader election %s: %s", self.name, e)
            await asyncio.sleep(self.retry_period)
        self.is_leader = True
        log.info("%s: became leader as %s", self.name, self.identity)
        task: asyncio.Future[Any] = asyncio.ensure_future(lead())
        try:
            last_renew = time.monotonic()
            while not task.done():
                await asyncio.sleep(self.retry_period)
                try:
                    if await self._try():
                        last_renew = time.monotonic()
                except Exception as e:
                    log.debug("renew %s: %s", self.name, e)
                if time.monotonic() - last_renew > self.renew_deadline:
                    log.warning("%s: leadership lost", self.name)
                    break
            if task.done() and not task.cancelled() and task.exception() is not None:
                log.error("%s: the leader's work failed", self.name, exc_info=task.exception())
        finally:
            self.is_leader = False
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass

    async def release(self) -> None:
        """Give the Lease up if we hold it (client-go's ReleaseOnCancel: no holder, 1 s), so that
        another candidate need not wait for it to expire. Best effort."""
        try:
            lease = await self.client.get_or_none(LEASES, self.name, self.namespace)
            spec = dict((lease or {}).get("spec") or {})
            if lease is None or spec.get("holderIdentity") != self.identity:
                return
            now = now_micro()
            spec.pop("holderIdentity", None)
            lease["spec"] = {**spec, "leaseDurationSeconds": 1, "renewTime": now, "acquireTime": now}
            await self.client.update(LEASES, lease)
        except Exception as e:
            log.debug("releasing lease %s: %s", self.name, e)
