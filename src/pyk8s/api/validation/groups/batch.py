"""batch/v1 validation: Job and CronJob, as upstream's pkg/apis/batch/validation and the
job strategy (which validates the whole Job again on update, then the update rules).

Jobs are validated after the server generated their selector (`prepare_job_for_create`
in pyk8s.api.defaults.groups.batch), so a non-manual selector must match the generated
`controller-uid`/`job-name` labels.
"""

from __future__ import annotations

import copy
import re
from typing import Any

from ...errors import FieldError
from ..core import validate_pod_template_spec
from ..field import (
    GoValue,
    child,
    duplicate,
    go_string_map,
    index,
    invalid,
    key,
    not_supported,
    required,
    too_long,
    too_many,
)
from ..meta import (
    validate_immutable,
    validate_label_name,
    validate_label_selector,
    validate_nonnegative,
    validate_object_meta,
    validate_object_meta_update,
)
from ..names import is_dns1123_label, name_is_dns_subdomain
from ._common import (
    dedupe_errors,
    go_generic,
    is_int,
    label_selector,
    selector_or_none,
    spec_of,
    validate_domain_prefixed_path,
)
from .cron import CronError, load_location, parse_standard

__all__ = [
    "validate_job", "validate_job_update", "validate_cron_job", "validate_cron_job_update",
    "validate_indexes_format", "VALIDATORS", "UPDATE_VALIDATORS",
    "JOB_NAME_LABEL", "CONTROLLER_UID_LABEL", "LEGACY_JOB_NAME_LABEL", "LEGACY_CONTROLLER_UID_LABEL",
]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"

_MAX_PARALLELISM_INDEXED = 100_000
_MAX_FAILED_INDEXES = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000
_PARALLELISM_HIGH_COMPLETIONS = 10_000
_MAX_FAILED_INDEXES_HIGH_COMPLETIONS = 10_000
_MAX_POD_FAILURE_POLICY_RULES = 20
_MAX_ON_EXIT_CODES_VALUES = 255
_MAX_ON_POD_CONDITIONS = 20
_MAX_MANAGED_BY_LEN = 63
_MAX_SUCCEEDED_INDEXES_LEN = 64 * 1024
_MAX_SUCCESS_POLICY_RULES = 20
_POD_FAILURE_ACTIONS = ["Count", "FailIndex", "FailJob", "Ignore"]
_SELECTOR_MISMATCH = "`selector` does not match template `labels`"


def _md(obj: dict[str, Any]) -> dict[str, Any]:
    md = obj.get("metadata")
    return md if isinstance(md, dict) else {}


def _tpl(spec: dict[str, Any]) -> dict[str, Any]:
    t = spec.get("template")
    return t if isinstance(t, dict) else {}


def _tpl_labels(spec: dict[str, Any]) -> Any:
    return (_tpl(spec).get("metadata") or {}).get("labels")


# ---- indexes ("1,3-5") -------------------------------------------------------------------


def validate_indexes_format(indexes: str, completions: int) -> tuple[int, str | None]:
    """validateIndexesFormat: (number of indexes, error message or None)."""
    if not indexes:
        return 0, None
    last: int | None = None
    total = 0
    for interval in indexes.split(","):
        limits = interval.split("-")
        if len(limits) > 2:
            return 0, (f'the fragment "{interval}" violates the requirement that an index interval can have at most '
                       "two parts separated by '-'")
        nums = []
        for part in limits:
            if not re.fullmatch(r"[+-]?[0-9]+", part):
                return 0, f'cannot convert string to integer for index: "{part}"'
            n = int(part)
            if n >= completions:
                return 0, f'too large index: "{part}"'
            if last is not None and last >= n:
                return 0, f"non-increasing order, previous: {last}, current: {n}"
            nums.append(n)
            last = n
        total += 1 if len(nums) == 1 else nums[1] - nums[0] + 1
    return total, None


# ---- Job spec ----------------------------------------------------------------------------


def _pod_failure_policy(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    rules_path = child(path, "rules")
    if len(rules) > _MAX_POD_FAILURE_POLICY_RULES:
        errs.append(too_many(rules_path, len(rules), _MAX_POD_FAILURE_POLICY_RULES))
    ps = _tpl(spec).get("spec") or {}
    names = {c.get("name") for c in (ps.get("containers") or []) + (ps.get("initContainers") or []) if isinstance(c, dict)}
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rp = index(rules_path, i)
        action = rule.get("action") or ""
        if not action:
            # Go's %q of a []string
            errs.append(required(child(rp, "action"), 'valid values: ["Count" "FailIndex" "FailJob" "Ignore"]'))
        elif action == "FailIndex":
            if spec.get("backoffLimitPerIndex") is None:
                errs.append(invalid(child(rp, "action"), action, "requires the backoffLimitPerIndex to be set"))
        elif action not in _POD_FAILURE_ACTIONS:
            errs.append(not_supported(child(rp, "action"), action, _POD_FAILURE_ACTIONS))
        on_exit = rule.get("onExitCodes")
        on_conds = rule.get("onPodConditions") or []
        if isinstance(on_exit, dict):
            errs += _on_exit_codes(on_exit, child(rp, "onExitCodes"), names)
        if on_conds:
            errs += _on_pod_conditions(on_conds, child(rp, "onPodConditions"))
        if on_exit is not None and on_conds:
            errs.append(FieldError(rp, "Invalid", None, "specifying both OnExitCodes and OnPodConditions is not supported",
                                   omit_value=True))
        if on_exit is None and not on_conds:
            errs.append(FieldError(rp, "Invalid", None, "specifying one of OnExitCodes and OnPodConditions is required",
                                   omit_value=True))
    return errs


def _on_exit_codes(req: dict[str, Any], path: str, names: set[Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    op = req.get("operator") or ""
    if not op:
        errs.append(required(child(path, "operator"), 'valid values: ["In" "NotIn"]'))
    elif op not in ("In", "NotIn"):
        errs.append(not_supported(child(path, "operator"), op, ["In", "NotIn"]))
    cname = req.get("containerName")
    if cname is not None and cname not in names:
        errs.append(invalid(child(path, "containerName"), cname,
                            "must be one of the container or initContainer names in the pod template"))
    values = req.get("values") or []
    vp = child(path, "values")
    if not values:
        errs.append(invalid(vp, GoValue("[]int32(nil)" if req.get("values") is None else "[]int32{}"),
                            "at least one value is required"))
    elif len(values) > _MAX_ON_EXIT_CODES_VALUES:
        errs.append(too_many(vp, len(values), _MAX_ON_EXIT_CODES_VALUES))
    seen: set[Any] = set()
    ordered = True
    for j, v in enumerate(values):
        if op == "In" and v == 0:
            errs.append(invalid(index(vp, j), v, "must not be 0 for the In operator"))
        if v in seen:
            errs.append(duplicate(index(vp, j), v))
        seen.add(v)
        if j > 0 and values[j - 1] > v:
            ordered = False
    if not ordered:
        errs.append(invalid(vp, GoValue("[]int32{" + ", ".join(str(v) for v in values) + "}"), "must be ordered"))
    return errs


def _on_pod_conditions(conds: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if len(conds) > _MAX_ON_POD_CONDITIONS:
        errs.append(too_many(path, len(conds), _MAX_ON_POD_CONDITIONS))
    for j, pat in enumerate(conds):
        if not isinstance(pat, dict):
            continue
        pp = index(path, j)
        errs += validate_label_name(pat.get("type") or "", child(pp, "type"))
        status = pat.get("status") or ""
        if not status:
            errs.append(required(child(pp, "status"), 'valid values: ["False" "True" "Unknown"]'))
        elif status not in ("False", "True", "Unknown"):
            errs.append(not_supported(child(pp, "status"), status, ["False", "True", "Unknown"]))
    return errs


def _success_policy(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    rules = (spec.get("successPolicy") or {}).get("rules") or []
    rules_path = child(path, "rules")
    if not rules:
        errs.append(required(rules_path, "at least one rules must be specified when the successPolicy is specified"))
    if len(rules) > _MAX_SUCCESS_POLICY_RULES:
        errs.append(too_many(rules_path, len(rules), _MAX_SUCCESS_POLICY_RULES))
    completions = spec.get("completions") or 0
    for i, rule in enumerate(rules):
        if not isinstance(rule, dict):
            continue
        rp = index(rules_path, i)
        count, indexes = rule.get("succeededCount"), rule.get("succeededIndexes")
        if count is None and indexes is None:
            errs.append(required(rp, "at least one of succeededCount or succeededIndexes must be specified"))
        total = 0
        if indexes is not None:
            ip = child(rp, "succeededIndexes")
            if len(indexes) > _MAX_SUCCEEDED_INDEXES_LEN:
                errs.append(too_long(ip, _MAX_SUCCEEDED_INDEXES_LEN))
            total, err = validate_indexes_format(indexes, completions)
            if err:
                errs.append(invalid(ip, indexes, f"error parsing succeededIndexes: {err}"))
        if count is not None:
            cp = child(rp, "succeededCount")
            errs += validate_nonnegative(count, cp)
            if is_int(count) and count > completions:
                errs.append(invalid(cp, count, f"must be less than or equal to {completions} "
                                               "(the number of specified completions)"))
            if indexes is not None and is_int(count) and count > total:
                errs.append(invalid(cp, count, f"must be less than or equal to {total} "
                                               "(the number of indexes in the specified succeededIndexes field)"))
    return errs


def _job_spec_core(spec: dict[str, Any], path: str) -> list[FieldError]:
    """validateJobSpec: everything but the selector (shared with CronJob's jobTemplate)."""
    errs: list[FieldError] = []
    for f in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit", "ttlSecondsAfterFinished",
              "backoffLimitPerIndex"):
        if spec.get(f) is not None:
            errs += validate_nonnegative(spec[f], child(path, f))
    parallelism, completions = spec.get("parallelism"), spec.get("completions")
    max_failed, per_index = spec.get("maxFailedIndexes"), spec.get("backoffLimitPerIndex")
    if max_failed is not None:
        errs += validate_nonnegative(max_failed, child(path, "maxFailedIndexes"))
        if per_index is None:
            errs.append(required(child(path, "backoffLimitPerIndex"), "when maxFailedIndexes is specified"))
    managed_by = spec.get("managedBy")
    if managed_by is not None:
        errs += validate_domain_prefixed_path(child(path, "managedBy"), managed_by)
        if len(managed_by) > _MAX_MANAGED_BY_LEN:
            errs.append(too_long(child(path, "managedBy"), _MAX_MANAGED_BY_LEN))
    mode = spec.get("completionMode")
    if mode is not None:
        if mode not in ("NonIndexed", "Indexed"):
            errs.append(not_supported(child(path, "completionMode"), mode, ["NonIndexed", "Indexed"]))
        if mode == "Indexed":
            if completions is None:
                errs.append(required(child(path, "completions"), "when completion mode is Indexed"))
            if is_int(parallelism) and parallelism > _MAX_PARALLELISM_INDEXED:
                errs.append(invalid(child(path, "parallelism"), parallelism,
                                    f"must be less than or equal to {_MAX_PARALLELISM_INDEXED} when completion mode "
                                    "is Indexed"))
            if is_int(completions) and is_int(max_failed) and max_failed > completions:
                errs.append(invalid(child(path, "maxFailedIndexes"), max_failed, "must be less than or equal to completions"))
            if is_int(max_failed) and max_failed > _MAX_FAILED_INDEXES:
                errs.append(invalid(child(path, "maxFailedIndexes"), max_failed,
                                    f"must be less than or equal to {_MAX_FAILED_INDEXES}"))
            if is_int(completions) and completions > _COMPLETIONS_SOFT_LIMIT and per_index is not None:
                tail = (f"when completions are above {_COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index")
                if max_failed is None:
                    errs.append(required(child(path, "maxFailedIndexes"),
                                         f"must be specified when completions is above {_COMPLETIONS_SOFT_LIMIT}"))
                if is_int(parallelism) and parallelism > _PARALLELISM_HIGH_COMPLETIONS:
                    errs.append(invalid(child(path, "parallelism"), parallelism,
                                        f"must be less than or equal to {_PARALLELISM_HIGH_COMPLETIONS} {tail}"))
                if is_int(max_failed) and max_failed > _MAX_FAILED_INDEXES_HIGH_COMPLETIONS:
                    errs.append(invalid(child(path, "maxFailedIndexes"), max_failed,
                                        f"must be less than or equal to {_MAX_FAILED_INDEXES_HIGH_COMPLETIONS} {tail}"))
    if mode is None or mode == "NonIndexed":
        if per_index is not None:
            errs.append(invalid(child(path, "backoffLimitPerIndex"), per_index, "requires indexed completion mode"))
        if max_failed is not None:
            errs.append(invalid(child(path, "maxFailedIndexes"), max_failed, "requires indexed completion mode"))
    pfp = spec.get("podFailurePolicy")
    if pfp is not None:
        errs += _pod_failure_policy(spec, child(path, "podFailurePolicy"))
    sp = spec.get("successPolicy")
    if sp is not None:
        if (mode or "NonIndexed") != "Indexed":
            errs.append(invalid(child(path, "successPolicy"), GoValue(go_generic(sp, "batch.SuccessPolicy")),
                                "requires indexed completion mode"))
        else:
            errs += _success_policy(spec, child(path, "successPolicy"))
    prp = spec.get("podReplacementPolicy")
    if prp is not None:
        if pfp is not None:
            if prp != "Failed":
                errs.append(not_supported(child(path, "podReplacementPolicy"), prp, ["Failed"]))
        elif prp not in ("Failed", "TerminatingOrFailed"):
            errs.append(not_supported(child(path, "podReplacementPolicy"), prp, ["Failed", "TerminatingOrFailed"]))
    errs += validate_pod_template_spec(_tpl(spec), child(path, "template"))
    rp = (_tpl(spec).get("spec") or {}).get("restartPolicy") or ""
    rp_path = child(path, "template", "spec", "restartPolicy")
    if rp in ("Always", ""):
        errs.append(required(rp_path, 'valid values: "OnFailure", "Never"'))
    elif rp not in ("OnFailure", "Never"):
        errs.append(not_supported(rp_path, rp, ["OnFailure", "Never"]))
    elif pfp is not None and rp != "Never":
        errs.append(invalid(rp_path, rp, 'only "Never" is supported when podFailurePolicy is specified'))
    return errs


def _job_spec(spec: dict[str, Any], path: str, allow_invalid_label_value: bool = False) -> list[FieldError]:
    """ValidateJobSpec: the core checks plus a selector that matches the template."""
    errs = _job_spec_core(spec, path)
    sel_obj = spec.get("selector")
    if sel_obj is None:
        errs.append(required(child(path, "selector")))
    else:
        errs += validate_label_selector(sel_obj, child(path, "selector"), allow_invalid_label_value)
    sel = label_selector(sel_obj)
    if sel is not None and not sel.matches(_tpl_labels(spec) or {}):
        errs.append(invalid(child(path, "template", "metadata", "labels"), go_string_map(_tpl_labels(spec)),
                            _SELECTOR_MISMATCH))
    return errs


def _has_label(labels: Any, path: str, k: str, expected: str) -> list[FieldError]:
    """core's ValidateHasLabel."""
    labels = labels if isinstance(labels, dict) else {}
    p = key(child(path, "labels"), k)
    if k not in labels:
        return [required(p, expected)]
    if labels[k] != expected:
        return [invalid(p, go_string_map(labels), f"must be '{expected}'")]
    return []


def _generated_selector(job: dict[str, Any], require_prefixed: bool) -> list[FieldError]:
    """validateGeneratedSelector: a server-generated selector must match the generated labels."""
    spec = spec_of(job)
    if spec.get("manualSelector") is True or spec.get("selector") is None:
        return []
    md = _md(job)
    uid, name = str(md.get("uid") or ""), str(md.get("name") or "")
    errs: list[FieldError] = []
    if not uid:
        errs.append(required("metadata.uid"))
    labels = _tpl_labels(spec)
    tp = "spec.template.metadata"
    errs += _has_label(labels, tp, LEGACY_CONTROLLER_UID_LABEL, uid)
    errs += _has_label(labels, tp, LEGACY_JOB_NAME_LABEL, name)
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        errs += _has_label(labels, tp, CONTROLLER_UID_LABEL, uid)
        errs += _has_label(labels, tp, JOB_NAME_LABEL, name)
        expected.update({CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name})
    sel = label_selector(spec.get("selector"))
    if sel is not None and not sel.matches(expected):
        errs.append(invalid("spec.selector", selector_or_none(spec.get("selector")), "`selector` not auto-generated"))
    return errs


def _validate_job(job: dict[str, Any], require_prefixed: bool, allow_invalid_label_value: bool) -> list[FieldError]:
    errs = validate_object_meta(job, True, name_is_dns_subdomain)
    errs += _generated_selector(job, require_prefixed)
    spec = spec_of(job)
    errs += _job_spec(spec, "spec", allow_invalid_label_value)
    completions = spec.get("completions")
    if spec.get("completionMode") == "Indexed" and is_int(completions) and completions > 0:
        name = str(_md(job).get("name") or "")
        host = f"{name}-{completions - 1}"
        if is_dns1123_label(host):
            errs.append(invalid("metadata.name", name, f"will not able to create pod with invalid DNS label: {host}"))
    return errs


def validate_job(job: dict[str, Any]) -> list[FieldError]:
    return _validate_job(job, True, False)


_SCHEDULING_DIRECTIVES = ("nodeSelector", "tolerations", "schedulingGates")


def _template_update(new: dict[str, Any], old: dict[str, Any], mutable_scheduling: bool) -> list[FieldError]:
    """validatePodTemplateUpdate: the template is immutable, except scheduling directives of
    suspended Jobs that never started."""
    tpl, old_tpl = _tpl(new), copy.deepcopy(_tpl(old))
    if mutable_scheduling:
        ns, os_ = tpl.get("spec") or {}, old_tpl.setdefault("spec", {})
        naff, oaff = ns.get("affinity"), os_.get("affinity")
        if naff is None and isinstance(oaff, dict):
            rest = {k: v for k, v in oaff.items() if k != "nodeAffinity" and v}
            if rest:
                os_["affinity"] = rest
            else:
                os_.pop("affinity", None)
        elif isinstance(naff, dict):
            merged = dict(oaff) if isinstance(oaff, dict) else {}
            merged.pop("nodeAffinity", None)
            if naff.get("nodeAffinity") is not None:
                merged["nodeAffinity"] = naff["nodeAffinity"]
            os_["affinity"] = merged
        for f in _SCHEDULING_DIRECTIVES:
            if f in ns:
                os_[f] = ns[f]
            else:
                os_.pop(f, None)
        nmd, omd = tpl.get("metadata") or {}, old_tpl.setdefault("metadata", {})
        for f in ("labels", "annotations"):
            if f in nmd:
                omd[f] = nmd[f]
            else:
                omd.pop(f, None)
    return validate_immutable(tpl, old_tpl, "spec.template", shown=GoValue(go_generic(tpl, "core.PodTemplateSpec")))


def validate_job_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    spec, old_spec = spec_of(new), spec_of(old)
    old_labels = _tpl_labels(old_spec) or {}
    require_prefixed = JOB_NAME_LABEL in old_labels and CONTROLLER_UID_LABEL in old_labels
    allow_bad_values = _selector_has_invalid_value(old_spec.get("selector"))
    mutable_scheduling = old_spec.get("suspend") is True and not (old.get("status") or {}).get("startTime")
    errs = _validate_job(new, require_prefixed, allow_bad_values)
    errs += validate_object_meta_update(new, old)
    errs += _job_spec(spec, "spec", allow_bad_values)
    errs += _completions_update(spec, old_spec)
    errs += validate_immutable(spec.get("selector"), old_spec.get("selector"), "spec.selector",
                               shown=selector_or_none(spec.get("selector")))
    errs += _template_update(spec, old_spec, mutable_scheduling)
    errs += validate_immutable(spec.get("completionMode"), old_spec.get("completionMode"), "spec.completionMode")
    for f, typ in (("podFailurePolicy", "batch.PodFailurePolicy"), ("backoffLimitPerIndex", ""), ("managedBy", ""),
                   ("successPolicy", "batch.SuccessPolicy")):
        nv = spec.get(f)
        shown = GoValue(go_generic(nv, typ)) if typ and nv is not None else None
        errs += validate_immutable(nv, old_spec.get(f), child("spec", f), shown=shown)
    return dedupe_errors(errs)


def _completions_update(spec: dict[str, Any], old_spec: dict[str, Any]) -> list[FieldError]:
    """validateCompletions with ElasticIndexedJob (GA): Indexed Jobs may scale completions with parallelism."""
    nc, oc = spec.get("completions"), old_spec.get("completions")
    if spec.get("completionMode") != "Indexed":
        return validate_immutable(nc, oc, "spec.completions")
    if nc == oc or nc is None:
        return []
    if nc != spec.get("parallelism"):
        return [invalid("spec.completions", nc, "can only be modified in tandem with spec.parallelism")]
    return []


def _selector_has_invalid_value(sel: Any) -> bool:
    from ..names import is_label_value

    if not isinstance(sel, dict):
        return False
    return any(is_label_value(str(v)) for e in sel.get("matchExpressions") or [] if isinstance(e, dict)
               for v in e.get("values") or [])


# ---- CronJob -----------------------------------------------------------------------------

_TZ_PART = re.compile(r"[A-Za-z.\-_0-9+]{1,14}")


def _validate_time_zone(tz: Any, path: str) -> list[FieldError]:
    if tz is None:
        return []
    if tz == "":
        return [invalid(path, "", "timeZone must be nil or non-empty string")]
    for part in tz.split("/"):
        if part in (".", "..") or part.startswith("-") or not _TZ_PART.fullmatch(part):
            return [invalid(path, tz, f"unknown time zone {tz}")]
    errs: list[FieldError] = []
    if tz.lower() == "local":
        errs.append(invalid(path, tz, "timeZone must be an explicit time zone as defined in https://www.iana.org/time-zones"))
    try:
        load_location(tz)
    except CronError as e:
        errs.append(invalid(path, tz, str(e)))
    return errs


def _validate_schedule(schedule: str, allow_tz: bool, tz: Any, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    try:
        parse_standard(schedule)
    except CronError as e:
        errs.append(invalid(path, schedule, str(e)))
    if allow_tz and "TZ" in schedule and tz is not None:
        errs.append(invalid(path, schedule, "cannot use both timeZone field and TZ or CRON_TZ in schedule"))
    elif not allow_tz and "TZ" in schedule:
        errs.append(invalid(path, schedule, "cannot use TZ or CRON_TZ in schedule, use timeZone field instead"))
    return errs


def _job_template(jt: Any, path: str) -> list[FieldError]:
    """ValidateJobTemplateSpec: the Job spec without a selector (generated per Job)."""
    jt = jt if isinstance(jt, dict) else {}
    spec = spec_of(jt)
    sp = child(path, "spec")
    errs = _job_spec_core(spec, sp)
    if spec.get("selector") is not None:
        errs.append(invalid(child(sp, "selector"), selector_or_none(spec["selector"]), "`selector` will be auto-generated"))
    if spec.get("manualSelector") is True:
        errs.append(not_supported(child(sp, "manualSelector"), True, ["nil", "false"]))
    return errs


def _cron_job_spec(spec: dict[str, Any], old_spec: dict[str, Any] | None, path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    schedule = spec.get("schedule") or ""
    tz = spec.get("timeZone")
    if not schedule:
        errs.append(required(child(path, "schedule")))
    else:
        allow_tz = old_spec is not None and "TZ" in (old_spec.get("schedule") or "")
        errs += _validate_schedule(schedule, allow_tz, tz, child(path, "schedule"))
    if spec.get("startingDeadlineSeconds") is not None:
        errs += validate_nonnegative(spec["startingDeadlineSeconds"], child(path, "startingDeadlineSeconds"))
    if old_spec is None or old_spec.get("timeZone") != tz:
        errs += _validate_time_zone(tz, child(path, "timeZone"))
    cp = spec.get("concurrencyPolicy") or ""
    if cp == "":
        errs.append(required(child(path, "concurrencyPolicy")))
    elif cp not in ("Allow", "Forbid", "Replace"):
        errs.append(not_supported(child(path, "concurrencyPolicy"), cp, ["Allow", "Forbid", "Replace"]))
    errs += _job_template(spec.get("jobTemplate"), child(path, "jobTemplate"))
    for f in ("successfulJobsHistoryLimit", "failedJobsHistoryLimit"):
        if spec.get(f) is not None:
            errs += validate_nonnegative(spec[f], child(path, f))
    return errs


def validate_cron_job(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, True, name_is_dns_subdomain)
    errs += _cron_job_spec(spec_of(obj), None, "spec")
    name = str(_md(obj).get("name") or "")
    # the controller appends an 11-character `-<timestamp>` suffix to Job names (63 max)
    if len(name) > 52:
        errs.append(invalid("metadata.name", name, "must be no more than 52 characters"))
    return errs


def validate_cron_job_update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
    # no 52-character check: old CronJobs with longer names must stay updatable
    errs = validate_object_meta_update(new, old)
    return errs + _cron_job_spec(spec_of(new), spec_of(old), "spec")


VALIDATORS = {("batch", "Job"): validate_job, ("batch", "CronJob"): validate_cron_job}
UPDATE_VALIDATORS = {("batch", "Job"): validate_job_update, ("batch", "CronJob"): validate_cron_job_update}
