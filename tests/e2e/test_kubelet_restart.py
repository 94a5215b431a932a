"""Kubelet restarts (pods keep running and are adopted), static pods with mirror pods, node-pressure eviction."""

from __future__ import annotations

import os
import time

import pytest

from tests.e2e.kubelet_harness import (
    IMAGE,
    Env,
    busybox_pod,
    condition,
    container,
    container_status,
    requirements,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-restart"), pytest.mark.timeout(150)]

COUNTER = "i=0; trap 'exit 0' TERM; while true; do i=$((i+1)); echo tick $i; sleep 0.5; done"


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-restart")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


def _runtime_uids(env):
    import json

    out = set()
    d = os.path.join(env.data, "runtime", "containers")
    for cid in os.listdir(d):
        try:
            with open(os.path.join(d, cid, "meta.json")) as f:
                out.add(json.load(f)["config"]["labels"].get("io.kubernetes.pod.uid"))
        except FileNotFoundError:
            continue  # being created or removed by the kubelet right now
    return out


def test_restart_adopts_running_pods(env):
    env.create(busybox_pod("keeper", COUNTER))
    env.create(busybox_pod("deleted-while-down", COUNTER))
    env.create(busybox_pod("forced-while-down", COUNTER))
    keeper = env.wait_running("keeper")
    env.wait_running("deleted-while-down")
    forced_uid = env.wait_running("forced-while-down")["metadata"]["uid"]
    cid = container_status(keeper, "c")["containerID"]
    for stop in ("stop", "kill9"):
        getattr(env.agent, stop)()
        if stop == "stop":
            env.delete_pod("deleted-while-down", 5)  # graceful: waits for the (absent) kubelet
            env.delete_pod("forced-while-down", 0)  # forced: gone from the API at once
            assert env.pod("deleted-while-down")["metadata"]["deletionTimestamp"]
        before = len(env.log_text(keeper, "c"))
        time.sleep(1.5)
        assert len(env.log_text(keeper, "c")) > before  # still running without a kubelet
        env.agent.start()
        k = env.wait_running("keeper")
        c = container_status(k, "c")
        assert c["containerID"] == cid and c["restartCount"] == 0 and c["ready"]
        lines = env.log_text(k, "c")
        assert lines[0] == "tick 1" and len(lines) > before  # never restarted
        if stop == "stop":
            env.wait_gone("deleted-while-down", 20)
            env.wait(lambda: forced_uid not in _runtime_uids(env), 20, "orphaned containers removed")
    assert condition(env.pod("keeper"), "Ready")["status"] == "True"


def test_static_pod_and_mirror(env):
    manifests = os.path.join(env.data, "manifests")
    path = os.path.join(manifests, "static-web.yaml")
    with open(path, "w") as f:
        f.write(f"""apiVersion: v1
kind: Pod
metadata:
  name: static-web
  labels: {{app: static}}
spec:
  containers:
  - name: web
    image: {IMAGE}
    imagePullPolicy: IfNotPresent
    command: ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 0.2; done"]
""")
    name = f"static-web-{env.node}"
    m = env.wait_pod(name, lambda p: p["status"].get("phase") == "Running", 30, what="mirror pod running")
    ann = m["metadata"]["annotations"]
    assert ann["kubernetes.io/config.source"] == "file" and ann["kubernetes.io/config.mirror"] == ann["kubernetes.io/config.hash"]
    assert m["metadata"]["uid"] != ann["kubernetes.io/config.hash"]
    owner = m["metadata"]["ownerReferences"][0]
    assert (owner["kind"], owner["name"]) == ("Node", env.node)
    cid = container_status(m, "web")["containerID"]
    assert condition(m, "Ready")["status"] == "True"
    # deleting the mirror does not touch the static pod: the kubelet makes a new mirror
    env.api("DELETE", f"/api/v1/namespaces/default/pods/{name}")
    m2 = env.wait_pod(name, lambda p: p["metadata"]["uid"] != m["metadata"]["uid"]
                      and p["status"].get("phase") == "Running", 30, what="mirror re-created")
    assert container_status(m2, "web")["containerID"] == cid
    os.unlink(path)
    env.wait_gone(name, 30)
    env.wait(lambda: ann["kubernetes.io/config.hash"] not in _runtime_uids(env), 20, "static pod stopped")


def test_node_pressure_eviction(env):
    env.delete_pod("keeper", 2)
    env.create(busybox_pod("besteffort", COUNTER))
    env.create(busybox_pod("burstable", "", containers=[container(
        "c", COUNTER, resources={"requests": {"memory": "512Mi", "cpu": "10m"}})]))
    env.wait_running("besteffort")
    env.wait_running("burstable")
    env.wait_gone("keeper")
    env.agent.stop()
    # a threshold above the machine's memory: the node is under memory pressure at once
    env.agent.extra = ["--eviction-hard", "memory.available<4Ei", "--eviction-pressure-transition-period", "5"]
    env.agent.start()
    try:
        p = env.wait_pod("besteffort", lambda p: p["status"].get("reason") == "Evicted", 30, what="eviction")
        assert p["status"]["phase"] == "Failed"
        msg = p["status"]["message"]
        assert msg.startswith("The node was low on resource: memory. Threshold quantity: 4Ei, available: "), msg
        assert "Container c was using" in msg and "request is 0, has larger consumption of memory." in msg
        dt = condition(p, "DisruptionTarget")
        assert (dt["status"], dt["reason"]) == ("True", "TerminationByKubelet")
        assert ("Evicted", msg) in [(e["reason"], e["message"]) for e in env.events("besteffort")]
        # the Burstable pod using less than it requests goes after the BestEffort one
        b = env.pod("burstable")
        assert b["status"].get("reason") != "Evicted" or \
            b["status"]["conditions"] and condition(b, "DisruptionTarget")["lastTransitionTime"] >= \
            dt["lastTransitionTime"]
        n = env.wait(lambda: condition(env.node_obj(), "MemoryPressure").get("status") == "True" and env.node_obj(),
                     20, "MemoryPressure")
        assert condition(n, "MemoryPressure")["reason"] == "KubeletHasInsufficientMemory"
        # the scheduler keeps pods off the tainted node; one bound directly is turned away by the kubelet
        env.create(busybox_pod("rejected", "sleep 3600", nodeName=env.node))
        r = env.wait_pod("rejected", lambda p: p["status"].get("phase") == "Failed", 20)
        assert (r["status"]["reason"], r["status"]["message"]) == \
            ("Evicted", "Pod was rejected: The node had condition: [MemoryPressure]. ")
        assert "containerStatuses" not in r["status"]
    finally:
        env.agent.stop()
        env.agent.extra = []
        env.agent.start()
    env.wait(lambda: condition(env.node_obj(), "MemoryPressure").get("status") == "False", 30, "pressure gone")
