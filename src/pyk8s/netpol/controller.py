"""The network policy controller: one per node, as kube-router's and Calico's Felix are.

It watches NetworkPolicies, Pods and Namespaces (informers), and after each burst of changes
computes the node's whole desired state (policy.compute_ruleset, pure) and applies only its
difference to the table (nftables.render_diff, one `nft -f` transaction). Level-triggered: a
sync never trusts the event that woke it; a failed sync rebuilds the table whole on the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..client.informer import InformerFactory
from ..client.rest import Client, obj_key
from .nftables import render_delete, render_diff, render_full, run_nft
from .policy import PodInfo, Ruleset, compute_ruleset, pod_info

__all__ = ["NetworkPolicyConfig", "NetworkPolicyController", "DEFAULT_TABLE"]

log = logging.getLogger("pyk8s.netpol")

DEFAULT_TABLE = "pyk8s-netpol"
NETPOL_GVR = ("networking.k8s.io", "v1", "networkpolicies")
POD_GVR = ("", "v1", "pods")
NS_GVR = ("", "v1", "namespaces")


@dataclass
class NetworkPolicyConfig:
    node_name: str
    table: str = DEFAULT_TABLE
    nft: Sequence[str] = ("nft",)  # the command (a prefix such as nsenter can aim it at another namespace)
    full_resync_period: float = 300.0  # seconds between whole-table rewrites (repairs outside edits)
    retry: float = 1.0


class NetworkPolicyController:
    def __init__(self, client: Client, config: NetworkPolicyConfig) -> None:
        self.client = client
        self.config = config
        self.factory = InformerFactory(client)
        self.policies = self.factory.informer(NETPOL_GVR)
        self.pods = self.factory.informer(POD_GVR)
        self.namespaces = self.factory.informer(NS_GVR)
        self.applied: Ruleset | None = None  # what the table holds, None: unknown (rewrite it whole)
        self.last_full = 0.0
        self.syncs = 0
        self._dirty = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.synced = asyncio.Event()  # the first sync after the informers' lists is in the kernel
        self.owns_client = False  # stop() closes it
        self.pod_infos: dict[str, PodInfo | None] = {}

    async def start(self) -> None:
        for inf in (self.policies, self.namespaces):
            inf.add_handlers(self._changed, self._updated, self._changed)
        self.pods.add_handlers(self._pod_added, lambda old, new: self._pod_added(new), self._pod_deleted)
        self.factory.start()
        self._task = asyncio.create_task(self._run(), name="network-policy")

    def _changed(self, obj: Any) -> None:
        self._dirty.set()

    def _updated(self, old: Any, new: Any) -> None:
        self._dirty.set()

    def _pod_added(self, pod: Any) -> None:
        # what policies need of a pod, parsed once per change rather than once per sync
        self.pod_infos[obj_key(pod)] = pod_info(pod)
        self._dirty.set()

    def _pod_deleted(self, pod: Any) -> None:
        self.pod_infos.pop(obj_key(pod), None)
        self._dirty.set()

    def desired(self) -> Ruleset:
        ns_labels = {n["metadata"]["name"]: n["metadata"].get("labels") or {} for n in self.namespaces.list()}
        return compute_ruleset(self.policies.list(), self.pod_infos.values(), ns_labels, self.config.node_name)

    async def sync(self) -> None:
        want = self.desired()
        now = time.monotonic()
        if self.applied is None or now - self.last_full >= self.config.full_resync_period:
            await run_nft(render_full(self.config.table, want), self.config.nft)
            self.last_full = now
        else:
            script = render_diff(self.config.table, self.applied, want)
            if script:
                await run_nft(script, self.config.nft)
        self.applied = want
        self.syncs += 1

    async def _run(self) -> None:
        while True:
            try:
                await self.factory.wait_synced(30)
                break
            except TimeoutError:  # say so: until the lists arrive, nothing is enforced on this node
                log.warning("network policies not enforced yet on node %s: cannot list networkpolicies, pods "
                            "and namespaces (reachable API? allowed to list them?)", self.config.node_name)
        self._dirty.set()
        while True:
            await self._dirty.wait()
            self._dirty.clear()  # changes during the sync wake the next one
            try:
                t0 = time.monotonic()
                await self.sync()
                log.debug("network policy sync took %.1f ms", (time.monotonic() - t0) * 1000)
                self.synced.set()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - a failed sync is retried whole
                log.warning("network policy sync failed, rebuilding the table: %s", e)
                self.applied = None
                await asyncio.sleep(self.config.retry)
                self._dirty.set()

    async def stop(self, remove_table: bool = False) -> None:
        """Stop. The table stays by default: the pods keep running, so their isolation must too (a
        restarted controller replaces the table in one transaction); remove_table drops it."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        await self.factory.stop()
        if self.owns_client:
            await self.client.close()
        if remove_table:
            with contextlib.suppress(Exception):
                await run_nft(render_delete(self.config.table), self.config.nft)


def unavailable_reason(nft: str = "nft") -> str:
    """Why this machine cannot enforce policies ("" when it can): nft must run as root."""
    import os
    import shutil

    if os.geteuid() != 0:
        return "not running as root"
    if shutil.which(nft) is None:
        return f"{nft} not found"
    return ""


async def start_for_node(client: Client, node_name: str, owns_client: bool = False) -> NetworkPolicyController | None:
    """The node's controller, or None (said once) where nftables cannot be programmed here."""
    reason = unavailable_reason()
    if reason:
        log.warning("network policies are not enforced on node %s: %s", node_name, reason)
        return None
    ctl = NetworkPolicyController(client, NetworkPolicyConfig(node_name=node_name))
    ctl.owns_client = owns_client
    await ctl.start()
    return ctl
