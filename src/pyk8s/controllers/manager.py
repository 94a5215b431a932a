"""The controller manager: runs a chosen set of controllers, under Lease leader election.

Controllers are API clients only. They share one informer factory (one list+watch per
resource for the whole process), as kube-controller-manager does.
"""

from __future__ import annotations

import asyncio
import importlib
import logging
from typing import Any

from ..client import Client, InformerFactory, LeaderElector, strip_managed_fields
from ..client.leaderelection import default_identity
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
    "ttl": "pyk8s.controllers.ttl:TTLController",
    "csrsigning": "pyk8s.controllers.csrsigning:CSRSigningController",
    "csrapproving": "pyk8s.controllers.csrapproving:CSRApprovingController",
    "csrcleaner": "pyk8s.controllers.csrcleaner:CSRCleanerController",
    "bootstrapsigner": "pyk8s.controllers.bootstrapsigner:BootstrapSigner",
    "tokencleaner": "pyk8s.controllers.tokencleaner:TokenCleaner",
    "persistentvolume-binder": "pyk8s.controllers.persistentvolume:PersistentVolumeController",
    "persistentvolume-expander": "pyk8s.controllers.volume_expand:ExpandController",
    "pvc-protection": "pyk8s.controllers.volume_protection:PVCProtectionController",
    "pv-protection": "pyk8s.controllers.volume_protection:PVProtectionController",
    "nodeipam": "pyk8s.controllers.nodeipam:NodeIPAMController",
    "horizontalpodautoscaling": "pyk8s.controllers.podautoscaler.horizontal:HorizontalController",
    "resource-claim-controller": "pyk8s.controllers.resourceclaim:ResourceClaimController",
}
# Not kube-controller-manager's: what `pyk8s server` adds to it, as k3s runs its local-path provisioner
# beside it (`pyk8s server --disable local-storage` leaves it out).
SERVER_ONLY: dict[str, str] = {
    "local-path-provisioner": "pyk8s.controllers.volume_provisioner:LocalPathProvisioner",
}

# Our name -> upstream's canonical --controllers name (cmd/kube-controller-manager/names). Our names are
# upstream's aliases for them, which --controllers accepts too.
CANONICAL: dict[str, str] = {
    "serviceaccount": "serviceaccount-controller",
    "root-ca-cert-publisher": "root-ca-certificate-publisher-controller",
    "namespace": "namespace-controller",
    "replicaset": "replicaset-controller",
    "replicationcontroller": "replicationcontroller-controller",
    "deployment": "deployment-controller",
    "daemonset": "daemonset-controller",
    "statefulset": "statefulset-controller",
    "job": "job-controller",
    "cronjob": "cronjob-controller",
    "ttl-after-finished": "ttl-after-finished-controller",
    "garbagecollector": "garbage-collector-controller",
    "endpoints": "endpoints-controller",
    "endpointslice": "endpointslice-controller",
    "nodelifecycle": "node-lifecycle-controller",
    "podgc": "pod-garbage-collector-controller",
    "disruption": "disruption-controller",
    "resourcequota": "resourcequota-controller",
    "ttl": "ttl-controller",
    "csrsigning": "certificatesigningrequest-signing-controller",
    "csrapproving": "certificatesigningrequest-approving-controller",
    "csrcleaner": "certificatesigningrequest-cleaner-controller",
    "bootstrapsigner": "bootstrap-signer-controller",
    "tokencleaner": "token-cleaner-controller",
    "persistentvolume-binder": "persistentvolume-binder-controller",
    "persistentvolume-expander": "persistentvolume-expander-controller",
    "pvc-protection": "persistentvolumeclaim-protection-controller",
    "pv-protection": "persistentvolume-protection-controller",
    "nodeipam": "node-ipam-controller",
    "horizontalpodautoscaling": "horizontal-pod-autoscaler-controller",
    "resource-claim-controller": "resourceclaim-controller",
}
# Off unless named, as upstream's (kubeadm turns both on: `--controllers=*,bootstrapsigner,tokencleaner`).
DISABLED_BY_DEFAULT = frozenset({"bootstrapsigner", "tokencleaner"})
_BY_NAME = {**{v: k for k, v in CANONICAL.items()}, **{k: k for k in CANONICAL}, "endpoint": "endpoints"}


def select_controllers(spec: list[str]) -> list[str]:
    """kube-controller-manager's --controllers: '*' all (on by default), 'foo' enables foo, '-foo' disables it.

    Names are upstream's canonical names or their aliases; an unknown name is an error, as upstream.
    """
    wanted: set[str] = set()
    unwanted: set[str] = set()
    star = False
    for raw in spec:
        item = raw.strip()
        if not item:
            continue
        if item == "*":
            star = True
            continue
        off = item.startswith("-")
        bare = item[1:] if off else item
        name = bare if bare in SERVER_ONLY else _BY_NAME.get(bare)
        if name is None:
            raise ValueError(f"{item.lstrip('-')!r} is not in the list of known controllers")
        (unwanted if off else wanted).add(name)
    # server-only controllers run when named, never through '*'
    return [n for n in [*KNOWN, *SERVER_ONLY] if n not in unwanted and ((star and n in KNOWN and n not in DISABLED_BY_DEFAULT) or n in wanted)]


def load(name: str) -> type[Controller] | None:
    spec = KNOWN.get(name) or SERVER_ONLY.get(name)
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
                 root_ca: bytes = b"", options: dict[str, Any] | None = None, identity: str | None = None,
                 exit_on_lost_leadership: bool = False) -> None:
        self.client = client
        self.names = controllers or [n for n in KNOWN if n not in DISABLED_BY_DEFAULT]
        self.leader_elect = leader_elect
        self.root_ca = root_ca
        self.options = options or {}
        self.identity = identity or default_identity()
        # upstream's kube-controller-manager exits when it loses the lease; in `pyk8s server` we wait to lead again
        self.exit_on_lost_leadership = exit_on_lost_leadership
        self.lost_leadership = False
        self.controllers: list[Controller] = []
        self._task: asyncio.Task[None] | None = None
        self.informers: InformerFactory | None = None
        self.elector: LeaderElector | None = None
        self.metrics: Any = None  # metrics/component.py's ComponentMetrics, once enable_metrics()

    def enable_metrics(self, component: Any) -> None:
        """Count the controllers' queues (workqueue_*) and the API client's requests (rest_client_*)."""
        self.metrics = component
        self.client.metrics = component.rest_client

    async def start(self) -> None:
        self._task = asyncio.create_task(self._main(), name="controller-manager")

    async def _main(self) -> None:
        if self.leader_elect:
            le = dict(self.options.get("leader_election", {}))
            self.elector = LeaderElector(self.client, le.pop("name", "kube-controller-manager"),
                                         le.pop("namespace", "kube-system"), identity=self.identity, **le)
            while True:
                await self.elector.run(self._run)
                self.lost_leadership = True
                if self.exit_on_lost_leadership:
                    log.error("controller manager %s: leaderelection lost", self.elector.identity)
                    return
                log.warning("controller manager lost leadership; waiting to lead again")
        else:
            await self._run()

    async def _run(self) -> None:
        # as kube-controller-manager's shared informers: no managedFields in the cache; settled objects
        # compacted (memory)
        self.informers = InformerFactory(self.client, transform=strip_managed_fields, compact=True)
        ctx = ControllerContext(self.client, self.informers, self.options, self.root_ca,
                                workqueue_metrics=self.metrics.workqueue if self.metrics is not None else None)
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
            log.info("Started %d controllers: %s", len(self.controllers), ", ".join(self.names))
            await asyncio.gather(*(c.run() for c in self.controllers))
        finally:
            for c in self.controllers:
                c.queue.shutdown()
            await self.informers.stop()

    async def wait(self) -> None:
        """Until the manager ends by itself (leadership lost with exit_on_lost_leadership, or its work failed)."""
        if self._task is not None:
            await asyncio.shield(self._task)

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except (asyncio.CancelledError, Exception):
                pass
        await self.client.close()
