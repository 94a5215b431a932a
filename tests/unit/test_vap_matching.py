"""ValidatingAdmissionPolicy matching (apiserver/vap/matching.py): resource rules with subresources,
scope, excluded rules, matchPolicy, namespace and object selectors, as upstream matches them."""

from __future__ import annotations

from typing import Any

from pyk8s.apiserver.vap.matching import Attributes, matches


def attrs(resource: str = "deployments", sub: str = "", op: str = "CREATE", group: str = "apps",
          version: str = "v1", namespaced: bool = True, labels: dict[str, str] | None = None,
          old_labels: dict[str, str] | None = None, others: tuple[str, ...] = ()) -> Attributes:
    obj = {"metadata": {"labels": labels}} if labels is not None else {"metadata": {}}
    old = {"metadata": {"labels": old_labels}} if old_labels is not None else None
    return Attributes(group, version, resource, sub, "Deployment", "ns" if namespaced else "", "x", op, namespaced,
                      obj, old, others)


def rule(resources: list[str], ops: list[str] | None = None, groups: list[str] | None = None,
         versions: list[str] | None = None, scope: str | None = None) -> dict[str, Any]:
    r: dict[str, Any] = {"apiGroups": groups or ["apps"], "apiVersions": versions or ["v1"],
                         "operations": ops or ["*"], "resources": resources}
    if scope:
        r["scope"] = scope
    return r


def m(rules: list[dict[str, Any]], a: Attributes, **extra: Any) -> bool:
    return matches({"resourceRules": rules, **extra}, a, {"env": "test"}, require_rules=True)


def test_subresources_match_only_when_named() -> None:
    assert m([rule(["deployments"])], attrs())
    assert not m([rule(["deployments"])], attrs(sub="status"))
    assert m([rule(["deployments/status"])], attrs(sub="status"))
    assert m([rule(["*/status"])], attrs(sub="status"))
    assert m([rule(["deployments/*"])], attrs(sub="scale"))
    assert not m([rule(["deployments/*"])], attrs())
    assert m([rule(["*/*"])], attrs(sub="scale")) and m([rule(["*/*"])], attrs())
    assert not m([rule(["*"])], attrs(sub="status"))  # `*` is every resource, not its subresources
    assert not m([rule(["*/status"])], attrs(sub="scale"))


def test_operations_groups_versions_and_scope() -> None:
    assert not m([rule(["deployments"], ops=["UPDATE"])], attrs(op="CREATE"))
    assert m([rule(["deployments"], ops=["CREATE", "DELETE"])], attrs(op="DELETE"))
    assert not m([rule(["deployments"], groups=[""])], attrs())
    assert not m([rule(["deployments"], scope="Cluster")], attrs())
    assert m([rule(["deployments"], scope="Namespaced")], attrs())
    assert m([rule(["nodes"], groups=[""], scope="Cluster")], attrs("nodes", group="", namespaced=False))


def test_match_policy_equivalent_and_exact() -> None:
    a = attrs(version="v1", others=("v1beta1",))
    assert m([rule(["deployments"], versions=["v1beta1"])], a)  # Equivalent (the default)
    assert not m([rule(["deployments"], versions=["v1beta1"])], a, matchPolicy="Exact")
    assert not m([rule(["deployments"], versions=["v2"])], a)


def test_excluded_rules_win() -> None:
    assert not m([rule(["*"])], attrs(), excludeResourceRules=[rule(["deployments"], ops=["CREATE"])])
    assert m([rule(["*"])], attrs(op="UPDATE"), excludeResourceRules=[rule(["deployments"], ops=["CREATE"])])


def test_selectors() -> None:
    a = attrs(labels={"app": "web"})
    assert m([rule(["*"])], a, namespaceSelector={"matchLabels": {"env": "test"}})
    assert not m([rule(["*"])], a, namespaceSelector={"matchLabels": {"env": "prod"}})
    # cluster-scoped objects other than namespaces ignore the namespace selector
    assert m([rule(["*"], groups=[""])], attrs("nodes", group="", namespaced=False),
             namespaceSelector={"matchLabels": {"env": "prod"}})
    assert m([rule(["*"])], a, objectSelector={"matchLabels": {"app": "web"}})
    assert not m([rule(["*"])], a, objectSelector={"matchLabels": {"app": "db"}})
    # the old object's labels count too, so dropping a label does not escape the policy
    assert m([rule(["*"])], attrs(labels={}, old_labels={"app": "db"}), objectSelector={"matchLabels": {"app": "db"}})
    assert m([rule(["*"])], a, objectSelector={"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]})
    # a policy must name rules; a binding without rules leaves them to the policy
    assert not matches({}, a, {}, require_rules=True)
    assert matches({}, a, {}, require_rules=False)
