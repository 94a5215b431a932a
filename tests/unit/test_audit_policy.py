"""audit.k8s.io/v1 Policy evaluation, as upstream's audit/policy/checker.go: first matching rule wins,
every field a rule sets must match, subresources in the `pods/log` form, `*` forms, resourceNames,
non-resource URLs with a trailing `*`, and omitStages/omitManagedFields merged with the policy's."""

from __future__ import annotations

import pytest

from pyk8s.apiserver.audit.event import micro_time, new_audit_id, request_verb, source_ips
from pyk8s.apiserver.audit.logbackend import backup_name
from pyk8s.apiserver.audit.policy import Attributes, PolicyError, parse_policy
from pyk8s.apiserver.authz import RequestAttributes

POLICY = b"""
apiVersion: audit.k8s.io/v1
kind: Policy
omitStages: [RequestReceived]
omitManagedFields: true
rules:
- level: None
  users: [system:kube-proxy]
  verbs: [watch]
- level: RequestResponse
  omitStages: [ResponseStarted]
  omitManagedFields: false
  resources: [{group: "", resources: ["pods/log", "pods/status"]}]
- level: Request
  resources: [{group: "", resources: ["configmaps"], resourceNames: ["controller-leader"]}]
  namespaces: [kube-system]
- level: Request
  resources: [{group: "apps", resources: ["deployments/*"]}, {group: "", resources: ["*/exec"]}]
- level: Metadata
  userGroups: [system:nodes]
- level: None
  nonResourceURLs: [/healthz*, /version]
- level: Metadata
  resources: [{group: "rbac.authorization.k8s.io"}]
"""


def res(verb: str, resource: str, sub: str = "", name: str = "", ns: str = "default", group: str = "",
        user: str | None = "alice", groups: tuple[str, ...] = ("system:authenticated",)) -> Attributes:
    return Attributes(user, groups, RequestAttributes(verb, group, resource, sub, name, ns, True))


def path(p: str, verb: str = "get", user: str | None = "alice") -> Attributes:
    return Attributes(user, ("system:authenticated",), RequestAttributes(verb, path=p, resource_request=False))


def level(a: Attributes) -> str:
    return parse_policy(POLICY).evaluate(a).level


def test_first_matching_rule_wins_and_all_fields_must_match() -> None:
    assert level(res("watch", "endpoints", user="system:kube-proxy")) == "None"
    assert level(res("list", "endpoints", user="system:kube-proxy")) == "None"  # default: no rule matches
    assert level(res("get", "pods", "log")) == "RequestResponse"
    assert level(res("get", "pods")) == "None"  # pods/log does not name pods themselves


def test_resource_names_and_namespaces() -> None:
    assert level(res("update", "configmaps", name="controller-leader", ns="kube-system")) == "Request"
    assert level(res("update", "configmaps", name="controller-leader", ns="default")) == "None"
    assert level(res("update", "configmaps", name="other", ns="kube-system")) == "None"


def test_wildcard_forms() -> None:
    assert level(res("get", "deployments", group="apps")) == "Request"  # resource/* includes the resource
    assert level(res("update", "deployments", "scale", group="apps")) == "Request"
    assert level(res("get", "deployments", group="extensions")) == "None"  # the group must match
    assert level(res("create", "pods", "exec")) == "Request"  # */exec
    assert level(res("create", "pods", "attach")) == "None"
    assert level(res("get", "clusterroles", group="rbac.authorization.k8s.io", ns="")) == "Metadata"  # no resources: all


def test_user_groups_and_unauthenticated() -> None:
    assert level(res("get", "secrets", groups=("system:nodes",))) == "Metadata"
    assert level(res("get", "secrets", user=None, groups=())) == "None"  # failed authentication: no user


def test_non_resource_urls() -> None:
    assert level(path("/healthz")) == "None"
    assert level(path("/healthz/etcd")) == "None"
    assert level(path("/version")) == "None"
    assert level(path("/versionz")) == "None"  # default
    assert parse_policy(b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"
                        b"  nonResourceURLs: [/api*]\n").evaluate(path("/apis/apps")).level == "Metadata"
    # a resource request never matches a nonResourceURLs rule
    p = parse_policy(b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  nonResourceURLs: ['*']\n")
    assert p.evaluate(res("get", "pods")).level == "None"


def test_stages_and_managed_fields_merge_with_the_policy() -> None:
    p = parse_policy(POLICY)
    d = p.evaluate(res("get", "pods", "log"))
    assert d.omit_stages == {"RequestReceived", "ResponseStarted"} and d.omit_managed_fields is False
    d = p.evaluate(res("get", "secrets", groups=("system:nodes",)))
    assert d.omit_stages == {"RequestReceived"} and d.omit_managed_fields is True
    d = p.evaluate(res("get", "nothing"))  # the default keeps the policy's stages too
    assert d.level == "None" and d.omit_stages == {"RequestReceived"}


@pytest.mark.parametrize(("doc", "message"), [
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- {}\n", "rules[0].level: Required value"),
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  omitStages: [Done]\n",
     'rules[0].omitStages[0]: Unsupported value: "Done": supported values: "RequestReceived", "ResponseStarted", '
     '"ResponseComplete", "Panic"'),
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/a*b]\n",
     "non-resource URL wildcards '*' must be the final character of the rule"),
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  nonResourceURLs: [/a]\n"
     b"  resources: [{group: ''}]\n", "rules cannot apply to both regular resources and non-resource URLs"),
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: 'Not_A_Group'}]\n",
     "rules[0].resources[0].group: Invalid value"),
    (b"[1, 2]", "not an audit.k8s.io/v1 Policy object"),
    (b"kind: Policy\napiVersion: v1\nrules: [{level: None}]\n", "expected audit.k8s.io/v1, Kind=Policy"),
    (b"apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  users: alice\n", "must be a list"),
])
def test_invalid_policies_are_refused(doc: bytes, message: str) -> None:
    with pytest.raises(PolicyError) as ei:
        parse_policy(doc, "p.yaml")
    assert message in str(ei.value)


def test_event_parts() -> None:
    import datetime as dt
    import re

    assert re.match(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$", new_audit_id())
    assert len({new_audit_id() for _ in range(1000)}) == 1000
    assert micro_time(1_795_778_965_123_456_789) == "2026-11-27T11:29:25.123456Z"
    assert request_verb("GET", "", True, False, "true") == "watch"
    assert request_verb("GET", "", True, True, None) == "watch"
    assert request_verb("GET", "", True, False, None) == "list"
    assert request_verb("DELETE", "", True, False, None) == "deletecollection"
    assert request_verb("POST", "", False, False, None) == "post"
    # upstream's SourceIPs: forwarded chain, X-Real-Ip when new, the peer unless already last
    assert source_ips({"X-Forwarded-For": "10.0.0.1, junk, 10.0.0.2", "X-Real-Ip": "10.0.0.1"}, "10.0.0.2") == \
        ["10.0.0.1", "10.0.0.2"]
    assert source_ips({}, "::ffff:127.0.0.1") == ["127.0.0.1"]
    assert source_ips({"X-Forwarded-For": "2001:db8::1"}, "127.0.0.1") == ["2001:db8::1", "127.0.0.1"]
    when = dt.datetime(2026, 11, 27, 11, 2, 36, 123456, tzinfo=dt.UTC)
    assert backup_name("/var/log/audit.log", when) == "/var/log/audit-2026-11-27T11-02-36.123.log"
    assert backup_name("/var/log/audit", when) == "/var/log/audit-2026-11-27T11-02-36.123"


def test_audit_ids_stay_unique_in_a_forked_child() -> None:
    """Every answer carries a new Audit-Id: a forked process must not hand out its parent's next ones."""
    import os
    import re

    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: its next IDs, then exit without running the test session's cleanup
        try:
            os.write(w, ",".join(new_audit_id() for _ in range(100)).encode())
        finally:
            os._exit(0)
    os.close(w)
    with os.fdopen(r) as f:
        child = set(f.read().split(","))
    os.waitpid(pid, 0)
    parent = {new_audit_id() for _ in range(100)}
    assert len(child) == 100 and not child & parent
    uuid4 = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$")
    assert all(uuid4.match(i) for i in child | parent)
