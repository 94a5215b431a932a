"""kubectl against a real pyk8s server, for every installed kubectl version: the transcript's basics.

Messages are pinned to ../shared/reference/upstream-observed.md ("namespaces and errors").
"""

import json

import pytest

from tests.cluster import BOTH_DATASTORES, kubectl_binaries

pytestmark = BOTH_DATASTORES  # the same answers from SQLite and from etcd

VERSIONS = list(kubectl_binaries()) or ["none"]


@pytest.mark.parametrize("version", VERSIONS)
def test_namespaces_configmaps_and_errors(cluster, version):
    if version == "none":
        cluster.kubectl("version")  # fails (or skips) with a clear reason
    ns = f"demo-{version.replace('.', '-')}"
    k = lambda *a, **kw: cluster.kubectl(*a, version=version, **kw)  # noqa: E731
    out = k("get", "ns").stdout
    for name in ("default", "kube-node-lease", "kube-public", "kube-system"):
        assert name in out
    assert out.splitlines()[0].split() == ["NAME", "STATUS", "AGE"]
    assert k("create", "ns", ns).stdout.strip() == f"namespace/{ns} created"
    assert k("-n", ns, "create", "configmap", "c", "--from-literal=a=1").stdout.strip() == "configmap/c created"
    table = k("-n", ns, "get", "cm").stdout.splitlines()
    assert table[0].split() == ["NAME", "DATA", "AGE"]
    assert table[1].split()[:2] == ["c", "1"]
    r = k("-n", ns, "get", "cm", "nope", check=False)
    assert r.returncode == 1
    assert r.stderr.strip() == 'Error from server (NotFound): configmaps "nope" not found'
    r = k("-n", ns, "create", "configmap", "c", check=False)
    assert r.stderr.strip() == 'error: failed to create configmap: configmaps "c" already exists'
    r = k("create", "configmap", "Bad_Name", check=False)
    assert r.stderr.strip() == (
        'error: failed to create configmap: ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: '
        '"Bad_Name": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, \'-\' or '
        "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation "
        "is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
    )
    r = k("-n", "nope", "create", "configmap", "x", check=False)
    assert r.stderr.strip() == 'error: failed to create configmap: namespaces "nope" not found'
    r = k("-n", ns, "label", "cm", "c", "bad key=1", check=False)
    assert 'The ConfigMap "c" is invalid: metadata.labels: Invalid value: "bad key"' in r.stderr
    cm = json.loads(k("-n", ns, "get", "cm", "c", "-o", "json").stdout)
    cm["metadata"]["resourceVersion"] = "1"
    r = k("replace", "-f", "-", input=json.dumps(cm), check=False)
    assert r.stderr.strip() == (
        'Error from server (Conflict): error when replacing "STDIN": Operation cannot be fulfilled on configmaps '
        '"c": the object has been modified; please apply your changes to the latest version and try again'
    )
    assert k("-n", ns, "delete", "cm", "c").stdout.strip() == 'configmap "c" deleted'
    r = k("-n", ns, "get", "cm", "c", check=False)
    assert "NotFound" in r.stderr


def test_typo_is_rejected_under_strict_validation(cluster):
    manifest = """apiVersion: v1
kind: Pod
metadata:
  name: typo
spec:
  containers:
  - name: c
    image: nginx
    ports:
    - containnerPort: 80
"""
    r = cluster.kubectl("apply", "-f", "-", input=manifest, check=False)
    assert r.returncode != 0
    assert ('Pod in version "v1" cannot be handled as a Pod: strict decoding error: unknown field '
            '"spec.containers[0].ports[0].containnerPort"') in r.stderr
    r = cluster.kubectl("apply", "-f", "-", "--validate=warn", input=manifest, check=False)
    assert 'Warning: unknown field "spec.containers[0].ports[0].containnerPort"' in r.stderr
    assert 'The Pod "typo" is invalid: spec.containers[0].ports[0].containerPort: Required value' in r.stderr


def test_version_and_health_are_public(cluster):
    from tests.cluster import raw_request

    v = raw_request(cluster, "GET", "/version", auth=False)
    assert v.status == 200 and v.json()["gitVersion"].startswith("v1.33.")
    for p in ("/healthz", "/livez", "/readyz"):
        assert raw_request(cluster, "GET", p, auth=False).status == 200
    r = raw_request(cluster, "GET", "/api/v1/namespaces", auth=False)  # system:anonymous, which RBAC refuses
    assert r.status == 403 and r.json()["reason"] == "Forbidden"
