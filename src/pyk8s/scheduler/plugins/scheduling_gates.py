"""SchedulingGates: pods with spec.schedulingGates wait outside the active queue (PreEnqueue)."""

from __future__ import annotations

from typing import Any

from ..events import POD, QUEUE, QUEUE_SKIP, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework import Code, Plugin, Status, _go_list
from ..podinfo import PodInfo, pod_key


class SchedulingGates(Plugin):
    name = "SchedulingGates"

    def pre_enqueue(self, pod: PodInfo) -> Status | None:
        gates = pod.tmpl.scheduling_gates
        if not gates:
            return None
        return Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (f"waiting for scheduling gates: {_go_list(gates)}",))

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(POD, ActionType.UPDATE_POD_SCHEDULING_GATES_ELIMINATED), self._hint)]

    @staticmethod
    def _hint(pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        # Only the pod's own update can remove its gates.
        if new is not None and pod_key(new) == pod.key and not (new.get("spec") or {}).get("schedulingGates"):
            return QUEUE
        return QUEUE_SKIP
