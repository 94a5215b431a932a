"""Whether one set of PolicyRules covers another, and the message when it does not, as upstream's
pkg/registry/rbac/validation (policy_comparator.go, policy_compact.go, rule.go's ConfirmNoEscalation).

Pure functions over wire-form rule dicts (`verbs`, `apiGroups`, `resources`, `resourceNames`,
`nonResourceURLs`); the storage hook that calls them is rbac_escalation.py.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..api.validation.field import go_quote

__all__ = [
    "breakdown_rule",
    "rule_covers",
    "covers",
    "compact_rules",
    "compact_string",
    "escalation_message",
]

Rule = Mapping[str, Any]


def _list(rule: Rule, key: str) -> list[str]:
    return list(rule.get(key) or ())


def breakdown_rule(rule: Rule) -> list[dict[str, Any]]:
    """One rule per (group, resource, verb[, resourceName]) and per (nonResourceURL, verb), in
    upstream's order: groups, then resources, then verbs, then names."""
    verbs, names = _list(rule, "verbs"), _list(rule, "resourceNames")
    out: list[dict[str, Any]] = []
    for group in _list(rule, "apiGroups"):
        for resource in _list(rule, "resources"):
            for verb in verbs:
                if names:
                    out.extend({"apiGroups": [group], "resources": [resource], "verbs": [verb],
                                "resourceNames": [n]} for n in names)
                else:
                    out.append({"apiGroups": [group], "resources": [resource], "verbs": [verb]})
    # non-resource URLs combine with verbs only
    for url in _list(rule, "nonResourceURLs"):
        out.extend({"nonResourceURLs": [url], "verbs": [verb]} for verb in verbs)
    return out


def _has_all(owned: Sequence[str], wanted: Iterable[str]) -> bool:
    have = set(owned)
    return all(w in have for w in wanted)


def _resources_cover(owned: Sequence[str], wanted: Sequence[str]) -> bool:
    if "*" in owned or _has_all(owned, wanted):
        return True
    for path in wanted:
        if path in owned:
            continue
        # "*/scale" covers the scale subresource of every resource; nothing covers a plain resource
        # but itself or "*"
        if "/" not in path or "*/" + path.split("/", 1)[1] not in owned:
            return False
    return True


def _url_covers(owner: str, path: str) -> bool:
    return owner == path or (owner.endswith("*") and path.startswith(owner.rstrip("*")))


def rule_covers(owner: Rule, sub: Rule) -> bool:
    """Whether `owner` grants all of `sub`, a rule from breakdown_rule (upstream's ruleCovers)."""
    owner_verbs, owner_groups = _list(owner, "verbs"), _list(owner, "apiGroups")
    if not ("*" in owner_verbs or _has_all(owner_verbs, _list(sub, "verbs"))):
        return False
    if not ("*" in owner_groups or _has_all(owner_groups, _list(sub, "apiGroups"))):
        return False
    if not _resources_cover(_list(owner, "resources"), _list(sub, "resources")):
        return False
    owner_urls = _list(owner, "nonResourceURLs")
    if not all(any(_url_covers(o, p) for o in owner_urls) for p in _list(sub, "nonResourceURLs")):
        return False
    owner_names = _list(owner, "resourceNames")
    # an owner restricted to names never covers a request for every name
    return not owner_names or (bool(sub.get("resourceNames")) and _has_all(owner_names, _list(sub, "resourceNames")))


def covers(owner_rules: Sequence[Rule], servant_rules: Iterable[Rule]) -> tuple[bool, list[dict[str, Any]]]:
    """(whether owner_rules grant every permission of servant_rules, the broken-down rules they miss)."""
    missing = [sub for rule in servant_rules for sub in breakdown_rule(rule)
               if not any(rule_covers(o, sub) for o in owner_rules)]
    return not missing, missing


def compact_rules(rules: Iterable[Rule]) -> list[dict[str, Any]]:
    """Merge the verbs of rules naming one group, one resource and at most one resourceName
    (upstream's CompactRules: what Covers' broken-down leftovers turn back into)."""
    simple: dict[tuple[str, str, str | None], dict[str, Any]] = {}
    out: list[dict[str, Any]] = []
    for rule in rules:
        groups, resources, names = _list(rule, "apiGroups"), _list(rule, "resources"), _list(rule, "resourceNames")
        if (len(groups) != 1 or len(resources) != 1 or len(names) > 1 or rule.get("nonResourceURLs")
                or set(rule) - {"apiGroups", "resources", "verbs", "resourceNames"}):
            out.append(dict(rule))
            continue
        key = (groups[0], resources[0], names[0] if names else None)
        have = simple.get(key)
        if have is None:
            simple[key] = {k: list(v) for k, v in rule.items()}
            simple[key]["verbs"] = _list(rule, "verbs")
            continue
        for verb in _list(rule, "verbs"):
            if verb not in have["verbs"]:
                have["verbs"].append(verb)
    return out + list(simple.values())


def _go_list(items: Sequence[str]) -> str:
    # Go's %q of a []string
    return "[" + " ".join(go_quote(i) for i in items) + "]"


def compact_string(rule: Rule) -> str:
    """A rule as escalation errors print it (upstream's rbacv1helpers.CompactString): only the
    fields that are set, in this order."""
    parts = [f"{label}:{_go_list(_list(rule, key))}"
             for label, key in (("APIGroups", "apiGroups"), ("Resources", "resources"),
                                ("NonResourceURLs", "nonResourceURLs"), ("ResourceNames", "resourceNames"),
                                ("Verbs", "verbs"))
             if rule.get(key)]
    return "{" + ", ".join(parts) + "}"


def escalation_message(username: str, groups: Sequence[str], missing: Iterable[Rule],
                       resolution_errors: Sequence[str] = ()) -> str:
    """ConfirmNoEscalation's error: the missing rules compacted, printed, de-duplicated and sorted;
    role resolution failures (which may be why rules are missing) appended."""
    described = sorted({compact_string(r) for r in compact_rules(missing)})
    msg = (f"user {go_quote(username)} (groups={_go_list(list(groups))}) is attempting to grant RBAC permissions "
           "not currently held:\n" + "\n".join(described))
    if resolution_errors:
        # upstream prints a []error holding one aggregate: "[e]" for one error, "[[e1, e2]]" for more
        errs = list(dict.fromkeys(resolution_errors))
        agg = errs[0] if len(errs) == 1 else "[" + ", ".join(errs) + "]"
        msg += f"; resolution errors: [{agg}]"
    return msg
