"""Pure parts of the node simulator: flag parsing, images, pod status per step, timer wheel, writer."""

from __future__ import annotations

import asyncio
import ipaddress
import time

import pytest

from pyk8s.sim import TimerWheel, Writer
from pyk8s.sim.nodes import NodeTemplate, new_sim_node, node_object, parse_labels, parse_taints
from pyk8s.sim.pods import SimPod, exit_plan, normalize_image, pod_status, restarts_after_exit


def test_parse_labels_and_taints():
    assert parse_labels(["a=1,b=2", "c"]) == {"a": "1", "b": "2", "c": ""}
    assert parse_taints("k=v:NoSchedule,x:NoExecute") == [
        {"key": "k", "value": "v", "effect": "NoSchedule"}, {"key": "x", "effect": "NoExecute"}]
    with pytest.raises(ValueError):
        parse_taints("k=v:Sometimes")


def test_normalize_image():
    assert normalize_image("busybox") == "docker.io/library/busybox:latest"
    assert normalize_image("nginx:1.27") == "docker.io/library/nginx:1.27"
    assert normalize_image("bitnami/redis") == "docker.io/bitnami/redis:latest"
    assert normalize_image("registry.k8s.io/pause:3.10") == "registry.k8s.io/pause:3.10"
    assert normalize_image("localhost:5000/x") == "localhost:5000/x:latest"
    assert normalize_image("a/b@sha256:00") == "docker.io/a/b@sha256:00"


def test_node_object_and_addresses():
    n0, n1 = new_sim_node("n-0", 0), new_sim_node("n-1", 1)
    obj = node_object(NodeTemplate(labels={"x": "y"}, taints=parse_taints("t:NoSchedule")), n1, "2025-01-01T00:00:00Z")
    assert obj["metadata"]["labels"]["kubernetes.io/hostname"] == "n-1" and obj["metadata"]["labels"]["x"] == "y"
    assert obj["spec"]["taints"] == [{"key": "t", "effect": "NoSchedule"}]
    assert obj["status"]["allocatable"] == obj["status"]["capacity"]
    assert n0.internal_ip != n1.internal_ip and new_sim_node("n-1", 1).internal_ip == n1.internal_ip
    # no podCIDR from the API: a per-node fake /24; IPs skip the bridge's .1 and are not reused while held
    assert n0.cidr() != n1.cidr()
    ips = [n0.allocate_ip() for _ in range(3)]
    assert len(set(ips)) == 3 and all(ipaddress.ip_address(i) in n0.cidr() for i in ips)
    assert not ips[0].endswith(".1")
    n1.pod_cidr = "10.244.7.0/24"
    assert n1.allocate_ip() == "10.244.7.2"


def _sp(stage: str, **kw) -> SimPod:
    pod = {"metadata": {"name": "p", "namespace": "ns", "uid": "u1"},
           "spec": {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": kw.pop("policy", "Always")},
           "status": {"phase": "Pending", "conditions": [{"type": "PodScheduled", "status": "True",
                                                          "lastTransitionTime": "2025-01-01T00:00:00Z"}]}}
    now = time.time()
    return SimPod(uid="u1", namespace="ns", name="p", node="n", pod=pod, stage=stage, start_time=now - 5,
                  started_at=now - 4, finished_at=now, pod_ip="10.0.0.2", **kw)


def test_pod_status_steps():
    st = pod_status(_sp("creating"), "10.10.0.1", time.time())
    assert st["phase"] == "Pending" and "podIP" not in st
    assert st["containerStatuses"][0]["state"] == {"waiting": {"reason": "ContainerCreating"}}
    assert [c["type"] for c in st["conditions"]][-1] == "PodScheduled"

    st = pod_status(_sp("running"), "10.10.0.1", time.time())
    assert st["phase"] == "Running" and st["podIP"] == "10.0.0.2"
    assert all(c["status"] == "True" for c in st["conditions"])

    sp = _sp("backoff", exit_code=2, restarts=0, backoff=10)
    st = pod_status(sp, "10.10.0.1", time.time())
    cs = st["containerStatuses"][0]
    assert st["phase"] == "Running" and cs["state"]["waiting"]["reason"] == "CrashLoopBackOff"
    assert cs["lastState"]["terminated"]["exitCode"] == 2 and cs["lastState"]["terminated"]["reason"] == "Error"
    assert "back-off 10s restarting failed container=c pod=p_ns(u1)" == cs["state"]["waiting"]["message"]

    st = pod_status(_sp("exited", exit_code=0), "10.10.0.1", time.time())
    assert st["phase"] == "Succeeded"
    assert st["containerStatuses"][0]["state"]["terminated"]["reason"] == "Completed"
    st = pod_status(_sp("exited", exit_code=7), "10.10.0.1", time.time())
    assert st["phase"] == "Failed" and st["containerStatuses"][0]["state"]["terminated"]["exitCode"] == 7


def test_condition_times_move_only_on_change():
    sp = _sp("running")
    t1 = {c["type"]: c["lastTransitionTime"] for c in pod_status(sp, "h", time.time())["conditions"]}
    sp.ready = False
    later = time.time() + 5
    t2 = {c["type"]: c["lastTransitionTime"] for c in pod_status(sp, "h", later)["conditions"]}
    assert t2["Initialized"] == t1["Initialized"] and t2["Ready"] != t1["Ready"]


def test_exit_plan_and_restart_policy():
    p = {"metadata": {"annotations": {"sim.pyk8s.io/run-seconds": "2.5", "sim.pyk8s.io/exit-code": "1"}}}
    assert exit_plan(p) == (2.5, 1) and exit_plan({"metadata": {}}) is None
    assert exit_plan({"metadata": {"annotations": {"sim.pyk8s.io/exit-code": "0"}}}) == (0.0, 0)
    assert restarts_after_exit({"spec": {}}, 0)
    assert restarts_after_exit({"spec": {"restartPolicy": "OnFailure"}}, 1)
    assert not restarts_after_exit({"spec": {"restartPolicy": "OnFailure"}}, 0)
    assert not restarts_after_exit({"spec": {"restartPolicy": "Never"}}, 1)


def test_timer_wheel_fires_in_order_and_replaces():
    async def main() -> list[str]:
        w = TimerWheel(tick=0.01)
        w.start()
        fired: list[str] = []
        w.schedule("a", 0.05, lambda: fired.append("a"))
        w.schedule("b", 0.02, lambda: fired.append("b"))
        w.schedule("c", 0.03, lambda: fired.append("c-old"))
        w.schedule("c", 0.06, lambda: fired.append("c"))  # replaces
        w.schedule("d", 0.02, lambda: fired.append("d"))
        w.cancel("d")
        await asyncio.sleep(0.15)
        await w.stop()
        return fired

    assert asyncio.run(main()) == ["b", "a", "c"]


def test_writer_coalesces_and_serialises_per_key():
    async def main() -> tuple[list[str], int]:
        w = Writer(concurrency=4)
        log: list[str] = []
        active: dict[str, int] = {}
        overlap = 0

        def job(key: str, tag: str):
            async def run() -> None:
                nonlocal overlap
                active[key] = active.get(key, 0) + 1
                overlap = max(overlap, active[key])
                await asyncio.sleep(0.02)
                log.append(tag)
                active[key] -= 1
            return run

        w.submit("k", job("k", "k1"))
        w.submit("k", job("k", "k2"))  # replaces the queued k1
        w.start()
        await asyncio.sleep(0.005)
        w.submit("k", job("k", "k3"))  # k2 runs: k3 waits for it, never alongside
        w.submit("j", job("j", "j1"), high=True)
        await w.drain(2)
        await w.stop()
        return log, overlap

    log, overlap = asyncio.run(main())
    assert "k1" not in log and log.index("k2") < log.index("k3") and "j1" in log and overlap == 1
