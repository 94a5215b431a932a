"""Compute-resource names and quantities, as upstream's core helper (IsStandardResourceName, ...)
and validation (ValidateResourceQuantityValue, validateResourceRequirements).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..errors import FieldError
from .field import GoValue, child, forbidden, invalid, not_found, required
from .names import is_qualified_name
from .quantity import Quantity, parse_quantity

__all__ = [
    "q", "quantity_errors", "is_native_resource", "is_hugepage_resource", "is_extended_resource",
    "is_overcommit_allowed", "is_standard_resource", "is_standard_container_resource", "is_standard_quota_resource",
    "is_integer_resource", "validate_resource_name", "validate_container_resource_name",
    "validate_resource_quota_resource_name", "validate_resource_quantity_value", "validate_resource_requirements",
    "STANDARD_QUOTA_SCOPES",
]

_STANDARD_CONTAINER = frozenset({"cpu", "memory", "ephemeral-storage"})
_STANDARD_QUOTA = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.storage",
    "requests.ephemeral-storage", "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods",
    "resourcequotas", "services", "replicationcontrollers", "secrets", "persistentvolumeclaims", "configmaps",
    "services.nodeports", "services.loadbalancers",
}
_STANDARD = {
    "cpu", "memory", "ephemeral-storage", "requests.cpu", "requests.memory", "requests.ephemeral-storage",
    "limits.cpu", "limits.memory", "limits.ephemeral-storage", "pods", "resourcequotas", "services",
    "replicationcontrollers", "secrets", "configmaps", "persistentvolumeclaims", "storage", "requests.storage",
    "services.nodeports", "services.loadbalancers",
}
_INTEGER = {
    "pods", "resourcequotas", "services", "replicationcontrollers", "secrets", "configmaps",
    "persistentvolumeclaims", "services.nodeports", "services.loadbalancers",
}
STANDARD_QUOTA_SCOPES = ["BestEffort", "CrossNamespacePodAffinity", "NotBestEffort", "NotTerminating",
                         "PriorityClass", "Terminating"]


def q(raw: Any) -> Quantity | None:
    """Parse leniently: None when malformed (the decoder reports those)."""
    try:
        return parse_quantity(raw)
    except ValueError:
        return None


def _quantity_or_error(raw: Any, path: str, errs: list[FieldError]) -> Quantity | None:
    """quantity_errors, appending its error to errs (no tuple per resource on the usual success)."""
    try:
        return parse_quantity(raw)
    except ValueError as e:
        errs.append(invalid(path, raw if isinstance(raw, str) else str(raw), str(e)))
        return None


def quantity_errors(raw: Any, path: str) -> tuple[Quantity | None, list[FieldError]]:
    """Parse a wire quantity; malformed ones become an Invalid error (upstream rejects them at decode)."""
    errs: list[FieldError] = []
    qty = _quantity_or_error(raw, path, errs)
    return qty, errs


def is_native_resource(name: str) -> bool:
    return "/" not in name or "kubernetes.io/" in name


def is_hugepage_resource(name: str) -> bool:
    return name.startswith("hugepages-")


def _is_quota_hugepage(name: str) -> bool:
    return name.startswith("hugepages-") or name.startswith("requests.hugepages-")


def is_extended_resource(name: str) -> bool:
    if is_native_resource(name) or name.startswith("requests."):
        return False
    return not is_qualified_name("requests." + name)


def is_overcommit_allowed(name: str) -> bool:
    return is_native_resource(name) and not is_hugepage_resource(name)


def is_standard_resource(name: str) -> bool:
    return name in _STANDARD or _is_quota_hugepage(name)


def is_standard_container_resource(name: str) -> bool:
    return name in _STANDARD_CONTAINER or is_hugepage_resource(name)


def is_standard_quota_resource(name: str) -> bool:
    return name in _STANDARD_QUOTA or _is_quota_hugepage(name)


def is_integer_resource(name: str) -> bool:
    return name in _INTEGER or is_extended_resource(name)


def validate_resource_name(name: str, path: str) -> list[FieldError]:
    errs = [invalid(path, name, m) for m in is_qualified_name(name)]
    if errs:
        return errs
    if "/" not in name and not is_standard_resource(name):
        return [invalid(path, name, "must be a standard resource type or fully qualified")]
    return []


def validate_container_resource_name(name: str, path: str) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name:
        if not is_standard_container_resource(name):
            errs.append(invalid(path, name, "must be a standard resource for containers"))
    elif not is_native_resource(name) and not is_extended_resource(name):
        errs.append(invalid(path, name, "doesn't follow extended resource name standard"))
    return errs


def validate_resource_quota_resource_name(name: str, path: str) -> list[FieldError]:
    errs = validate_resource_name(name, path)
    if "/" not in name and not is_standard_quota_resource(name):
        errs.append(invalid(path, name, "must be a standard resource for quota"))
    return errs


def validate_resource_quantity_value(name: str, qty: Quantity, path: str) -> list[FieldError]:
    negative = qty.value.numerator < 0  # the Fraction's sign, without its slow comparison
    if not negative and name in _STANDARD_CONTAINER:  # the usual cpu/memory: not an integer resource
        return []
    errs: list[FieldError] = []
    if negative:
        errs.append(invalid(path, qty.canonical(), "must be greater than or equal to 0"))
    if is_integer_resource(name) and qty.milli_value() % 1000 != 0:
        errs.append(invalid(path, GoValue(qty.canonical()), "must be an integer"))
    return errs


def _hugepage_error(name: str, qty: Quantity) -> str | None:
    size = q(name[len("hugepages-"):])
    if size is None or size.value <= 0:
        return None
    v = qty.int_value()
    if v <= 0 or v % int(size.value) != 0:
        return f"{qty.canonical()} is not positive integer multiple of {name}"
    return None


def validate_resource_requirements(res: Any, path: str, claim_names: set[str] | None = None,
                                   name_fn: Callable[[str, str], list[FieldError]] | None = None
                                   ) -> list[FieldError]:
    """validateResourceRequirements for a container (or overhead): names, values, requests <= limits."""
    res = res if isinstance(res, dict) else {}
    name_fn = name_fn or validate_container_resource_name
    errs: list[FieldError] = []
    lim_path, req_path = child(path, "limits"), child(path, "requests")
    limits = res.get("limits") if isinstance(res.get("limits"), dict) else {}
    requests = res.get("requests") if isinstance(res.get("requests"), dict) else {}
    lim_q: dict[str, Quantity] = {}
    lim_cpu_mem = req_cpu_mem = lim_huge = req_huge = False
    # the standard container resources are valid names: skip checking the usual cpu/memory
    known = _STANDARD_CONTAINER if name_fn is validate_container_resource_name else frozenset()
    for name in sorted(limits):
        p = f"{lim_path}[{name}]"
        if name not in known:
            errs += name_fn(name, p)
        qty = _quantity_or_error(limits[name], p, errs)
        if qty is None:
            continue
        lim_q[name] = qty
        errs += validate_resource_quantity_value(name, qty, p)
        if is_hugepage_resource(name):
            lim_huge = True
            msg = _hugepage_error(name, qty)
            if msg:
                errs.append(invalid(p, qty.canonical(), msg))
        if name in ("cpu", "memory"):
            lim_cpu_mem = True
    for name in sorted(requests):
        p = f"{req_path}[{name}]"
        if name not in known:
            errs += name_fn(name, p)
        qty = _quantity_or_error(requests[name], p, errs)
        if qty is None:
            continue
        errs += validate_resource_quantity_value(name, qty, p)
        lim = lim_q.get(name)
        if lim is not None:
            order = qty.cmp(lim)
            if order != 0 and not is_overcommit_allowed(name):
                errs.append(invalid(req_path, qty.canonical(), f"must be equal to {name} limit of {lim.canonical()}"))
            elif order > 0:
                errs.append(invalid(req_path, qty.canonical(),
                                    f"must be less than or equal to {name} limit of {lim.canonical()}"))
        elif name not in limits and not is_overcommit_allowed(name):
            errs.append(required(lim_path, "Limit must be set for non overcommitable resources"))
        if is_hugepage_resource(name):
            req_huge = True
            msg = _hugepage_error(name, qty)
            if msg:
                errs.append(invalid(p, qty.canonical(), msg))
        if name in ("cpu", "memory"):
            req_cpu_mem = True
    if not lim_cpu_mem and not req_cpu_mem and (lim_huge or req_huge):
        errs.append(forbidden(path, "HugePages require cpu or memory"))
    claims = res.get("claims")
    if claims:  # absent or empty: nothing to check
        errs += _validate_claims(claims, child(path, "claims"), claim_names or set())
    return errs


def _validate_claims(claims: Any, path: str, pod_claims: set[str]) -> list[FieldError]:
    from .field import duplicate, index
    from .names import is_dns1123_label

    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, c in enumerate(claims if isinstance(claims, list) else []):
        c = c if isinstance(c, dict) else {}
        name = c.get("name") or ""
        p = index(path, i)
        if not name:
            errs.append(required(p))
            continue
        req = c.get("request") or ""
        k = name + ("/" + req if req else "")
        if name in seen:
            errs.append(duplicate(p, name))
        else:
            if req:
                errs += [invalid(child(p, "request"), req, m) for m in is_dns1123_label(req)]
            if k in seen:
                errs.append(duplicate(p, k))
            elif not req and any(s.split("/", 1)[0] == name for s in seen if "/" in s):
                errs.append(duplicate(p, name))
            seen.add(k)
        if name not in pod_claims:
            detail = "must be one of the names in pod.spec.resourceClaims"
            detail += " which is empty" if not pod_claims else ": " + ", ".join(sorted(pod_claims))
            errs.append(not_found(p, name, detail))
    return errs
