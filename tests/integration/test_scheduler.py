"""The scheduler through the real API server: nodes are plain Node objects (no kubelet), pods are
created with kubectl, and what we check is what a user sees: bindings, events, pod conditions."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.cluster import REPO, Cluster
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

MANIFESTS = str(SHARED_MANIFESTS)
MASTER_TAINT = {"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}

# The transcript's three FailedScheduling messages (upstream-observed.md, "scheduling failures").
TRANSCRIPT = {
    "big": "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
           "3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
           "3 No preemption victims found for incoming pod.",
    "node-affinity-pod": "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
                         "3 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/4 nodes are available: "
                         "4 Preemption is not helpful for scheduling.",
    "sel": "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
           "3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: "
           "4 Preemption is not helpful for scheduling.",
}


@pytest.fixture
def fresh(tmp_path):
    """A cluster of our own per test: the scheduler's messages count every node."""
    c = Cluster(str(tmp_path / "data"))
    c.start()
    yield c
    c.stop()


@pytest.fixture
def no_scheduler(tmp_path):
    c = Cluster(str(tmp_path / "data"), ["--disable", "scheduler"])
    c.start()
    yield c
    c.stop()


# -- helpers ---------------------------------------------------------------------------------


def node(name: str, cpu: str = "4", memory: str = "16Gi", labels: dict[str, str] | None = None,
         taints: list[dict[str, str]] | None = None, extra: dict[str, str] | None = None) -> dict[str, Any]:
    res = {"cpu": cpu, "memory": memory, "pods": "110", **(extra or {})}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux",
                                                  **(labels or {})}},
            "spec": {"taints": taints} if taints else {},
            "status": {"capacity": dict(res), "allocatable": dict(res),
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}]}}


def pod(name: str, cpu: str | None = None, labels: dict[str, str] | None = None, **spec: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "busybox"}
    if cpu:
        c["resources"] = {"requests": {"cpu": cpu}}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels or {}},
            "spec": {"containers": [c], **spec}}


def create(c: Cluster, *objs: dict[str, Any]) -> None:
    c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": list(objs)}))


def get(c: Cluster, *args: str) -> Any:
    return json.loads(c.kubectl("get", *args, "-o", "json").stdout)


def wait_for(fn: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def node_of(c: Cluster, name: str) -> str:
    return (get(c, "pod", name).get("spec") or {}).get("nodeName") or ""


def bound(c: Cluster, name: str, timeout: float = 20.0) -> str:
    return wait_for(lambda: node_of(c, name), timeout, f"pod {name} bound")


def events(c: Cluster, reason: str) -> list[dict[str, Any]]:
    return get(c, "events", "--field-selector", f"reason={reason}")["items"]


def messages(c: Cluster, reason: str) -> dict[str, str]:
    return {e["involvedObject"]["name"]: e["message"] for e in events(c, reason)}


def condition(p: dict[str, Any], ctype: str = "PodScheduled") -> dict[str, Any] | None:
    return next((x for x in (p.get("status") or {}).get("conditions") or () if x["type"] == ctype), None)


def transcript_nodes() -> list[dict[str, Any]]:
    return [node("node1", taints=[MASTER_TAINT]), node("node2"), node("node3"), node("node4")]


# -- the transcript and the seeds ---------------------------------------------------------------


def test_transcript_failed_scheduling_messages(fresh):
    c = fresh
    create(c, *transcript_nodes())
    c.kubectl("apply", "-f", f"{MANIFESTS}/node-affinity-pod.yaml")
    c.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "sel"},
         "spec": {"nodeSelector": {"disktype": "ssd"}, "containers": [{"name": "c", "image": "busybox"}]}}))
    c.kubectl("apply", "-f", "-", input=json.dumps(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "big"},
         "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "64"}}}]}}))
    wait_for(lambda: len(events(c, "FailedScheduling")) >= 3, what="three FailedScheduling events")
    time.sleep(1.0)  # nothing else may come: the pods wait for a cluster event, as upstream
    out = c.kubectl("get", "events", "--field-selector", "reason=FailedScheduling",
                    "-o", "custom-columns=OBJ:.involvedObject.name,MSG:.message").stdout
    lines = sorted(out.splitlines()[1:])
    assert lines == sorted(f"{name:<20}{msg}" for name, msg in TRANSCRIPT.items()), out
    for e in events(c, "FailedScheduling"):
        # events.k8s.io/v1, as kube-scheduler writes them: seen as core/v1, no source, no count
        assert e["type"] == "Warning" and e["action"] == "Scheduling"
        assert e["source"] == {} and "count" not in e and e["eventTime"]
        assert e["reportingComponent"] == "default-scheduler"
        assert e["reportingInstance"].startswith("default-scheduler-")
        assert e["involvedObject"]["kind"] == "Pod"
    for name, msg in TRANSCRIPT.items():
        p = get(c, "pod", name)
        cond = condition(p)
        assert cond is not None and cond["status"] == "False" and cond["reason"] == "Unschedulable"
        assert cond["message"] == msg
        assert not p["spec"].get("nodeName")
    desc = c.kubectl("describe", "pod", "big").stdout
    assert "Warning  FailedScheduling" in desc and "default-scheduler" in desc
    assert "3 Insufficient cpu" in desc
    assert "Pending" in c.kubectl("get", "pod", "big").stdout


def test_seed_002_master_taint_and_toleration(fresh):
    """Seed 002: a pod pinned to the (tainted) master stays Pending; with the toleration it runs there."""
    c = fresh
    create(c, *transcript_nodes())
    c.kubectl("apply", "-f", f"{MANIFESTS}/node-affinity-pod.yaml")
    wait_for(lambda: "node-affinity-pod" in messages(c, "FailedScheduling"), what="FailedScheduling")
    assert messages(c, "FailedScheduling")["node-affinity-pod"] == TRANSCRIPT["node-affinity-pod"]
    assert node_of(c, "node-affinity-pod") == ""
    table = c.kubectl("get", "pod", "node-affinity-pod", "-o", "wide").stdout
    assert "Pending" in table and "<none>" in table

    # The seed's toleration-pod: the same pin plus a toleration of the master taint.
    tol = json.loads(json.dumps(pod("toleration-pod")))
    tol["spec"]["affinity"] = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {
        "nodeSelectorTerms": [{"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}}
    tol["spec"]["tolerations"] = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]
    c.kubectl("apply", "-f", "-", input=json.dumps(tol))
    assert bound(c, "toleration-pod") == "node1"
    assert messages(c, "Scheduled")["toleration-pod"] == "Successfully assigned default/toleration-pod to node1"

    # Adding the toleration to the pending pod (tolerations may only be added) requeues it at once.
    c.kubectl("patch", "pod", "node-affinity-pod", "--type=json", "-p", json.dumps(
        [{"op": "add", "path": "/spec/tolerations/-", "value": {"key": "node-role.kubernetes.io/master",
                                                                  "operator": "Exists", "effect": "NoSchedule"}}]))
    assert bound(c, "node-affinity-pod", timeout=10) == "node1"
    cond = condition(get(c, "pod", "node-affinity-pod"))
    assert cond is not None and cond["status"] == "True"
    assert "reason" not in cond


def test_repeated_failures_are_one_event_series_not_a_write_each(fresh):
    """With no node at all a pod is retried with backoff (1, 2, 4, 8 s). As kube-scheduler's events.k8s.io
    recorder: the first failure is an Event, the retry after the pod's status changed (a new
    resourceVersion in the reference) a second one, the next repeat makes that a series (count 2, one
    patch), and later repeats are only counted until the series is written again (6 or 30 minutes)."""
    c = fresh
    create(c, pod("lonely"))

    def lonely() -> list[dict[str, Any]]:
        return [e for e in get(c, "events.v1.events.k8s.io")["items"]
                if e["reason"] == "FailedScheduling" and e["regarding"]["name"] == "lonely"]

    series = wait_for(lambda: [e for e in lonely() if e.get("series")], 30, "a FailedScheduling series")
    (ev,) = series
    assert ev["series"]["count"] == 2 and ev["action"] == "Scheduling"
    assert ev["reportingController"] == "default-scheduler" and ev["note"] == "no nodes available to schedule pods"
    rv = ev["metadata"]["resourceVersion"]

    time.sleep(6)  # the next retry (4 s of backoff after the third): counted, not written
    after = lonely()
    assert len(after) == 2, after  # the first (before the status patch) and the series
    now = next(e for e in after if e.get("series"))
    assert now["metadata"]["resourceVersion"] == rv and now["series"]["count"] == 2
    # kubectl's core/v1 view of it
    core = [e for e in events(c, "FailedScheduling") if e["involvedObject"]["name"] == "lonely"]
    assert len(core) == 2 and all(e["source"] == {} and "count" not in e for e in core)
    assert sum(1 for e in core if (e.get("series") or {}).get("count") == 2) == 1


def test_scheduled_event_and_condition(fresh):
    c = fresh
    create(c, node("n1"), node("n2", cpu="8"))
    c.kubectl("run", "web", "--image=nginx", "--restart=Never")
    n = bound(c, "web")
    assert n in ("n1", "n2")
    p = get(c, "pod", "web")
    assert condition(p) is not None and condition(p)["status"] == "True"
    ev = wait_for(lambda: [e for e in events(c, "Scheduled") if e["involvedObject"]["name"] == "web"])
    e = ev[0]
    assert e["type"] == "Normal" and e["message"] == f"Successfully assigned default/web to {n}"
    assert e["source"] == {} and e["reportingComponent"] == "default-scheduler" and e["action"] == "Binding"
    desc = c.kubectl("describe", "pod", "web").stdout
    assert "Normal  Scheduled" in desc and f"Successfully assigned default/web to {n}" in desc
    # Pods for other schedulers are left alone, without events.
    create(c, pod("other", schedulerName="someone-else"))
    time.sleep(1.5)
    assert node_of(c, "other") == "" and "other" not in messages(c, "FailedScheduling")
    assert condition(get(c, "pod", "other")) is None


def test_spreads_many_pods_and_fills_nodes(fresh):
    c = fresh
    create(c, *(node(f"n{i}", cpu="2") for i in range(4)))
    create(c, *(pod(f"p{i}", cpu="500m") for i in range(16)))
    pods = wait_for(lambda: [p for p in get(c, "pods")["items"] if p["spec"].get("nodeName")] if len(
        [p for p in get(c, "pods")["items"] if p["spec"].get("nodeName")]) == 16 else None, what="16 pods bound")
    per_node: dict[str, int] = {}
    for p in pods:
        per_node[p["spec"]["nodeName"]] = per_node.get(p["spec"]["nodeName"], 0) + 1
    assert per_node == {"n0": 4, "n1": 4, "n2": 4, "n3": 4}  # 2 cpu / 500m: exactly full
    create(c, pod("extra", cpu="500m"))
    wait_for(lambda: "extra" in messages(c, "FailedScheduling"))
    assert messages(c, "FailedScheduling")["extra"] == (
        "0/4 nodes are available: 4 Insufficient cpu. preemption: 0/4 nodes are available: "
        "4 No preemption victims found for incoming pod.")


# -- preemption ------------------------------------------------------------------------------


def test_preemption_evicts_lower_priority(fresh):
    c = fresh
    create(c, node("n1", cpu="2"))
    create(c, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "high"},
               "value": 1000})
    create(c, pod("low", cpu="1500m"))
    assert bound(c, "low") == "n1"
    high = pod("high", cpu="1500m", priorityClassName="high")
    create(c, high)
    high_uid = get(c, "pod", "high")["metadata"]["uid"]
    wait_for(lambda: (get(c, "pod", "high").get("status") or {}).get("nominatedNodeName") == "n1",
             what="nominatedNodeName")
    low = wait_for(lambda: (lambda p: p if p["metadata"].get("deletionTimestamp") else None)(get(c, "pod", "low")),
                   what="victim terminating")
    dt = condition(low, "DisruptionTarget")
    assert dt is not None and dt["status"] == "True" and dt["reason"] == "PreemptionByScheduler"
    assert dt["message"] == "default-scheduler: preempting to accommodate a higher priority pod"
    pre = wait_for(lambda: [e for e in events(c, "Preempted") if e["involvedObject"]["name"] == "low"])
    assert pre[0]["message"] == f"Preempted by pod {high_uid} on node n1"
    assert pre[0]["type"] == "Normal"
    failed = messages(c, "FailedScheduling")["high"]
    assert failed == "0/1 nodes are available: 1 Insufficient cpu."  # preemption succeeded: no postfix
    wide = c.kubectl("get", "pod", "high", "-o", "wide").stdout
    assert "n1" in wide  # NOMINATED NODE column
    assert node_of(c, "high") == ""  # the victim still holds its cpu while terminating
    # No kubelet here: finish the victim's termination as a kubelet would.
    c.kubectl("delete", "pod", "low", "--grace-period=0", "--force")
    assert bound(c, "high") == "n1"
    p = get(c, "pod", "high")
    assert condition(p)["status"] == "True"


def test_preemption_respects_priority_order(fresh):
    """An equal-priority pod never preempts; a pod with preemptionPolicy Never does not either."""
    c = fresh
    create(c, node("n1", cpu="1"))
    create(c, {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "polite"},
               "value": 1000, "preemptionPolicy": "Never"})
    create(c, pod("first", cpu="800m"))
    assert bound(c, "first") == "n1"
    create(c, pod("second", cpu="800m"), pod("nice", cpu="800m", priorityClassName="polite"))
    wait_for(lambda: {"second", "nice"} <= set(messages(c, "FailedScheduling")))
    msgs = messages(c, "FailedScheduling")
    assert msgs["second"] == ("0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: "
                              "1 No preemption victims found for incoming pod.")
    assert msgs["nice"] == ("0/1 nodes are available: 1 Insufficient cpu. "
                            "preemption: not eligible due to preemptionPolicy=Never.")
    assert get(c, "pod", "first")["metadata"].get("deletionTimestamp") is None


# -- plugins through the API -----------------------------------------------------------------


def test_topology_spread_across_zones(fresh):
    c = fresh
    zone = "topology.kubernetes.io/zone"
    create(c, node("a1", labels={zone: "a"}), node("a2", labels={zone: "a"}), node("a3", labels={zone: "a"}),
           node("b1", labels={zone: "b"}), node("c1", labels={zone: "c"}))
    spread = [{"maxSkew": 1, "topologyKey": zone, "whenUnsatisfiable": "DoNotSchedule",
               "labelSelector": {"matchLabels": {"app": "web"}}}]
    create(c, *(pod(f"w{i}", labels={"app": "web"}, topologySpreadConstraints=spread) for i in range(6)))
    for i in range(6):
        bound(c, f"w{i}")
    zones: dict[str, int] = {}
    for i in range(6):
        z = node_of(c, f"w{i}")[0]
        zones[z] = zones.get(z, 0) + 1
    assert zones == {"a": 2, "b": 2, "c": 2}
    # With b and c cordoned, zone a takes one more (skew 3-2), then the constraint forbids it.
    c.kubectl("cordon", "b1")
    c.kubectl("cordon", "c1")
    create(c, pod("w6", labels={"app": "web"}, topologySpreadConstraints=spread))
    assert bound(c, "w6")[0] == "a"
    create(c, pod("w7", labels={"app": "web"}, topologySpreadConstraints=spread))
    wait_for(lambda: "w7" in messages(c, "FailedScheduling"))
    msg = messages(c, "FailedScheduling")["w7"]
    assert msg == ("0/5 nodes are available: 2 node(s) were unschedulable, "
                   "3 node(s) didn't match pod topology spread constraints. preemption: 0/5 nodes are available: "
                   "2 Preemption is not helpful for scheduling, 3 No preemption victims found for incoming pod."), msg
    # Uncordoning c lets it in there (a Node update wakes it).
    c.kubectl("uncordon", "c1")
    assert bound(c, "w7") == "c1"


def test_inter_pod_anti_affinity(fresh):
    c = fresh
    create(c, *(node(f"n{i}") for i in range(3)))
    anti = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [
        {"labelSelector": {"matchLabels": {"app": "db"}}, "topologyKey": "kubernetes.io/hostname"}]}}
    create(c, *(pod(f"db{i}", labels={"app": "db"}, affinity=anti) for i in range(4)))
    wait_for(lambda: sum(1 for i in range(4) if node_of(c, f"db{i}")) == 3 and messages(c, "FailedScheduling"),
             what="3 bound, 1 failed")
    nodes = {node_of(c, f"db{i}") for i in range(4)} - {""}
    assert nodes == {"n0", "n1", "n2"}
    (loser, msg), = messages(c, "FailedScheduling").items()
    assert msg == ("0/3 nodes are available: 3 node(s) didn't match pod anti-affinity rules. "
                   "preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod."), msg
    # Removing one replica frees its node for the pending one (an AssignedPod delete wakes it).
    victim = next(f"db{i}" for i in range(4) if node_of(c, f"db{i}") and f"db{i}" != loser)
    freed = node_of(c, victim)
    c.kubectl("delete", "pod", victim, "--grace-period=0", "--force")
    assert bound(c, loser) == freed


def test_scheduling_gates(fresh):
    c = fresh
    create(c, node("n1"))
    create(c, pod("gated", schedulingGates=[{"name": "example.com/wait"}, {"name": "example.com/other"}]))
    p = wait_for(lambda: (lambda q: q if condition(q) else None)(get(c, "pod", "gated")), what="gated condition")
    cond = condition(p)
    assert cond["status"] == "False" and cond["reason"] == "SchedulingGated"
    assert cond["message"] == "Scheduling is blocked due to non-empty scheduling gates"
    assert "SchedulingGated" in c.kubectl("get", "pod", "gated").stdout
    time.sleep(1.0)
    assert node_of(c, "gated") == "" and "gated" not in messages(c, "FailedScheduling")
    c.kubectl("patch", "pod", "gated", "--type=json", "-p", '[{"op": "remove", "path": "/spec/schedulingGates/0"}]')
    time.sleep(1.0)
    assert node_of(c, "gated") == ""  # one gate left
    c.kubectl("patch", "pod", "gated", "--type=json", "-p", '[{"op": "remove", "path": "/spec/schedulingGates"}]')
    assert bound(c, "gated") == "n1"
    assert condition(get(c, "pod", "gated"))["status"] == "True"


def test_extended_resources(fresh):
    c = fresh
    create(c, node("cpu-only"), node("gpu", extra={"nvidia.com/gpu": "2"}),
           node("gpushare", extra={"aliyun.com/gpu-mem": "16"}))

    def gpu_pod(name: str, res: str, n: str) -> dict[str, Any]:
        p = pod(name)
        p["spec"]["containers"][0]["resources"] = {"limits": {res: n}}  # requests default to limits
        return p

    create(c, gpu_pod("train", "nvidia.com/gpu", "1"), gpu_pod("infer", "aliyun.com/gpu-mem", "8"))
    assert bound(c, "train") == "gpu"
    assert bound(c, "infer") == "gpushare"
    create(c, gpu_pod("infer2", "aliyun.com/gpu-mem", "8"))
    assert bound(c, "infer2") == "gpushare"
    create(c, gpu_pod("big-train", "nvidia.com/gpu", "2"), gpu_pod("infer3", "aliyun.com/gpu-mem", "1"))
    wait_for(lambda: {"big-train", "infer3"} <= set(messages(c, "FailedScheduling")))
    msgs = messages(c, "FailedScheduling")
    assert msgs["big-train"] == ("0/3 nodes are available: 3 Insufficient nvidia.com/gpu. preemption: 0/3 nodes are "
                                 "available: 3 No preemption victims found for incoming pod."), msgs["big-train"]
    assert msgs["infer3"].startswith("0/3 nodes are available: 3 Insufficient aliyun.com/gpu-mem."), msgs["infer3"]
    # Freeing the gpu lets the big job in.
    c.kubectl("delete", "pod", "train", "--grace-period=0", "--force")
    assert bound(c, "big-train") == "gpu"


# -- leader election and the standalone command ------------------------------------------------


def test_two_schedulers_only_leader_binds(no_scheduler):
    c = no_scheduler
    create(c, node("n1"), node("n2"))

    async def main() -> None:
        from pyk8s.client import Client
        from pyk8s.scheduler.runner import SchedulerRunner

        # renew deadline long enough that a loaded machine does not cost the leader its lease mid-test
        le = {"lease_duration": 5.0, "renew_deadline": 4.0, "retry_period": 0.2}
        a = SchedulerRunner(Client.from_kubeconfig(c.kubeconfig), identity="sched-a", leader_election=le)
        b = SchedulerRunner(Client.from_kubeconfig(c.kubeconfig), identity="sched-b", leader_election=le)
        await a.start()
        await asyncio.sleep(0.5)
        await b.start()
        await asyncio.sleep(0.5)
        assert a.leading and not b.leading
        await asyncio.to_thread(create, c, *(pod(f"p{i}") for i in range(10)))
        for _ in range(100):
            if a.bound == 10:
                break
            await asyncio.sleep(0.1)
        assert a.bound == 10 and b.bound == 0
        # b saw every binding through its informers, so its cache agrees.
        await asyncio.sleep(0.5)
        assert b.scheduler.cache.pod_count() == 10
        lease = await asyncio.to_thread(get, c, "lease", "-n", "kube-system", "kube-scheduler")
        assert lease["spec"]["holderIdentity"] == "sched-a"
        await a.stop()  # a graceful stop gives the lease up (ReleaseOnCancel), b need not wait for expiry
        lease = await asyncio.to_thread(get, c, "lease", "-n", "kube-system", "kube-scheduler")
        assert lease["spec"].get("holderIdentity") in (None, "sched-b"), lease["spec"]
        for _ in range(100):
            if b.leading:
                break
            await asyncio.sleep(0.1)
        assert b.leading
        await asyncio.to_thread(create, c, *(pod(f"q{i}") for i in range(5)))
        for _ in range(100):
            if b.bound == 5:
                break
            await asyncio.sleep(0.1)
        assert b.bound == 5 and a.bound == 10
        # A scheduler killed without releasing: the next one waits for the lease to expire.
        await b.stop(release=False)
        c2 = SchedulerRunner(Client.from_kubeconfig(c.kubeconfig), identity="sched-c", leader_election=le)
        await c2.start()
        await asyncio.sleep(0.5)
        assert not c2.leading  # b's lease (5 s) has not expired yet
        for _ in range(150):
            if c2.leading:
                break
            await asyncio.sleep(0.1)
        assert c2.leading
        await c2.stop()

    asyncio.run(main())
    assert all(p["spec"].get("nodeName") for p in get(c, "pods")["items"])


def test_scheduler_command_with_config(no_scheduler, tmp_path):
    c = no_scheduler
    create(c, node("n1"), node("n2", labels={"disktype": "ssd"}))
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\n"
        "kind: KubeSchedulerConfiguration\n"
        "profiles:\n"
        "- schedulerName: default-scheduler\n"
        "- schedulerName: no-scoring\n"
        "  plugins:\n"
        "    score:\n"
        "      disabled:\n"
        "      - name: '*'\n")
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "scheduler", "--kubeconfig", c.kubeconfig,
                             "--config", str(cfg), "--leader-elect=false", "--secure-port", "0"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert "running" in line, line
        create(c, pod("a"), pod("b", schedulerName="no-scoring", nodeSelector={"disktype": "ssd"}),
               pod("x", schedulerName="nobody"))
        assert bound(c, "a") in ("n1", "n2")
        assert bound(c, "b") == "n2"
        time.sleep(1.0)
        assert node_of(c, "x") == ""
        assert "x" not in messages(c, "FailedScheduling")
    finally:
        proc.terminate()
        proc.wait(10)
