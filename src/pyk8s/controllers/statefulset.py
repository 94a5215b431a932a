"""StatefulSet controller: pods with stable names, identities and storage, as upstream v1.33.

What upstream's pkg/controller/statefulset does, in our own code:
- Pod `<set>-<ordinal>` for ordinals [start, start+replicas); hostname = pod name, subdomain =
  serviceName; labels `statefulset.kubernetes.io/pod-name`, `apps.kubernetes.io/pod-index`
  and `controller-revision-hash` (the ControllerRevision the pod was made from).
- OrderedReady: create in ordinal order, each only when all before it are Running and Ready
  (and available for minReadySeconds); scale down from the highest ordinal, one at a time.
  Parallel: create and delete without waiting.
- volumeClaimTemplates: PVC `<claim>-<set>-<ordinal>` made before its pod, mounted in it;
  persistentVolumeClaimRetentionPolicy sets owner references so the garbage collector deletes
  claims with the set (whenDeleted) or with scaled-down pods (whenScaled).
- RollingUpdate from the highest ordinal down to `partition`, one pod at a time, waiting for
  each to be healthy; OnDelete replaces pods only when deleted. Revisions, status
  (replicas, readyReplicas, currentReplicas, updatedReplicas, availableReplicas,
  currentRevision, updateRevision, collisionCount) and history truncation follow upstream.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import re
import time
from collections.abc import Awaitable, Callable
from typing import Any

from ..api.errors import StatusError
from .base import GVRS, Controller
from .history import (
    CONTROLLER_REVISION_HASH_LABEL,
    STS_REVISION_HASH_LABEL,
    compute_hash,
    controller_ref,
    create_controller_revision,
    new_controller_revision,
    next_revision,
    revisions_equal,
    sort_revisions,
    template_patch,
)
from .workload_pods import claim_pods, get_controller_of, is_pod_available, is_pod_ready, selector_of

log = logging.getLogger("pyk8s.controllers.statefulset")

__all__ = ["StatefulSetController", "pod_name", "claim_name", "ordinal_of", "POD_NAME_LABEL", "POD_INDEX_LABEL"]

POD_NAME_LABEL = "statefulset.kubernetes.io/pod-name"
POD_INDEX_LABEL = "apps.kubernetes.io/pod-index"
_ORDINAL_RE = re.compile(r"^(.*)-([0-9]+)$")


# ---- identity helpers ----------------------------------------------------------------------

def ordinal_of(pod: dict[str, Any]) -> tuple[str, int]:
    """(parent name, ordinal) from `<parent>-<ordinal>`; ordinal -1 when the name has none."""
    m = _ORDINAL_RE.match((pod.get("metadata") or {}).get("name", ""))
    if not m:
        return "", -1
    return m.group(1), int(m.group(2))


def pod_name(sts: dict[str, Any], ordinal: int) -> str:
    return f"{sts['metadata']['name']}-{ordinal}"


def claim_name(sts: dict[str, Any], claim: dict[str, Any], ordinal: int) -> str:
    return f"{(claim.get('metadata') or {}).get('name', '')}-{sts['metadata']['name']}-{ordinal}"


def _spec(sts: dict[str, Any]) -> dict[str, Any]:
    return sts.get("spec") or {}


def start_ordinal(sts: dict[str, Any]) -> int:
    return int((_spec(sts).get("ordinals") or {}).get("start") or 0)


def end_ordinal(sts: dict[str, Any]) -> int:
    return start_ordinal(sts) + int(_spec(sts).get("replicas", 1)) - 1


def in_ordinal_range(pod: dict[str, Any], sts: dict[str, Any]) -> bool:
    o = ordinal_of(pod)[1]
    return start_ordinal(sts) <= o <= end_ordinal(sts)


def is_member(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    parent, o = ordinal_of(pod)
    return o >= 0 and parent == sts["metadata"]["name"]


def pod_revision(pod: dict[str, Any]) -> str:
    return ((pod.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL, "")


def _phase(pod: dict[str, Any]) -> str:
    return (pod.get("status") or {}).get("phase", "")


def is_created(pod: dict[str, Any]) -> bool:
    return bool(_phase(pod))


def is_terminating(pod: dict[str, Any]) -> bool:
    return bool((pod.get("metadata") or {}).get("deletionTimestamp"))


def running_and_ready(pod: dict[str, Any]) -> bool:
    return _phase(pod) == "Running" and is_pod_ready(pod)


def running_and_available(pod: dict[str, Any], min_ready: int) -> bool:
    return _phase(pod) == "Running" and is_pod_available(pod, min_ready)


def is_healthy(pod: dict[str, Any]) -> bool:
    return running_and_ready(pod) and not is_terminating(pod)


def identity_matches(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    parent, o = ordinal_of(pod)
    labels = (pod.get("metadata") or {}).get("labels") or {}
    return (o >= 0 and parent == sts["metadata"]["name"]
            and (pod.get("metadata") or {}).get("namespace") == sts["metadata"].get("namespace")
            and labels.get(POD_NAME_LABEL) == pod["metadata"]["name"] and labels.get(POD_INDEX_LABEL) == str(o))


def storage_matches(sts: dict[str, Any], pod: dict[str, Any]) -> bool:
    o = ordinal_of(pod)[1]
    if o < 0:
        return False
    vols = {v.get("name"): v for v in (pod.get("spec") or {}).get("volumes") or ()}
    for claim in _spec(sts).get("volumeClaimTemplates") or ():
        v = vols.get((claim.get("metadata") or {}).get("name"))
        if v is None or (v.get("persistentVolumeClaim") or {}).get("claimName") != claim_name(sts, claim, o):
            return False
    return True


def apply_revision(sts: dict[str, Any], revision: dict[str, Any]) -> dict[str, Any]:
    """The set as the revision describes it: its template replaced by the revision's."""
    out = copy.deepcopy(sts)
    template = copy.deepcopy(((revision.get("data") or {}).get("spec") or {}).get("template") or {})
    template.pop("$patch", None)
    out.setdefault("spec", {})["template"] = template
    return out


def new_pod(sts: dict[str, Any], ordinal: int, revision_name: str) -> dict[str, Any]:
    """A pod built from the set's template, with its identity and storage (newStatefulSetPod)."""
    template = (_spec(sts).get("template") or {})
    tmd = template.get("metadata") or {}
    name = pod_name(sts, ordinal)
    labels = dict(tmd.get("labels") or {})
    labels[POD_NAME_LABEL] = name
    labels[POD_INDEX_LABEL] = str(ordinal)
    labels[CONTROLLER_REVISION_HASH_LABEL] = revision_name
    md: dict[str, Any] = {"name": name, "namespace": sts["metadata"].get("namespace"), "labels": labels,
                          "ownerReferences": [controller_ref(sts)]}
    if tmd.get("annotations"):
        md["annotations"] = dict(tmd["annotations"])
    if tmd.get("finalizers"):
        md["finalizers"] = list(tmd["finalizers"])
    spec = copy.deepcopy(template.get("spec") or {})
    spec["hostname"] = name
    if _spec(sts).get("serviceName"):
        spec["subdomain"] = _spec(sts)["serviceName"]
    _update_storage(sts, spec, ordinal)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}


def _update_storage(sts: dict[str, Any], spec: dict[str, Any], ordinal: int) -> None:
    claims = _spec(sts).get("volumeClaimTemplates") or []
    if not claims:
        return
    mine = {(c.get("metadata") or {}).get("name"): c for c in claims}
    vols = [v for v in spec.get("volumes") or () if v.get("name") not in mine]
    for name, claim in mine.items():
        vols.append({"name": name, "persistentVolumeClaim": {"claimName": claim_name(sts, claim, ordinal)}})
    spec["volumes"] = vols


def claims_for(sts: dict[str, Any], ordinal: int) -> list[dict[str, Any]]:
    """The PVCs a pod needs: the templates with per-pod names and the set's selector labels."""
    out = []
    match = (_spec(sts).get("selector") or {}).get("matchLabels") or {}
    for tmpl in _spec(sts).get("volumeClaimTemplates") or ():
        c = copy.deepcopy(tmpl)
        c.pop("status", None)
        md = c.setdefault("metadata", {})
        md.pop("creationTimestamp", None)
        md["name"] = claim_name(sts, tmpl, ordinal)
        md["namespace"] = sts["metadata"].get("namespace")
        md["labels"] = {**(md.get("labels") or {}), **match}
        c["apiVersion"], c["kind"] = "v1", "PersistentVolumeClaim"
        out.append(c)
    return out


def _owner_ref(owner: dict[str, Any], kind: str, api_version: str) -> dict[str, Any]:
    md = owner["metadata"]
    return {"apiVersion": api_version, "kind": kind, "name": md["name"], "uid": md["uid"]}


def wanted_claim_owners(sts: dict[str, Any], pod: dict[str, Any]) -> tuple[bool, bool]:
    """(claim owned by the set, claim owned by the pod) per persistentVolumeClaimRetentionPolicy."""
    policy = _spec(sts).get("persistentVolumeClaimRetentionPolicy") or {}
    when_deleted = policy.get("whenDeleted") or "Retain"
    when_scaled = policy.get("whenScaled") or "Retain"
    scaled_down = not in_ordinal_range(pod, sts)
    by_set = when_deleted == "Delete" and not (when_scaled == "Delete" and scaled_down)
    by_pod = when_scaled == "Delete" and scaled_down
    return by_set, by_pod


def _claim_refs_for(claim: dict[str, Any], sts: dict[str, Any], pod: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The claim's ownerReferences as the policy wants them, or None when already right."""
    refs = list((claim.get("metadata") or {}).get("ownerReferences") or [])
    by_set, by_pod = wanted_claim_owners(sts, pod)
    changed = False
    for owner, kind, api, want in ((sts, "StatefulSet", "apps/v1", by_set), (pod, "Pod", "v1", by_pod)):
        uid = (owner.get("metadata") or {}).get("uid")
        if not uid:
            continue
        has = any(r.get("uid") == uid for r in refs)
        if want and not has:
            refs.append(_owner_ref(owner, kind, api))
            changed = True
        elif not want and has:
            refs = [r for r in refs if r.get("uid") != uid]
            changed = True
    return refs if changed else None


# ---- the controller -----------------------------------------------------------------------

class StatefulSetController(Controller):
    name = "statefulset"
    component = "statefulset-controller"
    workers = 5

    def __init__(self, ctx: Any, clock: Callable[[], float] = time.time) -> None:
        super().__init__(ctx)
        self.clock = clock

    def setup(self) -> None:
        self.sets = self.ctx.informer("statefulsets")
        self.pods = self.ctx.informer("pods")
        self.revisions = self.ctx.informer("controllerrevisions")
        self.claims = self.ctx.informer("persistentvolumeclaims")
        self.sets.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n), on_delete=self.enqueue)
        self.pods.add_handlers(on_add=self._pod_changed, on_update=self._pod_updated, on_delete=self._pod_changed)
        self.revisions.add_handlers(on_add=self._revision_changed, on_delete=self._revision_changed)

    # ---- event handlers ---------------------------------------------------------------------
    def _owner_key(self, obj: dict[str, Any], ref: dict[str, Any] | None = None) -> str | None:
        ref = ref if ref is not None else get_controller_of(obj)
        if ref is None or ref.get("kind") != "StatefulSet":
            return None
        key = f"{obj['metadata'].get('namespace')}/{ref.get('name')}"
        sts = self.sets.get(key)
        if sts is None or sts["metadata"].get("uid") != ref.get("uid"):
            return None
        return key

    def _pod_changed(self, pod: dict[str, Any]) -> None:
        key = self._owner_key(pod)
        if key is not None:
            self.enqueue(key)
            return
        if get_controller_of(pod) is None:
            labels = pod["metadata"].get("labels") or {}
            for sts in self.sets.list(pod["metadata"].get("namespace", "")):
                if selector_of(sts).matches(labels):
                    self.enqueue(sts)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if get_controller_of(old) != get_controller_of(new):
            self._pod_changed(old)
        self._pod_changed(new)
        # a pod that just became ready may be waited for minReadySeconds before it counts
        key = self._owner_key(new)
        if key is not None and is_pod_ready(new) and not is_pod_ready(old):
            sts = self.sets.get(key)
            mrs = int(_spec(sts or {}).get("minReadySeconds") or 0)
            if mrs:
                self.enqueue_after(key, mrs + 1)

    def _revision_changed(self, rev: dict[str, Any]) -> None:
        key = self._owner_key(rev)
        if key is not None:
            self.enqueue(key)

    # ---- sync -------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        shared = self.sets.get(key)
        if shared is None:
            return
        sts = copy.deepcopy(shared)
        members = [p for p in self.pods.list(sts["metadata"].get("namespace", ""))
                   if is_member(sts, p) or (get_controller_of(p) or {}).get("uid") == sts["metadata"]["uid"]]
        pods = await claim_pods(self.client, sts, members, selector_of(sts))
        pods = [p for p in pods if is_member(sts, p)]
        revisions = self._revisions(sts)
        current, update, collision = await self._get_revisions(sts, revisions)
        status = await self._update_set(sts, current, update, collision, pods)
        await self._update_status(sts, status)
        await self._truncate_history(sts, pods, self._revisions(sts), current, update)
        mrs = int(_spec(sts).get("minReadySeconds") or 0)
        if mrs and status.get("availableReplicas", 0) != int(_spec(sts).get("replicas", 1)):
            self.enqueue_after(key, float(mrs))

    # ---- revisions --------------------------------------------------------------------------
    def _revisions(self, sts: dict[str, Any]) -> list[dict[str, Any]]:
        uid = sts["metadata"]["uid"]
        sel = selector_of(sts)
        return sort_revisions(
            r for r in self.revisions.list(sts["metadata"].get("namespace", ""))
            if (get_controller_of(r) or {}).get("uid") == uid
            or (get_controller_of(r) is None and sel.matches(r["metadata"].get("labels") or {})))

    async def _get_revisions(self, sts: dict[str, Any],
                             revisions: list[dict[str, Any]]) -> tuple[dict[str, Any], dict[str, Any], int]:
        collision = int((sts.get("status") or {}).get("collisionCount") or 0)
        patch = template_patch(sts)
        probe = new_controller_revision(sts, patch, next_revision(revisions), compute_hash(patch, collision),
                                        STS_REVISION_HASH_LABEL, (sts.get("metadata") or {}).get("annotations"))
        equal = [r for r in revisions if revisions_equal(r, probe)]
        if equal and revisions and revisions_equal(revisions[-1], equal[-1]):
            update = revisions[-1]  # the newest revision is the set's template: nothing changed
        elif equal:
            # rolling back to an earlier template: that revision becomes the newest again
            body = copy.deepcopy(equal[-1])
            body["revision"] = probe["revision"]
            update = await self.client.update(GVRS["controllerrevisions"], body)
        else:
            update, collision = await create_controller_revision(self.client, sts, probe, collision,
                                                                 STS_REVISION_HASH_LABEL)
        cur_name = (sts.get("status") or {}).get("currentRevision")
        current = next((r for r in revisions if r["metadata"]["name"] == cur_name), None) or update
        return current, update, collision

    async def _truncate_history(self, sts: dict[str, Any], pods: list[dict[str, Any]], revisions: list[dict[str, Any]],
                                current: dict[str, Any], update: dict[str, Any]) -> None:
        live = {current["metadata"]["name"], update["metadata"]["name"]} | {pod_revision(p) for p in pods}
        history = [r for r in revisions if r["metadata"]["name"] not in live]
        limit = int(_spec(sts).get("revisionHistoryLimit", 10))
        for rev in history[:max(0, len(history) - limit)]:
            await self.client.delete_ignore_missing(GVRS["controllerrevisions"], rev["metadata"]["name"],
                                                    rev["metadata"].get("namespace"))

    # ---- the ordered state machine ------------------------------------------------------------
    async def _update_set(self, sts: dict[str, Any], current: dict[str, Any], update: dict[str, Any],
                          collision: int, pods: list[dict[str, Any]]) -> dict[str, Any]:
        current_set = apply_revision(sts, current)
        update_set = apply_revision(sts, update)
        min_ready = int(_spec(sts).get("minReadySeconds") or 0)
        status: dict[str, Any] = {"observedGeneration": sts["metadata"].get("generation"),
                                  "currentRevision": current["metadata"]["name"],
                                  "updateRevision": update["metadata"]["name"], "collisionCount": collision}
        self._count(status, min_ready, current, update, pods)
        start, end = start_ordinal(sts), end_ordinal(sts)
        replicas: list[dict[str, Any] | None] = [None] * max(0, end - start + 1)
        condemned: list[dict[str, Any]] = []
        for pod in pods:
            o = ordinal_of(pod)[1]
            if start <= o <= end:
                replicas[o - start] = pod
            elif o >= 0:
                condemned.append(pod)
        us = _spec(sts).get("updateStrategy") or {}
        partition = int((us.get("rollingUpdate") or {}).get("partition") or 0)
        rolling = us.get("type", "RollingUpdate") == "RollingUpdate"
        for i in range(len(replicas)):
            if replicas[i] is None:
                o = start + i
                # below the partition, missing pods come back at the current revision
                if rolling and o < start + partition:
                    replicas[i] = new_pod(current_set, o, current["metadata"]["name"])
                else:
                    replicas[i] = new_pod(update_set, o, update["metadata"]["name"])
        reps: list[dict[str, Any]] = [p for p in replicas if p is not None]
        condemned.sort(key=lambda p: -ordinal_of(p)[1])
        first_unhealthy: dict[str, Any] | None = None
        for p in reps + condemned[::-1]:
            if not is_healthy(p):
                first_unhealthy = p
                break
        if sts["metadata"].get("deletionTimestamp"):
            return status
        monotonic = _spec(sts).get("podManagementPolicy", "OrderedReady") != "Parallel"

        def recount() -> dict[str, Any]:
            self._count(status, min_ready, current, update, reps + condemned)
            return status

        if await self._run_for_all(len(reps), lambda i: self._process_replica(sts, update_set, monotonic, reps, i),
                                   monotonic):
            return recount()
        if await self._run_for_all(len(condemned), lambda i: self._fix_claims(sts, condemned[i]), monotonic):
            return recount()
        if await self._run_for_all(len(condemned), lambda i: self._process_condemned(
                sts, first_unhealthy, monotonic, condemned, i, min_ready), monotonic):
            return recount()
        recount()
        if not rolling:
            return status  # OnDelete: pods change only when someone deletes them
        # roll from the highest ordinal down to the partition, one unhealthy pod at a time
        for target in range(len(reps) - 1, partition - 1, -1):
            pod = reps[target]
            if pod_revision(pod) != update["metadata"]["name"] and not is_terminating(pod):
                await self._delete_pod(sts, pod)
                status["currentReplicas"] = status.get("currentReplicas", 0) - 1
                return status
            if not is_healthy(pod):
                return status
        return status

    @staticmethod
    async def _run_for_all(n: int, fn: Callable[[int], Awaitable[bool]], monotonic: bool) -> bool:
        """Monotonic: one by one, stopping at the first that says stop. Burst: all at once."""
        if monotonic:
            for i in range(n):
                if await fn(i):
                    return True
            return False
        results = await asyncio.gather(*(fn(i) for i in range(n)), return_exceptions=True)
        for r in results:
            if isinstance(r, BaseException):
                raise r
        return False

    def _count(self, status: dict[str, Any], min_ready: int, current: dict[str, Any], update: dict[str, Any],
               pods: list[dict[str, Any]]) -> None:
        replicas = ready = available = cur = upd = 0
        for pod in pods:
            if is_created(pod):
                replicas += 1
            if running_and_ready(pod):
                ready += 1
                if running_and_available(pod, min_ready):
                    available += 1
            if is_created(pod) and not is_terminating(pod):
                rev = pod_revision(pod)
                cur += rev == current["metadata"]["name"]
                upd += rev == update["metadata"]["name"]
        status.update(replicas=replicas, readyReplicas=ready, availableReplicas=available,
                      currentReplicas=cur, updatedReplicas=upd)

    async def _process_replica(self, sts: dict[str, Any], update_set: dict[str, Any], monotonic: bool,
                               reps: list[dict[str, Any]], i: int) -> bool:
        pod = reps[i]
        if _phase(pod) in ("Failed", "Succeeded"):
            # a finished pod is replaced: delete it, recreate once it is gone
            if not is_terminating(pod):
                await self._delete_pod(sts, pod)
            return True
        if not is_created(pod):
            if await self._claims_stale(sts, pod):
                return True  # a claim still belongs to a previous pod being deleted: wait for it
            created = await self._create_pod(sts, pod)
            if created is not None:
                reps[i] = created
            if monotonic:
                return True
            return False
        if _phase(pod) == "Pending":
            await self._create_missing_claims(sts, pod)
        if is_terminating(pod) and monotonic:
            return True  # wait for graceful deletion before going on
        if not running_and_ready(pod) and monotonic:
            return True  # each pod waits for all its predecessors to be Running and Ready
        if not running_and_available(pod, int(_spec(sts).get("minReadySeconds") or 0)) and monotonic:
            return True
        if not identity_matches(sts, pod):
            await self._fix_identity(sts, pod)
        await self._fix_claims(sts, pod)
        return False

    async def _process_condemned(self, sts: dict[str, Any], first_unhealthy: dict[str, Any] | None,
                                 monotonic: bool, condemned: list[dict[str, Any]], i: int, min_ready: int) -> bool:
        pod = condemned[i]
        if is_terminating(pod):
            return monotonic  # one at a time: wait for it to go
        if monotonic and pod is not first_unhealthy and (not running_and_ready(pod)
                                                         or not running_and_available(pod, min_ready)):
            return True
        await self._delete_pod(sts, pod)
        return True

    # ---- pod and claim writes ---------------------------------------------------------------
    async def _create_pod(self, sts: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
        await self._create_missing_claims(sts, pod)
        name = pod["metadata"]["name"]
        try:
            created = await self.client.create(GVRS["pods"], pod, pod["metadata"]["namespace"])
        except StatusError as e:
            if e.code == 409:
                return None  # our cache is behind: the pod exists, the informer will tell us
            self.recorder.event(sts, "Warning", "FailedCreate",
                                f"create Pod {name} in StatefulSet {sts['metadata']['name']} failed error: {e.message}")
            raise
        self.recorder.event(sts, "Normal", "SuccessfulCreate",
                            f"create Pod {name} in StatefulSet {sts['metadata']['name']} successful")
        await self._fix_claims(sts, created)
        return created

    async def _delete_pod(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        name = pod["metadata"]["name"]
        try:
            await self.client.delete(GVRS["pods"], name, pod["metadata"].get("namespace"),
                                     preconditions={"uid": pod["metadata"]["uid"]})
        except StatusError as e:
            if e.code in (404, 409):
                return
            self.recorder.event(sts, "Warning", "FailedDelete",
                                f"delete Pod {name} in StatefulSet {sts['metadata']['name']} failed error: {e.message}")
            raise
        self.recorder.event(sts, "Normal", "SuccessfulDelete",
                            f"delete Pod {name} in StatefulSet {sts['metadata']['name']} successful")

    async def _fix_identity(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        o = ordinal_of(pod)[1]
        patch = {"metadata": {"labels": {POD_NAME_LABEL: pod["metadata"]["name"], POD_INDEX_LABEL: str(o)}}}
        try:
            await self.client.patch(GVRS["pods"], pod["metadata"]["name"], patch, pod["metadata"].get("namespace"))
        except StatusError as e:
            if e.code != 404:
                raise
            return
        self.recorder.event(sts, "Normal", "SuccessfulUpdate",
                            f"update Pod {pod['metadata']['name']} in StatefulSet {sts['metadata']['name']} successful")

    async def _create_missing_claims(self, sts: dict[str, Any], pod: dict[str, Any]) -> None:
        o = ordinal_of(pod)[1]
        ns = sts["metadata"].get("namespace")
        for claim in claims_for(sts, o):
            cname = claim["metadata"]["name"]
            if self.claims.get(f"{ns}/{cname}") is not None:
                continue
            try:
                await self.client.create(GVRS["persistentvolumeclaims"], claim, ns)
            except StatusError as e:
                if e.code == 409:
                    continue
                self.recorder.event(sts, "Warning", "FailedCreate",
                                    f"create Claim {cname} for Pod {pod['metadata']['name']} in StatefulSet "
                                    f"{sts['metadata']['name']} failed error: {e.message}")
                raise
            self.recorder.event(sts, "Normal", "SuccessfulCreate",
                                f"create Claim {cname} Pod {pod['metadata']['name']} in StatefulSet "
                                f"{sts['metadata']['name']} success")

    async def _claims_stale(self, sts: dict[str, Any], pod: dict[str, Any]) -> bool:
        """A claim owned by a pod of the same name but another uid belongs to a pod being replaced."""
        ns = sts["metadata"].get("namespace")
        for claim in claims_for(sts, ordinal_of(pod)[1]):
            existing = self.claims.get(f"{ns}/{claim['metadata']['name']}")
            if existing is None:
                continue
            for ref in existing["metadata"].get("ownerReferences") or ():
                if ref.get("kind") == "Pod" and ref.get("name") == pod["metadata"]["name"] \
                        and ref.get("uid") != pod["metadata"].get("uid"):
                    return True
        return False

    async def _fix_claims(self, sts: dict[str, Any], pod: dict[str, Any]) -> bool:
        """Owner references on the pod's claims as the retention policy wants them."""
        if not pod["metadata"].get("uid"):
            return False
        ns = sts["metadata"].get("namespace")
        for claim in claims_for(sts, ordinal_of(pod)[1]):
            existing = self.claims.get(f"{ns}/{claim['metadata']['name']}")
            if existing is None:
                existing = await self.client.get_or_none(GVRS["persistentvolumeclaims"], claim["metadata"]["name"], ns)
                if existing is None:
                    continue
            refs = _claim_refs_for(existing, sts, pod)
            if refs is None:
                continue
            try:
                await self.client.patch(GVRS["persistentvolumeclaims"], existing["metadata"]["name"],
                                        {"metadata": {"ownerReferences": refs}}, ns)
            except StatusError as e:
                if e.code != 404:
                    raise
        return False

    # ---- status -----------------------------------------------------------------------------
    async def _update_status(self, sts: dict[str, Any], status: dict[str, Any]) -> None:
        us = _spec(sts).get("updateStrategy") or {}
        if us.get("type", "RollingUpdate") == "RollingUpdate" and status["updatedReplicas"] == status["replicas"] \
                and status["readyReplicas"] == status["replicas"]:
            # the rollout is complete: the update revision becomes the current one
            status["currentReplicas"] = status["updatedReplicas"]
            status["currentRevision"] = status["updateRevision"]
        old = sts.get("status") or {}
        keys = ("replicas", "readyReplicas", "currentReplicas", "updatedReplicas", "availableReplicas",
                "currentRevision", "updateRevision", "collisionCount")
        if int(status.get("observedGeneration") or 0) <= int(old.get("observedGeneration") or 0) and \
                all((old.get(k) or 0) == (status.get(k) or 0) for k in keys):
            return
        # omitempty fields vanish at zero; replicas and availableReplicas always show
        patch = {k: (v if v or k in ("replicas", "availableReplicas", "collisionCount") else None)
                 for k, v in status.items()}
        try:
            await self.client.patch(GVRS["statefulsets"], sts["metadata"]["name"], {"status": patch},
                                    sts["metadata"].get("namespace"), sub="status")
        except StatusError as e:
            if e.code != 404:
                raise

