"""DaemonSet controller: one daemon pod on every eligible node, rolled out revision by revision.

As upstream's pkg/controller/daemon: a node is eligible when the pod template's nodeSelector
and required node affinity match it and its NoSchedule/NoExecute taints are tolerated (with
the tolerations every daemon pod gets). Pods are not bound by us: each carries required node
affinity on `metadata.name` and the scheduler places it. Every template change is snapshotted
in a ControllerRevision; pods carry `controller-revision-hash` and `pod-template-generation`.
RollingUpdate replaces old pods within maxUnavailable (or surges within maxSurge), so a bad
template stalls after the first node until fixed; OnDelete replaces pods only when deleted.
"""

from __future__ import annotations

import asyncio
import copy
import logging
import time
from typing import Any

from ..api.errors import StatusError
from ..client import obj_key
from ..scheduler.selectors import (
    RequiredNodeAffinity,
    compile_tolerations,
    find_untolerated_taint,
    node_taints,
)
from .base import GVRS, Controller
from .history import (
    CONTROLLER_REVISION_HASH_LABEL,
    compute_hash,
    controller_ref,
    max_revision,
    new_controller_revision,
    revisions_equal,
    sort_revisions,
    template_patch,
)
from .workload_pods import (
    Expectations,
    claim_pods,
    get_controller_of,
    is_pod_available,
    is_pod_ready,
    is_pod_terminal,
    scaled_value,
    selector_of,
)

log = logging.getLogger("pyk8s.controllers.daemonset")

__all__ = ["DaemonSetController", "node_should_run_daemon_pod", "daemon_tolerations",
           "replace_node_name_affinity", "TEMPLATE_GENERATION_LABEL"]

TEMPLATE_GENERATION_LABEL = "pod-template-generation"
TEMPLATE_GENERATION_ANNOTATION = "deprecated.daemonset.template.generation"
BURST_REPLICAS = 250  # as upstream: at most this many creates/deletes per sync
SLOW_START_INITIAL_BATCH = 1

_NO_SCHEDULE_OR_EXECUTE = frozenset(("NoSchedule", "NoExecute"))
_NO_EXECUTE = frozenset(("NoExecute",))


# ---- pure helpers -------------------------------------------------------------------------

def daemon_tolerations(spec: dict[str, Any]) -> list[dict[str, Any]]:
    """The pod's tolerations plus those upstream adds to every daemon pod
    (util.AddOrUpdateDaemonPodTolerations): daemons run through node problems that would
    evict or keep out ordinary pods, without a tolerationSeconds limit."""
    tols = [dict(t) for t in spec.get("tolerations") or ()]
    wanted = [
        ("node.kubernetes.io/not-ready", "NoExecute"),
        ("node.kubernetes.io/unreachable", "NoExecute"),
        ("node.kubernetes.io/disk-pressure", "NoSchedule"),
        ("node.kubernetes.io/memory-pressure", "NoSchedule"),
        ("node.kubernetes.io/pid-pressure", "NoSchedule"),
        ("node.kubernetes.io/unschedulable", "NoSchedule"),
    ]
    if spec.get("hostNetwork"):
        wanted.append(("node.kubernetes.io/network-unavailable", "NoSchedule"))
    for key, effect in wanted:
        tol = {"key": key, "operator": "Exists", "effect": effect}
        # AddOrUpdateTolerationInPodSpec: a toleration matching key/operator/value/effect is replaced
        for i, t in enumerate(tols):
            if (t.get("key") == key and (t.get("operator") or "Equal") == "Exists"
                    and (t.get("value") or "") == "" and t.get("effect") == effect):
                tols[i] = tol
                break
        else:
            tols.append(tol)
    return tols


def replace_node_name_affinity(affinity: dict[str, Any] | None, node_name: str) -> dict[str, Any]:
    """Pin the pod to one node with required affinity on metadata.name, replacing any other
    required terms (the controller already checked the node fits them), as upstream's
    ReplaceDaemonSetPodNodeNameNodeAffinity; preferred terms and pod (anti-)affinity stay."""
    term = {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}
    out = copy.deepcopy(affinity) if affinity else {}
    na = out.setdefault("nodeAffinity", {})
    req = na.get("requiredDuringSchedulingIgnoredDuringExecution")
    if not isinstance(req, dict):
        na["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [term]}
    else:
        req["nodeSelectorTerms"] = [term]
    return out


def target_node_name(pod: dict[str, Any]) -> str | None:
    """spec.nodeName, or for an unscheduled daemon pod the node its affinity pins it to."""
    spec = pod.get("spec") or {}
    if spec.get("nodeName"):
        return spec["nodeName"]
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    for term in req.get("nodeSelectorTerms") or ():
        for f in term.get("matchFields") or ():
            if f.get("key") == "metadata.name" and f.get("operator") == "In" and len(f.get("values") or ()) == 1:
                return f["values"][0]
    return None


def node_should_run_daemon_pod(node: dict[str, Any], ds: dict[str, Any]) -> tuple[bool, bool]:
    """(should run a daemon pod here, should an existing one keep running) — upstream's
    NodeShouldRunDaemonPod: affinity must fit; untolerated NoSchedule keeps new pods out but
    lets running ones stay, untolerated NoExecute evicts."""
    tspec = ((ds.get("spec") or {}).get("template") or {}).get("spec") or {}
    name = (node.get("metadata") or {}).get("name", "")
    if tspec.get("nodeName") and tspec["nodeName"] != name:
        return False, False
    labels = (node.get("metadata") or {}).get("labels") or {}
    if not RequiredNodeAffinity.from_spec(tspec).matches(labels, name):
        return False, False
    tols = compile_tolerations(daemon_tolerations(tspec))
    taints = node_taints(node)
    if find_untolerated_taint(taints, tols, _NO_SCHEDULE_OR_EXECUTE) is not None:
        return False, find_untolerated_taint(taints, tols, _NO_EXECUTE) is None
    return True, True


def template_generation(ds: dict[str, Any]) -> int | None:
    ann = (ds.get("metadata") or {}).get("annotations") or {}
    try:
        return int(ann[TEMPLATE_GENERATION_ANNOTATION])
    except (KeyError, ValueError):
        return None


def is_pod_updated(ds: dict[str, Any], pod: dict[str, Any], hash_: str) -> bool:
    """A pod is of the current revision when its hash or its template generation says so."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    gen = template_generation(ds)
    return (bool(hash_) and labels.get(CONTROLLER_REVISION_HASH_LABEL) == hash_) or \
        (gen is not None and labels.get(TEMPLATE_GENERATION_LABEL) == str(gen))


def _by_scheduled_then_age(pod: dict[str, Any]) -> tuple[Any, ...]:
    md = pod.get("metadata") or {}
    return (not (pod.get("spec") or {}).get("nodeName"), md.get("creationTimestamp") or "", md.get("name") or "")


def allows_surge(ds: dict[str, Any]) -> bool:
    us = (ds.get("spec") or {}).get("updateStrategy") or {}
    if us.get("type", "RollingUpdate") != "RollingUpdate":
        return False
    ms = (us.get("rollingUpdate") or {}).get("maxSurge")
    return ms not in (None, 0, "0", "0%")


class _FailedPodsBackoff:
    """Per (DaemonSet, node) backoff before killing another failed daemon pod (1 s doubling to 15 min)."""

    def __init__(self, initial: float = 1.0, maximum: float = 900.0) -> None:
        self.initial, self.maximum = initial, maximum
        self._entries: dict[str, tuple[float, float]] = {}  # key -> (duration, last update)

    def in_backoff(self, key: str, now: float) -> float:
        e = self._entries.get(key)
        if e is None or now - e[1] >= e[0]:
            return 0.0
        return e[0] - (now - e[1])

    def next(self, key: str, now: float) -> None:
        e = self._entries.get(key)
        if e is None or now - e[1] > 2 * self.maximum:
            self._entries[key] = (self.initial, now)
        else:
            self._entries[key] = (min(e[0] * 2, self.maximum), now)


# ---- the controller -----------------------------------------------------------------------

class DaemonSetController(Controller):
    name = "daemonset"
    component = "daemonset-controller"
    workers = 2

    def setup(self) -> None:
        self.expectations = Expectations()
        self.failed_backoff = _FailedPodsBackoff()
        self.dsets = self.ctx.informer("daemonsets")
        self.pods = self.ctx.informer("pods")
        self.nodes = self.ctx.informer("nodes")
        self.revisions = self.ctx.informer("controllerrevisions")
        self.dsets.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n),
                                on_delete=self._ds_deleted)
        self.pods.add_handlers(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_deleted)
        self.nodes.add_handlers(on_add=lambda n: self._enqueue_all(), on_update=self._node_updated)
        self.revisions.add_handlers(on_add=self._revision_changed, on_update=lambda o, n: self._revision_changed(n),
                                    on_delete=self._revision_changed)

    # ---- event handlers ---------------------------------------------------------------------
    def _ds_deleted(self, ds: dict[str, Any]) -> None:
        self.expectations.delete(obj_key(ds))
        self.enqueue(ds)

    def _enqueue_all(self) -> None:
        for ds in self.dsets.list():
            self.enqueue(ds)

    def _owner(self, pod: dict[str, Any]) -> dict[str, Any] | None:
        ref = get_controller_of(pod)
        if ref is None or ref.get("kind") != "DaemonSet":
            return None
        ds = self.dsets.get(f"{pod['metadata'].get('namespace')}/{ref.get('name')}")
        if ds is None or ds["metadata"].get("uid") != ref.get("uid"):
            return None
        return ds

    def _matching(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        labels = pod["metadata"].get("labels") or {}
        return [ds for ds in self.dsets.list(pod["metadata"].get("namespace", ""))
                if selector_of(ds).matches(labels)]

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if pod["metadata"].get("deletionTimestamp"):
            self._pod_deleted(pod)
            return
        if get_controller_of(pod) is not None:
            ds = self._owner(pod)
            if ds is not None:
                self.expectations.creation_observed(obj_key(ds))
                self.enqueue(ds)
            return
        for ds in self._matching(pod):  # an orphan: whoever selects it may adopt it
            self.enqueue(ds)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if new["metadata"].get("deletionTimestamp") and not old["metadata"].get("deletionTimestamp"):
            self._pod_deleted(new)  # expect the replacement as soon as deletion starts
            return
        old_ref, new_ref = get_controller_of(old), get_controller_of(new)
        if old_ref != new_ref and old_ref is not None:
            ds = self._owner(old)
            if ds is not None:
                self.enqueue(ds)
        if new_ref is not None:
            ds = self._owner(new)
            if ds is not None:
                self.enqueue(ds)
            return
        if old_ref != new_ref or old["metadata"].get("labels") != new["metadata"].get("labels"):
            for ds in self._matching(new):
                self.enqueue(ds)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        ds = self._owner(pod)
        if ds is None:
            return
        self.expectations.deletion_observed(obj_key(ds))
        self.enqueue(ds)

    def _node_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        # only what decides eligibility matters (labels, taints, a pinned node name); heartbeats do not
        if (old["metadata"].get("labels") != new["metadata"].get("labels")
                or (old.get("spec") or {}) != (new.get("spec") or {})):
            self._enqueue_all()

    def _revision_changed(self, rev: dict[str, Any]) -> None:
        ref = get_controller_of(rev)
        if ref is not None and ref.get("kind") == "DaemonSet":
            self.enqueue(f"{rev['metadata'].get('namespace')}/{ref.get('name')}")

    # ---- sync -------------------------------------------------------------------------------
    async def sync(self, key: str) -> None:
        ds = self.dsets.get(key)
        if ds is None:
            self.expectations.delete(key)
            return
        if ds["metadata"].get("deletionTimestamp"):
            return  # the garbage collector removes the pods
        sel = (ds.get("spec") or {}).get("selector") or {}
        if not sel.get("matchLabels") and not sel.get("matchExpressions"):
            self.recorder.event(ds, "Warning", "SelectingAll",
                                "This daemon set is selecting all pods. A non-empty selector is required.")
            return
        nodes = self.nodes.list()
        cur, old = await self._construct_history(ds)
        hash_ = ((cur.get("metadata") or {}).get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL, "")
        if not self.expectations.satisfied(key):
            await self._update_status(ds, nodes, hash_, False)
            return
        await self._manage(ds, nodes, hash_)
        if self.expectations.satisfied(key):
            if ((ds.get("spec") or {}).get("updateStrategy") or {}).get("type", "RollingUpdate") == "RollingUpdate":
                await self._rolling_update(ds, nodes, hash_)
        await self._cleanup_history(ds, old)
        await self._update_status(ds, nodes, hash_, True)

    # ---- pods by node -----------------------------------------------------------------------
    async def _daemon_pods(self, ds: dict[str, Any]) -> list[dict[str, Any]]:
        pods = self.pods.list(ds["metadata"].get("namespace", ""))
        return await claim_pods(self.client, ds, pods, selector_of(ds))

    async def _nodes_to_daemon_pods(self, ds: dict[str, Any], include_deleted_terminal: bool) -> dict[str, list[dict[str, Any]]]:
        out: dict[str, list[dict[str, Any]]] = {}
        for pod in await self._daemon_pods(ds):
            if not include_deleted_terminal and is_pod_terminal(pod) and pod["metadata"].get("deletionTimestamp"):
                continue  # only a kubelet or the pod GC has anything left to do with it
            node = target_node_name(pod)
            if node is None:
                continue
            out.setdefault(node, []).append(pod)
        return out

    # ---- manage: one pod per eligible node --------------------------------------------------
    async def _manage(self, ds: dict[str, Any], nodes: list[dict[str, Any]], hash_: str) -> None:
        node_pods = await self._nodes_to_daemon_pods(ds, True)
        needing: list[str] = []
        to_delete: list[dict[str, Any]] = []
        surge = allows_surge(ds)
        now = time.monotonic()
        for node in nodes:
            name = node["metadata"]["name"]
            should_run, should_continue = node_should_run_daemon_pod(node, ds)
            pods = node_pods.get(name)
            if should_run and not pods:
                needing.append(name)
            elif should_continue and pods:
                running: list[dict[str, Any]] = []
                for pod in pods:
                    if pod["metadata"].get("deletionTimestamp"):
                        continue
                    phase = (pod.get("status") or {}).get("phase")
                    if phase == "Failed":
                        # daemons fight kubelets that reject them: back off per node before killing again
                        bkey = f"{ds['metadata']['uid']}/{name}"
                        wait = self.failed_backoff.in_backoff(bkey, now)
                        if wait > 0:
                            self.enqueue_after(ds, wait)
                            continue
                        self.failed_backoff.next(bkey, now)
                        self.recorder.event(ds, "Warning", "FailedDaemonPod",
                                            f"Found failed daemon pod {pod['metadata'].get('namespace')}/"
                                            f"{pod['metadata']['name']} on node {name}, will try to kill it")
                        to_delete.append(pod)
                    elif phase == "Succeeded":
                        self.recorder.event(ds, "Normal", "SucceededDaemonPod",
                                            f"Found succeeded daemon pod {pod['metadata'].get('namespace')}/"
                                            f"{pod['metadata']['name']} on node {name}, will try to delete it")
                        to_delete.append(pod)
                    else:
                        running.append(pod)
                if len(running) > 1:
                    running.sort(key=_by_scheduled_then_age)
                    if not surge:
                        to_delete.extend(running[1:])  # keep the oldest
                    else:
                        # keep the oldest of the current revision and the oldest of the others
                        seen_new = seen_old = False
                        for pod in running:
                            is_new = ((pod["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) == hash_)
                            if is_new and not seen_new:
                                seen_new = True
                            elif not is_new and not seen_old:
                                seen_old = True
                            else:
                                to_delete.append(pod)
            elif not should_continue and pods:
                to_delete.extend(p for p in pods if not p["metadata"].get("deletionTimestamp"))
        # unscheduled pods pinned to nodes that no longer exist
        names = {n["metadata"]["name"] for n in nodes}
        for node_name, pods in node_pods.items():
            if node_name not in names:
                to_delete.extend(p for p in pods if not (p.get("spec") or {}).get("nodeName")
                                 and not p["metadata"].get("deletionTimestamp"))
        await self._sync_nodes(ds, to_delete, needing, hash_)

    def _pod_template(self, ds: dict[str, Any], hash_: str) -> dict[str, Any]:
        template = copy.deepcopy((ds.get("spec") or {}).get("template") or {})
        spec = template.setdefault("spec", {})
        spec["tolerations"] = daemon_tolerations(spec)
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        gen = template_generation(ds)
        if gen is not None:
            labels[TEMPLATE_GENERATION_LABEL] = str(gen)
        if hash_:
            labels[CONTROLLER_REVISION_HASH_LABEL] = hash_
        template.setdefault("metadata", {})["labels"] = labels
        return template

    async def _sync_nodes(self, ds: dict[str, Any], to_delete: list[dict[str, Any]], nodes_needing: list[str],
                          hash_: str) -> None:
        key = obj_key(ds)
        creates = nodes_needing[:BURST_REPLICAS]
        deletes = to_delete[:BURST_REPLICAS]
        if not creates and not deletes:
            return
        self.expectations.set(key, len(creates), len(deletes))
        template = self._pod_template(ds, hash_)
        errors: list[BaseException] = []
        # slow start, as upstream: batches of 1, 2, 4, ... stop at the first batch with a failure
        pending = list(creates)
        batch = SLOW_START_INITIAL_BATCH
        while pending:
            now_batch, pending = pending[:batch], pending[batch:]
            results = await asyncio.gather(*(self._create_pod(ds, template, n) for n in now_batch),
                                           return_exceptions=True)
            failed = [r for r in results if isinstance(r, BaseException)]
            errors.extend(failed)
            if failed:
                for _ in pending:  # never attempted: not expected either
                    self.expectations.creation_observed(key)
                break
            batch *= 2
        results = await asyncio.gather(*(self._delete_pod(ds, p) for p in deletes), return_exceptions=True)
        errors.extend(r for r in results if isinstance(r, BaseException))
        if errors:
            raise errors[0]

    async def _create_pod(self, ds: dict[str, Any], template: dict[str, Any], node_name: str) -> None:
        tmd = template.get("metadata") or {}
        spec = copy.deepcopy(template.get("spec") or {})
        spec["affinity"] = replace_node_name_affinity(spec.get("affinity"), node_name)
        md: dict[str, Any] = {"generateName": f"{ds['metadata']['name']}-", "namespace": ds["metadata"].get("namespace"),
                              "labels": dict(tmd.get("labels") or {}), "ownerReferences": [controller_ref(ds)]}
        if tmd.get("annotations"):
            md["annotations"] = dict(tmd["annotations"])
        if tmd.get("finalizers"):
            md["finalizers"] = list(tmd["finalizers"])
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec}
        try:
            created = await self.client.create(GVRS["pods"], pod, md["namespace"])
        except StatusError as e:
            self.expectations.creation_observed(obj_key(ds))
            if e.code == 403 and "being terminated" in e.message:
                return  # the namespace is going away: every further create fails the same way
            self.recorder.event(ds, "Warning", "FailedCreate", f"Error creating: {e.message}")
            raise
        self.recorder.event(ds, "Normal", "SuccessfulCreate", f"Created pod: {created['metadata']['name']}")

    async def _delete_pod(self, ds: dict[str, Any], pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        try:
            await self.client.delete(GVRS["pods"], md["name"], md.get("namespace"),
                                     preconditions={"uid": md["uid"]})
        except StatusError as e:
            self.expectations.deletion_observed(obj_key(ds))
            if e.code in (404, 409):
                return
            self.recorder.event(ds, "Warning", "FailedDelete", f"Error deleting: {e.message}")
            raise
        self.recorder.event(ds, "Normal", "SuccessfulDelete", f"Deleted pod: {md['name']}")

    # ---- rolling update ---------------------------------------------------------------------
    def _desired_counts(self, ds: dict[str, Any], nodes: list[dict[str, Any]],
                        node_pods: dict[str, list[dict[str, Any]]]) -> tuple[int, int, int]:
        desired = 0
        for node in nodes:
            if node_should_run_daemon_pod(node, ds)[0]:
                desired += 1
                node_pods.setdefault(node["metadata"]["name"], [])
        ru = (((ds.get("spec") or {}).get("updateStrategy") or {}).get("rollingUpdate") or {})
        max_surge = scaled_value(ru.get("maxSurge", 0), desired, True)
        max_unavailable = scaled_value(ru.get("maxUnavailable", 1), desired, True)
        if max_surge == 0 and max_unavailable == 0:
            max_unavailable = 1  # validation forbids both zero; never stall forever on bad input
        return max_surge, max_unavailable, desired

    async def _rolling_update(self, ds: dict[str, Any], nodes: list[dict[str, Any]], hash_: str) -> None:
        node_pods = await self._nodes_to_daemon_pods(ds, False)
        max_surge, max_unavailable, _ = self._desired_counts(ds, nodes, node_pods)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = time.time()
        if max_surge == 0:
            num_unavailable = 0
            allowed_replacements: list[dict[str, Any]] = []
            candidates: list[dict[str, Any]] = []
            for node_name in sorted(node_pods):
                found = _updated_pods_on_node(ds, node_pods[node_name], hash_)
                if found is None:
                    num_unavailable += 1  # the manage loop sorts out duplicates; count the node unavailable
                    continue
                new_pod, old_pod = found
                if (old_pod is None) == (new_pod is None):
                    num_unavailable += 1  # missing, or mid-replacement
                elif new_pod is not None:
                    if not is_pod_available(new_pod, min_ready, now):
                        num_unavailable += 1
                else:
                    assert old_pod is not None
                    if not is_pod_available(old_pod, min_ready, now):
                        allowed_replacements.append(old_pod)  # unavailable anyway: replace freely
                    elif num_unavailable < max_unavailable:
                        candidates.append(old_pod)
            remaining = max(0, min(max_unavailable - num_unavailable, len(candidates)))
            await self._sync_nodes(ds, allowed_replacements + candidates[:remaining], [], hash_)
            return
        # surge: start the new pod beside the old one, delete the old one once the new is available
        old_to_delete: list[dict[str, Any]] = []
        candidate_nodes: list[str] = []
        allowed_nodes: list[str] = []
        num_surge = 0
        for node_name in sorted(node_pods):
            found = _updated_pods_on_node(ds, node_pods[node_name], hash_)
            if found is None:
                num_surge += 1
                continue
            new_pod, old_pod = found
            if old_pod is None:
                continue  # the manage loop creates the missing pod
            if new_pod is None:
                if not is_pod_available(old_pod, min_ready, now):
                    allowed_nodes.append(node_name)
                elif num_surge < max_surge:
                    candidate_nodes.append(node_name)
            elif not is_pod_available(new_pod, min_ready, now):
                num_surge += 1  # waiting for the surged pod
            else:
                old_to_delete.append(old_pod)
        remaining = max(0, min(max_surge - num_surge, len(candidate_nodes)))
        await self._sync_nodes(ds, old_to_delete, allowed_nodes + candidate_nodes[:remaining], hash_)

    # ---- history ----------------------------------------------------------------------------
    def _own_revisions(self, ds: dict[str, Any]) -> list[dict[str, Any]]:
        uid = ds["metadata"]["uid"]
        sel = selector_of(ds)
        out = []
        for rev in self.revisions.list(ds["metadata"].get("namespace", "")):
            ref = get_controller_of(rev)
            if ref is not None and ref.get("uid") == uid:
                out.append(rev)
            elif ref is None and sel.matches(rev["metadata"].get("labels") or {}):
                out.append(rev)  # an orphan we would adopt; upstream claims it, we just reuse it
        return out

    async def _construct_history(self, ds: dict[str, Any]) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        revisions = self._own_revisions(ds)
        patch = template_patch(ds)
        probe = {"data": patch}
        current = [r for r in revisions if revisions_equal(r, probe)]
        old = [r for r in revisions if not revisions_equal(r, probe)]
        next_rev = max_revision(old) + 1
        ns = ds["metadata"].get("namespace")
        if not current:
            cur = await self._snapshot(ds, patch, next_rev)
        else:
            current = sort_revisions(current)
            cur = current[-1]
            for dup in current[:-1]:  # equal snapshots: keep the newest, as upstream's dedupCurHistories
                await self.client.delete_ignore_missing(GVRS["controllerrevisions"], dup["metadata"]["name"], ns)
            if int(cur.get("revision") or 0) < next_rev:
                # rolled back to an older template: it becomes the newest revision again
                body = copy.deepcopy(cur)
                body["revision"] = next_rev
                cur = await self.client.update(GVRS["controllerrevisions"], body)
        return cur, old

    async def _snapshot(self, ds: dict[str, Any], patch: dict[str, Any], revision: int) -> dict[str, Any]:
        collision = int((ds.get("status") or {}).get("collisionCount") or 0)
        hash_ = compute_hash((ds.get("spec") or {}).get("template"), collision)
        rev = new_controller_revision(ds, patch, revision, hash_, CONTROLLER_REVISION_HASH_LABEL,
                                      (ds.get("metadata") or {}).get("annotations"))
        ns = ds["metadata"].get("namespace")
        try:
            return await self.client.create(GVRS["controllerrevisions"], rev, ns)
        except StatusError as e:
            if e.code != 409:
                raise
        existing = await self.client.get(GVRS["controllerrevisions"], rev["metadata"]["name"], ns)
        if revisions_equal(existing, rev) and (get_controller_of(existing) or {}).get("uid") == ds["metadata"]["uid"]:
            return existing
        # a different snapshot holds the name: salt the hash via status.collisionCount and retry
        await self.client.patch(GVRS["daemonsets"], ds["metadata"]["name"],
                                {"status": {"collisionCount": collision + 1}}, ns, sub="status")
        raise RuntimeError(f"found a hash collision for DaemonSet {ds['metadata']['name']}: bumped collisionCount")

    async def _cleanup_history(self, ds: dict[str, Any], old: list[dict[str, Any]]) -> None:
        limit = int((ds.get("spec") or {}).get("revisionHistoryLimit", 10) or 0)
        to_kill = len(old) - limit
        if to_kill <= 0:
            return
        node_pods = await self._nodes_to_daemon_pods(ds, False)
        live = {(p["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL)
                for pods in node_pods.values() for p in pods}
        for rev in sort_revisions(old):
            if to_kill <= 0:
                break
            if (rev["metadata"].get("labels") or {}).get(CONTROLLER_REVISION_HASH_LABEL) in live:
                continue  # still describes running pods
            await self.client.delete_ignore_missing(GVRS["controllerrevisions"], rev["metadata"]["name"],
                                                    rev["metadata"].get("namespace"))
            to_kill -= 1

    # ---- status -----------------------------------------------------------------------------
    async def _update_status(self, ds: dict[str, Any], nodes: list[dict[str, Any]], hash_: str,
                             update_observed_gen: bool) -> None:
        node_pods = await self._nodes_to_daemon_pods(ds, False)
        min_ready = int((ds.get("spec") or {}).get("minReadySeconds") or 0)
        now = time.time()
        desired = current = misscheduled = ready = updated = available = 0
        for node in nodes:
            should_run, _ = node_should_run_daemon_pod(node, ds)
            pods = node_pods.get(node["metadata"]["name"]) or []
            if should_run:
                desired += 1
                if not pods:
                    continue
                current += 1
                pod = sorted(pods, key=_by_scheduled_then_age)[0]
                if is_pod_ready(pod):
                    ready += 1
                    if is_pod_available(pod, min_ready, now):
                        available += 1
                if is_pod_updated(ds, pod, hash_):
                    updated += 1
            elif pods:
                misscheduled += 1
        status = dict(ds.get("status") or {})
        gen = ds["metadata"].get("generation")
        new = {"desiredNumberScheduled": desired, "currentNumberScheduled": current,
               "numberMisscheduled": misscheduled, "numberReady": ready,
               "updatedNumberScheduled": updated, "numberAvailable": available,
               "numberUnavailable": desired - available}
        if update_observed_gen and gen is not None:
            new["observedGeneration"] = gen
        changed = any(int(status.get(k) or 0) != v for k, v in new.items())
        if changed:
            # omitempty fields vanish at zero (merge patch: null deletes), as the Go struct serialises
            patch = {k: (v if v or k in ("desiredNumberScheduled", "currentNumberScheduled",
                                         "numberMisscheduled", "numberReady") else None)
                     for k, v in new.items()}
            try:
                await self.client.patch(GVRS["daemonsets"], ds["metadata"]["name"], {"status": patch},
                                        ds["metadata"].get("namespace"), sub="status")
            except StatusError as e:
                if e.code != 404:
                    raise
        if min_ready and ready != available:
            self.enqueue_after(ds, float(min_ready))  # availability arrives with time, not with an event


def _updated_pods_on_node(ds: dict[str, Any], pods: list[dict[str, Any]],
                          hash_: str) -> tuple[dict[str, Any] | None, dict[str, Any] | None] | None:
    """(new pod, old pod) on a node, or None when there is more than one of either."""
    new_pod = old_pod = None
    for pod in pods:
        if pod["metadata"].get("deletionTimestamp"):
            continue
        if is_pod_updated(ds, pod, hash_):
            if new_pod is not None:
                return None
            new_pod = pod
        else:
            if old_pod is not None:
                return None
            old_pod = pod
    return new_pod, old_pod
