"""resource.k8s.io v1beta2 <-> v1beta1 (hub v1beta1), as upstream's pkg/apis/resource/v1beta2
conversion (v1.33): a v1beta2 request keeps its single-request fields under `exactly`, and a
v1beta2 device has its attributes, capacity and counters at the top instead of under `basic`.
Everything else (classes, configs, constraints, status) has the same shape in both."""

from __future__ import annotations

import copy
from typing import Any

__all__ = ["RESOURCE_CONVERTERS", "HUB", "V1BETA2"]

HUB = "resource.k8s.io/v1beta1"
V1BETA2 = "resource.k8s.io/v1beta2"
# the v1beta1 DeviceRequest fields that v1beta2 keeps in ExactDeviceRequest
_EXACT = ("deviceClassName", "selectors", "allocationMode", "count", "adminAccess", "tolerations")


def _request_to_v1beta2(r: Any) -> Any:
    if not isinstance(r, dict):
        return r
    out = {k: v for k, v in r.items() if k not in _EXACT}
    exact = {k: r[k] for k in _EXACT if k in r}
    if exact:
        out["exactly"] = exact
    return out


def _request_to_v1beta1(r: Any) -> Any:
    if not isinstance(r, dict):
        return r
    out = {k: v for k, v in r.items() if k != "exactly"}
    exact = r.get("exactly")
    if isinstance(exact, dict):
        out.update({k: v for k, v in exact.items() if k in _EXACT})
    return out


def _claim_spec(spec: Any, fn: Any) -> Any:
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return spec
    devices = dict(spec["devices"])
    if isinstance(devices.get("requests"), list):
        devices["requests"] = [fn(r) for r in devices["requests"]]
    return {**spec, "devices": devices}


def _device_to_v1beta2(d: Any) -> Any:
    if not isinstance(d, dict):
        return d
    out = {k: v for k, v in d.items() if k != "basic"}
    if isinstance(d.get("basic"), dict):
        out.update(d["basic"])
    return out


def _device_to_v1beta1(d: Any) -> Any:
    if not isinstance(d, dict):
        return d
    basic = {k: v for k, v in d.items() if k != "name"}
    return {"name": d.get("name", ""), "basic": basic} if "name" in d else {"basic": basic}


def _spec_converter(kind: str, to_v1beta2: bool) -> Any:
    req = _request_to_v1beta2 if to_v1beta2 else _request_to_v1beta1
    dev = _device_to_v1beta2 if to_v1beta2 else _device_to_v1beta1
    to = V1BETA2 if to_v1beta2 else HUB

    def conv(obj: dict, _to: str) -> dict:
        out = copy.deepcopy(obj)
        out["apiVersion"] = to
        spec = out.get("spec")
        if kind == "ResourceClaim":
            out["spec"] = _claim_spec(spec, req)
        elif kind == "ResourceClaimTemplate" and isinstance(spec, dict):
            out["spec"] = {**spec, "spec": _claim_spec(spec.get("spec"), req)}
        elif kind == "ResourceSlice" and isinstance(spec, dict) and isinstance(spec.get("devices"), list):
            out["spec"] = {**spec, "devices": [dev(d) for d in spec["devices"]]}
        return out

    return conv


RESOURCE_CONVERTERS = {}
for _kind in ("DeviceClass", "ResourceClaim", "ResourceClaimTemplate", "ResourceSlice"):
    RESOURCE_CONVERTERS[(("resource.k8s.io", _kind), V1BETA2, HUB)] = _spec_converter(_kind, False)
    RESOURCE_CONVERTERS[(("resource.k8s.io", _kind), HUB, V1BETA2)] = _spec_converter(_kind, True)
