"""Label selectors, node selectors and taint/toleration matching, in the scheduler's compiled form.

Node selectors can be evaluated for one node (``matches``) or for the whole node table at once
(``mask``), which is what the Filter plugins use.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from .cache import NodeTable

__all__ = [
    "LabelSelector",
    "EVERYTHING",
    "NOTHING",
    "compile_label_selector",
    "selector_from_set",
    "NodeSelectorTerm",
    "RequiredNodeAffinity",
    "compile_node_selector_terms",
    "Taint",
    "Toleration",
    "compile_tolerations",
    "node_taints",
    "tolerates",
    "find_untolerated_taint",
    "parse_go_int",
    "DO_NOT_SCHEDULE",
]

_INT = re.compile(r"^[+-]?\d+$")


def parse_go_int(s: str) -> int | None:
    """strconv.ParseInt(s, 10, 64) or None."""
    if not _INT.match(s):
        return None
    v = int(s)
    if -(2**63) <= v < 2**63:
        return v
    return None


# ---------------------------------------------------------------------------------------------
# metav1.LabelSelector


@dataclass(frozen=True, slots=True)
class LabelSelector:
    """A compiled LabelSelector: ANDed requirements (key, op, values)."""

    requirements: tuple[tuple[str, str, frozenset[str]], ...] = ()
    nothing: bool = False

    def matches(self, labels: Mapping[str, str] | None) -> bool:
        if self.nothing:
            return False
        labels = labels or {}
        for key, op, values in self.requirements:
            if op == "In":
                if labels.get(key) not in values:
                    return False
            elif op == "NotIn":
                v = labels.get(key)
                if v is not None and v in values:
                    return False
            elif op == "Exists":
                if key not in labels:
                    return False
            elif op == "DoesNotExist":
                if key in labels:
                    return False
            else:
                return False
        return True

    @property
    def empty(self) -> bool:
        """labels.Selector.Empty(): matches everything (no requirements)."""
        return not self.nothing and not self.requirements

    def index_candidates(self) -> tuple[str, frozenset[str]] | None:
        """A (key, values) requirement usable to look matching objects up in a label index."""
        best: tuple[str, frozenset[str]] | None = None
        for key, op, values in self.requirements:
            if op == "In" and (best is None or len(values) < len(best[1])):
                best = (key, values)
        return best

    def merged(self, other: LabelSelector) -> LabelSelector:
        if self.nothing or other.nothing:
            return NOTHING
        return LabelSelector(self.requirements + other.requirements)


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)


def selector_from_set(labels: Mapping[str, str] | None) -> LabelSelector:
    return LabelSelector(tuple((k, "In", frozenset([v])) for k, v in sorted((labels or {}).items())))


def compile_label_selector(sel: Mapping[str, Any] | None) -> LabelSelector:
    """metav1.LabelSelectorAsSelector: nil matches nothing, {} matches everything; invalid matches nothing."""
    if sel is None:
        return NOTHING
    reqs: list[tuple[str, str, frozenset[str]]] = []
    for k, v in sorted((sel.get("matchLabels") or {}).items()):
        reqs.append((k, "In", frozenset([v])))
    for expr in sel.get("matchExpressions") or ():
        op = expr.get("operator")
        values = frozenset(expr.get("values") or ())
        if op in ("In", "NotIn"):
            if not values:
                return NOTHING
        elif op in ("Exists", "DoesNotExist"):
            if values:
                return NOTHING
        else:
            return NOTHING
        reqs.append((expr.get("key", ""), op, values))
    return LabelSelector(tuple(reqs))


# ---------------------------------------------------------------------------------------------
# v1.NodeSelector (required node affinity) and nodeSelector


@dataclass(frozen=True, slots=True)
class NodeSelectorTerm:
    """One nodeSelectorTerm; matchExpressions and matchFields are ANDed. ``valid`` False never matches."""

    labels: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    fields: tuple[tuple[str, str, tuple[str, ...]], ...] = ()
    valid: bool = True

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        if not self.valid:
            return False
        for key, op, values in self.labels:
            v = node_labels.get(key)
            if op == "In":
                if v is None or v not in values:
                    return False
            elif op == "NotIn":
                if v is not None and v in values:
                    return False
            elif op == "Exists":
                if v is None:
                    return False
            elif op == "DoesNotExist":
                if v is not None:
                    return False
            elif op in ("Gt", "Lt"):
                if v is None:
                    return False
                iv = parse_go_int(v)
                if iv is None:
                    return False
                want = int(values[0])
                if (op == "Gt" and not iv > want) or (op == "Lt" and not iv < want):
                    return False
        for _key, op, values in self.fields:
            if op == "In" and node_name not in values:
                return False
            if op == "NotIn" and node_name in values:
                return False
        return True

    def mask(self, table: NodeTable) -> np.ndarray:
        n = table.n
        if not self.valid:
            return np.zeros(n, dtype=bool)
        m = np.ones(n, dtype=bool)
        for key, op, values in self.labels:
            col = table.label_column(key)
            codes = col.codes[:n]
            if op in ("In", "NotIn"):
                hit = _isin_codes(codes, [col.index[v] for v in values if v in col.index])
                m &= hit if op == "In" else ~hit
            elif op == "Exists":
                m &= codes >= 0
            elif op == "DoesNotExist":
                m &= codes < 0
            else:
                ints = col.int_values()
                vals = np.where(codes >= 0, ints[np.maximum(codes, 0)] if ints.size else np.nan, np.nan)
                want = float(int(values[0]))
                with np.errstate(invalid="ignore"):
                    m &= (vals > want) if op == "Gt" else (vals < want)
        for _key, op, values in self.fields:
            hit = np.zeros(n, dtype=bool)
            idx = [table.index[v] for v in values if v in table.index]
            if idx:
                hit[idx] = True
            m &= hit if op == "In" else ~hit
        return m


def _isin_codes(codes: np.ndarray, wanted: Sequence[int]) -> np.ndarray:
    if not wanted:
        return np.zeros(codes.shape[0], dtype=bool)
    if len(wanted) == 1:
        return codes == wanted[0]
    return np.isin(codes, np.asarray(wanted, dtype=codes.dtype))


def _compile_term(term: Mapping[str, Any]) -> NodeSelectorTerm:
    exprs = term.get("matchExpressions") or ()
    flds = term.get("matchFields") or ()
    if not exprs and not flds:
        return NodeSelectorTerm(valid=False)  # an empty term matches no objects
    labels: list[tuple[str, str, tuple[str, ...]]] = []
    for e in exprs:
        op, values = e.get("operator"), tuple(e.get("values") or ())
        if op in ("In", "NotIn"):
            ok = bool(values)
        elif op in ("Exists", "DoesNotExist"):
            ok = not values
        elif op in ("Gt", "Lt"):
            ok = len(values) == 1 and parse_go_int(values[0]) is not None
        else:
            ok = False
        if not ok:
            return NodeSelectorTerm(valid=False)
        labels.append((e.get("key", ""), op, values))
    fields: list[tuple[str, str, tuple[str, ...]]] = []
    for f in flds:
        op, values = f.get("operator"), tuple(f.get("values") or ())
        # Only metadata.name with In/NotIn and exactly one value is supported upstream.
        if f.get("key") != "metadata.name" or op not in ("In", "NotIn") or len(values) != 1:
            return NodeSelectorTerm(valid=False)
        fields.append(("metadata.name", op, values))
    return NodeSelectorTerm(tuple(labels), tuple(fields))


def compile_node_selector_terms(terms: Iterable[Mapping[str, Any]]) -> tuple[NodeSelectorTerm, ...]:
    return tuple(_compile_term(t) for t in terms)


@dataclass(frozen=True, slots=True)
class RequiredNodeAffinity:
    """nodeaffinity.GetRequiredNodeAffinity: spec.nodeSelector AND (OR of required terms)."""

    node_selector: tuple[tuple[str, str], ...] = ()
    terms: tuple[NodeSelectorTerm, ...] | None = None

    @property
    def trivial(self) -> bool:
        return not self.node_selector and self.terms is None

    def matches(self, node_labels: Mapping[str, str], node_name: str) -> bool:
        for k, v in self.node_selector:
            if node_labels.get(k) != v:
                return False
        if self.terms is None:
            return True
        return any(t.matches(node_labels, node_name) for t in self.terms)

    def mask(self, table: NodeTable) -> np.ndarray:
        n = table.n
        m = np.ones(n, dtype=bool)
        for k, v in self.node_selector:
            col = table.label_column(k)
            code = col.index.get(v)
            if code is None:
                return np.zeros(n, dtype=bool)
            m &= col.codes[:n] == code
        if self.terms is not None:
            any_term = np.zeros(n, dtype=bool)
            for t in self.terms:
                any_term |= t.mask(table)
            m &= any_term
        return m

    @staticmethod
    def from_spec(spec: Mapping[str, Any]) -> RequiredNodeAffinity:
        ns = tuple(sorted((spec.get("nodeSelector") or {}).items()))
        required = (((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"))
        terms = None
        if required is not None:
            terms = compile_node_selector_terms(required.get("nodeSelectorTerms") or ())
        return RequiredNodeAffinity(ns, terms)


# ---------------------------------------------------------------------------------------------
# taints and tolerations


@dataclass(frozen=True, slots=True)
class Taint:
    key: str
    value: str
    effect: str


@dataclass(frozen=True, slots=True)
class Toleration:
    key: str = ""
    operator: str = ""
    value: str = ""
    effect: str = ""


def compile_tolerations(tols: Iterable[Mapping[str, Any]] | None) -> tuple[Toleration, ...]:
    return tuple(
        Toleration(t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")
        for t in tols or ()
    )


def node_taints(node: Mapping[str, Any]) -> tuple[Taint, ...]:
    return tuple(
        Taint(t.get("key") or "", t.get("value") or "", t.get("effect") or "")
        for t in ((node.get("spec") or {}).get("taints") or ())
    )


def tolerates(tol: Toleration, taint: Taint) -> bool:
    """v1.Toleration.ToleratesTaint: empty effect/key match any; empty operator means Equal."""
    if tol.effect and tol.effect != taint.effect:
        return False
    if tol.key and tol.key != taint.key:
        return False
    if tol.operator in ("", "Equal"):
        return tol.value == taint.value
    return tol.operator == "Exists"


def find_untolerated_taint(
    taints: Sequence[Taint], tolerations: Sequence[Toleration], effects: frozenset[str]
) -> Taint | None:
    """First taint (in node order) with an effect in ``effects`` that no toleration tolerates."""
    for taint in taints:
        if taint.effect not in effects:
            continue
        if not any(tolerates(t, taint) for t in tolerations):
            return taint
    return None


DO_NOT_SCHEDULE = frozenset(("NoSchedule", "NoExecute"))
