"""VolumeBinding: a hook for the storage work to come.

Pods without PersistentVolumeClaims are skipped (PreFilter returns Skip), which is upstream's
behaviour for them. For pods with claims, if the caller wired ``Handle.pvc(namespace, name)``
the PreFilter rejects claims that do not exist or are being deleted, with upstream's
messages; everything else passes. Binding unbound claims, PV node affinity and
WaitForFirstConsumer belong to the storage issue, which will extend this module (Filter
against PV topology, Reserve/PreBind to bind claims) without touching the framework.
"""

from __future__ import annotations

from ..cache import NodeTable
from ..events import CSI_NODE, NODE, PV, PVC, STORAGE_CLASS, ActionType, ClusterEvent, ClusterEventWithHint
from ..framework import Code, CycleState, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo


class VolumeBinding(Plugin):
    name = "VolumeBinding"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        claims = pod.tmpl.pvc_names
        if not claims:
            return None, Status(Code.SKIP)
        lookup = self.handle.pvc
        if lookup is None:
            return None, None
        for name in claims:
            pvc = lookup(pod.namespace, name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f'persistentvolumeclaim "{name}" not found',))
            if (pvc.get("metadata") or {}).get("deletionTimestamp"):
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    (f'persistentvolumeclaim "{name}" is being deleted',))
        return None, None

    def events_to_register(self) -> list[ClusterEventWithHint]:
        add_update = ActionType.ADD | ActionType.UPDATE
        return [
            ClusterEventWithHint(ClusterEvent(PVC, add_update)),
            ClusterEventWithHint(ClusterEvent(PV, add_update)),
            ClusterEventWithHint(ClusterEvent(STORAGE_CLASS, add_update)),
            ClusterEventWithHint(ClusterEvent(CSI_NODE, add_update)),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL)),
        ]
