"""The controller pattern: informers feed a rate-limited queue of keys; workers call sync(key).

As upstream's controllers: sync reads the current state from informer caches, acts
idempotently, and never trusts the event that woke it, so missed or repeated events do
no harm. Errors re-queue the key with per-item exponential backoff.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from ..client import Client, EventRecorder, InformerFactory, RateLimitingQueue, obj_key, run_workers

__all__ = ["Controller", "ControllerContext", "GVRS"]

log = logging.getLogger("pyk8s.controllers")

# The resources controllers use, by short name.
GVRS = {
    "pods": ("", "v1", "pods"),
    "nodes": ("", "v1", "nodes"),
    "namespaces": ("", "v1", "namespaces"),
    "services": ("", "v1", "services"),
    "endpoints": ("", "v1", "endpoints"),
    "configmaps": ("", "v1", "configmaps"),
    "secrets": ("", "v1", "secrets"),
    "serviceaccounts": ("", "v1", "serviceaccounts"),
    "events": ("", "v1", "events"),
    "persistentvolumeclaims": ("", "v1", "persistentvolumeclaims"),
    "persistentvolumes": ("", "v1", "persistentvolumes"),
    "replicationcontrollers": ("", "v1", "replicationcontrollers"),
    "resourcequotas": ("", "v1", "resourcequotas"),
    "limitranges": ("", "v1", "limitranges"),
    "podtemplates": ("", "v1", "podtemplates"),
    "replicasets": ("apps", "v1", "replicasets"),
    "deployments": ("apps", "v1", "deployments"),
    "daemonsets": ("apps", "v1", "daemonsets"),
    "statefulsets": ("apps", "v1", "statefulsets"),
    "controllerrevisions": ("apps", "v1", "controllerrevisions"),
    "jobs": ("batch", "v1", "jobs"),
    "cronjobs": ("batch", "v1", "cronjobs"),
    "leases": ("coordination.k8s.io", "v1", "leases"),
    "endpointslices": ("discovery.k8s.io", "v1", "endpointslices"),
    "poddisruptionbudgets": ("policy", "v1", "poddisruptionbudgets"),
    "horizontalpodautoscalers": ("autoscaling", "v2", "horizontalpodautoscalers"),
    "priorityclasses": ("scheduling.k8s.io", "v1", "priorityclasses"),
    "customresourcedefinitions": ("apiextensions.k8s.io", "v1", "customresourcedefinitions"),
    "certificatesigningrequests": ("certificates.k8s.io", "v1", "certificatesigningrequests"),
}


@dataclass
class ControllerContext:
    client: Client
    informers: InformerFactory
    options: dict[str, Any] = field(default_factory=dict)
    root_ca: bytes = b""
    workqueue_metrics: Any = None  # metrics/workqueue.py's WorkqueueMetrics: each queue counted by its name
    _recorders: dict[str, EventRecorder] = field(default_factory=dict)

    def recorder(self, component: str) -> EventRecorder:
        r = self._recorders.get(component)
        if r is None:
            r = self._recorders[component] = EventRecorder(self.client, component)
        return r

    def informer(self, name: str) -> Any:
        return self.informers.informer(GVRS[name])


class Controller:
    """Subclasses set `name`, register informers/handlers in setup(), and implement sync(key)."""

    name = "controller"
    workers = 2
    component = "controller-manager"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.client = ctx.client
        wq = ctx.workqueue_metrics
        self.queue = RateLimitingQueue(self.name, metrics=wq.queue(self.name) if wq is not None else None)
        self.recorder = ctx.recorder(self.component)

    def setup(self) -> None:
        raise NotImplementedError

    async def sync(self, key: str) -> None:
        raise NotImplementedError

    def enqueue(self, obj: dict[str, Any] | str) -> None:
        self.queue.add(obj if isinstance(obj, str) else obj_key(obj))

    def enqueue_after(self, obj: dict[str, Any] | str, delay: float) -> None:
        self.queue.add_after(obj if isinstance(obj, str) else obj_key(obj), delay)

    async def started(self) -> None:
        """Called once informers are synced, before workers run."""

    async def run(self) -> None:
        await self.started()

        def on_error(key: Any, e: BaseException) -> None:
            log.debug("%s: syncing %s: %s", self.name, key, e)

        await run_workers(self.queue, self.sync, self.workers, on_error)


def split_key(key: str) -> tuple[str | None, str]:
    if "/" in key:
        ns, name = key.split("/", 1)
        return ns, name
    return None, key


async def gather_forever(*coros: Any) -> None:
    await asyncio.gather(*coros)
