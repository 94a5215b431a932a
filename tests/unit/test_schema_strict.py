"""Strict decoding of built-in kinds: unknown fields and wrong JSON types, upstream's texts."""

from __future__ import annotations

import copy

import yaml

from pyk8s.api.schema import (
    cannot_handle_message,
    decode_error,
    object_meta_unknown_fields,
    strict_decoding_message,
    type_errors,
    unknown_fields,
    unknown_fields_structural,
)
from pyk8s.api.schema._gocompat import base64_error, go_float, parse_rfc3339_error, quantity_error
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

TYPO_POD = str(SHARED_MANIFESTS / "typo-pod.yaml")


def _pod(**spec_extra: object) -> dict:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "labels": {"app": "x"}},
        "spec": {"containers": [{"name": "c", "image": "nginx", "ports": [{"containerPort": 80}]}]},
    }
    pod["spec"].update(spec_extra)
    return pod


def test_typo_pod_matches_upstream_transcript() -> None:
    with open(TYPO_POD) as f:
        pod = yaml.safe_load(f)
    paths = unknown_fields("", "v1", "Pod", pod)
    assert paths == ["spec.containers[0].ports[0].containnerPort"]
    assert strict_decoding_message("Pod", "v1", paths) == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: '
        'unknown field "spec.containers[0].ports[0].containnerPort"'
    )
    assert decode_error("", "v1", "Pod", pod) is None


def test_valid_objects_have_no_unknown_fields() -> None:
    assert unknown_fields("", "v1", "Pod", _pod()) == []
    deploy = {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "d", "annotations": {"a": "b"}},
        "spec": {
            "replicas": 2,
            "selector": {"matchLabels": {"app": "d"}},
            "strategy": {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "25%", "maxUnavailable": 1}},
            "template": {
                "metadata": {"labels": {"app": "d"}},
                "spec": {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "1"}}}]},
            },
        },
    }
    assert unknown_fields("apps", "v1", "Deployment", deploy) == []
    assert decode_error("apps", "v1", "Deployment", deploy) is None


def test_nested_and_top_level_unknown_fields_in_document_order() -> None:
    pod = _pod()
    pod["foo"] = 1
    pod["metadata"]["bogus"] = True
    pod["spec"]["containers"].append({"name": "d", "image": "i", "livenessProbe": {"httpGet": {"port": 80, "pth": "/"}}})
    pod["spec"]["initContainers"] = [{"name": "i", "image": "i", "imagePullPolice": "Always"}]
    assert unknown_fields("", "v1", "Pod", pod) == [
        "metadata.bogus",
        "spec.containers[1].livenessProbe.httpGet.pth",
        "spec.initContainers[0].imagePullPolice",
        "foo",
    ]


def test_deployment_template_paths() -> None:
    deploy = {"spec": {"template": {"spec": {"containers": [{"name": "c", "images": "x"}]}}}}
    assert unknown_fields("apps", "v1", "Deployment", deploy) == ["spec.template.spec.containers[0].images"]


def test_free_form_fields_report_nothing() -> None:
    # RawExtension (ControllerRevision.data), FieldsV1 (managedFields), JSON (CRD defaults) are opaque
    rev = {"apiVersion": "apps/v1", "kind": "ControllerRevision", "revision": 1, "data": {"anything": {"x": 1}}}
    assert unknown_fields("apps", "v1", "ControllerRevision", rev) == []
    pod = _pod()
    pod["metadata"]["managedFields"] = [{"manager": "m", "fieldsV1": {"f:spec": {"f:x": {}}}, "bogus": 1}]
    assert unknown_fields("", "v1", "Pod", pod) == ["metadata.managedFields[0].bogus"]
    crd = {
        "spec": {
            "versions": [
                {
                    "name": "v1",
                    "schema": {
                        "openAPIV3Schema": {
                            "type": "object",
                            "x-kubernetes-preserve-unknown-fields": True,
                            "properties": {"a": {"type": "string", "default": {"any": "thing"}, "typo": 1}},
                        }
                    },
                }
            ]
        }
    }
    assert unknown_fields("apiextensions.k8s.io", "v1", "CustomResourceDefinition", crd) == [
        "spec.versions[0].schema.openAPIV3Schema.properties.a.typo"
    ]


def test_unknown_kind_reports_nothing() -> None:
    assert unknown_fields("example.com", "v1", "Widget", {"x": 1}) == []
    assert type_errors("example.com", "v1", "Widget", {"x": 1}) == []


def test_type_errors_read_like_go() -> None:
    pod = _pod()
    pod["spec"]["containers"][0]["ports"][0]["containerPort"] = "80"
    assert type_errors("", "v1", "Pod", pod) == [
        'Pod in version "v1" cannot be handled as a Pod: json: cannot unmarshal string into Go struct field '
        "ContainerPort.spec.containers.ports.containerPort of type int32"
    ]
    assert decode_error("apps", "v1", "Deployment", {"spec": {"replicas": "3"}}) == (
        "json: cannot unmarshal string into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    assert decode_error("apps", "v1", "Deployment", {"spec": {"replicas": 1.5}}) == (
        "json: cannot unmarshal number 1.5 into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    assert decode_error("apps", "v1", "Deployment", {"spec": {"replicas": 2**31}}) == (
        "json: cannot unmarshal number 2147483648 into Go struct field DeploymentSpec.spec.replicas of type int32"
    )
    assert decode_error("", "v1", "Pod", {"spec": "x"}) == (
        "json: cannot unmarshal string into Go struct field Pod.spec of type v1.PodSpec"
    )
    assert decode_error("", "v1", "Pod", {"spec": {"containers": {"name": "c"}}}) == (
        "json: cannot unmarshal object into Go struct field PodSpec.spec.containers of type []v1.Container"
    )
    assert decode_error("", "v1", "Pod", {"metadata": {"labels": {"a": 1}}}) == (
        "json: cannot unmarshal number into Go struct field ObjectMeta.metadata.labels of type string"
    )
    assert decode_error("", "v1", "Pod", {"spec": {"hostNetwork": "true"}}) == (
        "json: cannot unmarshal string into Go struct field PodSpec.spec.hostNetwork of type bool"
    )
    # nulls are always accepted
    assert decode_error("", "v1", "Pod", {"spec": {"containers": None, "hostNetwork": None}}) is None


def test_custom_unmarshalers() -> None:
    bad_cpu = _pod()
    bad_cpu["spec"]["containers"][0]["resources"] = {"limits": {"cpu": "1 core"}}
    assert decode_error("", "v1", "Pod", bad_cpu) == (
        "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )
    ok = _pod()
    ok["spec"]["containers"][0]["resources"] = {"limits": {"cpu": 0.5, "memory": "128Mi"}}
    assert decode_error("", "v1", "Pod", ok) is None
    assert decode_error("apps", "v1", "Deployment", {"spec": {"strategy": {"rollingUpdate": {"maxSurge": True}}}}) == (
        "json: cannot unmarshal bool into Go struct field RollingUpdateDeployment.spec.strategy.rollingUpdate.maxSurge "
        "of type int32"
    )
    assert decode_error("", "v1", "Pod", {"metadata": {"creationTimestamp": "yesterday"}}) == (
        'parsing time "yesterday" as "2006-01-02T15:04:05Z07:00": cannot parse "yesterday" as "2006"'
    )
    assert decode_error("", "v1", "Secret", {"data": {"k": "aGVsbG8"}}) == "illegal base64 data at input byte 4"
    assert decode_error("", "v1", "Secret", {"data": {"k": "aGVsbG8="}}) is None


def test_unmarshaler_error_wins_over_earlier_type_error() -> None:
    # Go saves the first plain type error but an unmarshaler's error aborts decoding
    obj = {"spec": {"replicas": "3", "strategy": {"rollingUpdate": {"maxSurge": [1]}}}}
    first = decode_error("apps", "v1", "Deployment", obj)
    assert first is not None and "maxSurge of type int32" in first and "array" in first
    errs = type_errors("apps", "v1", "Deployment", obj)
    assert errs[0].endswith(first) and "DeploymentSpec.spec.replicas" in errs[1]


def test_message_helpers() -> None:
    assert cannot_handle_message("Pod", "v1", "boom") == 'Pod in version "v1" cannot be handled as a Pod: boom'
    assert strict_decoding_message("Pod", "v1", ["a", "b.c"]) == (
        'Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field "a", '
        'unknown field "b.c"'
    )


def test_object_meta_unknown_fields_can_drop() -> None:
    meta = {"name": "x", "foo": 1, "ownerReferences": [{"name": "o", "bar": 2}]}
    assert object_meta_unknown_fields(meta, drop=True) == ["metadata.foo", "metadata.ownerReferences[0].bar"]
    assert meta == {"name": "x", "ownerReferences": [{"name": "o"}]}


def test_custom_resource_unknown_fields_preserve_unknown() -> None:
    schema = {
        "type": "object",
        "properties": {
            "spec": {
                "type": "object",
                "properties": {
                    "size": {"type": "integer"},
                    "config": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                    "items": {"type": "array", "items": {"type": "object", "properties": {"a": {"type": "string"}}}},
                },
            }
        },
    }
    obj = {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": "w", "nme": "typo"},
        "spec": {"size": 1, "sise": 2, "config": {"free": {"form": True}}, "items": [{"a": "x", "b": 1}]},
        "status": {},
    }
    before = copy.deepcopy(obj)
    assert unknown_fields_structural(schema, obj) == [
        "metadata.nme",
        "spec.items[0].b",
        "spec.sise",
        "status",
    ]
    assert obj == before  # not modified


def test_gocompat_helpers() -> None:
    assert quantity_error("100m") is None and quantity_error("1.5Gi") is None and quantity_error("1e3") is None
    assert quantity_error("1mm") == "unable to parse quantity's suffix"
    assert parse_rfc3339_error("2024-01-02T03:04:05Z") is None
    assert parse_rfc3339_error("2024-01-02T03:04:05.5+01:00") is None
    assert parse_rfc3339_error("2024-13-02T03:04:05Z") == 'parsing time "2024-13-02T03:04:05Z": month out of range'
    assert base64_error("YQ==") is None and base64_error("Y") == "illegal base64 data at input byte 0"
    assert [go_float(x) for x in (1.0, 1e6, 1.5, 1e-5)] == ["1", "1e+06", "1.5", "1e-05"]




def test_check_fields_is_type_errors_and_unknown_fields_in_one_walk():
    from pyk8s.api.schema.strict import check_fields, type_errors, unknown_fields

    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "labels": {"a": "b"}, "bogus": 1},
           "spec": {"containers": [{"name": "c", "image": "i", "ports": [{"containerPort": 80, "nope": 1}],
                                    "resources": {"limits": {"cpu": "1"}}}],
                    "volumes": [{"name": "v", "projected": {"sources": [{"configMap": {"name": "x", "extra": {}}}]}}],
                    "nodeSelector": {"k": "v"}, "what": None}}
    te, unknown = check_fields("", "v1", "Pod", pod)
    assert te == type_errors("", "v1", "Pod", pod) == []
    assert unknown == unknown_fields("", "v1", "Pod", pod) == [
        "metadata.bogus", "spec.containers[0].ports[0].nope", "spec.volumes[0].projected.sources[0].configMap.extra",
        "spec.what"]
    bad = {"apiVersion": "v1", "kind": "Pod", "spec": {"containers": [{"name": 1}]}}
    assert check_fields("", "v1", "Pod", bad)[0] == type_errors("", "v1", "Pod", bad) != []
    assert check_fields("", "v1", "NoSuchKind", pod) == ([], [])
