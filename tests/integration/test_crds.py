"""Custom resources: a CRD registers its resource on the fly; removing the CRD removes its objects."""

import json
import time

from tests.cluster import BOTH_DATASTORES, raw_request

pytestmark = BOTH_DATASTORES  # the same answers from SQLite and from etcd

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1",
    "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {
        "group": "example.com",
        "scope": "Namespaced",
        "names": {"plural": "widgets", "singular": "widget", "kind": "Widget", "shortNames": ["wd"]},
        "versions": [{
            "name": "v1", "served": True, "storage": True,
            "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                      "statusReplicasPath": ".status.replicas"}},
            "additionalPrinterColumns": [
                {"name": "Size", "type": "string", "jsonPath": ".spec.size"},
                {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
                {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"},
            ],
            "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                "spec": {"type": "object", "properties": {
                    "size": {"type": "string", "enum": ["S", "M", "L"], "default": "M"},
                    "replicas": {"type": "integer", "minimum": 0}}},
                "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}},
        }],
    },
}


def _wait_established(cluster):
    deadline = time.time() + 10
    while time.time() < deadline:
        r = raw_request(cluster, "GET", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/widgets.example.com")
        conds = {c["type"]: c["status"] for c in (r.json().get("status") or {}).get("conditions") or []}
        if conds.get("Established") == "True":
            return
        time.sleep(0.1)
    raise AssertionError("CRD not established")


def _wait_api_service(cluster, status: int) -> dict:
    deadline = time.time() + 10
    while True:
        r = raw_request(cluster, "GET", "/apis/apiregistration.k8s.io/v1/apiservices/v1.example.com")
        if r.status == status or time.time() > deadline:
            assert r.status == status, r.body
            return r.json()
        time.sleep(0.1)


def test_crd_lifecycle(cluster):
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    _wait_established(cluster)
    assert "widgets" in cluster.kubectl("api-resources", "--api-group=example.com").stdout
    w = {"apiVersion": "example.com/v1", "kind": "Widget", "metadata": {"name": "w1", "namespace": "default"},
         "spec": {"replicas": 2}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(w))
    got = json.loads(cluster.kubectl("get", "wd", "w1", "-o", "json").stdout)
    assert got["spec"] == {"replicas": 2, "size": "M"}  # structural defaulting
    assert got["metadata"]["generation"] == 1
    table = cluster.kubectl("get", "widgets").stdout.splitlines()
    assert table[0].split() == ["NAME", "SIZE", "REPLICAS", "AGE"]
    assert table[1].split()[:3] == ["w1", "M", "2"]
    bad = dict(w, metadata={"name": "w2", "namespace": "default"}, spec={"size": "XL"})
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(bad), check=False)
    assert r.returncode != 0 and 'Unsupported value: "XL"' in r.stderr
    # status and scale subresources
    r = raw_request(cluster, "PATCH", "/apis/example.com/v1/namespaces/default/widgets/w1/status",
                    body={"status": {"replicas": 2}, "spec": {"replicas": 9}},
                    headers={"Content-Type": "application/merge-patch+json"})
    assert r.status == 200 and r.json()["status"] == {"replicas": 2} and r.json()["spec"]["replicas"] == 2
    cluster.kubectl("scale", "widget", "w1", "--replicas=5")
    scale = raw_request(cluster, "GET", "/apis/example.com/v1/namespaces/default/widgets/w1/scale").json()
    assert scale["spec"]["replicas"] == 5 and scale["status"]["replicas"] == 2
    # watch works on custom resources
    r = raw_request(cluster, "GET", "/apis/example.com/v1/widgets?watch=true&timeoutSeconds=1")
    assert json.loads(r.body.splitlines()[0])["object"]["metadata"]["name"] == "w1"
    # the CRD's group version gets a local APIService, as upstream's crdregistration controller makes
    svc = _wait_api_service(cluster, 200)
    assert svc["metadata"]["labels"] == {"kube-aggregator.kubernetes.io/automanaged": "true"}
    assert svc["spec"] == {"group": "example.com", "version": "v1", "groupPriorityMinimum": 1000,
                           "versionPriority": 100}
    row = [ln.split() for ln in cluster.kubectl("get", "apiservices").stdout.splitlines() if "example.com" in ln]
    assert [r[:3] for r in row] == [["v1.example.com", "Local", "True"]]
    cluster.kubectl("delete", "crd", "widgets.example.com")
    deadline = time.time() + 10
    while time.time() < deadline:
        r = raw_request(cluster, "GET", "/apis/example.com/v1/namespaces/default/widgets/w1")
        if r.status == 404:
            break
        time.sleep(0.1)
    assert r.status == 404
    _wait_api_service(cluster, 404)  # gone with the last CRD serving it
    # recreating the CRD shows no leftover objects
    cluster.kubectl("apply", "-f", "-", input=json.dumps(CRD))
    _wait_established(cluster)
    r = raw_request(cluster, "GET", "/apis/example.com/v1/widgets")
    assert r.status == 200 and r.json()["items"] == []
