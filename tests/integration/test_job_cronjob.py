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
    apply(cluster, job_manifest("ttl", ttlSecondsAfterFinished=1))
    wait_for(lambda: cond(job(cluster, "ttl"), "Complete") is not None, what="ttl job complete")

    def gone() -> bool:
        r = cluster.kubectl("get", "job", "ttl", "-o", "json", check=False)
        return r.returncode != 0 or bool(json.loads(r.stdout)["metadata"].get("deletionTimestamp"))
    wait_for(gone, timeout=20, what="ttl job deleted")


# ---- CronJob (integration) ------------------------------------------------------------------

def test_create_job_from_cronjob_and_suspend(cluster, nodes):
    """`kubectl create job --from=cronjob/x` runs the template; suspending the CronJob shows in
    `kubectl get cronjob`; a schedule far away leaves status empty and creates nothing."""
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
    # the controller never schedules (next run is next January) and tracks no active jobs
    assert get_json(cluster, "cronjob", "cj").get("status", {}) == {}
    jobs = get_json(cluster, "jobs", "-l", "batch.kubernetes.io/job-name")["items"]
    assert not [x for x in jobs if x["metadata"]["name"].startswith("cj-") and x["metadata"]["name"] != "cj-manual"]
    cluster.kubectl("delete", "cronjob", "cj")
