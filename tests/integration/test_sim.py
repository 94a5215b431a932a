"""Simulated nodes (pyk8s sim) against a real server: registration, leases, pod lifecycles, deletion, CLI."""

from __future__ import annotations

import asyncio
import ipaddress
import os
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pyk8s.api.errors import StatusError
from pyk8s.client import Client
from pyk8s.sim import Simulator

NODES = ("", "v1", "nodes")
PODS = ("", "v1", "pods")
LEASES = ("coordination.k8s.io", "v1", "leases")


async def eventually(fn: Callable[[], Awaitable[Any]], timeout: float = 15.0, interval: float = 0.1) -> Any:
    """Poll fn until it returns something truthy (or raise its last AssertionError)."""
    deadline = time.monotonic() + timeout
    last: BaseException | None = None
    while time.monotonic() < deadline:
        try:
            v = await fn()
            if v:
                return v
        except (AssertionError, StatusError) as e:
            last = e
        await asyncio.sleep(interval)
    raise AssertionError(f"not reached in {timeout}s: {last}")


def run_sim(cluster: Any, body: Callable[[Client, Simulator], Awaitable[None]], nodes: int, prefix: str,
            **kw: Any) -> None:
    async def main() -> None:
        c = Client.from_kubeconfig(cluster.kubeconfig)
        sim = Simulator(c, nodes, name_prefix=prefix, delete_nodes_on_stop=True, **kw)
        await sim.start()
        try:
            await sim.wait_nodes_registered(30)
            await body(c, sim)
        finally:
            await sim.stop()
            await c.close()

    asyncio.run(main())


def pod(name: str, node: str, annotations: dict[str, str] | None = None, restart: str = "Always",
        grace: int | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [{"name": "app", "image": "busybox:1.36",
                                            "resources": {"requests": {"cpu": "10m"}}}],
                            "restartPolicy": restart,
                            "nodeSelector": {"kubernetes.io/hostname": node}}
    if grace is not None:
        spec["terminationGracePeriodSeconds"] = grace
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": "default", "annotations": annotations or {}}, "spec": spec}


async def create_bound(c: Client, p: dict[str, Any]) -> dict[str, Any]:
    """Create a pod pinned to a node; bind it ourselves if no scheduler does within a few seconds."""
    created = await c.create(PODS, p)
    name, node = p["metadata"]["name"], p["spec"]["nodeSelector"]["kubernetes.io/hostname"]
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:
        cur = await c.get(PODS, name, "default")
        if cur["spec"].get("nodeName"):
            return cur
        await asyncio.sleep(0.1)
    try:
        await c.request("POST", f"/api/v1/namespaces/default/pods/{name}/binding",
                        {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                         "target": {"apiVersion": "v1", "kind": "Node", "name": node}})
    except StatusError as e:
        if e.code != 409:  # the scheduler got there first
            raise
    return created


def cond(obj: dict[str, Any], typ: str) -> dict[str, Any]:
    return next((c for c in obj["status"].get("conditions") or [] if c["type"] == typ), {})


def test_nodes_register_ready_with_kubelet_fields(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        n = await c.get(NODES, "reg-node-1")
        md, st = n["metadata"], n["status"]
        assert md["labels"]["kubernetes.io/hostname"] == "reg-node-1"
        assert md["labels"]["kubernetes.io/os"] == "linux" and md["labels"]["kubernetes.io/arch"] == "amd64"
        assert md["labels"]["node.pyk8s.io/simulated"] == "true" and md["labels"]["zone"] == "a"
        assert n["spec"]["taints"] == [{"key": "dedicated", "value": "sim", "effect": "NoSchedule"}]
        assert st["capacity"]["cpu"] == "16" and st["capacity"]["memory"] == "64Gi" and st["capacity"]["pods"] == "110"
        assert st["allocatable"] == st["capacity"]
        conds = {x["type"]: x for x in st["conditions"]}
        assert conds["Ready"]["status"] == "True" and conds["Ready"]["reason"] == "KubeletReady"
        assert conds["Ready"]["message"] == "kubelet is posting ready status"
        assert conds["MemoryPressure"]["reason"] == "KubeletHasSufficientMemory"
        assert conds["DiskPressure"]["status"] == "False" and conds["PIDPressure"]["status"] == "False"
        assert conds["NetworkUnavailable"]["status"] == "False"
        assert all(x.get("lastHeartbeatTime") and x.get("lastTransitionTime") for x in st["conditions"])
        addrs = {a["type"]: a["address"] for a in st["addresses"]}
        assert addrs["Hostname"] == "reg-node-1" and ipaddress.ip_address(addrs["InternalIP"]).is_private
        assert st["daemonEndpoints"]["kubeletEndpoint"]["Port"] == 10250
        info = st["nodeInfo"]
        assert info["kubeletVersion"] == "v1.33.1" and info["containerRuntimeVersion"] == "sim://1.0"
        assert info["operatingSystem"] == "linux" and info["architecture"] == "amd64"
        assert info["machineID"] and info["systemUUID"] and info["bootID"] and info["osImage"] and info["kernelVersion"]
        # distinct, deterministic addresses per node
        other = await c.get(NODES, "reg-node-0")
        assert other["status"]["addresses"][0]["address"] != addrs["InternalIP"]

        # the Lease follows the Node's registration (its own write, owner reference to the Node's uid)
        lease = await eventually(lambda: c.get(LEASES, "reg-node-1", "kube-node-lease"))
        assert lease["spec"]["holderIdentity"] == "reg-node-1" and lease["spec"]["leaseDurationSeconds"] == 40
        assert lease["metadata"]["ownerReferences"][0]["uid"] == md["uid"]

        out = (await asyncio.to_thread(cluster.kubectl, "get", "nodes", "-l", "zone=a")).stdout.splitlines()
        assert out[0].split() == ["NAME", "STATUS", "ROLES", "AGE", "VERSION"]
        rows = {r.split()[0]: r.split() for r in out[1:]}
        assert set(rows) == {"reg-node-0", "reg-node-1", "reg-node-2"}
        assert rows["reg-node-1"][1:3] == ["Ready", "<none>"] and rows["reg-node-1"][4] == "v1.33.1"

    run_sim(cluster, body, 3, "reg-node-", cpu="16", memory="64Gi", labels="zone=a",
            taints="dedicated=sim:NoSchedule")


def test_leases_renew_and_heartbeat_stops(cluster):
    async def renew_time(c: Client, name: str) -> str:
        return (await c.get(LEASES, name, "kube-node-lease"))["spec"]["renewTime"]

    async def body(c: Client, sim: Simulator) -> None:
        # a registered node's Lease is written just after its Node
        first = await eventually(lambda: renew_time(c, "hb-node-0"), 5)

        async def renewed() -> bool:
            return await renew_time(c, "hb-node-0") > first
        await eventually(renewed, 5)

        # API: stop one node's heartbeat; its lease freezes while the other's keeps moving
        sim.stop_heartbeat("hb-node-0")
        await asyncio.sleep(0.5)
        frozen = await renew_time(c, "hb-node-0")
        other = await renew_time(c, "hb-node-1")
        await asyncio.sleep(2.5)
        assert await renew_time(c, "hb-node-0") == frozen
        assert await renew_time(c, "hb-node-1") > other
        sim.resume_heartbeat("hb-node-0")

        async def resumed() -> bool:
            return await renew_time(c, "hb-node-0") > frozen
        await eventually(resumed, 5)

        # the node annotation does the same
        await c.patch(NODES, "hb-node-1", {"metadata": {"annotations": {"sim.pyk8s.io/heartbeat": "false"}}})
        await asyncio.sleep(0.8)
        frozen = await renew_time(c, "hb-node-1")
        await asyncio.sleep(2.5)
        assert await renew_time(c, "hb-node-1") == frozen
        assert sim.stats()["ready"] == 1
        await c.patch(NODES, "hb-node-1", {"metadata": {"annotations": {"sim.pyk8s.io/heartbeat": None}}})

        async def resumed1() -> bool:
            return await renew_time(c, "hb-node-1") > frozen
        await eventually(resumed1, 5)

        # node status heartbeats move lastHeartbeatTime (status_period=2 s here)
        before = cond(await c.get(NODES, "hb-node-0"), "Ready")["lastHeartbeatTime"]

        async def heartbeat() -> bool:
            return cond(await c.get(NODES, "hb-node-0"), "Ready")["lastHeartbeatTime"] > before
        await eventually(heartbeat, 6)

    run_sim(cluster, body, 2, "hb-node-", lease_period=1.0, status_period=2.0)


def test_pod_reaches_running_through_container_creating(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        seen: list[tuple[str, str]] = []

        async def watch() -> None:
            async for ev in c.watch(PODS, "default", field_selector="metadata.name=run-1", timeout_seconds=30):
                o = ev["object"]
                cs = (o.get("status") or {}).get("containerStatuses") or []
                state = next(iter((cs[0].get("state") or {}).items()), ("", {})) if cs else ("", {})
                seen.append((o["status"].get("phase", ""), state[1].get("reason") or state[0]))
                if o["status"].get("phase") == "Running":
                    return
        w = asyncio.create_task(watch())
        await asyncio.sleep(0.3)
        await create_bound(c, pod("run-1", "run-node-1"))
        await asyncio.wait_for(w, 20)
        assert ("Pending", "ContainerCreating") in seen and seen[-1] == ("Running", "running"), seen

        p = await c.get(PODS, "run-1", "default")
        st = p["status"]
        node = await c.get(NODES, "run-node-1")
        assert st["phase"] == "Running" and st["hostIP"] == node["status"]["addresses"][0]["address"]
        cidr = node["spec"].get("podCIDR")
        assert st["podIP"] and st["podIPs"] == [{"ip": st["podIP"]}]
        if cidr:
            assert ipaddress.ip_address(st["podIP"]) in ipaddress.ip_network(cidr)
        assert st["startTime"] and st["qosClass"] == "Burstable"
        assert [x["type"] for x in st["conditions"]] == \
            ["PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "PodScheduled"]
        assert all(x["status"] == "True" and x["lastTransitionTime"] for x in st["conditions"])
        cs = st["containerStatuses"][0]
        assert cs["name"] == "app" and cs["ready"] and cs["started"] and cs["restartCount"] == 0
        assert cs["state"]["running"]["startedAt"] and cs["image"] == "docker.io/library/busybox:1.36"
        assert cs["containerID"].startswith("sim://") and cs["imageID"].startswith("docker.io/library/busybox@sha256:")

        out = (await asyncio.to_thread(cluster.kubectl, "get", "pod", "run-1", "-o", "wide")).stdout.splitlines()
        row = out[1].split()
        assert row[1:3] == ["1/1", "Running"] and row[5] == st["podIP"] and row[6] == "run-node-1"

        # a second pod on the same node gets another address of the node's range
        await create_bound(c, pod("run-2", "run-node-1"))

        async def running2() -> dict[str, Any]:
            p2 = await c.get(PODS, "run-2", "default")
            return p2 if p2["status"].get("phase") == "Running" else {}
        p2 = await eventually(running2)
        assert p2["status"]["podIP"] != st["podIP"]
        for n in ("run-1", "run-2"):
            await c.delete(PODS, n, "default", grace_period=0)

    run_sim(cluster, body, 2, "run-node-", creating_seconds=0.5)


def test_readiness_annotation(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        await create_bound(c, pod("unready-1", "rd-node-0", {"sim.pyk8s.io/ready": "false"}))

        async def running() -> dict[str, Any]:
            p = await c.get(PODS, "unready-1", "default")
            return p if p["status"].get("phase") == "Running" else {}
        p = await eventually(running)
        assert cond(p, "Ready")["status"] == "False" and cond(p, "Ready")["reason"] == "ContainersNotReady"
        assert cond(p, "ContainersReady")["status"] == "False"
        assert p["status"]["containerStatuses"][0]["ready"] is False
        assert p["status"]["containerStatuses"][0]["started"] is True
        await c.patch(PODS, "unready-1", {"metadata": {"annotations": {"sim.pyk8s.io/ready": "true"}}}, "default")

        async def ready() -> bool:
            return cond(await c.get(PODS, "unready-1", "default"), "Ready").get("status") == "True"
        await eventually(ready)
        await c.delete(PODS, "unready-1", "default", grace_period=0)

    run_sim(cluster, body, 1, "rd-node-")


def test_exit_annotations_succeeded_failed_and_crashloop(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        await create_bound(c, pod("ok-1", "ex-node-0", {"sim.pyk8s.io/run-seconds": "1",
                                                         "sim.pyk8s.io/exit-code": "0"}, restart="Never"))
        await create_bound(c, pod("bad-1", "ex-node-0", {"sim.pyk8s.io/run-seconds": "1",
                                                          "sim.pyk8s.io/exit-code": "3"}, restart="Never"))
        await create_bound(c, pod("crash-1", "ex-node-1", {"sim.pyk8s.io/run-seconds": "0.5",
                                                            "sim.pyk8s.io/exit-code": "1"}, restart="OnFailure"))

        async def phase(name: str, want: str) -> dict[str, Any]:
            p = await c.get(PODS, name, "default")
            return p if p["status"].get("phase") == want else {}

        ok = await eventually(lambda: phase("ok-1", "Succeeded"))
        t = ok["status"]["containerStatuses"][0]["state"]["terminated"]
        assert t["exitCode"] == 0 and t["reason"] == "Completed" and t["startedAt"] and t["finishedAt"]
        assert cond(ok, "Ready")["status"] == "False" and cond(ok, "Ready")["reason"] == "PodCompleted"
        bad = await eventually(lambda: phase("bad-1", "Failed"))
        t = bad["status"]["containerStatuses"][0]["state"]["terminated"]
        assert t["exitCode"] == 3 and t["reason"] == "Error"
        assert cond(bad, "Ready")["reason"] == "PodFailed"
        out = (await asyncio.to_thread(cluster.kubectl, "get", "pods", "ok-1", "bad-1")).stdout
        assert "Completed" in out and "Error" in out

        # OnFailure + non-zero exit: CrashLoopBackOff, then running again with restartCount 1
        async def crashloop() -> dict[str, Any]:
            p = await c.get(PODS, "crash-1", "default")
            cs = (p["status"].get("containerStatuses") or [{}])[0]
            return p if (cs.get("state") or {}).get("waiting", {}).get("reason") == "CrashLoopBackOff" else {}
        p = await eventually(crashloop)
        cs = p["status"]["containerStatuses"][0]
        assert p["status"]["phase"] == "Running" and cs["lastState"]["terminated"]["exitCode"] == 1
        assert cs["ready"] is False and cond(p, "Ready")["status"] == "False"

        async def restarted() -> dict[str, Any]:
            p = await c.get(PODS, "crash-1", "default")
            cs = (p["status"].get("containerStatuses") or [{}])[0]
            return p if cs.get("restartCount", 0) >= 1 and "running" in (cs.get("state") or {}) else {}
        p = await eventually(restarted)
        cs = p["status"]["containerStatuses"][0]
        assert cs["lastState"]["terminated"]["reason"] == "Error" and cs["lastState"]["terminated"]["containerID"] \
            != cs["containerID"]
        for n in ("ok-1", "bad-1", "crash-1"):
            await c.delete(PODS, n, "default", grace_period=0)

    run_sim(cluster, body, 2, "ex-node-", crash_backoff=1.0)


def test_graceful_deletion_completes(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        await create_bound(c, pod("del-1", "del-node-0", grace=30))
        await create_bound(c, pod("del-2", "del-node-0", grace=1))

        async def running(name: str) -> bool:
            return (await c.get(PODS, name, "default"))["status"].get("phase") == "Running"
        await eventually(lambda: running("del-1"))
        await eventually(lambda: running("del-2"))

        async def gone(name: str) -> bool:
            return await c.get_or_none(PODS, name, "default") is None

        # grace 30 s: the pod stays terminating for the simulator's delay (1 s here), then goes
        t0 = time.monotonic()
        await c.delete(PODS, "del-1", "default")
        p = await c.get(PODS, "del-1", "default")
        assert p["metadata"]["deletionTimestamp"] and p["metadata"]["deletionGracePeriodSeconds"] == 30
        await eventually(lambda: gone("del-1"), 10)
        assert 0.9 <= time.monotonic() - t0 < 8

        # a grace period shorter than the delay wins: min(grace, delay)
        sim.delete_delay = (20.0, 20.0)
        t0 = time.monotonic()
        await c.delete(PODS, "del-2", "default")
        await eventually(lambda: gone("del-2"), 10)
        assert time.monotonic() - t0 < 8

    run_sim(cluster, body, 1, "del-node-", delete_delay=(1.0, 1.0))


def test_silent_node_leaves_pods_alone(cluster):
    async def body(c: Client, sim: Simulator) -> None:
        sim.stop_heartbeat("quiet-node-0")
        await create_bound(c, pod("quiet-1", "quiet-node-0"))
        await asyncio.sleep(1.5)
        assert (await c.get(PODS, "quiet-1", "default"))["status"].get("phase") == "Pending"
        sim.resume_heartbeat("quiet-node-0")

        async def running() -> bool:
            return (await c.get(PODS, "quiet-1", "default"))["status"].get("phase") == "Running"
        await eventually(running)
        await c.delete(PODS, "quiet-1", "default", grace_period=0)

    run_sim(cluster, body, 1, "quiet-node-")


def test_cli_runs_until_interrupted(cluster):
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", "3", "--name-prefix", "cli-node-",
                             "--labels", "pool=cli", "--taints", "sim=true:NoExecute", "--cleanup"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 30
        rows: list[str] = []
        while time.monotonic() < deadline:
            out = cluster.kubectl("get", "nodes", "-l", "pool=cli", "--no-headers").stdout.splitlines()
            rows = [r for r in out if " Ready " in r]
            if len(rows) == 3:
                break
            time.sleep(0.3)
        assert len(rows) == 3, rows
        taints = cluster.kubectl("get", "node", "cli-node-2", "-o", "jsonpath={.spec.taints}").stdout
        assert '"effect":"NoExecute"' in taints and '"key":"sim"' in taints
    finally:
        proc.send_signal(signal.SIGINT)
        out, _ = proc.communicate(timeout=30)
    assert proc.returncode == 0, out
    assert "all 3 nodes registered" in out
    left = cluster.kubectl("get", "nodes", "-l", "pool=cli", "--no-headers").stdout.strip()
    assert left == "", left


def test_node_lifecycle_marks_silent_node_and_it_recovers(tmp_path):
    """With the node lifecycle controller's grace shortened to 3 s: silence -> NotReady + unreachable taints;
    heartbeats again -> Ready, the way a restarted kubelet corrects the controller's Unknown."""
    from tests.cluster import Cluster
    from tests.conftest import require

    cl = Cluster(str(tmp_path / "data"), env={"PYK8S_NODE_MONITOR_GRACE_PERIOD": "3"}).start()
    try:
        async def body(c: Client, sim: Simulator) -> None:
            async def ready_status() -> str:
                return cond(await c.get(NODES, "lc-node-0"), "Ready").get("status", "")

            sim.stop_heartbeat("lc-node-0")
            try:
                await eventually(lambda: _is(ready_status, "Unknown"), 20)
            except AssertionError:
                require("node lifecycle controller (marks silent nodes Unknown)", False)
            async def tainted() -> dict[str, Any]:
                n = await c.get(NODES, "lc-node-0")
                return n if any(t["key"] == "node.kubernetes.io/unreachable" for t in n["spec"].get("taints") or []) \
                    else {}
            n = await eventually(tainted, 20)
            net_since = cond(n, "NetworkUnavailable")["lastTransitionTime"]
            sim.resume_heartbeat("lc-node-0")
            await eventually(lambda: _is(ready_status, "True"), 20)
            n = await c.get(NODES, "lc-node-0")
            assert cond(n, "Ready")["reason"] == "KubeletReady"
            assert cond(n, "NetworkUnavailable")["lastTransitionTime"] == net_since  # unchanged status keeps its time

            async def untainted() -> bool:
                n = await c.get(NODES, "lc-node-0")
                return not any(t["key"].startswith("node.kubernetes.io/") for t in n["spec"].get("taints") or [])
            await eventually(untainted, 20)

        run_sim(cl, body, 2, "lc-node-", lease_period=1.0)
    finally:
        cl.stop()


async def _is(fn: Callable[[], Awaitable[str]], want: str) -> bool:
    return await fn() == want
