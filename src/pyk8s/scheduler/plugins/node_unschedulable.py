"""NodeUnschedulable: rejects nodes with spec.unschedulable unless the pod tolerates
node.kubernetes.io/unschedulable:NoSchedule."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cache import NodeTable
from ..events import (
    NODE,
    POD,
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ..framework import Code, CycleState, FilterResult, Plugin, Status
from ..podinfo import PodInfo, pod_info
from ..selectors import Taint, tolerates

ERR_REASON_UNSCHEDULABLE = "node(s) were unschedulable"
_UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")
_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_UNSCHEDULABLE,))


def _tolerates_unschedulable(pod: PodInfo) -> bool:
    return any(tolerates(t, _UNSCHEDULABLE_TAINT) for t in pod.tmpl.tolerations)


class NodeUnschedulable(Plugin):
    name = "NodeUnschedulable"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self._any_unschedulable: tuple[tuple[int, int], bool] = ((0, -1), True)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        stamp = (table.serial, table.taint_gen)  # the flag changes only with taint_gen
        if self._any_unschedulable[0] != stamp:
            self._any_unschedulable = (stamp, bool(table.unschedulable[: table.n].any()))
        if not self._any_unschedulable[1]:
            return None  # the usual case: no node is cordoned
        uns = table.take(table.unschedulable, rows)
        if not uns.any() or _tolerates_unschedulable(pod):
            return None
        return FilterResult.uniform(~uns, _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._node_hint),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), self._pod_hint),
        ]

    @staticmethod
    def _node_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None:
            return QUEUE_SKIP
        now_ok = not (new.get("spec") or {}).get("unschedulable") or _tolerates_unschedulable(pod)
        was_ok = old is not None and not (old.get("spec") or {}).get("unschedulable")
        return QUEUE if now_ok and not was_ok else QUEUE_SKIP

    @staticmethod
    def _pod_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None or pod_info(new).key != pod.key:
            return QUEUE_SKIP
        return QUEUE if _tolerates_unschedulable(pod_info(new)) else QUEUE_SKIP
