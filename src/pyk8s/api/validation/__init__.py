"""Validation tables keyed by (group, kind), as upstream's per-resource strategies call them.

VALIDATORS[gk](obj) -> errors on create; UPDATE_VALIDATORS[gk](new, old) -> errors on update
(including the full validation of the new object, as upstream's ValidateXUpdate functions do);
STATUS_UPDATE_VALIDATORS[gk](new, old) for writes to the status subresource.
Kinds without an entry get validate_generic / validate_generic_update (ObjectMeta only).

Errors are pyk8s.api.errors.FieldError values with upstream's paths and messages; the
registered functions drop duplicates, as upstream's ErrorList.ToAggregate() does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from ..errors import FieldError

__all__ = [
    "VALIDATORS", "UPDATE_VALIDATORS", "STATUS_UPDATE_VALIDATORS", "validate_generic", "validate_generic_update",
]

GroupKind = tuple[str, str]

VALIDATORS: dict[GroupKind, Callable[[dict], list[FieldError]]] = {}
UPDATE_VALIDATORS: dict[GroupKind, Callable[[dict, dict], list[FieldError]]] = {}
STATUS_UPDATE_VALIDATORS: dict[GroupKind, Callable[[dict, dict], list[FieldError]]] = {}


def validate_generic(obj: dict[str, Any], namespaced: bool) -> list[FieldError]:
    """ObjectMeta checks only, names as DNS-1123 subdomains (custom resources and unknown kinds)."""
    from .meta import validate_object_meta
    from .names import name_is_dns_subdomain

    return validate_object_meta(obj, namespaced, name_is_dns_subdomain, kube_finalizers=False)


def validate_generic_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    from .meta import validate_object_meta_update

    return validate_object_meta_update(new, old, kube_finalizers=False)


def _deduped(fn: Callable[..., list[FieldError]]) -> Callable[..., list[FieldError]]:
    if getattr(fn, "_pyk8s_deduped", False):
        return fn

    @functools.wraps(fn)
    def wrapper(*args: Any) -> list[FieldError]:
        from .field import dedupe

        return dedupe(fn(*args))

    wrapper._pyk8s_deduped = True  # type: ignore[attr-defined]
    return wrapper


from . import core  # noqa: E402,F401  (registers the core/v1 kinds)

try:
    from . import groups  # noqa: E402,F401  (registers the other API groups; optional)
except ImportError as _e:  # pragma: no cover - absent, or broken: keep the core kinds working
    import importlib.util as _ilu
    import logging as _logging

    if _ilu.find_spec(f"{__name__}.groups") is not None:
        _logging.getLogger(__name__).error("could not import %s.groups: %s", __name__, _e)

for _table in (VALIDATORS, UPDATE_VALIDATORS, STATUS_UPDATE_VALIDATORS):
    for _gk, _fn in list(_table.items()):
        _table[_gk] = _deduped(_fn)  # type: ignore[assignment,arg-type]
