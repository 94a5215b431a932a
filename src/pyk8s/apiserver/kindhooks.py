"""Access to the per-kind tables (defaulting, validation, printing, fields, conversion).

The tables are filled by their own modules; a missing module leaves its table empty,
and generic behaviour applies (ObjectMeta validation, the default table, ...).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

GK = tuple[str, str]

try:
    from ..api.defaults import DEFAULTERS, STATUS_ON_CREATE
except ImportError:  # pragma: no cover - during bring-up
    DEFAULTERS: dict[GK, Callable[[dict], None]] = {}  # type: ignore[no-redef]
    STATUS_ON_CREATE: dict[GK, Callable[[dict], None]] = {}  # type: ignore[no-redef]

try:
    from ..api.validation import UPDATE_VALIDATORS, VALIDATORS, validate_generic, validate_generic_update
except ImportError:  # pragma: no cover
    VALIDATORS: dict[GK, Callable[[dict], list]] = {}  # type: ignore[no-redef]
    UPDATE_VALIDATORS: dict[GK, Callable[[dict, dict], list]] = {}  # type: ignore[no-redef]

    def validate_generic(obj: dict, namespaced: bool) -> list:  # type: ignore[misc]
        return []

    def validate_generic_update(new: dict, old: dict) -> list:  # type: ignore[misc]
        return []

try:
    from ..api.validation import STATUS_UPDATE_VALIDATORS
except ImportError:  # pragma: no cover
    STATUS_UPDATE_VALIDATORS: dict[GK, Callable[[dict, dict], list]] = {}  # type: ignore[no-redef]

try:
    from ..api.fields import FIELD_LABELS
except ImportError:  # pragma: no cover
    FIELD_LABELS: dict[GK, Callable[[dict], dict[str, str]]] = {}  # type: ignore[no-redef]


def validate_create(gk: GK, obj: dict[str, Any], namespaced: bool) -> list:
    fn = VALIDATORS.get(gk)
    if fn is not None:
        return fn(obj)
    return validate_generic(obj, namespaced)


def validate_update(gk: GK, new: dict[str, Any], old: dict[str, Any], namespaced: bool,
                    subresource: str = "") -> list:
    if subresource == "ephemeralcontainers" and gk == ("", "Pod"):
        from ..api.validation.pod import validate_pod_ephemeral_containers_update

        return validate_pod_ephemeral_containers_update(new, old)
    if subresource == "status":
        sfn = STATUS_UPDATE_VALIDATORS.get(gk)
        if sfn is not None:
            return sfn(new, old)
    fn = UPDATE_VALIDATORS.get(gk)
    if fn is not None:
        return fn(new, old)
    errs = validate_create(gk, new, namespaced)
    return errs + validate_generic_update(new, old)


def field_set(gk: GK, obj: dict[str, Any]) -> dict[str, str]:
    fn = FIELD_LABELS.get(gk)
    if fn is not None:
        return fn(obj)
    md = obj.get("metadata") or {}
    out = {"metadata.name": md.get("name", "")}
    if "namespace" in md:
        out["metadata.namespace"] = md.get("namespace", "")
    return out
