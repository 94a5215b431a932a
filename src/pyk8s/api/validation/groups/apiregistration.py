"""apiregistration.k8s.io/v1 APIService validation, as kube-aggregator's: the name is
`<version>.<group>` (the core group's is `v1.`), not a plain DNS subdomain."""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import is_dns1123_label, is_dns1123_subdomain

__all__ = ["validate_api_service", "validate_api_service_update", "VALIDATORS", "UPDATE_VALIDATORS"]


def _api_service_name(name: str, prefix: bool = False) -> list[str]:
    version, dot, group = name.partition(".")
    if not dot:
        return ['must be in the form: <version>.<group>']
    errs = list(is_dns1123_label(version))
    if group:
        errs.extend(is_dns1123_subdomain(group))
    return errs


def _spec_errors(obj: dict[str, Any]) -> list[FieldError]:
    spec = obj.get("spec") or {}
    name = (obj.get("metadata") or {}).get("name", "")
    want = f"{spec.get('version', '')}.{spec.get('group', '')}"
    if name and name != want:
        return [FieldError("metadata.name", "Invalid", name, 'must be `spec.version+"."+spec.group`: ' + f'"{want}"')]
    return []


def validate_api_service(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, False, _api_service_name, kube_finalizers=False) + _spec_errors(obj)


def validate_api_service_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old, kube_finalizers=False) + _spec_errors(new)


VALIDATORS = {("apiregistration.k8s.io", "APIService"): validate_api_service}
UPDATE_VALIDATORS = {("apiregistration.k8s.io", "APIService"): validate_api_service_update}
