"""The scheduling queue (upstream internal/queue.PriorityQueue, v1.33 with queueing hints).

Three places for a pending pod:

- **activeQ**: ready to be scheduled, ordered by the profile's QueueSort (PrioritySort: higher
  priority first, then earlier timestamp);
- **backoffQ**: failed recently; waits 1s doubled per attempt up to 10s (configurable), then
  moves to activeQ; when activeQ is empty a pod may be popped from backoffQ early (v1.33's
  SchedulerPopFromBackoffQ), except pods that failed with an error;
- **unschedulable pods**: rejected by plugins; they leave only when a cluster event that one
  of those plugins registered (and whose hint says QUEUE) arrives, when they are updated, or
  after 5 minutes (flush). Pods gated by PreEnqueue (scheduling gates) wait here too.

Events that arrive while a pod is being scheduled ("in flight") are kept and replayed when
that pod comes back as unschedulable, so an event is never lost between Pop and failure.

The queue is pure: time comes from an injected ``clock``; ``flush()`` does upstream's periodic
work; ``pop()`` never blocks, ``await pop_wait()`` does (asyncio).
"""

from __future__ import annotations

import asyncio
import enum
import heapq
import itertools
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .events import (
    ASSIGNED_POD,
    EVENT_UNSCHEDULABLE_TIMEOUT,
    NODE,
    POD,
    QUEUE_SKIP,
    ActionType,
    ClusterEvent,
    node_update_actions,
    pod_update_actions,
)
from .framework import Profile
from .podinfo import PodInfo, pod_info, pod_key

__all__ = ["QueuedPodInfo", "SchedulingQueue", "Strategy"]

DEFAULT_POD_INITIAL_BACKOFF = 1.0
DEFAULT_POD_MAX_BACKOFF = 10.0
DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION = 300.0


class Strategy(enum.Enum):
    SKIP = 0
    AFTER_BACKOFF = 1
    IMMEDIATELY = 2


@dataclass(eq=False, slots=True)
class QueuedPodInfo:
    pod_info: PodInfo
    timestamp: float
    attempts: int = 0
    initial_attempt_timestamp: float | None = None
    unschedulable_plugins: set[str] = field(default_factory=set)
    pending_plugins: set[str] = field(default_factory=set)
    gated: bool = False
    error: bool = False  # last attempt failed with an error rather than a rejection
    seq: int = 0

    @property
    def key(self) -> str:
        return self.pod_info.key

    @property
    def pod(self) -> Mapping[str, Any]:
        return self.pod_info.pod


class SchedulingQueue:
    def __init__(
        self,
        profiles: Mapping[str, Profile] | Profile,
        clock: Callable[[], float] = time.monotonic,
        pod_initial_backoff: float = DEFAULT_POD_INITIAL_BACKOFF,
        pod_max_backoff: float = DEFAULT_POD_MAX_BACKOFF,
        pod_max_in_unschedulable: float = DEFAULT_POD_MAX_IN_UNSCHEDULABLE_PODS_DURATION,
        pop_from_backoff_q: bool = True,
    ) -> None:
        if isinstance(profiles, Profile):
            profiles = {profiles.scheduler_name: profiles}
        self.profiles = dict(profiles)
        first = next(iter(self.profiles.values()))
        self._sort_key = first.queue_sort_key()
        self.clock = clock
        self.initial_backoff = pod_initial_backoff
        self.max_backoff = pod_max_backoff
        self.max_in_unschedulable = pod_max_in_unschedulable
        self.pop_from_backoff_q = pop_from_backoff_q
        self._seq = itertools.count()
        self._active: list[tuple[Any, int, str]] = []
        self._active_items: dict[str, QueuedPodInfo] = {}
        # backoffQ as upstream's two heaps: pods rejected by plugins (popped early when activeQ is empty)
        # and pods that failed with an error (no plugin rejected them; never popped before their time)
        self._backoff: list[tuple[float, Any, int, str]] = []
        self._error_backoff: list[tuple[float, Any, int, str]] = []
        self._backoff_items: dict[str, QueuedPodInfo] = {}
        self._unschedulable: dict[str, QueuedPodInfo] = {}
        self._in_flight: dict[str, int] = {}  # key -> index into _events when popped
        self._in_flight_latest: dict[str, PodInfo | None] = {}  # updated (or None: deleted) while in flight
        self._events: list[tuple[ClusterEvent, Any, Any]] = []
        self._events_base = 0
        self.scheduling_cycle = 0
        self._nominated: dict[str, tuple[PodInfo, str]] = {}
        self._nominated_by_node: dict[str, dict[str, PodInfo]] = {}
        self._hints = {name: [(reg.event, pl_name, reg.hint)
                              for pl_name, regs in prof.events_to_register().items() for reg in regs]
                       for name, prof in self.profiles.items()}
        self._wakeup: asyncio.Event | None = None

    # -- helpers ----------------------------------------------------------------------------

    def _profile(self, p: PodInfo) -> Profile | None:
        return self.profiles.get(p.tmpl.scheduler_name)

    def _wake(self) -> None:
        if self._wakeup is not None:
            self._wakeup.set()

    def backoff_duration(self, qpi: QueuedPodInfo) -> float:
        """1s doubled per previous attempt, capped (upstream calculateBackoffDuration)."""
        if qpi.attempts == 0:
            return 0.0
        d = self.initial_backoff
        for _ in range(1, qpi.attempts):
            if d > self.max_backoff - d:
                return self.max_backoff
            d += d
        return d

    def backoff_expiry(self, qpi: QueuedPodInfo) -> float:
        return qpi.timestamp + self.backoff_duration(qpi)

    def is_backing_off(self, qpi: QueuedPodInfo) -> bool:
        if qpi.gated:
            return False
        return self.backoff_expiry(qpi) > self.clock()

    def _remove_everywhere(self, key: str) -> QueuedPodInfo | None:
        # Heaps are cleaned lazily: entries whose key is no longer in *_items are skipped.
        return self._active_items.pop(key, None) or self._backoff_items.pop(key, None) or self._unschedulable.pop(key, None)

    def _push_active(self, qpi: QueuedPodInfo) -> None:
        qpi.seq = next(self._seq)
        self._active_items[qpi.key] = qpi
        heapq.heappush(self._active, (self._sort_key(qpi), qpi.seq, qpi.key))
        self._wake()

    def _push_backoff(self, qpi: QueuedPodInfo) -> None:
        qpi.seq = next(self._seq)
        self._backoff_items[qpi.key] = qpi
        heapq.heappush(self._error_backoff if qpi.error else self._backoff,
                       (self.backoff_expiry(qpi), self._sort_key(qpi), qpi.seq, qpi.key))
        self._wake()

    def _run_pre_enqueue(self, qpi: QueuedPodInfo) -> bool:
        prof = self._profile(qpi.pod_info)
        if prof is None:
            return True
        st = prof.run_pre_enqueue(qpi.pod_info)
        if st.is_success():
            qpi.gated = False
            return True
        qpi.gated = True
        qpi.unschedulable_plugins = {st.plugin}
        return False

    def _move_to_active(self, qpi: QueuedPodInfo) -> bool:
        """PreEnqueue, then activeQ; a gated pod goes (back) to the unschedulable pods."""
        self._remove_everywhere(qpi.key)
        if not self._run_pre_enqueue(qpi):
            self._unschedulable[qpi.key] = qpi
            return False
        self._push_active(qpi)
        return True

    def _requeue(self, qpi: QueuedPodInfo, strategy: Strategy) -> str:
        if strategy is Strategy.SKIP:
            self._remove_everywhere(qpi.key)
            self._unschedulable[qpi.key] = qpi
            return "unschedulable"
        if strategy is Strategy.AFTER_BACKOFF and self.is_backing_off(qpi):
            self._remove_everywhere(qpi.key)
            self._push_backoff(qpi)
            return "backoff"
        if self._move_to_active(qpi):
            return "active"
        return "unschedulable"

    def worth_requeuing(self, qpi: QueuedPodInfo, event: ClusterEvent, old: Any, new: Any) -> Strategy:
        """Upstream isPodWorthRequeuing: ask the hints of the plugins that rejected the pod."""
        rejectors = qpi.unschedulable_plugins | qpi.pending_plugins
        if not rejectors:
            return Strategy.AFTER_BACKOFF
        if event.is_wildcard:
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for reg, plugin, hint in self._hints.get(qpi.pod_info.tmpl.scheduler_name, ()):
            if plugin not in rejectors or not reg.match(event):
                continue
            try:
                h = hint(qpi.pod_info, old, new) if hint is not None else None
            except Exception:  # a broken hint must not strand the pod; upstream queues on error
                h = None
            if h is QUEUE_SKIP:
                continue
            if plugin in qpi.pending_plugins:
                return Strategy.IMMEDIATELY
            strategy = Strategy.AFTER_BACKOFF
        return strategy

    # -- informer-facing --------------------------------------------------------------------

    def add(self, pod: Mapping[str, Any] | PodInfo) -> None:
        """A new unscheduled pod."""
        p = pod_info(pod)
        if (p.key in self._active_items or p.key in self._backoff_items or p.key in self._unschedulable
                or p.key in self._in_flight):
            self.update(None, p.pod)  # a repeated Add (informer resync) is an update
            return
        qpi = QueuedPodInfo(p, self.clock())
        self._move_to_active(qpi)
        if p.nominated_node_name:
            self.add_nominated_pod(p, p.nominated_node_name)

    def update(self, old: Mapping[str, Any] | None, new: Mapping[str, Any]) -> None:
        """An unscheduled pod changed."""
        p = pod_info(new)
        key = p.key
        if p.nominated_node_name:
            self.add_nominated_pod(p, p.nominated_node_name)
        if key in self._in_flight:
            self._in_flight_latest[key] = p
            self._record(ClusterEvent(POD, pod_update_actions(old or {}, new)), old, new)
            return
        for items in (self._active_items, self._backoff_items):
            qpi = items.get(key)
            if qpi is not None:
                qpi.pod_info = p
                return
        qpi = self._unschedulable.get(key)
        if qpi is None:
            self.add(p)
            return
        qpi.pod_info = p
        if qpi.gated:
            # Re-run PreEnqueue: the update may have removed the gates.
            self._move_to_active(qpi)
            return
        actions = pod_update_actions(old or {}, new)
        for bit in ActionType:
            if bit in (ActionType.UPDATE, ActionType.ALL) or not (actions & bit):
                continue
            where = self._requeue(qpi, self.worth_requeuing(qpi, ClusterEvent(POD, bit), old, new))
            if where != "unschedulable":
                return

    def delete(self, pod: Mapping[str, Any] | PodInfo) -> None:
        key = pod.key if isinstance(pod, PodInfo) else pod_key(pod)
        self._remove_everywhere(key)
        self.delete_nominated_pod(key)
        if key in self._in_flight:
            self._in_flight_latest[key] = None  # do not requeue it when its attempt ends

    def on_event(self, event: ClusterEvent, old: Any = None, new: Any = None,
                 pre_check: Callable[[PodInfo], bool] | None = None) -> None:
        """A cluster event (node or assigned pod change, storage...): record it for in-flight pods
        and move the unschedulable pods it may help (upstream MoveAllToActiveOrBackoffQueue)."""
        self._record(event, old, new)
        self.move_all_to_active_or_backoff(event, old, new, pre_check)

    def node_added(self, node: Mapping[str, Any]) -> None:
        self.on_event(ClusterEvent(NODE, ActionType.ADD, "NodeAdd"), None, node)

    def node_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        actions = node_update_actions(old, new)
        if actions:
            self.on_event(ClusterEvent(NODE, actions, "NodeUpdate"), old, new)

    def node_deleted(self, node: Mapping[str, Any]) -> None:
        self.on_event(ClusterEvent(NODE, ActionType.DELETE, "NodeDelete"), node, None)

    def assigned_pod_added(self, pod: Mapping[str, Any]) -> None:
        self.on_event(ClusterEvent(ASSIGNED_POD, ActionType.ADD, "AssignedPodAdd"), None, pod)

    def assigned_pod_updated(self, old: Mapping[str, Any], new: Mapping[str, Any]) -> None:
        actions = pod_update_actions(old, new)
        if actions:
            self.on_event(ClusterEvent(ASSIGNED_POD, actions, "AssignedPodUpdate"), old, new)

    def assigned_pod_deleted(self, pod: Mapping[str, Any]) -> None:
        self.on_event(ClusterEvent(ASSIGNED_POD, ActionType.DELETE, "AssignedPodDelete"), pod, None)

    def move_all_to_active_or_backoff(self, event: ClusterEvent, old: Any = None, new: Any = None,
                                      pre_check: Callable[[PodInfo], bool] | None = None) -> None:
        for qpi in list(self._unschedulable.values()):
            if pre_check is not None and not pre_check(qpi.pod_info):
                continue
            self._requeue(qpi, self.worth_requeuing(qpi, event, old, new))

    def activate(self, pods: Iterable[Mapping[str, Any] | PodInfo]) -> None:
        """Move the given pods to activeQ now (upstream Activate)."""
        for pod in pods:
            key = pod.key if isinstance(pod, PodInfo) else pod_key(pod)
            qpi = self._unschedulable.get(key) or self._backoff_items.get(key)
            if qpi is not None:
                self._move_to_active(qpi)

    # -- scheduler-facing -------------------------------------------------------------------

    def pop(self) -> QueuedPodInfo | None:
        """The next pod to schedule, or None. Marks it in flight."""
        qpi = self._pop_active()
        if qpi is None and self.pop_from_backoff_q:
            qpi = self._pop_backoff(early=True)
        if qpi is None:
            return None
        now = self.clock()
        qpi.attempts += 1
        if qpi.initial_attempt_timestamp is None:
            qpi.initial_attempt_timestamp = now
        qpi.unschedulable_plugins = set()
        qpi.pending_plugins = set()
        self.scheduling_cycle += 1
        self._in_flight[qpi.key] = self._events_base + len(self._events)
        return qpi

    def _pop_active(self) -> QueuedPodInfo | None:
        while self._active:
            _, seq, key = heapq.heappop(self._active)
            qpi = self._active_items.get(key)
            if qpi is not None and qpi.seq == seq:
                del self._active_items[key]
                return qpi
        return None

    def _head(self, heap: list[tuple[float, Any, int, str]]) -> tuple[float, Any, int, str] | None:
        """The heap's first live entry (entries of pods moved or re-added since are dropped here)."""
        while heap:
            entry = heap[0]
            qpi = self._backoff_items.get(entry[3])
            if qpi is not None and qpi.seq == entry[2]:
                return entry
            heapq.heappop(heap)
        return None

    def _pop_backoff(self, early: bool) -> QueuedPodInfo | None:
        """The backoffQ pod whose backoff ends first, if it has ended; early: also a rejected pod
        still backing off (upstream's popFromBackoffQ), never an errored one."""
        now = self.clock()
        best: tuple[float, Any, int, str] | None = None
        best_heap: list[tuple[float, Any, int, str]] | None = None
        for heap in (self._backoff, self._error_backoff):
            e = self._head(heap)
            if e is None or (e[0] > now and not (early and heap is self._backoff)):
                continue
            if best is None or e < best:
                best, best_heap = e, heap
        if best is None or best_heap is None:
            return None
        heapq.heappop(best_heap)
        return self._backoff_items.pop(best[3])

    async def pop_wait(self, poll: float = 1.0) -> QueuedPodInfo:
        """Wait for a pod (flushing backoffQ as time passes)."""
        if self._wakeup is None:
            self._wakeup = asyncio.Event()
        while True:
            self.flush()
            qpi = self.pop()
            if qpi is not None:
                return qpi
            self._wakeup.clear()
            timeout = poll
            nxt = self.next_backoff_expiry()
            if nxt is not None:
                timeout = max(0.0, min(poll, nxt - self.clock()))
            try:
                await asyncio.wait_for(self._wakeup.wait(), timeout)
            except TimeoutError:
                pass

    def done(self, key: str) -> None:
        """The pod's scheduling attempt is over (bound, or handed back)."""
        self._in_flight.pop(key, None)
        self._in_flight_latest.pop(key, None)
        if not self._in_flight:
            self._events_base += len(self._events)
            self._events.clear()

    def _record(self, event: ClusterEvent, old: Any, new: Any) -> None:
        if self._in_flight:
            self._events.append((event, old, new))

    def add_unschedulable_if_not_present(self, qpi: QueuedPodInfo, unschedulable_plugins: Iterable[str] = (),
                                         pending_plugins: Iterable[str] = (), error: bool = False) -> str:
        """Hand a pod back after a failed attempt; returns where it went
        ("active", "backoff" or "unschedulable")."""
        key = qpi.key
        if key in self._active_items or key in self._backoff_items or key in self._unschedulable:
            self.done(key)
            return "already queued"
        if key in self._in_flight_latest:
            latest = self._in_flight_latest[key]
            if latest is None:  # deleted meanwhile (upstream: not in the informer cache any more)
                self.done(key)
                return "deleted"
            qpi.pod_info = latest
        qpi.timestamp = self.clock()
        qpi.unschedulable_plugins = set(unschedulable_plugins)
        qpi.pending_plugins = set(pending_plugins)
        qpi.error = error
        start = self._in_flight.get(key, self._events_base + len(self._events))
        events = self._events[max(0, start - self._events_base):]
        strategy = self._in_flight_strategy(qpi, events)
        self.done(key)
        return self._requeue(qpi, strategy)

    def _in_flight_strategy(self, qpi: QueuedPodInfo, events: list[tuple[ClusterEvent, Any, Any]]) -> Strategy:
        if not (qpi.unschedulable_plugins | qpi.pending_plugins):
            # An error, not a rejection: retry after backoff rather than wait for an event.
            return Strategy.AFTER_BACKOFF
        strategy = Strategy.SKIP
        for event, old, new in events:
            s = self.worth_requeuing(qpi, event, old, new)
            if s is Strategy.IMMEDIATELY:
                return s
            if s is Strategy.AFTER_BACKOFF:
                strategy = s
                if not qpi.pending_plugins:
                    return s
        return strategy

    # -- periodic work ----------------------------------------------------------------------

    def flush_backoff_q_completed(self) -> int:
        moved = 0
        while True:
            qpi = self._pop_backoff(early=False)
            if qpi is None:
                return moved
            self._move_to_active(qpi)
            moved += 1

    def flush_unschedulable_pods_leftover(self) -> int:
        now = self.clock()
        stale = [q for q in self._unschedulable.values() if now - q.timestamp > self.max_in_unschedulable]
        for qpi in stale:
            self._requeue(qpi, self.worth_requeuing(qpi, EVENT_UNSCHEDULABLE_TIMEOUT, None, None))
        return len(stale)

    def flush(self) -> None:
        self.flush_backoff_q_completed()
        self.flush_unschedulable_pods_leftover()

    def next_backoff_expiry(self) -> float | None:
        heads = [e[0] for e in (self._head(self._backoff), self._head(self._error_backoff)) if e is not None]
        return min(heads) if heads else None

    # -- nominator --------------------------------------------------------------------------

    def add_nominated_pod(self, p: PodInfo, node: str) -> None:
        self.delete_nominated_pod(p.key)
        if not node:
            return
        self._nominated[p.key] = (p, node)
        self._nominated_by_node.setdefault(node, {})[p.key] = p

    def delete_nominated_pod(self, key: str) -> None:
        hit = self._nominated.pop(key, None)
        if hit is None:
            return
        d = self._nominated_by_node.get(hit[1])
        if d is not None:
            d.pop(key, None)
            if not d:
                del self._nominated_by_node[hit[1]]

    def nominated_pods_for_node(self, node_name: str) -> list[PodInfo]:
        return list((self._nominated_by_node.get(node_name) or {}).values())

    def nodes_with_nominated_pods(self) -> Mapping[str, list[PodInfo]]:
        return {n: list(d.values()) for n, d in self._nominated_by_node.items()}

    def nominated_node(self, key: str) -> str | None:
        hit = self._nominated.get(key)
        return hit[1] if hit else None

    # -- introspection ----------------------------------------------------------------------

    def where(self, pod: Mapping[str, Any] | PodInfo | str) -> str | None:
        key = pod if isinstance(pod, str) else (pod.key if isinstance(pod, PodInfo) else pod_key(pod))
        if key in self._active_items:
            return "active"
        if key in self._backoff_items:
            return "backoff"
        if key in self._unschedulable:
            return "gated" if self._unschedulable[key].gated else "unschedulable"
        if key in self._in_flight:
            return "in flight"
        return None

    def pending_pods(self) -> dict[str, list[PodInfo]]:
        return {
            "active": [q.pod_info for q in self._active_items.values()],
            "backoff": [q.pod_info for q in self._backoff_items.values()],
            "unschedulable": [q.pod_info for q in self._unschedulable.values()],
        }

    def __len__(self) -> int:
        return len(self._active_items) + len(self._backoff_items) + len(self._unschedulable)

