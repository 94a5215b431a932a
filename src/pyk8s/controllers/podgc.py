"""Pod garbage collector (upstream's pkg/controller/podgc), every 20 s:

- terminated pods (Succeeded/Failed) beyond `terminated_pod_gc_threshold` (12500) are
  deleted, evicted ones first, then oldest first;
- terminating pods on nodes that are not ready and carry the out-of-service taint;
- orphans: pods bound to a node that does not exist, once the node has stayed missing for
  the quarantine time (40 s) and a live GET confirms it (condition DeletionByPodGC);
- unscheduled pods that are terminating.

Every deletion is forced (grace period 0); a pod not yet terminal is first marked Failed.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import format_time
from .base import GVRS, Controller
from .nodelifecycle import option

log = logging.getLogger("pyk8s.controllers.podgc")

__all__ = ["PodGCController"]

OUT_OF_SERVICE = "node.kubernetes.io/out-of-service"


def _terminal(pod: dict[str, Any]) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def _terminating(pod: dict[str, Any]) -> bool:
    return bool(pod["metadata"].get("deletionTimestamp")) and not _terminal(pod)


def _node_ready(node: dict[str, Any]) -> bool:
    return any(c.get("type") == "Ready" and c.get("status") == "True"
               for c in (node.get("status") or {}).get("conditions") or [])


class PodGCController(Controller):
    name = "podgc"
    workers = 1
    component = "pod-garbage-collector"

    def setup(self) -> None:
        self.pods = self.ctx.informer("pods")
        self.nodes = self.ctx.informer("nodes")
        self.threshold = int(option(self.ctx, "terminated_pod_gc_threshold", 12500))
        self.period = option(self.ctx, "podgc_period", 20.0)
        self.quarantine = option(self.ctx, "podgc_quarantine", 40.0)
        self._missing_since: dict[str, float] = {}  # node name -> when first seen missing

    async def run(self) -> None:
        async def tick() -> None:
            while True:
                self.queue.add("gc")
                await asyncio.sleep(self.period)

        t = asyncio.create_task(tick())
        try:
            await super().run()
        finally:
            t.cancel()

    async def sync(self, key: str) -> None:
        pods = self.pods.list()
        if self.threshold > 0:
            await self._gc_terminated(pods)
        await self._gc_terminating(pods)
        await self._gc_orphaned(pods)
        await self._gc_unscheduled_terminating(pods)

    async def _gc_terminated(self, pods: list[dict[str, Any]]) -> None:
        terminated = [p for p in pods if _terminal(p)]
        excess = len(terminated) - self.threshold
        if excess <= 0:
            return
        # evicted pods go first, then the oldest (upstream's byEvictionAndCreationTimestamp)
        terminated.sort(key=lambda p: ((p.get("status") or {}).get("reason") != "Evicted",
                                       p["metadata"].get("creationTimestamp") or "", p["metadata"]["name"]))
        log.info("garbage collecting %d terminated pods", excess)
        await asyncio.gather(*(self._force_delete(p) for p in terminated[:excess]))

    async def _gc_terminating(self, pods: list[dict[str, Any]]) -> None:
        for p in pods:
            if not _terminating(p):
                continue
            node = self.nodes.get((p.get("spec") or {}).get("nodeName") or "")
            if node is None or _node_ready(node):
                continue
            if any(t.get("key") == OUT_OF_SERVICE for t in (node.get("spec") or {}).get("taints") or []):
                await self._force_delete(p)

    async def _gc_orphaned(self, pods: list[dict[str, Any]]) -> None:
        now = time.monotonic()
        missing: set[str] = set()
        for p in pods:
            n = (p.get("spec") or {}).get("nodeName")
            if n and self.nodes.get(n) is None:
                missing.add(n)
                self._missing_since.setdefault(n, now)
        for n in [n for n in self._missing_since if n not in missing]:
            del self._missing_since[n]
        gone: set[str] = set()
        for n in missing:
            if now - self._missing_since[n] < self.quarantine:
                self.queue.add_after("gc", self.quarantine - (now - self._missing_since[n]) + 0.1)
                continue
            # the informer may lag: only a live 404 makes a node gone
            if await self.client.get_or_none(GVRS["nodes"], n) is None:
                gone.add(n)
            else:
                del self._missing_since[n]
        if not gone:
            return
        cond = {"type": "DisruptionTarget", "status": "True", "reason": "DeletionByPodGC",
                "message": "PodGC: node no longer exists"}
        for p in pods:
            if (p.get("spec") or {}).get("nodeName") in gone:
                log.info("found orphaned pod %s/%s assigned to node %s, deleting", p["metadata"].get("namespace"),
                         p["metadata"]["name"], p["spec"]["nodeName"])
                await self._force_delete(p, cond)

    async def _gc_unscheduled_terminating(self, pods: list[dict[str, Any]]) -> None:
        for p in pods:
            if _terminating(p) and not (p.get("spec") or {}).get("nodeName"):
                await self._force_delete(p)

    async def _force_delete(self, pod: dict[str, Any], condition: dict[str, Any] | None = None) -> None:
        """Upstream's markFailedAndDeletePodWithCondition: Failed first (if not terminal), then grace 0."""
        md = pod["metadata"]
        ns, name = md.get("namespace"), md["name"]
        try:
            if not _terminal(pod):
                status: dict[str, Any] = {"phase": "Failed"}
                if condition is not None:
                    conds = [c for c in (pod.get("status") or {}).get("conditions") or []
                             if c.get("type") != condition["type"]]
                    status["conditions"] = conds + [dict(condition, lastTransitionTime=format_time(time.time()))]
                await self.client.patch(GVRS["pods"], name, {"status": status}, ns, sub="status")
            await self.client.delete(GVRS["pods"], name, ns, grace_period=0,
                                     preconditions={"uid": md.get("uid", "")})
        except StatusError as e:
            if e.code not in (404, 409):
                raise
