"""Upstream's texts for bodies that cannot become the request's object.

- kubectl's own test-cmd (test/cmd/core.sh): `kubectl patch pod valid-pod -p
  '{"metadata":{"labels":"invalid"}}'` fails with `cannot restore map from string`: the
  strategic-merge result is converted into the typed object, and upstream's
  applyPatchToObject answers 422 ` "" is invalid: patch: Invalid value: "<%+v of the patch>": ...`.
- A create or update body whose kind cannot be read is upstream's transformDecodeError:
  `the object provided is unrecognized (must be of type KIND): <error> (<body summary>)`,
  the summary being the body's first 30 bytes, as text when it starts with `{`, else hex.
"""

from __future__ import annotations

import os

import pytest

from tests.cluster import Cluster, raw_request

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("decode-errors")

CM = "/api/v1/namespaces/default/configmaps"
SMP = {"Content-Type": "application/strategic-merge-patch+json"}
GO_STRUCT = ('struct { APIVersion string "json:\\"apiVersion,omitempty\\""; '
             'Kind string "json:\\"kind,omitempty\\"" }')


def _ensure_cm(c: Cluster, name: str) -> None:
    r = raw_request(c, "POST", CM, {"metadata": {"name": name, "labels": {"a": "b"}}, "data": {"k": "v"}})
    assert r.status in (201, 409), r.body


def test_kubectl_patch_string_for_labels_is_upstreams_422(cluster: Cluster) -> None:
    _ensure_cm(cluster, "dec-labels")
    r = cluster.kubectl("patch", "cm", "dec-labels", "-p", '{"metadata":{"labels":"invalid"}}', check=False)
    assert r.returncode == 1
    assert "cannot restore map from string" in r.stderr, r.stderr
    raw = raw_request(cluster, "PATCH", f"{CM}/dec-labels", b'{"metadata":{"labels":"invalid"}}', headers=SMP)
    assert raw.status == 422
    detail = 'Invalid value: "map[metadata:map[labels:invalid]]": cannot restore map from string'
    assert raw.json() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f' "" is invalid: patch: {detail}', "reason": "Invalid",
        "details": {"causes": [{"reason": "FieldValueInvalid", "message": detail, "field": "patch"}]},
        "code": 422,
    }
    # nothing was written
    assert raw_request(cluster, "GET", f"{CM}/dec-labels").json()["metadata"]["labels"] == {"a": "b"}


def test_patch_number_for_a_map_and_string_for_a_list(cluster: Cluster) -> None:
    _ensure_cm(cluster, "dec-ann")
    raw = raw_request(cluster, "PATCH", f"{CM}/dec-ann",
                      b'{"data":{"z":"1"},"metadata":{"annotations":5,"labels":{"x":"y"}}}', headers=SMP)
    assert raw.status == 422
    assert raw.json()["message"] == (' "" is invalid: patch: Invalid value: '
                                     '"map[data:map[z:1] metadata:map[annotations:5 labels:map[x:y]]]": '
                                     "cannot restore map from int64")
    raw = raw_request(cluster, "PATCH", f"{CM}/dec-ann", b'{"metadata":{"finalizers":"x"}}', headers=SMP)
    assert raw.status == 422
    assert raw.json()["message"].endswith('"map[metadata:map[finalizers:x]]": cannot restore slice from string')


def test_unreadable_bodies_sent_to_a_collection(cluster: Cluster) -> None:
    r = raw_request(cluster, "POST", CM, b"[null,null]")
    assert r.status == 400
    assert r.json()["message"] == (
        "the object provided is unrecognized (must be of type ConfigMap): couldn't get version/kind; "
        f"json parse error: json: cannot unmarshal array into Go value of type {GO_STRUCT} (5b6e756c6c2c6e756c6c5d)")
    assert r.json()["reason"] == "BadRequest" and "details" not in r.json()
    r = raw_request(cluster, "POST", "/api/v1/namespaces", b"{bad json that goes on for more than thirty bytes")
    assert r.status == 400
    msg = r.json()["message"]
    assert msg.startswith("the object provided is unrecognized (must be of type Namespace): "
                          "couldn't get version/kind; json parse error: "), msg
    assert msg.endswith(" ({bad json that goes on for mor ...)"), msg  # the first 30 bytes
    body = b'"just a string"'
    r = raw_request(cluster, "PUT", f"{CM}/dec-put", body)
    assert r.status == 400
    msg = r.json()["message"]
    assert msg.startswith("the object provided is unrecognized (must be of type ConfigMap): "), msg
    assert msg.endswith(f" ({body.hex()})"), msg


def test_kubectl_create_raw_with_an_array(cluster: Cluster, tmp_path: object) -> None:
    path = os.path.join(str(tmp_path), "body.json")
    with open(path, "w") as f:
        f.write("[1]")
    r = cluster.kubectl("create", "--raw", CM, "-f", path, check=False)
    assert r.returncode != 0
    assert "the object provided is unrecognized (must be of type ConfigMap)" in r.stderr + r.stdout
