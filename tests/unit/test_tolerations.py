"""Toleration merging and whitelists as upstream's pkg/util/tolerations decides them."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.tolerations import is_superset, merge_tolerations, verify_against_whitelist

ANY = {"operator": "Exists"}
KEY_ANY = {"key": "k", "operator": "Exists"}
KEY_NS = {"key": "k", "operator": "Exists", "effect": "NoSchedule"}
EQ_A = {"key": "k", "operator": "Equal", "value": "a", "effect": "NoSchedule"}
EQ_A_IMPLICIT = {"key": "k", "value": "a", "effect": "NoSchedule"}  # an unset operator is Equal
EQ_B = {"key": "k", "operator": "Equal", "value": "b", "effect": "NoSchedule"}
NE_300 = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
NE_600 = {"key": "k", "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 600}
NE_FOREVER = {"key": "k", "operator": "Exists", "effect": "NoExecute"}


@pytest.mark.parametrize("ss,t,expected", [
    (ANY, EQ_A, True), (KEY_ANY, EQ_A, True), (KEY_NS, EQ_A, True), (EQ_A, KEY_NS, False),
    (EQ_A, EQ_B, False), (EQ_A, EQ_A_IMPLICIT, True), (EQ_A_IMPLICIT, EQ_A, True),
    ({"key": "other", "operator": "Exists"}, EQ_A, False), ({"key": "", "operator": "Equal"}, EQ_A, False),
    (NE_600, NE_300, True), (NE_300, NE_600, False), (NE_300, NE_FOREVER, False), (NE_FOREVER, NE_600, True),
    (KEY_NS, NE_300, False),
])
def test_is_superset(ss: dict, t: dict, expected: bool) -> None:
    assert is_superset(ss, t) is expected


def test_merge_drops_covered_keeps_first_of_equals() -> None:
    assert merge_tolerations([EQ_A], [KEY_NS]) == [KEY_NS]
    assert merge_tolerations([KEY_NS], [EQ_A, EQ_B]) == [KEY_NS]
    assert merge_tolerations([EQ_A], [EQ_A_IMPLICIT]) == [EQ_A]
    assert merge_tolerations([NE_300], [NE_600]) == [NE_600]
    assert merge_tolerations([EQ_A], [EQ_B]) == [EQ_A, EQ_B]
    assert merge_tolerations([], []) == []


def test_whitelist() -> None:
    assert verify_against_whitelist([EQ_A], [])
    assert verify_against_whitelist([], [EQ_B])
    assert verify_against_whitelist([EQ_A, NE_300], [KEY_NS, NE_600])
    assert not verify_against_whitelist([EQ_A, NE_600], [KEY_NS, NE_300])
    assert not verify_against_whitelist([ANY], [KEY_ANY])  # tolerate-everything is never covered by a key
