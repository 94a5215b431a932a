"""resource.k8s.io/v1beta1 defaults, as upstream's pkg/apis/resource/v1beta1/defaults.go:
a device request allocates `ExactCount` devices, one unless it says otherwise."""

from __future__ import annotations

from typing import Any

__all__ = ["DEFAULTERS", "default_claim_spec"]

RS = "resource.k8s.io"


def _default_request(req: dict[str, Any]) -> None:
    if not req.get("allocationMode"):
        req["allocationMode"] = "ExactCount"
    if req["allocationMode"] == "ExactCount" and not req.get("count"):
        req["count"] = 1
    for sub in req.get("firstAvailable") or []:
        if isinstance(sub, dict):
            _default_request(sub)


def default_claim_spec(spec: Any) -> None:
    if not isinstance(spec, dict):
        return
    devices = spec.get("devices")
    if not isinstance(devices, dict):
        return
    for req in devices.get("requests") or []:
        # a request that only lists firstAvailable has no mode of its own
        if isinstance(req, dict) and not req.get("firstAvailable"):
            _default_request(req)
        elif isinstance(req, dict):
            for sub in req.get("firstAvailable") or []:
                if isinstance(sub, dict):
                    _default_request(sub)


def _claim(obj: dict[str, Any]) -> None:
    default_claim_spec(obj.get("spec"))


def _template(obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if isinstance(spec, dict):
        default_claim_spec(spec.get("spec"))


DEFAULTERS = {
    (RS, "ResourceClaim"): _claim,
    (RS, "ResourceClaimTemplate"): _template,
}
