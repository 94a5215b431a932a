"""flowcontrol.apiserver.k8s.io/v1 validation: ObjectMeta and the structural rules of
upstream's pkg/apis/flowcontrol/validation (matching precedence, priority level
reference, enablement type). Subject and rule matching details are not checked.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import child, forbidden, invalid, not_supported, required
from ..meta import validate_object_meta, validate_object_meta_update
from ..names import name_is_dns_subdomain
from ._common import as_dict, is_int, spec_of

__all__ = ["validate_flow_schema", "validate_priority_level_configuration", "VALIDATORS", "UPDATE_VALIDATORS"]

FC = "flowcontrol.apiserver.k8s.io"
_MAX_MATCHING_PRECEDENCE = 10000


def _flow_schema_spec(name: str, spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mp = spec.get("matchingPrecedence", 0)
    mpp = child(path, "matchingPrecedence")
    if is_int(mp):
        if mp <= 0:
            errs.append(invalid(mpp, mp, "must be a positive value"))
        if mp > _MAX_MATCHING_PRECEDENCE:
            errs.append(invalid(mpp, mp, f"must not be greater than {_MAX_MATCHING_PRECEDENCE}"))
        if mp == 1 and name != "exempt":
            errs.append(invalid(mpp, mp, "only the schema named 'exempt' may have matchingPrecedence 1"))
    dm = spec.get("distinguisherMethod")
    if isinstance(dm, dict) and dm.get("type") not in ("ByNamespace", "ByUser"):
        errs.append(not_supported(child(path, "distinguisherMethod", "type"), dm.get("type") or "",
                                  ["ByNamespace", "ByUser"]))
    plc = (spec.get("priorityLevelConfiguration") or {}).get("name") or ""
    pp = child(path, "priorityLevelConfiguration", "name")
    if plc:
        errs += [invalid(pp, plc, m) for m in name_is_dns_subdomain(plc, False)]
    else:
        errs.append(required(pp, "must reference a priority level"))
    return errs


def validate_flow_schema(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain)
    name = str((obj.get("metadata") or {}).get("name") or "")
    return errs + _flow_schema_spec(name, spec_of(obj), "spec")


def _percent(v: Any, path: str) -> list[FieldError]:
    if is_int(v) and not 0 <= v <= 100:
        return [invalid(path, v, "must be between 0 and 100, inclusive")]
    return []


def _plc_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    typ = spec.get("type") or ""
    limited, exempt = spec.get("limited"), spec.get("exempt")
    if typ == "Exempt":
        if limited is not None:
            errs.append(forbidden(child(path, "limited"), "must be nil if the type is not Limited"))
        if isinstance(exempt, dict):
            ncs = exempt.get("nominalConcurrencyShares")
            if is_int(ncs) and ncs < 0:
                errs.append(invalid(child(path, "exempt", "nominalConcurrencyShares"), ncs, "must be a non-negative integer"))
            errs += _percent(exempt.get("lendablePercent"), child(path, "exempt", "lendablePercent"))
    elif typ == "Limited":
        if exempt is not None:
            errs.append(forbidden(child(path, "exempt"), "must be nil if the type is Limited"))
        if not isinstance(limited, dict):
            errs.append(required(child(path, "limited"), "must not be empty when type is Limited"))
        else:
            ncs = limited.get("nominalConcurrencyShares")
            if is_int(ncs) and ncs < 0:
                errs.append(invalid(child(path, "limited", "nominalConcurrencyShares"), ncs,
                                    "must be a non-negative integer"))
            errs += _percent(limited.get("lendablePercent"), child(path, "limited", "lendablePercent"))
            lr = as_dict(limited.get("limitResponse"))
            lrt = lr.get("type") or ""
            if lrt not in ("Queue", "Reject"):
                errs.append(not_supported(child(path, "limited", "limitResponse", "type"), lrt, ["Queue", "Reject"]))
            elif lrt == "Reject" and lr.get("queuing") is not None:
                errs.append(forbidden(child(path, "limited", "limitResponse", "queuing"),
                                      "must be nil if limited.limitResponse.type is not Limited"))
            elif lrt == "Queue" and lr.get("queuing") is None:
                errs.append(required(child(path, "limited", "limitResponse", "queuing"),
                                     "must not be empty if limited.limitResponse.type is Limited"))
    else:
        errs.append(not_supported(child(path, "type"), typ, ["Exempt", "Limited"]))
    return errs


def validate_priority_level_configuration(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, False, name_is_dns_subdomain) + _plc_spec(spec_of(obj), "spec")


VALIDATORS = {
    (FC, "FlowSchema"): validate_flow_schema,
    (FC, "PriorityLevelConfiguration"): validate_priority_level_configuration,
}


def validate_flow_schema_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_flow_schema(new)


def validate_priority_level_configuration_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta_update(new, old) + validate_priority_level_configuration(new)


UPDATE_VALIDATORS = {
    (FC, "FlowSchema"): validate_flow_schema_update,
    (FC, "PriorityLevelConfiguration"): validate_priority_level_configuration_update,
}
