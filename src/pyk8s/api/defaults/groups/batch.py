"""batch/v1 defaulting (pkg/apis/batch/v1/defaults.go) and the Job strategy's create-time
work: the server-generated selector and pod template labels (PrepareForCreate).
"""

from __future__ import annotations

from typing import Any

from ..core import default_pod_template
from ._util import obj_dict, spec_dict

__all__ = [
    "default_job", "default_cron_job", "prepare_job_for_create", "JOB_NAME_LABEL", "CONTROLLER_UID_LABEL",
    "LEGACY_JOB_NAME_LABEL", "LEGACY_CONTROLLER_UID_LABEL", "DEFAULTERS", "STATUS_ON_CREATE",
]

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_JOB_NAME_LABEL = "job-name"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
_MAX_INT32 = 2**31 - 1


def _template_labels(spec: dict[str, Any]) -> Any:
    return ((spec.get("template") or {}).get("metadata") or {}).get("labels")


def default_job(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    if spec.get("parallelism") is None:
        spec["parallelism"] = 1
    if spec.get("backoffLimit") is None:
        spec["backoffLimit"] = _MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6
    labels = _template_labels(spec)
    md = obj_dict(obj, "metadata")
    if isinstance(labels, dict) and not md.get("labels"):
        md["labels"] = dict(labels)
    if spec.get("completionMode") is None:
        spec["completionMode"] = "NonIndexed"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    pfp = spec.get("podFailurePolicy")
    if isinstance(pfp, dict):
        for rule in pfp.get("rules") or []:
            for pattern in (rule or {}).get("onPodConditions") or []:
                if isinstance(pattern, dict) and not pattern.get("status"):
                    pattern["status"] = "True"
    if spec.get("podReplacementPolicy") is None:
        spec["podReplacementPolicy"] = "Failed" if isinstance(pfp, dict) else "TerminatingOrFailed"
    if spec.get("manualSelector") is None:
        spec["manualSelector"] = False
    default_pod_template(obj_dict(spec, "template"))


def prepare_job_for_create(job: dict[str, Any]) -> None:
    """The Job strategy's PrepareForCreate: generate the selector and pod labels (unless
    manualSelector) from metadata.name and metadata.uid, and start with an empty status.

    Labels the user already set are kept (validation then reports a conflict). A Job whose
    own labels were empty (or were copied from the template by defaulting) ends up with the
    template's labels, generated ones included, as upstream shows after its storage round trip.
    """
    md = obj_dict(job, "metadata")
    spec = spec_dict(job)
    before = dict(_template_labels(spec) or {})
    copied = not md.get("labels") or md.get("labels") == before
    if not spec.get("manualSelector"):
        name, uid = str(md.get("name") or ""), str(md.get("uid") or "")
        labels = obj_dict(obj_dict(obj_dict(spec, "template"), "metadata"), "labels")
        for k in (LEGACY_JOB_NAME_LABEL, JOB_NAME_LABEL):
            labels.setdefault(k, name)
        for k in (LEGACY_CONTROLLER_UID_LABEL, CONTROLLER_UID_LABEL):
            labels.setdefault(k, uid)
        match = obj_dict(obj_dict(spec, "selector"), "matchLabels")
        match.setdefault(CONTROLLER_UID_LABEL, uid)
        if copied:
            md["labels"] = dict(labels)
    job["status"] = {}


def default_cron_job(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if not spec.get("concurrencyPolicy"):
        spec["concurrencyPolicy"] = "Allow"
    if spec.get("suspend") is None:
        spec["suspend"] = False
    if spec.get("successfulJobsHistoryLimit") is None:
        spec["successfulJobsHistoryLimit"] = 3
    if spec.get("failedJobsHistoryLimit") is None:
        spec["failedJobsHistoryLimit"] = 1
    # the embedded Job spec gets only the pod template defaults (SetDefaults_Job is per Job)
    jt = obj_dict(spec, "jobTemplate")
    obj_dict(jt, "metadata").setdefault("creationTimestamp", None)
    default_pod_template(obj_dict(spec_dict(jt), "template"))


def _cron_job_status(obj: dict[str, Any]) -> None:
    obj["status"] = {}


DEFAULTERS = {("batch", "Job"): default_job, ("batch", "CronJob"): default_cron_job}
STATUS_ON_CREATE = {("batch", "Job"): prepare_job_for_create, ("batch", "CronJob"): _cron_job_status}
