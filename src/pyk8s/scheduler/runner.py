"""kube-scheduler as an API client: informers feed the pure ``Scheduler``; decisions become API writes.

As upstream's kube-scheduler (v1.33):

- informers on pods, nodes, namespaces, PodDisruptionBudgets, PersistentVolumeClaims,
  Services, ReplicationControllers, ReplicaSets and StatefulSets run in every instance;
  only the holder of the ``kube-system/kube-scheduler`` Lease schedules;
- one scheduling loop pops pods and runs the scheduling cycle synchronously; a chosen node
  is *assumed* in the cache at once and the Binding is POSTed in the background, with many
  bindings in flight (bounded); a failed binding forgets the assumption and retries the pod;
- events are events.k8s.io/v1 with series (client/events_v1.py), as kube-scheduler's;
- a failure records a ``FailedScheduling`` Warning event with upstream's message and sets
  ``PodScheduled=False`` (reason ``Unschedulable`` or ``SchedulerError``) on the pod status;
  success records ``Scheduled``;
- preemption marks each victim ``DisruptionTarget`` (``PreemptionByScheduler``), deletes it
  gracefully and records ``Preempted`` on it, clears lower-priority nominations on that node,
  and sets the preemptor's ``status.nominatedNodeName``;
- pods waiting for scheduling gates get ``PodScheduled=False`` reason ``SchedulingGated``
  (upstream's API server sets it on create; we add it when it is missing).
"""

from __future__ import annotations

import asyncio
import logging
import socket
import time
import uuid
from collections.abc import Mapping
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import now_rfc3339
from ..client import Client, InformerFactory, LeaderElector, resource_path
from ..client.events_v1 import EventsV1Recorder
from ..client.informer import strip_managed_fields
from .cache import Cache
from .dra_binder import DRAView, bind_pod_claims
from .extender import ExtenderError
from .extender_cycle import interested_extenders, schedule_with_extenders
from .framework import Handle
from .gpu_share_binder import annotate_gpu_share
from .metrics import SchedulerMetrics
from .podinfo import DEFAULT_NAMESPACE_LABEL, PodInfo
from .scheduler import Decision, Scheduler
from .selectors import LabelSelector, compile_label_selector, selector_from_set
from .volume_binder import bind_pod_volumes, wire_storage_events

log = logging.getLogger("pyk8s.scheduler")

__all__ = ["SchedulerRunner", "COMPONENT"]

COMPONENT = "default-scheduler"  # event source / reportingComponent, as upstream
LEASE_NAME = "kube-scheduler"

PODS = ("", "v1", "pods")
NODES = ("", "v1", "nodes")
NAMESPACES = ("", "v1", "namespaces")
SERVICES = ("", "v1", "services")
RCS = ("", "v1", "replicationcontrollers")
PVCS = ("", "v1", "persistentvolumeclaims")
PVS = ("", "v1", "persistentvolumes")
STORAGECLASSES = ("storage.k8s.io", "v1", "storageclasses")
PDBS = ("policy", "v1", "poddisruptionbudgets")
REPLICASETS = ("apps", "v1", "replicasets")
STATEFULSETS = ("apps", "v1", "statefulsets")
LEASES = ("coordination.k8s.io", "v1", "leases")

GATED_MESSAGE = "Scheduling is blocked due to non-empty scheduling gates"


def _terminal(pod: Mapping[str, Any]) -> bool:
    # Upstream's pod informer excludes Succeeded/Failed pods (field selector); we filter here.
    return ((pod.get("status") or {}).get("phase")) in ("Succeeded", "Failed")


def _ref(pod: Mapping[str, Any]) -> dict[str, Any]:
    # List items may lack kind/apiVersion; events need them in involvedObject.
    return {"kind": "Pod", "apiVersion": "v1", "metadata": pod.get("metadata") or {}}


def _condition(pod: Mapping[str, Any], ctype: str) -> Mapping[str, Any] | None:
    for c in (pod.get("status") or {}).get("conditions") or ():
        if c.get("type") == ctype:
            return c
    return None


def _condition_patch(pod: Mapping[str, Any], cond: dict[str, Any]) -> dict[str, Any] | None:
    """Upstream UpdatePodCondition: None when nothing changes; lastTransitionTime moves only
    when the status flips."""
    old = _condition(pod, cond["type"])
    if old is not None and all(old.get(k) == cond.get(k) for k in ("status", "reason", "message")):
        return None
    out = dict(cond)
    out["lastProbeTime"] = None
    if old is not None and old.get("status") == cond["status"] and old.get("lastTransitionTime"):
        out["lastTransitionTime"] = old["lastTransitionTime"]
    else:
        out["lastTransitionTime"] = now_rfc3339()
    return out


class SchedulerRunner:
    """The scheduler process: ``await start()`` ... ``await stop()``."""

    def __init__(self, client: Client, config: Mapping[str, Any] | None = None, leader_elect: bool = True,
                 identity: str | None = None, parallel_binds: int = 128,
                 leader_election: Mapping[str, float] | None = None) -> None:
        self.client = client
        self.leader_elect = leader_elect
        self.identity = identity or f"{socket.gethostname()}_{uuid.uuid4()}"
        self.parallel_binds = parallel_binds
        self.leader_election = dict(leader_election or {})
        # as kube-scheduler's informers: no managedFields in the cache; settled objects compacted (memory)
        self.informers = InformerFactory(client, transform=strip_managed_fields, compact=True)
        self.pods = self.informers.informer(PODS)
        self.nodes = self.informers.informer(NODES)
        self.namespaces = self.informers.informer(NAMESPACES)
        self.services = self.informers.informer(SERVICES)
        self.rcs = self.informers.informer(RCS)
        self.pvcs = self.informers.informer(PVCS)
        self.pvs = self.informers.informer(PVS)
        self.storage_classes = self.informers.informer(STORAGECLASSES)
        self.pdbs = self.informers.informer(PDBS)
        self.replicasets = self.informers.informer(REPLICASETS)
        self.statefulsets = self.informers.informer(STATEFULSETS)
        self.dra = DRAView(self.informers)
        handle = Handle(dra=self.dra, cache=Cache(), namespace_labels=self._namespace_labels, pdbs=self._pdbs,
                        workload_selectors=self._workload_selectors, pvc=self._pvc, pv=self.pvs.get,
                        pvs=lambda: list(self.pvs.store.values()), storage_class=self.storage_classes.get)
        self.scheduler = Scheduler(config, handle=handle)
        self.metrics: SchedulerMetrics | None = None  # scheduler_* (scheduler/metrics.py), once enable_metrics()
        # events.k8s.io/v1 with series, as kube-scheduler (a pod failing again and again is one Event and a count)
        self.recorder = EventsV1Recorder(client, COMPONENT)
        self.elector: LeaderElector | None = None
        self.leading = False
        # Counters for tests and benchmarks.
        self.bound = 0
        self.bind_failures = 0
        self.failures = 0
        self._svc_cache: dict[tuple[str, frozenset[tuple[str, str]]], LabelSelector | None] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        self._main: asyncio.Task[None] | None = None
        self._slots: asyncio.Semaphore | None = None
        self._wire()

    # -- lifecycle --------------------------------------------------------------------------

    def enable_metrics(self, component: Any) -> None:
        """Count into `component` (metrics/component.py's ComponentMetrics): scheduler_* and its API client's."""
        self.metrics = SchedulerMetrics(self.scheduler)
        component.add("scheduler", self.metrics)
        self.client.metrics = component.rest_client

    async def start(self, sync_timeout: float = 60.0) -> None:
        """Start the informers, wait for their first list, then run (or wait to win) the election."""
        self.informers.start()
        try:
            await self.informers.wait_synced(sync_timeout)
        except TimeoutError:
            log.warning("scheduler: informers not synced after %.0fs; starting anyway", sync_timeout)
        self._main = asyncio.create_task(self._run(), name="scheduler")

    async def stop(self, release: bool = True) -> None:
        """Stop scheduling; with ``release`` give the Lease up (kube-scheduler's ReleaseOnCancel),
        so a restarted scheduler need not wait for it to expire."""
        was_leading = self.leading or (self.elector is not None and self.elector.is_leader)
        if self._main is not None:
            self._main.cancel()
            try:
                await self._main
            except (asyncio.CancelledError, Exception):
                pass
            self._main = None
        if self._tasks:
            await asyncio.gather(*list(self._tasks), return_exceptions=True)
        if release and was_leading and self.leader_elect:
            await self._release_lease()
        await self.recorder.flush()
        for ext in self.scheduler.extenders:
            await ext.close()
        await self.informers.stop()
        await self.client.close()

    async def _release_lease(self) -> None:
        """As client-go's release(): an empty holder and a 1 s duration."""
        await LeaderElector(self.client, LEASE_NAME, identity=self.identity).release()

    async def _run(self) -> None:
        if not self.leader_elect:
            await self._lead()
            return
        le = self.leader_election
        self.elector = LeaderElector(self.client, LEASE_NAME, identity=self.identity,
                                     lease_duration=le.get("lease_duration", 15.0),
                                     renew_deadline=le.get("renew_deadline", 10.0),
                                     retry_period=le.get("retry_period", 2.0))
        while True:
            await self.elector.run(self._lead)
            log.warning("scheduler %s lost leadership; waiting to lead again", self.identity)

    # -- informer wiring --------------------------------------------------------------------

    def _wire(self) -> None:
        s = self.scheduler
        self.nodes.add_handlers(s.on_node_add, s.on_node_update, s.on_node_delete)
        self.pods.add_handlers(self._pod_add, self._pod_update, self._pod_delete)
        bump = self._bump_services
        wire_storage_events(s.queue, self.pvcs, self.pvs, self.storage_classes)
        self.dra.wire_events(s.queue)
        for inf in (self.services, self.rcs, self.replicasets, self.statefulsets):
            inf.add_handlers(lambda o: bump(), lambda o, n: bump(), lambda o: bump())

    def _bump_services(self) -> None:
        self._svc_cache.clear()

    def _pod_add(self, pod: dict[str, Any]) -> None:
        if _terminal(pod):
            return
        self.scheduler.on_pod_add(pod)
        self._maybe_mark_gated(pod)

    def _pod_update(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if (old.get("metadata") or {}).get("resourceVersion") == (new.get("metadata") or {}).get("resourceVersion"):
            return  # a resync carries nothing new (upstream skips identical versions)
        if _terminal(new):
            if not _terminal(old):
                self.scheduler.on_pod_delete(old)
            return
        if _terminal(old):
            self.scheduler.on_pod_add(new)
            return
        self.scheduler.on_pod_update(old, new)
        self._maybe_mark_gated(new)

    def _pod_delete(self, pod: dict[str, Any]) -> None:
        self.scheduler.on_pod_delete(pod)

    # -- Handle lookups ---------------------------------------------------------------------

    def _namespace_labels(self, ns: str) -> Mapping[str, str] | None:
        obj = self.namespaces.get(ns)
        if obj is None:
            return {DEFAULT_NAMESPACE_LABEL: ns}
        return (obj.get("metadata") or {}).get("labels") or {}

    def _pdbs(self) -> list[Mapping[str, Any]]:
        return list(self.pdbs.list())

    def _pvc(self, ns: str, name: str) -> Mapping[str, Any] | None:
        return self.pvcs.get(f"{ns}/{name}")

    def _workload_selectors(self, pod: PodInfo) -> list[LabelSelector]:
        """Upstream helper.DefaultSelector: the selectors of the Services selecting the pod, and of
        its controller if that is a ReplicationController, ReplicaSet or StatefulSet."""
        out: list[LabelSelector] = []
        svc = self._service_selector(pod.namespace, pod.tmpl.labels)
        if svc is not None:
            out.append(svc)
        owner = next((o for o in (pod.pod.get("metadata") or {}).get("ownerReferences") or () if o.get("controller")),
                     None)
        if owner is not None:
            group = (owner.get("apiVersion") or "").rpartition("/")[0]
            kind = owner.get("kind")
            key = f"{pod.namespace}/{owner.get('name')}"
            if kind == "ReplicationController" and group == "":
                rc = self.rcs.get(key)
                if rc is not None:
                    out.append(selector_from_set((rc.get("spec") or {}).get("selector")))
            elif kind in ("ReplicaSet", "StatefulSet") and group == "apps":
                obj = (self.replicasets if kind == "ReplicaSet" else self.statefulsets).get(key)
                if obj is not None:
                    sel = compile_label_selector((obj.get("spec") or {}).get("selector"))
                    if not sel.nothing:
                        out.append(sel)
        return out

    def _service_selector(self, ns: str, labels: Mapping[str, str]) -> LabelSelector | None:
        # Many pods share labels: memoise per (namespace, labels) until a Service changes.
        key = (ns, frozenset(labels.items()))
        if key in self._svc_cache:
            return self._svc_cache[key]
        merged: dict[str, str] = {}
        for svc in self.services.list(ns):
            sel = (svc.get("spec") or {}).get("selector") or {}
            if sel and all(labels.get(k) == v for k, v in sel.items()):
                merged.update(sel)
        result = selector_from_set(merged) if merged else None
        if len(self._svc_cache) > 65536:
            self._svc_cache.clear()
        self._svc_cache[key] = result
        return result

    # -- the scheduling loop ----------------------------------------------------------------

    async def _lead(self) -> None:
        self.leading = True
        self._slots = asyncio.Semaphore(self.parallel_binds)
        try:
            for pod in list(self.pods.store.values()):
                self._maybe_mark_gated(pod)
            await self._loop()
        finally:
            self.leading = False

    async def _loop(self) -> None:
        slots = self._slots
        assert slots is not None
        queue = self.scheduler.queue
        budget_end = time.monotonic() + 0.005
        while True:
            # Take a binding slot before popping, so nothing is cancelled between pop and bind.
            await slots.acquire()
            try:
                qpi = await queue.pop_wait()
            except BaseException:
                slots.release()
                raise
            t0 = time.perf_counter()
            try:
                exts = interested_extenders(self.scheduler, qpi) if self.scheduler.extenders else None
                d = await schedule_with_extenders(self.scheduler, qpi, exts) if exts else self.scheduler.schedule(qpi)
            except Exception:  # a broken plugin must not stop the loop: retry the pod after backoff
                log.exception("scheduling %s/%s", qpi.pod_info.namespace, qpi.pod_info.name)
                slots.release()
                queue.add_unschedulable_if_not_present(qpi, error=True)
                if self.metrics is not None:
                    self.metrics.attempt("error", qpi.pod_info.tmpl.scheduler_name, time.perf_counter() - t0)
                continue
            if d is not None and self.metrics is not None:
                result = "scheduled" if d.node is not None else (
                    "error" if d.reason == "SchedulerError" else "unschedulable")
                self.metrics.attempt(result, d.profile.scheduler_name, time.perf_counter() - t0)
            if d is None:
                slots.release()
            elif d.node is not None:
                self._spawn(self._bind(d), slots)
            else:
                slots.release()
                self.failures += 1
                self._spawn(self._handle_failure(d))
            # Scheduling is CPU work on the event loop: let informers and bindings run regularly.
            if time.monotonic() >= budget_end:
                await asyncio.sleep(0)
                budget_end = time.monotonic() + 0.005

    def _spawn(self, coro: Any, slots: asyncio.Semaphore | None = None) -> None:
        t = asyncio.ensure_future(coro)
        self._tasks.add(t)

        def done(task: asyncio.Task[Any]) -> None:
            self._tasks.discard(task)
            if slots is not None:
                slots.release()
            if not task.cancelled() and task.exception() is not None:
                log.error("scheduler task failed", exc_info=task.exception())

        t.add_done_callback(done)

    # -- the binding cycle ------------------------------------------------------------------

    async def _bind(self, d: Decision) -> None:
        assert d.node is not None
        p = d.pod
        st = d.profile.run_pre_bind(d.state, p, d.node)
        err: str | None = None
        if not st.is_success():
            err = st.message()
        elif (verr := await self._bind_volumes(d)) is not None:
            err = f'running PreBind plugin "VolumeBinding": {verr}'
        elif (gerr := await annotate_gpu_share(self.client, d.state, p.namespace, p.name,
                                               (p.pod.get("metadata") or {}).get("uid", ""))) is not None:
            err = f'running PreBind plugin "GPUShare": {gerr}'
        elif "DynamicResources" in d.profile.plugins and (cerr := await bind_pod_claims(self.client, d.state, p.pod, self.dra)):
            err = cerr
        elif (binder := next((e for e in self.scheduler.extenders if e.is_binder() and e.is_interested(p)), None)):
            try:
                await binder.bind(p, d.node)
            except ExtenderError as e:
                err = f"extender {binder.name} bind: {e}"
        else:
            try:
                await self.client.request("POST", resource_path(PODS, p.namespace, p.name, "binding"), d.binding)
            except StatusError as e:
                err = f'running Bind plugin "DefaultBinder": {e.message}'
            except Exception as e:  # connection trouble: retried as any binding error
                err = f'running Bind plugin "DefaultBinder": {e}'
        if err is None:
            self.scheduler.binding_done(d, True)
            self.bound += 1
            if self.metrics is not None:
                self.metrics.bound(d.qpi)
            self.recorder.event(_ref(p.pod), None, "Normal", "Scheduled", "Binding",
                                f"Successfully assigned {p.namespace}/{p.name} to {d.node}")
            return
        self.bind_failures += 1
        self.scheduler.binding_done(d, False)
        log.info("binding %s/%s to %s failed: %s", p.namespace, p.name, d.node, err)
        await self._report_failure(d.pod.pod, "SchedulerError", err, "")  # upstream clears the nomination

    async def _bind_volumes(self, d: Decision) -> str | None:
        vb = d.profile.plugins.get("VolumeBinding")
        if vb is None or d.node is None:
            return None
        return await bind_pod_volumes(self.client, d.state, d.node, self._pvc, float(getattr(vb, "bind_timeout", 600)))

    # -- failures and preemption ------------------------------------------------------------

    async def _handle_failure(self, d: Decision) -> None:
        pod = d.pod.pod
        if d.victims and d.nominated_node:
            await self._preempt(d)
        for other in d.clear_nominations:
            await self._patch_status(other.pod, {"nominatedNodeName": None})
        full = d.result.message if d.result is not None and d.result.suggested_host is None else d.message
        await self._report_failure(pod, d.reason or "Unschedulable", full or d.message, d.nominated_node,
                                   event_message=d.message)

    async def _report_failure(self, pod: Mapping[str, Any], reason: str, message: str, nominated: str | None,
                              event_message: str | None = None) -> None:
        """Upstream handleSchedulingFailure: the event, then the PodScheduled condition and nomination."""
        from .messages import truncate_message

        self.recorder.event(_ref(pod), None, "Warning", "FailedScheduling", "Scheduling",
                            event_message or truncate_message(message))
        md = pod.get("metadata") or {}
        cur = self.pods.get(f"{md.get('namespace')}/{md.get('name')}")
        if cur is None or (cur.get("metadata") or {}).get("uid") != md.get("uid"):
            return  # deleted (or replaced) meanwhile
        if (cur.get("spec") or {}).get("nodeName"):
            return  # bound meanwhile (by us or another scheduler)
        status: dict[str, Any] = {}
        cond = _condition_patch(cur, {"type": "PodScheduled", "status": "False", "reason": reason, "message": message})
        if cond is not None:
            status["conditions"] = [cond]
        cur_nom = (cur.get("status") or {}).get("nominatedNodeName") or ""
        if nominated is not None and nominated != cur_nom:
            status["nominatedNodeName"] = nominated or None
        if status:
            await self._patch_status(cur, status)

    async def _preempt(self, d: Decision) -> None:
        """Upstream prepareCandidate: evict every victim (DisruptionTarget condition, graceful
        delete, Preempted event)."""
        preemptor = d.pod.pod
        uid = (preemptor.get("metadata") or {}).get("uid", "")
        node = d.nominated_node
        msg = f"{d.pod.tmpl.scheduler_name}: preempting to accommodate a higher priority pod"

        async def evict(v: PodInfo) -> None:
            victim = self.pods.get(f"{v.namespace}/{v.name}") or v.pod
            if (victim.get("metadata") or {}).get("deletionTimestamp"):
                return  # graceful deletion already started
            cond = _condition_patch(victim, {"type": "DisruptionTarget", "status": "True",
                                             "reason": "PreemptionByScheduler", "message": msg})
            try:
                if cond is not None:
                    await self.client.patch(PODS, v.name, {"status": {"conditions": [cond]}}, v.namespace,
                                            sub="status", patch_type="strategic")
                await self.client.delete(PODS, v.name, v.namespace,
                                         preconditions={"uid": (victim.get("metadata") or {}).get("uid", "")})
            except StatusError as e:
                if e.code == 404:
                    return
                log.warning("preempting %s/%s: %s", v.namespace, v.name, e)
                return
            self.recorder.event(_ref(victim), _ref(preemptor), "Normal", "Preempted", "Preempting",
                                f"Preempted by pod {uid} on node {node}")

        await asyncio.gather(*(evict(v) for v in d.victims))

    async def _patch_status(self, pod: Mapping[str, Any], status: dict[str, Any]) -> None:
        md = pod.get("metadata") or {}
        try:
            await self.client.patch(PODS, md.get("name", ""), {"status": status}, md.get("namespace"),
                                    sub="status", patch_type="strategic")
        except StatusError as e:
            if e.code != 404:
                log.warning("updating status of pod %s/%s: %s", md.get("namespace"), md.get("name"), e)
        except Exception as e:
            log.warning("updating status of pod %s/%s: %s", md.get("namespace"), md.get("name"), e)

    def _maybe_mark_gated(self, pod: Mapping[str, Any]) -> None:
        """PodScheduled=False/SchedulingGated on gated pods we are responsible for."""
        if not self.leading:
            return
        spec = pod.get("spec") or {}
        if not spec.get("schedulingGates") or spec.get("nodeName") or not self.scheduler.responsible_for(pod):
            return
        cond = _condition_patch(pod, {"type": "PodScheduled", "status": "False", "reason": "SchedulingGated",
                                      "message": GATED_MESSAGE})
        if cond is not None:
            self._spawn(self._patch_status(pod, {"conditions": [cond]}))
