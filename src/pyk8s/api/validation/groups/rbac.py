"""rbac.authorization.k8s.io/v1 validation, as upstream's pkg/apis/rbac/validation.

Role and binding names only have to be usable as a path segment; a binding's roleRef
can never change (the message names the whole old-style Go struct).
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, go_quote, go_string_slice, index, invalid, not_supported, required
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import name_is_dns_subdomain, validate_path_segment_name
from ._common import as_dict, go_struct

__all__ = [
    "validate_role", "validate_role_update", "validate_cluster_role", "validate_cluster_role_update",
    "validate_role_binding", "validate_role_binding_update", "validate_cluster_role_binding",
    "validate_cluster_role_binding_update", "VALIDATORS", "UPDATE_VALIDATORS",
]

RBAC_GROUP = "rbac.authorization.k8s.io"


def _minimal_name(name: str, prefix: bool) -> list[str]:
    """minimalNameRequirements: IsValidPathSegmentName (prefix ignored, as upstream)."""
    return validate_path_segment_name(name, False)


def _policy_rule(rule: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not rule.get("verbs"):
        errs.append(required(child(path, "verbs"), "verbs must contain at least one value"))
    urls = rule.get("nonResourceURLs") or []
    if urls:
        shown = go_string_slice(urls)
        if namespaced:
            errs.append(invalid(child(path, "nonResourceURLs"), shown, "namespaced rules cannot apply to non-resource URLs"))
        if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
            errs.append(invalid(child(path, "nonResourceURLs"), shown,
                                "rules cannot apply to both regular resources and non-resource URLs"))
        return errs
    if not rule.get("apiGroups"):
        errs.append(required(child(path, "apiGroups"), "resource rules must supply at least one api group"))
    if not rule.get("resources"):
        errs.append(required(child(path, "resources"), "resource rules must supply at least one resource"))
    if rule.get("resourceNames") and len(rule.get("resources") or []) > 1:
        errs.append(required(child(path, "resourceNames"), "resource names cannot apply to multiple resources"))
    return errs


def _rules(obj: dict[str, Any], namespaced: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    for i, rule in enumerate(obj.get("rules") or []):
        if isinstance(rule, dict):
            errs += _policy_rule(rule, namespaced, index("rules", i))
    return errs


def validate_role(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, _minimal_name) + _rules(obj, True)


def validate_cluster_role(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, _minimal_name) + _rules(obj, False)
    agg = obj.get("aggregationRule")
    if isinstance(agg, dict):
        from ..meta import validate_label_selector

        for i, sel in enumerate(agg.get("clusterRoleSelectors") or []):
            errs += validate_label_selector(sel, index(child("aggregationRule", "clusterRoleSelectors"), i))
    return errs


def validate_role_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_role(new) + validate_object_meta_update(new, old)


def validate_cluster_role_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_cluster_role(new) + validate_object_meta_update(new, old)


def _subject(subject: dict[str, Any], namespaced: bool, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    name = subject.get("name") or ""
    kind = subject.get("kind") or ""
    api_group = subject.get("apiGroup") or ""
    if not name:
        errs.append(required(child(path, "name")))
    if kind == "ServiceAccount":
        if name:
            errs += [invalid(child(path, "name"), name, m) for m in name_is_dns_subdomain(name, False)]
        if api_group:
            errs.append(not_supported(child(path, "apiGroup"), api_group, [""]))
        if not namespaced and not subject.get("namespace"):
            errs.append(required(child(path, "namespace")))
    elif kind in ("User", "Group"):
        if not name:
            errs.append(invalid(child(path, "name"), name, f"{kind.lower()} name cannot be empty"))
        if api_group != RBAC_GROUP:
            errs.append(not_supported(child(path, "apiGroup"), api_group, [RBAC_GROUP]))
    else:
        errs.append(not_supported(child(path, "kind"), kind, ["ServiceAccount", "User", "Group"]))
    return errs


def _binding(obj: dict[str, Any], namespaced: bool) -> list[FieldError]:
    errs = validate_object_meta(obj, namespaced, _minimal_name)
    ref = as_dict(obj.get("roleRef"))
    if (ref.get("apiGroup") or "") != RBAC_GROUP:
        errs.append(not_supported("roleRef.apiGroup", ref.get("apiGroup") or "", [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if (ref.get("kind") or "") not in kinds:
        errs.append(not_supported("roleRef.kind", ref.get("kind") or "", kinds))
    name = ref.get("name") or ""
    if not name:
        errs.append(required("roleRef.name"))
    else:
        errs += [invalid("roleRef.name", name, m) for m in _minimal_name(name, False)]
    for i, s in enumerate(obj.get("subjects") or []):
        if isinstance(s, dict):
            errs += _subject(s, namespaced, index("subjects", i))
    return errs


def _go_role_ref(ref: dict[str, Any]) -> GoValue:
    return go_struct("rbac.RoleRef", [("APIGroup", go_quote(ref.get("apiGroup") or "")),
                                      ("Kind", go_quote(ref.get("kind") or "")), ("Name", go_quote(ref.get("name") or ""))])


def _role_ref_immutable(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    nr, or_ = new.get("roleRef") or {}, old.get("roleRef") or {}
    fields = ("apiGroup", "kind", "name")
    if tuple(nr.get(f) or "" for f in fields) != tuple(or_.get(f) or "" for f in fields):
        return [invalid("roleRef", _go_role_ref(nr), "cannot change roleRef")]
    return []


def validate_role_binding(obj: dict[str, Any]) -> list[FieldError]:
    return _binding(obj, True)


def validate_cluster_role_binding(obj: dict[str, Any]) -> list[FieldError]:
    return _binding(obj, False)


def validate_role_binding_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return _binding(new, True) + validate_object_meta_update(new, old) + _role_ref_immutable(new, old)


def validate_cluster_role_binding_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return _binding(new, False) + validate_object_meta_update(new, old) + _role_ref_immutable(new, old)


VALIDATORS = {
    (RBAC_GROUP, "Role"): validate_role,
    (RBAC_GROUP, "ClusterRole"): validate_cluster_role,
    (RBAC_GROUP, "RoleBinding"): validate_role_binding,
    (RBAC_GROUP, "ClusterRoleBinding"): validate_cluster_role_binding,
}
UPDATE_VALIDATORS = {
    (RBAC_GROUP, "Role"): validate_role_update,
    (RBAC_GROUP, "ClusterRole"): validate_cluster_role_update,
    (RBAC_GROUP, "RoleBinding"): validate_role_binding_update,
    (RBAC_GROUP, "ClusterRoleBinding"): validate_cluster_role_binding_update,
}
