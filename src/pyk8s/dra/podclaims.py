"""Which ResourceClaim a pod's `spec.resourceClaims[]` entry names (upstream's resourceclaim.Name)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["claim_name_for"]


def claim_name_for(pod: Mapping[str, Any], pod_claim: Mapping[str, Any]) -> tuple[str | None, bool]:
    """(claim name, or None while the controller has not made it yet; generated from a template?).
    An empty name says the controller decided no claim is needed."""
    if pod_claim.get("resourceClaimName"):
        return pod_claim["resourceClaimName"], False
    for st in (pod.get("status") or {}).get("resourceClaimStatuses") or ():
        if st.get("name") == pod_claim.get("name"):
            return st.get("resourceClaimName") or "", True
    return None, True
