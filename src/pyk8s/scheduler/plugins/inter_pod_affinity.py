"""InterPodAffinity: required pod affinity / anti-affinity, existing pods' anti-affinity (Filter) and
preferred terms of both sides (Score), per topology domain.

PreFilter counts, per (topologyKey, value), the existing pods that match the incoming pod's
terms (a selector mask over the table's pod columns) and the existing pods whose
anti-affinity the incoming pod would violate (matched once per pod template); Filter then
looks those counts up per node row. ``add_pod``/``remove_pod`` keep the counts right when preemption removes victims or
nominated pods are added. Args: ``hardPodAffinityWeight`` (default 1),
``ignorePreferredTermsOfExistingPods``. Namespace selectors are evaluated against
``Handle.namespace_labels``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
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
from ..podinfo import AffinityTerm, PodInfo, pod_info

ERR_REASON_EXISTING_ANTI_AFFINITY = "node(s) didn't satisfy existing pods anti-affinity rules"
ERR_REASON_AFFINITY = "node(s) didn't match pod affinity rules"
ERR_REASON_ANTI_AFFINITY = "node(s) didn't match pod anti-affinity rules"
_STATUSES = (
    Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_AFFINITY,)),
    Status(Code.UNSCHEDULABLE, (ERR_REASON_ANTI_AFFINITY,)),
    Status(Code.UNSCHEDULABLE, (ERR_REASON_EXISTING_ANTI_AFFINITY,)),
)
_PRE_FILTER_KEY = "PreFilterInterPodAffinity"
_PRE_SCORE_KEY = "PreScoreInterPodAffinity"

# Per topology key, matching-pod counts indexed by the key's label-value code in the node table.
Counts = dict[str, np.ndarray]


def _bump(counts: Counts, key: str, code: int, delta: int) -> None:
    if code < 0:
        return
    arr = counts.get(key)
    if arr is None or arr.shape[0] <= code:
        grown = np.zeros(code + 64, dtype=np.int64)
        if arr is not None:
            grown[: arr.shape[0]] = arr
        counts[key] = arr = grown
    arr[code] += delta


def _add_rows(counts: Counts, table: NodeTable, key: str, rows: np.ndarray, weight: int = 1) -> bool:
    """Add ``weight`` per pod at the topology value of its node row; True if any row had the key."""
    if rows.size == 0:
        return False
    codes = table.label_column(key).codes[rows]
    codes = codes[codes >= 0]
    if codes.size == 0:
        return False
    add = np.bincount(codes, minlength=int(codes.max()) + 1).astype(np.int64) * weight
    arr = counts.get(key)
    if arr is not None:
        size = max(arr.shape[0], add.shape[0])
        add = np.pad(add, (0, size - add.shape[0])) + np.pad(arr, (0, size - arr.shape[0]))
    counts[key] = add
    return True


def _empty(counts: Counts) -> bool:
    return not any(bool(a.any()) for a in counts.values())


def _lookup(counts: Counts, key: str, codes: np.ndarray) -> np.ndarray:
    """counts[key][code] per element (0 for missing labels or unseen values)."""
    arr = counts.get(key)
    if arr is None:
        return np.zeros(codes.shape, dtype=np.int64)
    safe = np.where((codes >= 0) & (codes < arr.shape[0]), codes, 0)
    return np.where((codes >= 0) & (codes < arr.shape[0]), arr[safe], 0)


class _FilterState:
    __slots__ = ("existing_anti", "affinity", "anti")

    def __init__(self, existing_anti: Counts, affinity: Counts, anti: Counts) -> None:
        self.existing_anti, self.affinity, self.anti = existing_anti, affinity, anti

    def clone(self) -> _FilterState:
        def cp(c: Counts) -> Counts:
            return {k: v.copy() for k, v in c.items()}

        return _FilterState(cp(self.existing_anti), cp(self.affinity), cp(self.anti))


class InterPodAffinity(Plugin):
    name = "InterPodAffinity"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        args = args or {}
        self.hard_weight = int(args.get("hardPodAffinityWeight", 1))
        self.ignore_existing_preferred = bool(args.get("ignorePreferredTermsOfExistingPods", False))

    def _ns(self, namespace: str) -> Mapping[str, str]:
        return self.handle.namespace_labels(namespace) or {}

    def _matches(self, term: AffinityTerm, p: PodInfo) -> bool:
        return term.matches(p.namespace, p.tmpl.labels, self._ns(p.namespace) if term.namespace_selector else None)

    def _matches_all(self, terms: Sequence[AffinityTerm], p: PodInfo) -> bool:
        return bool(terms) and all(self._matches(t, p) for t in terms)
    def _term_mask(self, table: NodeTable, term: AffinityTerm) -> np.ndarray:
        """Existing pods matching a term of the incoming pod (namespaceSelector resolved to namespaces)."""
        namespaces = set(term.namespaces)
        if term.namespace_selector is not None:
            namespaces.update(ns for ns in table.pod_cols.ns_values if term.namespace_selector.matches(self._ns(ns)))
        return table.pod_cols.mask(term.selector, namespaces)

    def _rows(self, table: NodeTable, mask: np.ndarray) -> np.ndarray:
        return table.pod_cols.row[: table.pod_cols.n][mask]

    def _template_rows(self, table: NodeTable, tmpl: Any) -> np.ndarray:
        pc = table.pod_cols
        return pc.row[: pc.n][pc.tmpl[: pc.n] == pc.template_id(tmpl)]

    # -- filter -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        t = pod.tmpl
        existing: Counts = {}
        # Existing pods' required anti-affinity terms, matched against the incoming pod once per template.
        for tmpl in table.affinity_templates:
            terms = [term for term in tmpl.required_anti_affinity if self._matches(term, pod)]
            if terms:
                rows = self._template_rows(table, tmpl)
                for term in terms:
                    _add_rows(existing, table, term.topology_key, rows)
        affinity: Counts = {}
        anti: Counts = {}
        if t.required_affinity:
            m = self._term_mask(table, t.required_affinity[0])
            for term in t.required_affinity[1:]:
                m &= self._term_mask(table, term)
            rows = self._rows(table, m)  # pods matching all the terms
            for term in t.required_affinity:
                _add_rows(affinity, table, term.topology_key, rows)
        for term in t.required_anti_affinity:
            _add_rows(anti, table, term.topology_key, self._rows(table, self._term_mask(table, term)))
        if _empty(existing) and not t.required_affinity and not t.required_anti_affinity:
            return None, Status(Code.SKIP)
        state.write(_PRE_FILTER_KEY, _FilterState(existing, affinity, anti))
        return None, None

    def _update_with_pod(self, st: _FilterState, pod: PodInfo, other: PodInfo, table: NodeTable, row: int,
                         d: int) -> None:
        def code(key: str) -> int:
            return int(table.label_column(key).codes[row])

        for term in other.tmpl.required_anti_affinity:
            if self._matches(term, pod):
                _bump(st.existing_anti, term.topology_key, code(term.topology_key), d)
        if self._matches_all(pod.tmpl.required_affinity, other):
            for term in pod.tmpl.required_affinity:
                _bump(st.affinity, term.topology_key, code(term.topology_key), d)
        for term in pod.tmpl.required_anti_affinity:
            if self._matches(term, other):
                _bump(st.anti, term.topology_key, code(term.topology_key), d)

    def add_pod(self, state: CycleState, pod: PodInfo, added: PodInfo, table: NodeTable, row: int) -> None:
        st = state.read(_PRE_FILTER_KEY)
        if st is not None:
            self._update_with_pod(st, pod, added, table, row, 1)

    def remove_pod(self, state: CycleState, pod: PodInfo, removed: PodInfo, table: NodeTable, row: int) -> None:
        st = state.read(_PRE_FILTER_KEY)
        if st is not None:
            self._update_with_pod(st, pod, removed, table, row, -1)

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        st: _FilterState | None = state.read(_PRE_FILTER_KEY)
        if st is None:
            return None
        t = pod.tmpl
        n = rows.size

        def codes(key: str) -> np.ndarray:
            return table.take(table.label_column(key).codes, rows)

        ok_aff = np.ones(n, dtype=bool)
        if t.required_affinity:
            has_all = np.ones(n, dtype=bool)
            exist = np.ones(n, dtype=bool)
            for term in t.required_affinity:
                c = codes(term.topology_key)
                has_all &= c >= 0
                exist &= _lookup(st.affinity, term.topology_key, c) > 0
            if _empty(st.affinity) and self._matches_all(t.required_affinity, pod):
                exist[:] = True  # the first pod of a group with affinity to itself
            ok_aff = has_all & exist
        ok_anti = np.ones(n, dtype=bool)
        for term in t.required_anti_affinity:
            ok_anti &= _lookup(st.anti, term.topology_key, codes(term.topology_key)) <= 0
        ok_exist = np.ones(n, dtype=bool)
        for key in st.existing_anti:
            ok_exist &= _lookup(st.existing_anti, key, codes(key)) <= 0
        ok = ok_aff & ok_anti & ok_exist
        if ok.all():
            return None
        which = np.where(~ok_aff, 0, np.where(~ok_anti, 1, 2)).astype(np.int32)
        return FilterResult(ok, _STATUSES, which)

    # -- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        t = pod.tmpl
        has_constraints = bool(t.preferred_affinity or t.preferred_anti_affinity)
        if self.ignore_existing_preferred and not has_constraints:
            return Status(Code.SKIP)
        topo: Counts = {}
        touched = False
        if has_constraints:
            for terms, sign in ((t.preferred_affinity, 1), (t.preferred_anti_affinity, -1)):
                for term in terms:
                    hit = self._rows(table, self._term_mask(table, term))
                    touched |= _add_rows(topo, table, term.topology_key, hit, sign * term.weight)
        if not self.ignore_existing_preferred or has_constraints:
            for tmpl in table.affinity_templates:
                contributions = []
                if self.hard_weight > 0:
                    contributions += [(term, self.hard_weight) for term in tmpl.required_affinity]
                contributions += [(term, term.weight) for term in tmpl.preferred_affinity]
                contributions += [(term, -term.weight) for term in tmpl.preferred_anti_affinity]
                contributions = [(term, w) for term, w in contributions if self._matches(term, pod)]
                if not contributions:
                    continue
                hit = self._template_rows(table, tmpl)
                for term, w in contributions:
                    touched |= _add_rows(topo, table, term.topology_key, hit, w)
        if not touched:
            return Status(Code.SKIP)
        state.write(_PRE_SCORE_KEY, topo)
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        topo: Counts = state.read(_PRE_SCORE_KEY) or {}
        out = np.zeros(rows.size, dtype=np.int64)
        for key in topo:
            out += _lookup(topo, key, table.take(table.label_column(key).codes, rows))
        return out

    def normalize_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray,
                        scores: np.ndarray) -> np.ndarray:
        if not state.read(_PRE_SCORE_KEY) or scores.size == 0:
            return scores
        lo, hi = int(scores.min()), int(scores.max())
        diff = hi - lo
        if diff <= 0:
            return np.zeros(scores.shape, dtype=np.int64)
        return (float(MAX_NODE_SCORE) * ((scores - lo).astype(np.float64) / float(diff))).astype(np.int64)

    # -- requeueing -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [
            ClusterEventWithHint(
                ClusterEvent(ASSIGNED_POD, ActionType.ADD | ActionType.UPDATE_POD_LABEL | ActionType.DELETE),
                self._pod_hint),
            ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._node_hint),
        ]

    def _pod_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        t = pod.tmpl
        for obj in (old, new):
            if obj is None:
                continue
            other = pod_info(obj)
            if any(self._matches(term, other) for term in t.required_affinity + t.required_anti_affinity):
                return QUEUE
            if any(self._matches(term, pod) for term in other.tmpl.required_anti_affinity):
                return QUEUE
        return QUEUE_SKIP

    def _node_hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None:
            return QUEUE_SKIP
        labels = (new.get("metadata") or {}).get("labels") or {}
        keys = {term.topology_key for term in pod.tmpl.required_affinity}
        if keys and not keys.issubset(labels):
            return QUEUE_SKIP
        return QUEUE

