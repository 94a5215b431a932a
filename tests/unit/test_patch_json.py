"""RFC 6902 JSON patch as kube-apiserver applies it (evanphx/json-patch v4 semantics,
apiserver's error mapping)."""

from __future__ import annotations

import copy

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.patch import apply_json_patch, escape_pointer_token

GENERIC_422 = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "the server rejected our request due to an error in our request",
    "reason": "Invalid",
    "details": {},
    "code": 422,
}


def cm() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": "c", "namespace": "default", "resourceVersion": "7",
                     "annotations": {"a/b": "x", "t~n": "y"}},
        "data": {"k": "v", "list": "x"},
        "items": [1, 2, 3],
    }


def test_add_replace_remove_on_objects():
    out = apply_json_patch(cm(), [
        {"op": "add", "path": "/data/new", "value": "n"},
        {"op": "replace", "path": "/data/k", "value": "w"},
        {"op": "remove", "path": "/data/list"},
    ])
    assert out["data"] == {"k": "w", "new": "n"}


def test_array_ops_and_append_marker():
    out = apply_json_patch(cm(), [
        {"op": "add", "path": "/items/0", "value": 0},
        {"op": "add", "path": "/items/-", "value": 9},
        {"op": "remove", "path": "/items/1"},
        {"op": "replace", "path": "/items/1", "value": 20},
    ])
    assert out["items"] == [0, 20, 3, 9]


def test_negative_indices_count_from_the_end():
    out = apply_json_patch(cm(), [{"op": "remove", "path": "/items/-1"}])
    assert out["items"] == [1, 2]
    out = apply_json_patch(cm(), [{"op": "add", "path": "/items/-1", "value": 4}])
    assert out["items"] == [1, 2, 3, 4]


def test_pointer_escaping():
    assert escape_pointer_token("kubectl.kubernetes.io/last-applied") == "kubectl.kubernetes.io~1last-applied"
    assert escape_pointer_token("a~b/c") == "a~0b~1c"
    out = apply_json_patch(cm(), [
        {"op": "replace", "path": "/metadata/annotations/a~1b", "value": "X"},
        {"op": "remove", "path": "/metadata/annotations/t~0n"},
    ])
    assert out["metadata"]["annotations"] == {"a/b": "X"}


def test_move_and_copy():
    out = apply_json_patch(cm(), [
        {"op": "move", "from": "/data/k", "path": "/data/moved"},
        {"op": "copy", "from": "/items", "path": "/copied"},
    ])
    assert out["data"] == {"list": "x", "moved": "v"}
    assert out["copied"] == [1, 2, 3]
    out["copied"].append(4)
    assert out["items"] == [1, 2, 3]


def test_test_op_guards_resource_version():
    out = apply_json_patch(cm(), [
        {"op": "test", "path": "/metadata/resourceVersion", "value": "7"},
        {"op": "replace", "path": "/data/k", "value": "w"},
    ])
    assert out["data"]["k"] == "w"
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), [{"op": "test", "path": "/metadata/resourceVersion", "value": "8"}])
    assert ei.value.status() == GENERIC_422


def test_test_op_type_sensitive_and_null_matches_absent():
    with pytest.raises(StatusError):
        apply_json_patch(cm(), [{"op": "test", "path": "/items/0", "value": "1"}])
    apply_json_patch(cm(), [{"op": "test", "path": "/data/absent", "value": None}])
    with pytest.raises(StatusError):
        apply_json_patch(cm(), [{"op": "test", "path": "/data/absent", "value": "x"}])


@pytest.mark.parametrize("ops", [
    [{"op": "replace", "path": "/spec/template/spec/containers/0/readinessProbe/timeoutSeconds", "value": 5}],
    [{"op": "remove", "path": "/data/absent"}],
    [{"op": "remove", "path": "/items/3"}],
    [{"op": "replace", "path": "/items/5", "value": 1}],
    [{"op": "add", "path": "/items/9", "value": 1}],
    [{"op": "add", "path": "/missing/child", "value": 1}],
    [{"op": "move", "from": "/data/absent", "path": "/data/x"}],
    [{"op": "frobnicate", "path": "/data/k"}],
    [{"path": "/data/k"}],
    [{"op": "add", "value": 1}],
])
def test_failures_are_the_generic_422(ops):
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), ops)
    assert ei.value.code == 422
    assert ei.value.reason == "Invalid"
    assert ei.value.status() == GENERIC_422


def test_replace_of_missing_member_adds_it_like_upstream():
    # evanphx/json-patch v4 only checks array indices for replace.
    out = apply_json_patch(cm(), [{"op": "replace", "path": "/data/absent", "value": "z"}])
    assert out["data"]["absent"] == "z"


def test_replace_whole_document():
    out = apply_json_patch(cm(), [{"op": "replace", "path": "", "value": {"kind": "ConfigMap"}}])
    assert out == {"kind": "ConfigMap"}


def test_bad_patch_shapes_are_bad_request():
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), {"op": "add"})
    assert ei.value.code == 400
    assert ei.value.reason == "BadRequest"
    assert ei.value.message == "json: cannot unmarshal object into Go value of type jsonpatch.Patch"
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), ["add"])
    assert ei.value.message == "json: cannot unmarshal string into Go value of type jsonpatch.Operation"
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), b"[{")
    assert ei.value.code == 400


def test_text_input_and_empty_patch():
    out = apply_json_patch(cm(), '[{"op":"add","path":"/data/t","value":"1"}]')
    assert out["data"]["t"] == "1"
    assert apply_json_patch(cm(), []) == cm()


def test_too_many_operations():
    with pytest.raises(StatusError) as ei:
        apply_json_patch(cm(), [{"op": "test", "path": "/kind", "value": "ConfigMap"}] * 10001)
    assert ei.value.code == 413
    assert ei.value.reason == "RequestEntityTooLarge"
    assert ei.value.message == ("Request entity too large: The allowed maximum operations in a JSON patch "
                                "is 10000, got 10001")


def test_inputs_not_mutated_and_failure_is_atomic():
    obj = cm()
    ops = [{"op": "add", "path": "/data/x", "value": {"deep": [1]}}]
    before_obj, before_ops = copy.deepcopy(obj), copy.deepcopy(ops)
    out = apply_json_patch(obj, ops)
    out["data"]["x"]["deep"].append(2)
    assert obj == before_obj and ops == before_ops
    with pytest.raises(StatusError):
        apply_json_patch(obj, [{"op": "add", "path": "/data/y", "value": 1}, {"op": "remove", "path": "/nope"}])
    assert obj == before_obj


def test_rfc6902_appendix_examples():
    assert apply_json_patch({"foo": "bar"}, [{"op": "add", "path": "/baz", "value": "qux"}]) == {
        "baz": "qux", "foo": "bar"}
    assert apply_json_patch({"foo": ["bar", "baz"]}, [{"op": "add", "path": "/foo/1", "value": "qux"}]) == {
        "foo": ["bar", "qux", "baz"]}
    assert apply_json_patch({"foo": {"bar": "baz", "waldo": "fred"}, "qux": {"corge": "grault"}},
                            [{"op": "move", "from": "/foo/waldo", "path": "/qux/thud"}]) == {
        "foo": {"bar": "baz"}, "qux": {"corge": "grault", "thud": "fred"}}
    assert apply_json_patch({"foo": ["all", "grass", "cows", "eat"]},
                            [{"op": "move", "from": "/foo/1", "path": "/foo/3"}]) == {
        "foo": ["all", "cows", "eat", "grass"]}
    assert apply_json_patch({"/": 9, "~1": 10}, [{"op": "test", "path": "/~01", "value": 10}]) == {"/": 9, "~1": 10}
    apply_json_patch({"baz": "qux", "foo": ["a", 2, "c"]}, [
        {"op": "test", "path": "/baz", "value": "qux"},
        {"op": "test", "path": "/foo/1", "value": 2}])
