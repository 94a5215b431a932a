"""policy/v1 PodDisruptionBudget and autoscaling/v2 HorizontalPodAutoscaler validation,
as upstream's pkg/apis/policy/validation and pkg/apis/autoscaling/validation.

HPAs are stored as v2 and autoscaling/v1 bodies are converted before they get here.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import GoValue, child, forbidden, index, invalid, not_supported, required
from ..meta import (
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import is_dns1123_label, name_is_dns_subdomain, validate_path_segment_name
from ..quantity import parse_quantity
from ._common import (
    as_dict,
    go_generic,
    is_int,
    is_not_more_than_100_percent,
    spec_of,
    validate_positive_int_or_percent,
)

__all__ = [
    "validate_pod_disruption_budget", "validate_pod_disruption_budget_update", "validate_hpa", "validate_hpa_update",
    "VALIDATORS", "UPDATE_VALIDATORS",
]

# ---- PodDisruptionBudget -----------------------------------------------------------------


def _pdb_spec(spec: dict[str, Any], path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    min_a, max_u = spec.get("minAvailable"), spec.get("maxUnavailable")
    if min_a is not None and max_u is not None:
        errs.append(invalid(path, GoValue(go_generic(spec, "policy.PodDisruptionBudgetSpec")),
                            "minAvailable and maxUnavailable cannot be both set"))
    for f, v in (("minAvailable", min_a), ("maxUnavailable", max_u)):
        if v is not None:
            errs += validate_positive_int_or_percent(v, child(path, f))
            errs += is_not_more_than_100_percent(v, child(path, f))
    errs += validate_label_selector(spec.get("selector"), child(path, "selector"), allow_invalid_label_value)
    policy = spec.get("unhealthyPodEvictionPolicy")
    if policy is not None and policy not in ("AlwaysAllow", "IfHealthyBudget"):
        errs.append(not_supported(child(path, "unhealthyPodEvictionPolicy"), policy, ["AlwaysAllow", "IfHealthyBudget"]))
    return errs


def validate_pod_disruption_budget(obj: dict[str, Any]) -> list[FieldError]:
    # upstream's PDB validator checks only the spec; the generic ObjectMeta check (path-segment
    # names) is the apiserver's
    errs = validate_object_meta(obj, True, validate_path_segment_name, kube_finalizers=False)
    return errs + _pdb_spec(spec_of(obj), "spec")


def validate_pod_disruption_budget_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    from ..names import is_label_value

    old_sel = spec_of(old).get("selector") or {}
    allow = any(is_label_value(str(v)) for e in old_sel.get("matchExpressions") or [] if isinstance(e, dict)
                for v in e.get("values") or [])
    errs = validate_object_meta_update(new, old, kube_finalizers=False)
    return errs + _pdb_spec(spec_of(new), "spec", allow)


# ---- HorizontalPodAutoscaler -------------------------------------------------------------

_MAX_PERIOD_SECONDS = 1800
_MAX_STABILIZATION_WINDOW = 3600
_METRIC_TYPES = ["ContainerResource", "External", "Object", "Pods", "Resource"]


def _go_quantity(raw: Any) -> GoValue:
    """`%#v` of a resource.Quantity (String() has a pointer receiver)."""
    s = str(raw)
    try:
        q = parse_quantity(raw)
        if q.value.denominator == 1 and -(2**63) <= q.value.numerator < 2**63:
            fmt = q.format
            return GoValue(f"resource.Quantity{{i:resource.int64Amount{{value:{q.value.numerator}, scale:0}}, "
                           f"d:resource.infDecAmount{{Dec:(*inf.Dec)(nil)}}, s:\"{s}\", Format:\"{fmt}\"}}")
    except Exception:
        pass
    return GoValue(f"resource.Quantity{{s:\"{s}\"}}")


def _quantity_sign(raw: Any) -> int:
    try:
        return parse_quantity(raw).cmp(0)
    except Exception:
        return 0


def _cross_version_ref(ref: Any, path: str) -> list[FieldError]:
    ref = ref if isinstance(ref, dict) else {}
    errs: list[FieldError] = []
    for f in ("kind", "name"):
        v = ref.get(f) or ""
        if not v:
            errs.append(required(child(path, f)))
        else:
            errs += [invalid(child(path, f), v, m) for m in validate_path_segment_name(v, False)]
    return errs


def _metric_identifier(mid: Any, path: str) -> list[FieldError]:
    name = (mid or {}).get("name") or ""
    if not name:
        return [required(child(path, "name"), "must specify a metric name")]
    errs = [invalid(child(path, "name"), name, m) for m in validate_path_segment_name(name, False)]
    sel = (mid or {}).get("selector")
    if sel is not None:
        errs += validate_label_selector(sel, child(path, "selector"))
    return errs


def _metric_target(mt: Any, path: str) -> list[FieldError]:
    mt = mt if isinstance(mt, dict) else {}
    errs: list[FieldError] = []
    typ = mt.get("type") or ""
    if not typ:
        errs.append(required(child(path, "type"), "must specify a metric target type"))
    if typ not in ("Utilization", "Value", "AverageValue"):
        errs.append(invalid(child(path, "type"), typ, "must be either Utilization, Value, or AverageValue"))
    for f in ("value", "averageValue"):
        if mt.get(f) is not None and _quantity_sign(mt[f]) != 1:
            errs.append(invalid(child(path, f), _go_quantity(mt[f]), "must be positive"))
    au = mt.get("averageUtilization")
    if is_int(au) and au < 1:
        errs.append(invalid(child(path, "averageUtilization"), au, "must be greater than 0"))
    return errs


def _resource_like(src: dict[str, Any], path: str, container: bool) -> list[FieldError]:
    errs: list[FieldError] = []
    if not src.get("name"):
        errs.append(required(child(path, "name"), "must specify a resource name"))
    if container:
        c = src.get("container") or ""
        if not c:
            errs.append(required(child(path, "container"), "must specify a container"))
        else:
            errs += [invalid(child(path, "container"), c, m) for m in is_dns1123_label(c)]
    target = as_dict(src.get("target"))
    errs += _metric_target(target, child(path, "target"))
    tp = child(path, "target")
    if target.get("averageUtilization") is None and target.get("averageValue") is None:
        errs.append(required(child(tp, "averageUtilization"), "must set either a target raw value or a target utilization"))
    if target.get("averageUtilization") is not None and target.get("averageValue") is not None:
        errs.append(forbidden(child(tp, "averageValue"), "may not set both a target raw value and a target utilization"))
    return errs


def _metric_source(kind: str, src: dict[str, Any], path: str) -> list[FieldError]:
    if kind in ("resource", "containerResource"):
        return _resource_like(src, path, kind == "containerResource")
    target = as_dict(src.get("target"))
    tp = child(path, "target")
    errs: list[FieldError] = []
    if kind == "object":
        errs += _cross_version_ref(src.get("describedObject"), child(path, "describedObject"))
    errs += _metric_identifier(src.get("metric"), child(path, "metric"))
    errs += _metric_target(target, tp)
    if kind == "object" and target.get("value") is None and target.get("averageValue") is None:
        errs.append(required(child(tp, "averageValue"), "must set either a target value or averageValue"))
    if kind == "external":
        if target.get("value") is None and target.get("averageValue") is None:
            errs.append(required(child(tp, "averageValue"), "must set either a target value for metric or a per-pod target"))
        if target.get("value") is not None and target.get("averageValue") is not None:
            errs.append(forbidden(child(tp, "value"), "may not set both a target value for metric and a per-pod target"))
    if kind == "pods" and target.get("averageValue") is None:
        errs.append(required(child(tp, "averageValue"), "must specify a positive target averageValue"))
    return errs


_SOURCE_FIELDS = {"Object": "object", "Pods": "pods", "Resource": "resource", "ContainerResource": "containerResource",
                  "External": "external"}


def _metric_spec(m: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    typ = m.get("type") or ""
    if not typ:
        errs.append(required(child(path, "type"), "must specify a metric source type"))
    if typ not in _METRIC_TYPES:
        errs.append(not_supported(child(path, "type"), typ, _METRIC_TYPES))
    present: list[str] = []
    # upstream checks object, external, pods, resource, containerResource in this order and
    # validates only the first one present
    for f in ("object", "external", "pods", "resource", "containerResource"):
        if isinstance(m.get(f), dict):
            present.append(f)
            if len(present) == 1:
                errs += _metric_source(f, m[f], child(path, f))
    expected = _SOURCE_FIELDS.get(typ)
    if expected is not None and not isinstance(m.get(expected), dict):
        errs.append(required(child(path, expected), "must populate information for the given metric source"))
    if len(present) != 1:
        for f in sorted(set(present) - {expected}):
            errs.append(forbidden(child(path, f), "must populate the given metric source only"))
    return errs


def _scaling_rules(rules: Any, path: str) -> list[FieldError]:
    if not isinstance(rules, dict):
        return []
    errs: list[FieldError] = []
    sw = rules.get("stabilizationWindowSeconds")
    if is_int(sw) and sw < 0:
        errs.append(invalid(child(path, "stabilizationWindowSeconds"), sw, "must be greater than or equal to zero"))
    if is_int(sw) and sw > _MAX_STABILIZATION_WINDOW:
        errs.append(invalid(child(path, "stabilizationWindowSeconds"), sw,
                            f"must be less than or equal to {_MAX_STABILIZATION_WINDOW}"))
    sp = rules.get("selectPolicy")
    if sp is not None and sp not in ("Disabled", "Max", "Min"):
        errs.append(not_supported(child(path, "selectPolicy"), sp, ["Disabled", "Max", "Min"]))
    policies = rules.get("policies") or []
    pp = child(path, "policies")
    if not policies:
        errs.append(required(pp, "must specify at least one Policy"))
    for i, p in enumerate(policies):
        if not isinstance(p, dict):
            continue
        ip = index(pp, i)
        if p.get("type") not in ("Pods", "Percent"):
            errs.append(not_supported(child(ip, "type"), p.get("type") or "", ["Percent", "Pods"]))
        value, period = p.get("value", 0), p.get("periodSeconds", 0)
        if is_int(value) and value <= 0:
            errs.append(invalid(child(ip, "value"), value, "must be greater than zero"))
        if is_int(period) and period <= 0:
            errs.append(invalid(child(ip, "periodSeconds"), period, "must be greater than zero"))
        if is_int(period) and period > _MAX_PERIOD_SECONDS:
            errs.append(invalid(child(ip, "periodSeconds"), period, f"must be less than or equal to {_MAX_PERIOD_SECONDS}"))
    return errs


def _hpa_spec(spec: dict[str, Any], path: str, min_replicas_lower_bound: int = 1) -> list[FieldError]:
    errs: list[FieldError] = []
    min_r, max_r = spec.get("minReplicas"), spec.get("maxReplicas", 0)
    if is_int(min_r) and min_r < min_replicas_lower_bound:
        errs.append(invalid(child(path, "minReplicas"), min_r,
                            f"must be greater than or equal to {min_replicas_lower_bound}"))
    if is_int(max_r) and max_r < 1:
        errs.append(invalid(child(path, "maxReplicas"), max_r, "must be greater than 0"))
    if is_int(min_r) and is_int(max_r) and max_r < min_r:
        errs.append(invalid(child(path, "maxReplicas"), max_r, "must be greater than or equal to `minReplicas`"))
    errs += _cross_version_ref(spec.get("scaleTargetRef"), child(path, "scaleTargetRef"))
    has_object_or_external = False
    for i, m in enumerate(spec.get("metrics") or []):
        if isinstance(m, dict):
            errs += _metric_spec(m, index(child(path, "metrics"), i))
            has_object_or_external |= m.get("type") in ("Object", "External")
    if min_r == 0 and not has_object_or_external:
        errs.append(forbidden(child(path, "metrics"),
                              "must specify at least one Object or External metric to support scaling to zero replicas"))
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        errs += _scaling_rules(behavior.get("scaleUp"), child(path, "behavior", "scaleUp"))
        errs += _scaling_rules(behavior.get("scaleDown"), child(path, "behavior", "scaleDown"))
    return errs


def validate_hpa(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _hpa_spec(spec_of(obj), "spec")


def validate_hpa_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # an HPA that already scales to zero keeps that ability (HPAScaleToZero is alpha, off)
    bound = 0 if spec_of(old).get("minReplicas") == 0 else 1
    errs = validate_object_meta_update(new, old) + _hpa_spec(spec_of(new), "spec", bound)
    return errs + _hpa_status(new.get("status"))


def _hpa_status(status: Any) -> list[FieldError]:
    status = status if isinstance(status, dict) else {}
    errs = validate_nonnegative(status.get("currentReplicas", 0), "status.currentReplicas")
    return errs + validate_nonnegative(status.get("desiredReplicas", 0), "status.desiredReplicas")


VALIDATORS = {
    ("policy", "PodDisruptionBudget"): validate_pod_disruption_budget,
    ("autoscaling", "HorizontalPodAutoscaler"): validate_hpa,
}
UPDATE_VALIDATORS = {
    ("policy", "PodDisruptionBudget"): validate_pod_disruption_budget_update,
    ("autoscaling", "HorizontalPodAutoscaler"): validate_hpa_update,
}
