"""/openapi/v2 and /openapi/v3 documents: shape, operations kubectl relies on, explain output."""

from __future__ import annotations

import hashlib

import orjson
import pytest

from pyk8s import KUBERNETES_VERSION
from pyk8s.api.resources import Registry, Resource, builtin_registry
from pyk8s.api.schema.openapi import (
    openapi_v2,
    openapi_v2_etag,
    openapi_v3_doc,
    openapi_v3_etag,
    openapi_v3_index,
)

from ._explain import explain

POD_ITEM = "/api/v1/namespaces/{namespace}/pods/{name}"


@pytest.fixture(scope="module")
def registry() -> Registry:
    return builtin_registry()


@pytest.fixture(scope="module")
def core_v3(registry: Registry) -> dict:
    data = openapi_v3_doc(registry, "api/v1")
    assert data is not None
    return orjson.loads(data)


@pytest.fixture(scope="module")
def apps_v3(registry: Registry) -> dict:
    data = openapi_v3_doc(registry, "apis/apps/v1")
    assert data is not None
    return orjson.loads(data)


def _refs(node: object, out: set[str]) -> None:
    if isinstance(node, dict):
        for k, v in node.items():
            if k == "$ref" and isinstance(v, str):  # JSONSchemaProps has a *property* named $ref
                out.add(v)
            else:
                _refs(v, out)
    elif isinstance(node, list):
        for x in node:
            _refs(x, out)


def test_v3_index_lists_group_versions(registry: Registry) -> None:
    idx = openapi_v3_index(registry)
    assert {"api/v1", "apis/apps/v1", "apis/batch/v1", "apis/autoscaling/v2", "apis/autoscaling/v1"} <= set(
        idx["paths"]
    )
    url = idx["paths"]["api/v1"]["serverRelativeURL"]
    assert url.startswith("/openapi/v3/api/v1?hash=")
    data = openapi_v3_doc(registry, "api/v1")
    assert data is not None
    digest = hashlib.sha512(data).hexdigest().upper()
    assert url.endswith(digest) and openapi_v3_etag(registry, "api/v1") == f'"{digest}"'
    assert openapi_v3_doc(registry, "/openapi/v3/apis/apps/v1?hash=x") == openapi_v3_doc(registry, "apis/apps/v1")
    assert openapi_v3_doc(registry, "apis/nope/v1") is None


def test_v3_documents_are_well_formed(registry: Registry) -> None:
    for path in openapi_v3_index(registry)["paths"]:
        doc = orjson.loads(openapi_v3_doc(registry, path))  # type: ignore[arg-type]
        assert doc["openapi"].startswith("3.0")
        assert doc["info"] == {"title": "Kubernetes", "version": KUBERNETES_VERSION}
        schemas = doc["components"]["schemas"]
        refs: set[str] = set()
        _refs(doc, refs)
        for ref in refs:
            assert ref.startswith("#/components/schemas/"), ref
            assert ref.rsplit("/", 1)[-1] in schemas, f"{path}: dangling {ref}"
        for name, schema in schemas.items():
            t = schema.get("type")
            assert t is None or isinstance(t, str), name
        for p, item in doc["paths"].items():
            assert p.startswith("/api/v1/" if path == "api/v1" else f"/{path}/"), p
            for method, op in item.items():
                if method == "parameters":
                    continue
                assert op["operationId"] and "responses" in op


def test_pod_patch_operation_for_kubectl_apply(core_v3: dict) -> None:
    patch = core_v3["paths"][POD_ITEM]["patch"]
    assert patch["operationId"] == "patchCoreV1NamespacedPod"
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert patch["x-kubernetes-action"] == "patch"
    params = {p["name"]: p for p in patch["parameters"]}
    assert params["fieldValidation"]["in"] == "query"
    assert {"dryRun", "fieldManager", "force"} <= set(params)
    assert set(patch["requestBody"]["content"]) == {
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    }
    item = core_v3["paths"][POD_ITEM]
    assert {"get", "put", "patch", "delete", "parameters"} == set(item)
    assert item["get"]["operationId"] == "readCoreV1NamespacedPod"
    coll = core_v3["paths"]["/api/v1/namespaces/{namespace}/pods"]
    assert coll["post"]["operationId"] == "createCoreV1NamespacedPod"
    assert coll["delete"]["x-kubernetes-action"] == "deletecollection"
    assert core_v3["paths"]["/api/v1/pods"]["get"]["operationId"] == "listCoreV1PodForAllNamespaces"
    assert core_v3["paths"]["/api/v1/watch/namespaces/{namespace}/pods/{name}"]["get"]["x-kubernetes-action"] == "watch"
    status = core_v3["paths"][POD_ITEM + "/status"]["patch"]
    assert status["operationId"] == "patchCoreV1NamespacedPodStatus"
    assert any(p["name"] == "fieldValidation" for p in status["parameters"])


def test_subresources_and_verbs(core_v3: dict, apps_v3: dict) -> None:
    scale = apps_v3["paths"]["/apis/apps/v1/namespaces/{namespace}/deployments/{name}/scale"]
    assert scale["get"]["x-kubernetes-group-version-kind"] == {"group": "autoscaling", "kind": "Scale", "version": "v1"}
    assert "io.k8s.api.autoscaling.v1.Scale" in apps_v3["components"]["schemas"]
    eviction = core_v3["paths"][POD_ITEM + "/eviction"]
    assert eviction["post"]["operationId"] == "createCoreV1NamespacedPodEviction"
    assert core_v3["paths"][POD_ITEM + "/exec"]["get"]["x-kubernetes-action"] == "connect"
    # bindings are create-only, namespaces have no deletecollection
    assert set(core_v3["paths"]["/api/v1/namespaces/{namespace}/bindings"]) == {"post", "parameters"}
    assert "delete" not in core_v3["paths"]["/api/v1/namespaces"]
    assert core_v3["paths"]["/api/v1/namespaces/{name}/finalize"]["put"]["operationId"] == "replaceCoreV1NamespaceFinalize"


def test_schemas_carry_patch_metadata_and_v3_refs(core_v3: dict) -> None:
    schemas = core_v3["components"]["schemas"]
    containers = schemas["io.k8s.api.core.v1.PodSpec"]["properties"]["containers"]
    assert containers["x-kubernetes-patch-merge-key"] == "name"
    assert containers["x-kubernetes-patch-strategy"] == "merge"
    assert containers["items"] == {"$ref": "#/components/schemas/io.k8s.api.core.v1.Container"}
    probe = schemas["io.k8s.api.core.v1.Container"]["properties"]["livenessProbe"]
    assert probe["allOf"] == [{"$ref": "#/components/schemas/io.k8s.api.core.v1.Probe"}]
    assert probe["description"].startswith("Periodic probe of container liveness")
    pod = schemas["io.k8s.api.core.v1.Pod"]
    assert pod["x-kubernetes-group-version-kind"] == [{"group": "", "kind": "Pod", "version": "v1"}]
    assert "enum" not in pod["properties"]["kind"] and pod["properties"]["kind"]["type"] == "string"
    assert schemas["io.k8s.apimachinery.pkg.api.resource.Quantity"]["oneOf"] == [{"type": "string"}, {"type": "number"}]
    ios = schemas["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]
    assert ios["format"] == "int-or-string" and ios["description"].startswith("IntOrString is a type")


def test_explain_pod_container_liveness_probe_matches_upstream(core_v3: dict) -> None:
    out = explain(core_v3, "", "v1", "pods", ["spec", "containers", "livenessProbe"]).replace("\t", "    ")
    expected_head = """KIND:       Pod
VERSION:    v1

FIELD: livenessProbe <Probe>


DESCRIPTION:
    Periodic probe of container liveness. Container will be restarted if the
    probe fails. Cannot be updated. More info:
    https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#container-probes
    Probe describes a health check to be performed against a container to
    determine whether it is alive or ready to receive traffic.
<INDENTED-EMPTY-LINE>
FIELDS:
  exec    <ExecAction>
    Exec specifies a command to execute in the container.

  failureThreshold    <integer>
    Minimum consecutive failures for the probe to be considered failed after
    having succeeded. Defaults to 3. Minimum value is 1.

  grpc    <GRPCAction>
    GRPC specifies a GRPC HealthCheckRequest.

  httpGet    <HTTPGetAction>
    HTTPGet specifies an HTTP GET request to perform.

  initialDelaySeconds    <integer>
    Number of seconds after the container has started before liveness probes are
    initiated. More info:
    https://kubernetes.io/docs/concepts/workloads/pods/pod-lifecycle#container-probes

  periodSeconds    <integer>
    How often (in seconds) to perform the probe. Default to 10 seconds. Minimum
    value is 1.

  successThreshold    <integer>
    Minimum consecutive successes for the probe to be considered successful
    after having failed. Defaults to 1. Must be 1 for liveness and startup.
    Minimum value is 1.
""".replace("<INDENTED-EMPTY-LINE>", "    ")  # kubectl indents the description's trailing newline
    assert out.startswith(expected_head), out[:2000]


def test_explain_deployment_recursive_types(apps_v3: dict) -> None:
    out = explain(apps_v3, "apps", "v1", "deployments", [], recursive=True)
    assert out.startswith("GROUP:      apps\nKIND:       Deployment\nVERSION:    v1\n\nDESCRIPTION:\n")
    lines = out.splitlines()
    for expected in [
        "  metadata\t<ObjectMeta>",
        "    creationTimestamp\t<string>",
        "    labels\t<map[string]string>",
        "  spec\t<DeploymentSpec>",
        "    selector\t<LabelSelector> -required-",
        "        maxSurge\t<IntOrString>",
        "    template\t<PodTemplateSpec> -required-",
        "        containers\t<[]Container> -required-",
        "            limits\t<map[string]Quantity>",
        "  status\t<DeploymentStatus>",
    ]:
        assert expected in lines, expected


def test_v2_document(registry: Registry) -> None:
    data = openapi_v2(registry)
    doc = orjson.loads(data)
    assert doc["swagger"] == "2.0" and doc["info"]["title"] == "Kubernetes"
    assert openapi_v2_etag(registry) == f'"{hashlib.sha512(data).hexdigest().upper()}"'
    defs = doc["definitions"]
    refs: set[str] = set()
    _refs(doc, refs)
    for ref in refs:
        assert ref.startswith("#/definitions/") and ref.rsplit("/", 1)[-1] in defs, ref
    patch = doc["paths"][POD_ITEM]["patch"]
    assert patch["consumes"] == [
        "application/json-patch+json",
        "application/merge-patch+json",
        "application/strategic-merge-patch+json",
        "application/apply-patch+yaml",
    ]
    assert patch["x-kubernetes-group-version-kind"] == {"group": "", "kind": "Pod", "version": "v1"}
    assert {p["name"] for p in patch["parameters"]} >= {"body", "fieldValidation", "dryRun", "fieldManager", "force"}
    probe = defs["io.k8s.api.core.v1.Container"]["properties"]["livenessProbe"]
    assert probe["$ref"] == "#/definitions/io.k8s.api.core.v1.Probe" and "description" in probe
    assert defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"] == {
        "description": defs["io.k8s.apimachinery.pkg.util.intstr.IntOrString"]["description"],
        "format": "int-or-string",
        "type": "string",
    }
    assert defs["io.k8s.apimachinery.pkg.api.resource.Quantity"]["type"] == "string"
    # only served versions: no alpha definitions leak in
    assert not any(".v1alpha1." in name for name in defs)
    assert openapi_v2(registry) is data  # cached bytes


WIDGET_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "names": {"kind": "Widget", "listKind": "WidgetList", "plural": "widgets", "singular": "widget"},
        "scope": "Namespaced",
        "versions": [
            {
                "name": "v1",
                "served": True,
                "storage": True,
                "subresources": {"status": {}},
                "schema": {
                    "openAPIV3Schema": {
                        "type": "object",
                        "description": "Widget is a test resource.",
                        "properties": {
                            "spec": {
                                "type": "object",
                                "description": "The desired widget.",
                                "properties": {
                                    "size": {"type": "integer", "description": "How big.", "minimum": 1},
                                    "maybe": {"type": "string", "nullable": True},
                                    "template": {
                                        "type": "object",
                                        "x-kubernetes-embedded-resource": True,
                                        "x-kubernetes-preserve-unknown-fields": True,
                                    },
                                },
                                "required": ["size"],
                            },
                            "status": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
                        },
                    }
                },
            }
        ],
    },
}


def test_custom_resources_are_published_and_cache_follows_generation() -> None:
    reg = builtin_registry()
    core_before = openapi_v3_doc(reg, "api/v1")
    assert "apis/example.com/v1" not in openapi_v3_index(reg)["paths"]
    v2_before = openapi_v2(reg)
    reg.add(Resource("example.com", "v1", "widgets", "Widget", crd=WIDGET_CRD, subresources={"status": "Widget"}))
    assert "apis/example.com/v1" in openapi_v3_index(reg)["paths"]
    assert openapi_v3_doc(reg, "api/v1") is core_before  # untouched group-versions are not rebuilt
    doc = orjson.loads(openapi_v3_doc(reg, "apis/example.com/v1"))  # type: ignore[arg-type]
    widget = doc["components"]["schemas"]["com.example.v1.Widget"]
    assert widget["x-kubernetes-group-version-kind"] == [{"group": "example.com", "kind": "Widget", "version": "v1"}]
    assert widget["properties"]["metadata"]["allOf"] == [
        {"$ref": "#/components/schemas/io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"}
    ]
    assert "com.example.v1.WidgetList" in doc["components"]["schemas"]
    patch = doc["paths"]["/apis/example.com/v1/namespaces/{namespace}/widgets/{name}"]["patch"]
    assert patch["operationId"] == "patchExampleComV1NamespacedWidget"
    assert patch["x-kubernetes-group-version-kind"]["kind"] == "Widget"
    # custom resources take no strategic merge patch and no protobuf
    assert "application/strategic-merge-patch+json" not in patch["requestBody"]["content"]
    assert set(patch["responses"]["200"]["content"]) == {"application/json", "application/yaml"}
    template = widget["properties"]["spec"]["properties"]["template"]
    assert {"apiVersion", "kind", "metadata"} <= set(template["properties"])
    assert template["required"] == ["kind", "apiVersion"]
    assert "/apis/example.com/v1/namespaces/{namespace}/widgets/{name}/status" in doc["paths"]
    out = explain(doc, "example.com", "v1", "widgets", ["spec"])
    assert "FIELD: spec <Object>" in out and "size\t<integer> -required-" in out
    v2 = orjson.loads(openapi_v2(reg))
    assert openapi_v2(reg) is not v2_before
    w2 = v2["definitions"]["com.example.v1.Widget"]
    assert "type" not in w2["properties"]["spec"]["properties"]["maybe"]  # nullable dropped for v2
    assert "properties" not in w2["properties"]["status"]
    assert "properties" not in w2["properties"]["spec"]["properties"]["template"]  # preserved: left open for v2
    reg.remove("example.com", "v1", "widgets")
    assert "apis/example.com/v1" not in openapi_v3_index(reg)["paths"]
