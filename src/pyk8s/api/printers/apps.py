"""Tables for apps/v1: deployments, replica sets, daemon sets, stateful sets, revisions."""

from __future__ import annotations

from .. import labels as _labels
from .base import (
    CONTAINERS_DESC,
    IMAGES_DESC,
    TablePrinter,
    age,
    age_col,
    col,
    format_label_selector,
    format_labels,
    name_col,
    pod_template_containers,
    printer,
)

A = "io.k8s.api.apps.v1."
GK = tuple[str, str]


def _deployment_row(d: dict, now: float) -> list:
    spec = d.get("spec") or {}
    status = d.get("status") or {}
    try:
        selector = str(_labels.selector_from_label_selector(spec.get("selector")))
    except _labels.SelectorParseError:
        selector = "<invalid>"
    names, images = pod_template_containers(d)
    return [
        (d.get("metadata") or {}).get("name", ""),
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        status.get("updatedReplicas") or 0,
        status.get("availableReplicas") or 0,
        age(d, now),
        names,
        images,
        selector,
    ]


DEPLOYMENT = printer(
    [
        name_col(),
        col("Ready", description="Number of the pod with ready state"),
        col("Up-to-date", description=(A + "DeploymentStatus", "updatedReplicas")),
        col("Available", description=(A + "DeploymentStatus", "availableReplicas")),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(A + "DeploymentSpec", "selector"), priority=1),
    ],
    _deployment_row,
)


def _replica_set_row(rs: dict, now: float) -> list:
    spec = rs.get("spec") or {}
    status = rs.get("status") or {}
    names, images = pod_template_containers(rs)
    return [
        (rs.get("metadata") or {}).get("name", ""),
        spec.get("replicas", 1),
        status.get("replicas") or 0,
        status.get("readyReplicas") or 0,
        age(rs, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


REPLICA_SET = printer(
    [
        name_col(),
        col("Desired", "integer", (A + "ReplicaSetSpec", "replicas")),
        col("Current", "integer", (A + "ReplicaSetStatus", "replicas")),
        col("Ready", "integer", (A + "ReplicaSetStatus", "readyReplicas")),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(A + "ReplicaSetSpec", "selector"), priority=1),
    ],
    _replica_set_row,
)


def _daemon_set_row(ds: dict, now: float) -> list:
    spec = ds.get("spec") or {}
    status = ds.get("status") or {}
    names, images = pod_template_containers(ds)
    node_selector = (((spec.get("template") or {}).get("spec")) or {}).get("nodeSelector")
    return [
        (ds.get("metadata") or {}).get("name", ""),
        status.get("desiredNumberScheduled") or 0,
        status.get("currentNumberScheduled") or 0,
        status.get("numberReady") or 0,
        status.get("updatedNumberScheduled") or 0,
        status.get("numberAvailable") or 0,
        format_labels(node_selector),
        age(ds, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


DAEMON_SET = printer(
    [
        name_col(),
        col("Desired", "integer", (A + "DaemonSetStatus", "desiredNumberScheduled")),
        col("Current", "integer", (A + "DaemonSetStatus", "currentNumberScheduled")),
        col("Ready", "integer", (A + "DaemonSetStatus", "numberReady")),
        col("Up-to-date", "integer", (A + "DaemonSetStatus", "updatedNumberScheduled")),
        col("Available", "integer", (A + "DaemonSetStatus", "numberAvailable")),
        col("Node Selector", description=("io.k8s.api.core.v1.PodSpec", "nodeSelector")),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(A + "DaemonSetSpec", "selector"), priority=1),
    ],
    _daemon_set_row,
)


def _stateful_set_row(ss: dict, now: float) -> list:
    spec = ss.get("spec") or {}
    status = ss.get("status") or {}
    names, images = pod_template_containers(ss)
    return [
        (ss.get("metadata") or {}).get("name", ""),
        f"{status.get('readyReplicas') or 0}/{spec.get('replicas', 1)}",
        age(ss, now),
        names,
        images,
    ]


STATEFUL_SET = printer(
    [
        name_col(),
        col("Ready", description="Number of the pod with ready state"),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
    ],
    _stateful_set_row,
)


def controller_name(obj: dict) -> str:
    """The controller owner as "kind.group/name" (formatResourceName), "<none>" without one."""
    for ref in (obj.get("metadata") or {}).get("ownerReferences") or ():
        if ref.get("controller"):
            api_version = ref.get("apiVersion", "")
            group = api_version.split("/", 1)[0] if "/" in api_version else ""
            kind = ref.get("kind", "")
            if not kind and not group:
                return ref.get("name", "")
            gk = f"{kind}.{group}" if group else kind
            return f"{gk.lower()}/{ref.get('name', '')}"
    return "<none>"


CONTROLLER_REVISION = printer(
    [
        name_col(),
        col("Controller", description="Controller of the object"),
        col("Revision", description=(A + "ControllerRevision", "revision")),
        age_col(),
    ],
    lambda cr, now: [
        (cr.get("metadata") or {}).get("name", ""),
        controller_name(cr),
        cr.get("revision") or 0,
        age(cr, now),
    ],
)

PRINTERS: dict[GK, TablePrinter] = {
    ("apps", "Deployment"): DEPLOYMENT,
    ("apps", "ReplicaSet"): REPLICA_SET,
    ("apps", "DaemonSet"): DAEMON_SET,
    ("apps", "StatefulSet"): STATEFUL_SET,
    ("apps", "ControllerRevision"): CONTROLLER_REVISION,
}

__all__ = ["PRINTERS", "controller_name"]
