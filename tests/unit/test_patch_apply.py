"""Server-side apply and managedFields bookkeeping."""

from __future__ import annotations

import copy
import json

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.patch import (
    FieldSet,
    apply_json_patch,
    decode_managed_fields,
    kubectl_migrate_managed_fields_patch,
    kubectl_modified_configuration,
    manager_from_user_agent,
    server_side_apply,
    update_managed_fields,
    upgrade_managed_fields,
)

LAST = "kubectl.kubernetes.io/last-applied-configuration"
T0, T1, T2, T3 = "2024-01-01T00:00:00Z", "2024-01-01T00:01:00Z", "2024-01-01T00:02:00Z", "2024-01-01T00:03:00Z"


def deploy_config(**spec) -> dict:
    cfg = {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "default", "labels": {"app": "web", "tier": "front"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "web"}},
            "template": {"metadata": {"labels": {"app": "web"}},
                         "spec": {"containers": [{"name": "web", "image": "nginx:1",
                                                  "ports": [{"containerPort": 80}]}]}},
        },
    }
    cfg["spec"].update(spec)
    return cfg


def stored(obj: dict, uid: str = "uid-1", rv: str = "1") -> dict:
    """What the registry would add on create."""
    obj = copy.deepcopy(obj)
    obj["metadata"].update(uid=uid, resourceVersion=rv, creationTimestamp=T0)
    return obj


def entries(obj: dict) -> list[dict]:
    return obj["metadata"].get("managedFields") or []


def entry(obj: dict, manager: str, operation: str | None = None) -> dict:
    found = [e for e in entries(obj) if e["manager"] == manager and (operation is None or e["operation"] == operation)]
    assert len(found) == 1, entries(obj)
    return found[0]


# ---------------------------------------------------------------------------------------------
# apply


def test_create_via_apply():
    obj = server_side_apply(None, deploy_config(), "kubectl", now=T0)
    assert obj["spec"]["replicas"] == 2
    assert obj["metadata"]["labels"] == {"app": "web", "tier": "front"}
    assert "creationTimestamp" not in obj["metadata"]
    assert obj["status"] == {}
    assert entries(obj) == [{
        "manager": "kubectl",
        "operation": "Apply",
        "apiVersion": "apps/v1",
        "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {"f:app": {}, "f:tier": {}}},
            "f:spec": {
                "f:replicas": {},
                "f:selector": {},
                "f:template": {
                    "f:metadata": {"f:labels": {"f:app": {}}},
                    "f:spec": {"f:containers": {'k:{"name":"web"}': {
                        ".": {}, "f:image": {}, "f:name": {},
                        "f:ports": {'k:{"containerPort":80,"protocol":"TCP"}': {".": {}, "f:containerPort": {}}},
                    }}},
                },
            },
        },
    }]


def test_reapply_is_a_no_op():
    live = stored(server_side_apply(None, deploy_config(), "kubectl", now=T0))
    again = server_side_apply(live, deploy_config(), "kubectl", now=T1)
    assert again == live
    assert entry(again, "kubectl")["time"] == T0


def test_removing_an_owned_field_removes_it():
    live = stored(server_side_apply(None, deploy_config(), "kubectl", now=T0))
    cfg = deploy_config()
    del cfg["metadata"]["labels"]["tier"]
    del cfg["spec"]["replicas"]
    out = server_side_apply(live, cfg, "kubectl", now=T1)
    assert out["metadata"]["labels"] == {"app": "web"}
    assert "replicas" not in out["spec"]
    fields = entry(out, "kubectl")["fieldsV1"]
    assert fields["f:metadata"] == {"f:labels": {"f:app": {}}}
    assert "f:replicas" not in fields["f:spec"]
    assert entry(out, "kubectl")["time"] == T1


def test_removed_field_survives_when_another_manager_owns_it():
    live = stored(server_side_apply(None, deploy_config(), "kubectl", now=T0))
    other = copy.deepcopy(live)
    other["metadata"]["labels"]["tier"] = "back"            # another writer also sets it
    live = update_managed_fields(live, other, "labeler", now=T1)
    cfg = deploy_config()
    del cfg["metadata"]["labels"]["tier"]
    out = server_side_apply(live, cfg, "kubectl", force=True, now=T2)
    assert out["metadata"]["labels"] == {"app": "web", "tier": "back"}
    assert entry(out, "labeler")["fieldsV1"] == {"f:metadata": {"f:labels": {"f:tier": {}}}}


def test_removed_list_item_is_pruned():
    cfg = deploy_config()
    cfg["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "busybox"})
    live = stored(server_side_apply(None, cfg, "kubectl", now=T0))
    out = server_side_apply(live, deploy_config(), "kubectl", now=T1)
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["web"]


def test_conflict_with_client_side_apply_manager():
    live = stored(server_side_apply(None, deploy_config(), "deployer", now=T0))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    live = update_managed_fields(live, scaled, "kubectl-client-side-apply", now=T1)
    with pytest.raises(StatusError) as ei:
        server_side_apply(live, deploy_config(replicas=3), "deployer", now=T2)
    err = ei.value
    assert err.code == 409
    assert err.reason == "Conflict"
    assert err.message == ('Apply failed with 1 conflict: conflict with "kubectl-client-side-apply" '
                           "using apps/v1: .spec.replicas")
    assert err.details == {"causes": [{
        "reason": "FieldManagerConflict",
        "message": 'conflict with "kubectl-client-side-apply" using apps/v1',
        "field": ".spec.replicas",
    }]}


def test_multiple_conflicts_message():
    live = stored(server_side_apply(None, deploy_config(), "deployer", now=T0))
    changed = copy.deepcopy(live)
    changed["spec"]["replicas"] = 5
    changed["metadata"]["labels"]["tier"] = "x"
    live = update_managed_fields(live, changed, "scaler", now=T1)
    other = copy.deepcopy(live)
    other["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:2"
    live = update_managed_fields(live, other, "imager", now=T2)
    cfg = deploy_config(replicas=3)
    cfg["metadata"]["labels"]["tier"] = "y"
    cfg["spec"]["template"]["spec"]["containers"][0]["image"] = "nginx:3"
    second = server_side_apply(live, {"apiVersion": "apps/v1", "kind": "Deployment",
                                      "metadata": {"name": "web", "annotations": {"a": "1"}}}, "applier-2", now=T2)
    with pytest.raises(StatusError) as ei:
        server_side_apply(second, cfg, "deployer")
    assert ei.value.message == (
        "Apply failed with 3 conflicts: "
        'conflicts with "imager" using apps/v1:\n'
        '- .spec.template.spec.containers[name="web"].image\n'
        'conflicts with "scaler" using apps/v1:\n'
        "- .metadata.labels.tier\n"
        "- .spec.replicas")
    assert [c["field"] for c in ei.value.details["causes"]] == [
        '.spec.template.spec.containers[name="web"].image', ".metadata.labels.tier", ".spec.replicas"]


def test_conflict_between_appliers_and_force():
    live = stored(server_side_apply(None, deploy_config(), "team-a", now=T0))
    with pytest.raises(StatusError) as ei:
        server_side_apply(live, deploy_config(replicas=9), "team-b", now=T1)
    assert ei.value.message == 'Apply failed with 1 conflict: conflict with "team-a": .spec.replicas'
    out = server_side_apply(live, deploy_config(replicas=9), "team-b", force=True, now=T1)
    assert out["spec"]["replicas"] == 9
    assert "f:replicas" not in entry(out, "team-a")["fieldsV1"]["f:spec"]
    assert "f:replicas" in entry(out, "team-b")["fieldsV1"]["f:spec"]
    # Same values are shared, not conflicting.
    shared = server_side_apply(live, deploy_config(), "team-b", now=T1)
    assert "f:replicas" in entry(shared, "team-a")["fieldsV1"]["f:spec"]
    assert "f:replicas" in entry(shared, "team-b")["fieldsV1"]["f:spec"]


def test_atomic_and_granular_types_from_schema():
    cfg = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
           "spec": {"containers": [{"name": "c", "image": "x"}],
                    "tolerations": [{"key": "a", "operator": "Exists"}],
                    "nodeSelector": {"disk": "ssd"}}}
    obj = server_side_apply(None, cfg, "m", now=T0)
    spec = entry(obj, "m")["fieldsV1"]["f:spec"]
    assert spec["f:tolerations"] == {}       # list-type atomic: owned as a whole
    assert spec["f:nodeSelector"] == {}      # map-type atomic
    live = stored(obj)
    cfg2 = copy.deepcopy(cfg)
    cfg2["spec"]["tolerations"] = [{"key": "b", "operator": "Exists"}]
    cfg2["spec"]["nodeSelector"] = {"zone": "a"}
    out = server_side_apply(live, cfg2, "m", now=T1)
    assert out["spec"]["tolerations"] == [{"key": "b", "operator": "Exists"}]
    assert out["spec"]["nodeSelector"] == {"zone": "a"}


def test_finalizers_are_a_set():
    cfg = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "finalizers": ["a/b"]}}
    obj = server_side_apply(None, cfg, "m", now=T0)
    # The applier owns the item, not the list (no "." for the list itself).
    assert entry(obj, "m")["fieldsV1"] == {"f:metadata": {"f:finalizers": {'v:"a/b"': {}}}}


def test_list_order_follows_the_configuration_and_keeps_others():
    cfg = deploy_config()
    cfg["spec"]["template"]["spec"]["containers"] = [{"name": "a", "image": "1"}, {"name": "b", "image": "2"}]
    live = stored(server_side_apply(None, cfg, "m1", now=T0))
    side = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web"},
            "spec": {"template": {"spec": {"containers": [{"name": "z", "image": "9"}]}}}}
    live = server_side_apply(live, side, "m2", now=T1)
    cfg["spec"]["template"]["spec"]["containers"].reverse()
    out = server_side_apply(live, cfg, "m1", now=T2)
    # The configuration's order for its items; another manager's item keeps its live place.
    assert [c["name"] for c in out["spec"]["template"]["spec"]["containers"]] == ["b", "z", "a"]


def test_status_is_not_owned_on_the_main_resource():
    cfg = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "creationTimestamp": None},
           "spec": {"containers": [{"name": "c", "image": "x", "resources": {}}]}, "status": {}}
    obj = server_side_apply(None, cfg, "kubectl", now=T0)
    assert "f:status" not in entry(obj, "kubectl")["fieldsV1"]
    assert entry(obj, "kubectl")["fieldsV1"]["f:spec"]["f:containers"]['k:{"name":"c"}']["f:resources"] == {}


def test_custom_resource_with_schema():
    schema = {"type": "object", "properties": {
        "spec": {"type": "object", "properties": {
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id"],
                      "items": {"type": "object", "properties": {"id": {"type": "string"}, "v": {"type": "integer"}}}},
            "tags": {"type": "array", "items": {"type": "string"}},
            "size": {"type": "integer"}}},
        "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}
    cfg = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"items": [{"id": "a", "v": 1}], "tags": ["x"], "size": 1}}
    obj = server_side_apply(None, cfg, "m", schema=schema, now=T0)
    assert entry(obj, "m")["fieldsV1"] == {"f:spec": {
        "f:items": {'k:{"id":"a"}': {".": {}, "f:id": {}, "f:v": {}}}, "f:size": {}, "f:tags": {}}}
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, {**cfg, "spec": {"unknown": 1}}, "m", schema=schema)
    assert ei.value.code == 400  # upstream: a 500 (a plain error); bad input is a 4xx
    assert ei.value.message == ("failed to create typed patch object (/w; example.com/v1, Kind=Widget): "
                                ".spec.unknown: field not declared in schema")


def test_custom_resource_without_schema_is_free_form():
    cfg = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "b"}},
           "spec": {"size": 1, "list": [1, 2]}}
    obj = server_side_apply(None, cfg, "m", now=T0)
    assert entry(obj, "m")["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:a": {}}},
        "f:spec": {".": {}, "f:list": {}, "f:size": {}}}


def test_apply_errors():
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, {**deploy_config(), "apiVersion": "apps/v1beta1"}, "m", api_version="apps/v1",
                          kind="Deployment")
    assert (ei.value.code, ei.value.message) == (400, "invalid object type: apps/v1beta1, Kind=Deployment")
    cfg = deploy_config()
    cfg["metadata"]["managedFields"] = []
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, cfg, "m")
    assert (ei.value.code, ei.value.message) == (400, "metadata.managedFields must be nil")
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, deploy_config(), "")
    assert ei.value.code == 422
    assert ei.value.message == ('PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: '
                                "is required for apply patch")
    bad = deploy_config()
    bad["spec"]["bogus"] = True
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, bad, "m")
    assert ei.value.message == ("failed to create typed patch object (default/web; apps/v1, Kind=Deployment): "
                                ".spec.bogus: field not declared in schema")
    dup = deploy_config()
    dup["spec"]["template"]["spec"]["containers"].append({"name": "web", "image": "x"})
    with pytest.raises(StatusError) as ei:
        server_side_apply(None, dup, "m")
    assert ei.value.message.endswith('.spec.template.spec.containers: duplicate entries for key [name="web"]')


def test_inputs_not_mutated():
    live = stored(server_side_apply(None, deploy_config(), "a", now=T0))
    cfg = deploy_config(replicas=3)
    live0, cfg0 = copy.deepcopy(live), copy.deepcopy(cfg)
    out = server_side_apply(live, cfg, "a", now=T1)
    out["metadata"]["labels"]["x"] = "y"
    assert live == live0 and cfg == cfg0
    new = copy.deepcopy(live)
    new["spec"]["replicas"] = 7
    new0 = copy.deepcopy(new)
    update_managed_fields(live, new, "b", now=T1)
    assert new == new0 and live == live0


# ---------------------------------------------------------------------------------------------
# Update operations


def created_deployment() -> dict:
    """kubectl create deployment, after defaulting."""
    return {
        "apiVersion": "apps/v1", "kind": "Deployment",
        "metadata": {"name": "nginx", "namespace": "default", "labels": {"app": "nginx"}},
        "spec": {
            "replicas": 1, "selector": {"matchLabels": {"app": "nginx"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}},
            "revisionHistoryLimit": 10, "progressDeadlineSeconds": 600,
            "template": {"metadata": {"labels": {"app": "nginx"}}, "spec": {
                "containers": [{"name": "nginx", "image": "nginx", "imagePullPolicy": "Always", "resources": {},
                                "terminationMessagePath": "/dev/termination-log",
                                "terminationMessagePolicy": "File"}],
                "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
                "securityContext": {}, "terminationGracePeriodSeconds": 30}},
        },
        "status": {},
    }


def test_update_manager_recorded_on_create():
    obj = update_managed_fields(None, created_deployment(), "kubectl-create", now=T0)
    assert entries(obj) == [{
        "manager": "kubectl-create", "operation": "Update", "apiVersion": "apps/v1", "time": T0,
        "fieldsType": "FieldsV1",
        "fieldsV1": {
            "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
            "f:spec": {
                "f:progressDeadlineSeconds": {}, "f:replicas": {}, "f:revisionHistoryLimit": {}, "f:selector": {},
                "f:strategy": {"f:rollingUpdate": {".": {}, "f:maxSurge": {}, "f:maxUnavailable": {}},
                               "f:type": {}},
                "f:template": {
                    "f:metadata": {"f:labels": {".": {}, "f:app": {}}},
                    "f:spec": {
                        "f:containers": {'k:{"name":"nginx"}': {
                            ".": {}, "f:image": {}, "f:imagePullPolicy": {}, "f:name": {}, "f:resources": {},
                            "f:terminationMessagePath": {}, "f:terminationMessagePolicy": {}}},
                        "f:dnsPolicy": {}, "f:restartPolicy": {}, "f:schedulerName": {}, "f:securityContext": {},
                        "f:terminationGracePeriodSeconds": {}},
                },
            },
        },
    }]


def test_update_moves_ownership_and_merges_same_manager():
    live = stored(update_managed_fields(None, created_deployment(), "kubectl-create", now=T0))
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 3
    out = update_managed_fields(live, scaled, "kubectl-scale", now=T1)
    assert entry(out, "kubectl-scale")["fieldsV1"] == {"f:spec": {"f:replicas": {}}}
    assert entry(out, "kubectl-scale")["time"] == T1
    assert "f:replicas" not in entry(out, "kubectl-create")["fieldsV1"]["f:spec"]
    assert entry(out, "kubectl-create")["time"] == T0
    # A second change by the same manager unions with what it had.
    labeled = copy.deepcopy(out)
    labeled["metadata"]["labels"]["x"] = "1"
    out2 = update_managed_fields(out, labeled, "kubectl-scale", now=T2)
    assert entry(out2, "kubectl-scale")["fieldsV1"] == {
        "f:metadata": {"f:labels": {"f:x": {}}}, "f:spec": {"f:replicas": {}}}
    # No change: nothing recorded, times untouched.
    same = update_managed_fields(out2, copy.deepcopy(out2), "someone", now=T3)
    assert same["metadata"]["managedFields"] == out2["metadata"]["managedFields"]
    # Entries are sorted: Apply first, then by time.
    assert [e["manager"] for e in entries(out2)] == ["kubectl-create", "kubectl-scale"]


def test_update_removing_a_field_drops_it_from_every_manager():
    live = stored(update_managed_fields(None, created_deployment(), "kubectl-create", now=T0))
    new = copy.deepcopy(live)
    del new["metadata"]["labels"]
    out = update_managed_fields(live, new, "editor", now=T1)
    assert "f:metadata" not in entry(out, "kubectl-create")["fieldsV1"]
    assert not [e for e in entries(out) if e["manager"] == "editor"]


def test_status_subresource_updates():
    live = stored(update_managed_fields(None, created_deployment(), "kubectl-create", now=T0))
    new = copy.deepcopy(live)
    new["status"] = {"replicas": 1, "conditions": [{"type": "Available", "status": "True"}]}
    new["spec"]["replicas"] = 99   # ignored for ownership on /status
    out = update_managed_fields(live, new, "kube-controller-manager", subresource="status", now=T1)
    e = entry(out, "kube-controller-manager")
    assert e["subresource"] == "status"
    assert e["fieldsV1"] == {"f:status": {
        "f:conditions": {".": {}, 'k:{"type":"Available"}': {".": {}, "f:status": {}, "f:type": {}}},
        "f:replicas": {}}}
    assert list(e) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1", "subresource"]


def test_managed_fields_reset_and_untracked_objects():
    live = stored(update_managed_fields(None, created_deployment(), "kubectl-create", now=T0))
    for reset in ([], [{}]):
        new = copy.deepcopy(live)
        new["metadata"]["managedFields"] = reset
        assert "managedFields" not in update_managed_fields(live, new, "x", now=T1)["metadata"]
    untracked = copy.deepcopy(live)
    del untracked["metadata"]["managedFields"]
    changed = copy.deepcopy(untracked)
    changed["spec"]["replicas"] = 4
    assert "managedFields" not in update_managed_fields(untracked, changed, "x", now=T1)["metadata"]
    # Apply to an untracked object first attributes everything to "before-first-apply".
    with pytest.raises(StatusError) as ei:
        server_side_apply(untracked, deploy_config(replicas=4), "m", now=T1)
    assert ei.value.message.startswith(
        'Apply failed with 4 conflicts: conflicts with "before-first-apply" using apps/v1:\n')


def test_update_managers_are_capped_at_ten():
    live = stored(update_managed_fields(None, created_deployment(), "creator", now="2024-01-01T00:00:00Z"))
    for i in range(11):
        new = copy.deepcopy(live)
        new["metadata"].setdefault("annotations", {})[f"k{i}"] = "v"
        live = update_managed_fields(live, new, f"writer-{i:02d}", now=f"2024-01-02T00:00:{i:02d}Z")
    managers = [e["manager"] for e in entries(live)]
    assert len(managers) == 10
    assert "ancient-changes" in managers
    assert "creator" not in managers and "writer-00" not in managers and "writer-01" not in managers
    ancient = entry(live, "ancient-changes")
    assert ancient["fieldsV1"]["f:metadata"]["f:annotations"]["f:k1"] == {}


def test_managed_fields_supplied_by_the_client_are_kept():
    live = stored(update_managed_fields(None, created_deployment(), "kubectl-create", now=T0))
    new = copy.deepcopy(live)
    new["metadata"]["managedFields"][0]["manager"] = "renamed"
    out = update_managed_fields(live, new, "x", now=T1)
    assert [e["manager"] for e in entries(out)] == ["renamed"]
    # ...but not on a subresource.
    out = update_managed_fields(live, new, "x", subresource="status", now=T1)
    assert [e["manager"] for e in entries(out)] == ["kubectl-create"]


def test_manager_from_user_agent():
    assert manager_from_user_agent(None, "kubectl/v1.33.1 (linux/amd64) kubernetes/abc") == "kubectl"
    assert manager_from_user_agent("explicit", "kubectl/v1") == "explicit"
    assert manager_from_user_agent("", "python-requests\x01/2") == "python-requests"
    assert len(manager_from_user_agent(None, "x" * 300)) == 128
    assert manager_from_user_agent(None, "é" * 100) == "é" * 64  # 128 bytes of UTF-8, not 128 characters
    assert manager_from_user_agent(None, "kube-scheduler/v1.33.0 (linux/amd64)") == "kube-scheduler"
    assert manager_from_user_agent(None, None) == ""


def test_fields_v1_round_trip_and_order():
    fields = {"f:metadata": {"f:labels": {".": {}, "f:a": {}}},
              "f:spec": {"f:ports": {'k:{"port":80,"protocol":"TCP"}': {".": {}, "f:port": {}},
                                     'k:{"port":443,"protocol":"TCP"}': {}},
                         "f:z": {}, "f:a": {}}}
    fs = FieldSet.from_fields_v1(fields)
    out = fs.to_fields_v1()
    assert out == fields
    assert list(out["f:spec"]) == ["f:a", "f:ports", "f:z"]
    assert list(out["f:spec"]["f:ports"]) == ['k:{"port":80,"protocol":"TCP"}', 'k:{"port":443,"protocol":"TCP"}']
    assert json.dumps(out["f:spec"]["f:ports"]['k:{"port":443,"protocol":"TCP"}']) == '{}'
    decoded = decode_managed_fields([{"manager": "m", "operation": "Update", "apiVersion": "v1",
                                      "fieldsType": "FieldsV1", "fieldsV1": fields}])
    assert list(decoded.values())[0]["fields"] == fs


# ---------------------------------------------------------------------------------------------
# client-side apply -> server-side apply


def csa_create(cfg: dict) -> dict:
    """kubectl apply (client side) creating the object: POST with the annotation."""
    body = kubectl_modified_configuration(cfg)
    return stored(update_managed_fields(None, body, "kubectl-client-side-apply", now=T0))


def test_kubectl_server_side_apply_takes_over_client_side_apply():
    live = csa_create(deploy_config())
    cfg = deploy_config(replicas=3)
    out = server_side_apply(live, cfg, "kubectl", now=T1)   # no conflict: last-applied matches live
    assert out["spec"]["replicas"] == 3
    assert "f:replicas" in entry(out, "kubectl")["fieldsV1"]["f:spec"]
    assert "f:replicas" not in entry(out, "kubectl-client-side-apply")["fieldsV1"]["f:spec"]
    # The annotation follows the applied configuration.
    assert json.loads(out["metadata"]["annotations"][LAST]) == cfg
    assert out["metadata"]["annotations"][LAST].endswith("\n")


def test_kubectl_server_side_apply_conflicts_on_fields_changed_since():
    live = csa_create(deploy_config())
    scaled = copy.deepcopy(live)
    scaled["spec"]["replicas"] = 5
    live = update_managed_fields(live, scaled, "hpa-controller", now=T1)
    with pytest.raises(StatusError) as ei:
        server_side_apply(live, deploy_config(replicas=3), "kubectl", now=T2)
    assert ei.value.message == ('Apply failed with 1 conflict: conflict with "hpa-controller" using apps/v1: '
                                ".spec.replicas")
    # Another manager name gets no such allowance.
    with pytest.raises(StatusError) as ei:
        server_side_apply(csa_create(deploy_config()), deploy_config(replicas=3), "not-kubectl", now=T2)
    assert "kubectl-client-side-apply" in ei.value.message


def test_kubectl_migration_patch_upgrades_csa_manager():
    live = csa_create(deploy_config())
    applied = stored(server_side_apply(live, deploy_config(), "kubectl", now=T1), rv="2")
    patch = kubectl_migrate_managed_fields_patch(applied)
    assert patch is not None
    assert patch[1] == {"op": "replace", "path": "/metadata/resourceVersion", "value": "2"}
    patched = apply_json_patch(applied, patch)
    out = update_managed_fields(applied, patched, "kubectl", now=T2)
    managers = [(e["manager"], e["operation"]) for e in entries(out)]
    assert managers == [("kubectl", "Apply")]
    fields = entry(out, "kubectl")["fieldsV1"]
    assert fields["f:metadata"]["f:annotations"] == {".": {}, f"f:{LAST}": {}}
    assert kubectl_migrate_managed_fields_patch(out) is None


def test_upgrade_managed_fields_without_ssa_entry_converts_csa_entry():
    live = csa_create(deploy_config())
    upgraded = upgrade_managed_fields(live["metadata"]["managedFields"], {"kubectl-client-side-apply"}, "kubectl")
    assert [(e["manager"], e["operation"], e["time"]) for e in upgraded] == [("kubectl", "Apply", T0)]
    assert upgraded[0]["fieldsV1"] == live["metadata"]["managedFields"][0]["fieldsV1"]


def test_kubectl_last_applied_manager_records_no_time_for_a_no_op():
    live = csa_create(deploy_config())
    applied = stored(server_side_apply(live, deploy_config(replicas=3), "kubectl", now=T1), rv="2")
    annotation = applied["metadata"]["annotations"][LAST]
    only_annotation = {"apiVersion": "apps/v1", "kind": "Deployment",
                       "metadata": {"name": "web", "namespace": "default", "annotations": {LAST: annotation}}}
    out = server_side_apply(applied, only_annotation, "kubectl-last-applied", now=T2)
    e = entry(out, "kubectl-last-applied", "Apply")
    assert "time" not in e
    assert e["fieldsV1"] == {"f:metadata": {"f:annotations": {f"f:{LAST}": {}}}}
    assert entries(out)[0] is e or entries(out)[0] == e   # no time sorts first among appliers
    assert out["metadata"]["annotations"][LAST] == annotation


def test_apply_on_the_status_subresource():
    live = stored(server_side_apply(None, deploy_config(), "kubectl", now=T0))
    cfg = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"replicas": 50}, "status": {"replicas": 2, "readyReplicas": 1}}
    out = server_side_apply(live, cfg, "controller", subresource="status", now=T1)
    e = entry(out, "controller")
    assert e["subresource"] == "status" and e["operation"] == "Apply"
    assert e["fieldsV1"] == {"f:status": {"f:readyReplicas": {}, "f:replicas": {}}}
    # spec is not owned here, so no conflict with kubectl over replicas.
    assert "f:replicas" in entry(out, "kubectl")["fieldsV1"]["f:spec"]


def test_explicit_reset_fields_for_custom_resources():
    cfg = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"},
           "spec": {"size": 1}, "status": {"ok": True}}
    plain = server_side_apply(None, cfg, "m", now=T0)
    assert "f:status" in entry(plain, "m")["fieldsV1"]
    with_subresource = server_side_apply(None, cfg, "m", now=T0, reset_fields=["status"])
    assert "f:status" not in entry(with_subresource, "m")["fieldsV1"]


def test_custom_resource_update_recording():
    cr = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w", "labels": {"a": "1"}},
          "spec": {"size": 1, "nested": {"x": 1}}}
    obj = update_managed_fields(None, cr, "creator", now=T0)
    assert entry(obj, "creator")["fieldsV1"] == {
        "f:metadata": {"f:labels": {".": {}, "f:a": {}}},
        "f:spec": {".": {}, "f:nested": {".": {}, "f:x": {}}, "f:size": {}}}


def test_null_creation_timestamp_in_configuration():
    # kubectl run --dry-run=client -o yaml | kubectl apply --server-side -f -
    cfg = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"creationTimestamp": None, "labels": {"run": "nginx"}, "name": "nginx", "namespace": "default"},
           "spec": {"containers": [{"image": "nginx", "name": "nginx", "resources": {}}],
                    "dnsPolicy": "ClusterFirst", "restartPolicy": "Never"},
           "status": {}}
    live = stored(server_side_apply(None, cfg, "kubectl", now=T0))
    out = server_side_apply(live, cfg, "kubectl", now=T1)
    assert out["metadata"]["creationTimestamp"] == T0
    assert out["metadata"]["uid"] == "uid-1"
    # Upstream counts the nulled timestamp as a change, so the apply time moves.
    assert entry(out, "kubectl")["time"] == T1
