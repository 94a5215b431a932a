"""Shortcuts on the managedFields path of updates: set algebra that returns an operand when the
result holds the same paths, FieldsV1 reused when it is exactly what to_fields_v1 writes, and
the C (orjson) check of strict deep equality. Each must agree with the plain definitions."""

from __future__ import annotations

import json
import math
import random
from typing import Any

import pytest

from pyk8s.api.patch import _typed
from pyk8s.api.patch.fieldpath import FieldSet

from .test_managedfields_fastpath import _random_set


def _paths(s: FieldSet) -> set[tuple]:
    return set(s.iter_paths())


def _dump(v: object) -> str:
    return json.dumps(v, sort_keys=False)


@pytest.mark.parametrize("seed", range(150))
def test_algebra_matches_path_sets(seed: int) -> None:
    r = random.Random(seed)
    a = _random_set(r)
    b = _random_set(r) if r.random() < 0.6 else a.intersection(_random_set(r))
    if r.random() < 0.3:
        b = a.union(b)  # shares sub-sets with a
    pa, pb = _paths(a), _paths(b)
    u, d = a.union(b), a.difference(b)
    assert _paths(u) == pa | pb
    assert _paths(d) == pa - pb
    assert u == FieldSet.from_paths(pa | pb) and d == FieldSet.from_paths(pa - pb)
    assert (u is a) <= (pb <= pa) and (u is b) <= (pa <= pb)
    rd = a.recursive_difference(b)
    assert _paths(rd) == {p for p in pa if not any(p[:i] in pb for i in range(1, len(p) + 1))}
    assert (a == b) == (pa == pb)
    # an operand comes back only when the result has its paths, and then its FieldsV1 too
    for res, operand in ((u, a), (u, b), (d, a), (rd, a)):
        if res is operand:
            assert _paths(res) == _paths(operand)


@pytest.mark.parametrize("seed", range(150))
def test_canonical_fields_v1_is_what_to_fields_v1_writes(seed: int) -> None:
    r = random.Random(seed)
    wire = _random_set(r).to_fields_v1()
    s, canonical = FieldSet.decode_fields_v1(wire)
    assert canonical
    assert _dump(s.to_fields_v1()) == _dump(wire)
    variant = json.loads(json.dumps(wire))
    _disturb(r, variant, True)
    s2, canonical2 = FieldSet.decode_fields_v1(variant)
    assert s2 == FieldSet.from_fields_v1(variant)
    assert canonical2 == (_dump(s2.to_fields_v1()) == _dump(variant))


def _disturb(r: random.Random, node: dict[str, Any], root: bool) -> None:
    """A random change that keeps the field set but may make the FieldsV1 non-canonical."""
    roll = r.random()
    keys = list(node)
    if roll < 0.15 and len(keys) > 1:
        items = list(node.items())
        r.shuffle(items)
        node.clear()
        node.update(items)
    elif roll < 0.25:
        node["."] = {}  # "." at the end, at the root, or alone
    elif roll < 0.3 and "." in node:
        node["."] = {"x": {}}
    elif roll < 0.4:
        for k in keys:
            if k.startswith("k:"):
                fields = json.loads(k[2:])
                node[k.replace(k[2:], json.dumps(fields, sort_keys=False, separators=(", ", ": ")))] = node.pop(k)
                break
    for k, v in list(node.items()):
        if k != "." and v and r.random() < 0.5:
            _disturb(r, v, False)


@pytest.mark.parametrize("wire", [
    {"f:a": {}, "f:b": {}},
    {"f:b": {}, "f:a": {}},
    {".": {}, "f:a": {}},
    {"f:a": {".": {}}},
    {"f:a": {"f:x": {}, ".": {}}},
    {"f:a": {".": {}, "f:x": {}}},
    {"f:a": {".": {"f:y": {}}, "f:x": {}}},
    {'k:{"b":1,"a":2}': {}},
    {'k:{"a":2,"b":1}': {}},
    {"v:1": {}, 'v:"a"': {}, "v:true": {}},
    {"v:true": {}, "v:1": {}},
    {"i:0": {}, "i:1": {}},
])
def test_canonical_flag_examples(wire: dict[str, Any]) -> None:
    s, canonical = FieldSet.decode_fields_v1(wire)
    assert canonical == (_dump(s.to_fields_v1()) == _dump(wire))
    assert not FieldSet.decode_fields_v1(None)[1]


_LEAVES: list[Any] = [0, 1, 1.0, -0.0, 0.0, True, False, None, "", "null", "1", float("nan"), float("inf"),
                      2**70, 1e300, "ü"]


def _value(r: random.Random, depth: int = 0) -> Any:
    roll = r.random()
    if depth < 3 and roll < 0.3:
        return {r.choice("abc"): _value(r, depth + 1) for _ in range(r.randint(0, 3))}
    if depth < 3 and roll < 0.5:
        return [_value(r, depth + 1) for _ in range(r.randint(0, 3))]
    return r.choice(_LEAVES)


def _twin(r: random.Random, v: Any) -> Any:
    """A copy of v (same NaN objects), sometimes with keys reordered or numbers retyped."""
    if isinstance(v, dict):
        items = [(k, _twin(r, x)) for k, x in v.items()]
        if r.random() < 0.2:
            items.reverse()
        return dict(items)
    if isinstance(v, list):
        return [_twin(r, x) for x in v]
    if r.random() < 0.1 and type(v) in (int, float, bool):
        return r.choice([1, 1.0, True, 0, 0.0, False])
    return v


@pytest.mark.parametrize("seed", range(300))
def test_same_matches_the_walk(seed: int) -> None:
    r = random.Random(seed)
    a = _value(r)
    b = _twin(r, a)
    if a == b:  # as callers check first
        assert _typed._same(a, b) == _typed._same_walk(a, b)


def test_same_keeps_nan_and_number_types_apart() -> None:
    nan = float("nan")
    assert not _typed._same([nan], [nan]) and not _typed._same({"a": [nan]}, {"a": [nan]})
    assert not _typed._same([1], [1.0]) and not _typed._same({"a": True}, {"a": 1})
    assert _typed._same({"a": [1, {"b": None}]}, {"a": [1, {"b": None}]})
    assert _typed._same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert _typed._same([2**70], [2**70]) and not _typed._same([2**70], [float(2**70)])
    assert math.isnan(nan)


def test_memoised_sets_are_not_handed_out() -> None:
    """decode_managed_fields gives copies: a caller changing its set changes no later write."""
    from pyk8s.api.patch.apply import decode_managed_fields, managed_fields_entries

    lease = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
             "metadata": {"name": "l", "namespace": "n", "uid": "u"},
             "spec": {"holderIdentity": "a", "renewTime": "2026-01-01T00:00:00.000000Z"}}
    lease["metadata"]["managedFields"] = managed_fields_entries(None, lease, "kubelet", now="2026-01-01T00:00:00Z")
    renewed = json.loads(json.dumps(lease))
    renewed["spec"].update(holderIdentity="b", renewTime="2026-01-01T00:00:10.000000Z", leaseDurationSeconds=10)
    expected = json.dumps(managed_fields_entries(lease, renewed, "other", now="2026-01-01T00:00:10Z"))
    for info in decode_managed_fields(lease["metadata"]["managedFields"]).values():
        info["fields"].members.add(("f", "bogus"))
        info["fields"].children.clear()
    assert json.dumps(managed_fields_entries(lease, renewed, "other", now="2026-01-01T00:00:10Z")) == expected
