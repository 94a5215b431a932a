"""Tables for resource.k8s.io, as upstream's printers for DeviceClass, ResourceClaim,
ResourceClaimTemplate and ResourceSlice."""

from __future__ import annotations

from .base import TablePrinter, age, age_col, col, name_col, printer

R = "io.k8s.api.resource.v1beta1."
GK = tuple[str, str]


def _name(obj: dict) -> str:
    return (obj.get("metadata") or {}).get("name", "")


def claim_state(claim: dict) -> str:
    """resourceClaimState: deleted / pending, or allocated[,reserved]."""
    states = []
    deleting = bool((claim.get("metadata") or {}).get("deletionTimestamp"))
    st = claim.get("status") or {}
    if deleting:
        states.append("deleted")
    if st.get("allocation") is None:
        if not deleting:
            states.append("pending")
    else:
        states.append("allocated")
        if st.get("reservedFor"):
            states.append("reserved")
    return ",".join(states)


DEVICE_CLASS = printer([name_col(), age_col()], lambda o, now: [_name(o), age(o, now)])
RESOURCE_CLAIM_TEMPLATE = printer([name_col(), age_col()], lambda o, now: [_name(o), age(o, now)])
RESOURCE_CLAIM = printer(
    [
        name_col(),
        col("State", description="A summary of the current state (allocated, pending, reserved, etc.)."),
        age_col(),
    ],
    lambda o, now: [_name(o), claim_state(o), age(o, now)],
)


def _slice_row(s: dict, now: float) -> list:
    spec = s.get("spec") or {}
    return [_name(s), spec.get("nodeName", ""), spec.get("driver", ""), (spec.get("pool") or {}).get("name", ""),
            age(s, now)]


RESOURCE_SLICE = printer(
    [
        name_col(),
        col("Node", description=(R + "ResourceSliceSpec", "nodeName")),
        col("Driver", description=(R + "ResourceSliceSpec", "driver")),
        col("Pool", description=(R + "ResourcePool", "name")),
        age_col(),
    ],
    _slice_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("resource.k8s.io", "DeviceClass"): DEVICE_CLASS,
    ("resource.k8s.io", "ResourceClaim"): RESOURCE_CLAIM,
    ("resource.k8s.io", "ResourceClaimTemplate"): RESOURCE_CLAIM_TEMPLATE,
    ("resource.k8s.io", "ResourceSlice"): RESOURCE_SLICE,
}

__all__ = ["PRINTERS", "claim_state"]
