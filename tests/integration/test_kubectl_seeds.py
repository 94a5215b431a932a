"""Manifests from the seeds apply cleanly with the oldest and the newest kubectl: seed 002's affinity pods and
DaemonSet, seed 004's Pod/Deployment anatomy, seed 000's gpushare DaemonSet (extensions/v1beta1, see
test_kubectl_compat) and the worked examples of reference/seed-003-notes-part1.md; their API-visible rules
(probe validation, ClusterIP allocation) answer with upstream's messages."""

from __future__ import annotations

import json
import os

import pytest

from .kubectl_compat import VERSIONS, Kubectl, ensure_nodes, ensure_ns, table

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "seed_manifests")
EDGE_VERSIONS = sorted({VERSIONS[0], VERSIONS[-1]})


@pytest.fixture(scope="module")
def kubectls(cluster):
    ks = {v: Kubectl(cluster, v) for v in EDGE_VERSIONS if v != "none"}
    if ks:
        ensure_nodes(next(iter(ks.values())))
    return ks


@pytest.mark.parametrize("version", EDGE_VERSIONS)
def test_seed_manifests_apply_cleanly(kubectls, version):
    if version not in kubectls:
        pytest.skip("no kubectl binaries")
    k = kubectls[version]
    ns = ensure_ns(k, k.ns + "-seeds")
    files = [os.path.join(HERE, f) for f in ("seed002-pods.yaml", "seed004-anatomy.yaml", "seed003-examples.yaml")]
    args = [a for f in files for a in ("-f", f)]
    r = k.run("-n", ns, "apply", *args)
    assert r.stderr == ""
    assert r.stdout.splitlines() == [
        "pod/node-affinity-pod created", "pod/toleration-pod created", "daemonset.apps/test-ds created",
        "deployment.apps/testdemo created", "pod/test-pod created", "deployment.apps/nginx-deployment created",
        "pod/pod-with-healthcheck created", "pod/readiness-exec created", "pod/volume-pod created",
        "replicationcontroller/redis-slave created", "replicationcontroller/php-apache created",
        "service/php-apache created", "horizontalpodautoscaler.autoscaling/php-apache created",
        "configmap/cm-appvars created", "pod/cm-test-pod created"]
    # re-applying changes nothing (toleration-pod left out: like upstream, its re-apply replaces the
    # tolerations list the server extended, which pod update validation refuses)
    again = k.run("-n", ns, "apply", "-f", files[1], "-f", files[2]).stdout.splitlines()
    assert all(line.endswith((" unchanged", " configured")) for line in again), again
    assert "deployment.apps/nginx-deployment unchanged" in again and "pod/cm-test-pod unchanged" in again

    # defaulting as upstream: the RC selector from the template, probe defaults, the HPA served as v1
    rc = k.json("-n", ns, "get", "rc", "php-apache")
    assert rc["spec"]["selector"] == {"app": "php-apache"}
    probe = k.json("-n", ns, "get", "pod", "readiness-exec")["spec"]["containers"][0]["readinessProbe"]
    assert {key: probe[key] for key in ("failureThreshold", "periodSeconds", "successThreshold", "timeoutSeconds")} \
        == {"failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1, "timeoutSeconds": 5}
    rows = table(k.out("-n", ns, "get", "hpa"))
    assert rows[0] == ["NAME", "REFERENCE", "TARGETS", "MINPODS", "MAXPODS", "REPLICAS", "AGE"]
    assert rows[1][:5] == ["php-apache", "ReplicationController/php-apache", "cpu: <unknown>/50%", "1", "10"]
    assert table(k.out("-n", ns, "get", "cm", "cm-appvars"))[1][:2] == ["cm-appvars", "2"]

    k.run("create", "ns", f"kubernetes-dashboard-{k.ns}")
    k.run("create", "ns", f"ns1-{k.ns}")
    rbac = open(os.path.join(HERE, "seed003-rbac.yaml")).read().replace(
        "namespace: kubernetes-dashboard", f"namespace: kubernetes-dashboard-{k.ns}").replace(
        "namespace: ns1", f"namespace: ns1-{k.ns}").replace("name: admin-user}", f"name: admin-user-{k.ns}}}")
    out = k.run("apply", "-f", "-", input=rbac).stdout.splitlines()
    assert out == ["serviceaccount/admin-user created",
                   f"clusterrolebinding.rbac.authorization.k8s.io/admin-user-{k.ns} created",
                   "secret/admin-user-secret created", "role.rbac.authorization.k8s.io/ns1-admin-role created",
                   "rolebinding.rbac.authorization.k8s.io/ns1-admin-user created"]
    token = k.out("-n", f"kubernetes-dashboard-{k.ns}", "create", "token", "admin-user", "--duration", "8760h")
    assert token.count(".") == 2
    k.run("delete", "clusterrolebinding", f"admin-user-{k.ns}")
    for n in (ns, f"kubernetes-dashboard-{k.ns}", f"ns1-{k.ns}"):
        k.run("delete", "ns", n, "--wait=false")


@pytest.mark.parametrize("version", EDGE_VERSIONS)
def test_seed_003_validation_messages(kubectls, version):
    if version not in kubectls:
        pytest.skip("no kubectl binaries")
    k = kubectls[version]
    ns = ensure_ns(k, k.ns + "-rules")

    def probe(p: dict) -> str:
        pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pr"},
               "spec": {"containers": [{"name": "c", "image": "busybox", "livenessProbe": p}]}}
        r = k.run("-n", ns, "create", "-f", "-", "--dry-run=server", "-o", "json", input=json.dumps(pod), check=False)
        return r.stderr.strip() if r.returncode else json.dumps(json.loads(r.stdout)["spec"]["containers"][0]
                                                                ["livenessProbe"], sort_keys=True)

    ex = {"exec": {"command": ["true"]}}
    assert json.loads(probe(ex)) == {**ex, "failureThreshold": 3, "periodSeconds": 10, "successThreshold": 1,
                                     "timeoutSeconds": 1}
    prefix = 'The Pod "pr" is invalid: spec.containers[0].livenessProbe'
    assert probe({**ex, "httpGet": {"port": 80}}) == f"{prefix}.httpGet: Forbidden: may not specify more than 1 handler type"
    assert probe({}) == f"{prefix}: Required value: must specify a handler type"
    assert probe({**ex, "successThreshold": 2}) == f"{prefix}.successThreshold: Invalid value: 2: must be 1"
    assert probe({**ex, "timeoutSeconds": -1}) == \
        f"{prefix}.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"

    def svc(name: str, ip: str) -> str:
        s = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name},
             "spec": {"clusterIP": ip, "ports": [{"port": 80}]}}
        r = k.run("-n", ns, "create", "-f", "-", input=json.dumps(s), check=False)
        return (r.stdout + r.stderr).strip()

    ip = f"10.96.{200 + k.minor}.{k.minor}"
    assert svc("fixed", ip) == "service/fixed created"
    assert svc("again", ip) == (f'The Service "again" is invalid: spec.clusterIPs: Invalid value: [{ip}]: failed to '
                                f"allocate IP {ip}: provided IP is already allocated")
    assert svc("outside", "192.168.0.1") == (
        'The Service "outside" is invalid: spec.clusterIPs: Invalid value: [192.168.0.1]: failed to allocate IP '
        "192.168.0.1: the provided IP (192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12")
    k.run("delete", "ns", ns, "--wait=false")
