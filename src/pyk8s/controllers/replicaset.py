"""ReplicaSet and ReplicationController controllers, as upstream's pkg/controller/replicaset.

sync(key) reads the ReplicaSet and the namespace's pods from the informer caches, claims its
pods (adopting matching orphans, releasing children whose labels stopped matching), creates
or deletes pods to match spec.replicas when the expectations of the previous round are met,
and writes status (replicas, fullyLabeledReplicas, readyReplicas, availableReplicas,
observedGeneration, the ReplicaFailure condition). Creations go in slow-start batches
(1, 2, 4, ...) of at most 500 per sync; deletions take the pods upstream's ActivePods order
ranks first (unassigned, pending, not ready, cheap, doubled up, recently ready, restarting,
new). The ReplicationController controller is the same loop over core/v1 objects with a
map selector, as upstream runs it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from ..api.errors import StatusError
from ..api.labels import Selector, SelectorParseError, selector_from_label_selector, selector_from_set
from ..api.timefmt import format_time, parse_time_or_none
from ..client import obj_key
from .base import GVRS, Controller
from .controller_utils import (
    BURST_REPLICAS,
    CONTROLLER_INDEX,
    SLOW_START_INITIAL_BATCH_SIZE,
    ControllerExpectations,
    adopt_patch,
    available_in,
    claim_objects,
    controller_ref,
    controller_uid_index,
    filter_active_pods,
    is_namespace_terminating,
    is_pod_active,
    new_controller_ref,
    pod_from_template,
    pods_ranked_by_related_pods_on_same_node,
    release_patch,
    slow_start_batch,
    sort_pods_for_deletion,
)

__all__ = ["ReplicaSetController", "ReplicationControllerController", "replica_set_status_equal"]

log = logging.getLogger("pyk8s.controllers.replicaset")

# A status-only sync waits this many times the last sync's counting cost, at most this long (see _wake).
STATUS_SYNC_COST_FACTOR = 4.0
STATUS_SYNC_MAX_DELAY = 1.0

POD_GVR = GVRS["pods"]


def _rv(obj: dict[str, Any]) -> int:
    try:
        return int(obj["metadata"].get("resourceVersion") or 0)
    except ValueError:
        return 0


def replica_set_status_equal(a: dict[str, Any], b: dict[str, Any]) -> bool:
    keys = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas", "observedGeneration")
    if any(int(a.get(k) or 0) != int(b.get(k) or 0) for k in keys):
        return False
    return (a.get("conditions") or []) == (b.get("conditions") or [])


class ReplicaSetController(Controller):
    name = "replicaset"
    component = "replicaset-controller"
    workers = 5  # upstream's --concurrent-replicaset-syncs
    resource = "replicasets"
    api_version = "apps/v1"
    kind = "ReplicaSet"

    def setup(self) -> None:
        self.expectations = ControllerExpectations()
        self._written: dict[str, dict[str, Any]] = {}
        self._sync_cost: dict[str, float] = {}  # key -> seconds its last pod count took (see _wake)
        self.gvr = GVRS[self.resource]
        self.rss = self.ctx.informer(self.resource)
        self.pods = self.ctx.informer("pods")
        self.pods.add_index(CONTROLLER_INDEX, controller_uid_index)
        self.rss.add_index(CONTROLLER_INDEX, controller_uid_index)
        self.rss.add_handlers(on_add=self.enqueue, on_update=self._update_rs, on_delete=self._delete_rs)
        self.pods.add_handlers(on_add=self._add_pod, on_update=self._update_pod, on_delete=self._delete_pod)

    # ---- what differs between ReplicaSets and ReplicationControllers --------------------------
    def selector_of(self, rs: dict[str, Any]) -> Selector:
        return selector_from_label_selector((rs.get("spec") or {}).get("selector"))

    def _typed(self, rs: dict[str, Any]) -> dict[str, Any]:
        # list items may come without kind/apiVersion; events and owner references need them
        if rs.get("kind") == self.kind and rs.get("apiVersion") == self.api_version:
            return rs
        return {**rs, "kind": self.kind, "apiVersion": self.api_version}

    # ---- event handlers -------------------------------------------------------------------
    def _update_rs(self, old: dict[str, Any], cur: dict[str, Any]) -> None:
        self.enqueue(cur)

    def _delete_rs(self, rs: dict[str, Any]) -> None:
        key = obj_key(rs)
        self.expectations.delete(key)
        self._written.pop(key, None)
        self._sync_cost.pop(key, None)
        self.enqueue(key)

    def _resolve(self, namespace: str, ref: dict[str, Any]) -> dict[str, Any] | None:
        if ref.get("kind") != self.kind or ref.get("apiVersion", "").split("/")[0] != self.api_version.split("/")[0]:
            return None
        rs = self.rss.get(f"{namespace}/{ref.get('name')}")
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return None  # a different object of the same name: not our owner
        return rs

    def _matching(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        md = pod["metadata"]
        labels = md.get("labels") or {}
        if not labels:
            return []
        out = []
        for rs in self.rss.list(md.get("namespace", "")):
            try:
                sel = self.selector_of(rs)
            except SelectorParseError:
                continue
            if not sel.empty() and sel.matches(labels):
                out.append(rs)
        return out

    def _add_pod(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        if md.get("deletionTimestamp"):
            # seen for the first time while terminating (e.g. after a re-list): a deletion
            self._delete_pod(pod)
            return
        ref = controller_ref(pod)
        if ref is not None:
            rs = self._resolve(md.get("namespace", ""), ref)
            if rs is None:
                return
            key = obj_key(rs)
            was_satisfied = self.expectations.satisfied(key)
            self.expectations.creation_observed(key)
            self._wake(key, urgent=not was_satisfied and self.expectations.satisfied(key))
            return
        # an orphan: wake every ReplicaSet that may want to adopt it
        for rs in self._matching(pod):
            self.enqueue(rs)

    def _update_pod(self, old: dict[str, Any], cur: dict[str, Any]) -> None:
        omd, cmd = old["metadata"], cur["metadata"]
        if omd.get("resourceVersion") == cmd.get("resourceVersion"):
            return  # a resync: nothing changed
        label_changed = omd.get("labels") != cmd.get("labels")
        if cmd.get("deletionTimestamp"):
            # graceful deletion started: count it now, as upstream, so a replacement is not delayed
            self._delete_pod(cur)
            if label_changed:
                self._delete_pod(old)
            return
        cur_ref, old_ref = controller_ref(cur), controller_ref(old)
        ref_changed = cur_ref != old_ref
        if ref_changed and old_ref is not None:
            rs = self._resolve(omd.get("namespace", ""), old_ref)
            if rs is not None:
                self.enqueue(rs)
        if cur_ref is not None:
            rs = self._resolve(cmd.get("namespace", ""), cur_ref)
            if rs is not None:
                # a pod that stopped being active wants a replacement now; other changes move status
                self._wake(obj_key(rs), urgent=ref_changed or label_changed or
                           (is_pod_active(old) and not is_pod_active(cur)))
            return
        if label_changed or ref_changed:
            for rs in self._matching(cur):
                self.enqueue(rs)

    def _delete_pod(self, pod: dict[str, Any]) -> None:
        ref = controller_ref(pod)
        if ref is None:
            return
        rs = self._resolve(pod["metadata"].get("namespace", ""), ref)
        if rs is None:
            return
        key = obj_key(rs)
        was_satisfied = self.expectations.satisfied(key)
        self.expectations.deletion_observed(key, obj_key(pod))
        # a pod gone on its own may want a replacement; our own deletions matter once all are seen
        self._wake(key, urgent=was_satisfied or self.expectations.satisfied(key))

    def _wake(self, key: str, urgent: bool) -> None:
        """Queue a sync for one of our pods' events.

        A sync counts every pod of the ReplicaSet (some 40 ms for 10,000 pods), and its pods send
        thousands of events while they start. Events that can call for creations or deletions
        sync at once; those that only move status wait a few times the last sync's cost (the
        waiting key absorbs every later event), so status counting takes a bounded share of the
        process instead of running back to back. Small ReplicaSets sync at once either way.
        """
        delay = 0.0 if urgent else min(STATUS_SYNC_MAX_DELAY, STATUS_SYNC_COST_FACTOR * self._sync_cost.get(key, 0.0))
        if delay < 0.001:
            self.queue.add(key)
        else:
            self.queue.add_after(key, delay)

    # ---- the sync -------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        rs = self.rss.get(key)
        if rs is None:
            self.expectations.delete(key)
            return
        rs = self._typed(self._newest(key, rs))
        needs_sync = self.expectations.satisfied(key)
        try:
            selector = self.selector_of(rs)
        except SelectorParseError as e:
            log.warning("%s %s has an invalid selector: %s", self.kind, key, e)
            return
        md = rs["metadata"]
        ns = md["namespace"]
        started = time.perf_counter()
        candidates = self.pods.by_index(CONTROLLER_INDEX, md["uid"]) + \
            self.pods.by_index(CONTROLLER_INDEX, "orphan/" + ns)
        pods = await claim_objects(rs, selector, filter_active_pods(candidates),
                                   adopt=lambda p: self._adopt(rs, p), release=lambda p: self._release(rs, p),
                                   can_adopt=lambda: self._can_adopt(rs))
        claimed = time.perf_counter()
        manage_error: BaseException | None = None
        if needs_sync and not md.get("deletionTimestamp"):
            try:
                await self._manage_replicas(key, rs, pods)
            except StatusError as e:
                manage_error = e
        now = time.time()
        counting = time.perf_counter()
        status = self._calculate_status(rs, pods, manage_error, now)
        self._sync_cost[key] = (claimed - started) + (time.perf_counter() - counting)
        await self._update_status(rs, status)
        if manage_error is not None:
            raise manage_error
        self._requeue_for_availability(key, rs, pods, now)

    def _requeue_for_availability(self, key: str, rs: dict[str, Any], pods: list[dict[str, Any]], now: float) -> None:
        # With minReadySeconds, ready pods become available later with no event to say so:
        # come back when the first of them does (upstream requeues after minReadySeconds).
        min_ready = int((rs.get("spec") or {}).get("minReadySeconds") or 0)
        if min_ready <= 0:
            return
        waits = [w for w in (available_in(p, min_ready, now) for p in pods) if w is not None and w > 0]
        if waits:
            self.enqueue_after(key, min(waits) + 0.05)

    async def _can_adopt(self, rs: dict[str, Any]) -> str | None:
        md = rs["metadata"]
        fresh = await self.client.get_or_none(self.gvr, md["name"], md["namespace"])
        if fresh is None or fresh["metadata"].get("uid") != md["uid"]:
            got = None if fresh is None else fresh["metadata"].get("uid")
            return f"original {md['namespace']}/{md['name']} is gone: got uid {got}, wanted {md['uid']}"
        if fresh["metadata"].get("deletionTimestamp"):
            return f"{md['namespace']}/{md['name']} has just been deleted at {fresh['metadata']['deletionTimestamp']}"
        return None

    async def _adopt(self, rs: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any]:
        ref = new_controller_ref(rs, self.api_version, self.kind)
        return await self.client.patch(POD_GVR, pod["metadata"]["name"], adopt_patch(pod, ref),
                                       pod["metadata"]["namespace"], patch_type="strategic")

    async def _release(self, rs: dict[str, Any], pod: dict[str, Any]) -> None:
        await self.client.patch(POD_GVR, pod["metadata"]["name"], release_patch(pod, rs["metadata"]["uid"]),
                                pod["metadata"]["namespace"], patch_type="strategic")

    async def _manage_replicas(self, key: str, rs: dict[str, Any], pods: list[dict[str, Any]]) -> None:
        want = int((rs.get("spec") or {}).get("replicas", 1) or 0)
        diff = len(pods) - want
        if diff < 0:
            n = min(-diff, BURST_REPLICAS)
            # expect first: the watch may deliver the new pods before the creates return
            self.expectations.expect_creations(key, n)
            ok, err = await slow_start_batch(n, SLOW_START_INITIAL_BATCH_SIZE, lambda: self._create_pod(rs))
            # pods never created (a batch failed) will never be observed
            for _ in range(n - ok):
                self.expectations.creation_observed(key)
            if err is not None:
                raise err
        elif diff > 0:
            n = min(diff, BURST_REPLICAS)
            victims = self._pods_to_delete(rs, pods, n)
            self.expectations.expect_deletions(key, [obj_key(p) for p in victims])
            results = await asyncio.gather(*(self._delete_pod_of(rs, p) for p in victims), return_exceptions=True)
            first: BaseException | None = None
            for p, r in zip(victims, results, strict=True):
                if isinstance(r, BaseException):
                    self.expectations.deletion_observed(key, obj_key(p))
                    if isinstance(r, asyncio.CancelledError):
                        raise r
                    if not (isinstance(r, StatusError) and r.code == 404) and first is None:
                        first = r
            if first is not None:
                raise first

    def _pods_to_delete(self, rs: dict[str, Any], pods: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
        if n >= len(pods):
            return pods
        ranks = pods_ranked_by_related_pods_on_same_node(pods, self._related_pods(rs))
        return sort_pods_for_deletion(pods, ranks)[:n]

    def _related_pods(self, rs: dict[str, Any]) -> list[dict[str, Any]]:
        """Pods of every ReplicaSet sharing this one's controller (a Deployment's other revisions)."""
        ref = controller_ref(rs)
        if ref is None:
            siblings = [rs]
        else:
            siblings = self.rss.by_index(CONTROLLER_INDEX, ref.get("uid", "")) or [rs]
        out: list[dict[str, Any]] = []
        for s in siblings:
            out.extend(p for p in self.pods.by_index(CONTROLLER_INDEX, s["metadata"]["uid"]) if is_pod_active(p))
        return out

    async def _create_pod(self, rs: dict[str, Any]) -> None:
        md = rs["metadata"]
        template = (rs.get("spec") or {}).get("template") or {}
        pod = pod_from_template(template, md["name"], new_controller_ref(rs, self.api_version, self.kind))
        if not pod["metadata"].get("labels"):
            raise StatusError(500, "InternalError", "unable to create pods, no labels")
        try:
            created = await self.client.create(POD_GVR, pod, md["namespace"])
        except StatusError as e:
            if is_namespace_terminating(e):
                return  # the namespace is going away: nothing more to do
            self.recorder.event(rs, "Warning", "FailedCreate", f"Error creating: {e.message}")
            raise
        self.recorder.event(rs, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _delete_pod_of(self, rs: dict[str, Any], pod: dict[str, Any]) -> None:
        pmd = pod["metadata"]
        try:
            await self.client.delete(POD_GVR, pmd["name"], pmd["namespace"])
        except StatusError as e:
            if e.code != 404:
                self.recorder.event(rs, "Warning", "FailedDelete", f"Error deleting: {e.message}")
            raise
        self.recorder.event(rs, "Normal", "SuccessfulDelete", f"Deleted pod: {pmd['name']}")

    # ---- status ---------------------------------------------------------------------------
    def _calculate_status(self, rs: dict[str, Any], pods: list[dict[str, Any]], manage_error: BaseException | None,
                          now: float) -> dict[str, Any]:
        spec = rs.get("spec") or {}
        min_ready = int(spec.get("minReadySeconds") or 0)
        template_labels = (((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}).items()
        fully = ready = available = 0
        # one pass, conditions looked at once per pod: this runs over every pod on every sync
        for p in pods:
            if (p["metadata"].get("labels") or {}).items() >= template_labels:
                fully += 1
            for c in (p.get("status") or {}).get("conditions") or ():
                if c.get("type") == "Ready":
                    if c.get("status") == "True":
                        ready += 1
                        if not min_ready:
                            available += 1
                        else:
                            t = parse_time_or_none(c.get("lastTransitionTime"))
                            if t is not None and t + min_ready < now:
                                available += 1
                    break
        old = rs.get("status") or {}
        conditions = [dict(c) for c in old.get("conditions") or []]
        failure = next((c for c in conditions if c.get("type") == "ReplicaFailure"), None)
        if manage_error is not None and failure is None:
            diff = len(pods) - int(spec.get("replicas", 1) or 0)
            reason = "FailedCreate" if diff < 0 else "FailedDelete" if diff > 0 else ""
            conditions.append({"type": "ReplicaFailure", "status": "True", "lastTransitionTime": format_time(now),
                               "reason": reason, "message": str(manage_error)})
        elif manage_error is None and failure is not None:
            conditions = [c for c in conditions if c.get("type") != "ReplicaFailure"]
        # the wire form upstream writes: replicas always, the other counts only when non-zero
        status: dict[str, Any] = {"replicas": len(pods)}
        for k, v in (("fullyLabeledReplicas", fully), ("readyReplicas", ready), ("availableReplicas", available),
                     ("observedGeneration", int(rs["metadata"].get("generation") or 0))):
            if v:
                status[k] = v
        if conditions:
            status["conditions"] = conditions
        return status

    def _newest(self, key: str, cached: dict[str, Any]) -> dict[str, Any]:
        """The cached object, or the one our last status write returned if the cache has not caught up.

        Pod events arrive faster than our own status writes come back through the watch; without
        this, every sync in a burst would compare against, and write over, a stale copy (a 409
        and a re-read each time). Revisions are the store's global clock, so they compare.
        """
        written = self._written.get(key)
        if written is None:
            return cached
        if written["metadata"].get("uid") == cached["metadata"].get("uid") and \
                _rv(written) > _rv(cached):
            return written
        del self._written[key]  # the cache caught up (or the object was replaced)
        return cached

    async def _update_status(self, rs: dict[str, Any], status: dict[str, Any]) -> dict[str, Any]:
        if replica_set_status_equal(rs.get("status") or {}, status):
            return rs
        body = {**rs, "status": status}
        key = obj_key(rs)
        for attempt in range(2):
            try:
                updated = await self.client.update_status(self.gvr, body)
                self._written[key] = updated
                return updated
            except StatusError as e:
                if e.code == 404:
                    return rs
                if e.code != 409 or attempt == 1:
                    raise
            # conflict: as upstream, take the latest object and write our status onto it once more
            md = rs["metadata"]
            fresh = await self.client.get_or_none(self.gvr, md["name"], md["namespace"])
            if fresh is None:
                return rs
            body = {**self._typed(fresh), "status": status}
        return rs


class ReplicationControllerController(ReplicaSetController):
    """The same loop over core/v1 ReplicationControllers (map selectors, v1 owner references)."""

    name = "replicationcontroller"
    component = "replication-controller"
    resource = "replicationcontrollers"
    api_version = "v1"
    kind = "ReplicationController"

    def selector_of(self, rc: dict[str, Any]) -> Selector:
        return selector_from_set((rc.get("spec") or {}).get("selector") or {})
