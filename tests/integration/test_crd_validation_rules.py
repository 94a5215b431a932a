"""CRD `x-kubernetes-validations` through kubectl and the official client: rules refused at
CRD create (syntax, cost, reason, fieldPath), rules enforced on custom resources with
upstream's messages (message, messageExpression, reason/fieldPath, list items, transition
rules on update and on the status subresource), and rules that try to burn the server."""

from __future__ import annotations

import json
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.cluster import raw_request

pytestmark = pytest.mark.xdist_group("crd-validation-rules")

SPEC_RULES = [
    {"rule": "self.minReplicas <= self.replicas", "message": "minReplicas must not exceed replicas"},
    {"rule": "self.replicas <= 50", "messageExpression": "'replicas ' + string(self.replicas) + ' is above 50'",
     "reason": "FieldValueForbidden", "fieldPath": ".replicas"},
    {"rule": "!has(self.mode) || self.mode != 'broken'", "messageExpression": "'mode ' + self.mode.substring(50)",
     "message": "mode must not be broken"},
]


def _crd(name: str = "gadgets", kind: str = "Gadget", spec_rules: list | None = None, extra: dict | None = None) -> dict:
    spec_props: dict = {
        "replicas": {"type": "integer"}, "minReplicas": {"type": "integer"}, "mode": {"type": "string"},
        "owner": {"type": "string", "x-kubernetes-validations": [
            {"rule": "self == oldSelf", "message": "owner is immutable"}]},
        "ports": {"type": "array", "maxItems": 16, "items": {"type": "integer", "x-kubernetes-validations": [
            {"rule": "self > 0 && self < 65536", "message": "port out of range"}]}},
        "servers": {"type": "array", "maxItems": 8, "items": {"type": "string", "maxLength": 253,
                                                               "x-kubernetes-validations": [{"rule": "isURL(self)"}]}},
    }
    spec_props.update(extra or {})
    return {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": f"{name}.rules.example.com"},
        "spec": {"group": "rules.example.com", "scope": "Namespaced",
                 "names": {"plural": name, "singular": kind.lower(), "kind": kind},
                 "versions": [{"name": "v1", "served": True, "storage": True, "subresources": {"status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                   "spec": {"type": "object", "properties": spec_props,
                                            "x-kubernetes-validations": SPEC_RULES if spec_rules is None else spec_rules},
                                   "status": {"type": "object", "properties": {"phase": {"type": "string"}},
                                              "x-kubernetes-validations": [
                                                  {"rule": "self.phase != 'Bad'", "message": "phase is Bad"}]}}}}}]},
    }


def _apply_crd(cluster, crd: dict) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd))
    deadline = time.time() + 15
    path = f"/apis/rules.example.com/v1/namespaces/default/{crd['spec']['names']['plural']}"
    while raw_request(cluster, "GET", path).status != 200:
        assert time.time() < deadline, "CRD not served"
        time.sleep(0.1)


def _gadget(name: str, **spec) -> dict:
    return {"apiVersion": "rules.example.com/v1", "kind": "Gadget", "metadata": {"name": name}, "spec": spec}


@pytest.fixture(scope="module")
def gadgets(cluster):
    _apply_crd(cluster, _crd())
    return cluster


def _kubectl_error(cluster, obj: dict, verb: str = "create") -> str:
    r = cluster.kubectl(verb, "-f", "-", input=json.dumps(obj), check=False)
    assert r.returncode != 0, r.stdout
    return r.stderr.strip()


def test_rules_on_create_through_kubectl(gadgets):
    assert _kubectl_error(gadgets, _gadget("g1", replicas=1, minReplicas=3)) == (
        'The Gadget "g1" is invalid: spec: Invalid value: "object": minReplicas must not exceed replicas')
    # messageExpression, reason and fieldPath
    assert _kubectl_error(gadgets, _gadget("g2", replicas=60, minReplicas=1)) == (
        'The Gadget "g2" is invalid: spec.replicas: Forbidden: replicas 60 is above 50')
    # a failing messageExpression falls back to the message
    assert _kubectl_error(gadgets, _gadget("g3", replicas=1, minReplicas=1, mode="broken")) == (
        'The Gadget "g3" is invalid: spec: Invalid value: "object": mode must not be broken')
    # rules on list items, each item at its own path; no message: "failed rule: ..."
    err = _kubectl_error(gadgets, _gadget("g4", replicas=1, minReplicas=1, ports=[80, 0, 70000],
                                          servers=["https://a.example.com/", "not a url"]))
    assert err.startswith('The Gadget "g4" is invalid: \n')
    assert '* spec.ports[1]: Invalid value: "integer": port out of range' in err
    assert '* spec.ports[2]: Invalid value: "integer": port out of range' in err
    assert '* spec.servers[1]: Invalid value: "string": failed rule: isURL(self)' in err
    assert "spec.ports[0]" not in err and "spec.servers[0]" not in err
    gadgets.kubectl("create", "-f", "-", input=json.dumps(_gadget("ok", replicas=3, minReplicas=1, owner="alice",
                                                                     ports=[80, 443])))


def test_transition_rule_only_on_update(gadgets):
    gadgets.kubectl("create", "-f", "-", input=json.dumps(_gadget("imm", replicas=1, minReplicas=1, owner="alice")))
    err = _kubectl_error(gadgets, _gadget("imm", replicas=1, minReplicas=1, owner="bob"), verb="replace")
    assert err == 'The Gadget "imm" is invalid: spec.owner: Invalid value: "string": owner is immutable'
    # the same value, or other fields changing, is fine
    gadgets.kubectl("patch", "gadget", "imm", "--type=merge", "-p", '{"spec":{"replicas":2}}')
    # a field that had no old value is not a transition
    gadgets.kubectl("create", "-f", "-", input=json.dumps(_gadget("late", replicas=1, minReplicas=1)))
    gadgets.kubectl("patch", "gadget", "late", "--type=merge", "-p", '{"spec":{"owner":"carol"}}')


def test_rules_through_the_python_client_and_status(gadgets):
    api = client.CustomObjectsApi(gadgets.api_client())
    with pytest.raises(ApiException) as ei:
        api.create_namespaced_custom_object("rules.example.com", "v1", "default", "gadgets",
                                            _gadget("py1", replicas=2, minReplicas=5))
    assert ei.value.status == 422
    body = json.loads(ei.value.body)
    assert body["reason"] == "Invalid" and body["code"] == 422
    assert body["message"].endswith('"py1" is invalid: spec: Invalid value: "object": '
                                    'minReplicas must not exceed replicas')
    assert body["details"]["causes"] == [{"reason": "FieldValueInvalid", "field": "spec",
                                          "message": 'Invalid value: "object": minReplicas must not exceed replicas'}]
    api.create_namespaced_custom_object("rules.example.com", "v1", "default", "gadgets",
                                        _gadget("py2", replicas=2, minReplicas=1))
    # status subresource updates run the status rules
    with pytest.raises(ApiException) as ei:
        api.patch_namespaced_custom_object_status("rules.example.com", "v1", "default", "gadgets", "py2",
                                                  {"status": {"phase": "Bad"}})
    assert ei.value.status == 422
    assert 'status: Invalid value: "object": phase is Bad' in json.loads(ei.value.body)["message"]
    api.patch_namespaced_custom_object_status("rules.example.com", "v1", "default", "gadgets", "py2",
                                              {"status": {"phase": "Good"}})


def test_refused_crds(cluster):
    base = "spec.validation.openAPIV3Schema.properties[spec].x-kubernetes-validations"
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("syntaxes", "Syntax", [{"rule": "self.replicas >"}])),
                        check=False)
    assert r.returncode != 0
    assert (f"{base}[0].rule: Invalid value: apiextensions.ValidationRule{{Rule:\"self.replicas >\", Message:\"\", "
            "MessageExpression:\"\", Reason:(*apiextensions.FieldValueErrorReason)(nil), FieldPath:\"\", "
            "OptionalOldSelf:(*bool)(nil)}: compilation failed: ERROR: <input>:1:") in r.stderr
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("typos", "Typo", [{"rule": "self.replicaz > 1"}])),
                        check=False)
    assert "compilation failed: ERROR: <input>:1:6: undefined field 'replicaz'" in r.stderr
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("reasons", "Reason", [
        {"rule": "true", "reason": "FieldValueWrong"}, {"rule": "true", "fieldPath": ".nope"},
        {"rule": "true", "messageExpression": "self.replicas +"}])), check=False)
    assert (f'{base}[0].reason: Unsupported value: "FieldValueWrong": supported values: "FieldValueDuplicate", '
            '"FieldValueForbidden", "FieldValueInvalid", "FieldValueRequired"') in r.stderr
    assert f'{base}[1].fieldPath: Invalid value: ".nope": fieldPath must be a valid path' in r.stderr
    # nested loops over unbounded lists: the estimated cost is refused before anything runs
    costly = {"matrix": {"type": "array", "items": {"type": "array", "items": {"type": "string"}}}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("costlies", "Costly", [
        {"rule": "self.matrix.all(row, row.all(c, self.matrix.all(r2, r2.exists(d, d == c))))"}], costly)),
        check=False)
    assert r.returncode != 0
    assert (f"{base}[0].rule: Forbidden: estimated rule cost exceeds budget by factor of more than 100x "
            "(try simplifying the rule, or adding maxItems, maxProperties, and maxLength where arrays, maps, "
            "and strings are declared)") in r.stderr
    assert ("spec.validation.openAPIV3Schema: Forbidden: x-kubernetes-validations estimated rule cost total for "
            "entire OpenAPIv3 schema exceeds budget by factor of more than 100x") in r.stderr
    for name in ("syntaxes", "typos", "reasons", "costlies"):
        assert raw_request(cluster, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/"
                                           f"{name}.rules.example.com").status == 404


def test_runtime_cost_limit_refuses_burning_objects(cluster):
    # bounded enough to be accepted, but an object near the bounds costs more than a call may
    burn = {"words": {"type": "array", "maxItems": 1000, "items": {"type": "string", "maxLength": 64}}}
    _apply_crd(cluster, _crd("burners", "Burner", [
        {"rule": "self.words.all(a, self.words.exists_one(b, b == a))", "message": "words must be unique"}], burn))
    obj = {"apiVersion": "rules.example.com/v1", "kind": "Burner", "metadata": {"name": "b1"},
           "spec": {"words": [f"w{i}" for i in range(1000)]}}
    t0 = time.monotonic()
    r = cluster.kubectl("create", "-f", "-", input=json.dumps(obj), check=False)
    assert r.returncode != 0
    assert ('The Burner "b1" is invalid: spec: Invalid value: "object": \'operation cancelled: actual cost limit '
            "exceeded': call cost exceeds limit for rule: words must be unique") in r.stderr
    assert time.monotonic() - t0 < 10
    small = dict(obj, metadata={"name": "b2"}, spec={"words": ["a", "b", "c"]})
    cluster.kubectl("create", "-f", "-", input=json.dumps(small))
    # the server still answers promptly
    assert raw_request(cluster, "GET", "/readyz").status == 200


def _doodad_crd() -> dict:
    crd = _crd("doodads", "Doodad", [
        {"rule": "!oldSelf.hasValue() || self.level >= oldSelf.value().level", "optionalOldSelf": True, "message": "level may only grow"},
        {"rule": "self.a == self.b", "message": "a must equal b"},
    ], {
        "level": {"type": "integer"}, "a": {"type": "string"}, "b": {"type": "string"},
        "limits": {"type": "object", "maxProperties": 8, "additionalProperties": {
            "type": "string", "maxLength": 32, "x-kubernetes-validations": [
                {"rule": "isQuantity(self) && quantity(self).isLessThan(quantity('10Gi'))",
                 "message": "each limit must be a quantity under 10Gi", "reason": "FieldValueRequired"}]}},
    })
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    schema["x-kubernetes-validations"] = [{"rule": "self.metadata.name.startsWith('d-')"}]
    return crd


def test_root_rules_maps_and_optional_old_self(cluster):
    _apply_crd(cluster, _doodad_crd())

    def doodad(name: str, **spec) -> dict:
        return {"apiVersion": "rules.example.com/v1", "kind": "Doodad", "metadata": {"name": name}, "spec": spec}

    # a rule on the root sees metadata.name; its errors have no field path
    assert _kubectl_error(cluster, doodad("x1", level=1, a="q", b="q")) == (
        'The Doodad "x1" is invalid: <nil>: Invalid value: "object": failed rule: '
        "self.metadata.name.startsWith('d-')")
    # a runtime error names the rule by its message
    assert _kubectl_error(cluster, doodad("d-nob", level=1, a="q")) == (
        'The Doodad "d-nob" is invalid: spec: Invalid value: "object": no such key: b evaluating rule: '
        "a must equal b")
    # rules on map values, with reason FieldValueRequired, at each key's path
    assert _kubectl_error(cluster, doodad("d-map", level=1, a="q", b="q", limits={"cpu": "2", "mem": "20Gi"})) == (
        'The Doodad "d-map" is invalid: spec.limits[mem]: Required value: each limit must be a quantity under 10Gi')
    # optionalOldSelf: the rule runs on create too (oldSelf is optional.none()) and on update
    cluster.kubectl("create", "-f", "-", input=json.dumps(doodad("d-1", level=3, a="q", b="q")))
    assert _kubectl_error(cluster, doodad("d-1", level=2, a="q", b="q"), verb="replace") == (
        'The Doodad "d-1" is invalid: spec: Invalid value: "object": level may only grow')
    cluster.kubectl("replace", "-f", "-", input=json.dumps(doodad("d-1", level=4, a="q", b="q")))


def test_old_self_refused_where_it_cannot_correlate(cluster):
    items = {"names": {"type": "array", "maxItems": 4, "items": {"type": "string", "maxLength": 8,
                                                                  "x-kubernetes-validations": [
                                                                      {"rule": "self == oldSelf"}]}}}
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("uncorrs", "Uncorr", [], items)), check=False)
    assert r.returncode != 0
    assert ("spec.validation.openAPIV3Schema.properties[spec].properties[names].items.x-kubernetes-validations[0]"
            '.rule: Invalid value: "self == oldSelf": oldSelf cannot be used on the uncorrelatable portion of the '
            "schema within spec.validation.openAPIV3Schema.properties[spec].properties[names].items") in r.stderr
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(_crd("optionals", "Optional", [
        {"rule": "self.replicas > 0", "optionalOldSelf": True}])), check=False)
    assert ("x-kubernetes-validations[0].optionalOldSelf: Invalid value: true: may not be set if oldSelf is not "
            "used in rule") in r.stderr


def test_unchanged_values_are_ratcheted(cluster):
    crd = _crd("ratchets", "Ratchet", [])
    _apply_crd(cluster, crd)
    obj = {"apiVersion": "rules.example.com/v1", "kind": "Ratchet", "metadata": {"name": "r1"},
           "spec": {"replicas": 10, "mode": "a"}}
    cluster.kubectl("create", "-f", "-", input=json.dumps(obj))
    # a rule added later that the stored object breaks
    crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]["properties"]["replicas"][
        "x-kubernetes-validations"] = [{"rule": "self <= 5", "message": "at most 5"}]
    cluster.kubectl("apply", "-f", "-", input=json.dumps(crd))
    deadline = time.time() + 10
    while True:  # until the server enforces the new rule
        r = cluster.kubectl("create", "-f", "-", input=json.dumps(dict(obj, metadata={"name": "probe"})), check=False)
        if r.returncode != 0 or time.time() > deadline:
            break
        cluster.kubectl("delete", "ratchet", "probe")
        time.sleep(0.2)
    assert 'spec.replicas: Invalid value: "integer": at most 5' in r.stderr
    # other fields may change while replicas stays as it was
    cluster.kubectl("patch", "ratchet", "r1", "--type=merge", "-p", '{"spec":{"mode":"b"}}')
    r = cluster.kubectl("patch", "ratchet", "r1", "--type=merge", "-p", '{"spec":{"replicas":11}}', check=False)
    assert r.returncode != 0
    assert 'The Ratchet "r1" is invalid: spec.replicas: Invalid value: "integer": at most 5' in r.stderr
