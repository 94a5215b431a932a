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
import time
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
    _setup(c)
    yield c
    c.stop()


def _as(c: Cluster, kubeconfig: str, *args: str, input_: str | None = None) -> subprocess.CompletedProcess[str]:
    binary = list(kubectl_binaries().values())[-1]
    env = dict(os.environ, KUBECONFIG=kubeconfig, HOME=c.home)
    return subprocess.run([binary, *args], capture_output=True, text=True, env=env, timeout=60, input=input_)


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
    # its own pods (AuthorizeNodeWithSelectors; test_node_reads_only_its_own_pods_and_node)
    assert _as(kc, k1, "get", "pods", "--field-selector", "spec.nodeName=n1", "-o", "name").returncode == 0
    # NodeRestriction: its own Node only (kubectl label would first GET it, which the authorizer refuses:
    # a patch reaches admission)
    msg = _forbidden_message(lambda: _client(k1).patch_node("n2", {"metadata": {"labels": {"x": "y"}}}))
    assert msg == 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"', msg
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


def _client(kubeconfig: str) -> object:
    from kubernetes import client, config

    cfg = client.Configuration()
    config.load_kube_config(kubeconfig, client_configuration=cfg)
    return client.CoreV1Api(client.ApiClient(cfg))


def _forbidden_message(call: object) -> str:
    from kubernetes import client

    with pytest.raises(client.ApiException) as e:
        call()  # type: ignore[operator]
    assert e.value.status == 403, e.value.body
    return str(json.loads(e.value.body)["message"])


def test_node_reads_only_its_own_pods_and_node(kc: Cluster) -> None:
    """v1.33's Node authorizer with AuthorizeNodeWithSelectors (beta, on by default): a kubelet
    lists and watches pods only with spec.nodeName=<itself>, reads one pod only when bound to
    it, and reads only its own Node (a list or watch names it with metadata.name)."""
    k1 = _kubelet_kubeconfig(kc, "n1")
    who = 'User "system:node:n1" cannot'
    r = _as(kc, k1, "get", "pods")
    assert r.returncode == 1
    assert (f'pods is forbidden: {who} list resource "pods" in API group "" in the namespace "default": can only '
            "list/watch pods with spec.nodeName field selector") in r.stderr, r.stderr
    r = _as(kc, k1, "get", "pods", "-A", "--field-selector", "spec.nodeName=n1", "-o", "name")
    assert r.returncode == 0 and r.stdout.split() == ["pod/p1"], r.stderr
    # another node's pods, or a selector that only excludes: refused
    for sel in ("spec.nodeName=n2", "spec.nodeName!=n2", "metadata.namespace=default,spec.nodeName=n2"):
        r = _as(kc, k1, "get", "pods", "--field-selector", sel)
        assert r.returncode == 1 and "can only list/watch pods with spec.nodeName field selector" in r.stderr, sel
    assert _as(kc, k1, "get", "pod", "p1", "-o", "name").stdout.strip() == "pod/p1"
    r = _as(kc, k1, "get", "pod", "p2")
    assert (f'pods "p2" is forbidden: {who} get resource "pods" in API group "" in the namespace "default": no '
            "relationship found between node 'n1' and this object") in r.stderr, r.stderr
    api = _client(k1)
    # watches: the selector is judged, and a metadata.name selector names one pod
    w = api.list_namespaced_pod("default", watch=True, field_selector="spec.nodeName=n1", timeout_seconds=1,
                                _preload_content=False)
    assert w.status == 200
    w.release_conn()
    msg = _forbidden_message(lambda: api.list_namespaced_pod("default", watch=True, timeout_seconds=1))
    assert msg.endswith(": can only list/watch pods with spec.nodeName field selector"), msg
    assert [p.metadata.name for p in api.list_namespaced_pod("default", field_selector="metadata.name=p1").items] \
        == ["p1"]
    msg = _forbidden_message(lambda: api.list_namespaced_pod("default", field_selector="metadata.name=p2"))
    assert msg == (f'pods "p2" is forbidden: {who} list resource "pods" in API group "" in the namespace "default": '
                   "no relationship found between node 'n1' and this object"), msg
    # nodes: its own only
    r = _as(kc, k1, "get", "nodes")
    assert (f'nodes is forbidden: {who} list resource "nodes" in API group "" at the cluster scope: node \'n1\' '
            "cannot read all nodes, only its own Node object") in r.stderr, r.stderr
    r = _as(kc, k1, "get", "node", "n2")
    assert (f'nodes "n2" is forbidden: {who} get resource "nodes" in API group "" at the cluster scope: node '
            "'n1' cannot read 'n2', only its own Node object") in r.stderr, r.stderr
    assert _as(kc, k1, "get", "node", "n1", "-o", "name").stdout.strip() == "node/n1"
    r = _as(kc, k1, "get", "nodes", "--field-selector", "metadata.name=n1", "-o", "name")
    assert r.returncode == 0 and r.stdout.strip() == "node/n1", r.stderr
    r = _as(kc, k1, "get", "nodes", "--field-selector", "metadata.name=n2")
    assert "node 'n1' cannot read 'n2', only its own Node object" in r.stderr, r.stderr
    w = api.list_node(watch=True, field_selector="metadata.name=n1", timeout_seconds=1, _preload_content=False)
    assert w.status == 200
    w.release_conn()
    # an identity with the node's name but outside system:nodes is not a node: RBAC alone judges it
    r = raw_request(kc, "GET", "/api/v1/nodes/n1", headers={"Impersonate-User": "system:node:n1"})
    assert r.status == 403 and "only its own Node object" not in r.json()["message"]


def test_node_tokens_only_for_its_pods_service_accounts(kc: Cluster) -> None:
    """serviceaccounts/token: the Node authorizer wants a pod on the node using the account;
    NodeRestriction wants the token bound to such a pod, by UID."""
    k1 = _kubelet_kubeconfig(kc, "n1")
    r = _as(kc, k1, "create", "token", "other")
    assert ('serviceaccounts "other" is forbidden: User "system:node:n1" cannot create resource "serviceaccounts/'
            'token" in API group "" in the namespace "default": no relationship found between node \'n1\' and this '
            "object") in r.stderr, r.stderr
    r = _as(kc, k1, "create", "token", "default")
    assert 'serviceaccounts "default" is forbidden: node requested token not bound to a pod' in r.stderr, r.stderr
    uid = {n: kc.kubectl("get", "pod", n, "-o", "jsonpath={.metadata.uid}").stdout for n in ("p1", "p2")}
    r = _as(kc, k1, "create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "p2",
            "--bound-object-uid", uid["p2"])
    assert "node requested token bound to a pod scheduled on a different node" in r.stderr, r.stderr
    r = _as(kc, k1, "create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "p1",
            "--bound-object-uid", uid["p2"])
    assert f"the UID in the bound object reference ({uid['p2']}) does not match the UID in record" in r.stderr
    r = _as(kc, k1, "create", "token", "default", "--bound-object-kind", "Pod", "--bound-object-name", "p1",
            "--bound-object-uid", uid["p1"])
    assert r.returncode == 0 and r.stdout.count(".") == 2, r.stderr  # a JWT


def test_node_deletes_and_evicts_only_its_pods(kc: Cluster) -> None:
    """NodeRestriction on DELETE and pods/eviction: only pods bound to the node itself."""
    from kubernetes import client

    for name, node in (("d1", "n1"), ("d2", "n2"), ("e1", "n1")):
        pod = {"metadata": {"name": name}, "spec": {"nodeName": node, "containers": [{"name": "c", "image": "b"}]}}
        assert raw_request(kc, "POST", f"{NS}/pods", pod).status == 201
    k1 = _kubelet_kubeconfig(kc, "n1")
    r = _as(kc, k1, "delete", "pod", "d2", "--wait=false")
    assert r.returncode == 1
    assert 'pods "d2" is forbidden: node "n1" can only delete pods with spec.nodeName set to itself' in r.stderr
    r = _as(kc, k1, "delete", "pod", "d1", "--grace-period=0", "--force")
    assert r.returncode == 0, r.stderr
    api = _client(k1)
    ev = client.V1Eviction(metadata=client.V1ObjectMeta(name="d2", namespace="default"))
    msg = _forbidden_message(lambda: api.create_namespaced_pod_eviction("d2", "default", ev))
    assert msg == 'pods "d2" is forbidden: node n1 can only evict pods with spec.nodeName set to itself', msg
    # the body's name does not steer it: the path's pod is judged
    ev = client.V1Eviction(metadata=client.V1ObjectMeta(name="e1", namespace="default"))
    _forbidden_message(lambda: api.create_namespaced_pod_eviction("d2", "default", ev))
    api.create_namespaced_pod_eviction("e1", "default", ev)
    assert kc.kubectl("get", "pod", "d2", "-o", "name").stdout.strip() == "pod/d2"  # untouched


def test_node_creates_only_well_formed_mirror_pods(kc: Cluster) -> None:
    """A mirror pod must be owned by the node's own Node (its UID, as controller) and reference no
    other object the node could then read."""
    k1 = _kubelet_kubeconfig(kc, "n1")
    uid = kc.kubectl("get", "node", "n1", "-o", "jsonpath={.metadata.uid}").stdout
    api = _client(k1)

    def mirror(name: str, owner: dict[str, object] | None, **spec: object) -> dict[str, object]:
        md: dict[str, object] = {"name": name, "annotations": {"kubernetes.io/config.mirror": "h"}}
        if owner is not None:
            md["ownerReferences"] = [owner]
        return {"apiVersion": "v1", "kind": "Pod", "metadata": md,
                "spec": {"nodeName": "n1", "containers": [{"name": "c", "image": "b"}], **spec}}

    own = {"apiVersion": "v1", "kind": "Node", "name": "n1", "uid": uid, "controller": True}
    cases = [
        (mirror("m1", None), 'node "n1" can only create pods with an owner reference set to itself'),
        (mirror("m1", dict(own, name="n2")), 'node "n1" can only create pods with an owner reference set to itself'),
        (mirror("m1", dict(own, controller=False)),
         'node "n1" can only create pods with a controller owner reference set to itself'),
        (mirror("m1", dict(own, blockOwnerDeletion=True)),
         'node "n1" must not set blockOwnerDeletion on an owner reference'),
        (mirror("m1", dict(own, uid="0000")), f"node n1 UID mismatch: expected 0000 got {uid}"),
        (mirror("m1", own, serviceAccountName="default"),
         'node "n1" can not create pods that reference a service account'),
        (mirror("m1", own, volumes=[{"name": "v", "secret": {"secretName": "s-other"}}]),
         'node "n1" can not create pods that reference secrets'),
        (mirror("m1", own, volumes=[{"name": "v", "configMap": {"name": "cm"}}]),
         'node "n1" can not create pods that reference configmaps'),
        (mirror("m1", own, volumes=[{"name": "v", "persistentVolumeClaim": {"claimName": "c"}}]),
         'node "n1" can not create pods that reference persistentvolumeclaims'),
    ]
    for body, want in cases:
        msg = _forbidden_message(lambda b=body: api.create_namespaced_pod("default", b))
        assert msg == f'pods "m1" is forbidden: {want}', msg
    assert api.create_namespaced_pod("default", mirror("m1", own)).metadata.name == "m1"


def test_node_leases_only_its_own(kc: Cluster) -> None:
    """coordination.k8s.io leases: the authorizer admits a node to kube-node-lease and its own
    lease's name; NodeRestriction checks the name a create carries in its body."""
    k1 = _kubelet_kubeconfig(kc, "n1")

    def lease(ns: str, name: str) -> str:
        return json.dumps({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                           "metadata": {"name": name, "namespace": ns}, "spec": {"holderIdentity": name}})

    r = _as(kc, k1, "create", "-f", "-", input_=lease("kube-node-lease", "n2"))
    assert ('leases.coordination.k8s.io "n2" is forbidden: can only access node lease with the same name as the '
            "requesting node") in r.stderr, r.stderr
    r = _as(kc, k1, "create", "-f", "-", input_=lease("default", "n1"))
    assert ('cannot create resource "leases" in API group "coordination.k8s.io" in the namespace "default": can '
            'only access leases in the "kube-node-lease" system namespace') in r.stderr, r.stderr
    assert _as(kc, k1, "create", "-f", "-", input_=lease("kube-node-lease", "n1")).returncode == 0
    r = _as(kc, k1, "-n", "kube-node-lease", "get", "lease", "n2")
    assert "can only access node lease with the same name as the requesting node" in r.stderr, r.stderr
    assert _as(kc, k1, "-n", "kube-node-lease", "get", "lease", "n1", "-o", "name").stdout.strip() == \
        "lease.coordination.k8s.io/n1"


def test_node_keeps_its_hands_off_its_taints_and_kubernetes_labels(kc: Cluster) -> None:
    """On its own Node a kubelet may set kubelet labels (kubernetes.io/os, node.kubernetes.io/*,
    its own domains), but no other kubernetes.io or k8s.io label, and not its taints."""
    api = _client(_kubelet_kubeconfig(kc, "n1"))
    api.patch_node("n1", {"metadata": {"labels": {"node.kubernetes.io/pool": "a", "kubernetes.io/os": "linux",
                                                  "example.com/team": "x"}}})
    msg = _forbidden_message(lambda: api.patch_node("n1", {"metadata": {"labels": {
        "node-role.kubernetes.io/control-plane": "", "x.k8s.io/y": "z", "other.example.com/ok": "1"}}}))
    assert msg == ('nodes "n1" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/control-plane, '
                   "x.k8s.io/y"), msg
    msg = _forbidden_message(lambda: api.patch_node("n1", {"spec": {"taints": [{"key": "mine", "effect": "NoSchedule"}]}}))
    assert msg == 'nodes "n1" is forbidden: node "n1" is not allowed to modify taints', msg
    assert kc.kubectl("taint", "node", "n1", "admin=set:NoSchedule").returncode == 0  # the admin may
    msg = _forbidden_message(lambda: api.patch_node("n1", {"spec": {"taints": []}}))
    assert msg.endswith("is not allowed to modify taints"), msg


def _grant(c: Cluster, user: str, resources: list[str], verbs: list[str]) -> None:
    """RBAC that lets a node identity past authorization, so that NodeRestriction judges it."""
    name = f"test-{user.replace(':', '-')}"
    role = {"metadata": {"name": name}, "rules": [{"apiGroups": [""], "resources": resources, "verbs": verbs}]}
    assert raw_request(c, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", role).status == 201
    crb = {"metadata": {"name": name}, "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole",
                                                  "name": name},
           "subjects": [{"kind": "User", "name": user, "apiGroup": "rbac.authorization.k8s.io"}]}
    assert raw_request(c, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", crb).status == 201


def _until_admitted(call: object) -> str:
    """The 403 of admission, once authorization lets the call through (RBAC sees a new binding
    within moments; until then its refusal names the user)."""
    deadline = time.monotonic() + 10
    msg = _forbidden_message(call)
    while 'User "' in msg and time.monotonic() < deadline:
        time.sleep(0.1)
        msg = _forbidden_message(call)
    return msg


def test_node_writes_no_other_pod_subresource(kc: Cluster) -> None:
    """NodeRestriction allows a node only pods' status (labels unchanged) and eviction, whatever
    RBAC grants; and a node identity without a name may write nothing."""
    api = _client(_kubelet_kubeconfig(kc, "n1"))
    msg = _forbidden_message(lambda: api.patch_namespaced_pod_status(
        "p1", "default", {"metadata": {"labels": {"x": "y"}}}))
    assert msg == 'pods "p1" is forbidden: node "n1" cannot update labels through pod status', msg
    _grant(kc, "system:node:n3", ["pods/ephemeralcontainers", "pods/status"], ["get", "patch", "update"])
    n3 = _client(_kubelet_kubeconfig(kc, "n3"))
    msg = _until_admitted(lambda: n3.patch_namespaced_pod_ephemeralcontainers(
        "p1", "default", {"spec": {"ephemeralContainers": [{"name": "dbg", "image": "busybox"}]}}))
    assert msg == ('pods "p1" is forbidden: unexpected pod subresource "ephemeralcontainers", only \'status\' and '
                   "'eviction' are allowed"), msg
    _grant(kc, "system:node:", ["pods/status"], ["patch"])
    nameless = _client(_kubelet_kubeconfig(kc, ""))
    msg = _until_admitted(lambda: nameless.patch_namespaced_pod_status("p1", "default", {"status": {}}))
    assert msg == 'pods "p1" is forbidden: could not determine node from user "system:node:"', msg


@pytest.mark.parametrize("args, message", [
    (["--authorization-mode=Webhook"], "authorization-mode Webhook is not supported by pyk8s"),
    (["--authorization-mode=Foo"], 'authorization-mode "Foo" is not a valid mode'),
    (["--authorization-mode=RBAC,RBAC"], "authorization-mode [RBAC RBAC] has mode specified more than once"),
    (["--enable-admission-plugins=Nope"], 'enable-admission-plugins plugin "Nope" is unknown'),
    (["--enable-admission-plugins=ImagePolicyWebhook"], "admission plugin ImagePolicyWebhook is not supported by pyk8s"),
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
