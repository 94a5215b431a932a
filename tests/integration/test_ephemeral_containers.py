"""The pods/ephemeralcontainers subresource through the official Python client: only additions of valid
ephemeral containers, nothing else of the pod changes through it, and a plain pod update cannot add them."""

from __future__ import annotations

import json
import time

import pytest

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("ephemeral-containers")

pytest.importorskip("kubernetes")

NS = "eph"


@pytest.fixture(scope="module")
def v1(cluster):
    from kubernetes import client

    api = client.CoreV1Api(cluster.api_client())
    api.create_namespace({"metadata": {"name": NS}})
    for _ in range(200):  # the serviceaccount controller creates the default ServiceAccount
        if any(sa.metadata.name == "default" for sa in api.list_namespaced_service_account(NS).items):
            break
        time.sleep(0.05)
    api.create_namespaced_pod(NS, {"metadata": {"name": "p", "labels": {"app": "p"}},
                                   "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                            "initContainers": [{"name": "init", "image": "busybox"}]}})
    return api


def _patch(v1, body, patch_type="application/strategic-merge-patch+json"):
    from kubernetes.client import ApiException

    try:
        pod = v1.patch_namespaced_pod_ephemeralcontainers("p", NS, body, _content_type=patch_type)
        return 200, v1.api_client.sanitize_for_serialization(pod)
    except ApiException as e:
        return e.status, json.loads(e.body)


def test_add_is_defaulted_and_nothing_else_changes(v1):
    from kubernetes.client import ApiException

    with pytest.raises(ApiException) as e:  # a plain pod update cannot add them
        v1.patch_namespaced_pod("p", NS, {"spec": {"ephemeralContainers": [{"name": "sneak", "image": "busybox"}]}})
    assert e.value.status == 422
    assert "pod updates may not change fields" in json.loads(e.value.body)["message"]
    got = v1.patch_namespaced_pod_ephemeralcontainers("p", NS, {
        "metadata": {"labels": {"app": "changed", "x": "y"}},
        "spec": {"containers": [{"name": "c", "image": "evil"}], "nodeName": "elsewhere",
                 "ephemeralContainers": [{"name": "dbg", "image": "busybox:1.37", "targetContainerName": "c",
                                          "stdin": True, "tty": True}]}})
    ec = got.spec.ephemeral_containers
    assert [e.name for e in ec] == ["dbg"]
    assert (ec[0].image_pull_policy, ec[0].termination_message_path, ec[0].termination_message_policy) == \
        ("IfNotPresent", "/dev/termination-log", "File")
    assert got.metadata.labels == {"app": "p"} and got.spec.containers[0].image == "busybox"
    assert got.spec.node_name is None
    read = v1.read_namespaced_pod_ephemeralcontainers("p", NS)
    assert read.kind == "Pod" and [e.name for e in read.spec.ephemeral_containers] == ["dbg"]
    # a merge patch that keeps the list adds a second one
    status, body = _patch(v1, {"spec": {"ephemeralContainers": [
        {**v1.api_client.sanitize_for_serialization(ec[0])},
        {"name": "dbg2", "image": "busybox:1.37"}]}}, "application/merge-patch+json")
    assert status == 200, body
    assert [e["name"] for e in body["spec"]["ephemeralContainers"]] == ["dbg", "dbg2"]


def test_existing_may_not_be_changed_or_removed(v1):
    status, body = _patch(v1, {"spec": {"ephemeralContainers": [{"name": "dbg3", "image": "busybox"}]}},
                          "application/merge-patch+json")
    assert status == 422, body
    msgs = [c["message"] for c in body["details"]["causes"]]
    assert 'Forbidden: existing ephemeral containers "dbg" may not be removed\n' in msgs
    assert 'Forbidden: existing ephemeral containers "dbg2" may not be removed\n' in msgs
    status, body = _patch(v1, [{"op": "replace", "path": "/spec/ephemeralContainers/0/image", "value": "alpine"}],
                          "application/json-patch+json")
    assert status == 422, body
    assert body["details"]["causes"][0]["field"] == "spec.ephemeralContainers"
    assert body["details"]["causes"][0]["message"].startswith(
        'Forbidden: existing ephemeral containers "dbg" may not be changed\n')


@pytest.mark.parametrize("bad, field, reason", [
    ({"name": "c", "image": "busybox"}, "spec.ephemeralContainers[0].name", "FieldValueDuplicate"),
    ({"name": "init", "image": "busybox"}, "spec.ephemeralContainers[0].name", "FieldValueDuplicate"),
    ({"name": "t", "image": "busybox", "targetContainerName": "nope"},
     "spec.ephemeralContainers[0].targetContainerName", "FieldValueNotFound"),
    ({"name": "t", "image": "busybox", "ports": [{"containerPort": 80}]},
     "spec.ephemeralContainers[0].ports", "FieldValueForbidden"),
    ({"name": "t", "image": "busybox", "resources": {"limits": {"cpu": "1"}}},
     "spec.ephemeralContainers[0].resources", "FieldValueForbidden"),
    ({"name": "t", "image": "busybox", "readinessProbe": {"exec": {"command": ["true"]}}},
     "spec.ephemeralContainers[0].readinessProbe", "FieldValueForbidden"),
    ({"name": "t", "image": "busybox", "lifecycle": {"preStop": {"exec": {"command": ["true"]}}}},
     "spec.ephemeralContainers[0].lifecycle", "FieldValueForbidden"),
])
def test_invalid_additions_are_refused(v1, bad, field, reason):
    status, body = _patch(v1, {"spec": {"ephemeralContainers": [bad]}})  # (strategic merge: a new item goes first, as upstream)
    assert status == 422, body
    assert body["reason"] == "Invalid" and body["code"] == 422
    assert any(c["field"] == field and c["reason"] == reason for c in body["details"]["causes"]), body
    assert [e.name for e in v1.read_namespaced_pod("p", NS).spec.ephemeral_containers] == ["dbg", "dbg2"]


def test_put_adds_and_a_stale_resource_version_conflicts(v1):
    from kubernetes.client import ApiException

    for _ in range(5):  # read, change, replace; again if the scheduler wrote the pod's status in between
        pod = v1.read_namespaced_pod_ephemeralcontainers("p", NS)
        body = v1.api_client.sanitize_for_serialization(pod)
        body["spec"]["ephemeralContainers"].append({"name": "put1", "image": "busybox:1.37"})
        body["spec"]["containers"][0]["image"] = "ignored"
        try:
            got = v1.replace_namespaced_pod_ephemeralcontainers("p", NS, body)
            break
        except ApiException as conflict:
            if conflict.status != 409:
                raise
    assert [e.name for e in got.spec.ephemeral_containers] == ["dbg", "dbg2", "put1"]
    assert got.spec.containers[0].image == "busybox"
    body["spec"]["ephemeralContainers"].append({"name": "put2", "image": "busybox:1.37"})
    with pytest.raises(ApiException) as e:  # body still carries the resourceVersion before put1
        v1.replace_namespaced_pod_ephemeralcontainers("p", NS, body)
    assert e.value.status == 409
