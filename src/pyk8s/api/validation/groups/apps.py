"""apps/v1 validation: Deployment, ReplicaSet, DaemonSet, StatefulSet, ControllerRevision.

As upstream's pkg/apis/apps/validation plus the selector-immutability checks the apps
strategies add on update (pkg/registry/apps/*/strategy.go). Objects are validated
after defaulting, so defaulted fields (replicas, strategies, restartPolicy) are present.
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..core import validate_pod_template_spec
from ..field import GoValue, child, forbidden, go_quote, go_string_map, invalid, not_supported, required
from ..meta import (
    validate_annotations,
    validate_immutable,
    validate_label_selector,
    validate_labels,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import is_label_value, name_is_dns_label, name_is_dns_subdomain
from ._common import (
    dedupe_errors,
    go_generic,
    go_int_or_string,
    go_struct,
    int_or_percent_value,
    is_not_more_than_100_percent,
    label_selector,
    selector_or_none,
    semantic_equal,
    spec_of,
    validate_dns1123_label,
    validate_positive_int_or_percent,
)

__all__ = [
    "validate_deployment", "validate_deployment_update", "validate_replica_set", "validate_replica_set_update",
    "validate_daemon_set", "validate_daemon_set_update", "validate_stateful_set", "validate_stateful_set_update",
    "validate_controller_revision", "validate_controller_revision_update", "VALIDATORS", "UPDATE_VALIDATORS",
]

_SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def _template(spec: dict[str, Any]) -> dict[str, Any]:
    t = spec.get("template")
    return t if isinstance(t, dict) else {}


def _tpl_labels(tpl: dict[str, Any]) -> Any:
    return (tpl.get("metadata") or {}).get("labels")


def _tpl_spec(tpl: dict[str, Any]) -> dict[str, Any]:
    s = tpl.get("spec")
    return s if isinstance(s, dict) else {}


def _selector_required(spec: dict[str, Any], path: str, what: str) -> list[FieldError]:
    """Selector present, valid, and not empty (the shared head of the RS/Deployment/STS checks)."""
    sel = spec.get("selector")
    p = child(path, "selector")
    if sel is None:
        return [required(p)]
    errs = validate_label_selector(sel, p)
    if not (sel.get("matchLabels") or sel.get("matchExpressions")):
        errs.append(invalid(p, selector_or_none(sel), f"empty selector is invalid for {what}"))
    return errs


def _template_for_replica_set(tpl: dict[str, Any], sel: Any, path: str) -> list[FieldError]:
    """ValidatePodTemplateSpecForReplicaSet (also used by Deployments)."""
    errs: list[FieldError] = []
    if not sel.empty() and not sel.matches(_tpl_labels(tpl) or {}):
        errs.append(invalid(child(path, "metadata", "labels"), go_string_map(_tpl_labels(tpl)), _SELECTOR_MISMATCH))
    errs += validate_pod_template_spec(tpl, path)
    ps = _tpl_spec(tpl)
    rp = ps.get("restartPolicy") or ""
    if rp != "Always":
        errs.append(not_supported(child(path, "spec", "restartPolicy"), rp, ["Always"]))
    if ps.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(child(path, "spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in ReplicaSet is not Supported"))
    return errs


# ---- Deployment --------------------------------------------------------------------------


def _go_rolling_update(ru: Any, type_name: str) -> str:
    if not isinstance(ru, dict):
        return f"(*apps.{type_name})(nil)"
    fields = ", ".join(f"{k[:1].upper()}{k[1:]}:{go_int_or_string(v).text}" for k, v in ru.items())
    return f"&apps.{type_name}{{{fields}}}"


def _deployment_strategy(strategy: Any, path: str) -> list[FieldError]:
    strategy = strategy if isinstance(strategy, dict) else {}
    typ = strategy.get("type") or ""
    ru = strategy.get("rollingUpdate")
    if typ == "Recreate":
        if ru is not None:
            return [forbidden(child(path, "rollingUpdate"), "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if typ == "RollingUpdate":
        rp = child(path, "rollingUpdate")
        if not isinstance(ru, dict):
            return [required(rp, "this should be defaulted and never be nil")]
        mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
        errs = validate_positive_int_or_percent(mu, child(rp, "maxUnavailable"))
        errs += validate_positive_int_or_percent(ms, child(rp, "maxSurge"))
        if int_or_percent_value(mu) == 0 and int_or_percent_value(ms) == 0:
            errs.append(invalid(child(rp, "maxUnavailable"), go_int_or_string(mu), "may not be 0 when `maxSurge` is 0"))
        errs += is_not_more_than_100_percent(mu, child(rp, "maxUnavailable"))
        return errs
    shown = go_struct("apps.DeploymentStrategy", [
        ("Type", go_quote(typ)), ("RollingUpdate", _go_rolling_update(ru, "RollingUpdateDeployment"))])
    return [not_supported(path, shown, ["Recreate", "RollingUpdate"])]


def _deployment_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("replicas", 0), child(path, "replicas"))
    errs += _selector_required(spec, path, "deployment")
    sel = label_selector(spec.get("selector"))
    if sel is None:
        errs.append(invalid(child(path, "selector"), selector_or_none(spec.get("selector")), "invalid label selector"))
    else:
        errs += _template_for_replica_set(_template(spec), sel, child(path, "template"))
    errs += _deployment_strategy(spec.get("strategy"), child(path, "strategy"))
    min_ready = spec.get("minReadySeconds") or 0
    errs += validate_nonnegative(min_ready, child(path, "minReadySeconds"))
    if spec.get("revisionHistoryLimit") is not None:
        errs += validate_nonnegative(spec["revisionHistoryLimit"], child(path, "revisionHistoryLimit"))
    pds = spec.get("progressDeadlineSeconds")
    if pds is not None:
        errs += validate_nonnegative(pds, child(path, "progressDeadlineSeconds"))
        if isinstance(pds, int) and isinstance(min_ready, int) and pds <= min_ready:
            errs.append(invalid(child(path, "progressDeadlineSeconds"), pds, "must be greater than minReadySeconds"))
    return errs


def _selector_immutable(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """The apps strategies' ValidateUpdate: spec.selector may not change (apps/v1)."""
    ns, os_ = spec_of(new).get("selector"), spec_of(old).get("selector")
    return validate_immutable(ns, os_, "spec.selector", shown=selector_or_none(ns))


def validate_deployment(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    return errs + _deployment_spec(spec_of(obj), "spec")


def validate_deployment_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += _deployment_spec(spec_of(new), "spec")
    return errs + _selector_immutable(new, old)


# ---- ReplicaSet --------------------------------------------------------------------------


def _replica_set_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs = validate_nonnegative(spec.get("replicas", 0), child(path, "replicas"))
    errs += validate_nonnegative(spec.get("minReadySeconds") or 0, child(path, "minReadySeconds"))
    # upstream's message really says "deployment" here
    errs += _selector_required(spec, path, "deployment")
    sel = label_selector(spec.get("selector"))
    if sel is None:
        errs.append(invalid(child(path, "selector"), selector_or_none(spec.get("selector")), "invalid label selector"))
    else:
        errs += _template_for_replica_set(_template(spec), sel, child(path, "template"))
    return errs


def validate_replica_set(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _replica_set_spec(spec_of(obj), "spec")


def validate_replica_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # the strategy runs ValidateReplicaSet and ValidateReplicaSetUpdate: the spec errors once each
    errs = validate_replica_set(new)
    errs += validate_object_meta_update(new, old)
    errs += _replica_set_spec(spec_of(new), "spec")
    return dedupe_errors(errs + _selector_immutable(new, old))


# ---- DaemonSet ---------------------------------------------------------------------------


def _daemon_set_update_strategy(us: Any, path: str) -> list[FieldError]:
    us = us if isinstance(us, dict) else {}
    typ = us.get("type") or ""
    ru = us.get("rollingUpdate")
    if typ == "OnDelete":
        return []
    if typ == "RollingUpdate":
        rp = child(path, "rollingUpdate")
        if not isinstance(ru, dict):
            return [required(rp)]
        mu, ms = ru.get("maxUnavailable"), ru.get("maxSurge")
        errs = validate_positive_int_or_percent(mu, child(rp, "maxUnavailable"))
        errs += validate_positive_int_or_percent(ms, child(rp, "maxSurge"))
        errs += is_not_more_than_100_percent(mu, child(rp, "maxUnavailable"))
        errs += is_not_more_than_100_percent(ms, child(rp, "maxSurge"))
        has_unavailable, has_surge = int_or_percent_value(mu) != 0, int_or_percent_value(ms) != 0
        if has_unavailable and has_surge:
            errs.append(invalid(child(rp, "maxSurge"), go_int_or_string(ms), "may not be set when maxUnavailable is non-zero"))
        elif not has_unavailable and not has_surge:
            errs.append(required(child(rp, "maxUnavailable"), "cannot be 0 when maxSurge is 0"))
        return errs
    shown = go_struct("apps.DaemonSetUpdateStrategy", [
        ("Type", go_quote(typ)), ("RollingUpdate", _go_rolling_update(ru, "RollingUpdateDaemonSet"))])
    return [not_supported(path, shown, ["RollingUpdate", "OnDelete"])]


def _daemon_set_spec(spec: dict[str, Any], path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    sel_obj = spec.get("selector")
    errs = validate_label_selector(sel_obj, child(path, "selector"), allow_invalid_label_value)
    tpl = _template(spec)
    sel = label_selector(sel_obj)
    if sel is not None and not sel.matches(_tpl_labels(tpl) or {}):
        errs.append(invalid(child(path, "template", "metadata", "labels"), go_string_map(_tpl_labels(tpl)),
                            _SELECTOR_MISMATCH))
    if isinstance(sel_obj, dict) and not (sel_obj.get("matchLabels") or sel_obj.get("matchExpressions")):
        errs.append(invalid(child(path, "selector"), selector_or_none(sel_obj), "empty selector is invalid for daemonset"))
    errs += validate_pod_template_spec(tpl, child(path, "template"))
    ps = _tpl_spec(tpl)
    rp = ps.get("restartPolicy") or ""
    if rp != "Always":
        errs.append(not_supported(child(path, "template", "spec", "restartPolicy"), rp, ["Always"]))
    if ps.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(child(path, "template", "spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in DaemonSet is not Supported"))
    errs += validate_nonnegative(spec.get("minReadySeconds") or 0, child(path, "minReadySeconds"))
    errs += _daemon_set_update_strategy(spec.get("updateStrategy"), child(path, "updateStrategy"))
    if spec.get("revisionHistoryLimit") is not None:
        errs += validate_nonnegative(spec["revisionHistoryLimit"], child(path, "revisionHistoryLimit"))
    return errs


def validate_daemon_set(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_subdomain) + _daemon_set_spec(spec_of(obj), "spec")


def validate_daemon_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # Upstream also checks spec.templateGeneration (kept in the deprecated.daemonset.template.generation
    # annotation on the wire); the API server bumps it, so a client cannot get it wrong here.
    allow = _selector_has_invalid_value(spec_of(old).get("selector"))
    errs = validate_object_meta(new, True, name_is_dns_subdomain) + _daemon_set_spec(spec_of(new), "spec", allow)
    errs += validate_object_meta_update(new, old)
    errs += _daemon_set_spec(spec_of(new), "spec", allow)
    return dedupe_errors(errs + _selector_immutable(new, old))


def _selector_has_invalid_value(sel: Any) -> bool:
    """LabelSelectorHasInvalidLabelValue: old objects keep the expression values they were accepted with."""
    if not isinstance(sel, dict):
        return False
    return any(is_label_value(str(v)) for e in sel.get("matchExpressions") or [] if isinstance(e, dict)
               for v in e.get("values") or [])


# ---- StatefulSet -------------------------------------------------------------------------


def _go_sts_rolling_update(ru: Any) -> str:
    if not isinstance(ru, dict):
        return "(*apps.RollingUpdateStatefulSetStrategy)(nil)"
    return go_generic(ru, "&apps.RollingUpdateStatefulSetStrategy")


def _sts_update_strategy(us: Any, path: str) -> list[FieldError]:
    us = us if isinstance(us, dict) else {}
    typ = us.get("type") or ""
    ru = us.get("rollingUpdate")
    if typ == "":
        return [required(path)]
    if typ == "OnDelete":
        if ru is not None:
            return [invalid(child(path, "rollingUpdate"), GoValue(go_generic(ru, "apps.RollingUpdateStatefulSetStrategy")),
                            "only allowed for updateStrategy 'RollingUpdate'")]
        return []
    if typ == "RollingUpdate":
        if not isinstance(ru, dict):
            return []
        rp = child(path, "rollingUpdate")
        errs = validate_nonnegative(ru.get("partition", 0), child(rp, "partition"))
        mu = ru.get("maxUnavailable")
        if mu is not None:
            mp = child(rp, "maxUnavailable")
            errs += validate_positive_int_or_percent(mu, mp)
            if int_or_percent_value(mu) == 0:
                errs.append(invalid(mp, go_int_or_string(mu), "cannot be 0"))
            errs += is_not_more_than_100_percent(mu, mp)
        return errs
    shown = go_struct("apps.StatefulSetUpdateStrategy", [("Type", go_quote(typ)), ("RollingUpdate", _go_sts_rolling_update(ru))])
    return [invalid(path, shown, "must be 'RollingUpdate' or 'OnDelete'")]


def _sts_spec(spec: dict[str, Any], path: str, allow_invalid_service_name: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    pmp = spec.get("podManagementPolicy") or ""
    if pmp == "":
        errs.append(required(child(path, "podManagementPolicy")))
    elif pmp not in ("OrderedReady", "Parallel"):
        errs.append(invalid(child(path, "podManagementPolicy"), pmp, "must be 'OrderedReady' or 'Parallel'"))
    errs += _sts_update_strategy(spec.get("updateStrategy"), child(path, "updateStrategy"))
    policy = spec.get("persistentVolumeClaimRetentionPolicy")
    if isinstance(policy, dict):
        pp = child(path, "persistentVolumeClaimRetentionPolicy")
        for f in ("whenDeleted", "whenScaled"):
            v = policy.get(f) or ""
            if v not in ("Retain", "Delete"):
                errs.append(not_supported(child(pp, f), v, ["Retain", "Delete"]))
    errs += validate_nonnegative(spec.get("replicas", 0), child(path, "replicas"))
    errs += validate_nonnegative(spec.get("minReadySeconds") or 0, child(path, "minReadySeconds"))
    ordinals = spec.get("ordinals")
    if isinstance(ordinals, dict):
        errs += validate_nonnegative(ordinals.get("start", 0), child(path, "ordinals.start"))
    service_name = spec.get("serviceName") or ""
    if service_name and not allow_invalid_service_name:
        errs += validate_dns1123_label(service_name, child(path, "serviceName"))
    errs += _selector_required(spec, path, "statefulset")
    tpl = _template(spec)
    sel = label_selector(spec.get("selector"))
    tp = child(path, "template")
    if sel is None:
        errs.append(invalid(child(path, "selector"), selector_or_none(spec.get("selector")), ""))
    else:
        # ValidatePodTemplateSpecForStatefulSet: the pod spec itself is not validated here
        # (volume mounts may name volumeClaimTemplates), only labels and annotations.
        if not sel.empty() and not sel.matches(_tpl_labels(tpl) or {}):
            errs.append(invalid(child(tp, "metadata", "labels"), go_string_map(_tpl_labels(tpl)), _SELECTOR_MISMATCH))
        md = tpl.get("metadata") or {}
        errs += validate_labels(md.get("labels"), child(tp, "labels"))
        errs += validate_annotations(md.get("annotations"), child(tp, "annotations"))
    ps = _tpl_spec(tpl)
    rp = ps.get("restartPolicy") or ""
    if rp != "Always":
        errs.append(not_supported(child(tp, "spec", "restartPolicy"), rp, ["Always"]))
    if ps.get("activeDeadlineSeconds") is not None:
        errs.append(forbidden(child(tp, "spec", "activeDeadlineSeconds"),
                              "activeDeadlineSeconds in StatefulSet is not Supported"))
    return errs


_STS_MUTABLE = ("replicas", "ordinals", "template", "updateStrategy", "persistentVolumeClaimRetentionPolicy",
                "minReadySeconds")


def validate_stateful_set(obj: dict[str, Any]) -> list[FieldError]:
    return validate_object_meta(obj, True, name_is_dns_label) + _sts_spec(spec_of(obj), "spec")


def validate_stateful_set_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    """ValidateStatefulSetUpdate: the name is not revalidated (old names were DNS subdomains)."""
    old_name = spec_of(old).get("serviceName") or ""
    allow_bad_service = bool(old_name) and bool(validate_dns1123_label(old_name, ""))
    errs = validate_object_meta_update(new, old)
    errs += _sts_spec(spec_of(new), "spec", allow_bad_service)
    ns = {k: v for k, v in spec_of(new).items() if k not in _STS_MUTABLE}
    os_ = {k: v for k, v in spec_of(old).items() if k not in _STS_MUTABLE}
    if not semantic_equal(ns, os_):
        errs.append(forbidden("spec", "updates to statefulset spec for fields other than 'replicas', 'ordinals', "
                                      "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
                                      "'minReadySeconds' are forbidden"))
    return errs


# ---- ControllerRevision ------------------------------------------------------------------


def validate_controller_revision(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    if obj.get("data") is None:
        errs.append(required("data", "data is mandatory"))
    errs += validate_nonnegative(obj.get("revision", 0), "revision")
    return errs


def validate_controller_revision_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta_update(new, old)
    errs += validate_controller_revision(new)
    errs += validate_immutable(new.get("data"), old.get("data"), "data",
                               shown=GoValue(go_generic(new.get("data"), "runtime.RawExtension")))
    return errs


VALIDATORS = {
    ("apps", "Deployment"): validate_deployment,
    ("apps", "ReplicaSet"): validate_replica_set,
    ("apps", "DaemonSet"): validate_daemon_set,
    ("apps", "StatefulSet"): validate_stateful_set,
    ("apps", "ControllerRevision"): validate_controller_revision,
}
UPDATE_VALIDATORS = {
    ("apps", "Deployment"): validate_deployment_update,
    ("apps", "ReplicaSet"): validate_replica_set_update,
    ("apps", "DaemonSet"): validate_daemon_set_update,
    ("apps", "StatefulSet"): validate_stateful_set_update,
    ("apps", "ControllerRevision"): validate_controller_revision_update,
}
