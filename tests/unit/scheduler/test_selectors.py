"""Selectors: label selectors, node selector terms (one node vs vectorised over the table), tolerations."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.cache import Cache
from pyk8s.scheduler.selectors import (
    EVERYTHING,
    NOTHING,
    RequiredNodeAffinity,
    Taint,
    Toleration,
    compile_label_selector,
    compile_node_selector_terms,
    parse_go_int,
    selector_from_set,
    tolerates,
)

from ._fixtures import node

LABELS = [{"a": "1", "b": "x"}, {"a": "2"}, {"b": "y"}, {}, {"a": "10", "b": "x"}]


@pytest.mark.parametrize("sel,want", [
    (None, [False] * 5),
    ({}, [True] * 5),
    ({"matchLabels": {"b": "x"}}, [True, False, False, False, True]),
    ({"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]}, [False, True, True, True, True]),
    ({"matchExpressions": [{"key": "a", "operator": "Exists"}]}, [True, True, False, False, True]),
    ({"matchExpressions": [{"key": "a", "operator": "DoesNotExist"}]}, [False, False, True, True, False]),
    ({"matchExpressions": [{"key": "a", "operator": "In", "values": []}]}, [False] * 5),  # invalid
    ({"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]}, [False] * 5),  # not for pods
])
def test_label_selector(sel, want):
    s = compile_label_selector(sel)
    assert [s.matches(lb) for lb in LABELS] == want


def test_selector_helpers():
    assert EVERYTHING.empty and not NOTHING.empty and not NOTHING.matches({})
    s = selector_from_set({"app": "web"})
    assert s.matches({"app": "web", "x": "y"}) and not s.matches({})
    assert s.merged(NOTHING) is NOTHING
    assert s.index_candidates() == ("app", frozenset({"web"}))
    assert parse_go_int("+12") == 12 and parse_go_int("1.5") is None and parse_go_int(str(2**63)) is None


TERMS = [
    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["1", "2"]}]},
    {"matchExpressions": [{"key": "a", "operator": "NotIn", "values": ["1"]}]},
    {"matchExpressions": [{"key": "b", "operator": "Exists"}]},
    {"matchExpressions": [{"key": "b", "operator": "DoesNotExist"}]},
    {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["1"]}]},
    {"matchExpressions": [{"key": "a", "operator": "Lt", "values": ["10"]}]},
    {"matchExpressions": [{"key": "a", "operator": "Gt", "values": ["x"]}]},
    {"matchExpressions": [{"key": "a", "operator": "Bogus", "values": ["1"]}]},
    {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["n1"]}]},
    {"matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n1"]}]},
    {"matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["n1"]}]},
    {"matchExpressions": [{"key": "a", "operator": "In", "values": ["2", "10"]}],
     "matchFields": [{"key": "metadata.name", "operator": "NotIn", "values": ["n4"]}]},
    {},
]


@pytest.mark.parametrize("term", TERMS)
def test_vectorised_node_selector_agrees_with_one_node_matching(term):
    c = Cache()
    for i, lb in enumerate(LABELS):
        n = node(f"n{i}")
        n["metadata"]["labels"] = dict(lb)
        c.add_node(n)
    t = c.table
    (compiled,) = compile_node_selector_terms([term])
    mask = compiled.mask(t)
    for i in range(t.n):
        assert bool(mask[i]) == compiled.matches(t.labels[i], t.names[i]), (term, t.names[i])
    aff = RequiredNodeAffinity((("b", "x"),), (compiled,))
    amask = aff.mask(t)
    for i in range(t.n):
        assert bool(amask[i]) == aff.matches(t.labels[i], t.names[i])


def test_required_node_affinity_from_spec():
    spec = {"nodeSelector": {"b": "x"}, "affinity": {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}}
    a = RequiredNodeAffinity.from_spec(spec)
    assert not a.matches({"b": "x"}, "n")  # an empty term list matches nothing
    assert RequiredNodeAffinity.from_spec({}).trivial


@pytest.mark.parametrize("tol,taint,want", [
    (Toleration("k", "Equal", "v", "NoSchedule"), Taint("k", "v", "NoSchedule"), True),
    (Toleration("k", "", "v", ""), Taint("k", "v", "NoExecute"), True),
    (Toleration("k", "Exists", "", ""), Taint("k", "anything", "NoSchedule"), True),
    (Toleration("", "Exists", "", ""), Taint("any", "v", "PreferNoSchedule"), True),
    (Toleration("k", "Equal", "w", ""), Taint("k", "v", "NoSchedule"), False),
    (Toleration("k", "Exists", "", "NoSchedule"), Taint("k", "v", "NoExecute"), False),
    (Toleration("j", "Exists", "", ""), Taint("k", "v", "NoExecute"), False),
    (Toleration("k", "Lt", "1", ""), Taint("k", "0", "NoExecute"), False),
])
def test_tolerates(tol, taint, want):
    assert tolerates(tol, taint) is want
