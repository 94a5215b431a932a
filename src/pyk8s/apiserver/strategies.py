"""The few upstream rules that depend on what a resource is: status subresources,
graceful deletion, deletion propagation finalizers, and namespace finalization.
"""

from __future__ import annotations

import time
from typing import Any

from ..api.resources import Resource
from ..api.timefmt import format_time

__all__ = ["prepare_for_create", "prepare_for_update", "begin_delete", "finalized"]

FOREGROUND = "foregroundDeletion"
ORPHAN = "orphan"

# Kinds whose strategy keeps status out of main-resource writes even without a status subresource.
# (Nodes may set all fields, status included, on create, as upstream's node strategy allows.)
_NO_STATUS_RESET = {("", "Event"), ("events.k8s.io", "Event"), ("", "Node")}


def has_status(res: Resource) -> bool:
    return "status" in res.subresources


def prepare_for_create(res: Resource, obj: dict[str, Any]) -> None:
    if has_status(res) and res.group_kind not in _NO_STATUS_RESET:
        # As upstream strategies: a create cannot set status (Pod/Namespace status are set by STATUS_ON_CREATE).
        # Custom resources keep nothing either when they have a status subresource.
        obj.pop("status", None)


def prepare_for_update(res: Resource, new: dict[str, Any], old: dict[str, Any], subresource: str) -> None:
    """Spec and status are written separately, as upstream's PrepareForUpdate/status strategies."""
    if subresource == "finalize":
        # namespaces/finalize changes spec.finalizers and nothing else
        fins = (new.get("spec") or {}).get("finalizers") or []
        for k in list(new):
            if k != "metadata":
                del new[k]
        for k, v in old.items():
            if k != "metadata":
                new[k] = v
        new["spec"] = dict(old.get("spec") or {}, finalizers=fins)
        if not fins:
            new["spec"].pop("finalizers")
        return
    if subresource == "ephemeralcontainers":
        _keep_only_ephemeral_containers(new, old)
        return
    if not has_status(res):
        return
    if subresource == "status":
        # only status changes; spec (and everything else but metadata) from the stored object
        for k in list(new):
            if k not in ("metadata", "status", "kind", "apiVersion"):
                del new[k]
        for k, v in old.items():
            if k not in ("metadata", "status", "kind", "apiVersion"):
                new[k] = v
        # status writers may not touch these metadata fields either
        nmd, omd = new["metadata"], old["metadata"]
        for k in ("labels", "annotations", "finalizers", "ownerReferences"):
            if k in omd:
                nmd.setdefault(k, omd[k])
        return
    if subresource in ("", "scale"):
        if res.group_kind == ("apps", "DaemonSet"):
            from ..api.defaults.groups import prepare_daemon_set_for_update

            prepare_daemon_set_for_update(new, old)
        if "status" in old:
            new["status"] = old["status"]
        else:
            new.pop("status", None)


def _keep_only_ephemeral_containers(new: dict[str, Any], old: dict[str, Any]) -> None:
    """pods/ephemeralcontainers changes spec.ephemeralContainers and nothing else (upstream's
    dropNonEphemeralContainerUpdates): the rest of spec, status and the writable metadata from the stored pod."""
    ecs = (new.get("spec") or {}).get("ephemeralContainers")
    for k in list(new):
        if k not in ("metadata", "kind", "apiVersion"):
            del new[k]
    for k, v in old.items():
        if k not in ("metadata", "kind", "apiVersion"):
            new[k] = v
    new["spec"] = {k: v for k, v in (old.get("spec") or {}).items() if k != "ephemeralContainers"}
    if ecs:
        new["spec"]["ephemeralContainers"] = ecs
    nmd, omd = new["metadata"], old["metadata"]
    for k in ("labels", "annotations", "finalizers", "ownerReferences", "deletionTimestamp", "generation"):
        if k in omd:
            nmd[k] = omd[k]
        else:
            nmd.pop(k, None)


def _now() -> float:
    return time.time()


def _pod_grace(obj: dict[str, Any], options: dict[str, Any]) -> int:
    spec = obj.get("spec") or {}
    grace = options.get("gracePeriodSeconds")
    if grace is None:
        grace = spec.get("terminationGracePeriodSeconds", 30)
    grace = int(grace or 0)
    # as upstream's pod strategy: unscheduled or finished pods go at once
    if not spec.get("nodeName"):
        return 0
    phase = (obj.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed"):
        return 0
    return max(grace, 0)


def begin_delete(res: Resource, obj: dict[str, Any], options: dict[str, Any]) -> bool:
    """Apply deletion to obj (a copy). Returns True if the object stays (graceful or finalizers)."""
    md = obj["metadata"]
    finalizers: list[str] = list(md.get("finalizers") or [])
    policy = options.get("propagationPolicy")
    if policy is None and options.get("orphanDependents") is not None:
        policy = "Orphan" if options["orphanDependents"] else "Background"
    # Propagation finalizers, as upstream's deletion handling.
    if policy == "Foreground" and FOREGROUND not in finalizers:
        finalizers = [f for f in finalizers if f != ORPHAN] + [FOREGROUND]
    elif policy == "Orphan" and ORPHAN not in finalizers:
        finalizers = [f for f in finalizers if f != FOREGROUND] + [ORPHAN]
    elif policy == "Background":
        finalizers = [f for f in finalizers if f not in (FOREGROUND, ORPHAN)] if md.get("deletionTimestamp") is None else finalizers
    grace = 0
    if res.group_kind == ("", "Pod"):
        grace = _pod_grace(obj, options)
        if md.get("deletionTimestamp") and md.get("deletionGracePeriodSeconds") is not None:
            # a second delete may only shorten the grace period
            grace = min(grace, int(md["deletionGracePeriodSeconds"])) if options.get("gracePeriodSeconds") is not None \
                else int(md["deletionGracePeriodSeconds"])
    if res.group_kind == ("", "Namespace"):
        spec_fin = (obj.get("spec") or {}).get("finalizers") or []
        obj.setdefault("status", {})["phase"] = "Terminating"
        if spec_fin or finalizers:
            if not md.get("deletionTimestamp"):
                md["deletionTimestamp"] = format_time(_now())
                md["deletionGracePeriodSeconds"] = 0
            if finalizers:
                md["finalizers"] = finalizers
            return True
        return False
    if finalizers or grace > 0:
        if finalizers:
            md["finalizers"] = finalizers
        if not md.get("deletionTimestamp"):
            md["deletionTimestamp"] = format_time(_now() + grace)
            md["deletionGracePeriodSeconds"] = grace
        elif grace < int(md.get("deletionGracePeriodSeconds") or 0):
            md["deletionTimestamp"] = format_time(_now() + grace)
            md["deletionGracePeriodSeconds"] = grace
        if not finalizers and grace == 0:
            return False
        return True
    return False


def finalized(res: Resource, obj: dict[str, Any]) -> bool:
    """Whether an object being deleted has nothing left holding it."""
    if (obj.get("metadata") or {}).get("finalizers"):
        return False
    if res.group_kind == ("", "Namespace"):
        return not (obj.get("spec") or {}).get("finalizers")
    if res.group_kind == ("", "Pod"):
        # a pod in graceful deletion goes when its grace period is 0 (the kubelet's final delete)
        return int((obj.get("metadata") or {}).get("deletionGracePeriodSeconds") or 0) == 0
    return True
