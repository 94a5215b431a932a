"""Node lifecycle controller (upstream's pkg/controller/nodelifecycle) with the taint
eviction manager (pkg/controller/tainteviction) built in.

Health: a node is heard from when its kube-node-lease Lease is renewed or its Ready
condition's heartbeat moves. Silent for longer than the grace period (40 s;
`node_monitor_grace_period`; 60 s before a node first posts status), its Ready,
MemoryPressure, DiskPressure and PIDPressure conditions become Unknown with reason
NodeStatusUnknown, and pods on it are marked not ready.

Taints: NoSchedule taints follow the conditions (taint-nodes-by-condition) and
spec.unschedulable; NoExecute not-ready/unreachable taints follow Ready=False/Unknown,
added at a per-zone rate (0.1 node/s, none while every zone is fully disrupted).

Eviction: pods on a node with NoExecute taints they do not tolerate are deleted at
once; tolerated for tolerationSeconds, they are deleted when that runs out
(TaintManagerEviction events), unless the taint goes first.
"""

from __future__ import annotations

import asyncio
import logging
import os
import time
from dataclasses import dataclass
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import format_time
from .base import GVRS, Controller, ControllerContext, split_key
from .nodelifecycle_taints import (
    CONDITION_TAINT_KEYS,
    NOT_READY,
    UNREACHABLE,
    condition_no_schedule_taints,
    matching_tolerations,
    min_toleration_seconds,
    no_execute_taints,
)

log = logging.getLogger("pyk8s.controllers.nodelifecycle")

__all__ = ["NodeLifecycleController"]

LEASE_NS = "kube-node-lease"
ZONE_LABEL = "topology.kubernetes.io/zone"
REGION_LABEL = "topology.kubernetes.io/region"
CONDITIONS = ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure")
NODE_INDEX = "pyk8s.nodelifecycle/nodeName"
UNHEALTHY_ZONE_THRESHOLD = 0.55
LARGE_CLUSTER_THRESHOLD = 50


def option(ctx: ControllerContext, name: str, default: float) -> float:
    """A controller option: ControllerContext.options, else env PYK8S_<NAME> (lets tests shorten periods)."""
    v = ctx.options.get(name)
    if v is None:
        v = os.environ.get("PYK8S_" + name.upper())
    return float(v) if v not in (None, "") else default


@dataclass
class _Health:
    probe: float  # when we last heard from the node (monotonic)
    heartbeat: str | None  # Ready condition's lastHeartbeatTime as last seen
    lease_renew: str | None
    ready_status: str | None  # Ready status seen at the previous check


def _cond(node: dict[str, Any], typ: str) -> dict[str, Any] | None:
    for c in (node.get("status") or {}).get("conditions") or []:
        if c.get("type") == typ:
            return c
    return None


def _zone(node: dict[str, Any]) -> str:
    labels = node["metadata"].get("labels") or {}
    region, zone = labels.get(REGION_LABEL, ""), labels.get(ZONE_LABEL, "")
    return f"{region}:\x00:{zone}" if region or zone else ""


class _Bucket:
    """A token bucket (burst 1) for NoExecute tainting in one zone."""

    def __init__(self, qps: float) -> None:
        self.qps = qps
        self.tokens = 1.0
        self.last = time.monotonic()

    def take(self) -> float:
        """0 if a token was taken now, else seconds to wait (inf when the rate is 0)."""
        now = time.monotonic()
        if self.qps > 0:
            self.tokens = min(1.0, self.tokens + (now - self.last) * self.qps)
        self.last = now
        if self.tokens >= 1.0:
            self.tokens -= 1.0
            return 0.0
        return (1.0 - self.tokens) / self.qps if self.qps > 0 else float("inf")


class NodeLifecycleController(Controller):
    name = "nodelifecycle"
    workers = 4
    component = "node-controller"

    def setup(self) -> None:
        o = self.ctx
        self.grace = option(o, "node_monitor_grace_period", 40.0)
        self.startup_grace = option(o, "node_startup_grace_period", 60.0)
        self.period = option(o, "node_monitor_period", min(5.0, self.grace / 4))
        self.eviction_qps = option(o, "node_eviction_rate", 0.1)
        self.secondary_qps = option(o, "secondary_node_eviction_rate", 0.01)
        self.taint_recorder = o.recorder("taint-eviction-controller")
        self.nodes = o.informer("nodes")
        self.leases = o.informers.informer(GVRS["leases"], LEASE_NS)
        self.pods = o.informer("pods")
        self.pods.add_index(NODE_INDEX, lambda p: [n] if (n := (p.get("spec") or {}).get("nodeName")) else [])
        self.health: dict[str, _Health] = {}
        self.zone_states: dict[str, str] = {}
        self.buckets: dict[str, _Bucket] = {}
        self.all_disrupted = False
        # taint eviction: pod key -> (created_at, fire_at, timer)
        self.scheduled: dict[str, tuple[float, float, asyncio.TimerHandle]] = {}
        self.nodes.add_handlers(on_add=self._node_added, on_update=self._node_updated, on_delete=self._node_deleted)
        self.leases.add_handlers(on_add=self._lease, on_update=lambda o, n: self._lease(n))
        self.pods.add_handlers(on_add=self._pod_changed, on_update=lambda o, n: self._pod_changed(n, o),
                               on_delete=self._pod_deleted)

    # ---- events -------------------------------------------------------------------------
    def _node_added(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.recorder.event(_node_ref(node), "Normal", "RegisteredNode",
                            f"Node {name} event: Registered Node {name} in Controller")
        self.queue.add(("node", name))

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        self.queue.add(("node", new["metadata"]["name"]))
        if no_execute_taints(old) != no_execute_taints(new):
            self.queue.add(("taints", new["metadata"]["name"]))

    def _node_deleted(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.health.pop(name, None)
        self.recorder.event(_node_ref(node), "Normal", "RemovingNode",
                            f"Node {name} event: Removing Node {name} from Controller")
        self.queue.add(("taints", name))

    def _lease(self, lease: dict[str, Any]) -> None:
        h = self.health.get(lease["metadata"]["name"])
        renew = (lease.get("spec") or {}).get("renewTime")
        if h is not None and renew and renew != h.lease_renew:
            h.lease_renew = renew
            h.probe = time.monotonic()

    def _pod_changed(self, pod: dict[str, Any], old: dict[str, Any] | None = None) -> None:
        if not (pod.get("spec") or {}).get("nodeName"):
            return
        if old is not None and (old.get("spec") or {}).get("nodeName") == pod["spec"]["nodeName"] \
                and (old.get("spec") or {}).get("tolerations") == pod["spec"].get("tolerations") \
                and (old.get("status") or {}).get("conditions") == (pod.get("status") or {}).get("conditions"):
            return
        self.queue.add(("pod", _key(pod)))

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        self._cancel(_key(pod), event=False)

    # ---- loop ---------------------------------------------------------------------------
    async def run(self) -> None:
        monitor = asyncio.create_task(self._monitor())
        try:
            await super().run()
        finally:
            monitor.cancel()
            for _, _, t in self.scheduled.values():
                t.cancel()

    async def _monitor(self) -> None:
        while True:
            try:
                self._zones()
                for n in self.nodes.list():
                    self.queue.add(("node", n["metadata"]["name"]))
            except Exception:
                log.exception("node health monitor")
            await asyncio.sleep(self.period)

    def _zones(self) -> None:
        """Zone states from Ready conditions (upstream's computeZoneStateFunc) and eviction rates."""
        counts: dict[str, list[int]] = {}
        for n in self.nodes.list():
            c = counts.setdefault(_zone(n), [0, 0])
            ready = (_cond(n, "Ready") or {}).get("status") == "True"
            c[0 if ready else 1] += 1
        states = {}
        for z, (ready, not_ready) in counts.items():
            if ready == 0 and not_ready > 0:
                states[z] = "FullDisruption"
            elif not_ready > 2 and not_ready / (ready + not_ready) >= UNHEALTHY_ZONE_THRESHOLD:
                states[z] = "PartialDisruption"
            else:
                states[z] = "Normal"
        all_disrupted = bool(states) and all(s == "FullDisruption" for s in states.values())
        if all_disrupted and not self.all_disrupted:
            # info, as upstream logs it: a fresh one-node cluster passes through this while its kubelet starts
            log.info("Controller detected that all Nodes are not-Ready. Entering master disruption mode.")
        if not all_disrupted and self.all_disrupted:
            log.info("Controller detected that some Nodes are Ready. Exiting master disruption mode.")
            # as upstream: start the grace period afresh for everyone
            now = time.monotonic()
            for h in self.health.values():
                h.probe = now
        self.all_disrupted = all_disrupted
        for z, st in states.items():
            size = sum(counts[z])
            qps = self.eviction_qps if st in ("Normal", "FullDisruption") else \
                (self.secondary_qps if size > LARGE_CLUSTER_THRESHOLD else 0.0)
            b = self.buckets.get(z)
            if b is None:
                self.buckets[z] = _Bucket(qps)
            else:
                b.qps = qps
        self.zone_states = states

    # ---- sync ---------------------------------------------------------------------------
    async def sync(self, key: Any) -> None:
        kind, name = key
        if kind == "node":
            await self._sync_node(name)
        elif kind == "taints":
            for p in self.pods.by_index(NODE_INDEX, name):
                self.queue.add(("pod", _key(p)))
        elif kind == "pod":
            await self._sync_pod(name)
        elif kind == "evict":
            await self._evict(name)

    async def _sync_node(self, name: str) -> None:
        node = self.nodes.get(name)
        if node is None:
            return
        node = await self._update_health(node)
        if node is None:
            return
        ready = _cond(node, "Ready")
        status = (ready or {}).get("status")
        if ready is not None and status != "True":
            # (a node without a Ready condition has just registered: upstream leaves its pods alone)
            await self._mark_pods_not_ready(node)
        await self._no_schedule_taints(node)
        await self._no_execute_taints(node, status)

    async def _update_health(self, node: dict[str, Any]) -> dict[str, Any] | None:
        """Upstream's tryUpdateNodeHealth: mark a silent node's conditions Unknown."""
        name = node["metadata"]["name"]
        now = time.monotonic()
        ready = _cond(node, "Ready")
        hb = (ready or {}).get("lastHeartbeatTime")
        h = self.health.get(name)
        if h is None:
            lease = self.leases.get(f"{LEASE_NS}/{name}")
            h = self.health[name] = _Health(now, hb, ((lease or {}).get("spec") or {}).get("renewTime"),
                                            (ready or {}).get("status"))
        elif hb != h.heartbeat:
            h.heartbeat, h.probe = hb, now
        grace = self.startup_grace if ready is None else self.grace
        prev_status, h.ready_status = h.ready_status, (ready or {}).get("status")
        if now - h.probe <= grace:
            if prev_status == "True" and h.ready_status not in (None, "True"):
                self._not_ready_event(node)
            return node
        stamp = format_time(time.time())
        conds = [dict(c) for c in (node.get("status") or {}).get("conditions") or []]
        by_type = {c.get("type"): c for c in conds}
        changed = False
        for typ in CONDITIONS:
            c = by_type.get(typ)
            if c is None:
                conds.append({"type": typ, "status": "Unknown", "reason": "NodeStatusNeverUpdated",
                              "message": "Kubelet never posted node status.",
                              "lastHeartbeatTime": node["metadata"].get("creationTimestamp"),
                              "lastTransitionTime": stamp})
                changed = True
            elif c.get("status") != "Unknown":
                c.update(status="Unknown", reason="NodeStatusUnknown", message="Kubelet stopped posting node status.",
                         lastTransitionTime=stamp)
                changed = True
        if not changed:
            return node
        try:
            node = await self.client.patch(GVRS["nodes"], name, {
                "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                "status": {"conditions": conds}}, sub="status")
        except StatusError as e:
            if e.code == 404:
                return None
            raise
        h.heartbeat = (_cond(node, "Ready") or {}).get("lastHeartbeatTime")
        h.ready_status = "Unknown"
        if prev_status == "True":
            self._not_ready_event(node)
        return node

    def _not_ready_event(self, node: dict[str, Any]) -> None:
        name = node["metadata"]["name"]
        self.recorder.event(_node_ref(node), "Normal", "NodeNotReady", f"Node {name} status is now: NodeNotReady")

    async def _mark_pods_not_ready(self, node: dict[str, Any]) -> None:
        """Upstream's MarkPodsNotReady: a pod on a node not known to be ready is not ready either."""
        for pod in self.pods.by_index(NODE_INDEX, node["metadata"]["name"]):
            await self._mark_pod_not_ready(pod)

    async def _mark_pod_not_ready(self, pod: dict[str, Any]) -> None:
        conds = [dict(c) for c in (pod.get("status") or {}).get("conditions") or []]
        for c in conds:
            if c.get("type") == "Ready" and c.get("status") != "False":
                c["status"] = "False"
                c["lastTransitionTime"] = format_time(time.time())
                break
        else:
            return
        md = pod["metadata"]
        try:
            await self.client.patch(GVRS["pods"], md["name"], {
                "metadata": {"resourceVersion": md["resourceVersion"]}, "status": {"conditions": conds}},
                md.get("namespace"), sub="status")
        except StatusError as e:
            if e.code in (404, 409):
                return  # gone, or changed: the next pass looks again
            raise
        self.recorder.event(pod, "Warning", "NodeNotReady", "Node is not ready")

    async def _no_schedule_taints(self, node: dict[str, Any]) -> None:
        want = condition_no_schedule_taints(node)
        have = [t for t in (node.get("spec") or {}).get("taints") or []
                if t.get("effect") == "NoSchedule" and t.get("key") in CONDITION_TAINT_KEYS]
        add = [t for t in want if not any(h.get("key") == t["key"] for h in have)]
        drop = [t for t in have if not any(w["key"] == t.get("key") for w in want)]
        if add or drop:
            await self._swap_taints(node["metadata"]["name"], add, drop)

    async def _no_execute_taints(self, node: dict[str, Any], status: str | None) -> None:
        name = node["metadata"]["name"]
        taints = no_execute_taints(node)
        has_unreachable = any(t.get("key") == UNREACHABLE for t in taints)
        has_not_ready = any(t.get("key") == NOT_READY for t in taints)
        if status == "True" or self.all_disrupted:
            # ready again (or every node is down, when upstream stops evicting): lift the taints
            drop = [t for t in taints if t.get("key") in (UNREACHABLE, NOT_READY)]
            if drop:
                await self._swap_taints(name, [], drop)
            return
        want = UNREACHABLE if status in (None, "Unknown") else NOT_READY
        other = NOT_READY if want == UNREACHABLE else UNREACHABLE
        if (want == UNREACHABLE and has_unreachable) or (want == NOT_READY and has_not_ready):
            if any(t.get("key") == other for t in taints):
                await self._swap_taints(name, [], [{"key": other, "effect": "NoExecute"}])
            return
        if status is None:
            return  # never posted status and still within its startup grace period
        wait = self.buckets.setdefault(_zone(node), _Bucket(self.eviction_qps)).take()
        if wait > 0:
            if wait != float("inf"):
                self.queue.add_after(("node", name), wait)
            return
        drop = [t for t in taints if t.get("key") == other]
        await self._swap_taints(name, [{"key": want, "effect": "NoExecute"}], drop)

    async def _swap_taints(self, name: str, add: list[dict[str, Any]], drop: list[dict[str, Any]]) -> None:
        """Add and remove controller taints in one write (upstream's SwapNodeControllerTaint)."""
        for _ in range(5):
            node = self.nodes.get(name)
            if node is None:
                return
            cur = list((node.get("spec") or {}).get("taints") or [])
            new = [t for t in cur if not any(t.get("key") == d["key"] and t.get("effect") == d["effect"] for d in drop)]
            stamp = format_time(time.time())
            for a in add:
                if not any(t.get("key") == a["key"] and t.get("effect") == a["effect"] for t in new):
                    new.append(dict(a, timeAdded=stamp))
            if new == cur:
                return
            try:
                await self.client.patch(GVRS["nodes"], name, {
                    "metadata": {"resourceVersion": node["metadata"]["resourceVersion"]},
                    "spec": {"taints": new or None}})
                return
            except StatusError as e:
                if e.code == 404:
                    return
                if e.code != 409:
                    raise
            await asyncio.sleep(0.05)  # let the informer catch up with the write that beat us
        raise StatusError(409, "Conflict", f"could not update taints of node {name}")

    # ---- taint eviction -----------------------------------------------------------------
    async def _sync_pod(self, key: str) -> None:
        """Upstream's processPodOnNode: evict now, later, or never."""
        pod = self.pods.get(key)
        if pod is None:
            self._cancel(key, event=False)
            return
        node_name = (pod.get("spec") or {}).get("nodeName")
        node = self.nodes.get(node_name) if node_name else None
        node_ready = _cond(node, "Ready") if node is not None else None
        if node_ready is not None and node_ready.get("status") != "True":
            await self._mark_pod_not_ready(pod)
        taints = no_execute_taints(node) if node is not None else []
        if not taints:
            self._cancel(key, event=True)
            return
        used = matching_tolerations(taints, (pod.get("spec") or {}).get("tolerations") or [])
        if used is None:
            self._cancel(key, event=False)
            self.queue.add(("evict", key))
            return
        secs = min_toleration_seconds(used)
        if secs is None:
            self._cancel(key, event=True)
            return
        now = time.monotonic()
        created, fire = now, now + secs
        prev = self.scheduled.get(key)
        if prev is not None:
            created = prev[0]
            if created + secs >= prev[1]:
                return  # already due no later than that
            fire = created + secs
            prev[2].cancel()
        handle = asyncio.get_running_loop().call_later(max(0.0, fire - now), self.queue.add, ("evict", key))
        self.scheduled[key] = (created, fire, handle)

    def _cancel(self, key: str, event: bool) -> None:
        prev = self.scheduled.pop(key, None)
        if prev is None:
            return
        prev[2].cancel()
        if event:
            pod = self.pods.get(key)
            if pod is not None:
                self.taint_recorder.event(pod, "Normal", "TaintManagerEviction", f"Cancelling deletion of Pod {key}")

    async def _evict(self, key: str) -> None:
        self.scheduled.pop(key, None)
        pod = self.pods.get(key)
        if pod is None or pod["metadata"].get("deletionTimestamp"):
            return
        # check again: the taint may be gone, or tolerated now
        node = self.nodes.get((pod.get("spec") or {}).get("nodeName") or "")
        taints = no_execute_taints(node) if node is not None else []
        used = matching_tolerations(taints, (pod.get("spec") or {}).get("tolerations") or []) if taints else []
        if not taints:
            return
        if used is not None:
            secs = min_toleration_seconds(used)
            if secs is None:
                return
        ns, name = split_key(key)
        self.taint_recorder.event(pod, "Normal", "TaintManagerEviction", f"Marking for deletion Pod {key}")
        conds = [c for c in (pod.get("status") or {}).get("conditions") or [] if c.get("type") != "DisruptionTarget"]
        conds.append({"type": "DisruptionTarget", "status": "True", "reason": "DeletionByTaintManager",
                      "message": "Taint manager: deleting due to NoExecute taint",
                      "lastTransitionTime": format_time(time.time())})
        try:
            await self.client.patch(GVRS["pods"], name, {"status": {"conditions": conds}}, ns, sub="status")
            await self.client.delete(GVRS["pods"], name, ns)
        except StatusError as e:
            if e.code != 404:
                raise


def _key(pod: dict[str, Any]) -> str:
    md = pod["metadata"]
    return f"{md.get('namespace')}/{md['name']}"


def _node_ref(node: dict[str, Any]) -> dict[str, Any]:
    md = node["metadata"]
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": md["name"], "uid": md.get("uid", "")}}

