"""Which requests a policy's matchConstraints and a binding's matchResources select.

As upstream's admission/plugin/policy/matching: resource rules (operations, API groups and
versions, resources with `*`, `res/sub`, `*/sub`, `res/*`, `*/*`, scope), excluded rules,
matchPolicy Equivalent (a rule for another served version of the same resource matches too),
namespaceSelector (ignored for cluster-scoped objects other than Namespaces) and objectSelector
(the new or the old object's labels).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from ...api.labels import SelectorParseError, selector_from_label_selector

__all__ = ["Attributes", "matches", "rule_matches", "selector_matches"]


@dataclass
class Attributes:
    """The admission request as matching and the CEL `request` see it."""

    group: str
    version: str
    resource: str
    subresource: str
    kind: str
    namespace: str
    name: str
    operation: str
    namespaced: bool
    obj: dict[str, Any] | None
    old: dict[str, Any] | None
    # other versions of the same resource this server serves (matchPolicy Equivalent)
    equivalent_versions: tuple[str, ...] = ()


def _has(values: Iterable[str] | None, want: str) -> bool:
    vals = list(values or [])
    return "*" in vals or want in vals


def _resource_matches(patterns: Iterable[str] | None, resource: str, sub: str) -> bool:
    for p in patterns or []:
        res, _, psub = p.partition("/")
        if p == "*/*":
            return True
        if not sub:
            if p == "*" or p == resource:
                return True
            continue
        if (res in ("*", resource)) and psub in ("*", sub):
            return True
    return False


def rule_matches(rule: dict[str, Any], a: Attributes, version: str | None = None) -> bool:
    if not _has(rule.get("operations"), a.operation):
        return False
    if not _has(rule.get("apiGroups"), a.group):
        return False
    if not _has(rule.get("apiVersions"), version or a.version):
        return False
    scope = rule.get("scope") or "*"
    if scope == "Cluster" and a.namespaced or scope == "Namespaced" and not a.namespaced:
        return False
    return _resource_matches(rule.get("resources"), a.resource, a.subresource)


def _any_rule(rules: list[dict[str, Any]], a: Attributes, equivalent: bool) -> bool:
    for r in rules:
        if rule_matches(r, a):
            return True
        if equivalent and any(rule_matches(r, a, v) for v in a.equivalent_versions):
            return True
    return False


def selector_matches(sel: dict[str, Any] | None, labels: dict[str, str] | None) -> bool:
    """An unset or empty LabelSelector matches everything."""
    if not sel:
        return True
    try:
        return selector_from_label_selector(sel).matches(labels or {})
    except SelectorParseError:  # (validation refuses these; an old stored one matches nothing)
        return False


def matches(mr: dict[str, Any] | None, a: Attributes, ns_labels: dict[str, str] | None, require_rules: bool) -> bool:
    """A MatchResources against a request. A policy's matchConstraints must list rules (require_rules);
    a binding's matchResources without rules leaves the policy's to decide."""
    mr = mr or {}
    equivalent = (mr.get("matchPolicy") or "Equivalent") == "Equivalent"
    rules = mr.get("resourceRules") or []
    if rules or require_rules:
        if not _any_rule(rules, a, equivalent):
            return False
    if _any_rule(mr.get("excludeResourceRules") or [], a, equivalent):
        return False
    ns_sel = mr.get("namespaceSelector")
    if ns_sel and (a.namespaced or (a.group == "" and a.resource == "namespaces")):
        if not selector_matches(ns_sel, ns_labels):
            return False
    obj_sel = mr.get("objectSelector")
    if obj_sel:
        labels = [((o.get("metadata") or {}).get("labels") or {}) for o in (a.obj, a.old) if o is not None]
        if not any(selector_matches(obj_sel, lb) for lb in labels or [{}]):
            return False
    return True
