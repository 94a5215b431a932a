"""managedFields of a create come from one walk that writes FieldsV1 directly (apply.py
_created_entries); it must give byte for byte what the general path (compare -> FieldSets ->
update chain -> encode) gives, for built-in kinds, custom resources with and without schemas,
subresources, reset fields, duplicated list keys, empty and null values, values of the wrong
shape, and random changes of all of those."""

from __future__ import annotations

import copy
import json
import logging
import random
from typing import Any

import pytest

from pyk8s.api.defaults import DEFAULTERS, STATUS_ON_CREATE
from pyk8s.api.patch import apply
from pyk8s.api.patch.apply import managed_fields_entries

from .test_managedfields_fastpath import _deploy, _lease, _mutate, _node, _pod

T0 = "2026-01-01T00:00:00Z"


def _general_created(ctx: Any, zero: dict[str, Any], new: dict[str, Any], manager: str) -> Any:
    return apply._encode(apply._update_chain(ctx, zero, new, apply._Managed({}, {}), manager))


def _dump(v: object) -> str:
    return json.dumps(v, sort_keys=False, default=str)


def _check(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, obj: dict[str, Any],
           manager: str = "creator", *, fast_path: bool = True, **kw: Any) -> Any:
    """The create's entries by the fast path, after checking that path ran and that the
    general path gives the same bytes."""
    kw.setdefault("kind", obj.get("kind") if isinstance(obj.get("kind"), str) else "")
    api_version = kw.pop("api_version", obj.get("apiVersion") if isinstance(obj.get("apiVersion"), str) else "")
    before = _dump(obj)
    calls: list[int] = []
    fast_fn = apply._created_entries

    def spy(*a: Any) -> Any:
        calls.append(1)
        return fast_fn(*a)

    with caplog.at_level(logging.ERROR, logger=apply.__name__):
        with monkeypatch.context() as m:
            m.setattr(apply, "_created_entries", spy)
            fast = managed_fields_entries(None, obj, manager, "Update", api_version, T0, **kw)
        with monkeypatch.context() as m:
            m.setattr(apply, "_created_entries", _general_created)
            general = managed_fields_entries(None, obj, manager, "Update", api_version, T0, **kw)
    assert not [r for r in caplog.records if "SHOULD NOT HAPPEN" in r.getMessage()]
    assert _dump(obj) == before, "the object must not change"
    md = obj.get("metadata")
    tracked = isinstance(md, dict) and apply._decode_or_empty(md.get("managedFields")).fields
    if fast_path and isinstance(md, dict) and not tracked:
        assert calls, "the create must take the fast path"
    assert _dump(fast) == _dump(general)
    return fast


def _defaulted(obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    g, _, _v = obj["apiVersion"].rpartition("/")
    fn = DEFAULTERS.get((g, obj["kind"]))
    if fn is not None:
        fn(obj)
    sfn = STATUS_ON_CREATE.get((g, obj["kind"]))
    if sfn is not None:
        sfn(obj)
    obj["metadata"].update(uid="u-1", creationTimestamp=T0, generation=1)
    return obj


def _big_pod() -> dict[str, Any]:
    def container(i: int) -> dict[str, Any]:
        return {"name": f"c{i}", "image": f"img:{i}", "command": ["sh", "-c"], "args": ["sleep 1", "x"],
                "ports": [{"containerPort": 80 + i, "name": f"http{i}"}, {"containerPort": 53, "protocol": "UDP"},
                          {"containerPort": 53, "protocol": "TCP"}],
                "env": [{"name": "A", "value": "1"}, {"name": "B", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}},
                        {"name": "C", "valueFrom": {"secretKeyRef": {"name": "s", "key": "k", "optional": True}}}],
                "envFrom": [{"configMapRef": {"name": "cm"}}],
                "volumeMounts": [{"name": "v1", "mountPath": "/a"}, {"name": "v2", "mountPath": "/b", "readOnly": True}],
                "resources": {"requests": {"cpu": "100m", "memory": "1Gi"}, "limits": {"cpu": "1"}},
                "livenessProbe": {"httpGet": {"path": "/", "port": 80}, "periodSeconds": 5},
                "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}, "runAsUser": 0}}
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"generateName": "web-", "name": "web-x", "namespace": "default",
                         "labels": {"app": "web", "tier": "fe"}, "annotations": {"a": "b", "": "empty key"},
                         "finalizers": ["x/y", "a/b"],
                         "ownerReferences": [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": "r1",
                                              "controller": True, "blockOwnerDeletion": True}]},
            "spec": {"initContainers": [container(9)], "containers": [container(i) for i in range(3)],
                     "volumes": [{"name": "v1", "emptyDir": {}},
                                 {"name": "v2", "configMap": {"name": "cm", "items": [{"key": "k", "path": "p"}]}},
                                 {"name": "v3", "projected": {"sources": [{"serviceAccountToken": {"path": "t"}}]}}],
                     "nodeSelector": {"disk": "ssd"}, "tolerations": [{"key": "k", "operator": "Exists"}],
                     "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
                         "nodeSelectorTerms": [{"matchExpressions": [{"key": "z", "operator": "In", "values": ["a"]}]}]}}},
                     "imagePullSecrets": [{"name": "reg"}], "hostAliases": [{"ip": "1.2.3.4", "hostnames": ["h"]}],
                     "readinessGates": [{"conditionType": "x"}], "topologySpreadConstraints": [
                         {"maxSkew": 1, "topologyKey": "zone", "whenUnsatisfiable": "DoNotSchedule"}]},
            "status": {"phase": "Pending"}}


def _service() -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "default"},
            "spec": {"selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 8080, "name": "http"},
                                                             {"port": 53, "protocol": "UDP", "name": "dns"},
                                                             {"port": 53, "protocol": "TCP", "name": "dnst"}],
                     "type": "ClusterIP", "clusterIP": "10.0.0.1", "clusterIPs": ["10.0.0.1"],
                     "ipFamilies": ["IPv4"], "sessionAffinity": "None"},
            "status": {"loadBalancer": {}}}


def _builtin_objects() -> list[dict[str, Any]]:
    r = random.Random(7)
    pod = _big_pod()
    dup = _big_pod()
    dup["spec"]["containers"].append(copy.deepcopy(dup["spec"]["containers"][0]))  # duplicated key
    dup["spec"]["containers"][1]["ports"].append({"containerPort": 53, "protocol": "UDP"})
    dup["metadata"]["finalizers"].append("x/y")
    deploy = _deploy(r)
    deploy["spec"]["template"]["spec"]["containers"].append({"name": "side", "image": "s", "env": []})
    return [
        pod, _defaulted(pod), dup, _defaulted(dup), _service(), _defaulted(_service()),
        _node(r), _defaulted(_node(r)), _lease(r), deploy, _defaulted(deploy), _pod(r), _defaulted(_pod(r)),
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "d"},
         "data": {"a": "1", "b": ""}, "binaryData": {}},
        {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d", "labels": {}},
         "type": "Opaque", "data": {"k": "dg=="}, "immutable": False},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}},
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}, "spec": {"finalizers": ["kubernetes"]},
         "status": {"phase": "Active"}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
         "spec": {"selector": None, "template": {}, "strategy": {}, "replicas": None}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
         "spec": {"strategy": None, "template": {"metadata": None, "spec": {}}}},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
         "spec": {"template": None}, "status": None},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"}, "spec": None},
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d", "namespace": "x"},
         "spec": {"selector": {"matchLabels": {}}, "template": {"metadata": {"creationTimestamp": None},
                                                               "spec": {"containers": []}}}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "x"},
         "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}], "restartPolicy": "Never"}},
                  "backoffLimit": 0}},
        {"apiVersion": "v1", "kind": "Event", "metadata": {"name": "e", "namespace": "x"},
         "involvedObject": {"kind": "Pod", "name": "p"}, "reason": "R", "message": "m", "count": 1,
         "firstTimestamp": T0, "lastTimestamp": None, "source": {}},
        # wrong shapes, nulls and empties
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": None, "annotations": {}},
         "spec": {"containers": None, "volumes": [], "nodeSelector": {}}, "status": None},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "spec": "not a map"},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": {"name": "c"}, "tolerations": "x", "volumes": [None, 1, {"nokey": 1}, [1]]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
         "spec": {"containers": [{"name": "c", "ports": [{"containerPort": 1.0}, {"containerPort": True},
                                                         {"containerPort": "80"}, {"containerPort": 1}]}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "x", "resourceVersion": "1",
                                                         "selfLink": "/x", "generation": 3}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": []}, "spec": {"x": 1}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": [{}]}, "spec": {}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": [{"bad": 1}]}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "managedFields": "junk"}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": None, "namespace": {"a": 1}}},
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"}, "unknownTop": {"a": [1, {"b": 2}]},
         "spec": {"unknownField": {"x": {"y": 1}}, "containers": [{"name": "c", "bogus": [1, 2]}]}},
    ]


_CR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {"type": "object", "properties": {
            "replicas": {"type": "integer"},
            "items": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["id", "zone"],
                      "items": {"type": "object", "properties": {
                          "id": {"type": "integer"}, "zone": {"type": "string", "default": "a"},
                          "conf": {"type": "object", "additionalProperties": {"type": "string"}},
                          "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}},
            "tags": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "string"}},
            "nums": {"type": "array", "x-kubernetes-list-type": "set", "items": {"type": "number"}},
            "args": {"type": "array", "items": {"type": "string"}},
            "selector": {"type": "object", "x-kubernetes-map-type": "atomic",
                         "properties": {"a": {"type": "string"}}},
            "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            "anyval": {"x-kubernetes-int-or-string": True},
            "nested": {"type": "object", "properties": {"deep": {"type": "object", "properties": {
                "list": {"type": "array", "x-kubernetes-list-type": "map", "x-kubernetes-list-map-keys": ["name"],
                         "items": {"type": "object", "properties": {"name": {"type": "string"},
                                                                    "v": {"type": "string"}}}}}}}},
        }},
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"},
                                                     "conditions": {"type": "array", "items": {"type": "object"}}}},
    },
}


def _cr(r: random.Random | None = None) -> dict[str, Any]:
    return {"apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": {"name": "w", "namespace": "d", "labels": {"a": "b"}, "uid": "u", "generation": 1},
            "spec": {"replicas": 2,
                     "items": [{"id": 1, "conf": {"a": "b"}, "extra": {"x": [1, {"y": 2}]}}, {"id": 1, "zone": "b"},
                               {"id": 2, "zone": "a"}, {"id": 2}, {"zone": "c", "id": 3.5}],
                     "tags": ["b", "a", "b", ""], "nums": [2, 1.5, 1, -0.5, 10], "args": ["x", "y"],
                     "selector": {"a": "1"}, "free": {"k": {"l": [1, 2], "m": {}}, "n": None},
                     "anyval": {"not": "scalar"},
                     "nested": {"deep": {"list": [{"name": "a", "v": "1"}, {"name": "b"}]}}},
            "status": {"ready": True, "conditions": [{"type": "A"}]}}


def _cr_objects() -> list[dict[str, Any]]:
    free = {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"},
            "spec": {"a": [1, 2], "b": {"c": {}, "d": None, "e": [{"x": 1}]}, "": 1}, "data": "x", "list": [{}]}
    return [_cr(), free, {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t"}},
            {"apiVersion": "example.com/v1", "kind": "Thing"},
            {"apiVersion": "example.com/v1", "kind": "Thing", "metadata": {"name": "t", "labels": {}}, "spec": {}}]


@pytest.mark.parametrize("i", range(len(_builtin_objects())))
@pytest.mark.parametrize("sub", ["", "status"])
def test_builtin_create(i: int, sub: str, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    obj = _builtin_objects()[i]
    _check(monkeypatch, caplog, obj, subresource=sub)
    _check(monkeypatch, caplog, obj, manager="", subresource=sub)
    _check(monkeypatch, caplog, obj, reset_fields=[])
    _check(monkeypatch, caplog, obj, reset_fields=["status", ("metadata",)])
    _check(monkeypatch, caplog, obj, reset_fields=["spec.containers", "status"], fast_path=False)  # nested


@pytest.mark.parametrize("i", range(len(_cr_objects())))
@pytest.mark.parametrize("schema", [None, _CR_SCHEMA, {"type": "object"}])
def test_custom_resource_create(i: int, schema: dict[str, Any] | None, monkeypatch: pytest.MonkeyPatch,
                                caplog: pytest.LogCaptureFixture) -> None:
    obj = _cr_objects()[i]
    _check(monkeypatch, caplog, obj, schema=schema)
    _check(monkeypatch, caplog, obj, schema=schema, reset_fields=["status"])
    _check(monkeypatch, caplog, obj, schema=schema, subresource="status", reset_fields=["spec", "metadata"])


def test_known_create_entry(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    """The fast path's output for a defaulted pod, written out (as upstream records it)."""
    pod = _defaulted({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"app": "a"}},
                      "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80}]}]}})
    out = _check(monkeypatch, caplog, pod, manager="kubectl-create")
    assert isinstance(out, list) and len(out) == 1
    entry = out[0]
    assert list(entry) == ["manager", "operation", "apiVersion", "time", "fieldsType", "fieldsV1"]
    fv1 = entry["fieldsV1"]
    assert list(fv1) == ["f:metadata", "f:spec"]
    assert fv1["f:metadata"] == {"f:labels": {".": {}, "f:app": {}}}
    c = fv1["f:spec"]["f:containers"]['k:{"name":"c"}']
    assert list(c)[0] == "."
    assert c["f:ports"] == {".": {}, 'k:{"containerPort":80,"protocol":"TCP"}': {
        ".": {}, "f:containerPort": {}, "f:protocol": {}}}


def test_nothing_owned_gives_no_entry(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    assert _check(monkeypatch, caplog, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "uid": "u"}}) is None
    assert _check(monkeypatch, caplog, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p"},
                                        "status": {"phase": "Pending"}}) is None


@pytest.mark.parametrize("seed", range(300))
def test_random_creates(seed: int, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    r = random.Random(seed)
    make = r.choice([_pod, _node, _lease, _deploy, lambda r: _big_pod(), lambda r: _service(), _cr, _cr])
    obj = make(r)
    if r.random() < 0.5 and obj["kind"] != "Widget":
        obj = _defaulted(obj)
    for _ in range(r.randint(0, 6)):
        part = r.choice(["spec", "status", "metadata", "data"])
        if part in obj:
            obj[part] = _mutate(r, obj[part])
        elif r.random() < 0.3:
            obj[part] = r.choice([{}, [], None, {"x": [1]}, "s"])
    if obj["kind"] == "Widget":
        _check(monkeypatch, caplog, obj, schema=r.choice([None, _CR_SCHEMA]),
               reset_fields=r.choice([None, ["status"]]), subresource=r.choice(["", "status"]))
    else:
        _check(monkeypatch, caplog, obj, subresource=r.choice(["", "", "status"]))


def _type_of(obj: dict[str, Any], schema: dict[str, Any] | None) -> Any:
    from pyk8s.api.patch._schema import type_for_gvk, type_for_schema

    g, _, v = obj["apiVersion"].rpartition("/")
    return type_for_schema(schema) if obj["kind"] == "Widget" else type_for_gvk(g, v, obj["kind"])


@pytest.mark.parametrize("seed", range(200))
def test_changed_fields_v1_is_compare_added_and_modified(seed: int) -> None:
    """The walk the fast path uses, on any two objects (not only the empty typed object on the
    left): the FieldsV1 of compare's added and modified sets."""
    from pyk8s.api.patch._typed import changed_map_fields_v1, compare

    r = random.Random(seed)
    make = r.choice([_pod, _node, _lease, _deploy, lambda r: _big_pod(), lambda r: _service(), _cr, _cr])
    old = make(r)
    if r.random() < 0.3:
        old = _defaulted(old) if old["kind"] != "Widget" else old
    new = copy.deepcopy(old)
    for _ in range(r.randint(1, 6)):
        part = r.choice(["spec", "status", "metadata"])
        if part in new:
            new[part] = _mutate(r, new[part])
    if r.random() < 0.5:
        old, new = new, old
    t = _type_of(old, r.choice([None, _CR_SCHEMA]))
    added, modified, _removed = compare(old, new, t)
    assert _dump(changed_map_fields_v1(old, new, t) or {}) == _dump(added.union(modified).to_fields_v1())
