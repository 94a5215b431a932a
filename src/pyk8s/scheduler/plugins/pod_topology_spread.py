"""PodTopologySpread: topologySpreadConstraints (DoNotSchedule in Filter, ScheduleAnyway in Score)
and the system default constraints.

Per constraint the filter needs, for every topology domain, how many matching pods it holds,
over the nodes that pass nodeAffinityPolicy/nodeTaintsPolicy and carry all the constraints'
keys; those counts are built once per cycle with np.bincount over label codes, and the skew
check (matching + self - global minimum > maxSkew, minimum 0 below minDomains) is a vector
expression over candidate rows.

System defaults (hostname maxSkew 3, zone maxSkew 5, ScheduleAnyway) apply to pods without
constraints and need the selectors of the Services/RCs/ReplicaSets/StatefulSets that select
the pod: the caller supplies them as ``Handle.workload_selectors``; without it no default
constraint applies (upstream would have an empty selector too). Args: ``defaultingType``
(System|List), ``defaultConstraints``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
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
from ..framework import MAX_NODE_SCORE, Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo, pod_info
from ..selectors import DO_NOT_SCHEDULE, LabelSelector, compile_label_selector, find_untolerated_taint
from .helpers import go_round, memo_get, memo_put

ERR_REASON_CONSTRAINTS_NOT_MATCH = "node(s) didn't match pod topology spread constraints"
ERR_REASON_NODE_LABEL_NOT_MATCH = ERR_REASON_CONSTRAINTS_NOT_MATCH + " (missing required label)"
_STATUSES = (
    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_NODE_LABEL_NOT_MATCH,)),
    Status(Code.UNSCHEDULABLE, (ERR_REASON_CONSTRAINTS_NOT_MATCH,)),
)
LABEL_HOSTNAME = "kubernetes.io/hostname"
LABEL_ZONE = "topology.kubernetes.io/zone"
SYSTEM_DEFAULT_CONSTRAINTS = (
    {"topologyKey": LABEL_HOSTNAME, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 3},
    {"topologyKey": LABEL_ZONE, "whenUnsatisfiable": "ScheduleAnyway", "maxSkew": 5},
)
_MAX_INT32 = 2**31 - 1
_SMALL = 64  # domain counts up to this size are judged in plain Python
_PRE_FILTER_KEY = "PreFilterPodTopologySpread"
_PRE_SCORE_KEY = "PreScorePodTopologySpread"


@dataclass(frozen=True, slots=True)
class SpreadConstraint:
    max_skew: int
    topology_key: str
    selector: LabelSelector
    min_domains: int = 1
    node_affinity_policy: str = "Honor"
    node_taints_policy: str = "Ignore"


def parse_constraints(raw: Sequence[Mapping[str, Any]], pod_labels: Mapping[str, str], action: str,
                      selector: LabelSelector | None = None) -> list[SpreadConstraint]:
    out = []
    for c in raw:
        if c.get("whenUnsatisfiable", "DoNotSchedule") != action:
            continue
        sel = selector if selector is not None else compile_label_selector(c.get("labelSelector"))
        keys = [k for k in c.get("matchLabelKeys") or () if k in pod_labels]
        if keys and selector is None:
            # matchLabelKeys: the pod's own values for these keys join the selector (v1.33 scheduler-side merge)
            sel = LabelSelector(tuple((k, "In", frozenset([pod_labels[k]])) for k in keys)).merged(sel)
        out.append(SpreadConstraint(
            int(c.get("maxSkew") or 1), c.get("topologyKey", ""), sel,
            int(c["minDomains"]) if c.get("minDomains") is not None else 1,
            c.get("nodeAffinityPolicy") or "Honor", c.get("nodeTaintsPolicy") or "Ignore"))
    return out


class _FilterState:
    __slots__ = ("constraints", "counts", "domains", "_verdicts")

    def __init__(self, constraints: list[SpreadConstraint], counts: list[np.ndarray], domains: list[np.ndarray]) -> None:
        self.constraints, self.counts, self.domains = constraints, counts, domains
        self._verdicts: dict[tuple[int, int], np.ndarray] = {}

    def clone(self) -> _FilterState:
        return _FilterState(self.constraints, [c.copy() for c in self.counts], [d.copy() for d in self.domains])

    def changed(self) -> None:
        self._verdicts.clear()

    def min_match(self, i: int) -> int:
        dom = self.domains[i]
        if dom.shape[0] <= _SMALL:  # a few zones: Python beats numpy's per-call cost
            present = [c for c, d in zip(self.counts[i].tolist(), dom.tolist(), strict=False) if d]
            n_domains = len(present)
            m = min(present) if present else _MAX_INT32
        else:
            n_domains = int(dom.sum())
            m = int(self.counts[i][dom].min()) if n_domains else _MAX_INT32
        if n_domains < self.constraints[i].min_domains:
            m = 0  # too few eligible domains: the global minimum is taken as 0
        return m

    def verdict(self, i: int, size: int, self_match: int) -> np.ndarray:
        """Per label code of constraint i's key: 0 fits, 2 the skew is too big; one more entry, for
        code -1 (the node lacks the key), is 1. The skew depends on the node's domain alone, so it
        is judged once per domain rather than per node."""
        v = self._verdicts.get((i, size))
        if v is None:
            # skew = count + self_match - min > maxSkew, i.e. count > limit
            limit = self.constraints[i].max_skew - self_match + self.min_match(i)
            counts = _pad(self.counts[i], size)
            if counts.shape[0] <= _SMALL:
                v = np.array([2 if c > limit else 0 for c in counts.tolist()] + [1], dtype=np.int8)
            else:
                v = np.empty(counts.shape[0] + 1, dtype=np.int8)
                v[:-1] = np.where(counts > limit, 2, 0)
                v[-1] = 1
            self._verdicts[(i, size)] = v
        return v


def _pad(a: np.ndarray, size: int, fill: Any = 0) -> np.ndarray:
    if a.shape[0] >= size:
        return a
    return np.concatenate([a, np.full(size - a.shape[0], fill, dtype=a.dtype)])


class PodTopologySpread(Plugin):
    name = "PodTopologySpread"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        args = args or {}
        if (args.get("defaultingType") or "System") == "System":
            self.default_constraints: tuple[Mapping[str, Any], ...] = SYSTEM_DEFAULT_CONSTRAINTS
            self.system_defaulted = True
        else:
            self.default_constraints = tuple(args.get("defaultConstraints") or ())
            self.system_defaulted = False

    def _constraints(self, pod: PodInfo, action: str) -> list[SpreadConstraint]:
        t = pod.tmpl
        if t.spread_constraints:  # a function of the template alone
            key = ("PodTopologySpread.constraints", action)
            hit = t.memo.get(key)
            if hit is None:
                hit = t.memo[key] = parse_constraints(t.spread_constraints, t.labels, action)
            return hit  # type: ignore[no-any-return]
        if not self.default_constraints or self.handle.workload_selectors is None:
            return []
        if not any(c.get("whenUnsatisfiable", "DoNotSchedule") == action for c in self.default_constraints):
            return []
        sels = self.handle.workload_selectors(pod) or []
        merged = LabelSelector()
        for s in sels:
            merged = merged.merged(s)
        if merged.empty:
            return []
        return parse_constraints(self.default_constraints, t.labels, action, merged)

    def _inclusion(self, pod: PodInfo, table: NodeTable, c: SpreadConstraint) -> np.ndarray:
        m = np.ones(table.n, dtype=bool)
        if c.node_affinity_policy == "Honor":
            stamp = (table.serial, table.label_gen)
            aff = memo_get(pod.tmpl.memo, "PodTopologySpread.affinity", stamp)
            if aff is None:
                aff = memo_put(pod.tmpl.memo, "PodTopologySpread.affinity", stamp,
                               pod.tmpl.required_node_affinity.mask(table))
            m &= aff
        if c.node_taints_policy == "Honor":
            tols = pod.tmpl.tolerations
            per_set = np.array([find_untolerated_taint(ts, tols, DO_NOT_SCHEDULE) is None for ts in table.taint_sets])
            m &= per_set[table.taint_set[: table.n]]
        return m

    def _included_row(self, pod: PodInfo, table: NodeTable, c: SpreadConstraint, row: int) -> bool:
        if c.node_affinity_policy == "Honor" and not pod.tmpl.required_node_affinity.matches(
                table.labels[row], table.names[row]):
            return False
        if c.node_taints_policy == "Honor" and find_untolerated_taint(
                table.taints[row], pod.tmpl.tolerations, DO_NOT_SCHEDULE) is not None:
            return False
        return True

    # -- filter -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        constraints = self._constraints(pod, "DoNotSchedule")
        if not constraints:
            return None, Status(Code.SKIP)
        counts, domains = [], []
        for c, (elig, dom, codes) in zip(constraints, self._eligible(pod, table, constraints), strict=True):
            # Matching pods on eligible nodes per domain, from the table's kept per-node counts.
            per_node = table.count_matching_per_node(c.selector, pod.namespace)
            if codes.shape[0] != per_node.shape[0]:
                per_node = per_node[elig]
            counts.append(np.bincount(codes, weights=per_node, minlength=dom.shape[0]).astype(np.int64))
            domains.append(dom.copy())  # add_pod/remove_pod change the state's copy
        state.write(_PRE_FILTER_KEY, _FilterState(constraints, counts, domains))
        return None, None

    def _eligible(self, pod: PodInfo, table: NodeTable,
                  constraints: list[SpreadConstraint]) -> list[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        """Per constraint, the nodes whose pods count (all the constraints' keys, node inclusion
        policies), which domains they form and their domain codes. Node-side only: memoised per
        template until the nodes' labels or taints change."""
        stamp = (table.serial, table.label_gen, table.taint_gen,
                 tuple((c.topology_key, c.node_affinity_policy, c.node_taints_policy) for c in constraints))
        hit = memo_get(pod.tmpl.memo, "PodTopologySpread.eligible", stamp)
        if hit is not None:
            return hit  # type: ignore[no-any-return]
        n = table.n
        all_keys = table.has_labels_mask(c.topology_key for c in constraints)
        out = []
        for c in constraints:
            col = table.label_column(c.topology_key)
            elig = all_keys & self._inclusion(pod, table, c)
            codes = col.codes[:n] if elig.all() else col.codes[:n][elig]
            out.append((elig, np.bincount(codes, minlength=len(col.values) + 1) > 0, codes.copy()))
        return memo_put(pod.tmpl.memo, "PodTopologySpread.eligible", stamp, out)  # type: ignore[no-any-return]

    def _update_with_pod(self, state: CycleState, pod: PodInfo, other: PodInfo, table: NodeTable, row: int, d: int) -> None:
        st: _FilterState | None = state.read(_PRE_FILTER_KEY)
        if st is None or other.namespace != pod.namespace:
            return
        labels = table.labels[row]
        if any(c.topology_key not in labels for c in st.constraints):
            return
        for i, c in enumerate(st.constraints):
            if not c.selector.matches(other.tmpl.labels) or not self._included_row(pod, table, c, row):
                continue
            code = int(table.label_column(c.topology_key).codes[row])
            st.counts[i] = _pad(st.counts[i], code + 1)
            st.domains[i] = _pad(st.domains[i], code + 1, False)
            st.counts[i][code] += d
            st.domains[i][code] = True
        st.changed()

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        self._update_with_pod(state, pod, added, table, row, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        self._update_with_pod(state, pod, removed, table, row, -1)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        st: _FilterState | None = state.read(_PRE_FILTER_KEY)
        if st is None or not st.constraints:
            return None
        res: np.ndarray | None = None  # per row: 0 fits, 1 missing label, 2 skew; the first constraint failing counts
        for i, c in enumerate(st.constraints):
            col = table.label_column(c.topology_key)
            self_match = 1 if c.selector.matches(pod.tmpl.labels) else 0
            v = st.verdict(i, len(col.values) + 1, self_match)[col.codes[rows]]
            res = v if res is None else np.where(res == 0, v, res)
        assert res is not None
        if not res.any():
            return None
        return FilterResult(res == 0, _STATUSES, (res == 2).astype(np.int32))

    # -- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        if rows.size == 0 or table.n == 0:
            return Status(Code.SKIP)
        constraints = self._constraints(pod, "ScheduleAnyway")
        if not constraints:
            return Status(Code.SKIP)
        require_all = bool(pod.tmpl.spread_constraints) or not self.system_defaulted
        n = table.n
        all_keys = table.has_labels_mask(c.topology_key for c in constraints)
        ignored = ~all_keys[rows] if require_all else np.zeros(rows.size, dtype=bool)
        kept = rows[~ignored]
        # (key, value) pairs of the candidate nodes; value code -1 ("" for a missing label) goes last.
        present: dict[str, np.ndarray] = {}
        weights = []
        for c in constraints:
            if c.topology_key == LABEL_HOSTNAME:
                weights.append(math.log(float(kept.size) + 2))
                continue
            col = table.label_column(c.topology_key)
            size = len(col.values) + 1
            codes = col.codes[kept]
            codes = np.where(codes < 0, size - 1, codes)
            have = present.setdefault(c.topology_key, np.zeros(size, dtype=bool))
            seen = np.zeros(size, dtype=bool)
            seen[codes] = True
            new = int(np.count_nonzero(seen & ~have))  # pairs are shared by constraints with the same key
            have |= seen
            weights.append(math.log(float(new) + 2))
        pair_counts = {k: np.zeros(v.shape[0], dtype=np.int64) for k, v in present.items()}
        for c in constraints:
            if c.topology_key == LABEL_HOSTNAME:
                continue
            col = table.label_column(c.topology_key)
            size = len(col.values) + 1
            elig = (all_keys if require_all else np.ones(n, dtype=bool)) & self._inclusion(pod, table, c)
            codes = col.codes[:n]
            codes = np.where(codes < 0, size - 1, codes)[elig]
            cnt = table.count_matching_per_node(c.selector, pod.namespace)[elig]
            add = np.bincount(codes, weights=cnt, minlength=size).astype(np.int64)
            pair_counts[c.topology_key] += np.where(present[c.topology_key], add, 0)
        state.write(_PRE_SCORE_KEY, (constraints, weights, pair_counts, ignored))
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        constraints, weights, pair_counts, ignored = state.read(_PRE_SCORE_KEY)
        total = np.zeros(rows.size, dtype=np.float64)
        for c, w in zip(constraints, weights, strict=True):
            codes = table.label_column(c.topology_key).codes[rows]
            has = codes >= 0
            if c.topology_key == LABEL_HOSTNAME:
                cnt = table.count_matching_per_node(c.selector, pod.namespace)[rows]
            else:
                pc = pair_counts[c.topology_key]
                cnt = pc[np.minimum(np.maximum(codes, 0), pc.shape[0] - 1)]
            total += np.where(has, cnt.astype(np.float64) * w + float(c.max_skew - 1), 0.0)
        out = go_round(total)
        out[ignored] = 0
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray,
                        scores: np.ndarray) -> np.ndarray:
        _, _, _, ignored = state.read(_PRE_SCORE_KEY)
        keep = ~ignored
        out = np.zeros(scores.shape, dtype=np.int64)
        if not keep.any():
            return out
        lo = int(scores[keep].min())
        hi = max(int(scores[keep].max()), 0)
        if hi == 0:
            out[keep] = MAX_NODE_SCORE
            return out
        out[keep] = MAX_NODE_SCORE * (hi + lo - scores[keep]) // hi
        return out

    # -- requeueing -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self._pod_hint),
            ClusterEventWithHint(
                ClusterEvent(NODE, ActionType.ADD | ActionType.DELETE | ActionType.UPDATE_NODE_LABEL
                             | ActionType.UPDATE_NODE_TAINT), self._node_hint),
        ]

    def _pod_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        constraints = self._constraints(pod, "DoNotSchedule") + self._constraints(pod, "ScheduleAnyway")
        for obj in (old, new):
            if obj is None:
                continue
            other = pod_info(obj)
            if other.namespace == pod.namespace and any(c.selector.matches(other.tmpl.labels) for c in constraints):
                return QUEUE
        return QUEUE_SKIP

    def _node_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        keys = {c.topology_key for c in self._constraints(pod, "DoNotSchedule")}
        for obj in (old, new):
            if obj is not None and keys.issubset((obj.get("metadata") or {}).get("labels") or {}):
                return QUEUE
        return QUEUE_SKIP
