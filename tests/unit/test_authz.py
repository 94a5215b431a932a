"""RBAC authorizer: rule matching, binding resolution, aggregation, messages, bootstrap policy."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.apiserver.authn import UserInfo, anonymous_user
from pyk8s.apiserver.authz import (
    AUTOUPDATE_ANNOTATION,
    RBACAuthorizer,
    RBACIndex,
    RequestAttributes,
    bootstrap_policy,
    forbidden_error,
    label_selector_matches,
)

RBAC = "rbac.authorization.k8s.io/v1"


def cr(
    name: str,
    rules: list[dict[str, Any]],
    labels: dict[str, str] | None = None,
    agg: dict[str, Any] | None = None,
) -> dict[str, Any]:
    o: dict[str, Any] = {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": name, "labels": labels or {}},
        "rules": rules,
    }
    if agg is not None:
        o["aggregationRule"] = {"clusterRoleSelectors": [agg]}
    return o


def role(ns: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {"apiVersion": RBAC, "kind": "Role", "metadata": {"name": name, "namespace": ns}, "rules": rules}


def subj(kind: str, name: str, ns: str = "") -> dict[str, Any]:
    s = {"kind": kind, "name": name}
    if ns:
        s["namespace"] = ns
    return s


def crb(name: str, role_name: str, *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role_name},
        "subjects": list(subjects),
    }


def rb(ns: str, name: str, kind: str, role_name: str, *subjects: dict[str, Any]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": name, "namespace": ns},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": kind, "name": role_name},
        "subjects": list(subjects),
    }


def R(
    verbs: list[str], groups: list[str], resources: list[str], names: list[str] | None = None
) -> dict[str, Any]:
    r: dict[str, Any] = {"verbs": verbs, "apiGroups": groups, "resources": resources}
    if names:
        r["resourceNames"] = names
    return r


OBJECTS = [
    cr("pod-reader", [R(["get", "list", "watch"], [""], ["pods"])]),
    cr("named-cm", [R(["get"], [""], ["configmaps"], ["app-config"])]),
    cr("scaler", [R(["update", "get"], ["apps"], ["*/scale"])]),
    cr("logs", [R(["get"], [""], ["pods/log"])]),
    cr("metrics", [{"verbs": ["get"], "nonResourceURLs": ["/metrics", "/logs/*"]}]),
    cr("everything", [R(["*"], ["*"], ["*"])]),
    cr("agg", [], agg={"matchLabels": {"example.com/agg": "true"}}),
    cr("agg-part", [R(["get"], [""], ["secrets"])], labels={"example.com/agg": "true"}),
    role("team", "deployer", [R(["*"], ["apps"], ["deployments"])]),
    crb("read-pods", "pod-reader", subj("User", "alice")),
    crb("scrape", "metrics", subj("Group", "monitoring")),
    crb("hpa", "scaler", subj("ServiceAccount", "hpa", "kube-system")),
    crb("agg-users", "agg", subj("User", "agguser")),
    crb("dangling", "nope", subj("User", "carol")),
    rb("team", "bob-deploys", "Role", "deployer", subj("User", "bob")),
    rb("team", "devs-read", "ClusterRole", "pod-reader", subj("Group", "team-devs")),
    rb("team", "builder-cm", "ClusterRole", "named-cm", subj("ServiceAccount", "builder")),
    rb("team", "bob-logs", "ClusterRole", "logs", subj("User", "bob")),
    rb("team", "dangling-role", "Role", "missing", subj("User", "carol")),
    rb("other", "everything", "ClusterRole", "everything", subj("User", "dora")),
]

alice = UserInfo("alice", groups=["system:authenticated"])
bob = UserInfo("bob", groups=["system:authenticated"])
carol = UserInfo("carol", groups=["system:authenticated"])
dora = UserInfo("dora", groups=["system:authenticated"])
dev = UserInfo("eve", groups=["team-devs", "system:authenticated"])
prom = UserInfo("prom", groups=["monitoring"])
hpa = UserInfo("system:serviceaccount:kube-system:hpa", groups=["system:serviceaccounts"])
builder = UserInfo("system:serviceaccount:team:builder", groups=["system:serviceaccounts"])
other_builder = UserInfo("system:serviceaccount:other:builder", groups=["system:serviceaccounts"])
agguser = UserInfo("agguser")
root = UserInfo("root", groups=["system:masters"])


def res(
    verb: str, resource: str, ns: str = "", name: str = "", group: str = "", sub: str = ""
) -> RequestAttributes:
    return RequestAttributes(
        verb=verb, api_group=group, resource=resource, subresource=sub, name=name, namespace=ns
    )


def url(verb: str, path: str) -> RequestAttributes:
    return RequestAttributes(verb=verb, resource_request=False, path=path)


@pytest.fixture(scope="module")
def authz() -> RBACAuthorizer:
    return RBACAuthorizer(RBACIndex(OBJECTS))


CASES = [
    # (user, attrs, allowed, expected reason)
    (
        alice,
        res("list", "pods", "default"),
        True,
        'RBAC: allowed by ClusterRoleBinding "read-pods" of ClusterRole "pod-reader" to User "alice"',
    ),
    (alice, res("watch", "pods"), True, None),  # cluster-wide list/watch via a ClusterRoleBinding
    (alice, res("delete", "pods", "default", "p"), False, ""),
    (alice, res("get", "pods", "default", "p", sub="log"), False, ""),  # subresource needs its own rule
    (alice, res("list", "pods", "default", group="apps"), False, ""),  # group must match
    (
        bob,
        res("patch", "deployments", "team", "web", group="apps"),
        True,
        'RBAC: allowed by RoleBinding "bob-deploys/team" of Role "deployer" to User "bob"',
    ),
    (
        bob,
        res("patch", "deployments", "prod", "web", group="apps"),
        False,
        "",
    ),  # RoleBinding is namespace-limited
    (bob, res("get", "pods", "team", "p", sub="log"), True, None),
    (
        dev,
        res("get", "pods", "team", "p"),
        True,
        'RBAC: allowed by RoleBinding "devs-read/team" of ClusterRole "pod-reader" to Group "team-devs"',
    ),
    (dev, res("list", "pods"), False, ""),  # ClusterRole via RoleBinding does not grant cluster scope
    (
        builder,
        res("get", "configmaps", "team", "app-config"),
        True,
        'RBAC: allowed by RoleBinding "builder-cm/team" of ClusterRole "named-cm" to ServiceAccount "builder/team"',
    ),
    (builder, res("get", "configmaps", "team", "other"), False, ""),  # resourceNames
    (builder, res("list", "configmaps", "team"), False, ""),  # list has no name: resourceNames never match
    (
        other_builder,
        res("get", "configmaps", "team", "app-config"),
        False,
        "",
    ),  # unqualified SA = binding namespace
    (
        hpa,
        res("update", "deployments", "x", "d", group="apps", sub="scale"),
        True,
        'RBAC: allowed by ClusterRoleBinding "hpa" of ClusterRole "scaler" to ServiceAccount "hpa/kube-system"',
    ),
    (hpa, res("update", "statefulsets", "x", "s", group="apps", sub="scale"), True, None),  # */scale
    (hpa, res("update", "deployments", "x", "d", group="apps"), False, ""),  # */scale is not the parent
    (hpa, res("update", "deployments", "x", "d", group="apps", sub="status"), False, ""),
    (
        prom,
        url("get", "/metrics"),
        True,
        'RBAC: allowed by ClusterRoleBinding "scrape" of ClusterRole "metrics" to Group "monitoring"',
    ),
    (prom, url("get", "/logs/kube-apiserver.log"), True, None),  # trailing * prefix
    (prom, url("get", "/logs"), False, ""),  # "/logs/*" needs the slash
    (prom, url("post", "/metrics"), False, ""),
    (prom, res("get", "pods", "default"), False, ""),  # non-resource rules don't grant resources
    (
        agguser,
        res("get", "secrets", "any", "s"),
        True,
        'RBAC: allowed by ClusterRoleBinding "agg-users" of ClusterRole "agg" to User "agguser"',
    ),
    (dora, res("delete", "widgets", "other", group="example.com"), True, None),
    (dora, res("delete", "widgets", "default", group="example.com"), False, ""),
    (root, res("delete", "nodes", name="n1"), True, ""),  # system:masters always
    (root, url("delete", "/anything"), True, ""),
    (
        carol,
        res("get", "pods", "team", "p"),
        False,
        'RBAC: [clusterrole.rbac.authorization.k8s.io "nope" not found, role.rbac.authorization.k8s.io "missing" not found]',
    ),
    (
        carol,
        res("get", "pods", "", "p"),
        False,
        'RBAC: clusterrole.rbac.authorization.k8s.io "nope" not found',
    ),
    (anonymous_user(), url("get", "/metrics"), False, ""),
]


@pytest.mark.parametrize(
    ("user", "attrs", "allowed", "reason"),
    CASES,
    ids=[f"{i}-{c[0].name}-{c[1].verb}" for i, c in enumerate(CASES)],
)
def test_rbac_table(
    authz: RBACAuthorizer, user: UserInfo, attrs: RequestAttributes, allowed: bool, reason: str | None
) -> None:
    got_allowed, got_reason = authz.authorize(user, attrs)
    assert got_allowed is allowed
    if reason is not None:
        assert got_reason == reason


MESSAGES = [
    (
        "alice",
        res("list", "pods", "default"),
        "",
        'pods is forbidden: User "alice" cannot list resource "pods" in API group "" in the namespace "default"',
    ),
    (
        "alice",
        res("list", "nodes"),
        "",
        'nodes is forbidden: User "alice" cannot list resource "nodes" in API group "" at the cluster scope',
    ),
    (
        "bob",
        res("get", "pods", "team", "web-0", sub="log"),
        "",
        'pods "web-0" is forbidden: User "bob" cannot get resource "pods/log" in API group "" in the namespace "team"',
    ),
    (
        "bob",
        res("create", "deployments", "prod", group="apps"),
        "",
        'deployments.apps is forbidden: User "bob" cannot create resource "deployments" in API group "apps" in the namespace "prod"',
    ),
    (
        "system:anonymous",
        url("get", "/metrics"),
        "",
        'forbidden: User "system:anonymous" cannot get path "/metrics"',
    ),
    (
        "carol",
        res("get", "pods", "team", "p"),
        'RBAC: role.rbac.authorization.k8s.io "missing" not found',
        'pods "p" is forbidden: User "carol" cannot get resource "pods" in API group "" in the namespace "team": '
        'RBAC: role.rbac.authorization.k8s.io "missing" not found',
    ),
]


@pytest.mark.parametrize(("user", "attrs", "reason", "message"), MESSAGES)
def test_forbidden_messages(user: str, attrs: RequestAttributes, reason: str, message: str) -> None:
    err = forbidden_error(user, attrs, reason)
    assert err.code == 403 and err.reason == "Forbidden"
    assert err.message == message
    st = err.status()
    assert st["reason"] == "Forbidden" and st["message"] == message
    if attrs.resource_request:
        assert st["details"]["kind"] == attrs.resource
        assert st["details"].get("name", "") == attrs.name


def test_index_updates_and_aggregation() -> None:
    idx = RBACIndex(OBJECTS)
    az = RBACAuthorizer(idx)
    assert az.authorize(alice, res("get", "pods", "x", "p"))[0]
    idx.delete(crb("read-pods", "pod-reader"))
    assert not az.authorize(alice, res("get", "pods", "x", "p"))[0]

    # a newly labelled ClusterRole joins the aggregation; relabelling removes it again
    assert not az.authorize(agguser, res("list", "services", "x"))[0]
    idx.upsert(cr("agg-more", [R(["list"], [""], ["services"])], labels={"example.com/agg": "true"}))
    assert az.authorize(agguser, res("list", "services", "x"))[0]
    idx.upsert(cr("agg-more", [R(["list"], [""], ["services"])], labels={}))
    assert not az.authorize(agguser, res("list", "services", "x"))[0]
    agg = idx.get_cluster_role("agg")
    assert agg is not None and agg["rules"] == [R(["get"], [""], ["secrets"])]

    # RoleBindings update and delete
    idx.delete(rb("team", "bob-deploys", "Role", "deployer"))
    assert not az.authorize(bob, res("patch", "deployments", "team", "web", group="apps"))[0]
    rules, errors = az.rules_for(carol, "team")
    assert rules == [] and len(errors) == 2


def test_aggregation_cycle_does_not_recurse_forever() -> None:
    a = cr("a", [R(["get"], [""], ["pods"])], labels={"to-b": "true"}, agg={"matchLabels": {"to-a": "true"}})
    b = cr("b", [R(["get"], [""], ["nodes"])], labels={"to-a": "true"}, agg={"matchLabels": {"to-b": "true"}})
    idx = RBACIndex([a, b])
    assert idx.cluster_role_rules("a") is not None and idx.cluster_role_rules("b") is not None


def test_label_selector_expressions() -> None:
    sel = {
        "matchExpressions": [
            {"key": "tier", "operator": "In", "values": ["a", "b"]},
            {"key": "x", "operator": "DoesNotExist"},
        ]
    }
    assert label_selector_matches(sel, {"tier": "a"})
    assert not label_selector_matches(sel, {"tier": "c"})
    assert not label_selector_matches(sel, {"tier": "a", "x": "1"})
    assert label_selector_matches({}, {"any": "thing"})
    assert not label_selector_matches({"matchExpressions": [{"key": "k", "operator": "Exists"}]}, {})
    assert label_selector_matches(
        {"matchExpressions": [{"key": "k", "operator": "NotIn", "values": ["v"]}]}, {}
    )


# --------------------------------------------------------------------------- bootstrap policy


@pytest.fixture(scope="module")
def policy() -> list[dict[str, Any]]:
    return bootstrap_policy()


def _by(policy: list[dict[str, Any]], kind: str) -> dict[str, dict[str, Any]]:
    return {
        o["metadata"]["name"]: o for o in policy if o["kind"] == kind and not o["metadata"].get("namespace")
    }


def test_bootstrap_objects_shape(policy: list[dict[str, Any]]) -> None:
    roles, bindings = _by(policy, "ClusterRole"), _by(policy, "ClusterRoleBinding")
    for name in (
        "cluster-admin",
        "admin",
        "edit",
        "view",
        "system:discovery",
        "system:basic-user",
        "system:public-info-viewer",
        "system:node",
        "system:kube-scheduler",
        "system:kube-controller-manager",
        "system:node-proxier",
        "system:monitoring",
        "system:service-account-issuer-discovery",
    ):
        assert name in roles, name
    for o in policy:
        assert o["apiVersion"] == RBAC
        assert o["metadata"]["labels"]["kubernetes.io/bootstrapping"] == "rbac-defaults"
        assert o["metadata"]["annotations"][AUTOUPDATE_ANNOTATION] == "true"
    assert bindings["cluster-admin"]["subjects"] == [
        {"kind": "Group", "apiGroup": "rbac.authorization.k8s.io", "name": "system:masters"}
    ]
    assert [s["name"] for s in bindings["system:public-info-viewer"]["subjects"]] == [
        "system:authenticated",
        "system:unauthenticated",
    ]
    assert [s["name"] for s in bindings["system:discovery"]["subjects"]] == ["system:authenticated"]
    assert "subjects" not in bindings["system:node"]
    assert roles["view"]["metadata"]["labels"]["rbac.authorization.k8s.io/aggregate-to-edit"] == "true"
    assert roles["admin"]["aggregationRule"]["clusterRoleSelectors"] == [
        {"matchLabels": {"rbac.authorization.k8s.io/aggregate-to-admin": "true"}}
    ]
    # rules are sorted as upstream's rule builder leaves them
    for r in roles["system:aggregate-to-view"]["rules"]:
        assert r["resources"] == sorted(r["resources"]) and r["verbs"] == sorted(r["verbs"])
    ns_objs = [o for o in policy if o["metadata"].get("namespace")]
    assert {o["metadata"]["namespace"] for o in ns_objs} == {"kube-system", "kube-public"}
    assert len({(o["kind"], o["metadata"].get("namespace"), o["metadata"]["name"]) for o in policy}) == len(
        policy
    )


def test_bootstrap_policy_grants(policy: list[dict[str, Any]]) -> None:
    az = RBACAuthorizer(RBACIndex(policy))
    authed = UserInfo("someone", groups=["system:authenticated"])
    anon = anonymous_user()
    assert az.authorize(authed, url("get", "/apis/apps/v1"))[0]
    assert az.authorize(authed, url("get", "/version"))[0]
    assert az.authorize(authed, res("create", "selfsubjectaccessreviews", group="authorization.k8s.io"))[0]
    assert not az.authorize(authed, res("list", "pods", "default"))[0]
    assert az.authorize(anon, url("get", "/healthz"))[0]
    assert az.authorize(anon, url("get", "/version"))[0]
    assert not az.authorize(anon, url("get", "/api"))[0]
    assert not az.authorize(anon, url("get", "/metrics"))[0]
    sched = UserInfo("system:kube-scheduler", groups=["system:authenticated"])
    assert az.authorize(sched, res("create", "pods", "default", "p", sub="binding"))[0]
    assert az.authorize(
        sched, res("update", "leases", "kube-system", "kube-scheduler", group="coordination.k8s.io")
    )[0]
    assert not az.authorize(
        sched, res("update", "leases", "default", "other", group="coordination.k8s.io")
    )[0]
    kcm = UserInfo("system:kube-controller-manager", groups=["system:authenticated"])
    assert az.authorize(kcm, res("watch", "deployments", group="apps"))[0]
    proxy = UserInfo("system:kube-proxy", groups=["system:authenticated"])
    assert az.authorize(proxy, res("watch", "endpointslices", group="discovery.k8s.io"))[0]
    sa = UserInfo(
        "system:serviceaccount:default:default",
        groups=["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"],
    )
    assert az.authorize(sa, url("get", "/openid/v1/jwks"))[0]

    # the user-facing roles through a RoleBinding
    idx = RBACIndex(policy)
    for role_name, user in (("view", "v"), ("edit", "e"), ("admin", "a")):
        idx.upsert(rb("dev", f"{user}-binding", "ClusterRole", role_name, subj("User", user)))
    az = RBACAuthorizer(idx)
    v, e, a = (UserInfo(n, groups=["system:authenticated"]) for n in ("v", "e", "a"))
    assert az.authorize(v, res("list", "pods", "dev"))[0]
    assert not az.authorize(v, res("get", "secrets", "dev", "s"))[0]
    assert not az.authorize(v, res("create", "pods", "dev"))[0]
    assert az.authorize(e, res("create", "deployments", "dev", group="apps"))[0]
    assert az.authorize(e, res("get", "secrets", "dev", "s"))[0]
    assert az.authorize(e, res("list", "pods", "dev"))[0]  # edit includes view
    assert not az.authorize(e, res("create", "rolebindings", "dev", group="rbac.authorization.k8s.io"))[0]
    assert az.authorize(a, res("create", "rolebindings", "dev", group="rbac.authorization.k8s.io"))[0]
    assert az.authorize(a, res("delete", "pods", "dev", "p"))[0]  # admin includes edit
    assert not az.authorize(a, res("delete", "pods", "other", "p"))[0]

    roles = _by(policy, "ClusterRole")
    view_keys = {repr(r) for r in roles["view"]["rules"]}
    assert (
        view_keys <= {repr(r) for r in roles["edit"]["rules"]} <= {repr(r) for r in roles["admin"]["rules"]}
    )
