"""VolumeRestrictions: the ReadWriteOncePod part of upstream's volumerestrictions plugin (v1.33).

A claim with the `ReadWriteOncePod` access mode may be used by one pod in the whole cluster: while
another scheduled (or assumed) pod uses it, the pod fits no node, `node has pod using
PersistentVolumeClaim with the same name and ReadWriteOncePod access mode` (Unschedulable, so
preemption may evict the holder: PreFilter's add/remove-pod extensions keep the count). A claim that
does not exist makes the pod unschedulable and unresolvable, as upstream's lister error does.

The inline-disk conflicts upstream checks as well (GCE PD, AWS EBS, RBD, iSCSI volumes in the pod
spec) concern volume plug-ins this project does not have.
"""

from __future__ import annotations

import numpy as np

from ..cache import NodeTable
from ..events import ASSIGNED_POD, PVC, ActionType, ClusterEvent, ClusterEventWithHint
from ..framework import Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo

__all__ = ["VolumeRestrictions", "ERR_REASON_RWOP_CONFLICT"]

ERR_REASON_RWOP_CONFLICT = "node has pod using PersistentVolumeClaim with the same name and ReadWriteOncePod access mode"
_CONFLICT = Status(Code.UNSCHEDULABLE, (ERR_REASON_RWOP_CONFLICT,))
STATE_KEY = "PreFilterVolumeRestrictions"


class VolumeRestrictions(Plugin):
    name = "VolumeRestrictions"

    def _users(self, pod: PodInfo, claims: frozenset[str], other: PodInfo) -> int:
        """How many of `claims` (this pod's RWOP claims) `other` uses."""
        if other.key == pod.key or other.namespace != pod.namespace:
            return 0
        return len(claims.intersection(other.tmpl.pvc_names))

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        h = self.handle
        if not pod.tmpl.pvc_names or h.pvc is None:
            return None, Status(Code.SKIP)
        claims: set[str] = set()
        for name in pod.tmpl.pvc_names:
            pvc = h.pvc(pod.namespace, name)
            if pvc is None:
                return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE,
                                    (f'persistentvolumeclaim "{name}" not found',))
            if "ReadWriteOncePod" in ((pvc.get("spec") or {}).get("accessModes") or ()):
                claims.add(name)
        if not claims:
            return None, Status(Code.SKIP)
        rwop = frozenset(claims)
        # every pod the cache holds, on any node: the mode is cluster-wide, not per node
        count = sum(self._users(pod, rwop, other) for pods in table.pods for other in pods.values())
        state.write(STATE_KEY, (rwop, count))
        return None, None

    def _adjust(self, state: CycleState, pod: PodInfo, other: PodInfo, sign: int) -> None:
        st: tuple[frozenset[str], int] | None = state.read(STATE_KEY)
        if st is not None:
            state.write(STATE_KEY, (st[0], st[1] + sign * self._users(pod, st[0], other)))

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        self._adjust(state, pod, added, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        self._adjust(state, pod, removed, -1)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        st: tuple[frozenset[str], int] | None = state.read(STATE_KEY)
        if st is None or st[1] <= 0:
            return None
        return FilterResult.uniform(np.zeros(len(rows), dtype=bool), _CONFLICT)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        # the holder going frees the claim; a claim created or changed may now exist or lose the mode
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE)),
            ClusterEventWithHint(ClusterEvent(PVC, ActionType.ADD | ActionType.UPDATE)),
        ]
