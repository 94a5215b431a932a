"""RBAC escalation prevention through the real kubectl: ServiceAccounts allowed only to write RBAC
objects cannot grant themselves (or anyone) more than they hold, by any write path, unless they may
`escalate` or `bind`. Messages as recorded from a real server
(/work/shared/reference/upstream-observed-safety.md) and upstream's pkg/registry/rbac."""

from __future__ import annotations

import base64
import json
import os
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.cluster import Cluster, kubectl_binaries

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("rbac-escalation")

RBAC = "rbac.authorization.k8s.io"
SA_GROUPS = '(groups=["system:serviceaccounts" "system:serviceaccounts:default" "system:authenticated"])'
WRITER_VERBS = "create,update,patch,get,list"


def _who(sa: str) -> str:
    return f'user "system:serviceaccount:default:{sa}" {SA_GROUPS} is attempting to grant RBAC permissions ' \
           "not currently held:\n"


def _apply(c: Cluster, manifest: str) -> None:
    c.kubectl("apply", "-f", "-", input=manifest)


class AsServiceAccount:
    """kubectl with a ServiceAccount's token (its own kubeconfig: no admin certificate beside it)."""

    def __init__(self, c: Cluster, name: str, tmp: Path) -> None:
        self.c = c
        token = c.kubectl("create", "token", name, "-n", "default").stdout.strip()
        admin = yaml.safe_load(Path(c.kubeconfig).read_text())
        ca = admin["clusters"][0]["cluster"].get("certificate-authority-data")
        if ca is None:
            ca = base64.b64encode(Path(admin["clusters"][0]["cluster"]["certificate-authority"]).read_bytes()).decode()
        self.kubeconfig = tmp / f"{name}.kubeconfig"
        self.kubeconfig.write_text(yaml.safe_dump({
            "apiVersion": "v1", "kind": "Config", "current-context": "sa",
            "clusters": [{"name": "c", "cluster": {"server": c.url, "certificate-authority-data": ca}}],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": "sa", "context": {"cluster": "c", "user": name, "namespace": "default"}}],
        }))

    def run(self, *args: str, input: str | None = None) -> subprocess.CompletedProcess[str]:
        binary = list(kubectl_binaries().values())[-1]
        env = dict(os.environ, KUBECONFIG=str(self.kubeconfig), HOME=self.c.home)
        return subprocess.run([binary, *args], input=input, capture_output=True, text=True, env=env, timeout=60)

    def ok(self, *args: str, input: str | None = None) -> str:
        r = self.run(*args, input=input)
        assert r.returncode == 0, r.stderr
        return r.stdout

    def refused(self, *args: str, input: str | None = None) -> str:
        r = self.run(*args, input=input)
        assert r.returncode != 0, f"kubectl {' '.join(args)} was allowed:\n{r.stdout}"
        return r.stderr.strip()


def _sa_with_writer(c: Cluster, name: str, extra_rules: str = "") -> None:
    """A ServiceAccount that may write every RBAC kind (and nothing else but what extra_rules give)."""
    _apply(c, f"""
apiVersion: v1
kind: ServiceAccount
metadata: {{name: {name}, namespace: default}}
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: {name}-writer}}
rules:
- apiGroups: [{RBAC}]
  resources: [roles, rolebindings, clusterroles, clusterrolebindings]
  verbs: [{WRITER_VERBS}]
{extra_rules}
---
apiVersion: {RBAC}/v1
kind: ClusterRoleBinding
metadata: {{name: {name}-writer}}
roleRef: {{apiGroup: {RBAC}, kind: ClusterRole, name: {name}-writer}}
subjects: [{{kind: ServiceAccount, name: {name}, namespace: default}}]
""")


@pytest.fixture(scope="module")
def esc(cluster: Cluster, tmp_path_factory: pytest.TempPathFactory) -> AsServiceAccount:
    """`esc` writes RBAC objects and reads pods in default (so a role with pods+secrets misses only secrets);
    `reader` is a Role it may try to widen; namespace esc-a grants it pod-reader, esc-b nothing."""
    c = cluster
    _sa_with_writer(c, "esc")
    pods = json.dumps(_READER_RULES[:1])
    _apply(c, f"""
apiVersion: v1
kind: Namespace
metadata: {{name: esc-a}}
---
apiVersion: v1
kind: Namespace
metadata: {{name: esc-b}}
---
apiVersion: {RBAC}/v1
kind: Role
metadata: {{name: reader, namespace: default}}
rules: {pods}
---
apiVersion: {RBAC}/v1
kind: ClusterRole
metadata: {{name: esc-pod-reader}}
rules: {pods}
""")
    c.kubectl("create", "clusterrolebinding", "admins", "--clusterrole=cluster-admin", "--user=someone")
    for ns, kind, role in (("default", "Role", "reader"), ("esc-a", "ClusterRole", "esc-pod-reader")):
        _apply(c, json.dumps({"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
                              "metadata": {"name": f"esc-{role}", "namespace": ns},
                              "roleRef": {"apiGroup": RBAC, "kind": kind, "name": role},
                              "subjects": [{"kind": "ServiceAccount", "name": "esc", "namespace": "default"}]}))
    return AsServiceAccount(c, "esc", tmp_path_factory.mktemp("sa"))


_SECRETS_MISSING = '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}'
_WIDER_READER = {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]}
_READER_RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get", "list"]}, _WIDER_READER]


def _reader_manifest(extra: dict | None = None) -> str:
    return json.dumps({"apiVersion": f"{RBAC}/v1", "kind": "Role",
                       "metadata": {"name": "reader", "namespace": "default", **(extra or {})},
                       "rules": _READER_RULES})


ALL = '{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}'

# (id, kubectl args, stdin, the whole of kubectl's stderr)
ROUTES = [
    ("clusterrolebinding-to-cluster-admin",
     ["create", "clusterrolebinding", "grab", "--clusterrole=cluster-admin", "--serviceaccount=default:esc"], None,
     f'error: failed to create clusterrolebinding: clusterrolebindings.{RBAC} "grab" is forbidden: {_who("esc")}{ALL}'),
    ("rolebinding-to-cluster-admin",
     ["create", "rolebinding", "grab", "--clusterrole=cluster-admin", "--serviceaccount=default:esc"], None,
     f'error: failed to create rolebinding: rolebindings.{RBAC} "grab" is forbidden: {_who("esc")}{ALL}'),
    ("role-all", ["create", "role", "all", "--verb=*", "--resource=*"], None,
     f'Error from server (Forbidden): roles.{RBAC} "all" is forbidden: {_who("esc")}'
     '{APIGroups:[""], Resources:["*"], Verbs:["*"]}'),
    ("role-all-dry-run", ["create", "role", "all", "--verb=*", "--resource=*", "--dry-run=server"], None,
     f'Error from server (Forbidden): roles.{RBAC} "all" is forbidden: {_who("esc")}'
     '{APIGroups:[""], Resources:["*"], Verbs:["*"]}'),
    ("clusterrole-nonresource-star", ["create", "clusterrole", "urls", "--verb=get", "--non-resource-url=*"], None,
     f'Error from server (Forbidden): clusterroles.{RBAC} "urls" is forbidden: {_who("esc")}'
     '{NonResourceURLs:["*"], Verbs:["get"]}'),
    ("role-put-secrets", ["replace", "-f", "-"], _reader_manifest(),
     f'Error from server (Forbidden): error when replacing "STDIN": roles.{RBAC} "reader" is forbidden: '
     f'{_who("esc")}{_SECRETS_MISSING}'),
    ("role-merge-patch-secrets", ["patch", "role", "reader", "--type=merge", "-p", json.dumps({"rules": _READER_RULES})],
     None, f'Error from server (Forbidden): roles.{RBAC} "reader" is forbidden: {_who("esc")}{_SECRETS_MISSING}'),
    ("role-strategic-patch-secrets", ["patch", "role", "reader", "-p", json.dumps({"rules": _READER_RULES})],
     None, f'Error from server (Forbidden): roles.{RBAC} "reader" is forbidden: {_who("esc")}{_SECRETS_MISSING}'),
    ("role-json-patch-secrets",
     ["patch", "role", "reader", "--type=json", "-p",
      json.dumps([{"op": "add", "path": "/rules/-", "value": _WIDER_READER}])],
     None, f'Error from server (Forbidden): roles.{RBAC} "reader" is forbidden: {_who("esc")}{_SECRETS_MISSING}'),
    ("role-apply-secrets", ["apply", "--server-side", "--force-conflicts", "-f", "-"], _reader_manifest(),
     f'Error from server (Forbidden): roles.{RBAC} "reader" is forbidden: {_who("esc")}{_SECRETS_MISSING}'),
    ("role-apply-create-secrets", ["apply", "--server-side", "-f", "-"],
     _reader_manifest().replace('"reader"', '"reader2"'),
     f'Error from server (Forbidden): roles.{RBAC} "reader2" is forbidden: {_who("esc")}{_SECRETS_MISSING}'),
    ("join-existing-cluster-admin-binding",
     ["patch", "clusterrolebinding", "admins", "--type=json", "-p",
      json.dumps([{"op": "add", "path": "/subjects/-",
                   "value": {"kind": "ServiceAccount", "name": "esc", "namespace": "default"}}])], None,
     f'Error from server (Forbidden): clusterrolebindings.{RBAC} "admins" is forbidden: {_who("esc")}{ALL}'),
    ("rolebinding-held-only-in-another-namespace",
     ["create", "rolebinding", "pr", "-n", "esc-b", "--clusterrole=esc-pod-reader", "--serviceaccount=default:esc"],
     None, f'error: failed to create rolebinding: rolebindings.{RBAC} "pr" is forbidden: {_who("esc")}'
     '{APIGroups:[""], Resources:["pods"], Verbs:["get" "list"]}'),
    ("rolebinding-to-missing-role",
     ["create", "rolebinding", "nope", "--clusterrole=no-such-role", "--serviceaccount=default:esc"], None,
     f'error: failed to create rolebinding: rolebindings.{RBAC} "nope" is forbidden: '
     f'clusterroles.{RBAC} "no-such-role" not found'),
    ("aggregated-clusterrole", ["create", "-f", "-"],
     json.dumps({"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "gather"},
                 "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/agg": "true"}}]},
                 "rules": []}),
     f'Error from server (Forbidden): error when creating "STDIN": clusterroles.{RBAC} "gather" is forbidden: '
     "must have cluster-admin privileges to use the aggregationRule"),
]


@pytest.mark.parametrize("args,stdin,expected", [r[1:] for r in ROUTES], ids=[r[0] for r in ROUTES])
def test_escalation_route_is_refused(cluster, esc, args, stdin, expected):
    assert esc.refused(*args, input=stdin) == expected


def test_refused_writes_leave_nothing_behind(cluster, esc):
    """The refusals above stored nothing, and the Role kept its rules."""
    esc.refused("create", "clusterrolebinding", "grab2", "--clusterrole=cluster-admin", "--serviceaccount=default:esc")
    assert cluster.kubectl("get", "clusterrolebinding", "grab2", check=False).returncode != 0
    esc.refused("patch", "role", "reader", "--type=merge", "-p", json.dumps({"rules": _READER_RULES}))
    rules = json.loads(cluster.kubectl("get", "role", "reader", "-o", "json").stdout)["rules"]
    assert all("secrets" not in r["resources"] for r in rules)


def test_held_permissions_may_be_granted(cluster, esc):
    """What the requester holds it may grant: 201 in esc-a, where it reads pods; refused in esc-b."""
    esc.ok("create", "rolebinding", "pr", "-n", "esc-a", "--clusterrole=esc-pod-reader", "--serviceaccount=default:x")
    esc.ok("create", "role", "pods", "-n", "esc-a", "--verb=get", "--resource=pods")
    assert "is forbidden" in esc.refused("create", "role", "pods", "-n", "esc-b", "--verb=get", "--resource=pods")
    # a write that changes only finalizers is not checked (the garbage collector's), a widening one is
    esc.ok("patch", "role", "reader", "--type=merge", "-p", '{"metadata":{"finalizers":["example.com/keep"]}}')
    esc.ok("patch", "role", "reader", "--type=merge", "-p", '{"metadata":{"finalizers":null}}')
    assert "is forbidden" in esc.refused("patch", "role", "reader", "--type=merge", "-p",
                                         '{"metadata":{"finalizers":["a/b"]},"rules":[{"apiGroups":[""],'
                                         '"resources":["secrets"],"verbs":["get"]}]}')


def test_escalate_verb_lets_roles_through(cluster, esc, tmp_path):
    _sa_with_writer(cluster, "escalator", f"""- apiGroups: [{RBAC}]
  resources: [roles, clusterroles]
  verbs: [escalate]""")
    sa = AsServiceAccount(cluster, "escalator", tmp_path)
    sa.ok("create", "role", "all", "--verb=*", "--resource=*")
    sa.ok("create", "clusterrole", "urls", "--verb=get", "--non-resource-url=*")
    sa.ok("create", "-f", "-", input=json.dumps({
        "apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": "gather"},
        "aggregationRule": {"clusterRoleSelectors": [{"matchLabels": {"rbac.example.com/agg": "true"}}]}}))
    # escalate is about roles: it does not let the role be bound
    assert "is attempting to grant RBAC permissions not currently held" in sa.refused(
        "create", "rolebinding", "all", "--role=all", "--serviceaccount=default:escalator")


def test_bind_verb_restricted_by_resource_names(cluster, esc, tmp_path):
    _sa_with_writer(cluster, "binder", f"""- apiGroups: [{RBAC}]
  resources: [clusterroles]
  verbs: [bind]
  resourceNames: [cluster-admin]""")
    sa = AsServiceAccount(cluster, "binder", tmp_path)
    sa.ok("create", "rolebinding", "adm", "--clusterrole=cluster-admin", "--user=someone")
    sa.ok("create", "clusterrolebinding", "binder-adm", "--clusterrole=cluster-admin", "--user=someone")
    assert sa.refused("create", "rolebinding", "ed", "--clusterrole=edit", "--serviceaccount=default:binder") \
        .startswith(f'error: failed to create rolebinding: rolebindings.{RBAC} "ed" is forbidden: {_who("binder")}')
    # bind lets bindings through, not roles
    assert "is forbidden" in sa.refused("create", "role", "r", "--verb=get", "--resource=secrets")


def test_admin_is_not_checked(cluster, esc):
    """system:masters (the admin certificate) skips the check, as upstream's EscalationAllowed."""
    cluster.kubectl("create", "clusterrolebinding", "admin-grab", "--clusterrole=cluster-admin", "--user=u1")
    cluster.kubectl("create", "role", "admin-all", "--verb=*", "--resource=*")
    # and what admin granted, the grantee holds: binding cluster-admin to esc lets it through afterwards
    cluster.kubectl("create", "clusterrolebinding", "esc-admin", "--clusterrole=cluster-admin",
                    "--serviceaccount=default:esc")
    try:
        esc.ok("create", "clusterrolebinding", "grab-now", "--clusterrole=cluster-admin", "--serviceaccount=default:esc")
    finally:
        cluster.kubectl("delete", "clusterrolebinding", "esc-admin", "grab-now", check=False)
    assert "is forbidden" in esc.refused("create", "clusterrolebinding", "grab-again", "--clusterrole=cluster-admin",
                                         "--serviceaccount=default:esc")


def test_escalate_restricted_by_resource_names_needs_the_name_in_the_url(cluster, esc, tmp_path):
    """As upstream's RoleEscalationAuthorized: the request's own name counts, so a POST (no name in its
    URL) is not let through by `escalate` on resourceNames; an apply (PATCH .../roles/mine) is."""
    _sa_with_writer(cluster, "named", f"""- apiGroups: [{RBAC}]
  resources: [roles]
  verbs: [escalate]
  resourceNames: [mine]""")
    sa = AsServiceAccount(cluster, "named", tmp_path)
    assert sa.refused("create", "role", "mine", "--verb=*", "--resource=*").startswith(
        f'Error from server (Forbidden): roles.{RBAC} "mine" is forbidden: {_who("named")}')
    manifest = json.dumps({"apiVersion": f"{RBAC}/v1", "kind": "Role", "metadata": {"name": "mine"},
                           "rules": [{"apiGroups": [""], "resources": ["*"], "verbs": ["*"]}]})
    sa.ok("apply", "--server-side", "-f", "-", input=manifest)
    assert "is forbidden" in sa.refused("apply", "--server-side", "-f", "-", input=manifest.replace("mine", "other"))


def test_role_resolution_errors_are_reported(cluster, esc, tmp_path):
    """A binding of the requester's that names a missing role may be why rules are missing: upstream
    appends the resolver's errors (the storage's names for the role: "roles.rbac...")."""
    _sa_with_writer(cluster, "dangling")
    cluster.kubectl("create", "rolebinding", "dangling", "-n", "esc-b", "--role=gone",
                    "--serviceaccount=default:dangling")
    sa = AsServiceAccount(cluster, "dangling", tmp_path)
    assert sa.refused("create", "role", "r", "-n", "esc-b", "--verb=get", "--resource=secrets") == (
        f'Error from server (Forbidden): roles.{RBAC} "r" is forbidden: {_who("dangling")}'
        f'{{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}}; resolution errors: [roles.{RBAC} "gone" not found]')
    # the namespace without the dangling binding reports none
    assert sa.refused("create", "role", "r", "-n", "esc-a", "--verb=get", "--resource=secrets").endswith(
        '{APIGroups:[""], Resources:["secrets"], Verbs:["get"]}')
