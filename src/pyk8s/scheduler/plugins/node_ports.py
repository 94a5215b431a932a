"""NodePorts: a pod's hostPorts must be free on the node.

Same (protocol, port) conflicts when either side binds 0.0.0.0 (empty hostIP) or both bind
the same IP, as upstream HostPortInfo.CheckConflict. The table indexes used ports by
(protocol, port), so only nodes already using a wanted port are looked at.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..cache import NodeTable
from ..events import (
    ASSIGNED_POD,
    NODE,
    QUEUE,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    ClusterEventWithHint,
    QueueingHint,
)
from ..framework import Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo, pod_info

ERR_REASON = "node(s) didn't have free ports for the requested pod ports"
_STATUS = Status(Code.UNSCHEDULABLE, (ERR_REASON,))
ALL_IPS = "0.0.0.0"


def _conflict(used_ips: dict[str, int], ip: str) -> bool:
    if ip == ALL_IPS:
        return bool(used_ips)
    return ALL_IPS in used_ips or ip in used_ips


def ports_conflict(a: tuple[tuple[str, str, int], ...], b: tuple[tuple[str, str, int], ...]) -> bool:
    used: dict[tuple[str, int], dict[str, int]] = {}
    for ip, proto, port in b:
        used.setdefault((proto, port), {})[ip] = 1
    return any(_conflict(used.get((proto, port), {}), ip) for ip, proto, port in a)


class NodePorts(Plugin):
    name = "NodePorts"

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        if not pod.tmpl.host_ports:
            return None, Status(Code.SKIP)
        return None, None

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        bad: list[int] = []
        for ip, proto, port in pod.tmpl.host_ports:
            for node, ips in (table.ports.get((proto, port)) or {}).items():
                if _conflict(ips, ip):
                    bad.append(table.index[node])
        if not bad:
            return None
        return FilterResult.uniform(~np.isin(rows, bad), _STATUS)

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE), self._pod_hint),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD)),
        ]

    @staticmethod
    def _pod_hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        deleted = old if old is not None else new
        if deleted is None:
            return QUEUE
        return QUEUE if ports_conflict(pod.tmpl.host_ports, pod_info(deleted).tmpl.host_ports) else QUEUE_SKIP
