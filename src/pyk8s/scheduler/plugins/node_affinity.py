"""NodeAffinity: spec.nodeSelector and required node affinity (Filter), preferred node affinity (Score).

PreFilter turns ``matchFields`` on ``metadata.name`` with ``In`` into a PreFilterResult, so
only the named nodes are filtered at all; the others are reported as "didn't satisfy
plugin(s) [NodeAffinity]", as upstream does. Args: ``addedAffinity`` (a NodeAffinity every
pod of the profile must also satisfy).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..cache import NodeTable
from ..events import NODE, QUEUE, QUEUE_SKIP, ActionType, ClusterEvent, ClusterEventWithHint, QueueingHint
from ..framework import Code, CycleState, FilterResult, Plugin, PreFilterResult, Status
from ..podinfo import PodInfo
from ..selectors import NodeSelectorTerm, RequiredNodeAffinity, compile_node_selector_terms
from .helpers import default_normalize_score, memo_get, memo_put

ERR_REASON_POD = "node(s) didn't match Pod's node affinity/selector"
ERR_REASON_ENFORCED = "node(s) didn't match scheduler-enforced node affinity"
ERR_REASON_CONFLICT = "pod affinity terms conflict"
_POD = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_POD,))
_ENFORCED = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_ENFORCED,))


def _required_terms_raw(pod: PodInfo) -> Any:
    na = ((pod.tmpl.spec.get("affinity") or {}).get("nodeAffinity") or {})
    return na.get("requiredDuringSchedulingIgnoredDuringExecution")


class NodeAffinity(Plugin):
    name = "NodeAffinity"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        added = (args or {}).get("addedAffinity") or {}
        req = added.get("requiredDuringSchedulingIgnoredDuringExecution")
        self.added_required: RequiredNodeAffinity | None = None
        if req is not None:
            self.added_required = RequiredNodeAffinity((), compile_node_selector_terms(req.get("nodeSelectorTerms") or ()))
        prefs = added.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
        self.added_preferred: tuple[tuple[int, NodeSelectorTerm], ...] = tuple(
            zip((int(p.get("weight") or 0) for p in prefs),
                compile_node_selector_terms((p.get("preference") or {}) for p in prefs), strict=True))
        self._added_mask: tuple[tuple[int, int], np.ndarray] | None = None

    # -- filter -----------------------------------------------------------------------------

    def pre_filter(self, state: CycleState, pod: PodInfo, table: NodeTable) -> tuple[PreFilterResult | None, Status | None]:
        required = _required_terms_raw(pod)
        if required is None and self.added_required is None and not pod.tmpl.spec.get("nodeSelector"):
            return None, Status(Code.SKIP)
        if required is None or not required.get("nodeSelectorTerms"):
            return None, None
        names: set[str] | None = None
        for term in required.get("nodeSelectorTerms") or ():
            term_names: set[str] | None = None
            for r in term.get("matchFields") or ():
                if r.get("key") == "metadata.name" and r.get("operator") == "In":
                    s = set(r.get("values") or ())
                    term_names = s if term_names is None else term_names & s
            if term_names is None:
                return None, None  # this term does not pin names; terms are ORed
            names = term_names if names is None else names | term_names
        if names is not None and not names:
            return None, Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, (ERR_REASON_CONFLICT,))
        if names:
            return PreFilterResult(frozenset(names)), None
        return None, None

    def _pod_mask(self, pod: PodInfo, table: NodeTable) -> np.ndarray:
        stamp = (table.serial, table.label_gen)
        m = memo_get(pod.tmpl.memo, "NodeAffinity.required", stamp)
        if m is None:
            m = memo_put(pod.tmpl.memo, "NodeAffinity.required", stamp, pod.tmpl.required_node_affinity.mask(table))
        return m  # type: ignore[no-any-return]

    def _enforced_mask(self, table: NodeTable) -> np.ndarray | None:
        if self.added_required is None:
            return None
        stamp = (table.serial, table.label_gen)
        if self._added_mask is None or self._added_mask[0] != stamp:
            self._added_mask = (stamp, self.added_required.mask(table))
        return self._added_mask[1]

    def filter(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> FilterResult | None:
        enforced = self._enforced_mask(table)
        ok_pod = self._pod_mask(pod, table)[rows]
        if enforced is None:
            return None if ok_pod.all() else FilterResult.uniform(ok_pod, _POD)
        ok_enf = enforced[rows]
        ok = ok_enf & ok_pod
        if ok.all():
            return None
        which = np.where(ok_enf, 1, 0).astype(np.int32)  # enforced is checked first upstream
        return FilterResult(ok, (_ENFORCED, _POD), which)

    # -- score ------------------------------------------------------------------------------

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        if not pod.tmpl.preferred_node_terms and not self.added_preferred:
            return Status(Code.SKIP)
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        stamp = (table.serial, table.label_gen)
        full = memo_get(pod.tmpl.memo, "NodeAffinity.preferred", stamp)
        if full is None:
            full = np.zeros(table.n, dtype=np.int64)
            for weight, term in pod.tmpl.preferred_node_terms + self.added_preferred:
                if weight:
                    full += np.where(term.mask(table), weight, 0)
            memo_put(pod.tmpl.memo, "NodeAffinity.preferred", stamp, full)
        return full[rows]  # type: ignore[no-any-return]

    def normalize_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray,
                        scores: np.ndarray) -> np.ndarray:
        return default_normalize_score(scores, reverse=False)

    # -- requeueing -------------------------------------------------------------------------

    def events_to_register(self) -> list[ClusterEventWithHint]:
        return [ClusterEventWithHint(ClusterEvent(NODE, ActionType.ADD | ActionType.UPDATE_NODE_LABEL), self._hint)]

    def _matches(self, pod: PodInfo, node: Mapping[str, Any]) -> bool:
        md = node.get("metadata") or {}
        labels, name = md.get("labels") or {}, md.get("name", "")
        if self.added_required is not None and not self.added_required.matches(labels, name):
            return False
        return pod.tmpl.required_node_affinity.matches(labels, name)

    def _hint(self, pod: PodInfo, old: Any, new: Any) -> QueueingHint:
        if new is None or not self._matches(pod, new):
            return QUEUE_SKIP
        if old is not None and self._matches(pod, old):
            return QUEUE_SKIP
        return QUEUE
