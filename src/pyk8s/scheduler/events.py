"""Cluster events that can make rejected pods schedulable (upstream framework.ClusterEvent).

A plugin registers ``ClusterEventWithHint``s; when an event arrives the queue asks the hints of
the plugins that rejected a pod whether it is worth retrying (``QUEUE``) or not (``QUEUE_SKIP``).
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "ActionType",
    "ClusterEvent",
    "ClusterEventWithHint",
    "QueueingHint",
    "QUEUE",
    "QUEUE_SKIP",
    "POD",
    "ASSIGNED_POD",
    "NODE",
    "PVC",
    "PV",
    "STORAGE_CLASS",
    "CSI_NODE",
    "WILDCARD",
    "node_update_actions",
    "pod_update_actions",
    "EVENT_UNSCHEDULABLE_TIMEOUT",
    "EVENT_FORCE_ACTIVATE",
    "EVENT_ASSIGNED_POD_DELETE",
]


class ActionType(enum.IntFlag):
    ADD = 1
    DELETE = 2
    UPDATE_NODE_ALLOCATABLE = 4
    UPDATE_NODE_LABEL = 8
    UPDATE_NODE_TAINT = 16
    UPDATE_NODE_CONDITION = 32
    UPDATE_NODE_ANNOTATION = 64
    UPDATE_POD_LABEL = 128
    UPDATE_POD_SCALE_DOWN = 256
    UPDATE_POD_TOLERATION = 512
    UPDATE_POD_SCHEDULING_GATES_ELIMINATED = 1024
    UPDATE_POD_GENERATED_RESOURCE_CLAIM = 2048
    # Any other pod change (upstream updatePodOther): only generic Pod/Update registrations see it,
    # so e.g. the scheduler's own status patch does not wake plugins waiting for tolerations.
    UPDATE_POD_OTHER = 4096
    UPDATE = 4 | 8 | 16 | 32 | 64 | 128 | 256 | 512 | 1024 | 2048 | 4096
    ALL = 8191


# Resources as upstream names them in events.
POD = "Pod"  # an unscheduled pod (the pod itself, or another pending pod)
ASSIGNED_POD = "AssignedPod"
NODE = "Node"
PVC = "PersistentVolumeClaim"
PV = "PersistentVolume"
STORAGE_CLASS = "storage.k8s.io/StorageClass"
CSI_NODE = "storage.k8s.io/CSINode"
WILDCARD = "*"


@dataclass(frozen=True, slots=True)
class ClusterEvent:
    resource: str
    action: ActionType
    label: str = ""

    def match(self, incoming: ClusterEvent) -> bool:
        """Whether this registered event covers ``incoming`` (same resource or wildcard, shared action bits)."""
        if self.resource == WILDCARD:
            return bool(self.action & incoming.action)
        return (self.resource == incoming.resource or incoming.resource == WILDCARD) and bool(
            self.action & incoming.action
        )

    @property
    def is_wildcard(self) -> bool:
        return self.resource == WILDCARD and self.action == ActionType.ALL


class QueueingHint(enum.Enum):
    QUEUE_SKIP = 0
    QUEUE = 1


QUEUE = QueueingHint.QUEUE
QUEUE_SKIP = QueueingHint.QUEUE_SKIP

# hint(pod_being_requeued, old_obj, new_obj) -> QueueingHint
HintFn = Callable[[Any, Any, Any], QueueingHint]


@dataclass(frozen=True, slots=True)
class ClusterEventWithHint:
    event: ClusterEvent
    hint: HintFn | None = None  # None means always QUEUE


EVENT_UNSCHEDULABLE_TIMEOUT = ClusterEvent(WILDCARD, ActionType.ALL, "UnschedulableTimeout")
EVENT_FORCE_ACTIVATE = ClusterEvent(WILDCARD, ActionType.ALL, "ForceActivate")
EVENT_ASSIGNED_POD_DELETE = ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete")


def node_update_actions(old: Mapping[str, Any], new: Mapping[str, Any]) -> ActionType:
    """Which node properties an update changed (upstream nodeSchedulingPropertiesChange)."""
    a = ActionType(0)
    os_, ns_ = old.get("status") or {}, new.get("status") or {}
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    osp, nsp = old.get("spec") or {}, new.get("spec") or {}
    if bool(osp.get("unschedulable")) != bool(nsp.get("unschedulable")):
        a |= ActionType.UPDATE_NODE_TAINT
    if os_.get("allocatable") != ns_.get("allocatable"):
        a |= ActionType.UPDATE_NODE_ALLOCATABLE
    if (om.get("labels") or {}) != (nm.get("labels") or {}):
        a |= ActionType.UPDATE_NODE_LABEL
    if (osp.get("taints") or []) != (nsp.get("taints") or []):
        a |= ActionType.UPDATE_NODE_TAINT
    strip = lambda cs: [(c.get("type"), c.get("status")) for c in cs or ()]  # noqa: E731
    if strip(os_.get("conditions")) != strip(ns_.get("conditions")):
        a |= ActionType.UPDATE_NODE_CONDITION
    if (om.get("annotations") or {}) != (nm.get("annotations") or {}):
        a |= ActionType.UPDATE_NODE_ANNOTATION
    return a


def _requests(pod: Mapping[str, Any]) -> dict[str, Any]:
    from .resources import pod_requests

    return pod_requests(pod.get("spec") or {})


def pod_update_actions(old: Mapping[str, Any], new: Mapping[str, Any]) -> ActionType:
    """Which scheduling-relevant pod properties an update changed (upstream PodSchedulingPropertiesChange)."""
    a = ActionType(0)
    om, nm = old.get("metadata") or {}, new.get("metadata") or {}
    osp, nsp = old.get("spec") or {}, new.get("spec") or {}
    if (om.get("labels") or {}) != (nm.get("labels") or {}):
        a |= ActionType.UPDATE_POD_LABEL
    if (osp.get("tolerations") or []) != (nsp.get("tolerations") or []):
        a |= ActionType.UPDATE_POD_TOLERATION
    if osp.get("schedulingGates") and not nsp.get("schedulingGates"):
        a |= ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED
    if osp.get("containers") != nsp.get("containers") or osp.get("initContainers") != nsp.get("initContainers"):
        o, n = _requests(old), _requests(new)
        if any(n.get(k, 0) < v for k, v in o.items()):
            a |= ActionType.UPDATE_POD_SCALE_DOWN
    if (old.get("status") or {}).get("resourceClaimStatuses") != (new.get("status") or {}).get("resourceClaimStatuses"):
        a |= ActionType.UPDATE_POD_GENERATED_RESOURCE_CLAIM
    if not a and old != new:
        # Upstream falls back to updatePodOther for other changes.
        a = ActionType.UPDATE_POD_OTHER
    return a
