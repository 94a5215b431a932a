"""Where a new user with the real kubectl, curl or openssl saw pyk8s differ from upstream v1.33.

Each test pins upstream's behaviour through the real tools: generation bumps through /scale,
a deleted Service's ClusterIP and NodePort free at once, `additionalProperties: true` beside
`properties` in a CRD schema, the Warning of a deprecated CRD version, the CronJob
controller's InvalidSchedule event, pretty JSON for curl and wget, and the client CA names in
the TLS CertificateRequest.
"""

from __future__ import annotations

import json
import os
import subprocess
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.integration.test_daemonset import get_json, wait_for

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("api-fidelity")


def _apply(c: Cluster, obj: dict[str, Any]) -> None:
    c.kubectl("apply", "-f", "-", input=json.dumps(obj))


def _generation(c: Cluster, *what: str) -> int:
    return int(get_json(c, *what)["metadata"]["generation"])


# ---- /scale bumps metadata.generation --------------------------------------------------------

def _deployment(name: str) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}


def test_kubectl_scale_bumps_generation(cluster):
    """`kubectl scale` (PATCH on /scale) and a PUT of the Scale: upstream's scale REST updates
    the object through its own strategy, which bumps generation when the spec changes; an
    unchanged replica count does not."""
    _apply(cluster, _deployment("scalegen"))
    g0 = _generation(cluster, "deploy", "scalegen")
    cluster.kubectl("scale", "deploy", "scalegen", "--replicas=3")
    assert _generation(cluster, "deploy", "scalegen") == g0 + 1
    cluster.kubectl("scale", "deploy", "scalegen", "--replicas=3")  # no change, no bump
    assert _generation(cluster, "deploy", "scalegen") == g0 + 1
    path = "/apis/apps/v1/namespaces/default/deployments/scalegen/scale"
    scale = raw_request(cluster, "GET", path).json()
    scale["spec"]["replicas"] = 0
    r = raw_request(cluster, "PUT", path, scale)
    assert r.status == 200, r.body
    assert _generation(cluster, "deploy", "scalegen") == g0 + 2
    # the deployment controller follows: observedGeneration reaches the new generation
    wait_for(lambda: get_json(cluster, "deploy", "scalegen").get("status", {}).get("observedGeneration") == g0 + 2,
             what="observedGeneration after scale")


@pytest.mark.parametrize("kind,obj", [
    ("replicaset", {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "scalegen-rs"},
                    "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "scalegen-rs"}},
                             "template": {"metadata": {"labels": {"app": "scalegen-rs"}},
                                          "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    ("statefulset", {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "scalegen-sts"},
                     "spec": {"replicas": 0, "serviceName": "x", "selector": {"matchLabels": {"app": "scalegen-sts"}},
                              "template": {"metadata": {"labels": {"app": "scalegen-sts"}},
                                           "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
    ("replicationcontroller", {"apiVersion": "v1", "kind": "ReplicationController",
                               "metadata": {"name": "scalegen-rc"},
                               "spec": {"replicas": 0, "selector": {"app": "scalegen-rc"},
                                        "template": {"metadata": {"labels": {"app": "scalegen-rc"}},
                                                     "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}}),
])
def test_scale_bumps_generation_of_workloads(cluster, kind, obj):
    _apply(cluster, obj)
    name = obj["metadata"]["name"]
    g0 = _generation(cluster, kind, name)
    cluster.kubectl("scale", kind, name, "--replicas=2")
    assert _generation(cluster, kind, name) == g0 + 1


SCALED_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "gauges.fidelity.example.com"},
    "spec": {"group": "fidelity.example.com", "scope": "Namespaced",
             "names": {"plural": "gauges", "singular": "gauge", "kind": "Gauge"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                                    "statusReplicasPath": ".status.replicas"}},
                           "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                               "spec": {"type": "object", "properties": {"replicas": {"type": "integer"}}},
                               "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]}}


def _crd_established(c: Cluster, name: str) -> None:
    c.kubectl("wait", "--for=condition=Established", f"crd/{name}", "--timeout=20s")


def test_scale_bumps_generation_of_custom_resource(cluster):
    _apply(cluster, SCALED_CRD)
    _crd_established(cluster, "gauges.fidelity.example.com")
    _apply(cluster, {"apiVersion": "fidelity.example.com/v1", "kind": "Gauge", "metadata": {"name": "g"},
                     "spec": {"replicas": 1}})
    g0 = _generation(cluster, "gauge", "g")
    cluster.kubectl("scale", "gauge", "g", "--replicas=4")
    assert _generation(cluster, "gauge", "g") == g0 + 1
    assert get_json(cluster, "gauge", "g")["spec"]["replicas"] == 4


# ---- Services: a deleted Service's ClusterIP and NodePort are free again at once -------------------

def test_recreate_service_from_dump_right_after_delete(cluster, tmp_path):
    """`kubectl get svc -o json > f; kubectl delete svc; kubectl create -f f`: the dump names the
    ClusterIP and NodePort the deleted Service held, which upstream's allocators released in the
    delete."""
    cluster.kubectl("create", "service", "nodeport", "again", "--tcp=80:8080")
    dump = tmp_path / "svc.json"
    dump.write_text(cluster.kubectl("get", "svc", "again", "-o", "json").stdout)
    before = json.loads(dump.read_text())["spec"]
    cluster.kubectl("delete", "svc", "again")
    r = cluster.kubectl("create", "-f", str(dump), check=False)
    assert r.returncode == 0, r.stderr
    after = get_json(cluster, "svc", "again")["spec"]
    assert after["clusterIP"] == before["clusterIP"]
    assert after["ports"][0]["nodePort"] == before["ports"][0]["nodePort"]
    # while it exists, its IP and port stay taken for everyone else
    other = json.loads(dump.read_text())
    other["metadata"] = {"name": "again-copy"}
    r = cluster.kubectl("create", "-f", "-", input=json.dumps(other), check=False)
    assert r.returncode != 0
    assert "provided IP is already allocated" in r.stderr


# ---- CRD schemas: additionalProperties true beside properties -----------------------------------------

def _crd_with(spec_schema: dict[str, Any], plural: str) -> dict[str, Any]:
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": f"{plural}.fidelity.example.com"},
            "spec": {"group": "fidelity.example.com", "scope": "Namespaced",
                     "names": {"plural": plural, "singular": plural[:-1], "kind": plural[:-1].capitalize()},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object",
                                                                  "properties": {"spec": spec_schema}}}}]}}


def test_crd_properties_with_additional_properties_true_is_allowed(cluster):
    crd = _crd_with({"type": "object", "properties": {"size": {"type": "integer"}},
                     "additionalProperties": True}, "knobs")
    r = cluster.kubectl("create", "-f", "-", input=json.dumps(crd), check=False)
    assert r.returncode == 0, r.stderr
    _crd_established(cluster, "knobs.fidelity.example.com")
    _apply(cluster, {"apiVersion": "fidelity.example.com/v1", "kind": "Knob", "metadata": {"name": "k"},
                     "spec": {"size": 1, "extra": "kept"}})
    assert get_json(cluster, "knob", "k")["spec"] == {"size": 1, "extra": "kept"}


def test_crd_properties_with_additional_properties_false_or_schema_is_refused(cluster):
    """Only `true` may stand beside properties (upstream: !Allows || Schema != nil is refused)."""
    for ap in (False, {"type": "string"}):
        crd = _crd_with({"type": "object", "properties": {"size": {"type": "integer"}}, "additionalProperties": ap},
                        "dials")
        r = cluster.kubectl("create", "-f", "-", input=json.dumps(crd), check=False)
        assert r.returncode != 0, ap
        assert ("spec.versions[0].schema.openAPIV3Schema.properties[spec].additionalProperties: Forbidden: "
                "additionalProperties and properties are mutual exclusive") in r.stderr, (ap, r.stderr)


# ---- deprecated CRD versions answer with a Warning -----------------------------------------------------

DEPRECATED_CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "levers.fidelity.example.com"},
    "spec": {"group": "fidelity.example.com", "scope": "Namespaced",
             "names": {"plural": "levers", "singular": "lever", "kind": "Lever"},
             "versions": [
                 {"name": "v1alpha1", "served": True, "storage": False, "deprecated": True,
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                 {"name": "v1beta1", "served": True, "storage": False, "deprecated": True,
                  "deprecationWarning": "levers v1beta1 goes away next month",
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                 {"name": "v1", "served": True, "storage": True,
                  "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]}}


def test_deprecated_crd_version_warns_on_every_request(cluster):
    _apply(cluster, DEPRECATED_CRD)
    _crd_established(cluster, "levers.fidelity.example.com")
    default = "Warning: fidelity.example.com/v1alpha1 Lever is deprecated; use fidelity.example.com/v1 Lever"
    r = cluster.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "fidelity.example.com/v1alpha1", "kind": "Lever", "metadata": {"name": "l"}}))
    assert default in r.stderr
    assert default in cluster.kubectl("get", "levers.v1alpha1.fidelity.example.com").stderr
    assert default in cluster.kubectl("get", "levers.v1alpha1.fidelity.example.com", "l").stderr
    custom = cluster.kubectl("get", "levers.v1beta1.fidelity.example.com", "l", "-o", "name")
    assert "Warning: levers v1beta1 goes away next month" in custom.stderr
    assert "Warning" not in cluster.kubectl("get", "levers.v1.fidelity.example.com", "l").stderr
    r2 = cluster.kubectl("delete", "levers.v1alpha1.fidelity.example.com", "l")
    assert default in r2.stderr
    missing = cluster.kubectl("get", "levers.v1alpha1.fidelity.example.com", "l", check=False)
    assert default in missing.stderr and "NotFound" in missing.stderr
    # exactly one Warning header, reads and writes alike
    path = "/apis/fidelity.example.com/v1alpha1/namespaces/default/levers"
    created = raw_request(cluster, "POST", path, {"apiVersion": "fidelity.example.com/v1alpha1", "kind": "Lever",
                                                  "metadata": {"name": "l2"}})
    assert created.status == 201, created.body
    watched = raw_request(cluster, "GET", path + "?watch=true&timeoutSeconds=1")
    for r in (created, raw_request(cluster, "GET", path), watched):
        assert r.headers.get_all("Warning") == [
            '299 - "fidelity.example.com/v1alpha1 Lever is deprecated; use fidelity.example.com/v1 Lever"']


# ---- CronJob: a schedule that never fires ----------------------------------------------------------------

def test_cronjob_that_never_fires_gets_invalid_schedule_event(cluster):
    """`59 23 31 2 *` parses (robfig/cron) but has no activation: upstream's controller records
    Warning InvalidSchedule (mostRecentScheduleTime finds no interval between two activations)."""
    cluster.kubectl("create", "cronjob", "feb31", "--image=busybox", "--schedule=59 23 31 2 *")

    def event() -> dict[str, Any] | None:
        items = get_json(cluster, "events", "--field-selector", "involvedObject.name=feb31")["items"]
        return next((e for e in items if e["reason"] == "InvalidSchedule"), None)

    ev = wait_for(event, what="InvalidSchedule event")
    assert ev["type"] == "Warning"
    assert ev["message"] == "invalid schedule: 59 23 31 2 * : time difference between two schedules is less than 1 second"
    assert ev["source"].get("component") == "cronjob-controller"


# ---- pretty JSON for curl and wget ---------------------------------------------------------------------

def _pki(c: Cluster) -> tuple[str, str, str]:
    """CA, client cert and key files of the admin kubeconfig."""
    import base64

    import yaml

    kc = yaml.safe_load(open(c.kubeconfig).read())
    user = kc["users"][0]["user"]
    d = os.path.join(c.home, "pki")
    os.makedirs(d, exist_ok=True)
    paths = []
    for name, key in (("cert.pem", "client-certificate-data"), ("key.pem", "client-key-data")):
        p = os.path.join(d, name)
        with open(p, "wb") as f:
            f.write(base64.b64decode(user[key]))
        paths.append(p)
    return os.path.join(c.data_dir, "pki", "ca.crt"), paths[0], paths[1]


def _curl(c: Cluster, path: str, *extra: str) -> str:
    ca, cert, key = _pki(c)
    return subprocess.run(["curl", "-sS", "--cacert", ca, "--cert", cert, "--key", key, *extra, c.url + path],
                          capture_output=True, text=True, timeout=30, check=True).stdout


def _indented(body: str) -> bool:
    """MarshalIndent's shape: two-space indent, `": "`, no trailing newline."""
    return body.startswith('{\n  "') and body.endswith("\n}") and json.loads(body) is not None


def _compact(body: str) -> bool:
    return body.startswith('{"') and "\n" not in body.rstrip("\n")


def test_json_is_indented_for_curl_and_wget(cluster):
    """upstream's isPrettyPrint: `pretty` in the query decides; else curl, Wget and browsers
    get indented JSON (MarshalIndent, two spaces), everyone else compact JSON."""
    body = _curl(cluster, "/api/v1/namespaces/default")
    assert _indented(body) and '\n  "metadata": {\n    "name": "default",\n' in body
    assert json.loads(body)["metadata"]["name"] == "default"
    # errors are JSON answers too
    missing = _curl(cluster, "/api/v1/namespaces/default/pods/nope")
    assert _indented(missing) and '\n  "reason": "NotFound",\n' in missing, missing
    # a query naming watch is served by aiohttp rather than the HTTP/1 fast path: the same rule there
    listed = _curl(cluster, "/api/v1/namespaces?watch=false")
    assert _indented(listed) and json.loads(listed)["kind"] == "NamespaceList"
    # ?pretty=false wins over the agent
    assert _compact(_curl(cluster, "/api/v1/namespaces/default?pretty=false"))
    ca, cert, key = _pki(cluster)
    w = subprocess.run(["wget", "-q", "-O", "-", f"--ca-certificate={ca}", f"--certificate={cert}",
                        f"--private-key={key}", cluster.url + "/api/v1/namespaces/default"],
                       capture_output=True, text=True, timeout=30, check=True).stdout
    assert _indented(w)
    # other agents: compact, unless they ask
    assert _compact(raw_request(cluster, "GET", "/api/v1/namespaces/default").body.decode())
    kubectl_like = {"User-Agent": "kubectl/v1.33.0 (linux/amd64) kubernetes/abcdef"}
    assert _compact(raw_request(cluster, "GET", "/api/v1/namespaces/default", headers=kubectl_like).body.decode())
    assert _indented(raw_request(cluster, "GET", "/api/v1/namespaces/default?pretty=true",
                                 headers=kubectl_like).body.decode())
    assert _indented(raw_request(cluster, "GET", "/api/v1/namespaces/default?pretty=1").body.decode())


# ---- TLS: the CertificateRequest names the client CA -----------------------------------------------------

@pytest.mark.parametrize("version", ["-tls1_2", "-tls1_3"])
def test_tls_certificate_request_names_client_ca(cluster, version):
    """As Go's ClientCAs: `openssl s_client` lists the cluster CA under "Acceptable client
    certificate CA names" (TLS 1.2's CertificateRequest, TLS 1.3's certificate_authorities)."""
    from urllib.parse import urlparse

    u = urlparse(cluster.url)
    ca_subject = subprocess.run(["openssl", "x509", "-noout", "-subject",
                                 "-in", os.path.join(cluster.data_dir, "pki", "ca.crt")],
                                capture_output=True, text=True, check=True).stdout.strip().removeprefix("subject=")
    r = subprocess.run(["openssl", "s_client", "-connect", f"{u.hostname}:{u.port}", version],
                       input="", capture_output=True, text=True, timeout=30)
    out = r.stdout
    assert "Acceptable client certificate CA names" in out, out
    names = out.split("Acceptable client certificate CA names", 1)[1].splitlines()[1]
    assert names.strip() == ca_subject.strip(), (names, ca_subject)
