"""TaintToleration: NoSchedule/NoExecute taints must be tolerated (Filter); untolerated
PreferNoSchedule taints lower the score (Score, normalised in reverse).

Nodes share few distinct taint sets, so results are computed once per (tolerations, taint
set) and looked up per node through the table's interned taint-set ids.
"""

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
from ..selectors import DO_NOT_SCHEDULE, Toleration, find_untolerated_taint, node_taints, tolerates
from .helpers import default_normalize_score

_PREFER = frozenset(("PreferNoSchedule",))


def untolerated_reason(key: str, value: str) -> str:
    return f"node(s) had untolerated taint {{{key}: {value}}}"


class _PerTolerations:
    """Per-taint-set answers for one toleration list, extended as new taint sets appear."""

    __slots__ = ("filter_status", "prefer_count", "statuses")

    def __init__(self) -> None:
        self.filter_status = np.zeros(0, dtype=np.int32)  # -1 tolerated, else index into statuses
        self.prefer_count = np.zeros(0, dtype=np.int64)
        self.statuses: list[Status] = []

    def extend(self, table: NodeTable, tols: tuple[Toleration, ...]) -> None:
        have = self.filter_status.shape[0]
        sets = table.taint_sets
        if have == len(sets):
            return
        prefer_tols = [t for t in tols if t.effect in ("", "PreferNoSchedule")]
        fs: list[int] = [int(x) for x in self.filter_status]
        pc: list[int] = [int(x) for x in self.prefer_count]
        for taints in sets[have:]:
            bad = find_untolerated_taint(taints, tols, DO_NOT_SCHEDULE)
            if bad is None:
                fs.append(-1)
            else:
                fs.append(len(self.statuses))
                self.statuses.append(
                    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (untolerated_reason(bad.key, bad.value),)))
            pc.append(sum(1 for t in taints if t.effect == "PreferNoSchedule"
                          and not any(tolerates(x, t) for x in prefer_tols)))
        self.filter_status = np.asarray(fs, dtype=np.int32)
        self.prefer_count = np.asarray(pc, dtype=np.int64)


class TaintToleration(Plugin):
    name = "TaintToleration"

    def __init__(self, args: Any, handle: Any) -> None:
        super().__init__(args, handle)
        self._by_tols: dict[tuple[int, tuple[Toleration, ...]], _PerTolerations] = {}

    def _answers(self, table: NodeTable, tols: tuple[Toleration, ...]) -> _PerTolerations:
        key = (table.serial, tols)
        a = self._by_tols.get(key)
        if a is None:
            if len(self._by_tols) > 4096:
                self._by_tols.clear()
            a = self._by_tols[key] = _PerTolerations()
        a.extend(table, tols)
        return a

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        if len(table.taint_sets) == 1:  # no node has ever had a taint
            return None
        a = self._answers(table, pod.tmpl.tolerations)
        which = a.filter_status[table.take(table.taint_set, rows)]
        ok = which < 0
        if ok.all():
            return None
        return FilterResult(ok, a.statuses, which)

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        if len(table.taint_sets) == 1:
            return np.zeros(rows.size, dtype=np.int64)
        return self._answers(table, pod.tmpl.tolerations).prefer_count[table.taint_set[rows]]

    def normalize_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray,
                        scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=True)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_TAINT), self._node_hint),
            ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_TOLERATION), self._pod_hint),
        ]

    @staticmethod
    def _node_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None:
            return QUEUE_SKIP
        tols = pod.tmpl.tolerations
        if find_untolerated_taint(node_taints(new), tols, DO_NOT_SCHEDULE) is not None:
            return QUEUE_SKIP
        if old is not None and find_untolerated_taint(node_taints(old), tols, DO_NOT_SCHEDULE) is None:
            return QUEUE_SKIP  # it was tolerated before; the taints were not what rejected the pod
        return QUEUE

    @staticmethod
    def _pod_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None or pod_info(new).key != pod.key:
            return QUEUE_SKIP
        return QUEUE
