"""Tables for batch/v1: jobs and cron jobs."""

from __future__ import annotations

from .base import (
    CONTAINERS_DESC,
    IMAGES_DESC,
    TablePrinter,
    age,
    age_col,
    bool_ptr,
    col,
    condition_status,
    containers_cells,
    format_label_selector,
    human_duration,
    name_col,
    parse_time_or_none,
    pod_template_containers,
    printer,
)

B = "io.k8s.api.batch.v1."
GK = tuple[str, str]


def job_status(job: dict) -> str:
    """The STATUS column: the first true of Complete, Failed, (deleting), Suspended, FailureTarget."""
    conds = (job.get("status") or {}).get("conditions")
    if condition_status(conds, "Complete") == "True":
        return "Complete"
    if condition_status(conds, "Failed") == "True":
        return "Failed"
    if (job.get("metadata") or {}).get("deletionTimestamp"):
        return "Terminating"
    if condition_status(conds, "Suspended") == "True":
        return "Suspended"
    if condition_status(conds, "FailureTarget") == "True":
        return "FailureTarget"
    return "Running"


def _job_row(job: dict, now: float) -> list:
    spec = job.get("spec") or {}
    status = job.get("status") or {}
    succeeded = status.get("succeeded") or 0
    completions = spec.get("completions")
    if completions is not None:
        comp = f"{succeeded}/{completions}"
    else:
        parallelism = spec.get("parallelism") or 0
        comp = f"{succeeded}/1 of {parallelism}" if parallelism > 1 else f"{succeeded}/1"
    start = parse_time_or_none(status.get("startTime"))
    if start is None:
        duration = ""
    else:
        end = parse_time_or_none(status.get("completionTime"))
        duration = human_duration((now if end is None else end) - start)
    names, images = pod_template_containers(job)
    return [
        (job.get("metadata") or {}).get("name", ""),
        job_status(job),
        comp,
        duration,
        age(job, now),
        names,
        images,
        format_label_selector(spec.get("selector")),
    ]


JOB = printer(
    [
        name_col(),
        col("Status", description="Status of the job."),
        col("Completions", description=(B + "JobStatus", "succeeded")),
        col("Duration", description="Time required to complete the job."),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(B + "JobSpec", "selector"), priority=1),
    ],
    _job_row,
)


def _cron_job_row(cj: dict, now: float) -> list:
    spec = cj.get("spec") or {}
    status = cj.get("status") or {}
    last = status.get("lastScheduleTime")
    t = parse_time_or_none(last)
    if last is None:
        last_schedule = "<none>"
    else:
        last_schedule = "<unknown>" if t is None else human_duration(now - t)
    job_spec = (spec.get("jobTemplate") or {}).get("spec") or {}
    names, images = containers_cells(((job_spec.get("template") or {}).get("spec") or {}).get("containers"))
    tz = spec.get("timeZone")
    return [
        (cj.get("metadata") or {}).get("name", ""),
        spec.get("schedule", ""),
        "<none>" if tz is None else tz,
        bool_ptr(spec.get("suspend")),
        len(status.get("active") or ()),
        last_schedule,
        age(cj, now),
        names,
        images,
        format_label_selector(job_spec.get("selector")),
    ]


CRON_JOB = printer(
    [
        name_col(),
        col("Schedule", description=(B + "CronJobSpec", "schedule")),
        col("Timezone", description=(B + "CronJobSpec", "timeZone")),
        col("Suspend", "boolean", (B + "CronJobSpec", "suspend")),
        col("Active", "integer", (B + "CronJobStatus", "active")),
        col("Last Schedule", description=(B + "CronJobStatus", "lastScheduleTime")),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(B + "JobSpec", "selector"), priority=1),
    ],
    _cron_job_row,
)

PRINTERS: dict[GK, TablePrinter] = {("batch", "Job"): JOB, ("batch", "CronJob"): CRON_JOB}

__all__ = ["PRINTERS", "job_status"]
