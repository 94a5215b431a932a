"""`pyk8s server --authorization-mode=Node,RBAC --enable-admission-plugins=NodeRestriction`, as a
harness written for kube-apiserver (kubeadm's flags) starts it; kubectl with a kubelet's own
credentials (CN=system:node:<name>, O=system:nodes) sees upstream's Node authorizer and
NodeRestriction admission: secrets and configmaps only of pods bound to it, only its own
Node, only its pods' status.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator

import pytest

from tests.cluster import REPO, Cluster, kubectl_binaries, raw_request
from tests.cluster import node_kubeconfig as _kubelet_kubeconfig

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("authz-modes")

NS = "/api/v1/namespaces/default"


@pytest.fixture(scope="module")
def kc(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("authz-modes")),
                extra_args=["--authorization-mode=Node,RBAC", "--enable-admission-plugins=NodeRestriction"])
    c.start()
    yield c
    c.stop()


def _as(c: Cluster, kubeconfig: str, *args: str) -> subprocess.CompletedProcess[str]:
    binary = list(kubectl_binaries().values())[-1]
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=c.home)
    return subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=60)


def _setup(c: Cluster) -> None:
    for name in ("n1", "n2"):
        assert raw_request(c, "POST", "/api/v1/nodes", {"metadata": {"name": name}}).status == 201
    for kind, name in (("secrets", "s-used"), ("secrets", "s-other"), ("configmaps", "cm-used")):
        assert raw_request(c, "POST", f"{NS}/{kind}", {"metadata": {"name": name}, "data": {}}).status == 201
    pod = {"metadata": {"name": "p1"}, "spec": {"nodeName": "n1", "containers": [{
        "name": "c", "image": "busybox", "env": [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s-used",
                                                                                           "key": "k"}}}],
        "envFrom": [{"configMapRef": {"name": "cm-used"}}]}]}}
    assert raw_request(c, "POST", f"{NS}/pods", pod).status == 201
    other = {"metadata": {"name": "p2"}, "spec": {"nodeName": "n2", "containers": [{"name": "c", "image": "busybox"}]}}
    assert raw_request(c, "POST", f"{NS}/pods", other).status == 201


def test_node_authorizer_and_node_restriction_through_kubectl(kc: Cluster) -> None:
    _setup(kc)
    k1 = _kubelet_kubeconfig(kc, "n1")
    r = _as(kc, k1, "get", "secret", "s-used", "-o", "name")
    assert r.returncode == 0 and r.stdout.strip() == "secret/s-used", r.stderr
    assert _as(kc, k1, "get", "configmap", "cm-used", "-o", "name").returncode == 0
    r = _as(kc, k1, "get", "secret", "s-other")
    assert r.returncode == 1
    assert ('Error from server (Forbidden): secrets "s-other" is forbidden: User "system:node:n1" cannot get '
            'resource "secrets" in API group "" in the namespace "default": no relationship found between node '
            "'n1' and this object") in r.stderr, r.stderr
    r = _as(kc, k1, "get", "secrets")
    assert r.returncode == 1 and "can only read resources of this type" not in r.stderr  # list: "" reason from RBAC
    r = _as(kc, k1, "delete", "secret", "s-used")
    assert r.returncode == 1 and "can only read resources of this type" in r.stderr, r.stderr
    # static node rules: reading pods and nodes, events
    assert _as(kc, k1, "get", "pods", "-o", "name").returncode == 0
    # NodeRestriction: its own Node only
    r = _as(kc, k1, "label", "node", "n2", "x=y")
    assert r.returncode == 1
    assert 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"' in r.stderr, r.stderr
    assert _as(kc, k1, "label", "node", "n1", "x=y").returncode == 0
    r = _as(kc, k1, "label", "node", "n1", "node-restriction.kubernetes.io/a=b")
    assert r.returncode == 1
    assert "is not allowed to modify labels: node-restriction.kubernetes.io/a" in r.stderr, r.stderr
    # pod status only for its own pods (through the official client: kubectl's patch first GETs
    # pods/status, which upstream's node rules do not allow either)
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(k1, client_configuration=cfg)
    api = client.CoreV1Api(client.ApiClient(cfg))
    api.patch_namespaced_pod_status("p1", "default", {"status": {"message": "hi"}})
    with pytest.raises(client.ApiException) as e:
        api.patch_namespaced_pod_status("p2", "default", {"status": {"message": "hi"}})
    assert e.value.status == 403
    assert ('pods "p2" is forbidden: node "n1" can only update pod status for pods with spec.nodeName set to '
            "itself") == json.loads(e.value.body)["message"]
    # only mirror pods bound to itself
    r = _as(kc, k1, "run", "px", "--image=busybox", "--overrides", '{"spec":{"nodeName":"n1"}}')
    assert r.returncode == 1
    assert ('pod does not have "kubernetes.io/config.mirror" annotation, node "n1" can only create mirror pods'
            in r.stderr), r.stderr
    # the admin (system:masters) is unaffected
    assert kc.kubectl("label", "node", "n2", "x=y").returncode == 0


@pytest.mark.parametrize("args, message", [
    (["--authorization-mode=Webhook"], "authorization-mode Webhook is not supported by pyk8s"),
    (["--authorization-mode=Foo"], 'authorization-mode "Foo" is not a valid mode'),
    (["--authorization-mode=RBAC,RBAC"], "authorization-mode [RBAC RBAC] has mode specified more than once"),
    (["--enable-admission-plugins=Nope"], 'enable-admission-plugins plugin "Nope" is unknown'),
    (["--enable-admission-plugins=AlwaysPullImages"], "admission plugin AlwaysPullImages is not supported by pyk8s"),
    (["--disable-admission-plugins=NamespaceLifecycle"], "admission plugin NamespaceLifecycle is always enabled"),
])
def test_bad_flags_refuse_to_start(tmp_path: object, args: list[str], message: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", str(tmp_path), "--port", "0",
                        "--disable-agent", *args], capture_output=True, text=True, timeout=60, cwd=str(REPO))
    assert r.returncode == 1 and message in r.stderr, r.stderr


def test_always_deny_after_rbac(tmp_path_factory: pytest.TempPathFactory) -> None:
    """RBAC,AlwaysDeny: what RBAC allows passes, the rest meets AlwaysDeny's reason."""
    c = Cluster(str(tmp_path_factory.mktemp("authz-deny")),
                extra_args=["--authorization-mode=RBAC,AlwaysDeny", "--disable-admission-plugins=ServiceAccount"])
    c.start()
    try:
        r = raw_request(c, "GET", "/api/v1/namespaces", headers={"Impersonate-User": "nobody"})
        assert r.status == 403
        assert r.json()["message"].endswith(": Everything is forbidden."), r.json()["message"]
        assert raw_request(c, "GET", "/version", headers={"Impersonate-User": "nobody"}).status == 200
        # ServiceAccount admission is off: a pod gets no token volume
        pod = {"metadata": {"name": "nosa"}, "spec": {"containers": [{"name": "c", "image": "busybox"}]}}
        r = raw_request(c, "POST", f"{NS}/pods", pod)
        assert r.status == 201 and not r.json()["spec"].get("volumes") and "serviceAccountName" not in r.json()["spec"]
    finally:
        c.stop()
