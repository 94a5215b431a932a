"""Strategic merge patch, driven by the v1.33 schema, and the three-way patch kubectl apply
computes."""

from __future__ import annotations

import copy
import json

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.patch import (
    LAST_APPLIED_ANNOTATION,
    apply_strategic_merge_patch,
    create_three_way_merge_patch,
    create_two_way_merge_patch,
    kubectl_apply_patch,
    kubectl_modified_configuration,
)


def smp(obj, patch, group="", version="v1", kind="Pod", **kw):
    return apply_strategic_merge_patch(obj, patch, group, version, kind, **kw)


def pod() -> dict:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": "default", "labels": {"app": "a"},
                     "finalizers": ["example.com/a", "example.com/b"]},
        "spec": {
            "containers": [
                {"name": "app", "image": "nginx:1", "ports": [{"containerPort": 80, "name": "http"}],
                 "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}]},
                {"name": "side", "image": "busybox"},
            ],
            "tolerations": [{"key": "k1", "operator": "Exists"}],
            "volumes": [{"name": "data", "emptyDir": {}}],
        },
    }


def test_containers_merge_by_name():
    out = smp(pod(), {"spec": {"containers": [{"name": "side", "image": "busybox:2"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "side"]
    assert out["spec"]["containers"][1] == {"name": "side", "image": "busybox:2"}
    assert out["spec"]["containers"][0]["image"] == "nginx:1"


def test_new_list_items_are_merged_in_patch_order():
    out = smp(pod(), {"spec": {"containers": [{"name": "side", "image": "x"}, {"name": "new", "image": "y"}]}})
    assert [c["name"] for c in out["spec"]["containers"]] == ["app", "side", "new"]


def test_ports_merge_by_container_port():
    patch = {"spec": {"containers": [{"name": "app", "ports": [
        {"containerPort": 80, "protocol": "TCP"}, {"containerPort": 443, "name": "https"}]}]}}
    ports = smp(pod(), patch)["spec"]["containers"][0]["ports"]
    assert ports == [{"containerPort": 80, "name": "http", "protocol": "TCP"},
                     {"containerPort": 443, "name": "https"}]


def test_env_by_name_with_delete_directive():
    patch = {"spec": {"containers": [{"name": "app", "env": [
        {"name": "A", "$patch": "delete"}, {"name": "B", "value": "22"}, {"name": "C", "value": "3"}]}]}}
    env = smp(pod(), patch)["spec"]["containers"][0]["env"]
    assert env == [{"name": "B", "value": "22"}, {"name": "C", "value": "3"}]


def test_tolerations_are_replaced_not_merged():
    # PodSpec.tolerations carries no patch strategy (list-type atomic): replace.
    out = smp(pod(), {"spec": {"tolerations": [{"key": "k2", "operator": "Equal", "value": "v"}]}})
    assert out["spec"]["tolerations"] == [{"key": "k2", "operator": "Equal", "value": "v"}]


def test_finalizers_are_a_set_union():
    out = smp(pod(), {"metadata": {"finalizers": ["example.com/c", "example.com/a"]}})
    # Upstream's ordering: patch items lead unless the live order places a live-only item first.
    assert out["metadata"]["finalizers"] == ["example.com/c", "example.com/a", "example.com/b"]
    out = smp(pod(), {"metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}})
    assert out["metadata"]["finalizers"] == ["example.com/b"]
    out = smp(pod(), {"metadata": {"finalizers": None}})
    assert "finalizers" not in out["metadata"]


def test_set_element_order():
    patch = {"spec": {"$setElementOrder/containers": [{"name": "side"}, {"name": "app"}],
                      "containers": [{"name": "app", "image": "nginx:2"}]}}
    out = smp(pod(), patch)
    assert [c["name"] for c in out["spec"]["containers"]] == ["side", "app"]
    assert out["spec"]["containers"][1]["image"] == "nginx:2"
    patch = {"metadata": {"$setElementOrder/finalizers": ["example.com/b", "example.com/a"]}}
    assert smp(pod(), patch)["metadata"]["finalizers"] == ["example.com/b", "example.com/a"]


def test_set_element_order_mismatch_is_an_error():
    patch = {"spec": {"$setElementOrder/containers": [{"name": "app"}],
                      "containers": [{"name": "side", "image": "x"}]}}
    with pytest.raises(StatusError) as ei:
        smp(pod(), patch)
    assert ei.value.code == 400  # upstream: a 500 (a plain error); bad input is a 4xx


def deployment() -> dict:
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "d", "namespace": "default"},
        "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "d"}},
                 "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
                 "template": {"metadata": {"labels": {"app": "d"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}},
    }


def test_retain_keys_for_deployment_strategy():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate"}}}
    out = apply_strategic_merge_patch(deployment(), patch, "apps", "v1", "Deployment")
    assert out["spec"]["strategy"] == {"type": "Recreate"}
    # Without the directive the map merges (and would keep rollingUpdate).
    out = apply_strategic_merge_patch(deployment(), {"spec": {"strategy": {"type": "Recreate"}}},
                                      "apps", "v1", "Deployment")
    assert out["spec"]["strategy"]["rollingUpdate"] == {"maxSurge": "25%", "maxUnavailable": "25%"}


def test_retain_keys_must_list_the_patched_keys():
    patch = {"spec": {"strategy": {"$retainKeys": ["type"], "type": "Recreate", "rollingUpdate": {"maxSurge": 1}}}}
    with pytest.raises(StatusError) as ei:
        apply_strategic_merge_patch(deployment(), patch, "apps", "v1", "Deployment")
    assert (ei.value.code, ei.value.reason, ei.value.message) == (
        400, "BadRequest", "invalid patch format of retainKeys")


def test_retain_keys_on_volumes_switches_source():
    patch = {"spec": {"volumes": [{"name": "data", "$retainKeys": ["name", "hostPath"],
                                   "hostPath": {"path": "/tmp"}}]}}
    out = smp(pod(), patch)
    assert out["spec"]["volumes"] == [{"name": "data", "hostPath": {"path": "/tmp"}}]


def test_replace_and_delete_directives():
    out = smp(pod(), {"metadata": {"labels": {"$patch": "replace", "new": "1"}}})
    assert out["metadata"]["labels"] == {"new": "1"}
    out = smp(pod(), {"metadata": {"labels": {"$patch": "delete"}}})
    assert out["metadata"]["labels"] == {}
    out = smp(pod(), {"spec": {"containers": [{"$patch": "replace"}, {"name": "only", "image": "x"}]}})
    assert out["spec"]["containers"] == [{"name": "only", "image": "x"}]
    out = smp(pod(), {"$patch": "replace", "kind": "Pod"})
    assert out == {"kind": "Pod"}


def test_merge_directive_is_rejected_as_upstream():
    with pytest.raises(StatusError) as ei:
        smp(pod(), {"spec": {"containers": [{"$patch": "merge", "name": "app"}]}})
    assert ei.value.code == 400  # upstream: a 500 (a plain error); bad input is a 4xx
    assert ei.value.message == "merging lists cannot yet be specified in the patch"
    with pytest.raises(StatusError) as ei:
        smp(pod(), {"metadata": {"labels": {"$patch": "merge"}}})
    assert ei.value.message == "unknown patch type: merge in map: map[$patch:merge]"


def test_null_deletes_and_new_values_drop_nulls():
    out = smp(pod(), {"metadata": {"labels": None, "annotations": {"a": "1", "b": None}},
                      "spec": {"containers": [{"name": "app", "image": None}]}})
    assert "labels" not in out["metadata"]
    assert out["metadata"]["annotations"] == {"a": "1"}
    assert "image" not in out["spec"]["containers"][0]


def test_service_ports_merge_on_port():
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s"},
           "spec": {"ports": [{"port": 80, "targetPort": 8080}]}}
    out = smp(svc, {"spec": {"ports": [{"port": 443, "targetPort": 8443}]}}, kind="Service")
    assert [p["port"] for p in out["spec"]["ports"]] == [443, 80]


def test_list_of_lists_is_unprocessable():
    obj = {"apiVersion": "v1", "kind": "Pod", "metadata": {"finalizers": [["x"]]}}
    with pytest.raises(StatusError) as ei:
        smp(obj, {"metadata": {"finalizers": [["y"]]}})
    assert ei.value.status()["code"] == 422
    assert ei.value.status()["details"] == {}


def test_bad_primitive_list_directive():
    with pytest.raises(StatusError) as ei:
        smp(pod(), {"metadata": {"$deleteFromPrimitiveListfinalizers": ["a"]}})
    assert (ei.value.code, ei.value.message) == (400, "invalid patch format of primitive list")


def test_custom_resources_are_refused_with_415():
    with pytest.raises(StatusError) as ei:
        apply_strategic_merge_patch({"spec": {}}, {"spec": {"a": 1}}, "example.com", "v1", "Widget")
    assert ei.value.status() == {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": "the body of the request was in an unknown format - accepted media types include: "
                   "application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml",
        "reason": "UnsupportedMediaType", "code": 415}


def test_custom_resource_fallback_is_json_merge_like():
    cr = {"spec": {"list": [1, 2], "m": {"a": 1, "b": 2}}}
    out = apply_strategic_merge_patch(cr, {"spec": {"list": [3], "m": {"b": None, "c": 3}}},
                                      "example.com", "v1", "Widget", allow_unknown=True)
    assert out == {"spec": {"list": [3], "m": {"a": 1, "c": 3}}}


def test_inputs_not_mutated():
    obj, patch = pod(), {"spec": {"containers": [{"name": "app", "env": [{"name": "A", "$patch": "delete"}]}]},
                         "metadata": {"$deleteFromPrimitiveList/finalizers": ["example.com/a"]}}
    o0, p0 = copy.deepcopy(obj), copy.deepcopy(patch)
    out = smp(obj, patch)
    out["spec"]["containers"][1]["image"] = "changed"
    assert obj == o0 and patch == p0


def test_patch_as_text():
    out = smp(pod(), '{"metadata":{"labels":{"x":"y"}}}')
    assert out["metadata"]["labels"] == {"app": "a", "x": "y"}


# ---------------------------------------------------------------------------------------------
# kubectl's patches


def test_two_way_patch_round_trips():
    original = pod()
    modified = pod()
    modified["spec"]["containers"][0]["env"] = [{"name": "B", "value": "2"}, {"name": "C", "value": "3"}]
    modified["metadata"]["finalizers"] = ["example.com/b"]
    patch = create_two_way_merge_patch(original, modified, "", "v1", "Pod")
    assert patch["metadata"] == {"$deleteFromPrimitiveList/finalizers": ["example.com/a"],
                                 "$setElementOrder/finalizers": ["example.com/b"]}
    assert smp(original, patch) == modified


def apply_cycle(config: dict, live: dict, group="apps", version="v1", kind="Deployment") -> tuple[dict, dict]:
    patch, content_type = kubectl_apply_patch(config, live)
    assert content_type == "application/strategic-merge-patch+json"
    return patch, apply_strategic_merge_patch(live, patch, group, version, kind)


def test_three_way_patch_when_fields_are_removed_from_the_file():
    cfg1 = deployment()
    cfg1["metadata"]["labels"] = {"a": "1", "b": "2"}
    cfg1["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    del cfg1["spec"]["strategy"]
    live = kubectl_modified_configuration(cfg1)
    # What the server added meanwhile: defaults, status, another writer's annotation.
    live["metadata"]["uid"] = "u1"
    live["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    live["spec"]["strategy"] = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}}
    live["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] = "Always"
    live["status"] = {"replicas": 1}

    cfg2 = copy.deepcopy(cfg1)
    del cfg2["metadata"]["labels"]["b"]
    del cfg2["spec"]["replicas"]
    cfg2["spec"]["template"]["spec"]["containers"] = [cfg2["spec"]["template"]["spec"]["containers"][0]]

    patch, result = apply_cycle(cfg2, live)
    assert patch["metadata"]["labels"] == {"b": None}
    assert patch["spec"]["replicas"] is None
    assert patch["spec"]["template"]["spec"]["$setElementOrder/containers"] == [{"name": "c"}]
    assert {"name": "side", "$patch": "delete"} in patch["spec"]["template"]["spec"]["containers"]
    assert "strategy" not in patch["spec"]   # never in the file: left to the server

    assert result["metadata"]["labels"] == {"a": "1"}
    assert "replicas" not in result["spec"]
    assert result["spec"]["template"]["spec"]["containers"] == [
        {"name": "c", "image": "nginx", "imagePullPolicy": "Always"}]
    assert result["spec"]["strategy"]["type"] == "RollingUpdate"
    assert result["status"] == {"replicas": 1}
    assert result["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    assert json.loads(result["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]) == json.loads(
        kubectl_modified_configuration(cfg2)["metadata"]["annotations"][LAST_APPLIED_ANNOTATION])
    # Applying the same file again is a no-op patch (only the unchanged annotation).
    patch2, _ = kubectl_apply_patch(cfg2, result)
    assert patch2 == {}


def test_three_way_patch_switches_strategy_with_retain_keys():
    live = deployment()
    cfg = copy.deepcopy(live)
    cfg["spec"]["strategy"] = {"type": "Recreate"}
    live = kubectl_modified_configuration(deployment())
    patch, result = apply_cycle(cfg, live)
    assert patch["spec"]["strategy"] == {"$retainKeys": ["type"], "rollingUpdate": None, "type": "Recreate"}
    assert result["spec"]["strategy"] == {"type": "Recreate"}


def test_three_way_patch_reorders_env_with_set_element_order():
    cfg1 = pod()
    live = kubectl_modified_configuration(cfg1)
    cfg2 = copy.deepcopy(cfg1)
    cfg2["spec"]["containers"][0]["env"] = [{"name": "B", "value": "2"}, {"name": "A", "value": "1"}]
    patch, content_type = kubectl_apply_patch(cfg2, live)
    containers = patch["spec"]["containers"]
    assert containers == [{"name": "app", "$setElementOrder/env": [{"name": "B"}, {"name": "A"}]}]
    out = smp(live, patch)
    assert [e["name"] for e in out["spec"]["containers"][0]["env"]] == ["B", "A"]


def test_last_applied_configuration_text():
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "default"},
           "data": {"k": "<v>"}}
    text = kubectl_modified_configuration(cfg)["metadata"]["annotations"][LAST_APPLIED_ANNOTATION]
    assert text == ('{"apiVersion":"v1","data":{"k":"\\u003cv\\u003e"},"kind":"ConfigMap",'
                    '"metadata":{"annotations":{},"name":"c","namespace":"default"}}\n')


def test_kubectl_uses_merge_patch_for_custom_resources():
    cfg = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": {"size": 1}}
    live = kubectl_modified_configuration(cfg)
    cfg2 = copy.deepcopy(cfg)
    del cfg2["spec"]["size"]
    patch, content_type = kubectl_apply_patch(cfg2, live)
    assert content_type == "application/merge-patch+json"
    assert patch["spec"] == {"size": None}


def test_three_way_without_overwrite_detects_conflicts():
    from pyk8s.api.patch import StrategicMergePatchError

    original = deployment()
    current = copy.deepcopy(original)
    current["spec"]["replicas"] = 5
    modified = copy.deepcopy(original)
    modified["spec"]["replicas"] = 3
    with pytest.raises(StrategicMergePatchError):
        create_three_way_merge_patch(original, modified, current, "apps", "v1", "Deployment", overwrite=False)
    patch = create_three_way_merge_patch(original, modified, current, "apps", "v1", "Deployment")
    assert patch == {"spec": {"replicas": 3}}
