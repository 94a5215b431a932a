"""RFC 7386 JSON merge patch as kube-apiserver applies it, and the merge patches kubectl
creates."""

from __future__ import annotations

import copy

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.patch import apply_merge_patch, create_merge_patch, create_three_way_json_merge_patch
from pyk8s.api.patch.merge_patch import PreconditionFailedError

# RFC 7386 appendix A (target, patch, result), on object targets as the apiserver sees them.
RFC_CASES = [
    ({"a": "b"}, {"a": "c"}, {"a": "c"}),
    ({"a": "b"}, {"b": "c"}, {"a": "b", "b": "c"}),
    ({"a": "b"}, {"a": None}, {}),
    ({"a": "b", "b": "c"}, {"a": None}, {"b": "c"}),
    ({"a": ["b"]}, {"a": "c"}, {"a": "c"}),
    ({"a": "c"}, {"a": ["b"]}, {"a": ["b"]}),
    ({"a": {"b": "c"}}, {"a": {"b": "d", "c": None}}, {"a": {"b": "d"}}),
    ({"a": [{"b": "c"}]}, {"a": [1]}, {"a": [1]}),
    ({"e": None}, {"a": 1}, {"e": None, "a": 1}),
    ({}, {"a": {"bb": {"ccc": None}}}, {"a": {"bb": {}}}),
]


@pytest.mark.parametrize("target,patch,result", RFC_CASES)
def test_rfc7386_cases(target, patch, result):
    assert apply_merge_patch(target, patch) == result


def test_array_patch_replaces_document_and_keeps_array_nulls():
    assert apply_merge_patch({"a": "b"}, ["c"]) == ["c"]
    # evanphx prunes nulls inside objects nested in arrays, but keeps null elements.
    assert apply_merge_patch({"a": 1}, {"list": [None, {"x": None, "y": 1}]}) == {
        "a": 1, "list": [None, {"y": 1}]}


def test_null_current_value_counts_as_absent():
    assert apply_merge_patch({"a": None}, {"a": {"b": None, "c": 1}}) == {"a": {"c": 1}}


@pytest.mark.parametrize("patch", [None, "string", 3, True, "null", b"not json"])
def test_invalid_patches(patch):
    with pytest.raises(StatusError) as ei:
        apply_merge_patch({"a": 1}, patch)
    assert ei.value.code == 400
    assert ei.value.reason == "BadRequest"
    assert ei.value.message == "Invalid JSON Patch"


def test_kubernetes_usage():
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim",
           "metadata": {"name": "data", "finalizers": ["kubernetes.io/pvc-protection"], "labels": {"a": "1"}},
           "spec": {"resources": {"requests": {"storage": "1Gi"}}}}
    out = apply_merge_patch(pvc, '{"metadata":{"finalizers":null,"labels":{"b":"2"}}}')
    assert out["metadata"] == {"name": "data", "labels": {"a": "1", "b": "2"}}
    out = apply_merge_patch(pvc, {"metadata": {"finalizers": []}})
    assert out["metadata"]["finalizers"] == []


def test_inputs_not_mutated():
    target = {"a": {"b": [1, {"c": 2}]}}
    patch = {"a": {"d": {"e": None, "f": 1}}}
    t0, p0 = copy.deepcopy(target), copy.deepcopy(patch)
    out = apply_merge_patch(target, patch)
    out["a"]["b"][1]["c"] = 3
    assert target == t0 and patch == p0


def test_create_merge_patch_round_trip():
    original = {"a": 1, "b": {"c": 1, "d": [1, 2]}, "gone": True, "t": "x"}
    modified = {"a": 2, "b": {"c": 1, "d": [1, 2, 3]}, "new": {"x": 1}, "t": 5}
    patch = create_merge_patch(original, modified)
    assert patch == {"a": 2, "b": {"d": [1, 2, 3]}, "new": {"x": 1}, "gone": None, "t": 5}
    assert apply_merge_patch(original, patch) == modified
    assert create_merge_patch(modified, modified) == {}
    # Go decodes all numbers as float64: 1 and 1.0 are the same value.
    assert create_merge_patch({"n": 1}, {"n": 1.0}) == {}


def test_three_way_patch_for_custom_resources():
    last_applied = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                    "spec": {"size": 3, "color": "red", "tags": ["a"]}}
    current = copy.deepcopy(last_applied)
    current["metadata"]["uid"] = "u1"
    current["spec"]["owner"] = "controller"        # set by someone else: kept
    current["status"] = {"ready": True}
    modified = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
                "spec": {"size": 4, "tags": ["a", "b"]}}   # color removed from the file
    patch = create_three_way_json_merge_patch(last_applied, modified, current)
    assert patch == {"spec": {"size": 4, "tags": ["a", "b"], "color": None}}
    result = apply_merge_patch(current, patch)
    assert result["spec"] == {"size": 4, "tags": ["a", "b"], "owner": "controller"}
    assert result["status"] == {"ready": True}


def test_three_way_patch_preconditions():
    with pytest.raises(PreconditionFailedError):
        create_three_way_json_merge_patch({"kind": "A"}, {"kind": "B"}, {"kind": "A"})
    with pytest.raises(PreconditionFailedError):
        create_three_way_json_merge_patch({}, {"metadata": {"name": "n2"}}, {"metadata": {"name": "n1"}})
