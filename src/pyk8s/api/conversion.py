"""Conversion between served versions of one stored kind, on wire-form dicts.

Three families, each converted through a hub (the version objects are stored in):

* autoscaling HorizontalPodAutoscaler: v1 <-> v2 (hub v2). What v1 cannot express
  (other metrics, behavior, conditions, raw current metrics) travels in the
  `autoscaling.alpha.kubernetes.io/*` annotations in the same encodings upstream's
  pkg/apis/autoscaling/v1/conversion.go writes, so a v1 read-modify-write loses nothing.
* Event: core v1 <-> events.k8s.io/v1 (hub core v1), field renames as upstream's
  pkg/apis/events/v1/conversion.go.
* The apps workloads of extensions/v1beta1, apps/v1beta1 and apps/v1beta2 <-> apps/v1
  (hub apps/v1). v1.33 no longer serves the old versions but tutorials still use them;
  their own defaulting (selector from template labels, old rolling-update numbers, ...)
  is applied on the way in, because upstream defaulted in the request's version before
  converting, and apps/v1 defaulting would otherwise fill in different values.

`CONVERTERS` is keyed by ((group, kind) of the hub, from apiVersion, to apiVersion);
full apiVersions are used because Events and old workloads change group, so a bare
version ("v1") would be ambiguous. Every converter is pure: it returns a new dict.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

from .patch._common import deepcopy_json

__all__ = [
    "convert",
    "CONVERTERS",
    "ConversionError",
    "Converter",
    "hub_version",
    "can_convert",
    "deprecated_versions",
    "deprecation_warning",
    "METRIC_SPECS_ANNOTATION",
    "METRIC_STATUSES_ANNOTATION",
    "HPA_CONDITIONS_ANNOTATION",
    "BEHAVIOR_SPECS_ANNOTATION",
    "DEPRECATED_TEMPLATE_GENERATION",
]

GroupKind = tuple[str, str]
Converter = Callable[[dict, str], dict]

MAX_INT32 = 2147483647


class ConversionError(ValueError):
    """No conversion is registered between the two versions of a kind."""


def _dc(v: Any) -> Any:
    # objects here are decoded JSON: the JSON copy is several times cheaper than copy.deepcopy, and the
    # scheduler's events.k8s.io Event (one per bound pod) passes here on the way in and on the way out
    return deepcopy_json(v)


def _go_json(v: Any) -> str:
    """Compact JSON as Go's encoding/json writes it (HTML-safe escapes included)."""
    s = json.dumps(v, separators=(",", ":"), ensure_ascii=False)
    # These characters only ever occur inside JSON strings, so a plain replace is safe.
    for ch, esc in (("<", "\\u003c"), (">", "\\u003e"), ("&", "\\u0026"),
                    ("\u2028", "\\u2028"), ("\u2029", "\\u2029")):
        s = s.replace(ch, esc)
    return s


def _loads(raw: Any) -> Any:
    if not isinstance(raw, str):
        return None
    try:
        return json.loads(raw)
    except ValueError:
        return None


def _put(out: dict, key: str, src: dict, src_key: str | None = None) -> None:
    """Copy a pointer-like (omitempty) field when set."""
    v = src.get(src_key or key)
    if v is not None:
        out[key] = _dc(v)


def _opt(out: dict, key: str, value: Any) -> None:
    """Set an omitempty pointer field when it has a value."""
    if value is not None:
        out[key] = _dc(value)


def _rebuild(obj: dict, api_version: str, **parts: Any) -> dict:
    """A copy of obj with apiVersion and the given top-level parts replaced, key order kept."""
    out: dict = {}
    for k, v in obj.items():
        if k == "apiVersion":
            out[k] = api_version
        elif k in parts:
            out[k] = parts.pop(k)
        else:
            out[k] = _dc(v)
    out.setdefault("apiVersion", api_version)
    out.update(parts)
    return out


# ---------------------------------------------------------------------------
# autoscaling HorizontalPodAutoscaler v1 <-> v2
# ---------------------------------------------------------------------------

METRIC_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/metrics"
METRIC_STATUSES_ANNOTATION = "autoscaling.alpha.kubernetes.io/current-metrics"
HPA_CONDITIONS_ANNOTATION = "autoscaling.alpha.kubernetes.io/conditions"
BEHAVIOR_SPECS_ANNOTATION = "autoscaling.alpha.kubernetes.io/behavior"
_HPA_ROUND_TRIP = (METRIC_SPECS_ANNOTATION, BEHAVIOR_SPECS_ANNOTATION,
                   METRIC_STATUSES_ANNOTATION, HPA_CONDITIONS_ANNOTATION)
DEFAULT_CPU_UTILIZATION = 80


def _drop_round_trip(meta: dict) -> None:
    """Remove the HPA round-trip annotations; an emptied map disappears (Go omitempty)."""
    ann = meta.get("annotations")
    if not isinstance(ann, dict) or not any(k in ann for k in _HPA_ROUND_TRIP):
        return
    for k in _HPA_ROUND_TRIP:
        ann.pop(k, None)
    if not ann:
        del meta["annotations"]


def _annotate(meta: dict, key: str, value: str) -> None:
    ann = meta.get("annotations")
    if not isinstance(ann, dict):
        ann = meta["annotations"] = {}
    ann[key] = value


def _xref(r: Any) -> dict:
    """CrossVersionObjectReference: kind and name always, apiVersion when set."""
    r = r if isinstance(r, dict) else {}
    out = {"kind": r.get("kind", ""), "name": r.get("name", "")}
    if r.get("apiVersion"):
        out["apiVersion"] = r["apiVersion"]
    return out


def _qty(src: dict, key: str) -> Any:
    """A non-pointer Go resource.Quantity: its zero value marshals as "0"."""
    v = src.get(key)
    return _dc(v) if v is not None else "0"


def _ident(m: dict) -> tuple[str, Any]:
    ident = m.get("metric") or {}
    return ident.get("name", ""), ident.get("selector")


def _v1_ident(name: Any, selector: Any) -> dict:
    out: dict = {"name": name or ""}
    if selector is not None:
        out["selector"] = _dc(selector)
    return out


def _is_cpu_utilization(m: dict) -> bool:
    r = m.get("resource")
    return (m.get("type") == "Resource" and isinstance(r, dict) and r.get("name") == "cpu"
            and (r.get("target") or {}).get("averageUtilization") is not None)


def _metric_spec_to_v1(m: dict) -> dict:
    """v2 MetricSpec -> the autoscaling/v1 MetricSpec shape stored in the annotation."""
    out: dict = {"type": m.get("type", "")}
    if isinstance(o := m.get("object"), dict):
        name, sel = _ident(o)
        t = o.get("target") or {}
        v: dict = {"target": _xref(o.get("describedObject")), "metricName": name, "targetValue": _qty(t, "value")}
        _opt(v, "selector", sel)
        _put(v, "averageValue", t)
        out["object"] = v
    if isinstance(p := m.get("pods"), dict):
        name, sel = _ident(p)
        v = {"metricName": name, "targetAverageValue": _qty(p.get("target") or {}, "averageValue")}
        _opt(v, "selector", sel)
        out["pods"] = v
    for key in ("resource", "containerResource"):
        if isinstance(r := m.get(key), dict):
            t = r.get("target") or {}
            v = {"name": r.get("name", "")}
            _put(v, "targetAverageUtilization", t, "averageUtilization")
            _put(v, "targetAverageValue", t, "averageValue")
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(e := m.get("external"), dict):
        name, sel = _ident(e)
        t = e.get("target") or {}
        v = {"metricName": name}
        _opt(v, "metricSelector", sel)
        _put(v, "targetValue", t, "value")
        _put(v, "targetAverageValue", t, "averageValue")
        out["external"] = v
    return out


def _metric_spec_from_v1(m: dict) -> dict:
    """The annotation's v1 MetricSpec -> v2 MetricSpec (target types inferred as upstream)."""
    out: dict = {"type": m.get("type", "")}
    if isinstance(o := m.get("object"), dict):
        # Upstream always points Value at TargetValue, so "0" appears when it was unset.
        t: dict = {"type": "Value" if o.get("averageValue") is None else "AverageValue",
                   "value": _qty(o, "targetValue")}
        _put(t, "averageValue", o)
        out["object"] = {"describedObject": _xref(o.get("target")),
                         "target": t, "metric": _v1_ident(o.get("metricName"), o.get("selector"))}
    if isinstance(p := m.get("pods"), dict):
        out["pods"] = {"metric": _v1_ident(p.get("metricName"), p.get("selector")),
                       "target": {"type": "AverageValue", "averageValue": _qty(p, "targetAverageValue")}}
    for key in ("resource", "containerResource"):
        if isinstance(r := m.get(key), dict):
            util = r.get("targetAverageUtilization")
            t = {"type": "AverageValue" if util is None else "Utilization"}
            _put(t, "averageValue", r, "targetAverageValue")
            _put(t, "averageUtilization", r, "targetAverageUtilization")
            v: dict = {"name": r.get("name", ""), "target": t}
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(e := m.get("external"), dict):
        t = {"type": "AverageValue" if e.get("targetValue") is None else "Value"}
        _put(t, "value", e, "targetValue")
        _put(t, "averageValue", e, "targetAverageValue")
        out["external"] = {"metric": _v1_ident(e.get("metricName"), e.get("metricSelector")), "target": t}
    return out


def _metric_status_to_v1(m: dict) -> dict:
    out: dict = {"type": m.get("type", "")}
    if isinstance(o := m.get("object"), dict):
        name, sel = _ident(o)
        c = o.get("current") or {}
        v: dict = {"target": _xref(o.get("describedObject")), "metricName": name, "currentValue": _qty(c, "value")}
        _opt(v, "selector", sel)
        _put(v, "averageValue", c)
        out["object"] = v
    if isinstance(p := m.get("pods"), dict):
        name, sel = _ident(p)
        v = {"metricName": name, "currentAverageValue": _qty(p.get("current") or {}, "averageValue")}
        _opt(v, "selector", sel)
        out["pods"] = v
    for key in ("resource", "containerResource"):
        if isinstance(r := m.get(key), dict):
            c = r.get("current") or {}
            v = {"name": r.get("name", "")}
            _put(v, "currentAverageUtilization", c, "averageUtilization")
            v["currentAverageValue"] = _qty(c, "averageValue")
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(e := m.get("external"), dict):
        name, sel = _ident(e)
        c = e.get("current") or {}
        v = {"metricName": name}
        _opt(v, "metricSelector", sel)
        v["currentValue"] = _qty(c, "value")
        _put(v, "currentAverageValue", c, "averageValue")
        out["external"] = v
    return out


def _metric_status_from_v1(m: dict) -> dict:
    out: dict = {"type": m.get("type", "")}
    if isinstance(o := m.get("object"), dict):
        c: dict = {"value": _qty(o, "currentValue")}
        _put(c, "averageValue", o)
        out["object"] = {"metric": _v1_ident(o.get("metricName"), o.get("selector")), "current": c,
                         "describedObject": _xref(o.get("target"))}
    if isinstance(p := m.get("pods"), dict):
        out["pods"] = {"metric": _v1_ident(p.get("metricName"), p.get("selector")),
                       "current": {"averageValue": _qty(p, "currentAverageValue")}}
    for key in ("resource", "containerResource"):
        if isinstance(r := m.get(key), dict):
            # Upstream always sets AverageValue from the (non-pointer) v1 field.
            c = {"averageValue": _qty(r, "currentAverageValue")}
            _put(c, "averageUtilization", r, "currentAverageUtilization")
            v: dict = {"name": r.get("name", ""), "current": c}
            if key == "containerResource":
                v["container"] = r.get("container", "")
            out[key] = v
    if isinstance(e := m.get("external"), dict):
        c = {"value": _qty(e, "currentValue")}
        _put(c, "averageValue", e, "currentAverageValue")
        out["external"] = {"metric": _v1_ident(e.get("metricName"), e.get("metricSelector")), "current": c}
    return out


def _condition_to_v1(c: dict) -> dict:
    # metav1.Time is a struct: a zero lastTransitionTime marshals as null, never omitted.
    out = {"type": c.get("type", ""), "status": c.get("status", ""),
           "lastTransitionTime": c.get("lastTransitionTime")}
    if c.get("reason"):
        out["reason"] = c["reason"]
    if c.get("message"):
        out["message"] = c["message"]
    return out


def _condition_from_v1(c: dict) -> dict:
    out = {"type": c.get("type", ""), "status": c.get("status", "")}
    for k in ("lastTransitionTime", "reason", "message"):
        if c.get(k):
            out[k] = c[k]
    return out


# The behavior annotation is Go's json.Marshal of the *internal* behavior type, which has
# no json tags: keys are the Go field names and nil pointers/slices are written as null.
_RULE_FIELDS = (("StabilizationWindowSeconds", "stabilizationWindowSeconds"), ("SelectPolicy", "selectPolicy"),
                ("Policies", "policies"), ("Tolerance", "tolerance"))
_POLICY_FIELDS = (("Type", "type", ""), ("Value", "value", 0), ("PeriodSeconds", "periodSeconds", 0))


def _behavior_to_annotation(b: dict) -> str:
    def rules(r: Any) -> Any:
        if not isinstance(r, dict):
            return None
        out: dict = {}
        for go, wire in _RULE_FIELDS:
            v = r.get(wire)
            if go == "Policies" and isinstance(v, list):
                v = [{g: p.get(w, d) for g, w, d in _POLICY_FIELDS} for p in v if isinstance(p, dict)]
            out[go] = _dc(v)
        return out

    return _go_json({"ScaleUp": rules(b.get("scaleUp")), "ScaleDown": rules(b.get("scaleDown"))})


def _get_ci(d: dict, name: str) -> Any:
    """A key looked up as encoding/json matches fields: exact first, then case-insensitively."""
    if name in d:
        return d[name]
    low = name.lower()
    for k, v in d.items():
        if isinstance(k, str) and k.lower() == low:
            return v
    return None


def _or(v: Any, default: Any) -> Any:
    return default if v is None else v


def _behavior_from_annotation(raw: Any) -> dict | None:
    """None when the annotation does not decode or decodes to the zero behavior (as upstream)."""
    b = _loads(raw)
    if not isinstance(b, dict):
        return None

    def rules(r: Any) -> dict | None:
        if not isinstance(r, dict):
            return None
        out: dict = {}
        for go, wire in _RULE_FIELDS:
            v = _get_ci(r, go)
            if v is None:
                continue
            if go == "Policies":
                if not isinstance(v, list):
                    continue
                v = [{w: _or(_get_ci(p, g), d) for g, w, d in _POLICY_FIELDS} for p in v if isinstance(p, dict)]
            out[wire] = _dc(v)
        return out

    out: dict = {}
    if (up := rules(_get_ci(b, "ScaleUp"))) is not None:
        out["scaleUp"] = up
    if (down := rules(_get_ci(b, "ScaleDown"))) is not None:
        out["scaleDown"] = down
    return out or None


def _hpa_v2_to_v1(obj: dict, to: str) -> dict:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    meta = _dc(obj.get("metadata") or {})
    # Only annotations this conversion writes may appear in the result.
    _drop_round_trip(meta)

    metrics = [m for m in spec.get("metrics") or [] if isinstance(m, dict)]
    v1spec: dict = {"scaleTargetRef": _xref(spec.get("scaleTargetRef"))}
    _put(v1spec, "minReplicas", spec)
    v1spec["maxReplicas"] = spec.get("maxReplicas", 0)
    for m in metrics:
        # The first cpu Resource metric decides, whether or not it is a utilization target.
        if m.get("type") == "Resource" and (m.get("resource") or {}).get("name") == "cpu":
            util = ((m["resource"].get("target")) or {}).get("averageUtilization")
            if util is not None:
                v1spec["targetCPUUtilizationPercentage"] = util
            break

    current = [m for m in status.get("currentMetrics") or [] if isinstance(m, dict)]
    conditions = [c for c in status.get("conditions") or [] if isinstance(c, dict)]
    v1status: dict = {}
    _put(v1status, "observedGeneration", status)
    _put(v1status, "lastScaleTime", status)
    v1status["currentReplicas"] = status.get("currentReplicas", 0)
    v1status["desiredReplicas"] = status.get("desiredReplicas", 0)
    for m in current:  # no break upstream: the last cpu utilization wins
        r = m.get("resource") or {}
        if m.get("type") == "Resource" and r.get("name") == "cpu":
            util = (r.get("current") or {}).get("averageUtilization")
            if util is not None:
                v1status["currentCPUUtilizationPercentage"] = util

    other = [_metric_spec_to_v1(m) for m in metrics if not _is_cpu_utilization(m)]
    if other:
        _annotate(meta, METRIC_SPECS_ANNOTATION, _go_json(other))
    # The statuses are saved even when one maps to currentCPUUtilizationPercentage: the
    # raw value would be lost otherwise.
    if current:
        _annotate(meta, METRIC_STATUSES_ANNOTATION, _go_json([_metric_status_to_v1(m) for m in current]))
    if conditions:
        _annotate(meta, HPA_CONDITIONS_ANNOTATION, _go_json([_condition_to_v1(c) for c in conditions]))
    if isinstance(spec.get("behavior"), dict):
        _annotate(meta, BEHAVIOR_SPECS_ANNOTATION, _behavior_to_annotation(spec["behavior"]))
    return _rebuild(obj, to, metadata=meta, spec=v1spec, status=v1status)


def _hpa_v1_to_v2(obj: dict, to: str) -> dict:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    meta = _dc(obj.get("metadata") or {})
    ann = meta.get("annotations") if isinstance(meta.get("annotations"), dict) else {}

    v2spec: dict = {"scaleTargetRef": _xref(spec.get("scaleTargetRef"))}
    _put(v2spec, "minReplicas", spec)
    v2spec["maxReplicas"] = spec.get("maxReplicas", 0)
    metrics: list[dict] = []
    other = _loads(ann.get(METRIC_SPECS_ANNOTATION))
    if isinstance(other, list):
        metrics = [_metric_spec_from_v1(m) for m in other if isinstance(m, dict)]
    if spec.get("targetCPUUtilizationPercentage") is not None:
        # After the annotation's metrics, as upstream appends it.
        metrics.append({"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": spec["targetCPUUtilizationPercentage"]}}})
    if not metrics:
        # v1 once had this default implicitly in the controller; v2 states it.
        metrics = [{"type": "Resource", "resource": {"name": "cpu", "target": {
            "type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    v2spec["metrics"] = metrics
    if (behavior := _behavior_from_annotation(ann.get(BEHAVIOR_SPECS_ANNOTATION))) is not None:
        v2spec["behavior"] = behavior

    v2status: dict = {}
    _put(v2status, "observedGeneration", status)
    _put(v2status, "lastScaleTime", status)
    if status.get("currentReplicas"):
        v2status["currentReplicas"] = status["currentReplicas"]
    v2status["desiredReplicas"] = status.get("desiredReplicas", 0)
    current: list[dict] | None = None
    if status.get("currentCPUUtilizationPercentage") is not None:
        current = [{"type": "Resource", "resource": {"name": "cpu", "current": {
            "averageUtilization": status["currentCPUUtilizationPercentage"]}}}]
    saved = _loads(ann.get(METRIC_STATUSES_ANNOTATION))
    if isinstance(saved, list):  # the saved statuses carry more than the percentage
        current = [_metric_status_from_v1(m) for m in saved if isinstance(m, dict)]
    if current:
        v2status["currentMetrics"] = current
    conds = _loads(ann.get(HPA_CONDITIONS_ANNOTATION))
    if isinstance(conds, list) and conds:
        v2status["conditions"] = [_condition_from_v1(c) for c in conds if isinstance(c, dict)]

    _drop_round_trip(meta)
    return _rebuild(obj, to, metadata=meta, spec=v2spec, status=v2status)


# ---------------------------------------------------------------------------
# Event: core v1 <-> events.k8s.io/v1
# ---------------------------------------------------------------------------

def _event_core_to_events(obj: dict, to: str) -> dict:
    # Go field order of events.k8s.io/v1 Event; struct-typed times marshal as null when zero.
    out: dict = {"apiVersion": to, "kind": obj.get("kind", "Event"), "metadata": _dc(obj.get("metadata") or {})}
    out["eventTime"] = _dc(obj.get("eventTime"))
    _put(out, "series", obj)
    if obj.get("reportingComponent"):
        out["reportingController"] = obj["reportingComponent"]
    if obj.get("reportingInstance"):
        out["reportingInstance"] = obj["reportingInstance"]
    for k in ("action", "reason"):
        if obj.get(k):
            out[k] = obj[k]
    out["regarding"] = _dc(obj.get("involvedObject") or {})
    _put(out, "related", obj)
    if obj.get("message"):
        out["note"] = obj["message"]
    if obj.get("type"):
        out["type"] = obj["type"]
    out["deprecatedSource"] = _dc(obj.get("source") or {})
    out["deprecatedFirstTimestamp"] = _dc(obj.get("firstTimestamp"))
    out["deprecatedLastTimestamp"] = _dc(obj.get("lastTimestamp"))
    if obj.get("count"):
        out["deprecatedCount"] = obj["count"]
    return out


def _event_events_to_core(obj: dict, to: str) -> dict:
    out: dict = {"apiVersion": to, "kind": obj.get("kind", "Event"), "metadata": _dc(obj.get("metadata") or {})}
    out["involvedObject"] = _dc(obj.get("regarding") or {})
    if obj.get("reason"):
        out["reason"] = obj["reason"]
    if obj.get("note"):
        out["message"] = obj["note"]
    out["source"] = _dc(obj.get("deprecatedSource") or {})
    out["firstTimestamp"] = _dc(obj.get("deprecatedFirstTimestamp"))
    out["lastTimestamp"] = _dc(obj.get("deprecatedLastTimestamp"))
    if obj.get("deprecatedCount"):
        out["count"] = obj["deprecatedCount"]
    if obj.get("type"):
        out["type"] = obj["type"]
    out["eventTime"] = _dc(obj.get("eventTime"))
    _put(out, "series", obj)
    if obj.get("action"):
        out["action"] = obj["action"]
    _put(out, "related", obj)
    # core/v1 has no omitempty on these two: they always appear, "" when unset.
    out["reportingComponent"] = obj.get("reportingController") or ""
    out["reportingInstance"] = obj.get("reportingInstance") or ""
    return out


# ---------------------------------------------------------------------------
# Deprecated apps workload versions <-> apps/v1
# ---------------------------------------------------------------------------

DEPRECATED_TEMPLATE_GENERATION = "deprecated.daemonset.template.generation"

_PLURALS = {"Deployment": "deployments", "DaemonSet": "daemonsets", "ReplicaSet": "replicasets",
            "StatefulSet": "statefulsets", "ControllerRevision": "controllerrevisions"}
# (group, version) -> (kinds, deprecated-in minor, removed-in minor), from upstream's
# prerelease-lifecycle tags (extensions and apps/v1beta1 deprecated in 1.8, apps/v1beta2 in 1.9).
_OLD_WORKLOAD_VERSIONS: dict[tuple[str, str], tuple[tuple[str, ...], int, int]] = {
    ("extensions", "v1beta1"): (("Deployment", "DaemonSet", "ReplicaSet"), 8, 16),
    ("apps", "v1beta1"): (("Deployment", "StatefulSet", "ControllerRevision"), 8, 16),
    ("apps", "v1beta2"): (("Deployment", "DaemonSet", "ReplicaSet", "StatefulSet", "ControllerRevision"), 9, 16),
}


def _default_selector_and_labels(obj: dict) -> None:
    """extensions/v1beta1 and apps/v1beta1 took a missing selector (and empty object
    labels) from the pod template's labels; apps/v1beta2 and apps/v1 require a selector."""
    spec = obj.setdefault("spec", {})
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if not isinstance(labels, dict):
        return
    if spec.get("selector") is None:
        spec["selector"] = {"matchLabels": _dc(labels)} if labels else {}
    meta = obj.setdefault("metadata", {})
    if not meta.get("labels") and labels:
        meta["labels"] = _dc(labels)


def _default_replicas(spec: dict) -> None:
    if spec.get("replicas") is None:
        spec["replicas"] = 1


def _default_deployment(obj: dict, surge: Any, unavailable: Any, history: int, deadline: int) -> None:
    _default_selector_and_labels(obj)
    spec = obj["spec"]
    _default_replicas(spec)
    strategy = spec.get("strategy")
    if not isinstance(strategy, dict):
        strategy = spec["strategy"] = {}
    if not strategy.get("type"):
        strategy["type"] = "RollingUpdate"
    if strategy["type"] == "RollingUpdate":
        ru = strategy.get("rollingUpdate")
        if not isinstance(ru, dict):
            ru = strategy["rollingUpdate"] = {}
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = unavailable
        if ru.get("maxSurge") is None:
            ru["maxSurge"] = surge
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = history
    if spec.get("progressDeadlineSeconds") is None:
        spec["progressDeadlineSeconds"] = deadline


def _default_extensions_deployment(obj: dict) -> None:
    # MaxInt32 is how these versions spelled "unlimited" history and "no deadline".
    _default_deployment(obj, 1, 1, MAX_INT32, MAX_INT32)


def _default_apps_v1beta1_deployment(obj: dict) -> None:
    _default_deployment(obj, "25%", "25%", 2, 600)


def _default_extensions_daemonset(obj: dict) -> None:
    _default_selector_and_labels(obj)
    spec = obj["spec"]
    us = spec.get("updateStrategy")
    if not isinstance(us, dict):
        us = spec["updateStrategy"] = {}
    if not us.get("type"):
        us["type"] = "OnDelete"  # apps/v1 would make it RollingUpdate
    if us["type"] == "RollingUpdate":
        ru = us.get("rollingUpdate")
        if not isinstance(ru, dict):
            ru = us["rollingUpdate"] = {}
        if ru.get("maxUnavailable") is None:
            ru["maxUnavailable"] = 1
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10


def _default_extensions_replicaset(obj: dict) -> None:
    _default_selector_and_labels(obj)
    _default_replicas(obj["spec"])


def _default_apps_v1beta1_statefulset(obj: dict) -> None:
    _default_selector_and_labels(obj)
    spec = obj["spec"]
    if not spec.get("podManagementPolicy"):
        spec["podManagementPolicy"] = "OrderedReady"
    us = spec.get("updateStrategy")
    if not isinstance(us, dict):
        us = spec["updateStrategy"] = {}
    if not us.get("type"):
        us["type"] = "OnDelete"  # apps/v1beta2 and later default to RollingUpdate
    if us["type"] == "RollingUpdate" and isinstance(us.get("rollingUpdate"), dict):
        us["rollingUpdate"].setdefault("partition", 0)
    _default_replicas(spec)
    if spec.get("revisionHistoryLimit") is None:
        spec["revisionHistoryLimit"] = 10


_OLD_DEFAULTERS: dict[tuple[str, str], Callable[[dict], None]] = {
    ("extensions/v1beta1", "Deployment"): _default_extensions_deployment,
    ("extensions/v1beta1", "DaemonSet"): _default_extensions_daemonset,
    ("extensions/v1beta1", "ReplicaSet"): _default_extensions_replicaset,
    ("apps/v1beta1", "Deployment"): _default_apps_v1beta1_deployment,
    ("apps/v1beta1", "StatefulSet"): _default_apps_v1beta1_statefulset,
}


def _old_to_apps_v1(obj: dict, to: str) -> dict:
    src = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    out = _dc(obj)
    out["apiVersion"] = to
    if (d := _OLD_DEFAULTERS.get((src, kind))) is not None:
        d(out)
    spec = out.get("spec")
    if kind == "Deployment" and isinstance(spec, dict):
        spec.pop("rollbackTo", None)  # rollback-by-spec has no apps/v1 counterpart
    if src == "extensions/v1beta1" and kind == "DaemonSet" and isinstance(spec, dict):
        # apps/v1 keeps the old templateGeneration counter in an annotation.
        gen = spec.pop("templateGeneration", None)
        if gen is not None:
            meta = out.setdefault("metadata", {})
            if not isinstance(meta.get("annotations"), dict):
                meta["annotations"] = {}
            meta["annotations"][DEPRECATED_TEMPLATE_GENERATION] = str(gen)
    return out


def _apps_v1_to_old(obj: dict, to: str) -> dict:
    out = _dc(obj)
    out["apiVersion"] = to
    if to == "extensions/v1beta1" and out.get("kind") == "DaemonSet":
        ann = (out.get("metadata") or {}).get("annotations")
        ann = ann if isinstance(ann, dict) else {}
        raw = ann.get(DEPRECATED_TEMPLATE_GENERATION)
        try:
            gen = int(raw) if raw is not None else None
        except (TypeError, ValueError):
            gen = None  # unparseable: leave the annotation where it is
        if gen is not None:
            out.setdefault("spec", {})["templateGeneration"] = gen
            del ann[DEPRECATED_TEMPLATE_GENERATION]
            if not ann:
                del out["metadata"]["annotations"]
    return out


def deprecated_versions() -> list[tuple[str, str, str, str, str]]:
    """(group, version, kind, plural, replacement apiVersion) of every old workload version to serve."""
    return [(g, v, k, _PLURALS[k], "apps/v1")
            for (g, v), (kinds, _, _) in _OLD_WORKLOAD_VERSIONS.items() for k in kinds]


def deprecation_warning(group: str, version: str, kind: str) -> str:
    """The Warning header text upstream's deprecation.WarningMessage builds; "" if not deprecated."""
    entry = _OLD_WORKLOAD_VERSIONS.get((group, version))
    if entry is None or kind not in entry[0]:
        return ""
    _, deprecated, removed = entry
    gv = f"{group}/{version}" if group else version
    return f"{gv} {kind} is deprecated in v1.{deprecated}+, unavailable in v1.{removed}+; use apps/v1 {kind}"


# ---------------------------------------------------------------------------
# Registry and entry point
# ---------------------------------------------------------------------------

CONVERTERS: dict[tuple[GroupKind, str, str], Converter] = {
    (("autoscaling", "HorizontalPodAutoscaler"), "autoscaling/v1", "autoscaling/v2"): _hpa_v1_to_v2,
    (("autoscaling", "HorizontalPodAutoscaler"), "autoscaling/v2", "autoscaling/v1"): _hpa_v2_to_v1,
    (("", "Event"), "v1", "events.k8s.io/v1"): _event_core_to_events,
    (("", "Event"), "events.k8s.io/v1", "v1"): _event_events_to_core,
}
for (_g, _v), (_kinds, _, _) in _OLD_WORKLOAD_VERSIONS.items():
    for _k in _kinds:
        CONVERTERS[(("apps", _k), f"{_g}/{_v}", "apps/v1")] = _old_to_apps_v1
        CONVERTERS[(("apps", _k), "apps/v1", f"{_g}/{_v}")] = _apps_v1_to_old
# resource.k8s.io v1beta2 <-> v1beta1 (conversion_resource.py)
from .conversion_resource import HUB as _RESOURCE_HUB  # noqa: E402
from .conversion_resource import RESOURCE_CONVERTERS as _RESOURCE_CONVERTERS  # noqa: E402

CONVERTERS.update(_RESOURCE_CONVERTERS)

# (apiVersion, kind) -> (hub group-kind, hub apiVersion)
_HUBS: dict[tuple[str, str], tuple[GroupKind, str]] = {}
_HUB_VERSION = {("autoscaling", "HorizontalPodAutoscaler"): "autoscaling/v2", ("", "Event"): "v1",
                **{gk: _RESOURCE_HUB for (gk, _, _) in _RESOURCE_CONVERTERS}}
for (_gk, _from, _to) in CONVERTERS:
    _hub = _HUB_VERSION.get(_gk, "apps/v1")
    _HUBS[(_from, _gk[1])] = (_gk, _hub)
    _HUBS[(_to, _gk[1])] = (_gk, _hub)


def hub_version(api_version: str, kind: str) -> str | None:
    """The apiVersion objects of this kind are stored in, if conversions are registered for it."""
    h = _HUBS.get((api_version, kind))
    return h[1] if h else None


def _find(api_version: str, kind: str, to: str) -> list[Converter] | None:
    """The converter chain from one version to another: direct, or through the hub."""
    h = _HUBS.get((api_version, kind))
    if h is None or (to, kind) not in _HUBS or _HUBS[(to, kind)][0] != h[0]:
        return None
    gk, hub = h
    if (direct := CONVERTERS.get((gk, api_version, to))) is not None:
        return [direct]
    a, b = CONVERTERS.get((gk, api_version, hub)), CONVERTERS.get((gk, hub, to))
    if a is None or b is None:
        return None
    return [lambda o, _t: a(o, hub), b]


def can_convert(api_version: str, kind: str, to_api_version: str) -> bool:
    return api_version == to_api_version or _find(api_version, kind, to_api_version) is not None


def _convert_item(item: Any, src: str, kind: str, to: str) -> Any:
    """A list item, which may leave apiVersion/kind to its list; keeps them absent if they were."""
    if not isinstance(item, dict):
        return _dc(item)
    bare = "apiVersion" not in item, "kind" not in item
    out = convert({"apiVersion": item.get("apiVersion", src), "kind": item.get("kind", kind), **item}, to)
    if bare[0]:
        out.pop("apiVersion", None)
    if bare[1]:
        out.pop("kind", None)
    return out


def convert(obj: dict, to_api_version: str) -> dict:
    """obj (wire form) in to_api_version, as a new dict. Lists convert item by item.

    Raises ConversionError when no conversion between the two versions is registered.
    """
    src = obj.get("apiVersion", "")
    kind = obj.get("kind", "")
    if src == to_api_version:
        return _dc(obj)
    if kind.endswith("List") and isinstance(obj.get("items"), list):
        item_kind = kind[: -len("List")]
        out = _dc({k: v for k, v in obj.items() if k != "items"})
        out["apiVersion"] = to_api_version
        out["items"] = [_convert_item(i, src, item_kind, to_api_version) for i in obj["items"]]
        return out
    chain = _find(src, kind, to_api_version)
    if chain is None:
        raise ConversionError(f"no conversion for {kind} from {src or '<none>'} to {to_api_version}")
    cur = obj
    for step in chain:
        cur = step(cur, to_api_version)
    return cur
