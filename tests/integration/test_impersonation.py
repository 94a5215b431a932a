"""Impersonation (kubectl --as, --as-group, --as-uid; Impersonate-* headers) against a real server.

Messages are pinned to ../shared/reference/upstream-observed-safety.md ("Authorization,
impersonation ..."): the admin impersonating `nobody`, and a ServiceAccount that may not
impersonate asking to act as admin. The other parts follow upstream's WithImpersonation
filter (k8s.io/apiserver/pkg/endpoints/filters/impersonation.go).
"""

from __future__ import annotations

import http.client
import json
import os
import ssl
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import pytest

from tests.cluster import Cluster, kubectl_binaries

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("impersonation")

ESC = "system:serviceaccount:default:esc"

# esc may impersonate the user "nobody" and nothing else: every other part is refused
LIMITED_ROLE = """
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRole
metadata: {name: impersonate-nobody}
rules:
- apiGroups: [""]
  resources: ["users"]
  verbs: ["impersonate"]
  resourceNames: ["nobody"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: esc-impersonates-nobody}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: impersonate-nobody}
subjects:
- {kind: ServiceAccount, name: esc, namespace: default}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: Role
metadata: {name: cm-reader, namespace: default}
rules:
- apiGroups: [""]
  resources: ["configmaps"]
  verbs: ["get", "list", "create"]
---
apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata: {name: devs-read-cm, namespace: default}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: cm-reader}
subjects:
- {kind: Group, name: devs}
"""


@pytest.fixture(scope="module")
def esc_kubeconfig(cluster: Cluster) -> str:
    """A kubeconfig holding only the ServiceAccount default/esc's bearer token (no client certificate)."""
    cluster.kubectl("create", "serviceaccount", "esc")
    cluster.kubectl("apply", "-f", "-", input=LIMITED_ROLE)
    token = cluster.kubectl("create", "token", "esc").stdout.strip()
    path = Path(cluster.home) / "esc.kubeconfig"
    path.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "esc",
        "clusters": [{"name": "c", "cluster": {"server": cluster.url,
                                                "certificate-authority": os.path.join(cluster.data_dir, "pki", "ca.crt")}}],
        "users": [{"name": "esc", "user": {"token": token}}],
        "contexts": [{"name": "esc", "context": {"cluster": "c", "user": "esc"}}],
    }))
    return str(path)


def _esc(cluster: Cluster, kubeconfig: str, *args: str) -> Any:
    return cluster.kubectl("--kubeconfig", kubeconfig, *args, check=False)


def raw(cluster: Cluster, method: str, path: str, headers: list[tuple[str, str]], body: Any = None,
        cert: bool = True) -> tuple[int, dict[str, Any]]:
    """One request with repeatable headers, as the admin (client certificate) or without credentials."""
    from pyk8s.client.kubeconfig import load_kubeconfig

    ctx = load_kubeconfig(cluster.kubeconfig).ssl_client_context() if cert else \
        ssl.create_default_context(cafile=os.path.join(cluster.data_dir, "pki", "ca.crt"))
    u = urlparse(cluster.url)
    conn = http.client.HTTPSConnection(u.hostname, u.port, context=ctx, timeout=30)
    try:
        conn.putrequest(method, path)
        data = json.dumps(body).encode() if body is not None else b""
        for k, v in headers:
            conn.putheader(k, v)
        if body is not None:
            conn.putheader("Content-Type", "application/json")
        conn.putheader("Content-Length", str(len(data)))
        conn.endheaders(data)
        r = conn.getresponse()
        payload = r.read()
        return r.status, json.loads(payload) if payload else {}
    finally:
        conn.close()


def whoami(cluster: Cluster, headers: list[tuple[str, str]], cert: bool = True) -> tuple[int, dict[str, Any]]:
    status, body = raw(cluster, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews", headers,
                       {"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"}, cert)
    return status, body["status"]["userInfo"] if status == 201 else body


# --------------------------------------------------------------------------- refused


REFUSED = [
    # (kubectl flags, upstream's message)
    (["--as=admin"],
     'users "admin" is forbidden: User "system:serviceaccount:default:esc" cannot impersonate resource "users" '
     'in API group "" at the cluster scope'),
    (["--as=system:serviceaccount:kube-system:default"],
     'serviceaccounts "default" is forbidden: User "system:serviceaccount:default:esc" cannot impersonate resource '
     '"serviceaccounts" in API group "" in the namespace "kube-system"'),
    # allowed to be "nobody", but not to add a group to it: no way into system:masters
    (["--as=nobody", "--as-group=system:masters"],
     'groups "system:masters" is forbidden: User "system:serviceaccount:default:esc" cannot impersonate resource '
     '"groups" in API group "" at the cluster scope'),
    (["--as=nobody", "--as-uid=1234"],
     'uids.authentication.k8s.io "1234" is forbidden: User "system:serviceaccount:default:esc" cannot impersonate '
     'resource "uids" in API group "authentication.k8s.io" at the cluster scope'),
]


@pytest.mark.parametrize("flags,message", REFUSED, ids=["users", "serviceaccounts", "groups", "uids"])
def test_impersonation_without_permission_is_refused(cluster, esc_kubeconfig, flags, message):
    r = _esc(cluster, esc_kubeconfig, "get", "pods", *flags)
    assert r.returncode == 1
    assert r.stderr.strip() == f"Error from server (Forbidden): {message}"


def test_user_extra_without_permission_is_refused(cluster, esc_kubeconfig):
    token = json.loads(Path(esc_kubeconfig).read_text())["users"][0]["user"]["token"]
    status, body = raw(cluster, "GET", "/api/v1/namespaces/default/pods",
                       [("Authorization", f"Bearer {token}"), ("Impersonate-User", "nobody"),
                        ("Impersonate-Extra-Scopes", "view")], cert=False)
    assert status == 403
    assert body["message"] == (
        'userextras.authentication.k8s.io "view" is forbidden: User "system:serviceaccount:default:esc" cannot '
        'impersonate resource "userextras/scopes" in API group "authentication.k8s.io" at the cluster scope')
    assert body["details"] == {"name": "view", "group": "authentication.k8s.io", "kind": "userextras"}


def test_allowed_impersonation_runs_as_the_impersonated_user(cluster, esc_kubeconfig):
    """esc may be "nobody": the request is then nobody's, with nobody's (lack of) rights, not esc's."""
    r = _esc(cluster, esc_kubeconfig, "auth", "whoami", "--as=nobody")
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["ATTRIBUTE", "VALUE", "Username", "nobody", "Groups", "[system:authenticated]"]
    r = _esc(cluster, esc_kubeconfig, "get", "configmaps", "--as=nobody")
    assert r.stderr.strip() == ('Error from server (Forbidden): configmaps is forbidden: User "nobody" cannot list '
                                'resource "configmaps" in API group "" in the namespace "default"')


def test_anonymous_cannot_impersonate(cluster):
    status, body = raw(cluster, "GET", "/api/v1/namespaces", [("Impersonate-User", "admin")], cert=False)
    assert status == 403
    assert body["message"] == ('users "admin" is forbidden: User "system:anonymous" cannot impersonate resource '
                               '"users" in API group "" at the cluster scope')


# --------------------------------------------------------------------------- allowed (the admin)


def test_admin_as_nobody_is_nobody(cluster):
    """The transcript: whoami, a denied list, can-i for a ServiceAccount."""
    out = cluster.kubectl("auth", "whoami", "--as=nobody").stdout
    assert out.split() == ["ATTRIBUTE", "VALUE", "Username", "nobody", "Groups", "[system:authenticated]"]
    r = cluster.kubectl("get", "secrets", "-A", "--as=nobody", check=False)
    assert r.returncode == 1
    assert r.stderr.strip() == ('Error from server (Forbidden): secrets is forbidden: User "nobody" cannot list '
                                'resource "secrets" in API group "" at the cluster scope')
    r = cluster.kubectl("auth", "can-i", "list", "pods", "--as=system:serviceaccount:default:default", check=False)
    assert (r.returncode, r.stdout.strip()) == (1, "no")
    assert cluster.kubectl("auth", "can-i", "list", "pods").stdout.strip() == "yes"


WHOAMI = [
    # (Impersonate-* headers, the userInfo upstream builds)
    ([("Impersonate-User", "nobody")], {"username": "nobody", "groups": ["system:authenticated"]}),
    ([("Impersonate-User", ESC)],
     {"username": ESC, "groups": ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]}),
    # groups asked for replace a ServiceAccount's own
    ([("Impersonate-User", ESC), ("Impersonate-Group", "devs")],
     {"username": ESC, "groups": ["devs", "system:authenticated"]}),
    ([("Impersonate-User", "nobody"), ("Impersonate-Group", "a"), ("Impersonate-Group", "b"),
      ("Impersonate-Uid", "u-1"), ("Impersonate-Extra-Scopes", "view"), ("Impersonate-Extra-Scopes", "edit"),
      ("Impersonate-Extra-Example.com%2fteam", "x")],
     {"username": "nobody", "uid": "u-1", "groups": ["a", "b", "system:authenticated"],
      "extra": {"scopes": ["view", "edit"], "example.com/team": ["x"]}}),
    # not a valid ServiceAccount name: an ordinary user, as upstream's SplitUsername decides
    ([("Impersonate-User", "system:serviceaccount:Bad_NS:x")],
     {"username": "system:serviceaccount:Bad_NS:x", "groups": ["system:authenticated"]}),
]


@pytest.mark.parametrize("headers,user", WHOAMI, ids=["user", "serviceaccount", "sa-with-groups", "everything",
                                                     "not-an-sa"])
def test_whoami_answers_for_the_impersonated_user(cluster, headers, user):
    status, info = whoami(cluster, headers)
    assert status == 201, info
    assert info == user


@pytest.mark.parametrize("headers,user", [
    ([("Impersonate-User", "system:anonymous")], "system:anonymous"),
    ([("Impersonate-User", "nobody"), ("Impersonate-Group", "system:unauthenticated")], "nobody"),
], ids=["anonymous", "unauthenticated-group"])
def test_impersonated_unauthenticated_users_are_not_authenticated(cluster, headers, user):
    """system:anonymous gets system:unauthenticated, not system:authenticated; nor does a user
    impersonated into system:unauthenticated: neither may use SelfSubjectReview (system:basic-user)."""
    status, body = whoami(cluster, headers)
    assert status == 403
    assert body["message"] == (
        f'selfsubjectreviews.authentication.k8s.io is forbidden: User "{user}" cannot create resource '
        '"selfsubjectreviews" in API group "authentication.k8s.io" at the cluster scope')
    assert raw(cluster, "GET", "/version", headers)[0] == 200  # system:public-info-viewer
    assert raw(cluster, "GET", "/api", headers) == (403, {
        "kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
        "message": f'forbidden: User "{user}" cannot get path "/api"', "reason": "Forbidden", "details": {},
        "code": 403})


def test_kubectl_flags_reach_whoami(cluster):
    out = cluster.kubectl("auth", "whoami", "--as=nobody", "--as-group=devs", "--as-group=ops", "--as-uid=42",
                          "-o", "json").stdout
    assert json.loads(out)["status"]["userInfo"] == {"username": "nobody", "uid": "42",
                                                     "groups": ["devs", "ops", "system:authenticated"]}


def test_rbac_decides_as_the_impersonated_group(cluster, esc_kubeconfig):
    """devs may read and create ConfigMaps in default; nobody alone may not."""
    cluster.kubectl("create", "configmap", "imp-seen", "--from-literal=a=1")
    assert "imp-seen" in cluster.kubectl("get", "cm", "--as=nobody", "--as-group=devs").stdout
    r = cluster.kubectl("get", "cm", "-n", "kube-system", "--as=nobody", "--as-group=devs", check=False)
    assert 'User "nobody" cannot list resource "configmaps" in API group "" in the namespace "kube-system"' in r.stderr
    assert cluster.kubectl("auth", "can-i", "create", "configmaps", "--as=nobody", "--as-group=devs").stdout.strip() \
        == "yes"
    r = cluster.kubectl("auth", "can-i", "delete", "configmaps", "--as=nobody", "--as-group=devs", check=False)
    assert r.stdout.strip() == "no"
    # written as the impersonated user: managedFields as for any kubectl create
    cluster.kubectl("create", "configmap", "imp-made", "--from-literal=a=1", "--as=nobody", "--as-group=devs")
    obj = json.loads(cluster.kubectl("get", "cm", "imp-made", "-o", "json", "--show-managed-fields").stdout)
    assert [m["manager"] for m in obj["metadata"]["managedFields"]] == ["kubectl-create"]


def test_group_uid_or_extra_without_user_is_a_bad_request(cluster):
    cases = [
        ([("Impersonate-Group", "devs")], "requested [{Group  devs    }] without impersonating a user"),
        ([("Impersonate-Uid", "u-1")], "requested [{UID  u-1  authentication.k8s.io/v1  }] without impersonating a user"),
        ([("Impersonate-Extra-Scopes", "view")],
         "requested [{UserExtra  view  authentication.k8s.io/v1  scopes}] without impersonating a user"),
        # an empty user is no user
        ([("Impersonate-User", ""), ("Impersonate-Group", "system:masters")],
         "requested [{Group  system:masters    }] without impersonating a user"),
    ]
    for headers, message in cases:
        status, body = raw(cluster, "GET", "/api/v1/namespaces", headers)
        assert (status, body.get("reason"), body.get("message")) == (400, "BadRequest", message)


def test_certificate_user_cache_never_keeps_the_impersonated_user(cluster):
    """The admin certificate's user is remembered per certificate; an impersonated request must not
    replace it, nor be answered from it."""
    status, admin = whoami(cluster, [])
    assert status == 201 and "system:masters" in admin["groups"]
    assert whoami(cluster, [("Impersonate-User", "nobody")])[1]["username"] == "nobody"
    assert whoami(cluster, [])[1] == admin
    assert whoami(cluster, [("Impersonate-User", "other")])[1]["username"] == "other"


def test_streaming_requests_are_impersonated_too(cluster):
    """A watch goes through aiohttp, not the HTTP/1 fast path: it must be refused all the same."""
    status, body = raw(cluster, "GET", "/api/v1/secrets?watch=1", [("Impersonate-User", "nobody")])
    assert status == 403
    assert body["message"] == ('secrets is forbidden: User "nobody" cannot watch resource "secrets" in API group "" '
                               "at the cluster scope")


def test_api_workers_impersonate(tmp_path):
    """API worker processes serve the whole request path, impersonation included."""
    c = Cluster(str(tmp_path / "data"), datastore="sqlite-workers").start()
    try:
        r = c.kubectl("get", "secrets", "-A", "--as=nobody", check=False)
        assert r.stderr.strip() == ('Error from server (Forbidden): secrets is forbidden: User "nobody" cannot list '
                                    'resource "secrets" in API group "" at the cluster scope')
    finally:
        c.stop()


def test_can_i_list_shows_the_impersonated_users_rules(cluster):
    """SelfSubjectRulesReview for nobody: system:basic-user's resource rules, and the URLs of
    system:discovery and system:public-info-viewer as non-resource rules (kubectl prints both)."""
    rows = [line.split() for line in cluster.kubectl("auth", "can-i", "--list", "--as=nobody").stdout.splitlines()]
    assert rows[0] == ["Resources", "Non-Resource", "URLs", "Resource", "Names", "Verbs"]
    assert rows[1:4] == [[f"{r}", "[]", "[]", "[create]"] for r in (
        "selfsubjectreviews.authentication.k8s.io", "selfsubjectaccessreviews.authorization.k8s.io",
        "selfsubjectrulesreviews.authorization.k8s.io")]
    urls = ["/api/*", "/api", "/apis/*", "/apis", "/healthz", "/healthz", "/livez", "/livez", "/openapi/*",
            "/openapi", "/readyz", "/readyz", "/version/", "/version/", "/version", "/version"]
    assert rows[4:] == [[f"[{u}]", "[]", "[get]"] for u in urls]
    # the admin's own list is cluster-admin's, untouched by the impersonated requests before it
    assert cluster.kubectl("auth", "can-i", "--list").stdout.splitlines()[1].split() == ["*.*", "[]", "[]", "[*]"]


@pytest.mark.parametrize("version", list(kubectl_binaries()) or ["none"])
def test_every_kubectl_version_impersonates(cluster, version):
    if version == "none":
        cluster.kubectl("version")  # fails (or skips) with a clear reason
    r = cluster.kubectl("get", "secrets", "-A", "--as=nobody", version=version, check=False)
    assert r.stderr.strip() == ('Error from server (Forbidden): secrets is forbidden: User "nobody" cannot list '
                                'resource "secrets" in API group "" at the cluster scope')
