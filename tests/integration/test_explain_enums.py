"""Enums in the served OpenAPI: `kubectl explain` prints ENUM sections and "Possible enum values" as against
a v1.33 kube-apiserver, and `explain --recursive` its `enum:` lines.

The enums come from src/pyk8s/api/openapi_enums.json (scripts/gen_openapi_enums.py). The expected
explain text is upstream's for v1.33 (kubectl renders it from the server's schema, so the server must hand
over the same enum list and description).
"""

from __future__ import annotations

import json

import pytest

from tests.cluster import raw_request

from .kubectl_compat import SOME_VERSIONS, Kubectl

# 1.27 renders explain from /openapi/v2 (protobuf), 1.28+ from /openapi/v3: the oldest and newest cover both
VERSIONS = [v for v in SOME_VERSIONS if v in ("1.27", "1.33")] or SOME_VERSIONS[-1:]

# kubectl 1.33 against upstream v1.33 (tabs shown as 4 spaces)
UPSTREAM_IMAGE_PULL_POLICY = """\
KIND:       Pod
VERSION:    v1

FIELD: imagePullPolicy <string>
ENUM:
    Always
    IfNotPresent
    Never

DESCRIPTION:
    Image pull policy. One of Always, Never, IfNotPresent. Defaults to Always if
    :latest tag is specified, or IfNotPresent otherwise. Cannot be updated. More
    info: https://kubernetes.io/docs/concepts/containers/images#updating-images
    \n    Possible enum values:
     - `"Always"` means that kubelet always attempts to pull the latest image.
    Container will fail If the pull fails.
     - `"IfNotPresent"` means that kubelet pulls if the image isn't present on
    disk. Container will fail if the image isn't present and the pull fails.
     - `"Never"` means that kubelet never pulls an image, but only uses a local
    image. Container will fail if the image isn't present
"""


@pytest.fixture(scope="module")
def kubectls(cluster):
    return {v: Kubectl(cluster, v) for v in VERSIONS}


def _out(kubectls, version: str, *args: str) -> str:
    return kubectls[version].out(*args).replace("\t", "    ")


@pytest.mark.parametrize("version", VERSIONS)
def test_explain_prints_enum_values(kubectls, version):
    got = _out(kubectls, version, "explain", "pod.spec.containers.imagePullPolicy")
    if kubectls[version].minor == 27:
        # 1.27 renders /openapi/v2 with its old printer: no ENUM section, one blank line less under FIELD
        want = UPSTREAM_IMAGE_PULL_POLICY.replace("ENUM:\n    Always\n    IfNotPresent\n    Never\n", "")
        want = want.replace("<string>\n\n", "<string>\n", 1).replace("<string>\n", "<string>\n\n", 1)
    else:
        want = UPSTREAM_IMAGE_PULL_POLICY
    assert got.rstrip().split("\n") == want.rstrip().split("\n")
    svc = _out(kubectls, version, "explain", "svc.spec.type")
    strategy = _out(kubectls, version, "explain", "deployment.spec.strategy.type")
    assert ' - `"NodePort"` means a service will be exposed on one port of every node,' in svc
    assert ' - `"Recreate"` Kill all existing pods before creating new ones.' in strategy
    if kubectls[version].minor >= 28:
        assert "ENUM:\n    ClusterIP\n    ExternalName\n    LoadBalancer\n    NodePort\n\nDESCRIPTION:" in svc
        assert "FIELD: type <string>\nENUM:\n    Recreate\n    RollingUpdate\n\nDESCRIPTION:" in strategy


@pytest.mark.parametrize("version", VERSIONS)
def test_explain_recursive_lists_enums(kubectls, version):
    lines = _out(kubectls, version, "explain", "pod.spec", "--recursive").split("\n")
    pull = lines.index("    imagePullPolicy    <string>")
    if kubectls[version].minor == 27:  # the old /openapi/v2 printer shows types only
        assert not any("enum:" in line for line in lines)
        return
    assert lines[pull + 1] == "    enum: Always, IfNotPresent, Never"
    restart = lines.index("  restartPolicy    <string>")
    assert lines[restart + 1] == "  enum: Always, Never, OnFailure"
    # more than four values are cut short, as upstream's template does
    assert "            enum: DoesNotExist, Exists, Gt, In, ...." in lines


def test_openapi_documents_carry_enums(cluster):
    """Both documents carry the list on the field (and on list items), the Table column text does not."""
    k = Kubectl(cluster, VERSIONS[-1])
    v3 = json.loads(k.out("get", "--raw", "/openapi/v3/api/v1"))["components"]["schemas"]
    v2 = json.loads(k.out("get", "--raw", "/openapi/v2"))["definitions"]
    for doc in (v3, v2):
        pull = doc["io.k8s.api.core.v1.Container"]["properties"]["imagePullPolicy"]
        assert pull["enum"] == ["Always", "IfNotPresent", "Never"]
        assert pull["description"].endswith("Container will fail if the image isn't present")
        modes = doc["io.k8s.api.core.v1.PersistentVolumeClaimSpec"]["properties"]["accessModes"]
        assert modes["items"]["enum"] == ["ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod"]
    accept = "application/json;as=Table;v=v1;g=meta.k8s.io"
    table = raw_request(cluster, "GET", "/api/v1/namespaces/default/services", headers={"Accept": accept}).json()
    col = next(c for c in table["columnDefinitions"] if c["name"] == "Type")
    # Table columns take upstream's SwaggerDoc (the Go comment), which has no enum paragraph
    assert col["description"].startswith("type determines how the Service is exposed.")
    assert "Possible enum values" not in col["description"]
