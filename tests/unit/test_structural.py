"""CRD structural schemas: pruning, defaulting, validation messages, structural-ness."""

from __future__ import annotations

import copy

from pyk8s.api.schema import (
    apply_defaults,
    is_structural,
    prune,
    prune_nulls,
    pruned_paths,
    validate_structural,
)

SCHEMA = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "ratio": {"type": "number", "exclusiveMaximum": True, "maximum": 1.5},
                "name": {"type": "string", "maxLength": 5, "minLength": 2, "pattern": "^[a-z]+$"},
                "alias": {"type": "string", "enum": ["Phone", "Address", "Name"]},
                "port": {"x-kubernetes-int-or-string": True},
                "tags": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set", "maxItems": 4},
                "ports": {
                    "type": "array",
                    "x-kubernetes-list-type": "map",
                    "x-kubernetes-list-map-keys": ["name"],
                    "items": {
                        "type": "object",
                        "required": ["name"],
                        "properties": {"name": {"type": "string"}, "port": {"type": "integer", "default": 80}},
                    },
                },
                "when": {"type": "string", "format": "date-time"},
                "ip": {"type": "string", "format": "ipv4"},
                "count32": {"type": "integer", "format": "int32"},
                "labels": {"type": "object", "additionalProperties": {"type": "string"}, "maxProperties": 2},
                "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                "template": {
                    "type": "object",
                    "x-kubernetes-embedded-resource": True,
                    "x-kubernetes-preserve-unknown-fields": True,
                },
                "mode": {"type": "string", "default": "fast"},
                "maybe": {"type": "string", "nullable": True},
                "notnull": {"type": "string"},
                "withDefault": {"type": "object", "default": {"a": 1}, "properties": {"a": {"type": "integer"}}},
            },
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def _obj(**spec: object) -> dict:
    base: dict = {"size": 3}
    base.update(spec)
    return {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w"}, "spec": base}


def _msgs(obj: dict, schema: dict = SCHEMA) -> list[str]:
    return [str(e) for e in validate_structural(schema, obj)]


def test_prune_drops_unknown_fields_and_reports_paths() -> None:
    obj = _obj(extra=1, ports=[{"name": "a", "bogus": True}], config={"free": {"x": 1}}, labels={"a": "b"})
    obj["metadata"]["nmae"] = "typo"
    obj["topLevel"] = {"x": 1}
    obj["spec"]["template"] = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "t", "lables": {}}, "any": 1}
    before = copy.deepcopy(obj)
    expected = ["metadata.nmae", "spec.extra", "spec.ports[0].bogus", "topLevel", "spec.template.metadata.lables"]
    assert pruned_paths(SCHEMA, obj) == ["spec.extra", "spec.ports[0].bogus", "topLevel"]
    assert obj == before
    assert prune(SCHEMA, obj) == expected
    assert "extra" not in obj["spec"] and "topLevel" not in obj and "bogus" not in obj["spec"]["ports"][0]
    assert obj["metadata"] == {"name": "w"}
    assert obj["spec"]["config"] == {"free": {"x": 1}}  # preserved
    assert obj["spec"]["template"]["any"] == 1 and "lables" not in obj["spec"]["template"]["metadata"]
    assert obj["apiVersion"] == "example.com/v1" and obj["kind"] == "Widget"


def test_prune_without_schema_keeps_only_type_and_object_meta() -> None:
    obj = {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}, "spec": {"a": 1}}
    assert prune(None, obj) == ["spec"]
    assert obj == {"apiVersion": "a/v1", "kind": "K", "metadata": {"name": "x"}}


def test_defaults_and_nulls() -> None:
    obj = _obj(ports=[{"name": "a"}, {"name": "b", "port": 8080}], notnull=None, maybe=None, mode=None)
    prune_nulls(SCHEMA, obj)
    assert "notnull" not in obj["spec"] and obj["spec"]["maybe"] is None and obj["spec"]["mode"] is None
    apply_defaults(SCHEMA, obj)
    spec = obj["spec"]
    assert spec["mode"] == "fast"  # non-nullable null with a default gets the default
    assert spec["ports"] == [{"name": "a", "port": 80}, {"name": "b", "port": 8080}]
    assert spec["withDefault"] == {"a": 1}
    spec["withDefault"]["a"] = 2
    assert SCHEMA["properties"]["spec"]["properties"]["withDefault"]["default"] == {"a": 1}  # deep-copied
    assert "status" not in obj  # no default, nothing invented


def test_valid_object_passes() -> None:
    obj = _obj(name="abc", alias="Phone", port="http", tags=["a", "b"], when="2024-01-02T03:04:05Z", ip="10.0.0.1")
    obj["spec"]["ports"] = [{"name": "a", "port": 1}, {"name": "b"}]
    obj["spec"]["count32"] = 2**40  # int32 is not a format CRD validation checks
    assert _msgs(obj) == []


def test_type_and_value_messages_match_upstream() -> None:
    assert _msgs(_obj(size="3")) == [
        'spec.size: Invalid value: "string": spec.size in body must be of type integer: "string"'
    ]
    assert _msgs(_obj(size=20)) == ["spec.size: Invalid value: 20: spec.size in body should be less than or equal to 10"]
    assert _msgs(_obj(size=0)) == ["spec.size: Invalid value: 0: spec.size in body should be greater than or equal to 1"]
    assert _msgs(_obj(ratio=1.5)) == ["spec.ratio: Invalid value: 1.5: spec.ratio in body should be less than 1.5"]
    assert _msgs(_obj(size=2.0)) == []  # an integral float is an integer
    assert _msgs(_obj(name="toolong")) == ["spec.name: Too long: may not be more than 5 bytes"]
    assert _msgs(_obj(name="a")) == ['spec.name: Invalid value: "a": spec.name in body should be at least 2 chars long']
    assert _msgs(_obj(name="AB")) == [
        "spec.name: Invalid value: \"AB\": spec.name in body should match '^[a-z]+$'"
    ]
    assert _msgs(_obj(alias="Fax")) == ['spec.alias: Unsupported value: "Fax": supported values: "Phone", "Address", "Name"']
    assert _msgs(_obj(port=1.5)) == [
        'spec.port: Invalid value: "number": spec.port in body must be of type integer,string: "number"'
    ]
    assert _msgs(_obj(when="yesterday")) == [
        'spec.when: Invalid value: "yesterday": spec.when in body must be of type date-time: "yesterday"'
    ]
    assert _msgs(_obj(ip="999.1.1.1")) == [
        'spec.ip: Invalid value: "999.1.1.1": spec.ip in body must be of type ipv4: "999.1.1.1"'
    ]
    assert _msgs(_obj(tags=["a", "b", "c", "d", "e"])) == ["spec.tags: Too many: 5: must have at most 4 items"]
    assert _msgs(_obj(labels={"a": "x", "b": "y", "c": "z"})) == ["spec.labels: Too many: 3: must have at most 2 items"]
    assert _msgs(_obj(labels={"a": 1})) == [
        'spec.labels.a: Invalid value: "integer": spec.labels.a in body must be of type string: "integer"'
    ]
    assert _msgs(_obj(notnull=None)) == [
        'spec.notnull: Invalid value: "null": spec.notnull in body must be of type string: "null"'
    ]
    assert _msgs(_obj(maybe=None)) == []


def test_required_and_root_messages() -> None:
    obj = _obj()
    del obj["spec"]["size"]
    assert _msgs(obj) == ["spec.size: Required value"]
    root_required = {"type": "object", "required": ["spec"], "properties": {"spec": {"type": "object"}}}
    assert _msgs({"apiVersion": "a/v1", "kind": "K"}, root_required) == ["spec: Required value"]
    nested = {"type": "object", "properties": {"spec": {"type": "object", "minProperties": 1}}}
    assert _msgs({"spec": {}}, nested) == ["spec: Invalid value: 0: spec in body should have at least 1 properties"]


def test_list_type_uniqueness() -> None:
    assert _msgs(_obj(tags=["a", "b", "a", "a"])) == ['spec.tags[2]: Duplicate value: "a"']
    obj = _obj(ports=[{"name": "a"}, {"name": "b"}, {"name": "a", "port": 2}])
    assert _msgs(obj) == ['spec.ports[2]: Duplicate value: map[string]interface {}{"name":"a"}']
    multi = {
        "type": "object",
        "properties": {
            "l": {
                "type": "array",
                "x-kubernetes-list-type": "map",
                "x-kubernetes-list-map-keys": ["k", "p"],
                "items": {"type": "object", "properties": {"k": {"type": "string"}, "p": {"type": "integer"}}},
            }
        },
    }
    assert _msgs({"l": [{"k": "a", "p": 1}, {"k": "a", "p": 2}, {"k": "a", "p": 1}]}, multi) == [
        'l[2]: Duplicate value: map[string]interface {}{"k":"a", "p":1}'
    ]


def test_embedded_resource_needs_kind_and_api_version() -> None:
    obj = _obj(template={"metadata": {"name": "x"}})
    assert _msgs(obj) == [
        "spec.template.apiVersion: Required value: must not be empty",
        "spec.template.kind: Required value: must not be empty",
    ]
    obj = _obj(template={"apiVersion": "v1", "kind": "Bad_Kind"})
    (msg,) = _msgs(obj)
    assert msg.startswith('spec.template.kind: Invalid value: "Bad_Kind": may have mixed case, but should otherwise match:')


def test_combinators_and_prefix() -> None:
    schema = {
        "type": "object",
        "properties": {"v": {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]}},
    }
    assert validate_structural(schema, {"v": 3}) == []
    msgs = _msgs({"v": "long"}, schema)
    assert msgs[0] == '<nil>: Invalid value: "": "v" must validate at least one schema (anyOf)'
    prefixed = [str(e) for e in validate_structural(SCHEMA["properties"]["spec"], {"size": "x"}, "spec")]
    assert prefixed == ['spec.size: Invalid value: "string": size in body must be of type integer: "string"']


def test_structural_checks() -> None:
    assert is_structural(SCHEMA) == []
    bad = {
        "properties": {
            "spec": {"properties": {"list": {"type": "array"}, "x": {"type": "string"}}},
            "metadata": {"type": "object", "properties": {"labels": {"type": "object"}}},
        },
        "additionalProperties": {"type": "string"},
    }
    assert is_structural(bad) == [
        "additionalProperties: Forbidden: additionalProperties and properties are mutual exclusive",
        "additionalProperties: Forbidden: must not be used at the root",
        "properties[metadata]: Forbidden: must not specify anything other than name and generateName, but metadata "
        "is implicitly specified",
        "properties[spec].properties[list].items: Required value: must be specified",
        "properties[spec].type: Required value: must not be empty for specified object fields",
        "type: Required value: must not be empty at the root",
    ]
    nested = {
        "type": "object",
        "properties": {"p": {"type": "string", "anyOf": [{"type": "string", "description": "d"}]}},
    }
    assert is_structural(nested, "spec.versions[0].schema.openAPIV3Schema") == [
        "spec.versions[0].schema.openAPIV3Schema.properties[p].anyOf[0].description: Forbidden: must be empty to be "
        "structural",
        "spec.versions[0].schema.openAPIV3Schema.properties[p].anyOf[0].type: Forbidden: must be empty to be structural",
    ]
    int_or_string = {
        "type": "object",
        "properties": {"p": {"x-kubernetes-int-or-string": True, "anyOf": [{"type": "integer"}, {"type": "string"}]}},
    }
    assert is_structural(int_or_string) == []
