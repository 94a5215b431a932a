"""Job, TTL-after-finished and CronJob controllers through the real server and real kubectl.

Pods are run by `FakeKubelets` (see test_daemonset): a pod annotated with
`sim.pyk8s.io/exit-code` ends with that code after `sim.pyk8s.io/run-seconds`.
CronJob schedules have minute granularity, so the schedule logic is pinned by unit tests
of the next-time computation and of sync() with an injected clock; the integration tests
cover `kubectl create job --from=cronjob/...`, suspend and the status a real server shows.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.integration.test_daemonset import EXIT_CODE, RUN_SECONDS, FakeKubelets, get_json, wait_for


@pytest.fixture(scope="module")
def nodes(cluster):
    fk = FakeKubelets(cluster.kubeconfig, {"jnode1": [], "jnode2": []}).start()
    yield fk
    fk.stop()


def job_manifest(name: str, exit_code: int = 0, run_seconds: float = 0.5, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": name},
        "spec": {"template": {"metadata": {"annotations": {EXIT_CODE: str(exit_code), RUN_SECONDS: str(run_seconds)}},
                              "spec": {"restartPolicy": "Never",
                                       "containers": [{"name": "c", "image": "busybox", "command": ["true"]}]}},
                 **spec}}


def apply(cluster, obj: dict[str, Any]) -> None:
    cluster.kubectl("apply", "-f", "-", input=json.dumps(obj))


def job(cluster, name: str) -> dict[str, Any]:
    return get_json(cluster, "job", name)


def cond(j: dict[str, Any], typ: str) -> dict[str, Any] | None:
    return next((c for c in j.get("status", {}).get("conditions") or [] if c["type"] == typ), None)


def job_pods(cluster, name: str) -> list[dict[str, Any]]:
    return get_json(cluster, "pods", "-l", f"batch.kubernetes.io/job-name={name}")["items"]


def events_for(cluster, name: str) -> list[dict[str, Any]]:
    return get_json(cluster, "events", "--field-selector", f"involvedObject.name={name}")["items"]


# ---- Job ----------------------------------------------------------------------------------

def test_job_runs_completions_within_parallelism(cluster, nodes):
    """completions=3, parallelism=2: never more than 2 active, finishes with SuccessCriteriaMet
    then Complete (reason CompletionsReached), every pod counted once and released."""
    apply(cluster, job_manifest("par", completions=3, parallelism=2, run_seconds=1))
    max_active = 0

    def done() -> bool:
        nonlocal max_active
        j = job(cluster, "par")
        max_active = max(max_active, j.get("status", {}).get("active", 0))
        return cond(j, "Complete") is not None
    wait_for(done, timeout=30, what="job par complete")
    j = job(cluster, "par")
    st = j["status"]
    assert max_active <= 2
    assert st["succeeded"] == 3 and "failed" not in st and "active" not in st
    assert st["ready"] == 0 and st["terminating"] == 0 and st["uncountedTerminatedPods"] == {}
    assert st["startTime"] <= st["completionTime"]
    types = [(c["type"], c.get("reason"), c.get("message")) for c in st["conditions"]]
    assert types == [("SuccessCriteriaMet", "CompletionsReached", "Reached expected number of succeeded pods"),
                     ("Complete", "CompletionsReached", "Reached expected number of succeeded pods")]
    pods = job_pods(cluster, "par")
    assert len(pods) == 3
    for p in pods:
        assert p["metadata"]["name"].startswith("par-")
        assert "batch.kubernetes.io/job-tracking" not in (p["metadata"].get("finalizers") or [])
        assert p["metadata"]["ownerReferences"][0]["kind"] == "Job"
    row = cluster.kubectl("get", "job", "par", "--no-headers").stdout.split()
    assert row[1:3] == ["Complete", "3/3"]
    ev = events_for(cluster, "par")
    assert sum(1 for e in ev if e["reason"] == "SuccessfulCreate") == 3
    assert any(e["reason"] == "Completed" and e["message"] == "Job completed"
               and e["source"]["component"] == "job-controller" for e in ev)


def test_indexed_job_gives_each_pod_its_index(cluster, nodes):
    """Indexed completion: pods `<job>-<i>-xxxxx` with the index annotation and label, hostname
    `<job>-<i>`, JOB_COMPLETION_INDEX from the downward API; completedIndexes "0-2"."""
    apply(cluster, job_manifest("idx", completions=3, parallelism=3, completionMode="Indexed"))
    wait_for(lambda: cond(job(cluster, "idx"), "Complete") is not None, what="indexed job complete")
    st = job(cluster, "idx")["status"]
    assert st["completedIndexes"] == "0-2" and st["succeeded"] == 3
    seen = set()
    for p in job_pods(cluster, "idx"):
        ix = p["metadata"]["annotations"]["batch.kubernetes.io/job-completion-index"]
        assert p["metadata"]["labels"]["batch.kubernetes.io/job-completion-index"] == ix
        assert p["metadata"]["name"].startswith(f"idx-{ix}-")
        assert p["spec"]["hostname"] == f"idx-{ix}"
        env = p["spec"]["containers"][0]["env"]
        assert env == [{"name": "JOB_COMPLETION_INDEX", "valueFrom": {"fieldRef": {
            "apiVersion": "v1", "fieldPath": "metadata.labels['batch.kubernetes.io/job-completion-index']"}}}]
        seen.add(ix)
    assert seen == {"0", "1", "2"}


def test_backoff_limit_exceeded_after_exponential_backoff(cluster, nodes):
    """backoffLimit=1: the first failure delays the replacement by the 10 s backoff; the second
    failure exceeds the limit: FailureTarget then Failed, reason BackoffLimitExceeded."""
    apply(cluster, job_manifest("fails", exit_code=1, run_seconds=0.2, backoffLimit=1))
    wait_for(lambda: cond(job(cluster, "fails"), "Failed") is not None, timeout=40, what="job failed")
    j = job(cluster, "fails")
    st = j["status"]
    assert st["failed"] == 2 and "succeeded" not in st
    types = [(c["type"], c.get("reason"), c.get("message")) for c in st["conditions"]]
    assert types == [("FailureTarget", "BackoffLimitExceeded", "Job has reached the specified backoff limit"),
                     ("Failed", "BackoffLimitExceeded", "Job has reached the specified backoff limit")]
    assert "completionTime" not in st
    pods = sorted(job_pods(cluster, "fails"), key=lambda p: p["metadata"]["creationTimestamp"])
    assert len(pods) == 2
    first_end = pods[0]["status"]["containerStatuses"][0]["state"]["terminated"]["finishedAt"]
    from pyk8s.api.timefmt import parse_time
    gap = parse_time(pods[1]["metadata"]["creationTimestamp"]) - parse_time(first_end)
    assert gap >= 9, f"replacement came {gap}s after the failure, want the 10s backoff"
    ev = events_for(cluster, "fails")
    assert any(e["reason"] == "BackoffLimitExceeded" and e["type"] == "Warning" for e in ev)
    row = cluster.kubectl("get", "job", "fails", "--no-headers").stdout.split()
    assert row[1:3] == ["Failed", "0/1"]


def test_pod_failure_policy_fail_job(cluster, nodes):
    """A FailJob rule on exit code 42 fails the Job at the first such pod, reason PodFailurePolicy."""
    m = job_manifest("pfp", exit_code=42, run_seconds=0.2, backoffLimit=6,
                     podFailurePolicy={"rules": [
                         {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget"}]},
                         {"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]})
    apply(cluster, m)
    wait_for(lambda: cond(job(cluster, "pfp"), "Failed") is not None, timeout=30, what="pfp job failed")
    st = job(cluster, "pfp")["status"]
    pod = job_pods(cluster, "pfp")[0]
    msg = f"Container c for pod default/{pod['metadata']['name']} failed with exit code 42 matching FailJob rule at index 1"
    assert [(c["type"], c["reason"], c["message"]) for c in st["conditions"]] == [
        ("FailureTarget", "PodFailurePolicy", msg), ("Failed", "PodFailurePolicy", msg)]
    assert st["failed"] == 1


def test_active_deadline_fails_running_job(cluster, nodes):
    """activeDeadlineSeconds: a Job still running after it is Failed with DeadlineExceeded and
    its running pods are deleted."""
    apply(cluster, job_manifest("deadline", run_seconds=3600, activeDeadlineSeconds=2))
    wait_for(lambda: job(cluster, "deadline").get("status", {}).get("active") == 1, what="deadline job active")
    wait_for(lambda: cond(job(cluster, "deadline"), "Failed") is not None, timeout=20, what="deadline exceeded")
    st = job(cluster, "deadline")["status"]
    assert cond(job(cluster, "deadline"), "Failed")["reason"] == "DeadlineExceeded"
    assert cond(job(cluster, "deadline"), "Failed")["message"] == "Job was active longer than specified deadline"
    assert st["failed"] == 1 and "active" not in st and st["terminating"] == 0
    wait_for(lambda: all(p["status"].get("phase") == "Failed" or p["metadata"].get("deletionTimestamp")
                         for p in job_pods(cluster, "deadline")), what="pods stopped")


def test_suspend_and_resume(cluster, nodes):
    """A suspended Job creates no pods and has no startTime; resuming starts it; suspending a
    running Job deletes its active pods."""
    apply(cluster, job_manifest("susp", run_seconds=3600, suspend=True))
    wait_for(lambda: (cond(job(cluster, "susp"), "Suspended") or {}).get("status") == "True", what="suspended")
    j = job(cluster, "susp")
    c = cond(j, "Suspended")
    assert (c["reason"], c["message"]) == ("JobSuspended", "Job suspended")
    assert "startTime" not in j["status"] and job_pods(cluster, "susp") == []
    cluster.kubectl("patch", "job", "susp", "-p", '{"spec":{"suspend":false}}')
    wait_for(lambda: job(cluster, "susp")["status"].get("active") == 1
             and job(cluster, "susp")["status"].get("ready") == 1, what="resumed and running")
    c = cond(job(cluster, "susp"), "Suspended")
    assert (c["status"], c["reason"], c["message"]) == ("False", "JobResumed", "Job resumed")
    assert job(cluster, "susp")["status"].get("startTime")
    cluster.kubectl("patch", "job", "susp", "-p", '{"spec":{"suspend":true}}')
    wait_for(lambda: (cond(job(cluster, "susp"), "Suspended") or {}).get("status") == "True"
             and not [p for p in job_pods(cluster, "susp") if not p["metadata"].get("deletionTimestamp")
                      and p["status"].get("phase") not in ("Failed", "Succeeded")], what="suspended again")
    assert "active" not in job(cluster, "susp")["status"]
    reasons = [e["reason"] for e in events_for(cluster, "susp")]
    assert "Suspended" in reasons and "Resumed" in reasons
    cluster.kubectl("delete", "job", "susp")


def test_ttl_after_finished_deletes_job(cluster, nodes):
    """ttlSecondsAfterFinished: the TTL controller deletes the Job once it has been finished that long."""
    apply(cluster, job_manifest("ttl", ttlSecondsAfterFinished=2))

    def gone() -> bool:
        r = cluster.kubectl("get", "job", "ttl", "-o", "json", check=False)
        return r.returncode != 0 or bool(json.loads(r.stdout)["metadata"].get("deletionTimestamp"))
    wait_for(gone, timeout=20, what="ttl job deleted")
    # it did finish first (the deletion is not the Job controller failing it)
    assert any(e["reason"] == "Completed" for e in events_for(cluster, "ttl"))


# ---- CronJob (integration) ------------------------------------------------------------------

def test_create_job_from_cronjob_and_suspend(cluster, nodes):
    """`kubectl create job --from=cronjob/x` runs the template; suspending the CronJob shows in
    `kubectl get cronjob`; a schedule far away creates nothing."""
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
          "spec": {"schedule": "0 0 1 1 *", "timeZone": "Etc/UTC",
                   "jobTemplate": {"spec": job_manifest("x")["spec"]}}}
    apply(cluster, cj)
    cluster.kubectl("create", "job", "cj-manual", "--from=cronjob/cj")
    wait_for(lambda: cond(job(cluster, "cj-manual"), "Complete") is not None, what="manual job complete")
    j = job(cluster, "cj-manual")
    assert j["metadata"]["annotations"]["cronjob.kubernetes.io/instantiate"] == "manual"
    assert j["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    cluster.kubectl("patch", "cronjob", "cj", "-p", '{"spec":{"suspend":true}}')
    row = cluster.kubectl("get", "cronjob", "cj", "--no-headers").stdout.split()
    assert row[1:8] == ["0", "0", "1", "1", "*", "Etc/UTC", "True"]
    # the controller never scheduled (next run is next January); as upstream it still notes the
    # manual Job's success, without adopting it into status.active
    wait_for(lambda: get_json(cluster, "cronjob", "cj").get("status", {}) ==
             {"lastSuccessfulTime": j["status"]["completionTime"]}, what="lastSuccessfulTime from the manual job")
    jobs = get_json(cluster, "jobs", "-l", "batch.kubernetes.io/job-name")["items"]
    assert not [x for x in jobs if x["metadata"]["name"].startswith("cj-") and x["metadata"]["name"] != "cj-manual"]
    cluster.kubectl("delete", "cronjob", "cj")


# ---- CronJob schedule logic and sync() with an injected clock (no server) ------------------

from pyk8s.api.timefmt import format_time, parse_time  # noqa: E402
from pyk8s.api.validation.groups.cron import parse_standard  # noqa: E402
from pyk8s.controllers import cronjob as cronjob_mod  # noqa: E402


def _next(spec: str, at: str) -> str | None:
    t = cronjob_mod.next_time(parse_standard(spec), parse_time(at))
    return format_time(t) if t is not None else None


@pytest.mark.parametrize("spec,at,want", [
    ("*/5 * * * *", "2024-01-01T00:02:30Z", "2024-01-01T00:05:00Z"),
    ("*/5 * * * *", "2024-01-01T00:05:00Z", "2024-01-01T00:10:00Z"),  # strictly after
    ("0 9 * * 1-5", "2024-01-05T10:00:00Z", "2024-01-08T09:00:00Z"),  # Friday -> Monday
    ("0 0 1,15 * 1", "2024-01-02T00:00:00Z", "2024-01-08T00:00:00Z"),  # dom OR dow when both restricted
    ("0 0 1 */3 *", "2024-02-10T00:00:00Z", "2024-04-01T00:00:00Z"),
    ("0 0 29 2 *", "2024-03-01T00:00:00Z", "2028-02-29T00:00:00Z"),
    ("0 0 30 2 *", "2024-03-01T00:00:00Z", None),  # never: robfig gives up after five years
    ("@hourly", "2024-01-01T00:59:59Z", "2024-01-01T01:00:00Z"),
    ("@every 90s", "2024-01-01T00:00:00Z", "2024-01-01T00:01:30Z"),
    ("TZ=Europe/Berlin 0 9 * * *", "2024-01-01T00:00:00Z", "2024-01-01T08:00:00Z"),
    ("CRON_TZ=Asia/Tokyo 0 0 * * *", "2024-01-01T00:00:00Z", "2024-01-01T15:00:00Z"),
    # 02:30 does not exist on the spring-forward day in New York: that day is skipped
    ("TZ=America/New_York 30 2 * * *", "2024-03-10T00:00:00Z", "2024-03-11T06:30:00Z"),
    # 01:30 happens twice on the fall-back day: the first one is taken
    ("TZ=America/New_York 30 1 * * *", "2024-11-03T04:00:00Z", "2024-11-03T05:30:00Z"),
])
def test_cron_next_time(spec: str, at: str, want: str | None) -> None:
    assert _next(spec, at) == want


def test_most_recent_schedule_time_counts_missed_runs() -> None:
    sched = parse_standard("*/1 * * * *")
    cj = {"metadata": {"creationTimestamp": "2024-01-01T00:00:00Z"},
          "status": {"lastScheduleTime": "2024-01-01T00:00:00Z"}, "spec": {}}
    now = parse_time("2024-01-01T03:20:30Z")
    earliest, recent, missed = cronjob_mod.most_recent_schedule_time(cj, now, sched, True)
    assert format_time(recent) == "2024-01-01T03:20:00Z" and missed == cronjob_mod.MANY_MISSED
    cj["spec"]["startingDeadlineSeconds"] = 120  # only the last two minutes count
    _, recent, missed = cronjob_mod.most_recent_schedule_time(cj, now, sched, True)
    assert format_time(recent) == "2024-01-01T03:20:00Z" and missed == cronjob_mod.FEW_MISSED


class _FakeInformer:
    def __init__(self) -> None:
        self.store: dict[str, dict[str, Any]] = {}

    def add_handlers(self, **kw: Any) -> None:
        pass

    def get(self, key: str) -> dict[str, Any] | None:
        return self.store.get(key)

    def list(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [o for o in self.store.values() if namespace is None or o["metadata"].get("namespace") == namespace]

    def put(self, obj: dict[str, Any]) -> None:
        self.store[f"{obj['metadata']['namespace']}/{obj['metadata']['name']}"] = obj


class _FakeClient:
    """Just enough of pyk8s.client.Client for the CronJob controller: jobs, cronjob status, events."""

    def __init__(self, informers: dict[str, _FakeInformer], clock: Any) -> None:
        self.inf = informers
        self.clock = clock
        self.events: list[dict[str, Any]] = []
        self.deleted: list[str] = []
        self.n = 0

    async def create(self, gvr: Any, obj: dict[str, Any], namespace: str | None = None, **kw: Any) -> dict[str, Any]:
        if gvr[2] == "events":
            self.events.append(obj)
            return obj
        assert gvr[2] == "jobs"
        key = f"{namespace}/{obj['metadata']['name']}"
        if key in self.inf["jobs"].store:
            from pyk8s.api.errors import StatusError
            raise StatusError(409, "AlreadyExists", "exists")
        self.n += 1
        obj = json.loads(json.dumps(obj))
        obj["metadata"].update(uid=f"uid-{self.n}", resourceVersion=str(self.n),
                               creationTimestamp=format_time(self.clock()))
        self.inf["jobs"].put(obj)
        return obj

    async def get_or_none(self, gvr: Any, name: str, namespace: str | None = None) -> dict[str, Any] | None:
        return self.inf[gvr[2]].get(f"{namespace}/{name}")

    async def get(self, gvr: Any, name: str, namespace: str | None = None) -> dict[str, Any]:
        o = await self.get_or_none(gvr, name, namespace)
        assert o is not None
        return o

    async def delete(self, gvr: Any, name: str, namespace: str | None = None, **kw: Any) -> None:
        self.deleted.append(name)
        self.inf["jobs"].store.pop(f"{namespace}/{name}", None)

    async def update_status(self, gvr: Any, obj: dict[str, Any], **kw: Any) -> dict[str, Any]:
        self.inf["cronjobs"].put(json.loads(json.dumps(obj)))
        return obj

    async def patch(self, *a: Any, **kw: Any) -> None:
        pass


class _Ctx:
    def __init__(self, client: _FakeClient, informers: dict[str, _FakeInformer]) -> None:
        from pyk8s.client import EventRecorder
        self.client, self.informers = client, informers
        self._rec = EventRecorder(client, "cronjob-controller")  # type: ignore[arg-type]
        self.options: dict[str, Any] = {}
        self.workqueue_metrics = None

    def informer(self, name: str) -> _FakeInformer:
        return self.informers[name]

    def recorder(self, component: str) -> Any:
        return self._rec


class CronHarness:
    """A CronJobController over fake informers and client, with a clock the test moves."""

    def __init__(self, start: str) -> None:
        self.now = parse_time(start)
        self.inf = {"cronjobs": _FakeInformer(), "jobs": _FakeInformer()}
        self.client = _FakeClient(self.inf, lambda: self.now)
        self.ctl = cronjob_mod.CronJobController(_Ctx(self.client, self.inf), clock=lambda: self.now)
        self.ctl.setup()
        self.requeues: list[float] = []
        self.ctl.enqueue_after = lambda obj, delay: self.requeues.append(delay)  # type: ignore[method-assign]

    def add(self, name: str = "cj", schedule: str = "*/5 * * * *", **spec: Any) -> None:
        self.inf["cronjobs"].put({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": name, "namespace": "default", "uid": f"cj-uid-{name}",
                         "creationTimestamp": format_time(self.now)},
            "spec": {"schedule": schedule, "concurrencyPolicy": "Allow", "suspend": False,
                     "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1,
                     "jobTemplate": {"metadata": {"labels": {"team": "a"}},
                                     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "x"}]}}}},
                     **spec},
            "status": {}})

    def at(self, when: str) -> CronHarness:
        self.now = parse_time(when)
        return self

    def sync(self, name: str = "cj") -> list[tuple[str, str]]:
        import asyncio

        async def go() -> None:
            self.client.events.clear()
            self.requeues.clear()
            await self.ctl.sync(f"default/{name}")
            await self.ctl.recorder.flush()
        asyncio.run(go())
        return [(e["reason"], e["message"]) for e in self.client.events]

    def cj(self, name: str = "cj") -> dict[str, Any]:
        return self.inf["cronjobs"].store[f"default/{name}"]

    def jobs(self) -> list[dict[str, Any]]:
        return sorted(self.inf["jobs"].store.values(), key=lambda j: j["metadata"]["name"])

    def finish(self, job_name: str, typ: str = "Complete", at: str | None = None) -> None:
        j = self.inf["jobs"].store[f"default/{job_name}"]
        t = at or format_time(self.now)
        j["status"] = {"startTime": j["metadata"]["creationTimestamp"], "conditions": [
            {"type": typ, "status": "True", "lastTransitionTime": t}]}
        if typ == "Complete":
            j["status"]["completionTime"] = t


def test_cronjob_sync_waits_then_creates_job_at_schedule_time() -> None:
    """Nothing before the first schedule time, a requeue for exactly then (+100 ms); at the time,
    the Job `<cj>-<minutes>` with the scheduled-timestamp annotation, and status updated."""
    h = CronHarness("2024-01-01T10:02:00Z")
    h.add()
    assert h.at("2024-01-01T10:03:00Z").sync() == []
    assert h.jobs() == [] and h.requeues == [pytest.approx(120.1)]
    events = h.at("2024-01-01T10:05:00.1Z").sync()
    scheduled = parse_time("2024-01-01T10:05:00Z")
    name = f"cj-{int(scheduled // 60)}"
    assert events == [("SuccessfulCreate", f"Created job {name}")]
    (job,) = h.jobs()
    assert job["metadata"]["name"] == name and job["metadata"]["labels"] == {"team": "a"}
    assert job["metadata"]["annotations"] == {"batch.kubernetes.io/cronjob-scheduled-timestamp": "2024-01-01T10:05:00Z"}
    assert job["metadata"]["ownerReferences"][0]["kind"] == "CronJob"
    st = h.cj()["status"]
    assert st["lastScheduleTime"] == "2024-01-01T10:05:00Z"
    assert [a["name"] for a in st["active"]] == [name]
    assert h.requeues == [pytest.approx(300.0)]
    # a repeated sync in the same minute creates nothing more
    assert h.sync() == [] and len(h.jobs()) == 1


def test_cronjob_forbid_replace_and_completed_jobs() -> None:
    h = CronHarness("2024-01-01T10:00:30Z")
    h.add(concurrencyPolicy="Forbid")
    h.at("2024-01-01T10:05:00.1Z").sync()
    first = h.jobs()[0]["metadata"]["name"]
    assert h.at("2024-01-01T10:10:00.1Z").sync() == [
        ("JobAlreadyActive", "Not starting job because prior execution is running and concurrency policy is Forbid")]
    assert len(h.jobs()) == 1
    # the running job finishes: SawCompletedJob, lastSuccessfulTime, and the skipped 10:10 run starts
    # late (no startingDeadlineSeconds), as upstream
    h.finish(first, at="2024-01-01T10:11:00Z")
    second = f"cj-{int(parse_time('2024-01-01T10:10:00Z') // 60)}"
    assert h.at("2024-01-01T10:11:00Z").sync() == [
        ("SawCompletedJob", f"Saw completed job: {first}, condition: Complete"),
        ("SuccessfulCreate", f"Created job {second}")]
    st = h.cj()["status"]
    assert [a["name"] for a in st["active"]] == [second] and st["lastSuccessfulTime"] == "2024-01-01T10:11:00Z"
    assert st["lastScheduleTime"] == "2024-01-01T10:10:00Z"
    # Replace: the active job is deleted when the next one starts
    h.cj()["spec"]["concurrencyPolicy"] = "Replace"
    events = h.at("2024-01-01T10:15:00.1Z").sync()
    third = f"cj-{int(parse_time('2024-01-01T10:15:00Z') // 60)}"
    assert events == [("SuccessfulDelete", f"Deleted job {second}"), ("SuccessfulCreate", f"Created job {third}")]
    assert [a["name"] for a in h.cj()["status"]["active"]] == [third]


def test_cronjob_history_limits_delete_oldest_finished_jobs() -> None:
    h = CronHarness("2024-01-01T10:00:30Z")
    h.add(successfulJobsHistoryLimit=1, failedJobsHistoryLimit=0)
    names = []
    for minute in ("05", "10", "15"):
        h.at(f"2024-01-01T10:{minute}:00.1Z").sync()
        names.append(h.jobs()[-1]["metadata"]["name"])
    h.finish(names[0])
    h.finish(names[1])
    h.finish(names[2], typ="Failed")
    events = h.at("2024-01-01T10:16:00Z").sync()
    assert ("SuccessfulDelete", f"Deleted job {names[0]}") in events
    assert ("SuccessfulDelete", f"Deleted job {names[2]}") in events
    assert [j["metadata"]["name"] for j in h.jobs()] == [names[1]]


def test_cronjob_starting_deadline_and_too_many_missed() -> None:
    h = CronHarness("2024-01-01T10:00:30Z")
    h.add(startingDeadlineSeconds=10)
    # 10:05 is more than 10 s ago: that run is skipped, the next one is 10:10
    assert h.at("2024-01-01T10:05:30Z").sync() == []
    assert h.jobs() == [] and h.requeues == [pytest.approx(270.1)]
    assert h.at("2024-01-01T10:10:05Z").sync() == [
        ("SuccessfulCreate", f"Created job cj-{int(parse_time('2024-01-01T10:10:00Z') // 60)}")]
    # no deadline, the controller was away for 200+ minutes: one warning, one job for the latest time
    h2 = CronHarness("2024-01-01T00:00:00Z")
    h2.add(schedule="*/1 * * * *")
    events = h2.at("2024-01-01T03:25:10Z").sync()
    assert events[0] == ("TooManyMissedTimes", "too many missed start times. Set or decrease "
                                               ".spec.startingDeadlineSeconds or check clock skew")
    assert h2.cj()["status"]["lastScheduleTime"] == "2024-01-01T03:25:00Z" and len(h2.jobs()) == 1


def test_cronjob_time_zone_suspend_and_invalid_zone() -> None:
    h = CronHarness("2024-01-01T00:00:00Z")
    h.add(schedule="0 9 * * *", timeZone="Europe/Berlin")
    h.at("2024-01-01T08:00:00.1Z").sync()  # 09:00 in Berlin is 08:00 UTC in winter
    (job,) = h.jobs()
    assert job["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"] == "2024-01-01T09:00:00+01:00"
    assert job["metadata"]["name"] == f"cj-{int(parse_time('2024-01-01T08:00:00Z') // 60)}"
    h.cj()["spec"]["suspend"] = True
    assert h.at("2024-01-02T08:00:00.1Z").sync() == [] and len(h.jobs()) == 1 and h.requeues == []
    h.cj()["spec"].update(suspend=False, timeZone="Mars/Olympus")
    assert h.sync() == [("UnknownTimeZone", 'invalid timeZone: "Mars/Olympus": unknown time zone Mars/Olympus')]


def test_cronjob_fires_on_its_timer(cluster, nodes):
    """An `@every 3s` schedule (robfig syntax, accepted as upstream) fires without any relist:
    the timer set at creation creates `<cj>-<minutes>`, status.active/lastScheduleTime follow,
    and the finished Job shows as SawCompletedJob with lastSuccessfulTime."""
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "tick"},
          "spec": {"schedule": "@every 3s", "concurrencyPolicy": "Forbid",
                   "jobTemplate": {"spec": job_manifest("x", run_seconds=0.5)["spec"]}}}
    apply(cluster, cj)
    created = get_json(cluster, "cronjob", "tick")["metadata"]["creationTimestamp"]

    def fired() -> Any:
        st = get_json(cluster, "cronjob", "tick").get("status", {})
        return st if st.get("lastSuccessfulTime") else None
    st = wait_for(fired, timeout=30, what="cronjob ran a job to completion")
    cluster.kubectl("patch", "cronjob", "tick", "-p", '{"spec":{"suspend":true}}')
    from pyk8s.api.timefmt import parse_time
    assert parse_time(st["lastScheduleTime"]) >= parse_time(created) + 3
    jobs = [j for j in get_json(cluster, "jobs")["items"] if j["metadata"]["name"].startswith("tick-")]
    assert jobs
    first = min(jobs, key=lambda j: j["metadata"]["creationTimestamp"])
    minutes = int(first["metadata"]["name"].split("-")[1])
    stamp = first["metadata"]["annotations"]["batch.kubernetes.io/cronjob-scheduled-timestamp"]
    assert minutes == int(parse_time(stamp) // 60)
    reasons = {e["reason"] for e in events_for(cluster, "tick")}
    assert {"SuccessfulCreate", "SawCompletedJob"} <= reasons
    row = cluster.kubectl("get", "cronjob", "tick", "--no-headers").stdout.split()
    assert row[1:4] == ["@every", "3s", "<none>"]
    cluster.kubectl("delete", "cronjob", "tick")


# ---- Job helpers (pure) ----------------------------------------------------------------------

from pyk8s.controllers import job_util  # noqa: E402


def test_completed_indexes_format_as_upstream() -> None:
    iv = job_util.with_indexes([], [0, 1, 2, 4, 5, 7, 9, 10, 11, 12])
    assert job_util.format_intervals(iv) == "0-2,4,5,7,9-12"
    assert job_util.parse_intervals("0-2,4,5,7,9-12", 11) == [[0, 2], [4, 5], [7, 7], [9, 10]]
    assert job_util.total_intervals(iv) == 10


def _failed_pod(code: int, conditions: list[dict[str, str]] | None = None) -> dict[str, Any]:
    return {"metadata": {"name": "p", "namespace": "ns"},
            "status": {"phase": "Failed", "conditions": conditions or [],
                       "containerStatuses": [{"name": "main", "state": {"terminated": {"exitCode": code}}}]}}


def test_pod_failure_policy_actions() -> None:
    pfp = {"rules": [
        {"action": "Ignore", "onPodConditions": [{"type": "DisruptionTarget", "status": "True"}]},
        {"action": "FailJob", "onExitCodes": {"containerName": "main", "operator": "In", "values": [42]}},
        {"action": "Count", "onExitCodes": {"operator": "NotIn", "values": [1, 2]}},
        {"action": "FailIndex", "onExitCodes": {"operator": "In", "values": [1]}}]}
    assert job_util.match_pod_failure_policy(pfp, _failed_pod(42)) == (
        "Container main for pod ns/p failed with exit code 42 matching FailJob rule at index 1", True, "FailJob")
    assert job_util.match_pod_failure_policy(pfp, _failed_pod(3, [{"type": "DisruptionTarget", "status": "True"}])) \
        == (None, False, "Ignore")
    assert job_util.match_pod_failure_policy(pfp, _failed_pod(3)) == (None, True, "Count")
    assert job_util.match_pod_failure_policy(pfp, _failed_pod(1)) == (None, True, "FailIndex")
    assert job_util.match_pod_failure_policy(pfp, _failed_pod(2)) == (None, True, None)  # no rule: counts


def test_pod_failure_backoff_doubles_to_six_minutes() -> None:
    assert job_util.backoff_remaining(100.0, 1, 100.0) == 10
    assert job_util.backoff_remaining(100.0, 3, 95.0) == 35  # 40 s after the third failure
    assert job_util.backoff_remaining(100.0, 10, 100.0) == 360
    assert job_util.backoff_remaining(100.0, 1, 80.0) == 0
    rec = job_util.new_backoff_record(None, [], [_failed_pod(1)])
    assert rec.failures_after_last_success == 1
