"""Node lifecycle (health, taints, taint-based eviction) and pod GC through a real server.

The server runs with a 3 s node monitor grace period and a short pod GC period and
quarantine (set through the controllers' PYK8S_* environment options). Nodes here are
Node objects whose Lease a test "kubelet" thread renews every second, as a kubelet does
every 10 s; stopping it is what stopping a kubelet looks like to the control plane.
"""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.integration.test_gc import get_or_none, req, wait_for

NS = "default"
PODS = f"/api/v1/namespaces/{NS}/pods"
MERGE = "application/merge-patch+json"
NODES = ("", "v1", "nodes")
LEASES = ("coordination.k8s.io", "v1", "leases")


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-nlc")), env={
        "PYK8S_NODE_MONITOR_GRACE_PERIOD": "3", "PYK8S_NODE_STARTUP_GRACE_PERIOD": "4",
        "PYK8S_NODE_EVICTION_RATE": "10",
        "PYK8S_PODGC_PERIOD": "0.5", "PYK8S_PODGC_QUARANTINE": "1", "PYK8S_TERMINATED_POD_GC_THRESHOLD": "5"})
    c.start()
    yield c
    c.stop()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _micro_now() -> str:
    t = time.time()
    return time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + f".{int(t % 1 * 1e6):06d}Z"


class Kubelets:
    """Fake kubelets: register nodes, post Ready, renew Leases until stopped."""

    def __init__(self, c: Cluster) -> None:
        self.c = c
        self.active: set[str] = set()
        self.reaping: set[str] = set()  # nodes whose terminating pods the fake kubelet finishes
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()
        from pyk8s.client import Client

        self.client = Client.from_kubeconfig(c.kubeconfig)
        self.task = asyncio.run_coroutine_threadsafe(self._beat(), self.loop)

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(30)

    async def _post(self, name: str, ready: str = "True") -> None:
        conds = [{"type": t, "status": "False", "reason": f"KubeletHas{r}", "message": m,
                  "lastHeartbeatTime": _now(), "lastTransitionTime": _now()}
                 for t, r, m in (("MemoryPressure", "SufficientMemory", "kubelet has sufficient memory available"),
                                 ("DiskPressure", "NoDiskPressure", "kubelet has no disk pressure"),
                                 ("PIDPressure", "SufficientPID", "kubelet has sufficient PID available"))]
        conds.append({"type": "Ready", "status": ready, "reason": "KubeletReady" if ready == "True" else "KubeletNotReady",
                      "message": "kubelet is posting ready status" if ready == "True" else "container runtime is down",
                      "lastHeartbeatTime": _now(), "lastTransitionTime": _now()})
        await self.client.patch(NODES, name, {"status": {"conditions": conds}}, sub="status")

    async def _renew(self, name: str) -> None:
        ns = "kube-node-lease"
        try:
            await self.client.patch(LEASES, name, {"spec": {"renewTime": _micro_now()}}, ns)
        except Exception:
            await self.client.create(LEASES, {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                                              "metadata": {"name": name},
                                              "spec": {"holderIdentity": name, "leaseDurationSeconds": 40,
                                                       "renewTime": _micro_now()}}, ns)

    async def _beat(self) -> None:
        while True:
            for n in list(self.active):
                try:
                    await self._renew(n)
                    if n in self.reaping:
                        await self._reap(n)
                except Exception:
                    pass
            await asyncio.sleep(0.5)

    async def _reap(self, name: str) -> None:
        """What a kubelet does with a pod being deleted: stop it, then delete it for good."""
        pods = await self.client.list(("", "v1", "pods"), field_selector=f"spec.nodeName={name}")
        for p in pods.get("items") or []:
            md = p["metadata"]
            if md.get("deletionTimestamp"):
                await self.client.delete_ignore_missing(("", "v1", "pods"), md["name"], md["namespace"],
                                                        grace_period=0)

    def add(self, name: str, labels: dict[str, str] | None = None) -> None:
        async def go() -> None:
            await self.client.create(NODES, {"apiVersion": "v1", "kind": "Node",
                                             "metadata": {"name": name, "labels": labels or {}}})
            await self._renew(name)
            await self._post(name)

        self._run(go())
        self.active.add(name)

    def stop(self, name: str) -> None:
        self.active.discard(name)

    def resume(self, name: str, ready: str = "True") -> None:
        self._run(self._renew(name))
        self._run(self._post(name, ready))
        self.active.add(name)

    def post(self, name: str, ready: str) -> None:
        self._run(self._post(name, ready))

    def close(self) -> None:
        self.task.cancel()
        self._run(self.client.close())
        self.loop.call_soon_threadsafe(self.loop.stop)


@pytest.fixture(scope="module")
def kubelets(cluster):
    k = Kubelets(cluster)
    yield k
    k.close()


def pod(c: Cluster, name: str, node_name: str, tolerations: list[dict[str, Any]] | None = None,
        ready: bool = True) -> dict[str, Any]:
    wait_for(lambda: get_or_none(c, f"/api/v1/namespaces/{NS}/serviceaccounts/default"), what="default SA")
    spec: dict[str, Any] = {"nodeName": node_name, "containers": [{"name": "c", "image": "nginx"}]}
    if tolerations is not None:
        spec["tolerations"] = tolerations
    p = req(c, "POST", PODS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name}, "spec": spec})
    req(c, "PATCH", f"{PODS}/{name}/status", {"status": {"phase": "Running", "podIP": "10.244.9.9", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False", "lastTransitionTime": _now()}]}}, MERGE)
    return p


def taints(c: Cluster, name: str) -> list[tuple[str, str]]:
    n = get_or_none(c, f"/api/v1/nodes/{name}")
    return sorted((t["key"], t["effect"]) for t in (n.get("spec") or {}).get("taints") or [])


def conditions(c: Cluster, name: str) -> dict[str, dict[str, Any]]:
    n = get_or_none(c, f"/api/v1/nodes/{name}")
    return {x["type"]: x for x in (n.get("status") or {}).get("conditions") or []}


def events(c: Cluster, reason: str) -> list[dict[str, Any]]:
    return req(c, "GET", f"/api/v1/events?fieldSelector=reason%3D{reason}")["items"]


UNREACH = "node.kubernetes.io/unreachable"


def test_silent_node_becomes_unknown_tainted_and_its_pods_evicted(cluster, kubelets):
    for n in ("nl-a", "nl-b", "nl-c"):
        kubelets.add(n)
    wait_for(lambda: get_or_none(cluster, "/api/v1/namespaces/default/serviceaccounts/default"), what="SA")
    pod(cluster, "nl-default", "nl-b")  # admission gives it 300 s for unreachable
    pod(cluster, "nl-zero", "nl-b", [{"key": UNREACH, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 0}])
    pod(cluster, "nl-two", "nl-b", [{"key": UNREACH, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 2}])
    pod(cluster, "nl-forever", "nl-b", [{"key": UNREACH, "operator": "Exists", "effect": "NoExecute"}])
    time.sleep(4)  # well past the grace period while the lease is renewed: nothing happens
    assert conditions(cluster, "nl-b")["Ready"]["status"] == "True" and taints(cluster, "nl-b") == []
    kubelets.stop("nl-b")
    t0 = time.monotonic()
    wait_for(lambda: conditions(cluster, "nl-b")["Ready"]["status"] == "Unknown", timeout=15, what="Ready=Unknown")
    assert time.monotonic() - t0 >= 2.0
    conds = conditions(cluster, "nl-b")
    for typ in ("Ready", "MemoryPressure", "DiskPressure", "PIDPressure"):
        assert conds[typ]["status"] == "Unknown"
        assert conds[typ]["reason"] == "NodeStatusUnknown"
        assert conds[typ]["message"] == "Kubelet stopped posting node status."
    wait_for(lambda: taints(cluster, "nl-b") == [(UNREACH, "NoExecute"), (UNREACH, "NoSchedule")], what="taints")
    n = get_or_none(cluster, "/api/v1/nodes/nl-b")
    assert all(t.get("timeAdded") for t in n["spec"]["taints"])
    assert conditions(cluster, "nl-a")["Ready"]["status"] == "True" and taints(cluster, "nl-a") == []

    def deleting(name: str) -> bool:
        p = get_or_none(cluster, f"{PODS}/{name}")
        return p is None or bool(p["metadata"].get("deletionTimestamp"))

    wait_for(lambda: deleting("nl-zero"), what="nl-zero evicted at once")
    wait_for(lambda: deleting("nl-two"), what="nl-two evicted after 2 s")
    from pyk8s.api.timefmt import parse_time

    added = min(parse_time(t["timeAdded"]) for t in n["spec"]["taints"] if t["effect"] == "NoExecute")
    two = get_or_none(cluster, f"{PODS}/nl-two")
    evicted = [c for c in two["status"]["conditions"] if c["type"] == "DisruptionTarget"][0]["lastTransitionTime"]
    assert parse_time(evicted) - added >= 1.0  # its 2 s of toleration ran first (timestamps have whole seconds)
    p = get_or_none(cluster, f"{PODS}/nl-zero")
    dt = [c for c in p["status"]["conditions"] if c["type"] == "DisruptionTarget"][0]
    assert (dt["reason"], dt["message"]) == ("DeletionByTaintManager", "Taint manager: deleting due to NoExecute taint")
    ready = [c for c in p["status"]["conditions"] if c["type"] == "Ready"][0]
    assert ready["status"] == "False"  # marked not ready when its node went silent
    time.sleep(1.0)
    assert not deleting("nl-forever") and not deleting("nl-default")
    ev = [e for e in events(cluster, "TaintManagerEviction") if e["involvedObject"]["name"] == "nl-zero"]
    assert ev and ev[0]["message"] == "Marking for deletion Pod default/nl-zero"
    assert ev[0]["source"]["component"] == "taint-eviction-controller"
    assert any(e["involvedObject"]["name"] == "nl-forever" for e in events(cluster, "NodeNotReady"))

    # the kubelet comes back: taints go, the pending eviction of nl-default is cancelled
    kubelets.resume("nl-b")
    wait_for(lambda: taints(cluster, "nl-b") == [], what="taints removed")
    assert conditions(cluster, "nl-b")["Ready"]["status"] == "True"
    wait_for(lambda: [e for e in events(cluster, "TaintManagerEviction")
                      if e["message"] == "Cancelling deletion of Pod default/nl-default"], what="cancel event")
    assert not deleting("nl-default")


def test_not_ready_node_gets_not_ready_taints(cluster, kubelets):
    # a ready neighbour: with every node not ready upstream stops NoExecute tainting altogether
    if "nl-d-buddy" not in kubelets.active:
        kubelets.add("nl-d-buddy")
    kubelets.add("nl-d")
    kubelets.post("nl-d", "False")  # a kubelet reporting NotReady (e.g. runtime down)
    nr = "node.kubernetes.io/not-ready"
    try:
        wait_for(lambda: taints(cluster, "nl-d") == [(nr, "NoExecute"), (nr, "NoSchedule")], what="not-ready taints")
    except AssertionError:
        raise AssertionError(f"taints {taints(cluster, 'nl-d')}, conditions {conditions(cluster, 'nl-d')}") from None
    kubelets.post("nl-d", "True")
    wait_for(lambda: taints(cluster, "nl-d") == [], what="not-ready taints removed")


def test_cordon_adds_the_unschedulable_taint(cluster, kubelets):
    kubelets.add("nl-e")
    cluster.kubectl("cordon", "nl-e")
    wait_for(lambda: taints(cluster, "nl-e") == [("node.kubernetes.io/unschedulable", "NoSchedule")], what="taint")
    assert "node.kubernetes.io/unschedulable:NoSchedule" in cluster.kubectl("describe", "node", "nl-e").stdout
    cluster.kubectl("uncordon", "nl-e")
    wait_for(lambda: taints(cluster, "nl-e") == [], what="taint removed")


def test_ttl_controller_annotates_nodes(cluster, kubelets):
    """The TTL controller: a small cluster's nodes carry node.alpha.kubernetes.io/ttl "0", restored if removed."""
    kubelets.add("nl-ttl")

    def ttl() -> str | None:
        node = get_or_none(cluster, "/api/v1/nodes/nl-ttl") or {}
        return ((node.get("metadata") or {}).get("annotations") or {}).get("node.alpha.kubernetes.io/ttl")

    wait_for(lambda: ttl() == "0", what="ttl annotation")
    cluster.kubectl("annotate", "node", "nl-ttl", "node.alpha.kubernetes.io/ttl-")
    wait_for(lambda: ttl() == "0", what="ttl annotation restored")


def test_node_that_never_posts_status(cluster, kubelets):
    req(cluster, "POST", "/api/v1/nodes", {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "nl-silent"}})
    c = wait_for(lambda: conditions(cluster, "nl-silent").get("Ready"), timeout=15, what="conditions after startup grace")
    assert (c["status"], c["reason"], c["message"]) == ("Unknown", "NodeStatusNeverUpdated",
                                                        "Kubelet never posted node status.")
    wait_for(lambda: (UNREACH, "NoSchedule") in taints(cluster, "nl-silent"), what="unreachable taint")
    req(cluster, "DELETE", "/api/v1/nodes/nl-silent")


def test_podgc_deletes_orphans_terminated_excess_and_out_of_service_terminating(cluster, kubelets):
    # orphan: bound to a node that does not exist
    pod(cluster, "gc-orphan", "no-such-node")
    wait_for(lambda: get_or_none(cluster, f"{PODS}/gc-orphan") is None, what="orphan force-deleted")
    # terminated pods above the threshold (5): the oldest go
    kubelets.add("nl-f")
    names = [f"gc-done-{i}" for i in range(8)]
    for i, n in enumerate(names):
        pod(cluster, n, "nl-f")
        if i == 2:
            time.sleep(1.1)  # creation timestamps have whole seconds: make the three oldest distinct
    for n in names:
        req(cluster, "PATCH", f"{PODS}/{n}/status", {"status": {"phase": "Succeeded"}}, MERGE)
    wait_for(lambda: [n for n in names if get_or_none(cluster, f"{PODS}/{n}") is not None] == names[3:],
             what="three oldest terminated pods collected")
    # terminating pod on a NotReady node with the out-of-service taint
    pod(cluster, "gc-stuck", "nl-f")
    req(cluster, "DELETE", f"{PODS}/gc-stuck")
    time.sleep(1.0)
    assert get_or_none(cluster, f"{PODS}/gc-stuck") is not None  # waits for its kubelet
    kubelets.stop("nl-f")
    wait_for(lambda: conditions(cluster, "nl-f")["Ready"]["status"] == "Unknown", timeout=15, what="nl-f down")
    req(cluster, "PATCH", "/api/v1/nodes/nl-f", {"spec": {"taints": [
        {"key": "node.kubernetes.io/out-of-service", "value": "nodeshutdown", "effect": "NoExecute"}]}}, MERGE)
    wait_for(lambda: get_or_none(cluster, f"{PODS}/gc-stuck") is None, what="out-of-service terminating pod")
    r = raw_request(cluster, "DELETE", f"/api/v1/namespaces/{NS}/pods?fieldSelector=spec.nodeName%3Dnl-f",
                    {"gracePeriodSeconds": 0})
    assert r.status == 200


def test_controller_pods_on_a_lost_sim_node_are_replaced_elsewhere(cluster):
    """Seed E29: stop a kubelet's heartbeats; its pods are evicted and their controller recreates them."""
    import importlib.util

    for mod in ("pyk8s.sim", "pyk8s.scheduler.runner", "pyk8s.controllers.deployment", "pyk8s.controllers.replicaset"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} not available")
    from pyk8s.client import Client
    Simulator = getattr(__import__("pyk8s.sim", fromlist=["Simulator"]), "Simulator", None)
    if Simulator is None:  # the simulated-node package has not landed in this checkout yet
        pytest.skip("pyk8s.sim.Simulator is not in this checkout")

    deploy = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "evictme"},
              "spec": {"replicas": 3, "selector": {"matchLabels": {"app": "evictme"}},
                       "template": {"metadata": {"labels": {"app": "evictme"}},
                                    "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                             "nodeSelector": {"evict-test": "yes"},
                                             "tolerations": [{"key": UNREACH, "operator": "Exists",
                                                              "effect": "NoExecute", "tolerationSeconds": 1},
                                                             {"key": "evict-test", "operator": "Exists"}]}}}}

    async def main() -> None:
        c = Client.from_kubeconfig(cluster.kubeconfig)
        sim = Simulator(c, 3, name_prefix="evict-", lease_period=1.0, labels={"evict-test": "yes"},
                        taints=[{"key": "evict-test", "value": "yes", "effect": "NoSchedule"}],
                        delete_nodes_on_stop=True)
        await sim.start()
        try:
            await sim.wait_nodes_registered(30)
            await c.create(("apps", "v1", "deployments"), deploy, NS)

            async def running() -> list[dict[str, Any]]:
                pods = (await c.list(("", "v1", "pods"), NS, label_selector="app=evictme"))["items"]
                live = [p for p in pods if not p["metadata"].get("deletionTimestamp")
                        and (p.get("status") or {}).get("phase") == "Running"]
                return live if len(live) == 3 else []

            async def until(fn: Any, timeout: float = 30.0) -> Any:
                deadline = time.monotonic() + timeout
                while time.monotonic() < deadline:
                    v = await fn()
                    if v:
                        return v
                    await asyncio.sleep(0.2)
                raise AssertionError(f"timed out: {fn.__name__}")

            pods = await until(running)
            victim = pods[0]["spec"]["nodeName"]
            doomed = {p["metadata"]["name"] for p in pods if p["spec"]["nodeName"] == victim}
            sim.stop_heartbeat(victim)

            async def replaced() -> bool:
                now = await running()
                return bool(now) and all(p["spec"]["nodeName"] != victim for p in now) \
                    and not doomed & {p["metadata"]["name"] for p in now}

            await until(replaced, 40.0)
            node = await c.get(NODES, victim)
            assert {(t["key"], t["effect"]) for t in node["spec"]["taints"]} >= {(UNREACH, "NoExecute"),
                                                                                 (UNREACH, "NoSchedule")}
            await c.delete(("apps", "v1", "deployments"), "evictme", NS)
            sim.resume_heartbeat(victim)
        finally:
            await sim.stop()
            await c.close()

    asyncio.run(main())


def test_every_node_down_stops_noexecute_tainting(cluster, kubelets):
    for n in ("nl-z1", "nl-z2"):
        kubelets.add(n)
    for n in list(kubelets.active):
        kubelets.stop(n)
    nodes = [n["metadata"]["name"] for n in req(cluster, "GET", "/api/v1/nodes")["items"]]
    wait_for(lambda: all(conditions(cluster, n).get("Ready", {}).get("status") == "Unknown" for n in nodes),
             timeout=20, what="all nodes unknown")
    # as upstream's "master disruption mode": no node keeps a NoExecute unreachable taint
    wait_for(lambda: all((UNREACH, "NoExecute") not in taints(cluster, n) and (UNREACH, "NoSchedule") in taints(cluster, n)
                         for n in nodes), what="NoExecute lifted, NoSchedule kept")
