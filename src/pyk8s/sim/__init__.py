"""Simulated nodes ("our kwok"): thousands of Nodes that behave like kubelets without running anything.

One `Simulator` registers N nodes, renews their Leases, posts node status heartbeats and moves
the pods bound to them through a kubelet's lifecycle, all through the API like any component.

Scale comes from sharing: there is no task per node or per pod. A single `TimerWheel` task
fires every deadline (lease renewals, heartbeats, pod steps), and a `Writer` runs the
resulting API writes with bounded concurrency over keep-alive connections, coalescing
writes queued for the same object (a pod whose status is due twice is written once, with
its newest state). Lease renewals are staggered across their period so 5,000 nodes give a
smooth ~500 writes/s instead of bursts.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import random
import time
from collections.abc import Awaitable, Callable, Hashable
from typing import Any

from ..api.errors import StatusError
from ..client import Client, Informer
from .gpus import SimGPUs
from .nodes import (
    HEARTBEAT_ANNOTATION,
    KUBELET_VERSION,
    LEASE_NAMESPACE,
    SIM_LABEL,
    NodeTemplate,
    SimNode,
    lease_object,
    micro_time,
    new_sim_node,
    node_conditions,
    node_object,
    node_status,
    parse_labels,
    parse_taints,
    rfc3339,
    transition_times,
)
from .pods import ANN_READY, SimPod, exit_plan, pod_status, restarts_after_exit

log = logging.getLogger("pyk8s.sim")

__all__ = ["Simulator", "TimerWheel", "Writer", "NodeTemplate", "parse_labels", "parse_taints", "KUBELET_VERSION",
           "SIM_LABEL"]

NODES = ("", "v1", "nodes")
PODS = ("", "v1", "pods")
LEASES = ("coordination.k8s.io", "v1", "leases")
_GOLDEN = 0.6180339887498949  # spreads node i's first renewal over the period, evenly for any N


class TimerWheel:
    """Keyed one-shot timers fired by a single task at `tick` resolution.

    Scheduling a key again replaces its previous timer, so each object has at most one
    pending deadline per purpose and cancellation is O(1).
    """

    def __init__(self, tick: float = 0.05) -> None:
        self.tick = tick
        self._slots: dict[int, list[tuple[Hashable, int]]] = collections.defaultdict(list)
        self._entries: dict[Hashable, tuple[int, Callable[[], None]]] = {}
        self._gen = 0
        self._next_slot = int(time.monotonic() / tick)
        self._task: asyncio.Task[None] | None = None

    def __len__(self) -> int:
        return len(self._entries)

    def schedule(self, key: Hashable, delay: float, fn: Callable[[], None]) -> None:
        self._gen += 1
        slot = max(int((time.monotonic() + max(delay, 0.0)) / self.tick) + 1, self._next_slot)
        self._entries[key] = (self._gen, fn)
        self._slots[slot].append((key, self._gen))

    def cancel(self, key: Hashable) -> None:
        self._entries.pop(key, None)

    def start(self) -> None:
        if self._task is None:
            self._next_slot = int(time.monotonic() / self.tick)
            self._task = asyncio.create_task(self._run(), name="sim-timer-wheel")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None

    async def _run(self) -> None:
        while True:
            await asyncio.sleep(self.tick)
            due = int(time.monotonic() / self.tick)
            while self._next_slot <= due:
                slot = self._next_slot
                self._next_slot = slot + 1  # timers set by callbacks land in a later slot
                for key, gen in self._slots.pop(slot, ()):
                    e = self._entries.get(key)
                    if e is None or e[0] != gen:
                        continue  # replaced or cancelled
                    del self._entries[key]
                    try:
                        e[1]()
                    except Exception:
                        log.exception("sim timer %r failed", key)


Job = Callable[[], Awaitable[None]]


class Writer:
    """Runs API writes with bounded concurrency; one queued write per key, never two at once for a key.

    Two priorities: node registration, leases and node status go first (3 writes in 4 when both
    wait), so heartbeats stay on time while thousands of pods start, and pods never starve.
    """

    def __init__(self, concurrency: int = 64, low_share: int = 4) -> None:
        self.concurrency = concurrency
        self.low_share = max(low_share, 1)
        self._turn = 0
        self._queues: tuple[collections.deque[Hashable], collections.deque[Hashable]] = \
            (collections.deque(), collections.deque())
        self._jobs: dict[Hashable, Job] = {}
        self._running: set[Hashable] = set()
        self._after: dict[Hashable, tuple[Job, int]] = {}  # submitted while the same key runs
        self._wake = asyncio.Event()
        self._workers: list[asyncio.Task[None]] = []
        self._idle = asyncio.Event()
        self._idle.set()
        self.done = 0
        self.failed = 0
        self.latency = 0.0  # seconds per write, smoothed: tells a slow API server from a slow simulator
        self.retry_later: Callable[[Hashable, Job, int, float], None] | None = None

    def pending(self) -> int:
        return len(self._jobs) + len(self._after) + len(self._running)

    def submit(self, key: Hashable, job: Job, high: bool = False) -> None:
        if key in self._running:
            self._after[key] = (job, 0 if high else 1)
            return
        if key not in self._jobs:
            self._queues[0 if high else 1].append(key)
        self._jobs[key] = job
        self._idle.clear()
        self._wake.set()

    def start(self) -> None:
        if not self._workers:
            self._workers = [asyncio.create_task(self._work(), name=f"sim-writer-{i}") for i in range(self.concurrency)]

    async def stop(self) -> None:
        for t in self._workers:
            t.cancel()
        for t in self._workers:
            try:
                await t
            except asyncio.CancelledError:
                pass
        self._workers = []

    async def drain(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._idle.wait(), timeout)

    def _next(self) -> tuple[Hashable, Job] | None:
        # Weighted, not strict: when the server cannot keep up with every heartbeat, pods still get
        # one write in `low_share`, as API Priority and Fairness gives each priority level its seats.
        self._turn += 1
        order = self._queues if self._turn % self.low_share else self._queues[::-1]
        for q in order:
            while q:
                key = q.popleft()
                job = self._jobs.pop(key, None)
                if job is not None:
                    return key, job
        return None

    async def _work(self) -> None:
        while True:
            item = self._next()
            if item is None:
                if not self._running:
                    self._idle.set()
                self._wake.clear()
                await self._wake.wait()
                continue
            key, job = item
            self._running.add(key)
            t0 = time.monotonic()
            try:
                await job()
                self.done += 1
                self.latency += (time.monotonic() - t0 - self.latency) * 0.01  # EWMA over ~100 writes
            except asyncio.CancelledError:
                raise
            except Exception as e:  # the job decides what is final; anything escaping is retried later
                self.failed += 1
                log.debug("sim write %r failed: %s", key, e)
                if self.retry_later is not None:
                    self.retry_later(key, job, 0, 1.0 + random.random())
            finally:
                self._running.discard(key)
                nxt = self._after.pop(key, None)
                if nxt is not None:
                    self.submit(key, nxt[0], high=nxt[1] == 0)


class Simulator:
    """N simulated kubelets in one asyncio process.

    `await sim.start()` registers the nodes (in the background) and starts following pods;
    `await sim.wait_nodes_registered()` waits for the registrations; `await sim.stop()` ends it.
    """

    def __init__(
        self,
        client: Client,
        nodes: int = 0,
        *,
        name_prefix: str = "sim-node-",
        start_index: int = 0,
        cpu: str = "32",
        memory: str = "256Gi",
        pods: str = "110",
        labels: dict[str, str] | str | None = None,
        taints: list[dict[str, str]] | str | None = None,
        lease_period: float = 10.0,
        status_period: float = 300.0,  # the kubelet's nodeStatusReportFrequency: with Leases, status is no heartbeat
        concurrency: int = 64,
        creating_seconds: float = 0.5,
        delete_delay: tuple[float, float] = (0.0, 1.0),
        crash_backoff: float = 10.0,
        max_crash_backoff: float = 300.0,
        manage_pods: bool = True,
        delete_nodes_on_stop: bool = False,
        kubelet_port: int | None = None,
        client_ca: bytes | None = None,
        gpus: int = 0,
        gpu_memory: str = "16Gi",
    ) -> None:
        self.client = client
        # the nodes' kubelet port (/stats/summary, /metrics/resource; pyk8s.sim.kubelet_server): None serves none,
        # 0 a free port; the nodes then get loopback InternalIPs the server tells them apart by
        self.kubelet_port = kubelet_port
        self.client_ca = client_ca
        self.kubelet_server: Any = None
        self.node_by_ip: dict[str, str] = {}
        self.started_at = time.time()
        self.template = NodeTemplate(
            cpu=str(cpu), memory=str(memory), pods=str(pods),
            labels=parse_labels(labels) if isinstance(labels, str) else dict(labels or {}),
            taints=parse_taints(taints) if isinstance(taints, str) else list(taints or []),
        )
        self.gpus = SimGPUs(gpus, gpu_memory) if gpus > 0 else None
        if self.gpus is not None:
            self.template.extended.update(self.gpus.capacity())
            self.template.labels = {**self.gpus.labels(), **self.template.labels}
        self.name_prefix = name_prefix
        self.lease_period = lease_period
        self.status_period = status_period
        self.creating_seconds = creating_seconds
        self.delete_delay = delete_delay
        self.crash_backoff = crash_backoff
        self.max_crash_backoff = max_crash_backoff
        self.manage_pods = manage_pods
        self.delete_nodes_on_stop = delete_nodes_on_stop
        self.nodes: dict[str, SimNode] = {}
        self.pods: dict[str, SimPod] = {}
        self.pods_by_node: dict[str, set[str]] = collections.defaultdict(set)
        self.wheel = TimerWheel()
        self.writer = Writer(concurrency)
        self.writer.retry_later = self._retry_later
        self._node_informer: Informer | None = None
        self._pod_informer: Informer | None = None
        self._registered = 0
        self._all_registered = asyncio.Event()
        self._started = False
        self.lease_renewals = 0
        self.status_writes = 0
        self.pod_writes = 0
        for i in range(start_index, start_index + nodes):
            self._add(f"{name_prefix}{i}", i)

    # ---- public API ---------------------------------------------------------------------------
    async def start(self, wait_synced: float = 60.0) -> None:
        if self.kubelet_port is not None:
            from .kubelet_server import SimKubeletServer

            if not self.client_ca:
                raise ValueError("a simulated kubelet port needs the cluster CA (client_ca) to verify client certs")
            self.kubelet_server = SimKubeletServer(self, self.client, self.client_ca, self.kubelet_port)
            try:
                await self.kubelet_server.start()
            except OSError as e:
                self.kubelet_server = None
                raise ValueError(f"kubelet port {self.kubelet_port}: {e.strerror or e}") from e
            self.template.kubelet_port = self.kubelet_server.port
        self._started = True
        self.wheel.start()
        self.writer.start()
        self._node_informer = Informer(self.client, NODES, label_selector=f"{SIM_LABEL}=true")
        self._node_informer.add_handlers(self._on_node, lambda old, new: self._on_node(new), self._on_node_deleted)
        self._node_informer.start()
        if self.manage_pods:
            # A field selector cannot name thousands of nodes: watch every pod and keep ours.
            self._pod_informer = Informer(self.client, PODS)
            self._pod_informer.add_handlers(self._on_pod, lambda old, new: self._on_pod(new), self._on_pod_deleted)
            self._pod_informer.start()
        for node in list(self.nodes.values()):
            self._submit_register(node)
        waits = [i.wait_synced(wait_synced) for i in (self._node_informer, self._pod_informer) if i is not None]
        await asyncio.gather(*waits)

    async def wait_nodes_registered(self, timeout: float | None = None) -> None:
        await asyncio.wait_for(self._all_registered.wait(), timeout)

    async def stop(self) -> None:
        for inf in (self._pod_informer, self._node_informer):
            if inf is not None:
                await inf.stop()
        await self.wheel.stop()
        if self.kubelet_server is not None:
            await self.kubelet_server.stop()
        if self.delete_nodes_on_stop:
            for name in list(self.nodes):
                self.writer.submit(("delete-node", name), self._deleter(name), high=True)
            try:
                await self.writer.drain(60)
            except TimeoutError:
                pass
        await self.writer.stop()

    def add_nodes(self, count: int, start_index: int | None = None) -> list[str]:
        """More nodes at run time (named on from the highest index so far)."""
        first = start_index if start_index is not None else max((n.index for n in self.nodes.values()), default=-1) + 1
        names = []
        for i in range(first, first + count):
            node = self._add(f"{self.name_prefix}{i}", i)
            names.append(node.name)
            if self._started:
                self._submit_register(node)
        return names

    def stop_heartbeat(self, name: str) -> None:
        """The node's kubelet goes silent: no lease renewals, no status, no pod updates."""
        node = self.nodes[name]
        node.api_stopped = True
        self._heartbeat_changed(node)

    def resume_heartbeat(self, name: str) -> None:
        node = self.nodes[name]
        node.api_stopped = False
        self._heartbeat_changed(node)

    def stats(self) -> dict[str, Any]:
        stages = collections.Counter(p.reported for p in self.pods.values())  # what the API shows, not our plans
        ready = sum(1 for n in self.nodes.values() if n.registered and n.heartbeating)
        return {"nodes": len(self.nodes), "registered": self._registered, "ready": ready,
                "pods": len(self.pods), "creating": stages["creating"] + stages[""], "running": stages["running"],
                "backoff": stages["backoff"], "exited": stages["exited"], "queued_writes": self.writer.pending(),
                "writes": self.writer.done, "failed_writes": self.writer.failed,
                "write_latency_ms": self.writer.latency * 1000,
                "lease_renewals": self.lease_renewals, "status_writes": self.status_writes,
                "pod_writes": self.pod_writes}

    # ---- nodes --------------------------------------------------------------------------------
    def _add(self, name: str, index: int) -> SimNode:
        node = self.nodes.get(name)
        if node is None:
            node = new_sim_node(name, index, loopback=self.kubelet_port is not None)
            self.nodes[name] = node
            self.node_by_ip[node.internal_ip] = name
            self._all_registered.clear()
        return node

    def _submit_register(self, node: SimNode) -> None:
        self.writer.submit(("node", node.name), lambda: self._register(node), high=True)

    async def _register(self, node: SimNode) -> None:
        if self.nodes.get(node.name) is not node:
            return
        now = time.time()
        if not node.registered:
            try:
                created = await self.client.create(NODES, node_object(self.template, node, rfc3339(now)))
            except StatusError as e:
                if e.code != 409:
                    raise
                # already there (a previous run, or someone else's node of that name): take it over
                created = await self.client.get(NODES, node.name)
                await self._write_status(node, adopt=created)
            self._remember(node, created)
            node.registered = True
            node.last_status = now
            self._registered += 1
            if self.gpus is not None:  # the GPU DRA driver's slice (docs/dra.md)
                gpus = self.gpus
                self.writer.submit(("slice", node.name), lambda: gpus.publish_slice(self.client, node.name), high=True)
            if self._registered >= len(self.nodes):
                self._all_registered.set()
        if not node.lease_created:
            await self._renew(node, create=True)
        # stagger: node i renews first after a fraction of the period that is evenly spread for any N
        frac = ((node.index * _GOLDEN) % 1.0) or 1.0
        self._schedule_lease(node, self.lease_period * frac)
        self._schedule_status(node, self.status_period * frac)
        for uid in list(self.pods_by_node.get(node.name, ())):  # pods that waited for their node
            sp = self.pods.get(uid)
            if sp is not None:
                self._sync_pod(sp)

    def _remember(self, node: SimNode, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        node.uid = md.get("uid") or node.uid
        cidr = (obj.get("spec") or {}).get("podCIDR")
        if cidr and cidr != node.pod_cidr and not node.ips_in_use:
            node.pod_cidr = cidr

    def _schedule_lease(self, node: SimNode, delay: float) -> None:
        if node.heartbeating:
            self.wheel.schedule(("lease", node.name), delay, lambda: self._lease_due(node))

    def _lease_due(self, node: SimNode) -> None:
        if self.nodes.get(node.name) is not node or not node.heartbeating:
            return
        self._schedule_lease(node, self.lease_period)  # the next one, independent of how long this write takes
        self.writer.submit(("lease", node.name), lambda: self._renew(node), high=True)

    async def _renew(self, node: SimNode, create: bool = False) -> None:
        if not node.heartbeating and not create:
            return
        renew = micro_time(time.time())
        try:
            if create:
                await self.client.create(LEASES, lease_object(node, renew), namespace=LEASE_NAMESPACE)
            else:
                # kubelets PUT their cached Lease; a merge patch of renewTime is the same write without
                # a read or a conflict
                await self.client.patch(LEASES, node.name, {"spec": {"renewTime": renew,
                                                                      "holderIdentity": node.name}},
                                        namespace=LEASE_NAMESPACE)
        except StatusError as e:
            if create and e.code == 409:
                return await self._renew(node)
            if not create and e.code == 404:
                return await self._renew(node, create=True)
            raise
        node.lease_created = True
        node.last_lease_renew = time.time()
        self.lease_renewals += 1

    def _schedule_status(self, node: SimNode, delay: float) -> None:
        if node.heartbeating:
            self.wheel.schedule(("status", node.name), delay, lambda: self._status_due(node))

    def _status_due(self, node: SimNode) -> None:
        if self.nodes.get(node.name) is not node or not node.heartbeating:
            return
        self._schedule_status(node, self.status_period)
        self.writer.submit(("status", node.name), lambda: self._write_status(node), high=True)

    async def _write_status(self, node: SimNode, adopt: dict[str, Any] | None = None) -> None:
        if not node.heartbeating and adopt is None:
            return
        now = rfc3339(time.time())
        current = adopt or (self._node_informer.get(node.name) if self._node_informer else None)
        since = transition_times(current)  # e.g. Unknown from the node lifecycle controller: Ready moves now
        if adopt is not None:
            # a node of a previous run: bring its whole status back to ours
            status = node_status(self.template, node, now, since)
        else:
            status = {"conditions": node_conditions(now, since)}
        try:
            obj = await self.client.patch(NODES, node.name, {"status": status}, sub="status")
        except StatusError as e:
            if e.code == 404:
                return  # deleted: the node informer forgets it
            raise
        self._remember(node, obj)
        node.last_status = time.time()
        self.status_writes += 1

    def _heartbeat_changed(self, node: SimNode) -> None:
        if node.heartbeating:
            if node.registered:
                self._schedule_lease(node, 0)
                self._schedule_status(node, 0)
                for uid in list(self.pods_by_node.get(node.name, ())):
                    sp = self.pods.get(uid)
                    if sp is not None:
                        self._resync_pod(sp)
        else:
            self.wheel.cancel(("lease", node.name))
            self.wheel.cancel(("status", node.name))

    def _on_node(self, obj: dict[str, Any]) -> None:
        md = obj.get("metadata") or {}
        node = self.nodes.get(md.get("name", ""))
        if node is None:
            return
        self._remember(node, obj)
        stopped = ((md.get("annotations") or {}).get(HEARTBEAT_ANNOTATION) or "").lower() == "false"
        if stopped != node.annotation_stopped:
            node.annotation_stopped = stopped
            self._heartbeat_changed(node)
        elif node.registered and node.heartbeating:
            ready: dict[str, Any] = next((c for c in (obj.get("status") or {}).get("conditions") or []
                                          if c.get("type") == "Ready"), {})
            if ready.get("status") != "True":
                # someone (the node lifecycle controller) says we are not Ready: a kubelet corrects it
                # at its next status sync, ~10 s later
                self._schedule_status(node, min(10.0, self.status_period))

    def _on_node_deleted(self, obj: dict[str, Any]) -> None:
        name = (obj.get("metadata") or {}).get("name", "")
        node = self.nodes.get(name)
        if node is None or not node.registered or (node.uid and node.uid != (obj.get("metadata") or {}).get("uid")):
            return
        # A kubelet whose Node is deleted keeps failing its status updates; we stop simulating it.
        log.info("simulated node %s was deleted; no longer simulating it", name)
        del self.nodes[name]
        if self.node_by_ip.get(node.internal_ip) == name:
            del self.node_by_ip[node.internal_ip]
        self._registered -= 1
        self.wheel.cancel(("lease", name))
        self.wheel.cancel(("status", name))
        for uid in list(self.pods_by_node.pop(name, ())):
            self._forget_pod(uid)

    def _deleter(self, name: str) -> Job:
        async def run() -> None:
            await self.client.delete_ignore_missing(NODES, name)
            await self.client.delete_ignore_missing(LEASES, name, namespace=LEASE_NAMESPACE)
            if self.gpus is not None:
                await self.gpus.delete_slice(self.client, name)
        return run

    def _retry_later(self, key: Hashable, job: Job, prio: int, delay: float) -> None:
        high = isinstance(key, tuple) and key[0] in ("node", "lease", "status", "delete-node")
        self.wheel.schedule(("retry", key), delay, lambda: self.writer.submit(key, job, high=high))

    # ---- pods ---------------------------------------------------------------------------------
    def _on_pod(self, pod: dict[str, Any]) -> None:
        node_name = (pod.get("spec") or {}).get("nodeName")
        if not node_name or node_name not in self.nodes:
            return
        md = pod.get("metadata") or {}
        uid = md.get("uid", "")
        sp = self.pods.get(uid)
        if sp is None:
            sp = SimPod(uid=uid, namespace=md.get("namespace", ""), name=md.get("name", ""), node=node_name, pod=pod)
            self.pods[uid] = sp
            self.pods_by_node[node_name].add(uid)
        else:
            sp.pod = pod
            if self.kubelet_server is not None and sp.stage == "running":
                self.kubelet_server.pod_changed(uid, node_name, pod, sp.started_at)
        self._sync_pod(sp)

    def _on_pod_deleted(self, pod: dict[str, Any]) -> None:
        self._forget_pod((pod.get("metadata") or {}).get("uid", ""))

    def _forget_pod(self, uid: str) -> None:
        sp = self.pods.pop(uid, None)
        if sp is None:
            return
        self.wheel.cancel(("pod", uid))
        self.pods_by_node.get(sp.node, set()).discard(uid)
        if self.kubelet_server is not None:
            self.kubelet_server.pod_gone(uid, sp.node)
        node = self.nodes.get(sp.node)
        if node is not None and sp.stage != "exited":
            node.release_ip(sp.pod_ip)

    def _sync_pod(self, sp: SimPod) -> None:
        """React to the pod as the API shows it now; every write and timer starts here or in a step below."""
        node = self.nodes.get(sp.node)
        if node is None or not node.registered or not node.heartbeating:
            return  # a silent kubelet does nothing; we look again when it comes back
        pod = sp.pod
        md = pod.get("metadata") or {}
        if md.get("deletionTimestamp"):
            if not sp.deleting:
                sp.deleting = True
                grace = md.get("deletionGracePeriodSeconds")
                delay = random.uniform(*self.delete_delay)
                if grace is not None:
                    delay = min(float(grace), delay)
                self.wheel.schedule(("pod", sp.uid), delay,
                                    lambda: self.writer.submit(("pod", sp.uid), self._pod_deleter(sp)))
            return
        if self.gpus is not None:
            self._allocate_gpu_share(sp)
        if sp.stage == "new":
            if self._adopt(sp, node):
                return
            sp.stage = "creating"
            sp.start_time = time.time()
            sp.ready = self._wants_ready(pod)
            if self.creating_seconds > 0:
                self._write_pod(sp)
                self.wheel.schedule(("pod", sp.uid), self.creating_seconds, lambda: self._to_running(sp))
            else:
                self._to_running(sp)
            return
        if sp.stage == "running":
            want = self._wants_ready(pod)
            if want != sp.ready:
                sp.ready = want
                self._write_pod(sp)
        if sp.stage == "running" and not sp.exit_scheduled and exit_plan(pod) is not None:
            self._schedule_exit(sp)

    def _allocate_gpu_share(self, sp: SimPod) -> None:
        """What the GPU plugin's Allocate does for a gpu-mem pod, once per pod (see sim/gpus.py)."""
        assert self.gpus is not None
        others = [o.pod for uid in self.pods_by_node.get(sp.node, ()) if uid != sp.uid and (o := self.pods.get(uid))]
        patch = self.gpus.allocation_patch(sp.pod, sp.node, others)
        if patch is None or sp.gpu_allocated:
            return
        sp.gpu_allocated = True
        # seen at once by the node's next allocation, before the informer brings the write back
        md = sp.pod.get("metadata") or {}
        sp.pod = {**sp.pod, "metadata": {**md, "annotations": {**(md.get("annotations") or {}),
                                                              **patch["metadata"]["annotations"]}}}

        async def write() -> None:
            try:
                await self.client.patch(PODS, sp.name, patch, namespace=sp.namespace, patch_type="merge")
            except StatusError as e:
                if e.code not in (404, 409):
                    raise

        self.writer.submit(("gpu", sp.uid), write, high=True)

    def _resync_pod(self, sp: SimPod) -> None:
        """After a silence: rewrite what we own (others may have marked the pods not ready) and go on
        from the step the pod was at, with fresh timers."""
        self.wheel.cancel(("pod", sp.uid))
        if sp.deleting:
            sp.deleting = False  # re-arms the deletion below
        elif sp.stage == "creating":
            self._write_pod(sp)
            self.wheel.schedule(("pod", sp.uid), self.creating_seconds, lambda: self._to_running(sp))
        elif sp.stage == "backoff":
            self._write_pod(sp)
            self._restart_later(sp)
        elif sp.stage in ("running", "exited"):
            self._write_pod(sp)
            sp.exit_scheduled = False
        self._sync_pod(sp)

    def _adopt(self, sp: SimPod, node: SimNode) -> bool:
        """A pod this node already reported on (a previous run of the simulator): continue from its status."""
        st = sp.pod.get("status") or {}
        phase = st.get("phase")
        cstats = st.get("containerStatuses") or []
        ours = bool(cstats) and all((c.get("containerID") or "").startswith("sim://") for c in cstats)
        if phase in ("Succeeded", "Failed"):
            sp.stage = sp.reported = "exited"
            return True
        if phase != "Running" or not ours:
            return False
        from ..api.timefmt import parse_time_or_none

        sp.stage = sp.reported = "running"
        sp.start_time = parse_time_or_none(st.get("startTime")) or time.time()
        sp.restarts = max(int(c.get("restartCount") or 0) for c in cstats)
        running = [(c.get("state") or {}).get("running") for c in cstats]
        sp.started_at = min((parse_time_or_none(r.get("startedAt")) or time.time() for r in running if r),
                            default=time.time())
        sp.pod_ip = st.get("podIP")
        if sp.pod_ip:
            node.reserve_ip(sp.pod_ip)
        sp.ready = all(c.get("ready") for c in cstats)
        if not all(running):
            sp.stage = sp.reported = "backoff"
            sp.finished_at = time.time()
            self._restart_later(sp)
            return True
        if sp.ready != self._wants_ready(sp.pod):
            sp.ready = self._wants_ready(sp.pod)
            self._write_pod(sp)
        if exit_plan(sp.pod) is not None:
            self._schedule_exit(sp)
        return True

    @staticmethod
    def _wants_ready(pod: dict[str, Any]) -> bool:
        ann = (pod.get("metadata") or {}).get("annotations") or {}
        return (ann.get(ANN_READY) or "true").lower() != "false"

    def _alive(self, sp: SimPod) -> bool:
        node = self.nodes.get(sp.node)
        return self.pods.get(sp.uid) is sp and not sp.deleting and node is not None and node.heartbeating

    def _to_running(self, sp: SimPod) -> None:
        if not self._alive(sp):
            return
        node = self.nodes[sp.node]
        sp.stage = "running"
        sp.started_at = time.time()
        if not sp.pod_ip:
            sp.pod_ip = node.allocate_ip()
        self._write_pod(sp)
        sp.exit_scheduled = False
        if exit_plan(sp.pod) is not None:
            self._schedule_exit(sp)

    def _schedule_exit(self, sp: SimPod) -> None:
        plan = exit_plan(sp.pod)
        if plan is None:
            return
        sp.exit_scheduled = True
        ran = time.time() - sp.started_at
        self.wheel.schedule(("pod", sp.uid), max(plan[0] - ran, 0.0), lambda: self._exit(sp))

    def _exit(self, sp: SimPod) -> None:
        if not self._alive(sp) or sp.stage != "running":
            return
        plan = exit_plan(sp.pod)
        if plan is None:
            return
        sp.exit_code = plan[1]
        sp.finished_at = time.time()
        sp.exit_scheduled = False
        if restarts_after_exit(sp.pod, sp.exit_code):
            sp.stage = "backoff"
            self._restart_later(sp)
        else:
            sp.stage = "exited"
            node = self.nodes.get(sp.node)
            if node is not None:
                node.release_ip(sp.pod_ip)  # the sandbox is gone; the status keeps the IP, as upstream's does
        self._write_pod(sp)

    def _restart_later(self, sp: SimPod) -> None:
        # the kubelet's container backoff: 10 s doubling per restart up to 5 min
        sp.backoff = min(self.crash_backoff * (2 ** sp.restarts), self.max_crash_backoff)
        self.wheel.schedule(("pod", sp.uid), sp.backoff, lambda: self._restart(sp))

    def _restart(self, sp: SimPod) -> None:
        if not self._alive(sp) or sp.stage != "backoff":
            return
        sp.restarts += 1
        sp.prev_started_at = sp.started_at
        self._to_running(sp)

    def _write_pod(self, sp: SimPod) -> None:
        self.writer.submit(("pod", sp.uid), lambda: self._patch_pod(sp))

    async def _patch_pod(self, sp: SimPod) -> None:
        node = self.nodes.get(sp.node)
        if self.pods.get(sp.uid) is not sp or node is None or sp.deleting:
            return
        status = pod_status(sp, node.internal_ip, time.time())  # built now: the newest state wins
        stage = sp.stage
        try:
            await self.client.patch(PODS, sp.name, {"status": status}, namespace=sp.namespace, sub="status")
        except StatusError as e:
            if e.code in (404, 409, 422):
                if e.code == 422:
                    log.warning("sim: status of pod %s/%s rejected: %s", sp.namespace, sp.name, e)
                return
            raise
        sp.reported = stage
        self.pod_writes += 1

    def _pod_deleter(self, sp: SimPod) -> Job:
        async def run() -> None:
            node = self.nodes.get(sp.node)
            if node is None or not node.heartbeating:
                return  # a silent kubelet deletes nothing; _resync_pod re-arms this
            # the kubelet's final delete once containers are gone: grace 0, only this incarnation
            try:
                await self.client.request("DELETE", f"/api/v1/namespaces/{sp.namespace}/pods/{sp.name}",
                                          {"gracePeriodSeconds": 0, "preconditions": {"uid": sp.uid}})
            except StatusError as e:
                if e.code not in (404, 409):
                    raise
        return run
