"""Covers/breakdown/compaction and the escalation message, as upstream's pkg/registry/rbac/validation
(policy_comparator_test.go, policy_compact_test.go) and the message recorded from a real server
(/work/shared/reference/upstream-observed-safety.md)."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.apiserver.rbac_validation import (
    breakdown_rule,
    compact_rules,
    compact_string,
    covers,
    escalation_message,
    rule_covers,
)

SA = "system:serviceaccount:default:esc"
SA_GROUPS = ["system:serviceaccounts", "system:serviceaccounts:default", "system:authenticated"]


def rule(verbs: list[str], groups: list[str] | None = None, resources: list[str] | None = None,
         names: list[str] | None = None, urls: list[str] | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"verbs": verbs}
    if groups is not None:
        r["apiGroups"] = groups
    if resources is not None:
        r["resources"] = resources
    if names is not None:
        r["resourceNames"] = names
    if urls is not None:
        r["nonResourceURLs"] = urls
    return r


def test_breakdown_is_one_verb_group_resource_name_each():
    got = breakdown_rule(rule(["get", "list"], ["", "apps"], ["pods"], ["a", "b"], ["/x"]))
    assert got[0] == {"apiGroups": [""], "resources": ["pods"], "verbs": ["get"], "resourceNames": ["a"]}
    assert len(got) == 2 * 2 * 2 + 2  # groups x verbs x names, then urls x verbs
    assert got[-2:] == [{"nonResourceURLs": ["/x"], "verbs": ["get"]}, {"nonResourceURLs": ["/x"], "verbs": ["list"]}]


@pytest.mark.parametrize("owner,servant,ok", [
    # stars cover everything of their kind, exact names cover themselves only
    ([rule(["*"], ["*"], ["*"])], [rule(["delete"], ["apps"], ["deployments"])], True),
    ([rule(["get"], [""], ["pods"])], [rule(["get", "list"], [""], ["pods"])], False),
    ([rule(["get"], [""], ["pods"])], [rule(["get"], [""], ["*"])], False),  # "*" is not a resource one holds
    ([rule(["get"], [""], ["pods"])], [rule(["get"], ["*"], ["pods"])], False),
    ([rule(["get"], [""], ["pods"])], [rule(["get"], [""], ["pods/log"])], False),  # a subresource is its own
    ([rule(["get"], [""], ["*/scale"])], [rule(["get"], ["" ], ["deployments/scale"])], True),
    ([rule(["get"], [""], ["*/scale"])], [rule(["get"], [""], ["deployments"])], False),
    # resourceNames: a name-restricted owner never covers "every name"
    ([rule(["get"], [""], ["secrets"], ["a"])], [rule(["get"], [""], ["secrets"])], False),
    ([rule(["get"], [""], ["secrets"], ["a", "b"])], [rule(["get"], [""], ["secrets"], ["a"])], True),
    ([rule(["get"], [""], ["secrets"])], [rule(["get"], [""], ["secrets"], ["a"])], True),
    # non-resource URLs: exact, or a trailing "*" prefix; never from resource rules
    ([rule(["get"], urls=["/healthz/*"])], [rule(["get"], urls=["/healthz/etcd"])], True),
    ([rule(["get"], urls=["/healthz"])], [rule(["get"], urls=["/healthz/etcd"])], False),
    ([rule(["get"], urls=["/api"])], [rule(["get"], urls=["*"])], False),
    ([rule(["*"], ["*"], ["*"])], [rule(["get"], urls=["/healthz"])], False),
    ([rule(["get"], urls=["*"])], [rule(["get"], [""], ["pods"])], False),
    # an owner with several rules covers piece by piece
    ([rule(["get"], [""], ["pods"]), rule(["list"], [""], ["pods"])], [rule(["get", "list"], [""], ["pods"])], True),
    ([], [], True),
])
def test_covers(owner, servant, ok):
    assert covers(owner, servant)[0] is ok


def test_covers_returns_the_broken_down_missing_rules():
    ok, missing = covers([rule(["get"], [""], ["pods"])], [rule(["get", "delete"], [""], ["pods", "secrets"])])
    assert not ok
    assert missing == [
        {"apiGroups": [""], "resources": ["pods"], "verbs": ["delete"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["delete"]},
    ]


def test_rule_covers_star_verbs_groups():
    assert rule_covers(rule(["*"], ["*"], ["pods"]), {"apiGroups": ["x"], "resources": ["pods"], "verbs": ["y"]})


def test_compact_merges_verbs_of_one_group_resource_name():
    got = compact_rules([
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"nonResourceURLs": ["/x"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]},
    ])
    assert got == [
        {"nonResourceURLs": ["/x"], "verbs": ["get"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get", "list"]},
        {"apiGroups": [""], "resources": ["secrets"], "verbs": ["get"], "resourceNames": ["a"]},
    ]


def test_compact_string_fields_and_order():
    assert compact_string(rule(["get", "list"], [""], ["secrets"], ["a"])) == \
        '{APIGroups:[""], Resources:["secrets"], ResourceNames:["a"], Verbs:["get" "list"]}'
    assert compact_string(rule(["*"], urls=["*"])) == '{NonResourceURLs:["*"], Verbs:["*"]}'
    assert compact_string({"verbs": []}) == "{}"


def test_message_as_upstream_for_cluster_admin():
    """The clusterrolebinding-to-cluster-admin answer recorded from a real server."""
    _, missing = covers([], [rule(["*"], ["*"], ["*"]), rule(["*"], urls=["*"])])
    assert escalation_message(SA, SA_GROUPS, missing) == (
        'user "system:serviceaccount:default:esc" (groups=["system:serviceaccounts" '
        '"system:serviceaccounts:default" "system:authenticated"]) is attempting to grant RBAC permissions '
        'not currently held:\n{APIGroups:["*"], Resources:["*"], Verbs:["*"]}\n{NonResourceURLs:["*"], Verbs:["*"]}'
    )


def test_message_sorts_dedups_and_appends_resolution_errors():
    _, missing = covers([], [rule(["list", "get"], [""], ["secrets"]), rule(["get"], ["apps"], ["deployments"])])
    msg = escalation_message("u", [], missing, ['roles.rbac.authorization.k8s.io "x" not found'])
    assert msg == (
        'user "u" (groups=[]) is attempting to grant RBAC permissions not currently held:\n'
        '{APIGroups:[""], Resources:["secrets"], Verbs:["list" "get"]}\n'
        '{APIGroups:["apps"], Resources:["deployments"], Verbs:["get"]}'
        '; resolution errors: [roles.rbac.authorization.k8s.io "x" not found]'
    )
    two = escalation_message("u", [], missing, ["e1", "e2", "e1"])
    assert two.endswith("; resolution errors: [[e1, e2]]")


def test_message_quotes_names_as_go():
    assert escalation_message('a"b', ["g\\"], [rule(["get"], [""], ["pods"])]).startswith(
        'user "a\\"b" (groups=["g\\\\"])')
