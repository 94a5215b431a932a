"""NodeName: a pod with spec.nodeName fits only that node."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cache import NodeTable
from ..events import NODE, QUEUE, QUEUE_SKIP, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework import Code, CycleState, FilterResult, Plugin, Status
from ..podinfo import PodInfo

ERR_REASON = "node(s) didn't match the requested node name"
_STATUS = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON,))


class NodeName(Plugin):
    name = "NodeName"

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        if not pod.node_name:
            return None
        return FilterResult.uniform(rows == table.index.get(pod.node_name, -1), _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD), self._hint)]

    @staticmethod
    def _hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if not pod.node_name or new is None:
            return QUEUE
        return QUEUE if (new.get("metadata") or {}).get("name") == pod.node_name else QUEUE_SKIP
