"""The controller manager: runs a chosen set of controllers, under Lease leader election.

Controllers are API clients only. They share one informer factory (one list+watch per
resource for the whole process), as kube-controller-manager does.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

from ..client import Client, InformerFactory, LeaderElector
from .base import Controller, ControllerContext

log = logging.getLogger("pyk8s.controllers")

# name -> "module:Class". Each controller module registers one line here.
KNOWN: dict[str, str] = {
    "serviceaccount": "pyk8s.controllers.serviceaccount:ServiceAccountController",
    "root-ca-cert-publisher": "pyk8s.controllers.rootcacert:RootCACertPublisher",
    "namespace": "pyk8s.controllers.namespace:NamespaceController",
    "replicaset": "pyk8s.controllers.replicaset:ReplicaSetController",
    "replicationcontroller": "pyk8s.controllers.replicaset:ReplicationControllerController",
    "deployment": "pyk8s.controllers.deployment:DeploymentController",
    "daemonset": "pyk8s.controllers.daemonset:DaemonSetController",
    "statefulset": "pyk8s.controllers.statefulset:StatefulSetController",
    "job": "pyk8s.controllers.job:JobController",
    "cronjob": "pyk8s.controllers.cronjob:CronJobController",
    "ttl-after-finished": "pyk8s.controllers.ttlafterfinished:TTLAfterFinishedController",
    "garbagecollector": "pyk8s.controllers.garbagecollector:GarbageCollector",
    "endpoints": "pyk8s.controllers.endpoints:EndpointsController",
    "endpointslice": "pyk8s.controllers.endpointslice:EndpointSliceController",
    "nodelifecycle": "pyk8s.controllers.nodelifecycle:NodeLifecycleController",
    "podgc": "pyk8s.controllers.podgc:PodGCController",
    "disruption": "pyk8s.controllers.disruption:DisruptionController",
    "resourcequota": "pyk8s.controllers.resourcequota:ResourceQuotaController",
}


def load(name: str) -> type[Controller] | None:
    spec = KNOWN.get(name)
    if spec is None:
        return None
    mod, cls = spec.split(":")
    try:
        return getattr(importlib.import_module(mod), cls)
    except (ImportError, AttributeError) as e:
        log.debug("controller %s not available: %s", name, e)
        return None


class ControllerManager:
    def __init__(self, client: Client, controllers: list[str] | None = None, leader_elect: bool = True,
                 root_ca: bytes = b"", options: dict[str, Any] | None = None, identity: str | None = None) -> None:
        self.client = client
        self.names = controllers or list(KNOWN)
        self.leader_elect = leader_elect
        self.root_ca = root_ca
        self.options = options or {}
        self.identity = identity
        self.controllers: list[Controller] = []
        self._task: asyncio.Task[None] | None = None
        self.informers: InformerFactory | None = None
        self.elector: LeaderElector | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._main(), name="controller-manager")

    async def _main(self) -> None:
        if self.leader_elect:
            self.elector = LeaderElector(self.client, "kube-controller-manager", identity=self.identity,
                                         **self.options.get("leader_election", {}))
            while True:
                await self.elector.run(self._run)
                log.warning("controller manager lost leadership; waiting to lead again")
        else:
            await self._run()

    async def _run(self) -> None:
        self.informers = InformerFactory(self.client)
        ctx = ControllerContext(self.client, self.informers, self.options, self.root_ca)
        self.controllers = []
        for name in self.names:
            cls = load(name)
            if cls is None:
                continue
            c = cls(ctx)
            c.setup()
            self.controllers.append(c)
        self.informers.start()
        try:
            await self.informers.wait_synced(60)
            await asyncio.gather(*(c.run() for c in self.controllers))
        finally:
            for c in self.controllers:
                c.queue.shutdown()
            await self.informers.stop()

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        await self.client.close()
