"""Deployment controller, as upstream's pkg/controller/deployment (sync.go, rolling.go,
recreate.go, progress.go).

sync(key) claims the Deployment's ReplicaSets (adopting matching orphans, releasing the ones
that stopped matching), then, in upstream's order: status only while being deleted; the
Progressing condition for pause/resume; a plain scale (with proportional scaling across
active ReplicaSets) when paused or when only the replica count changed; otherwise a rollout
step of the strategy (RollingUpdate within maxSurge/maxUnavailable, or Recreate: old pods
gone before new ones start). New ReplicaSets are named `<deployment>-<pod-template-hash>` and
carry the revision, desired-replicas and max-replicas annotations; old ones beyond
revisionHistoryLimit are deleted once empty. Status and the Available/Progressing
conditions (with the progress deadline) are written last.

The pure arithmetic lives in deployment_util.py; this module does the reads and writes.
"""

from __future__ import annotations

import copy
import logging
import time
from collections.abc import Sequence
from functools import cmp_to_key
from typing import Any

from ..api.errors import StatusError
from ..api.labels import Selector, SelectorParseError, selector_from_label_selector
from ..api.timefmt import parse_time_or_none
from ..client import obj_key
from .base import GVRS, Controller
from .controller_utils import (
    CONTROLLER_INDEX,
    adopt_patch,
    claim_objects,
    compute_hash,
    controller_ref,
    controller_uid_index,
    is_namespace_terminating,
    new_controller_ref,
    release_patch,
)
from .deployment_util import (
    FAILED_RS_CREATE_REASON,
    FOUND_NEW_RS_REASON,
    HASH_LABEL,
    NEW_RS_AVAILABLE_REASON,
    NEW_RS_REASON,
    PAUSED_REASON,
    RESUMED_REASON,
    REVISION,
    RS_UPDATED_REASON,
    TIMED_OUT_REASON,
    calculate_status,
    deployment_complete,
    deployment_progressing,
    deployment_timed_out,
    desired_replicas_annotation,
    equal_ignore_hash,
    filter_active,
    find_active_or_latest,
    find_new_replica_set,
    find_old_replica_sets,
    get_condition,
    get_proportion,
    has_progress_deadline,
    is_rolling_update,
    is_saturated,
    max_revision,
    max_surge,
    max_unavailable,
    new_condition,
    new_rs_new_replicas,
    normalize_status,
    remove_condition,
    revision,
    set_condition,
    set_new_replica_set_annotations,
    set_replicas_annotations,
    sort_by_creation,
    spec_replicas,
    status_equal,
)

__all__ = ["DeploymentController"]

log = logging.getLogger("pyk8s.controllers.deployment")

RS_GVR = GVRS["replicasets"]
D_GVR = GVRS["deployments"]

Obj = dict[str, Any]


def _status_int(obj: Obj | None, key: str) -> int:
    return 0 if obj is None else int((obj.get("status") or {}).get(key) or 0)


def _typed_rs(rs: Obj) -> Obj:
    return rs if rs.get("kind") == "ReplicaSet" else {**rs, "kind": "ReplicaSet", "apiVersion": "apps/v1"}


class DeploymentController(Controller):
    name = "deployment"
    component = "deployment-controller"
    workers = 5  # upstream's --concurrent-deployment-syncs

    def setup(self) -> None:
        self.deployments = self.ctx.informer("deployments")
        self.rss = self.ctx.informer("replicasets")
        self.pods = self.ctx.informer("pods")
        self.rss.add_index(CONTROLLER_INDEX, controller_uid_index)
        self.pods.add_index(CONTROLLER_INDEX, controller_uid_index)
        self.deployments.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n),
                                      on_delete=self.enqueue)
        self.rss.add_handlers(on_add=self._add_rs, on_update=self._update_rs, on_delete=self._delete_rs)
        self.pods.add_handlers(on_delete=self._delete_pod)

    # ---- event handlers -------------------------------------------------------------------
    def _resolve(self, namespace: str, ref: Obj) -> Obj | None:
        if ref.get("kind") != "Deployment" or not str(ref.get("apiVersion", "")).startswith("apps/"):
            return None
        d = self.deployments.get(f"{namespace}/{ref.get('name')}")
        if d is None or d["metadata"].get("uid") != ref.get("uid"):
            return None
        return d

    def _deployments_for_rs(self, rs: Obj) -> list[Obj]:
        labels = rs["metadata"].get("labels") or {}
        if not labels:
            return []
        out = []
        for d in self.deployments.list(rs["metadata"].get("namespace", "")):
            try:
                sel = selector_from_label_selector((d.get("spec") or {}).get("selector"))
            except SelectorParseError:
                continue
            if not sel.empty() and sel.matches(labels):
                out.append(d)
        return out

    def _add_rs(self, rs: Obj) -> None:
        md = rs["metadata"]
        if md.get("deletionTimestamp"):
            self._delete_rs(rs)
            return
        ref = controller_ref(rs)
        if ref is not None:
            d = self._resolve(md.get("namespace", ""), ref)
            if d is not None:
                self.enqueue(d)
            return
        for d in self._deployments_for_rs(rs):  # an orphan: whoever matches may adopt it
            self.enqueue(d)

    def _update_rs(self, old: Obj, cur: Obj) -> None:
        if old["metadata"].get("resourceVersion") == cur["metadata"].get("resourceVersion"):
            return
        cur_ref, old_ref = controller_ref(cur), controller_ref(old)
        ref_changed = cur_ref != old_ref
        ns = cur["metadata"].get("namespace", "")
        if ref_changed and old_ref is not None:
            d = self._resolve(ns, old_ref)
            if d is not None:
                self.enqueue(d)
        if cur_ref is not None:
            d = self._resolve(ns, cur_ref)
            if d is not None:
                self.enqueue(d)
            return
        if ref_changed or old["metadata"].get("labels") != cur["metadata"].get("labels"):
            for d in self._deployments_for_rs(cur):
                self.enqueue(d)

    def _delete_rs(self, rs: Obj) -> None:
        ref = controller_ref(rs)
        if ref is not None:
            d = self._resolve(rs["metadata"].get("namespace", ""), ref)
            if d is not None:
                self.enqueue(d)

    def _delete_pod(self, pod: Obj) -> None:
        # Recreate waits for every old pod to be gone: the last one's deletion is its cue.
        ns = pod["metadata"].get("namespace", "")
        ref = controller_ref(pod)
        if ref is None or ref.get("kind") != "ReplicaSet":
            return
        rs = self.rss.get(f"{ns}/{ref.get('name')}")
        if rs is None or rs["metadata"].get("uid") != ref.get("uid"):
            return
        rs_ref = controller_ref(rs)
        d = None if rs_ref is None else self._resolve(ns, rs_ref)
        if d is None or is_rolling_update(d):
            return
        rss = self.rss.by_index(CONTROLLER_INDEX, d["metadata"]["uid"])
        if not any(self._pods_of(d, rss).values()):
            self.enqueue(d)

    # ---- the sync -------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        cached = self.deployments.get(key)
        if cached is None:
            return
        d = copy.deepcopy(cached)
        d["kind"], d["apiVersion"] = "Deployment", "apps/v1"
        d.setdefault("status", {})
        try:
            selector = selector_from_label_selector(d["spec"].get("selector"))
        except SelectorParseError as e:
            log.warning("deployment %s has an invalid selector: %s", key, e)
            return
        if selector.empty():
            self.recorder.event(d, "Warning", "SelectingAll",
                                "This deployment is selecting all pods. A non-empty selector is required.")
            if int(d["status"].get("observedGeneration") or 0) < int(d["metadata"].get("generation") or 0):
                d["status"]["observedGeneration"] = d["metadata"].get("generation")
                await self._update_status(d)
            return
        rss = await self._claim_replica_sets(d, selector)
        if d["metadata"].get("deletionTimestamp"):
            await self._sync_status_only(d, rss)
            return
        await self._check_paused_conditions(d)
        if d["spec"].get("paused"):
            await self._sync(d, rss)
            return
        if await self._is_scaling_event(d, rss):
            await self._sync(d, rss)
            return
        if is_rolling_update(d):
            await self._rollout_rolling(d, rss)
        else:
            await self._rollout_recreate(d, rss)

    # ---- ReplicaSets of a Deployment ------------------------------------------------------
    async def _claim_replica_sets(self, d: Obj, selector: Selector) -> list[Obj]:
        md = d["metadata"]
        candidates = self.rss.by_index(CONTROLLER_INDEX, md["uid"]) + \
            self.rss.by_index(CONTROLLER_INDEX, "orphan/" + md["namespace"])

        async def can_adopt() -> str | None:
            fresh = await self.client.get_or_none(D_GVR, md["name"], md["namespace"])
            if fresh is None or fresh["metadata"].get("uid") != md["uid"]:
                got = None if fresh is None else fresh["metadata"].get("uid")
                return f"original Deployment {md['namespace']}/{md['name']} is gone: got uid {got}, wanted {md['uid']}"
            if fresh["metadata"].get("deletionTimestamp"):
                return f"{md['namespace']}/{md['name']} has just been deleted at {fresh['metadata']['deletionTimestamp']}"
            return None

        async def adopt(rs: Obj) -> Obj:
            ref = new_controller_ref(d, "apps/v1", "Deployment")
            return await self.client.patch(RS_GVR, rs["metadata"]["name"], adopt_patch(rs, ref), md["namespace"],
                                           patch_type="strategic")

        async def release(rs: Obj) -> None:
            await self.client.patch(RS_GVR, rs["metadata"]["name"], release_patch(rs, md["uid"]), md["namespace"],
                                    patch_type="strategic")

        claimed = await claim_objects(d, selector, candidates, adopt, release, can_adopt)
        return [_typed_rs(rs) for rs in claimed]

    def _pods_of(self, d: Obj, rss: list[Obj]) -> dict[str, list[Obj]]:
        """Pods by the UID of the ReplicaSet controlling them, terminating and finished ones included."""
        try:
            selector = selector_from_label_selector(d["spec"].get("selector"))
        except SelectorParseError:
            return {}
        out: dict[str, list[Obj]] = {}
        for rs in rss:
            uid = rs["metadata"]["uid"]
            out[uid] = [p for p in self.pods.by_index(CONTROLLER_INDEX, uid)
                        if selector.matches(p["metadata"].get("labels") or {})]
        return out

    @staticmethod
    def _replace(rss: list[Obj], updated: Obj) -> None:
        # keep this sync's view current, so a later step does not write a stale copy again
        uid = updated["metadata"]["uid"]
        for i, rs in enumerate(rss):
            if rs["metadata"]["uid"] == uid:
                rss[i] = _typed_rs(updated)

    async def _get_all_replica_sets(self, d: Obj, rss: list[Obj], create: bool) -> tuple[Obj | None, list[Obj]]:
        _, all_old = find_old_replica_sets(d, rss)
        new = await self._get_new_replica_set(d, rss, all_old, create)
        return new, all_old

    async def _get_new_replica_set(self, d: Obj, rss: list[Obj], old_rss: list[Obj], create: bool) -> Obj | None:
        existing = find_new_replica_set(d, rss)
        new_revision = str(max_revision(old_rss) + 1)
        min_ready = int(d["spec"].get("minReadySeconds") or 0)
        if existing is not None:
            rs = copy.deepcopy(existing)
            annotations_updated = set_new_replica_set_annotations(d, rs, new_revision, True)
            if annotations_updated or int(rs["spec"].get("minReadySeconds") or 0) != min_ready:
                rs["spec"]["minReadySeconds"] = min_ready
                updated = _typed_rs(await self.client.update(RS_GVR, rs))
                self._replace(rss, updated)
                return updated
            needs_update = self._set_revision(d, (rs["metadata"].get("annotations") or {}).get(REVISION, ""))
            if has_progress_deadline(d) and get_condition(d["status"], "Progressing") is None:
                set_condition(d["status"], new_condition("Progressing", "True", FOUND_NEW_RS_REASON,
                                                         f'Found new replica set "{rs["metadata"]["name"]}"', time.time()))
                needs_update = True
            if needs_update:
                await self._update_status(d)
            return rs
        if not create:
            return None
        template = copy.deepcopy(d["spec"]["template"])
        pod_template_hash = compute_hash(template, d["status"].get("collisionCount"))
        tmd = template.setdefault("metadata", {})
        tmd["labels"] = {**(tmd.get("labels") or {}), HASH_LABEL: pod_template_hash}
        selector = copy.deepcopy(d["spec"]["selector"])
        selector["matchLabels"] = {**(selector.get("matchLabels") or {}), HASH_LABEL: pod_template_hash}
        name = f"{d['metadata']['name']}-{pod_template_hash}"
        new_rs: Obj = {
            "apiVersion": "apps/v1", "kind": "ReplicaSet",
            "metadata": {"name": name, "namespace": d["metadata"]["namespace"],
                         "ownerReferences": [new_controller_ref(d, "apps/v1", "Deployment")],
                         "labels": dict(tmd["labels"])},
            "spec": {"replicas": 0, "minReadySeconds": min_ready, "selector": selector, "template": template},
        }
        new_count = new_rs_new_replicas(d, old_rss + [new_rs], new_rs)
        new_rs["spec"]["replicas"] = new_count
        set_new_replica_set_annotations(d, new_rs, new_revision, False)
        already_exists = False
        try:
            created = _typed_rs(await self.client.create(RS_GVR, new_rs, d["metadata"]["namespace"]))
        except StatusError as e:
            if e.code == 409 and e.reason == "AlreadyExists":
                found = self.rss.get(f"{d['metadata']['namespace']}/{name}")
                if found is None:
                    raise
                ref = controller_ref(found)
                if ref is not None and ref.get("uid") == d["metadata"]["uid"] and \
                        equal_ignore_hash(d["spec"]["template"], (found.get("spec") or {}).get("template")):
                    created, already_exists = _typed_rs(found), True
                else:
                    # a hash collision: bump collisionCount so the next sync hashes differently
                    d["status"]["collisionCount"] = int(d["status"].get("collisionCount") or 0) + 1
                    try:
                        await self._update_status(d)
                        log.info("deployment %s: hash collision on %s, collisionCount now %s",
                                 obj_key(d), name, d["status"]["collisionCount"])
                    except StatusError:
                        pass
                    raise
            elif is_namespace_terminating(e):
                raise
            else:
                msg = f'Failed to create new replica set "{name}": {e.message}'
                if has_progress_deadline(d):
                    set_condition(d["status"], new_condition("Progressing", "False", FAILED_RS_CREATE_REASON, msg,
                                                             time.time()))
                    try:
                        await self._update_status(d)
                    except StatusError:
                        pass
                self.recorder.event(d, "Warning", FAILED_RS_CREATE_REASON, msg)
                raise
        if not already_exists:
            rss.append(created)
            if new_count > 0:
                self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                    f"Scaled up replica set {name} from 0 to {new_count}")
        needs_update = self._set_revision(d, new_revision)
        if not already_exists and has_progress_deadline(d):
            set_condition(d["status"], new_condition("Progressing", "True", NEW_RS_REASON,
                                                     f'Created new replica set "{name}"', time.time()))
            needs_update = True
        if needs_update:
            await self._update_status(d)
        return created

    @staticmethod
    def _set_revision(d: Obj, rev: str) -> bool:
        ann = d["metadata"].setdefault("annotations", {})
        if ann.get(REVISION) == rev:
            return False
        ann[REVISION] = rev
        return True

    # ---- scaling --------------------------------------------------------------------------
    async def _is_scaling_event(self, d: Obj, rss: list[Obj]) -> bool:
        """Only the replica count changed: some active ReplicaSet was sized for another count."""
        new, old = await self._get_all_replica_sets(d, rss, False)
        if new is None:
            return False
        n = spec_replicas(d)
        for rs in filter_active(old + [new]):
            desired = desired_replicas_annotation(rs)
            if desired is not None and desired != n:
                return True
        return False

    async def _sync(self, d: Obj, rss: list[Obj]) -> None:
        """Scale without rolling (paused, or a scaling event)."""
        new, old = await self._get_all_replica_sets(d, rss, False)
        await self._scale(d, new, old)
        if d["spec"].get("paused"):
            await self._cleanup(old, d)
        await self._sync_deployment_status([*old, new], new, d)

    async def _scale(self, d: Obj, new: Obj | None, old: list[Obj]) -> None:
        n = spec_replicas(d)
        only = find_active_or_latest(new, old)
        if only is not None:
            if spec_replicas(only) != n:
                await self._scale_and_record(only, n, d)
            return
        if is_saturated(d, new):
            for rs in filter_active(old):
                await self._scale_and_record(rs, 0, d)
            return
        if not is_rolling_update(d):
            return
        # Several active ReplicaSets mid-rollout: share the change among them in proportion to
        # their sizes, so a scale does not change the mix of versions (proportional scaling).
        all_rss = filter_active(old + [new])
        current = sum(spec_replicas(rs) for rs in all_rss)
        allowed = n + max_surge(d) if n > 0 else 0
        to_add = allowed - current
        operation = ""
        if to_add > 0:
            all_rss = _sort_by_size(all_rss, newer_first=True)
            operation = "up"
        elif to_add < 0:
            all_rss = _sort_by_size(all_rss, newer_first=False)
            operation = "down"
        added = 0
        sizes: dict[str, int] = {}
        for rs in all_rss:
            if to_add != 0:
                p = get_proportion(rs, d, to_add, added)
                sizes[rs["metadata"]["name"]] = spec_replicas(rs) + p
                added += p
            else:
                sizes[rs["metadata"]["name"]] = spec_replicas(rs)
        for i, rs in enumerate(all_rss):
            name = rs["metadata"]["name"]
            if i == 0 and to_add != 0:
                # rounding leftovers go to the largest ReplicaSet
                sizes[name] = max(0, sizes[name] + to_add - added)
            await self._scale_replica_set(rs, sizes[name], d, operation)

    async def _scale_and_record(self, rs: Obj, new_scale: int, d: Obj) -> tuple[bool, Obj]:
        if spec_replicas(rs) == new_scale:
            return False, rs
        return await self._scale_replica_set(rs, new_scale, d, "up" if spec_replicas(rs) < new_scale else "down")

    async def _scale_replica_set(self, rs: Obj, new_scale: int, d: Obj, operation: str) -> tuple[bool, Obj]:
        size_changes = spec_replicas(rs) != new_scale
        n = spec_replicas(d)
        target = copy.deepcopy(rs)
        annotations_change = set_replicas_annotations(target, n, n + max_surge(d))
        if not (size_changes or annotations_change):
            return False, rs
        old_scale = spec_replicas(rs)
        target["spec"]["replicas"] = new_scale
        updated = _typed_rs(await self.client.update(RS_GVR, target))
        if size_changes:
            self.recorder.event(d, "Normal", "ScalingReplicaSet",
                                f"Scaled {operation} replica set {rs['metadata']['name']} from {old_scale} to {new_scale}")
        return size_changes, updated

    # ---- RollingUpdate --------------------------------------------------------------------
    async def _rollout_rolling(self, d: Obj, rss: list[Obj]) -> None:
        new, old = await self._get_all_replica_sets(d, rss, True)
        assert new is not None
        all_rss = old + [new]
        if await self._reconcile_new_replica_set(all_rss, new, d):
            await self._sync_rollout_status(all_rss, new, d)
            return
        if await self._reconcile_old_replica_sets(all_rss, filter_active(old), new, d):
            await self._sync_rollout_status(all_rss, new, d)
            return
        if deployment_complete(d, d["status"]):
            await self._cleanup(old, d)
        await self._sync_rollout_status(all_rss, new, d)

    async def _reconcile_new_replica_set(self, all_rss: list[Obj], new: Obj, d: Obj) -> bool:
        n = spec_replicas(d)
        if spec_replicas(new) == n:
            return False
        if spec_replicas(new) > n:
            return (await self._scale_and_record(new, n, d))[0]
        return (await self._scale_and_record(new, new_rs_new_replicas(d, all_rss, new), d))[0]

    async def _reconcile_old_replica_sets(self, all_rss: list[Obj], old: list[Obj], new: Obj, d: Obj) -> bool:
        old_pods = sum(spec_replicas(rs) for rs in old)
        if old_pods == 0:
            return False
        all_pods = sum(spec_replicas(rs) for rs in all_rss)
        min_available = spec_replicas(d) - max_unavailable(d)
        new_unavailable = spec_replicas(new) - _status_int(new, "availableReplicas")
        # Never go below minAvailable counting the new pods that are not available yet, so a
        # rollout whose new pods never become ready cannot eat the old, healthy ones.
        max_scaled_down = all_pods - min_available - new_unavailable
        if max_scaled_down <= 0:
            return False
        old, cleaned = await self._cleanup_unhealthy_replicas(old, d, max_scaled_down)
        scaled = await self._scale_down_old_for_rolling_update(old + [new], old, d)
        return cleaned + scaled > 0

    async def _cleanup_unhealthy_replicas(self, old: list[Obj], d: Obj, max_cleanup: int) -> tuple[list[Obj], int]:
        """Scale down old ReplicaSets' unavailable pods first: they serve nobody."""
        old = sort_by_creation(old)
        total = 0
        for i, rs in enumerate(old):
            if total >= max_cleanup:
                break
            replicas, available = spec_replicas(rs), _status_int(rs, "availableReplicas")
            if replicas == 0 or replicas == available:
                continue
            count = min(max_cleanup - total, replicas - available)
            _, old[i] = await self._scale_and_record(rs, replicas - count, d)
            total += count
        return old, total

    async def _scale_down_old_for_rolling_update(self, all_rss: list[Obj], old: list[Obj], d: Obj) -> int:
        min_available = spec_replicas(d) - max_unavailable(d)
        available = sum(_status_int(rs, "availableReplicas") for rs in all_rss)
        if available <= min_available:
            return 0
        total_to_scale = available - min_available
        total = 0
        for rs in sort_by_creation(old):
            if total >= total_to_scale:
                break
            replicas = spec_replicas(rs)
            if replicas == 0:
                continue
            count = min(replicas, total_to_scale - total)
            await self._scale_and_record(rs, replicas - count, d)
            total += count
        return total

    # ---- Recreate -------------------------------------------------------------------------
    async def _rollout_recreate(self, d: Obj, rss: list[Obj]) -> None:
        # no new ReplicaSet yet: it must not scale up before the old pods are gone
        new, old = await self._get_all_replica_sets(d, rss, False)
        all_rss: list[Obj | None] = [*old, new]
        scaled = False
        for i, rs in enumerate(old):
            if spec_replicas(rs) == 0:
                continue
            did, updated = await self._scale_and_record(rs, 0, d)
            if did:
                old[i] = updated
                scaled = True
        if scaled:
            await self._sync_rollout_status(all_rss, new, d)
            return
        if self._old_pods_running(new, old, self._pods_of(d, rss)):
            await self._sync_rollout_status(all_rss, new, d)
            return
        if new is None:
            new, old = await self._get_all_replica_sets(d, rss, True)
            all_rss = [*old, new]
        assert new is not None
        await self._scale_and_record(new, spec_replicas(d), d)
        if deployment_complete(d, d["status"]):
            await self._cleanup(old, d)
        await self._sync_rollout_status(all_rss, new, d)

    @staticmethod
    def _old_pods_running(new: Obj | None, old: list[Obj], pods: dict[str, list[Obj]]) -> bool:
        if sum(_status_int(rs, "replicas") for rs in old) > 0:
            return True
        new_uid = None if new is None else new["metadata"]["uid"]
        for uid, plist in pods.items():
            if uid == new_uid:
                continue
            for p in plist:
                # finished pods do not count; anything else (Unknown, terminating) does
                if (p.get("status") or {}).get("phase") not in ("Failed", "Succeeded"):
                    return True
        return False

    # ---- history --------------------------------------------------------------------------
    async def _cleanup(self, old: list[Obj], d: Obj) -> None:
        """Delete the oldest empty ReplicaSets beyond revisionHistoryLimit."""
        limit = d["spec"].get("revisionHistoryLimit")
        if limit is None:
            return
        cleanable = [rs for rs in old if not rs["metadata"].get("deletionTimestamp")]
        diff = len(cleanable) - int(limit)
        if diff <= 0:
            return
        for rs in sorted(cleanable, key=cmp_to_key(_by_revision))[:diff]:
            md = rs["metadata"]
            if _status_int(rs, "replicas") != 0 or spec_replicas(rs) != 0 or \
                    int(md.get("generation") or 0) > _status_int(rs, "observedGeneration") or md.get("deletionTimestamp"):
                continue
            await self.client.delete_ignore_missing(RS_GVR, md["name"], md["namespace"])

    # ---- status ---------------------------------------------------------------------------
    async def _update_status(self, d: Obj) -> None:
        body = {**d, "status": normalize_status(d["status"])}
        updated = await self.client.update_status(D_GVR, body)
        # Keep writing on top of what we wrote (upstream re-sends the stale copy, conflicts and
        # retries the whole sync; the outcome is the same, minus the round trip).
        d["metadata"]["resourceVersion"] = updated["metadata"]["resourceVersion"]

    async def _sync_status_only(self, d: Obj, rss: list[Obj]) -> None:
        new, old = await self._get_all_replica_sets(d, rss, False)
        await self._sync_deployment_status([*old, new], new, d)

    async def _sync_deployment_status(self, all_rss: Sequence[Obj | None], new: Obj | None, d: Obj) -> None:
        status = calculate_status(all_rss, new, d, time.time())
        if status_equal(d["status"], status):
            return
        d["status"] = status
        await self._update_status(d)

    async def _check_paused_conditions(self, d: Obj) -> None:
        """Progressing turns Unknown while paused, so the deadline does not run out meanwhile."""
        if not has_progress_deadline(d):
            return
        cond = get_condition(d["status"], "Progressing")
        if cond is not None and cond.get("reason") == TIMED_OUT_REASON:
            return
        paused_exists = cond is not None and cond.get("reason") == PAUSED_REASON
        paused = bool(d["spec"].get("paused"))
        if paused and not paused_exists:
            c = new_condition("Progressing", "Unknown", PAUSED_REASON, "Deployment is paused", time.time())
        elif not paused and paused_exists:
            c = new_condition("Progressing", "Unknown", RESUMED_REASON, "Deployment is resumed", time.time())
        else:
            return
        set_condition(d["status"], c)
        await self._update_status(d)

    async def _sync_rollout_status(self, all_rss: Sequence[Obj | None], new: Obj | None, d: Obj) -> None:
        now = time.time()
        status = calculate_status(all_rss, new, d, now)
        if not has_progress_deadline(d):
            remove_condition(status, "Progressing")
        current = get_condition(d["status"], "Progressing")
        complete = (int(status.get("replicas") or 0) == int(status.get("updatedReplicas") or 0)
                    and current is not None and current.get("reason") == NEW_RS_AVAILABLE_REASON)
        if has_progress_deadline(d) and not complete:
            subject = f'ReplicaSet "{new["metadata"]["name"]}"' if new is not None else f'Deployment "{d["metadata"]["name"]}"'
            if deployment_complete(d, status):
                set_condition(status, new_condition("Progressing", "True", NEW_RS_AVAILABLE_REASON,
                                                    f"{subject} has successfully progressed.", now))
            elif deployment_progressing(d, status):
                c = new_condition("Progressing", "True", RS_UPDATED_REASON, f"{subject} is progressing.", now)
                # progress refreshes lastUpdateTime (the deadline's start) even with the same reason
                if current is not None:
                    if current.get("status") == "True":
                        c["lastTransitionTime"] = current.get("lastTransitionTime", c["lastTransitionTime"])
                    remove_condition(status, "Progressing")
                set_condition(status, c)
            elif deployment_timed_out(d, status, now):
                set_condition(status, new_condition("Progressing", "False", TIMED_OUT_REASON,
                                                    f"{subject} has timed out progressing.", now))
        failures = self._replica_failures(all_rss, new)
        if failures:
            set_condition(status, failures[0])
        else:
            remove_condition(status, "ReplicaFailure")
        if status_equal(d["status"], status):
            self._requeue_stuck(d, status, now)
            return
        d["status"] = status
        await self._update_status(d)

    @staticmethod
    def _replica_failures(all_rss: Sequence[Obj | None], new: Obj | None) -> list[Obj]:
        def conds(rs: Obj) -> list[Obj]:
            return [{"type": c["type"], "status": c.get("status"), "lastUpdateTime": c.get("lastTransitionTime"),
                     "lastTransitionTime": c.get("lastTransitionTime"), "reason": c.get("reason", ""),
                     "message": c.get("message", "")}
                    for c in (rs.get("status") or {}).get("conditions") or [] if c.get("type") == "ReplicaFailure"]
        if new is not None and conds(new):
            return conds(new)  # the new ReplicaSet's failures come first
        out: list[Obj] = []
        for rs in all_rss:
            if rs is not None:
                out.extend(conds(rs))
        return out

    def _requeue_stuck(self, d: Obj, status: Obj, now: float) -> None:
        """No progress and nothing left to write: come back when the progress deadline passes."""
        current = get_condition(d["status"], "Progressing")
        if not has_progress_deadline(d) or current is None:
            return
        if deployment_complete(d, status) or current.get("reason") == TIMED_OUT_REASON:
            return
        last = parse_time_or_none(current.get("lastUpdateTime"))
        if last is None:
            return
        after = last + int(d["spec"]["progressDeadlineSeconds"]) - now
        key = obj_key(d)
        if after < 1.0:
            self.queue.add_rate_limited(key)
        else:
            self.enqueue_after(key, after + 1.0)


def _sort_by_size(rss: list[Obj], newer_first: bool) -> list[Obj]:
    """Larger first; among equals newer first (scaling up) or older first (scaling down)."""
    def cmp(a: Obj, b: Obj) -> int:
        ra, rb = spec_replicas(a), spec_replicas(b)
        if ra != rb:
            return -1 if ra > rb else 1
        older_a = sort_by_creation([a, b])[0] is a
        if newer_first:
            return 1 if older_a else -1
        return -1 if older_a else 1
    return sorted(rss, key=cmp_to_key(cmp))


def _by_revision(a: Obj, b: Obj) -> int:
    ra, rb = revision(a), revision(b)
    if ra is None or rb is None or ra == rb:
        first = sort_by_creation([a, b])[0]
        return -1 if first is a else 1
    return -1 if ra < rb else 1
