"""scheduling.k8s.io/v1 PriorityClass and node.k8s.io/v1 RuntimeClass validation, as
upstream's pkg/apis/scheduling/validation and pkg/apis/node/validation.

The "only one globalDefault PriorityClass" rule is upstream's Priority admission plugin
(it needs the store), not validation.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, duplicate, forbidden, index, invalid, not_supported, required
from ..meta import validate_immutable, validate_labels, validate_object_meta, validate_object_meta_update
from ..names import name_is_dns_label, name_is_dns_subdomain
from ..pod import validate_tolerations
from ..resources import validate_resource_requirements
from ._common import go_generic, is_int

__all__ = [
    "validate_priority_class", "validate_priority_class_update", "validate_runtime_class",
    "validate_runtime_class_update", "SYSTEM_PRIORITY_CLASSES", "HIGHEST_USER_DEFINABLE_PRIORITY",
    "VALIDATORS", "UPDATE_VALIDATORS",
]

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PRIORITY_CLASS_PREFIX = "system-"
# name -> (value, globalDefault), as upstream's systemPriorityClasses
SYSTEM_PRIORITY_CLASSES = {
    "system-node-critical": (SYSTEM_CRITICAL_PRIORITY + 1000, False),
    "system-cluster-critical": (SYSTEM_CRITICAL_PRIORITY, False),
}


def _known_system_class(name: str, value: Any, global_default: bool) -> str | None:
    """IsKnownSystemPriorityClass: None when known and consistent, else the error text."""
    known = SYSTEM_PRIORITY_CLASSES.get(name)
    if known is None:
        return f"{name} is not a known system priority class"
    if value != known[0]:
        return f"value of {name} PriorityClass must be {known[0]}"
    if global_default != known[1]:
        return f"globalDefault of {name} PriorityClass must be {'true' if known[1] else 'false'}"
    return None


def _preemption_policy(policy: Any, path: str) -> list[FieldError]:
    if policy in ("PreemptLowerPriority", "Never"):
        return []
    if policy == "":
        return [required(path)]
    return [not_supported(path, policy, ["PreemptLowerPriority", "Never"])]


def validate_priority_class(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    name = str((obj.get("metadata") or {}).get("name") or "")
    value = obj.get("value", 0)
    if name.startswith(SYSTEM_PRIORITY_CLASS_PREFIX):
        err = _known_system_class(name, value, bool(obj.get("globalDefault")))
        if err is not None:
            errs.append(forbidden("metadata.name", f"priority class names with '{SYSTEM_PRIORITY_CLASS_PREFIX}' prefix "
                                                   f"are reserved for system use only. error: {err}"))
    elif is_int(value) and value > HIGHEST_USER_DEFINABLE_PRIORITY:
        errs.append(forbidden("value", f"maximum allowed value of a user defined priority is "
                                       f"{HIGHEST_USER_DEFINABLE_PRIORITY}"))
    if obj.get("preemptionPolicy") is not None:
        errs += _preemption_policy(obj["preemptionPolicy"], "preemptionPolicy")
    return errs


def validate_priority_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # the strategy validates the new object whole, then the update rules
    errs = validate_priority_class(new) + validate_object_meta_update(new, old)
    if new.get("value", 0) != old.get("value", 0):
        errs.append(forbidden("value", "may not be changed in an update."))
    errs += validate_immutable(new.get("preemptionPolicy"), old.get("preemptionPolicy"), "preemptionPolicy")
    return errs


# ---- RuntimeClass ------------------------------------------------------------------------


def _scheduling(s: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if s.get("nodeSelector") is not None:
        errs += validate_labels(s["nodeSelector"], child(path, "nodeSelector"))
    tp = child(path, "tolerations")
    tolerations = s.get("tolerations") or []
    # upstream passes `tolerations` twice to the path (scheduling.tolerations.tolerations[i])
    errs += validate_tolerations(tolerations, child(tp, "tolerations"))
    seen: set[tuple[str, str, str, str]] = set()
    for i, t in enumerate(tolerations):
        if not isinstance(t, dict):
            continue
        k = (t.get("key") or "", t.get("operator") or "", t.get("value") or "", t.get("effect") or "")
        if k in seen:
            errs.append(duplicate(index(tp, i), GoValue(go_generic(t, "core.Toleration"))))
        seen.add(k)
    return errs


def validate_runtime_class(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    handler = obj.get("handler") or ""
    errs += [invalid("handler", handler, m) for m in name_is_dns_label(handler, False)]
    overhead = obj.get("overhead")
    if isinstance(overhead, dict):
        errs += validate_resource_requirements({"limits": overhead.get("podFixed") or {}}, "overhead")
    if isinstance(obj.get("scheduling"), dict):
        errs += _scheduling(obj["scheduling"], "scheduling")
    return errs


def validate_runtime_class_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_runtime_class(new) + validate_object_meta_update(new, old)
    return errs + validate_immutable(new.get("handler") or "", old.get("handler") or "", "handler")


VALIDATORS = {
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class,
    ("node.k8s.io", "RuntimeClass"): validate_runtime_class,
}
UPDATE_VALIDATORS = {
    ("scheduling.k8s.io", "PriorityClass"): validate_priority_class_update,
    ("node.k8s.io", "RuntimeClass"): validate_runtime_class_update,
}
