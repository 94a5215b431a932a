"""Tables for autoscaling (horizontal pod autoscalers, Scale) and policy (disruption budgets)."""

from __future__ import annotations

from typing import Any

from .base import TablePrinter, age, age_col, col, int_or_string, name_col, printer, quantity_str

H = "io.k8s.api.autoscaling.v2."
GK = tuple[str, str]


def _q(v: Any) -> str:
    # Quantity pointers print "<nil>" when unset (upstream's (*Quantity).String()).
    return "<nil>" if v is None else quantity_str(v)


def _v1_metrics(hpa: dict) -> tuple[list, list]:
    """autoscaling/v1's single CPU target, read as the equivalent v2 metric."""
    spec = hpa.get("spec") or {}
    status = hpa.get("status") or {}
    target = spec.get("targetCPUUtilizationPercentage")
    if target is None:
        return [], []
    metrics = [
        {
            "type": "Resource",
            "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": target}},
        }
    ]
    current = status.get("currentCPUUtilizationPercentage")
    statuses = []
    if current is not None:
        statuses = [
            {"type": "Resource", "resource": {"name": "cpu", "current": {"averageUtilization": current}}}
        ]
    return metrics, statuses


def _metric_value(spec_part: dict, status_part: dict | None, avg_fmt: str) -> str:
    target = spec_part.get("target") or {}
    if target.get("averageValue") is not None:
        current = "<unknown>"
        if status_part is not None and (status_part.get("current") or {}).get("averageValue") is not None:
            current = _q(status_part["current"]["averageValue"])
        return avg_fmt.format(current, _q(target.get("averageValue")))
    current = "<unknown>"
    if status_part is not None:
        current = _q((status_part.get("current") or {}).get("value"))
    return f"{current}/{_q(target.get('value'))}"


def _resource_metric(spec_part: dict, status_part: dict | None) -> str:
    name = spec_part.get("name", "")
    target = spec_part.get("target") or {}
    if target.get("averageValue") is not None:
        current = "<unknown>"
        if status_part is not None:
            current = _q((status_part.get("current") or {}).get("averageValue"))
        return f"{name}: {current}/{_q(target.get('averageValue'))}"
    current = "<unknown>"
    if status_part is not None and (status_part.get("current") or {}).get("averageUtilization") is not None:
        current = f"{status_part['current']['averageUtilization']}%"
    util = target.get("averageUtilization")
    return f"{name}: {current}/{'<auto>' if util is None else f'{util}%'}"


def format_hpa_metrics(specs: list, statuses: list) -> str:
    """formatHPAMetrics: at most two targets, "current/target" each, then " + N more..."."""
    if not specs:
        return "<none>"
    out = []
    for i, spec in enumerate(specs):
        st = statuses[i] if i < len(statuses) else {}
        mtype = spec.get("type")
        if mtype == "External":
            out.append(_metric_value(spec.get("external") or {}, st.get("external"), "{}/{} (avg)"))
        elif mtype == "Pods":
            current = "<unknown>"
            if st.get("pods") is not None:
                current = _q((st["pods"].get("current") or {}).get("averageValue"))
            target = ((spec.get("pods") or {}).get("target") or {}).get("averageValue")
            out.append(f"{current}/{_q(target)}")
        elif mtype == "Object":
            out.append(_metric_value(spec.get("object") or {}, st.get("object"), "{}/{} (avg)"))
        elif mtype == "Resource":
            out.append(_resource_metric(spec.get("resource") or {}, st.get("resource")))
        elif mtype == "ContainerResource":
            out.append(_resource_metric(spec.get("containerResource") or {}, st.get("containerResource")))
        else:
            out.append("<unknown type>")
    if len(out) > 2:
        return ", ".join(out[:2]) + f" + {len(out) - 2} more..."
    return ", ".join(out)


def _hpa_row(hpa: dict, now: float) -> list:
    spec = hpa.get("spec") or {}
    status = hpa.get("status") or {}
    ref = spec.get("scaleTargetRef") or {}
    if "metrics" in spec or "targetCPUUtilizationPercentage" not in spec:
        metrics, statuses = spec.get("metrics") or [], status.get("currentMetrics") or []
    else:
        metrics, statuses = _v1_metrics(hpa)
    min_replicas = spec.get("minReplicas")
    return [
        (hpa.get("metadata") or {}).get("name", ""),
        f"{ref.get('kind', '')}/{ref.get('name', '')}",
        format_hpa_metrics(metrics, statuses),
        "<unset>" if min_replicas is None else str(min_replicas),
        spec.get("maxReplicas") or 0,
        status.get("currentReplicas") or 0,
        age(hpa, now),
    ]


HORIZONTAL_POD_AUTOSCALER = printer(
    [
        name_col(),
        col("Reference", description=(H + "HorizontalPodAutoscalerSpec", "scaleTargetRef")),
        col("Targets", description=(H + "HorizontalPodAutoscalerSpec", "metrics")),
        col("MinPods", description=(H + "HorizontalPodAutoscalerSpec", "minReplicas")),
        col("MaxPods", description=(H + "HorizontalPodAutoscalerSpec", "maxReplicas")),
        col("Replicas", description=(H + "HorizontalPodAutoscalerStatus", "currentReplicas")),
        age_col(),
    ],
    _hpa_row,
)

SCALE = printer(
    [
        col("Name", description=("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name")),
        col("Desired", "integer", ("io.k8s.api.autoscaling.v1.ScaleSpec", "replicas")),
        col("Available", "integer", ("io.k8s.api.autoscaling.v1.ScaleStatus", "replicas")),
        age_col(),
    ],
    lambda s, now: [
        (s.get("metadata") or {}).get("name", ""),
        (s.get("spec") or {}).get("replicas") or 0,
        (s.get("status") or {}).get("replicas") or 0,
        age(s, now),
    ],
)


def _pdb_row(pdb: dict, now: float) -> list:
    spec = pdb.get("spec") or {}
    min_a = spec.get("minAvailable")
    max_u = spec.get("maxUnavailable")
    return [
        (pdb.get("metadata") or {}).get("name", ""),
        "N/A" if min_a is None else int_or_string(min_a),
        "N/A" if max_u is None else int_or_string(max_u),
        (pdb.get("status") or {}).get("disruptionsAllowed") or 0,
        age(pdb, now),
    ]


POD_DISRUPTION_BUDGET = printer(
    [
        name_col(),
        col("Min Available", description="The minimum number of pods that must be available."),
        col("Max Unavailable", description="The maximum number of pods that may be unavailable."),
        col(
            "Allowed Disruptions", "integer", "Calculated number of pods that may be disrupted at this time."
        ),
        age_col(),
    ],
    _pdb_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("autoscaling", "HorizontalPodAutoscaler"): HORIZONTAL_POD_AUTOSCALER,
    ("autoscaling", "Scale"): SCALE,
    ("policy", "PodDisruptionBudget"): POD_DISRUPTION_BUDGET,
}

__all__ = ["PRINTERS", "format_hpa_metrics"]
