"""The scheduler loop's pure core: informer events in, decisions out.

``Scheduler`` ties the cache, the queue and the profiles together the way upstream's
``scheduleOne`` does, but stops at the API boundary: ``schedule_next()`` returns a
``Decision`` (a node to bind, with the assumed pod already in the cache and the Binding
object to POST; or the FailedScheduling message, the node to nominate and the victims to
evict). The caller performs the writes and reports back with ``binding_done()``. Informer
handlers (``on_pod_add`` ...) keep the cache and the queue current.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .config import build_profiles, parse_config
from .events import EVENT_ASSIGNED_POD_DELETE
from .extender import HTTPExtender
from .framework import Code, CycleState, Handle, Profile, ScheduleResult, Status
from .messages import truncate_message
from .plugins.default_binder import binding_for
from .podinfo import PodInfo, pod_info
from .queue import QueuedPodInfo, SchedulingQueue

__all__ = ["Decision", "Scheduler"]


@dataclass(slots=True)
class Decision:
    pod: PodInfo
    qpi: QueuedPodInfo
    profile: Profile
    state: CycleState
    node: str | None = None
    binding: Mapping[str, Any] | None = None
    status: Status = field(default_factory=Status)
    message: str = ""  # FailedScheduling event message when node is None
    reason: str = ""  # PodScheduled condition reason: Unschedulable or SchedulerError
    nominated_node: str | None = None  # set status.nominatedNodeName (""= clear), None = leave
    victims: list[PodInfo] = field(default_factory=list)
    clear_nominations: list[PodInfo] = field(default_factory=list)
    permit_wait: float = 0.0
    result: ScheduleResult | None = None


class Scheduler:
    def __init__(self, config: Mapping[str, Any] | None = None, handle: Handle | None = None,
                 clock: Callable[[], float] = time.monotonic, profiles: Mapping[str, Profile] | None = None) -> None:
        """Profiles come from ``config`` (a KubeSchedulerConfiguration dict) unless given ready-made
        (built on the same ``handle``)."""
        self.handle = handle or Handle()
        self.cache = self.handle.cache
        cfg = parse_config(config)
        self.profiles = dict(profiles) if profiles is not None else build_profiles(cfg, self.handle)
        self.queue = SchedulingQueue(self.profiles, clock, cfg.pod_initial_backoff_seconds, cfg.pod_max_backoff_seconds)
        self.handle.nominator = self.queue
        self.extenders = [HTTPExtender(e) for e in cfg.extenders]  # called by the runner (extender_cycle.py)

    # -- informer handlers ------------------------------------------------------------------

    def responsible_for(self, pod: Mapping[str, Any]) -> bool:
        return ((pod.get("spec") or {}).get("schedulerName") or "default-scheduler") in self.profiles

    def on_node_add(self, node: Mapping[str, Any]) -> None:
        self.cache.add_node(node)
        self.queue.node_added(node)

    def on_node_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        self.cache.update_node(new)
        self.queue.node_updated(old, new)

    def on_node_delete(self, node: Mapping[str, Any]) -> None:
        self.cache.remove_node(node)
        self.queue.node_deleted(node)

    def on_pod_add(self, pod: Mapping[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName"):
            self.cache.add_pod(pod)
            self.queue.assigned_pod_added(pod)
        elif self.responsible_for(pod):
            self.queue.add(pod)

    def on_pod_update(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        was_bound = bool((old.get("spec") or {}).get("nodeName"))
        if (new.get("spec") or {}).get("nodeName"):
            if was_bound:
                self.cache.update_pod(old, new)
                self.queue.assigned_pod_updated(old, new)
            else:
                self.queue.delete(new)
                self.cache.add_pod(new)
                self.queue.assigned_pod_added(new)
        elif self.responsible_for(new):
            self.queue.update(old, new)

    def on_pod_delete(self, pod: Mapping[str, Any]) -> None:
        if (pod.get("spec") or {}).get("nodeName") or self.cache.get_pod(pod) is not None:
            self.cache.remove_pod(pod)
            self.queue.assigned_pod_deleted(pod)
        self.queue.delete(pod)

    # -- the scheduling cycle ---------------------------------------------------------------

    def schedule_next(self) -> Decision | None:
        qpi = self.queue.pop()
        if qpi is None:
            return None
        return self.schedule(qpi)

    def schedule(self, qpi: QueuedPodInfo) -> Decision | None:
        p = qpi.pod_info
        prof = self.profiles.get(p.tmpl.scheduler_name)
        if prof is None or p.terminating or self.cache.is_assumed_pod(p):
            self.queue.done(p.key)
            return None
        state = CycleState()
        return self.decide(qpi, prof, state, prof.schedule_one(p, self.cache, state))

    def decide(self, qpi: QueuedPodInfo, prof: Profile, state: CycleState, result: ScheduleResult) -> Decision:
        """The rest of the scheduling cycle once a node is picked (or none): assume, Reserve, Permit."""
        p = qpi.pod_info
        d = Decision(p, qpi, prof, state, result=result)
        if result.suggested_host is None:
            return self._failed(d, result)
        node = result.suggested_host
        assumed = self.cache.assume_pod(p, node)
        self.queue.delete_nominated_pod(p.key)
        st = prof.run_reserve(state, assumed, node)
        if not st.is_success():
            return self._undo(d, assumed, node, st)
        st, wait = prof.run_permit(state, assumed, node)
        if not st.is_success() and not st.is_wait():
            return self._undo(d, assumed, node, st)
        d.node, d.pod = node, assumed
        d.permit_wait = wait
        d.binding = binding_for(assumed, node)
        return d

    def _failed(self, d: Decision, result: ScheduleResult) -> Decision:
        diag = result.diagnosis
        error = result.status.code == Code.ERROR
        d.status = result.status
        d.reason = "SchedulerError" if error else "Unschedulable"
        d.message = truncate_message(result.message)
        pf = result.post_filter
        if pf is not None:
            if pf.nominated_node_name:
                d.nominated_node = pf.nominated_node_name
                d.victims = pf.victims
                d.clear_nominations = pf.pods_to_clear_nomination
                self.queue.add_nominated_pod(d.pod, pf.nominated_node_name)
                for other in pf.pods_to_clear_nomination:
                    self.queue.delete_nominated_pod(other.key)
            elif pf.clear_nomination:
                d.nominated_node = ""
                self.queue.delete_nominated_pod(d.pod.key)
        self.queue.add_unschedulable_if_not_present(
            d.qpi,
            diag.unschedulable_plugins if diag is not None else (),
            diag.pending_plugins if diag is not None else (),
            error=error or diag is None,
        )
        return d

    def _undo(self, d: Decision, assumed: PodInfo, node: str, st: Status) -> Decision:
        d.profile.run_unreserve(d.state, assumed, node)
        self.cache.forget_pod(assumed)
        d.status = st
        d.reason = "Unschedulable" if st.is_rejected() else "SchedulerError"
        d.message = truncate_message(f"0/1 nodes are available: 1 {st.message()}." if st.is_rejected() else st.message())
        self.queue.add_unschedulable_if_not_present(d.qpi, [st.plugin] if st.is_rejected() else (),
                                                    error=not st.is_rejected())
        return d

    def bind(self, d: Decision) -> Status:
        """Run PreBind and Bind for a decision (the binding cycle), then record the outcome."""
        assert d.node is not None
        st = d.profile.run_pre_bind(d.state, d.pod, d.node)
        if st.is_success():
            st = d.profile.run_bind(d.state, d.pod, d.node)
            if st.code == Code.SKIP:
                st = Status()
        self.binding_done(d, st.is_success(), st)
        return st

    def binding_done(self, d: Decision, ok: bool, status: Status | None = None) -> None:
        """The caller's bind call returned: confirm, or forget the assumption and retry later."""
        assert d.node is not None
        self.cache.finish_binding(d.pod)
        if ok:
            self.queue.done(d.pod.key)
            d.profile.run_post_bind(d.state, d.pod, d.node)
            return
        d.profile.run_unreserve(d.state, d.pod, d.node)
        self.cache.forget_pod(d.pod)
        # The assumed pod's resources are free again: that is an assigned-pod delete for the others.
        self.queue.move_all_to_active_or_backoff(EVENT_ASSIGNED_POD_DELETE, d.pod.pod, None,
                                                 pre_check=lambda p: p.key != d.pod.key)
        d.status = status or Status(Code.ERROR, ("binding failed",))
        d.qpi.pod_info = pod_info(d.qpi.pod_info.pod)
        self.queue.add_unschedulable_if_not_present(d.qpi, error=True)
