"""Validation of the built-in kinds outside the core group, one module per API group
(as upstream's pkg/apis/<group>/validation plus the strategies' extra update rules).

Every validator takes wire-form dicts after defaulting. Create validators include the
ObjectMeta checks; update validators are complete on their own (ObjectMeta update rules,
the spec rules, immutability), because the API server calls only one of the two.
`register()` runs at import and fills pyk8s.api.validation's tables; that package imports
this one after defining them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import (
    admissionregistration,
    apiextensions,
    apiregistration,
    apps,
    batch,
    certificates,
    discovery,
    events,
    flowcontrol,
    networking,
    policy_autoscaling,
    rbac,
    resource,
    scheduling,
    status,
    storage,
)

__all__ = ["register", "GROUP_VALIDATORS", "GROUP_UPDATE_VALIDATORS", "GROUP_STATUS_UPDATE_VALIDATORS"]

_MODULES = (apps, batch, rbac, networking, storage, policy_autoscaling, scheduling, discovery, events, certificates,
            admissionregistration, flowcontrol, apiextensions, apiregistration, resource)

GROUP_VALIDATORS: dict[tuple[str, str], Callable[[dict[str, Any]], list[Any]]] = {}
GROUP_UPDATE_VALIDATORS: dict[tuple[str, str], Callable[[dict[str, Any], dict[str, Any]], list[Any]]] = {}
for _m in _MODULES:
    GROUP_VALIDATORS.update(_m.VALIDATORS)
    GROUP_UPDATE_VALIDATORS.update(_m.UPDATE_VALIDATORS)
# writes to the status subresource: ObjectMeta and status rules only (Validate<Kind>StatusUpdate)
GROUP_STATUS_UPDATE_VALIDATORS: dict[tuple[str, str], Callable[[dict[str, Any], dict[str, Any]], list[Any]]] = \
    {**status.STATUS_UPDATE_VALIDATORS, **resource.STATUS_UPDATE_VALIDATORS}


def register() -> None:
    """Install the group validators into pyk8s.api.validation's tables (idempotent)."""
    from pyk8s.api import validation as _v

    _v.VALIDATORS.update(GROUP_VALIDATORS)
    _v.UPDATE_VALIDATORS.update(GROUP_UPDATE_VALIDATORS)
    status_table = getattr(_v, "STATUS_UPDATE_VALIDATORS", None)
    if isinstance(status_table, dict):
        status_table.update(GROUP_STATUS_UPDATE_VALIDATORS)


register()
