"""ReplicaSet, ReplicationController and Deployment controllers through a real server and the real kubectl.

Behaviour pinned to ../shared/reference/upstream-observed.md ("workloads", "full objects after
defaulting", "describe") and to upstream's controllers (pkg/controller/replicaset,
pkg/controller/deployment). The test cluster has no nodes, so pods stay unscheduled and are
deleted at once; a test plays the kubelet by patching pods/status Ready, which lets it hold a
rollout at each step and look at it. One test runs pods on simulated nodes end to end.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

HASH = re.compile(r"^[bcdfghjklmnpqrstvwxz2456789]{1,10}$")


# ---- helpers ------------------------------------------------------------------------------

def wait_for(fn: Callable[[], Any], timeout: float = 30.0, what: str = "condition", interval: float = 0.2) -> Any:
    """Poll fn until it returns something truthy; fail with the last value seen."""
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        try:
            last = fn()
        except AssertionError as e:
            last = e
        else:
            if last:
                return last
        time.sleep(interval)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}; last: {last!r}")


def get(cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def items(cluster, ns: str, kind: str, selector: str | None = None) -> list[dict[str, Any]]:
    args = ["-n", ns, kind] + (["-l", selector] if selector else [])
    return get(cluster, *args)["items"]


def owned_by(obj: dict[str, Any], owner: dict[str, Any]) -> bool:
    return any(r.get("uid") == owner["metadata"]["uid"] and r.get("controller")
               for r in obj["metadata"].get("ownerReferences") or [])


def replica_sets_of(cluster, ns: str, deploy: str) -> list[dict[str, Any]]:
    d = get(cluster, "-n", ns, "deploy", deploy)
    return sorted((rs for rs in items(cluster, ns, "rs") if owned_by(rs, d)),
                  key=lambda rs: int(rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"]))


def is_ready(pod: dict[str, Any]) -> bool:
    return any(c["type"] == "Ready" and c["status"] == "True" for c in pod.get("status", {}).get("conditions") or [])


def now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


class Kubelet:
    """Plays the kubelet for unscheduled pods: Running and Ready on request, through pods/status."""

    def __init__(self, cluster) -> None:
        from kubernetes import client

        self.core = client.CoreV1Api(cluster.api_client())

    def ready(self, ns: str, name: str) -> None:
        body = {"status": {"phase": "Running", "conditions": [
            {"type": "Initialized", "status": "True", "lastTransitionTime": now()},
            {"type": "Ready", "status": "True", "lastTransitionTime": now()},
            {"type": "ContainersReady", "status": "True", "lastTransitionTime": now()}]}}
        self.core.patch_namespaced_pod_status(name, ns, body)

    def running(self, ns: str, name: str) -> None:
        self.core.patch_namespaced_pod_status(name, ns, {"status": {"phase": "Running"}})

    def ready_all(self, cluster, ns: str, selector: str) -> int:
        n = 0
        for p in items(cluster, ns, "pods", selector):
            if not is_ready(p) and not p["metadata"].get("deletionTimestamp"):
                self.ready(ns, p["metadata"]["name"])
                n += 1
        return n


@pytest.fixture(scope="module")
def kubelet(cluster) -> Kubelet:
    return Kubelet(cluster)


def new_ns(cluster, name: str) -> str:
    cluster.kubectl("create", "ns", name)
    return name


def deployment(name: str, replicas: int, image: str = "nginx:1.25", strategy: dict[str, Any] | None = None,
               **spec: Any) -> str:
    d = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "labels": {"app": name}},
         "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                  "template": {"metadata": {"labels": {"app": name}},
                               "spec": {"containers": [{"name": "app", "image": image}]}},
                  **({"strategy": strategy} if strategy else {}), **spec}}
    return json.dumps(d)


def settle(cluster, kubelet: Kubelet, ns: str, name: str, timeout: float = 30.0) -> dict[str, Any]:
    """Make pods ready until the rollout completes; return the Deployment."""
    def done() -> dict[str, Any] | None:
        kubelet.ready_all(cluster, ns, f"app={name}")
        d = get(cluster, "-n", ns, "deploy", name)
        st, n = d.get("status") or {}, d["spec"]["replicas"]
        if st.get("observedGeneration", 0) >= d["metadata"]["generation"] and st.get("updatedReplicas", 0) == n \
                and st.get("replicas", 0) == n and st.get("availableReplicas", 0) == n:
            return d
        return None
    return wait_for(done, timeout, f"deployment {ns}/{name} to roll out")


def events(cluster, ns: str, kind: str, name: str) -> list[tuple[str, str, str]]:
    evs = items(cluster, ns, "events")
    evs.sort(key=lambda e: (e.get("firstTimestamp") or "", e["metadata"].get("resourceVersion", "0").zfill(12)))
    return [(e["reason"], e["message"], e["source"].get("component", "")) for e in evs
            if e["involvedObject"]["kind"] == kind and e["involvedObject"]["name"] == name]


def scaling_messages(cluster, ns: str, name: str) -> list[str]:
    return [m for r, m, _ in events(cluster, ns, "Deployment", name) if r == "ScalingReplicaSet"]


# ---- Deployment -> ReplicaSet -> Pods -------------------------------------------------------

def test_deployment_creates_replicaset_and_pods_with_names_labels_and_owners(cluster, kubelet):
    """upstream-observed.md: `kubectl apply -f testdemo-deploy.yaml`, then get deploy,rs / pods -o yaml / describe."""
    ns = new_ns(cluster, "deploy-basics")
    manifest = deployment("testdemo", 3, "centos:7")
    assert cluster.kubectl("-n", ns, "apply", "-f", "-", input=manifest).stdout.strip() == \
        "deployment.apps/testdemo created"
    pods = wait_for(lambda: len(items(cluster, ns, "pods")) == 3 and items(cluster, ns, "pods"), what="3 pods")
    d = get(cluster, "-n", ns, "deploy", "testdemo")
    [rs] = items(cluster, ns, "rs")
    h = rs["metadata"]["labels"]["pod-template-hash"]
    assert HASH.match(h), h
    assert rs["metadata"]["name"] == f"testdemo-{h}"
    assert rs["metadata"]["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "Deployment", "name": "testdemo",
                                                  "uid": d["metadata"]["uid"], "controller": True,
                                                  "blockOwnerDeletion": True}]
    assert rs["metadata"]["labels"] == {"app": "testdemo", "pod-template-hash": h}
    assert rs["spec"]["selector"] == {"matchLabels": {"app": "testdemo", "pod-template-hash": h}}
    assert rs["spec"]["template"]["metadata"]["labels"] == {"app": "testdemo", "pod-template-hash": h}
    ann = rs["metadata"]["annotations"]
    assert ann["deployment.kubernetes.io/revision"] == "1"
    assert ann["deployment.kubernetes.io/desired-replicas"] == "3"
    assert ann["deployment.kubernetes.io/max-replicas"] == "4"  # 3 + ceil(25% of 3)
    for p in pods:
        md = p["metadata"]
        assert md["generateName"] == f"testdemo-{h}-"
        assert re.fullmatch(rf"testdemo-{h}-[bcdfghjklmnpqrstvwxz2456789]{{5}}", md["name"]), md["name"]
        assert md["labels"] == {"app": "testdemo", "pod-template-hash": h}
        assert md["ownerReferences"] == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": rs["metadata"]["name"],
                                          "uid": rs["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}]

    def status_settled() -> dict[str, Any] | None:
        d = get(cluster, "-n", ns, "deploy", "testdemo")
        return d if d["status"].get("replicas") == 3 and \
            (get_cond(d, "Progressing") or {}).get("reason") == "ReplicaSetUpdated" else None
    d = wait_for(status_settled, what="deployment status")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "1"
    st = d["status"]
    assert {k: v for k, v in st.items() if k != "conditions"} == \
        {"observedGeneration": 1, "replicas": 3, "updatedReplicas": 3, "unavailableReplicas": 3}
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in st["conditions"]] == [
        ("Available", "False", "MinimumReplicasUnavailable", "Deployment does not have minimum availability."),
        ("Progressing", "True", "ReplicaSetUpdated", f'ReplicaSet "testdemo-{h}" is progressing.')]
    table = cluster.kubectl("-n", ns, "get", "deploy,rs").stdout.splitlines()
    assert table[0].split() == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]
    assert table[1].split()[:4] == ["deployment.apps/testdemo", "0/3", "3", "0"]
    assert table[4].split()[:4] == [f"replicaset.apps/testdemo-{h}", "3", "3", "0"]

    assert (("ScalingReplicaSet", f"Scaled up replica set testdemo-{h} from 0 to 3", "deployment-controller")
            in events(cluster, ns, "Deployment", "testdemo"))
    created = [m for r, m, src in events(cluster, ns, "ReplicaSet", rs["metadata"]["name"])
               if r == "SuccessfulCreate" and src == "replicaset-controller"]
    assert sorted(created) == sorted(f"Created pod: {p['metadata']['name']}" for p in pods)

    d = settle(cluster, kubelet, ns, "testdemo")
    assert [(c["type"], c["status"], c["reason"], c["message"]) for c in d["status"]["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable", "Deployment has minimum availability."),
        ("Progressing", "True", "NewReplicaSetAvailable", f'ReplicaSet "testdemo-{h}" has successfully progressed.')]
    rs = get(cluster, "-n", ns, "rs", f"testdemo-{h}")
    assert rs["status"] == {"replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3,
                            "observedGeneration": 1}
    out = cluster.kubectl("-n", ns, "describe", "deploy", "testdemo").stdout
    assert "Replicas:               3 desired | 3 updated | 3 total | 3 available | 0 unavailable" in out
    assert "RollingUpdateStrategy:  25% max unavailable, 25% max surge" in out
    assert re.search(r"Available\s+True\s+MinimumReplicasAvailable", out)
    assert re.search(r"Progressing\s+True\s+NewReplicaSetAvailable", out)
    assert "OldReplicaSets:  <none>" in out
    assert f"NewReplicaSet:   testdemo-{h} (3/3 replicas created)" in out
    assert re.search(rf"Normal\s+ScalingReplicaSet\s+\S+\s+deployment-controller\s+Scaled up replica set "
                     rf"testdemo-{h} from 0 to 3", out)
    assert cluster.kubectl("-n", ns, "rollout", "status", "deploy/testdemo").stdout.strip() == \
        'deployment "testdemo" successfully rolled out'
    # the same template again: unchanged, no new ReplicaSet
    assert cluster.kubectl("-n", ns, "apply", "-f", "-", input=manifest).stdout.strip() == \
        "deployment.apps/testdemo unchanged"
    out = cluster.kubectl("-n", ns, "describe", "pod", pods[0]["metadata"]["name"]).stdout
    assert f"Controlled By:    ReplicaSet/testdemo-{h}" in out


def get_cond(obj: dict[str, Any], typ: str) -> dict[str, Any] | None:
    return next((c for c in (obj.get("status") or {}).get("conditions") or [] if c["type"] == typ), None)


def test_scale_up_and_down(cluster, kubelet):
    ns = new_ns(cluster, "deploy-scale")
    cluster.kubectl("-n", ns, "create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    settle(cluster, kubelet, ns, "web")
    [rs] = replica_sets_of(cluster, ns, "web")
    name = rs["metadata"]["name"]
    assert cluster.kubectl("-n", ns, "scale", "deploy/web", "--replicas=5").stdout.strip() == "deployment.apps/web scaled"
    wait_for(lambda: len(items(cluster, ns, "pods", "app=web")) == 5, what="5 pods")
    settle(cluster, kubelet, ns, "web")
    rs = get(cluster, "-n", ns, "rs", name)
    assert rs["spec"]["replicas"] == 5
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "5"
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "7"  # 5 + ceil(1.25)
    cluster.kubectl("-n", ns, "scale", "deploy/web", "--replicas=1")
    wait_for(lambda: len(items(cluster, ns, "pods", "app=web")) == 1, what="1 pod")
    msgs = scaling_messages(cluster, ns, "web")
    assert msgs == [f"Scaled up replica set {name} from 0 to 2", f"Scaled up replica set {name} from 2 to 5",
                    f"Scaled down replica set {name} from 5 to 1"]
    deleted = [m for r, m, _ in events(cluster, ns, "ReplicaSet", name) if r == "SuccessfulDelete"]
    assert len(deleted) == 4 and all(m.startswith(f"Deleted pod: {name}-") for m in deleted)
    # a ReplicaSet scaled directly is put back by its Deployment
    cluster.kubectl("-n", ns, "scale", f"rs/{name}", "--replicas=3")
    wait_for(lambda: get(cluster, "-n", ns, "rs", name)["spec"]["replicas"] == 1 and
             len(items(cluster, ns, "pods", "app=web")) == 1, what="the Deployment to scale its ReplicaSet back")


# ---- rollouts ------------------------------------------------------------------------------

def rollout_steps(cluster, kubelet, ns: str, name: str, replicas: int, surge: int, unavailable: int,
                  image: str) -> list[tuple[int, int]]:
    """Update the image, then ready one new pod at a time; check the bounds at every step.

    Returns the (old, new) ReplicaSet sizes seen. The bounds are upstream's: the ReplicaSets
    never ask for more than replicas + maxSurge pods, and never fewer than replicas -
    maxUnavailable pods are available.
    """
    cluster.kubectl("-n", ns, "set", "image", f"deploy/{name}", f"app={image}")
    seen: list[tuple[int, int]] = []

    def sizes() -> tuple[int, int] | None:
        rss = replica_sets_of(cluster, ns, name)
        if len(rss) != 2:
            return None
        return rss[0]["spec"]["replicas"], rss[1]["spec"]["replicas"]

    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        s = wait_for(sizes, what="two ReplicaSets")
        pods = items(cluster, ns, "pods", f"app={name}")
        live = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
        available = sum(1 for p in live if is_ready(p))
        assert s[0] + s[1] <= replicas + surge, (s, "maxSurge exceeded")
        assert available >= replicas - unavailable, (s, available, "maxUnavailable exceeded")
        if not seen or seen[-1] != s:
            seen.append(s)
        if s == (0, replicas) and available == replicas and len(live) == replicas:
            return seen
        # the next step: wait for the pods the ReplicaSets asked for, then ready one new pod
        new_rs = replica_sets_of(cluster, ns, name)[1]
        h = new_rs["metadata"]["labels"]["pod-template-hash"]
        new_pods = [p for p in live if p["metadata"]["labels"].get("pod-template-hash") == h]
        if len(live) != s[0] + s[1]:
            time.sleep(0.1)
            continue
        waiting = [p for p in new_pods if not is_ready(p)]
        if waiting:
            kubelet.ready(ns, waiting[0]["metadata"]["name"])
            def moved(before: tuple[int, int] = s, rs_name: str = new_rs["metadata"]["name"],
                      avail: int = new_rs["status"].get("availableReplicas", 0)) -> bool:
                return sizes() != before or \
                    get(cluster, "-n", ns, "rs", rs_name)["status"].get("availableReplicas", 0) > avail
            wait_for(moved, what="the rollout to move on")
        else:
            time.sleep(0.1)
    raise AssertionError(f"rollout did not finish: {seen}")


def test_rolling_update_respects_max_surge_and_max_unavailable(cluster, kubelet):
    """maxSurge 1, maxUnavailable 0: one new pod at a time, never fewer than 4 available."""
    ns = new_ns(cluster, "deploy-rolling")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}}
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 4, strategy=strategy))
    settle(cluster, kubelet, ns, "web")
    seen = rollout_steps(cluster, kubelet, ns, "web", 4, 1, 0, "nginx:1.26")
    assert seen == [(4, 1), (3, 2), (2, 3), (1, 4), (0, 4)]
    old, new = (rs["metadata"]["name"] for rs in replica_sets_of(cluster, ns, "web"))
    assert scaling_messages(cluster, ns, "web")[1:] == [
        f"Scaled up replica set {new} from 0 to 1", f"Scaled down replica set {old} from 4 to 3",
        f"Scaled up replica set {new} from 1 to 2", f"Scaled down replica set {old} from 3 to 2",
        f"Scaled up replica set {new} from 2 to 3", f"Scaled down replica set {old} from 2 to 1",
        f"Scaled up replica set {new} from 3 to 4", f"Scaled down replica set {old} from 1 to 0"]
    d = settle(cluster, kubelet, ns, "web")
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    out = cluster.kubectl("-n", ns, "describe", "deploy", "web").stdout
    assert f"OldReplicaSets:  {old} (0/0 replicas created)" in out
    assert f"NewReplicaSet:   {new} (4/4 replicas created)" in out
    assert "RollingUpdateStrategy:  0 max unavailable, 1 max surge" in out


def test_rolling_update_percentages_round_surge_up_and_unavailable_down(cluster, kubelet):
    """30% of 4: maxSurge ceil(1.2) = 2, maxUnavailable floor(1.2) = 1.

    The first step makes the new ReplicaSet 2 (the surge) and takes the old one to 3 (one
    unavailable); the next fills the surge again (3, 3); then readiness drives the rest."""
    ns = new_ns(cluster, "deploy-percent")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": "30%", "maxUnavailable": "30%"}}
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 4, strategy=strategy))
    settle(cluster, kubelet, ns, "web")
    [rs] = replica_sets_of(cluster, ns, "web")
    assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "6"
    seen = rollout_steps(cluster, kubelet, ns, "web", 4, 2, 1, "nginx:1.26")
    assert seen[0] in ((3, 2), (3, 3)) and seen[-1] == (0, 4)


def test_recreate_scales_old_to_zero_and_waits_for_its_pods_to_go(cluster, kubelet):
    ns = new_ns(cluster, "deploy-recreate")
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 3, strategy={"type": "Recreate"}))
    settle(cluster, kubelet, ns, "web")
    [old] = replica_sets_of(cluster, ns, "web")
    # hold the old pods in Terminating with a finalizer
    pods = items(cluster, ns, "pods", "app=web")
    for p in pods:
        cluster.kubectl("-n", ns, "patch", "pod", p["metadata"]["name"], "--type=merge",
                        "-p", '{"metadata":{"finalizers":["example.com/hold"]}}')
    cluster.kubectl("-n", ns, "set", "image", "deploy/web", "app=nginx:1.26")
    wait_for(lambda: all(p["metadata"].get("deletionTimestamp") for p in items(cluster, ns, "pods", "app=web")),
             what="old pods terminating")
    assert get(cluster, "-n", ns, "rs", old["metadata"]["name"])["spec"]["replicas"] == 0
    d = wait_for(lambda: (lambda d: d if d["status"].get("observedGeneration") == 2 else None)(
        get(cluster, "-n", ns, "deploy", "web")), what="observedGeneration 2")
    assert len(replica_sets_of(cluster, ns, "web")) == 1, "a new ReplicaSet while old pods still run"
    assert d["status"].get("availableReplicas", 0) == 0
    for p in pods:
        cluster.kubectl("-n", ns, "patch", "pod", p["metadata"]["name"], "--type=merge",
                        "-p", '{"metadata":{"finalizers":null}}')
    settle(cluster, kubelet, ns, "web")
    old_rs, new_rs = replica_sets_of(cluster, ns, "web")
    assert scaling_messages(cluster, ns, "web") == [
        f"Scaled up replica set {old['metadata']['name']} from 0 to 3",
        f"Scaled down replica set {old['metadata']['name']} from 3 to 0",
        f"Scaled up replica set {new_rs['metadata']['name']} from 0 to 3"]
    out = cluster.kubectl("-n", ns, "describe", "deploy", "web").stdout
    assert re.search(r"StrategyType:\s+Recreate\n", out)


def test_rollout_history_undo_pause_resume_restart(cluster, kubelet):
    """kubectl rollout history|undo [--to-revision]|pause|resume|restart|status with the real kubectl."""
    ns = new_ns(cluster, "deploy-rollout")
    k = lambda *a, **kw: cluster.kubectl("-n", ns, *a, **kw)  # noqa: E731
    k("create", "deployment", "web", "--image=nginx:1.25", "--replicas=2")
    settle(cluster, kubelet, ns, "web")
    for i, image in ((2, "nginx:1.26"), (3, "nginx:1.27")):
        k("set", "image", "deploy/web", f"nginx={image}")
        k("annotate", "deploy/web", f"kubernetes.io/change-cause=image {image}")
        d = settle(cluster, kubelet, ns, "web")
        assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == str(i)
    wait_for(lambda: "image nginx:1.27" in k("rollout", "history", "deploy/web").stdout, what="change-cause on rev 3")
    lines = k("rollout", "history", "deploy/web").stdout.splitlines()
    assert lines[0] == "deployment.apps/web "
    assert [ln.split(None, 1) for ln in lines[1:] if ln.strip()] == [
        ["REVISION", "CHANGE-CAUSE"], ["1", "<none>"], ["2", "image nginx:1.26"], ["3", "image nginx:1.27"]]
    assert "Image:\tnginx:1.26" in k("rollout", "history", "deploy/web", "--revision=2").stdout.replace("      ", "\t")

    assert k("rollout", "undo", "deploy/web", "--to-revision=1").stdout.strip() == "deployment.apps/web rolled back"
    d = settle(cluster, kubelet, ns, "web")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.25"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "4"
    rss = replica_sets_of(cluster, ns, "web")
    assert len(rss) == 3  # revision 1's ReplicaSet came back as revision 4
    assert rss[-1]["metadata"]["annotations"]["deployment.kubernetes.io/revision-history"] == "1"
    assert [r for r in (rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in rss)] == \
        ["2", "3", "4"]
    assert k("rollout", "undo", "deploy/web", "--to-revision=9", check=False).stderr.strip() == \
        "error: unable to find specified revision 9 in history"
    k("rollout", "undo", "deploy/web")  # back to the previous revision (3)
    d = settle(cluster, kubelet, ns, "web")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.27"
    assert d["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "5"

    assert k("rollout", "pause", "deploy/web").stdout.strip() == "deployment.apps/web paused"
    wait_for(lambda: (get_cond(get(cluster, "-n", ns, "deploy", "web"), "Progressing") or {}).get("reason")
             == "DeploymentPaused", what="Progressing DeploymentPaused")
    p = get_cond(get(cluster, "-n", ns, "deploy", "web"), "Progressing")
    assert (p["status"], p["message"]) == ("Unknown", "Deployment is paused")
    k("set", "image", "deploy/web", "nginx=nginx:1.28")
    wait_for(lambda: get(cluster, "-n", ns, "deploy", "web")["status"].get("observedGeneration")
             == get(cluster, "-n", ns, "deploy", "web")["metadata"]["generation"], what="paused change observed")
    assert len(replica_sets_of(cluster, ns, "web")) == 3, "a paused Deployment rolled out"
    r = k("rollout", "undo", "deploy/web", check=False)
    assert r.returncode != 0
    assert r.stderr.strip() == \
        "error: you cannot rollback a paused deployment; resume it first with 'kubectl rollout resume' and try again"
    assert k("rollout", "resume", "deploy/web").stdout.strip() == "deployment.apps/web resumed"
    wait_for(lambda: len(replica_sets_of(cluster, ns, "web")) == 4, what="the resumed rollout")
    d = settle(cluster, kubelet, ns, "web")
    assert d["spec"]["template"]["spec"]["containers"][0]["image"] == "nginx:1.28"
    assert get_cond(d, "Progressing")["reason"] == "NewReplicaSetAvailable"

    assert k("rollout", "restart", "deploy/web").stdout.strip() == "deployment.apps/web restarted"
    d = settle(cluster, kubelet, ns, "web")
    assert "kubectl.kubernetes.io/restartedAt" in d["spec"]["template"]["metadata"]["annotations"]
    assert len(replica_sets_of(cluster, ns, "web")) == 5
    assert k("rollout", "status", "deploy/web").stdout.strip() == 'deployment "web" successfully rolled out'


def test_rollout_status_reports_progress(cluster, kubelet):
    ns = new_ns(cluster, "deploy-status")
    k = lambda *a, **kw: cluster.kubectl("-n", ns, *a, **kw)  # noqa: E731
    k("create", "deployment", "web", "--image=nginx:1.25", "--replicas=3")
    wait_for(lambda: get(cluster, "-n", ns, "deploy", "web")["status"].get("updatedReplicas") == 3, what="3 updated")
    assert k("rollout", "status", "deploy/web", "--watch=false").stdout.strip() == \
        'Waiting for deployment "web" rollout to finish: 0 of 3 updated replicas are available...'
    r = k("rollout", "status", "deploy/web", "--timeout=1s", check=False)
    assert r.returncode != 0
    settle(cluster, kubelet, ns, "web")
    assert k("rollout", "status", "deploy/web", "--watch=false").stdout.strip() == \
        'deployment "web" successfully rolled out'


def test_revision_history_limit_deletes_oldest_replicasets(cluster, kubelet):
    ns = new_ns(cluster, "deploy-history")
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 1, revisionHistoryLimit=2))
    settle(cluster, kubelet, ns, "web")
    for v in range(2, 6):
        cluster.kubectl("-n", ns, "set", "image", "deploy/web", f"app=nginx:1.{20 + v}")
        settle(cluster, kubelet, ns, "web")
    rss = wait_for(lambda: (lambda r: r if len(r) == 3 else None)(replica_sets_of(cluster, ns, "web")),
                   what="old ReplicaSets beyond the limit deleted")
    assert [rs["metadata"]["annotations"]["deployment.kubernetes.io/revision"] for rs in rss] == ["3", "4", "5"]
    assert [rs["spec"]["replicas"] for rs in rss] == [0, 0, 1]
    lines = [ln.split()[0] for ln in cluster.kubectl("-n", ns, "rollout", "history", "deploy/web").stdout.splitlines()[2:]
             if ln.strip()]
    assert lines == ["3", "4", "5"]


def test_progress_deadline_exceeded(cluster):
    ns = new_ns(cluster, "deploy-deadline")
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 2, progressDeadlineSeconds=2))

    def timed_out() -> dict[str, Any] | None:
        c = get_cond(get(cluster, "-n", ns, "deploy", "web"), "Progressing")
        return c if c and c["reason"] == "ProgressDeadlineExceeded" else None
    c = wait_for(timed_out, 20, "ProgressDeadlineExceeded")
    [rs] = replica_sets_of(cluster, ns, "web")
    assert c["status"] == "False"
    assert c["message"] == f'ReplicaSet "{rs["metadata"]["name"]}" has timed out progressing.'
    r = cluster.kubectl("-n", ns, "rollout", "status", "deploy/web", check=False)
    assert r.returncode != 0
    assert r.stderr.strip() == 'error: deployment "web" exceeded its progress deadline'
    out = cluster.kubectl("-n", ns, "describe", "deploy", "web").stdout
    assert re.search(r"Progressing\s+False\s+ProgressDeadlineExceeded", out)


def test_proportional_scaling_during_a_stuck_rollout(cluster, kubelet):
    """upstream's docs example: 10 replicas, maxSurge 3, maxUnavailable 2, a rollout that cannot progress,
    then a scale to 15: the extra replicas are shared by size (upstream's GetProportion arithmetic)."""
    ns = new_ns(cluster, "deploy-proportional")
    strategy = {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 3, "maxUnavailable": 2}}
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=deployment("web", 10, strategy=strategy))
    settle(cluster, kubelet, ns, "web")
    cluster.kubectl("-n", ns, "set", "image", "deploy/web", "app=nginx:unresolvable")

    def sizes() -> list[int]:
        return [rs["spec"]["replicas"] for rs in replica_sets_of(cluster, ns, "web")]
    # the new ReplicaSet takes the surge (3), the old one gives up maxUnavailable (2), then the
    # surge is filled again (13 pods): (8, 5), and no new pod ever becomes available
    wait_for(lambda: sizes() == [8, 5], what="the rollout to stall at (8, 5)")
    cluster.kubectl("-n", ns, "scale", "deploy/web", "--replicas=15")
    # 18 allowed, 13 there: 5 more, 8*18/13 -> 11 (+3) for the old, 5*18/13 -> 7 (+2) for the new
    wait_for(lambda: sizes() == [11, 7], what="proportional scale to (11, 7)")
    old, new = (rs["metadata"]["name"] for rs in replica_sets_of(cluster, ns, "web"))
    msgs = scaling_messages(cluster, ns, "web")
    assert f"Scaled up replica set {old} from 8 to 11" in msgs
    assert f"Scaled up replica set {new} from 5 to 7" in msgs
    for rs in replica_sets_of(cluster, ns, "web"):
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/desired-replicas"] == "15"
        assert rs["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "18"


# ---- ReplicaSet and ReplicationController on their own ----------------------------------------

def replica_set(name: str, replicas: int, selector: dict[str, str], labels: dict[str, str], **spec: Any) -> str:
    return json.dumps({"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": name},
                       "spec": {"replicas": replicas, "selector": {"matchLabels": selector},
                                "template": {"metadata": {"labels": labels},
                                             "spec": {"containers": [{"name": "app", "image": "nginx"}]}}, **spec}})


def bare_pod(name: str, labels: dict[str, str]) -> str:
    return json.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
                       "spec": {"containers": [{"name": "app", "image": "nginx"}]}})


def test_replicaset_adopts_orphans_and_releases_pods_that_stop_matching(cluster, kubelet):
    ns = new_ns(cluster, "rs-adopt")
    k = lambda *a, **kw: cluster.kubectl("-n", ns, *a, **kw)  # noqa: E731
    for i in range(2):
        k("apply", "-f", "-", input=bare_pod(f"orphan-{i}", {"app": "orphan"}))
    k("apply", "-f", "-", input=replica_set("rs", 3, {"app": "orphan"}, {"app": "orphan", "tier": "web"}))
    rs = get(cluster, "-n", ns, "rs", "rs")

    def adopted() -> list[dict[str, Any]] | None:
        pods = items(cluster, ns, "pods")
        return pods if len(pods) == 3 and all(owned_by(p, rs) for p in pods) else None
    pods = wait_for(adopted, what="two orphans adopted and one pod created")
    names = sorted(p["metadata"]["name"] for p in pods)
    assert names[:2] == ["orphan-0", "orphan-1"] and names[2].startswith("rs-")
    ref = get(cluster, "-n", ns, "pod", "orphan-0")["metadata"]["ownerReferences"]
    assert ref == [{"apiVersion": "apps/v1", "kind": "ReplicaSet", "name": "rs", "uid": rs["metadata"]["uid"],
                    "controller": True, "blockOwnerDeletion": True}]
    # the adopted pods lack the template's tier label: not fully labeled
    wait_for(lambda: get(cluster, "-n", ns, "rs", "rs")["status"].get("fullyLabeledReplicas") == 1,
             what="fullyLabeledReplicas 1")
    assert get(cluster, "-n", ns, "rs", "rs")["status"]["replicas"] == 3
    created = [m for r, m, _ in events(cluster, ns, "ReplicaSet", "rs") if r == "SuccessfulCreate"]
    assert created == [f"Created pod: {names[2]}"]

    k("label", "pod", "orphan-0", "app=other", "--overwrite")
    wait_for(lambda: not get(cluster, "-n", ns, "pod", "orphan-0")["metadata"].get("ownerReferences"),
             what="the relabelled pod released")
    wait_for(lambda: len(items(cluster, ns, "pods", "app=orphan")) == 3, what="a replacement pod")
    assert get(cluster, "-n", ns, "pod", "orphan-0")["metadata"]["labels"] == {"app": "other"}
    # a matching pod controlled by someone else is left alone
    k("label", "pod", "orphan-0", "app=orphan", "--overwrite")
    wait_for(lambda: owned_by(get(cluster, "-n", ns, "pod", "orphan-0"), rs) or None, what="re-adoption")
    wait_for(lambda: len(items(cluster, ns, "pods", "app=orphan")) == 3, what="the surplus pod deleted")


def test_replicaset_deletes_pods_in_upstream_order(cluster, kubelet):
    """ActivePods order: pending before running, not ready before ready, lower pod-deletion-cost first."""
    ns = new_ns(cluster, "rs-order")
    k = lambda *a, **kw: cluster.kubectl("-n", ns, *a, **kw)  # noqa: E731
    k("apply", "-f", "-", input=replica_set("rs", 5, {"app": "x"}, {"app": "x"}))
    pods = wait_for(lambda: (lambda p: p if len(p) == 5 else None)(items(cluster, ns, "pods")), what="5 pods")
    names = [p["metadata"]["name"] for p in pods]
    pending, running_unready, ready_a, ready_b, ready_cheap = names
    kubelet.running(ns, running_unready)
    for n in (ready_a, ready_b, ready_cheap):
        kubelet.ready(ns, n)
    k("annotate", "pod", ready_cheap, "controller.kubernetes.io/pod-deletion-cost=-100")
    wait_for(lambda: get(cluster, "-n", ns, "rs", "rs")["status"].get("readyReplicas") == 3, what="3 ready")
    k("scale", "rs/rs", "--replicas=4")
    wait_for(lambda: pending not in [p["metadata"]["name"] for p in items(cluster, ns, "pods")], what="pending pod first")
    assert len(items(cluster, ns, "pods")) == 4
    k("scale", "rs/rs", "--replicas=3")
    wait_for(lambda: len(items(cluster, ns, "pods")) == 3, what="3 pods")
    assert running_unready not in [p["metadata"]["name"] for p in items(cluster, ns, "pods")]
    k("scale", "rs/rs", "--replicas=2")
    wait_for(lambda: len(items(cluster, ns, "pods")) == 2, what="2 pods")
    assert sorted(p["metadata"]["name"] for p in items(cluster, ns, "pods")) == sorted([ready_a, ready_b])
    deleted = [m for r, m, _ in events(cluster, ns, "ReplicaSet", "rs") if r == "SuccessfulDelete"]
    assert deleted == [f"Deleted pod: {n}" for n in (pending, running_unready, ready_cheap)]


def test_replicaset_min_ready_seconds_and_status(cluster, kubelet):
    ns = new_ns(cluster, "rs-minready")
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=replica_set("rs", 2, {"app": "m"}, {"app": "m"},
                                                                    minReadySeconds=2))
    wait_for(lambda: len(items(cluster, ns, "pods")) == 2, what="2 pods")
    kubelet.ready_all(cluster, ns, "app=m")
    st = wait_for(lambda: (lambda s: s if s.get("readyReplicas") == 2 else None)(
        get(cluster, "-n", ns, "rs", "rs")["status"]), what="2 ready")
    assert st.get("availableReplicas", 0) == 0  # ready, not yet for minReadySeconds
    t0 = time.monotonic()
    wait_for(lambda: get(cluster, "-n", ns, "rs", "rs")["status"].get("availableReplicas") == 2, 10,
             "available after minReadySeconds with no further event")
    assert time.monotonic() - t0 < 5
    table = cluster.kubectl("-n", ns, "get", "rs", "rs").stdout.splitlines()
    assert table[1].split()[:4] == ["rs", "2", "2", "2"]


def test_replication_controller(cluster, kubelet):
    ns = new_ns(cluster, "rc")
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": {"name": "nginx"},
          "spec": {"replicas": 3, "selector": {"app": "nginx"},
                   "template": {"metadata": {"labels": {"app": "nginx"}},
                                "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}}}}
    cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(rc))
    pods = wait_for(lambda: (lambda p: p if len(p) == 3 else None)(items(cluster, ns, "pods")), what="3 pods")
    rc = get(cluster, "-n", ns, "rc", "nginx")
    for p in pods:
        assert re.fullmatch(r"nginx-[bcdfghjklmnpqrstvwxz2456789]{5}", p["metadata"]["name"])
        assert p["metadata"]["ownerReferences"] == [{"apiVersion": "v1", "kind": "ReplicationController",
                                                     "name": "nginx", "uid": rc["metadata"]["uid"],
                                                     "controller": True, "blockOwnerDeletion": True}]
    assert {src for r, _, src in events(cluster, ns, "ReplicationController", "nginx")} == {"replication-controller"}
    kubelet.ready_all(cluster, ns, "app=nginx")
    wait_for(lambda: get(cluster, "-n", ns, "rc", "nginx")["status"] == {
        "replicas": 3, "fullyLabeledReplicas": 3, "readyReplicas": 3, "availableReplicas": 3, "observedGeneration": 1},
        what="rc status")
    cluster.kubectl("-n", ns, "scale", "rc/nginx", "--replicas=1")
    wait_for(lambda: len(items(cluster, ns, "pods")) == 1, what="1 pod")


# ---- end to end on simulated nodes ----------------------------------------------------------

def test_deployment_runs_on_simulated_nodes(cluster):
    """Deployment -> ReplicaSet -> Pods bound by the scheduler, Running and Ready on simulated kubelets."""
    try:
        from pyk8s.sim import Simulator  # noqa: F401
    except ImportError:
        pytest.skip("needs pyk8s.sim.Simulator")
    try:
        import pyk8s.scheduler.runner  # noqa: F401  (the scheduler `pyk8s server` runs in-process)
    except ImportError:
        pytest.skip("needs the in-process scheduler (pyk8s.scheduler.runner)")
    from tests.integration.sim_nodes import simulated_nodes

    ns = new_ns(cluster, "deploy-sim")
    # tainted, so the other tests' pods (played by the test itself) never land here
    with simulated_nodes(cluster.kubeconfig, 3, name_prefix="deploy-sim-", delete_nodes_on_stop=True,
                         taints="pyk8s.io/deploy-sim=true:NoSchedule"):
        _deploy_on_simulated_nodes(cluster, ns)


def _deploy_on_simulated_nodes(cluster, ns: str) -> None:
    try:
        d = json.loads(deployment("web", 6))
        d["spec"]["template"]["spec"]["tolerations"] = [{"key": "pyk8s.io/deploy-sim", "operator": "Exists",
                                                         "effect": "NoSchedule"}]
        cluster.kubectl("-n", ns, "apply", "-f", "-", input=json.dumps(d))
        r = cluster.kubectl("-n", ns, "rollout", "status", "deploy/web", "--timeout=60s", check=False)
        if "waiting" in r.stdout.lower() and r.returncode != 0 and \
                all(not p["spec"].get("nodeName") for p in items(cluster, ns, "pods")):
            pytest.skip("needs the in-process scheduler to bind pods")
        assert r.returncode == 0, r.stdout + r.stderr
        assert r.stdout.strip().endswith('deployment "web" successfully rolled out')
        pods = items(cluster, ns, "pods", "app=web")
        assert len(pods) == 6
        assert all(p["status"]["phase"] == "Running" and p["spec"]["nodeName"].startswith("deploy-sim-")
                   for p in pods)
        cluster.kubectl("-n", ns, "set", "image", "deploy/web", "app=nginx:1.26")
        r = cluster.kubectl("-n", ns, "rollout", "status", "deploy/web", "--timeout=60s")
        assert r.stdout.strip().endswith('deployment "web" successfully rolled out')
        rss = replica_sets_of(cluster, ns, "web")
        assert [rs["spec"]["replicas"] for rs in rss] == [0, 6]
        wait_for(lambda: len(items(cluster, ns, "pods", "app=web")) == 6, what="old pods gone from their nodes")
    finally:
        cluster.kubectl("delete", "ns", ns, "--wait=false", check=False)
