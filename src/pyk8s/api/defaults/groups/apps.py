"""apps/v1 defaulting, as upstream's pkg/apis/apps/v1/defaults.go (feature gates at their
v1.33 defaults: StatefulSetAutoDeletePVC on, MaxUnavailableStatefulSet off), and the
status the apps strategies start objects with (PrepareForCreate).
"""

from __future__ import annotations

from typing import Any

from ..core import default_pod_template, default_pvc
from ._util import obj_dict, spec_dict

__all__ = [
    "default_deployment", "default_replica_set", "default_daemon_set", "default_stateful_set",
    "prepare_daemon_set_for_update", "DEPRECATED_TEMPLATE_GENERATION", "DEFAULTERS", "STATUS_ON_CREATE",
]

DEPRECATED_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"


def _template(spec: dict[str, Any]) -> None:
    default_pod_template(obj_dict(spec, "template"))


def default_deployment(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    strategy = obj_dict(spec, "strategy")
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = obj_dict(strategy, "rollingUpdate")
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = "25%"
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = "25%"
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = 600
    _template(spec)


def default_replica_set(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    _template(spec)


def default_daemon_set(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    us = obj_dict(spec, "updateStrategy")
    if not us.get("type"):
        us["type"] = "RollingUpdate"
    if us["type"] == "RollingUpdate":
        ru = obj_dict(us, "rollingUpdate")
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = 1
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = 0
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template(spec)


def _default_claim_template(pvc: dict[str, Any]) -> None:
    # what the apps/v1 conversion and the embedded PVC defaults make of a claim template
    pvc.setdefault("apiVersion", "v1")
    pvc.setdefault("kind", "PersistentVolumeClaim")
    obj_dict(pvc, "metadata").setdefault("creationTimestamp", None)
    obj_dict(pvc, "spec")
    obj_dict(pvc, "status")
    default_pvc(pvc)


def default_stateful_set(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    us = obj_dict(spec, "updateStrategy")
    if not us.get("type"):
        us["type"] = "RollingUpdate"
        obj_dict(us, "rollingUpdate")
    if us["type"] == "RollingUpdate" and isinstance(us.get("rollingUpdate"), dict):
        if us["rollingUpdate"].get("partition") is None:
            us["rollingUpdate"]["partition"] = 0
    policy = obj_dict(spec, "persistentVolumeClaimRetentionPolicy")
    for f in ("whenDeleted", "whenScaled"):
        if not policy.get(f):
            policy[f] = "Retain"
    if spec.get("replicas") is None:
        spec["replicas"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10
    _template(spec)
    for pvc in spec.get("volumeClaimTemplates") or []:
        if isinstance(pvc, dict):
            _default_claim_template(pvc)


# ---- status on create (PrepareForCreate) ------------------------------------------------
# The status is reset to its zero value, serialized as Go does: fields without omitempty stay.


def _deployment_status(obj: dict[str, Any]) -> None:
    obj["status"] = {}


def _replica_set_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"replicas": 0}


def _stateful_set_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"availableReplicas": 0, "replicas": 0}


def _daemon_set_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
                     "numberReady": 0}
    # spec.templateGeneration starts at 1; apps/v1 carries it in this annotation
    ann = obj_dict(obj_dict(obj, "metadata"), "annotations")
    try:
        current = int(ann.get(DEPRECATED_TEMPLATE_GENERATION, "0"))
    except ValueError:
        current = 0
    ann[DEPRECATED_TEMPLATE_GENERATION] = str(max(current, 1))


def prepare_daemon_set_for_update(new: dict[str, Any], old: dict[str, Any]) -> None:
    """The DaemonSet strategy's PrepareForUpdate: a changed template bumps the template generation."""
    from ._util import semantic_equal

    old_ann = (old.get("metadata") or {}).get("annotations") or {}
    try:
        old_gen = int(old_ann.get(DEPRECATED_TEMPLATE_GENERATION, "1"))
    except ValueError:
        old_gen = 1
    ann = obj_dict(obj_dict(new, "metadata"), "annotations")
    changed = not semantic_equal((new.get("spec") or {}).get("template"), (old.get("spec") or {}).get("template"))
    ann[DEPRECATED_TEMPLATE_GENERATION] = str(old_gen + 1 if changed else old_gen)


DEFAULTERS = {
    ("apps", "Deployment"): default_deployment,
    ("apps", "ReplicaSet"): default_replica_set,
    ("apps", "DaemonSet"): default_daemon_set,
    ("apps", "StatefulSet"): default_stateful_set,
}
STATUS_ON_CREATE = {
    ("apps", "Deployment"): _deployment_status,
    ("apps", "ReplicaSet"): _replica_set_status,
    ("apps", "DaemonSet"): _daemon_set_status,
    ("apps", "StatefulSet"): _stateful_set_status,
}
