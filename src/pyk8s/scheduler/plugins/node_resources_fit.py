"""NodeResourcesFit: the node must have room for the pod's requests (Filter) and is scored by
the configured strategy (LeastAllocated by default, MostAllocated, RequestedToCapacityRatio).

The filter compares ``allocatable - requested`` with the pod's effective requests (init
containers max rule, sidecars summed, overhead added) column by column over all candidate
rows, keeping every failing reason per node ("Too many pods", "Insufficient cpu", ...) in
upstream's order: pods, cpu, memory, ephemeral-storage, then scalar resources (sorted; Go
iterates a map there). Args: ``ignoredResources``, ``ignoredResourceGroups``,
``scoringStrategy``.
"""

from __future__ import annotations

from collections.abc import Mapping
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
from ..resources import CPU, EPHEMERAL_STORAGE, MEMORY, PODS, is_extended_resource_name, node_allocatable
from . import resource_allocation as ra

LEAST_ALLOCATED = "LeastAllocated"
MOST_ALLOCATED = "MostAllocated"
REQUESTED_TO_CAPACITY_RATIO = "RequestedToCapacityRatio"
MAX_CUSTOM_PRIORITY_SCORE = 10


def _reason(resource: str) -> str:
    return "Too many pods" if resource == PODS else f"Insufficient {resource}"


class NodeResourcesFit(Plugin):
    name = "NodeResourcesFit"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        args = args or {}
        self.ignored_resources = frozenset(args.get("ignoredResources") or ())
        self.ignored_groups = frozenset(args.get("ignoredResourceGroups") or ())
        strategy = args.get("scoringStrategy") or {}
        self.strategy = strategy.get("type") or LEAST_ALLOCATED
        self.resources = ra.parse_resource_specs(strategy.get("resources"))
        shape = ((strategy.get("requestedToCapacityRatio") or {}).get("shape")) or ()
        self.shape = tuple(
            (int(p.get("utilization") or 0), int(p.get("score") or 0) * (100 // MAX_CUSTOM_PRIORITY_SCORE))
            for p in shape
        )
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO and not self.shape:
            self.shape = ((0, 0), (100, 100))

    def _ignored(self, resource: str) -> bool:
        if not is_extended_resource_name(resource):
            return False
        return resource in self.ignored_resources or resource.split("/", 1)[0] in self.ignored_groups

    def _checks(self, pod: PodInfo) -> list[tuple[str, int]]:
        """(resource, request) pairs to compare, in upstream's reason order."""
        key = ("NodeResourcesFit.checks", self.ignored_resources, self.ignored_groups)
        hit = pod.tmpl.memo.get(key)
        if hit is None:
            req = pod.tmpl.requests
            hit = [(r, req[r]) for r in (CPU, MEMORY, EPHEMERAL_STORAGE) if req.get(r, 0) > 0]
            hit += [(r, v) for r, v in sorted(req.items())
                    if r not in (CPU, MEMORY, EPHEMERAL_STORAGE, PODS) and v > 0 and not self._ignored(r)]
            pod.tmpl.memo[key] = hit
        return hit  # type: ignore[no-any-return]

    # -- filter -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        return None, None

    def _split_checks(self, pod: PodInfo, table: NodeTable) -> tuple[list[int], list[int], np.ndarray, list[tuple[int, str, int]]]:
        """The checks on the table's dense fixed resources (flag rows, resource rows, requests as a
        column) and the others (flag row, resource, request); memoised with the checks (fixed
        resources have the same rows in every table)."""
        key = ("NodeResourcesFit.split", self.ignored_resources, self.ignored_groups)
        hit = pod.tmpl.memo.get(key)
        if hit is None:
            dense = table.alloc.dense.shape[0]
            flag_rows, cols, need, other = [], [], [], []
            for k, (r, q) in enumerate(self._checks(pod), start=1):
                col = table.res_index.get(r)
                if col is not None and col < dense:
                    flag_rows.append(k)
                    cols.append(col)
                    need.append(q)
                else:
                    other.append((k, r, q))
            hit = pod.tmpl.memo[key] = (flag_rows, cols, np.array(need, dtype=np.int64)[:, None], other)
        return hit  # type: ignore[no-any-return]

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        checks = self._checks(pod)
        flag_rows, cols, need, other = self._split_checks(pod, table)
        take = table.take
        # One gather per matrix for the fixed resources (pods, cpu, memory, ephemeral-storage);
        # take() along the axis, as 2-D fancy indexing costs several times more.
        alloc = table.alloc.dense.take(rows, axis=1)
        flags = np.empty((len(checks) + 1, rows.size), dtype=bool)
        flags[0] = take(table.npods, rows) + 1 > alloc[table.res_index[PODS]]
        if cols:
            flags[flag_rows] = need > alloc[cols] - table.req.dense.take(rows, axis=1)[cols]
        for k, r, q in other:
            col = table.res_index.get(r)
            if col is None:
                flags[k] = True  # no node has this resource at all
            else:
                flags[k] = q > take(table.alloc[col], rows) - take(table.req[col], rows)
        names = [PODS] + [r for r, _ in checks]
        fails = np.asarray(flags.any(axis=0))
        if not fails.any():
            return None
        ok = ~fails
        if len(flags) <= 8:
            # The failing checks of a row as a byte, and the distinct bytes in ascending order by
            # counting (cheaper than sorting for np.unique on a few hundred rows).
            bits = np.packbits(flags, axis=0, bitorder="little")[0]
            failed = bits[fails]
            uniq = np.flatnonzero(np.bincount(failed, minlength=256))
            lut = np.zeros(256, dtype=np.int32)
            lut[uniq] = np.arange(uniq.size, dtype=np.int32)
            inv = lut[failed]
        else:
            wide = np.zeros(rows.size, dtype=np.int64)
            for j, f in enumerate(flags):
                wide |= f.astype(np.int64) << j
            uniq, inv = np.unique(wide[fails], return_inverse=True)
        statuses = [
            Status(Code.UNSCHEDULABLE, tuple(_reason(names[j]) for j in range(len(names)) if (int(b) >> j) & 1))
            for b in uniq
        ]
        which = np.zeros(rows.size, dtype=np.int32)
        which[fails] = inv
        return FilterResult(ok, statuses, which)

    # -- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        if self.strategy == LEAST_ALLOCATED and self.resources == ra.DEFAULT_RESOURCES:
            both = ra.cpu_memory(table, rows, pod, use_requested=False)
            if both is not None:  # the default: ((cpu score) + (memory score)) // 2
                alloc, used = both
                return (np.maximum(alloc - used, 0) * 100 // alloc).sum(axis=0) // 2  # type: ignore[no-any-return]
        allocs, reqs = ra.gather(table, rows, pod, self.resources, use_requested=False)
        weights = [w for _, w in self.resources]
        if self.strategy == MOST_ALLOCATED:
            return ra.most_allocated(allocs, reqs, weights)
        if self.strategy == REQUESTED_TO_CAPACITY_RATIO:
            return ra.requested_to_capacity_ratio(allocs, reqs, weights, self.shape)
        return ra.least_allocated(allocs, reqs, weights)

    # -- requeueing -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        node_actions = (ActionType.ADD | ActionType.UPDATE_NODE_ALLOCATABLE | ActionType.UPDATE_NODE_TAINT
                        | ActionType.UPDATE_NODE_LABEL)
        return [
            ClusterEventWithHint(ClusterEvent(ASSIGNED_POD, ActionType.DELETE | ActionType.UPDATE_POD_SCALE_DOWN),
                                 self._pod_hint),
            ClusterEventWithHint(ClusterEvent(NODE, node_actions), self._node_hint),
        ]

    def _fits_empty(self, pod: PodInfo, node: Mapping[str, Any]) -> bool:
        alloc = node_allocatable(node)
        if alloc.get(PODS, 0) < 1:
            return False
        return all(alloc.get(r, 0) >= q for r, q in self._checks(pod))

    def _node_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None or not self._fits_empty(pod, new):
            return QUEUE_SKIP  # the pod would not fit even on the empty node
        if old is None:
            return QUEUE
        # An update helps only if it raised the allocatable of something the pod needs.
        o, n = node_allocatable(old), node_allocatable(new)
        wanted = [PODS] + [r for r, _ in self._checks(pod)]
        return QUEUE if any(n.get(r, 0) > o.get(r, 0) for r in wanted) else QUEUE_SKIP

    def _pod_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        gone = pod_info(old if old is not None else new)
        if new is not None and old is not None:
            # Scale-down: worth it only if a resource this pod needs was released.
            o, n = gone.tmpl.requests, pod_info(new).tmpl.requests
            return QUEUE if any(n.get(r, 0) < o.get(r, 0) for r, _ in self._checks(pod)) else QUEUE_SKIP
        return QUEUE
