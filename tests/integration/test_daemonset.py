"""DaemonSet controller through the real server and real kubectl.

The seed walkthrough (seeds/002: four nodes, a tainted master, test-ds with a master
toleration; delete a pod; a bad image update stalls after one node; a good image rolls
through) is replayed step by step with the `kubectl get ds` numbers it describes.

`FakeKubelets` stands in for the kubelets (and for the scheduler when the server has
none): it registers Ready nodes, binds unscheduled pods (daemon pods to the node their
`metadata.name` affinity names), runs bound pods (Running and Ready; an image containing
`nonexistent` stays Pending in ImagePullBackOff), ends pods annotated with
`sim.pyk8s.io/exit-code` after `sim.pyk8s.io/run-seconds`, and finishes graceful deletions
as a kubelet does (terminal phase first, then the final delete).
"""

from __future__ import annotations

import asyncio
import importlib.util
import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.client import Client, InformerFactory
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

PODS = ("", "v1", "pods")
NODES = ("", "v1", "nodes")
MANIFESTS = SHARED_MANIFESTS
EXIT_CODE = "sim.pyk8s.io/exit-code"
RUN_SECONDS = "sim.pyk8s.io/run-seconds"


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class FakeKubelets:
    """Nodes, a trivial scheduler and kubelets, in a thread with its own event loop."""

    def __init__(self, kubeconfig: str, nodes: dict[str, list[dict[str, str]]],
                 labels: dict[str, dict[str, str]] | None = None) -> None:
        self.kubeconfig = kubeconfig
        # the test server runs the real scheduler when it exists; then we only play kubelets
        self.bind = importlib.util.find_spec("pyk8s.scheduler.runner") is None
        self.node_taints = nodes
        self.node_labels = labels or {}
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self._tasks: set[asyncio.Task[Any]] = set()
        self._rr = 0
        self._ips = 10

    # ---- lifecycle ----------------------------------------------------------------------
    def start(self) -> FakeKubelets:
        self.thread.start()
        self.call(self._start())
        return self

    def stop(self) -> None:
        try:
            self.call(self._stop())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(5)

    def call(self, coro: Any, timeout: float = 30) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    async def _start(self) -> None:
        self.client = Client.from_kubeconfig(self.kubeconfig)
        for name, taints in self.node_taints.items():
            await self._register(name, taints)
        self.factory = InformerFactory(self.client)
        self.pods = self.factory.informer(PODS)
        self.pods.add_handlers(on_add=self._on_pod, on_update=lambda o, n: self._on_pod(n))
        self.factory.start()
        await self.factory.wait_synced(10)
        self._spawn(self._heartbeat())

    async def _stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await self.factory.stop()
        await self.client.close()

    def _spawn(self, coro: Any) -> None:
        t = self.loop.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ---- nodes --------------------------------------------------------------------------
    async def _register(self, name: str, taints: list[dict[str, str]]) -> None:
        now = _now()
        labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", **self.node_labels.get(name, {})}
        node = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": labels},
            "spec": {"taints": taints} if taints else {},
            "status": {
                "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
                "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                "message": "kubelet is posting ready status",
                                "lastHeartbeatTime": now, "lastTransitionTime": now}],
                "addresses": [{"type": "InternalIP", "address": f"192.0.2.{len(self.node_taints)}"},
                              {"type": "Hostname", "address": name}],
                "nodeInfo": {"kubeletVersion": "v1.33.0", "operatingSystem": "linux", "architecture": "amd64"},
            },
        }
        try:
            await self.client.create(NODES, node)
        except StatusError as e:
            if e.code != 409:
                raise

    async def _heartbeat(self) -> None:
        while True:
            await asyncio.sleep(10)
            for name in self.node_taints:
                try:
                    node = await self.client.get(NODES, name)
                    conds = node.get("status", {}).get("conditions") or []
                    for c in conds:
                        if c.get("type") == "Ready":
                            c["lastHeartbeatTime"] = _now()
                    await self.client.patch(NODES, name, {"status": {"conditions": conds}}, sub="status")
                except Exception:
                    pass

    # ---- pods ---------------------------------------------------------------------------
    def _on_pod(self, pod: dict[str, Any]) -> None:
        self._spawn(self._reconcile(pod))

    def _pick_node(self, pod: dict[str, Any]) -> str | None:
        spec = pod.get("spec") or {}
        req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
               .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
        for term in req.get("nodeSelectorTerms") or ():
            for f in term.get("matchFields") or ():
                if f.get("key") == "metadata.name":
                    return f["values"][0] if f["values"][0] in self.node_taints else None
        tols = spec.get("tolerations") or []
        fits = [n for n, taints in self.node_taints.items()
                if all(any(t.get("key") == taint["key"] or t.get("operator") == "Exists" and not t.get("key")
                           for t in tols) for taint in taints if taint["effect"] != "PreferNoSchedule")
                and all(self.node_labels.get(n, {}).get(k) == v for k, v in (spec.get("nodeSelector") or {}).items())]
        if not fits:
            return None
        self._rr += 1
        return fits[self._rr % len(fits)]

    async def _reconcile(self, pod: dict[str, Any]) -> None:
        md, spec, status = pod["metadata"], pod.get("spec") or {}, pod.get("status") or {}
        ns, name = md.get("namespace"), md["name"]
        node = spec.get("nodeName")
        try:
            if md.get("deletionTimestamp"):
                if node in self.node_taints or not node:
                    await self._terminate(pod)
                return
            if not node:
                target = self._pick_node(pod) if self.bind else None
                if target is not None:
                    await self.client.request("POST", f"/api/v1/namespaces/{ns}/pods/{name}/binding",
                                              {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": name},
                                               "target": {"apiVersion": "v1", "kind": "Node", "name": target}})
                return
            if node not in self.node_taints or status.get("phase") not in (None, "Pending"):
                return
            if status.get("containerStatuses"):
                return  # already handled (e.g. stuck pulling an image)
            await self._run(pod)
        except StatusError as e:
            if e.code not in (404, 409):
                raise

    async def _run(self, pod: dict[str, Any]) -> None:
        md, spec = pod["metadata"], pod["spec"]
        now = _now()
        containers = spec.get("containers") or []
        bad = any("nonexistent" in (c.get("image") or "") for c in containers)
        self._ips += 1
        ip = f"10.244.{self._ips // 250}.{self._ips % 250 + 2}"
        if bad:
            cstatuses = [{"name": c["name"], "image": c.get("image"), "imageID": "", "ready": False,
                          "restartCount": 0, "started": False,
                          "state": {"waiting": {"reason": "ImagePullBackOff",
                                                "message": f'Back-off pulling image "{c.get("image")}"'}},
                          "lastState": {}} for c in containers]
            status = {"phase": "Pending", "hostIP": "192.0.2.1", "podIP": ip, "podIPs": [{"ip": ip}],
                      "startTime": now, "containerStatuses": cstatuses,
                      "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                                     {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                                     {"type": "Ready", "status": "False", "reason": "ContainersNotReady",
                                      "lastTransitionTime": now},
                                     {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady",
                                      "lastTransitionTime": now}]}
        else:
            cstatuses = [{"name": c["name"], "image": c.get("image"), "imageID": "", "ready": True,
                          "restartCount": 0, "started": True, "state": {"running": {"startedAt": now}},
                          "lastState": {}} for c in containers]
            status = {"phase": "Running", "hostIP": "192.0.2.1", "podIP": ip, "podIPs": [{"ip": ip}],
                      "startTime": now, "containerStatuses": cstatuses,
                      "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                                     {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                                     {"type": "Ready", "status": "True", "lastTransitionTime": now},
                                     {"type": "ContainersReady", "status": "True", "lastTransitionTime": now}]}
        await self.client.patch(PODS, md["name"], {"status": status}, md.get("namespace"), sub="status")
        ann = md.get("annotations") or {}
        if not bad and EXIT_CODE in ann:
            self._spawn(self._finish(pod, int(ann[EXIT_CODE]), float(ann.get(RUN_SECONDS, "0"))))

    async def _finish(self, pod: dict[str, Any], code: int, after: float) -> None:
        await asyncio.sleep(after)
        md = pod["metadata"]
        cur = await self.client.get_or_none(PODS, md["name"], md.get("namespace"))
        if cur is None or cur["metadata"]["uid"] != md["uid"] or cur["metadata"].get("deletionTimestamp"):
            return
        await self._set_terminal(cur, code)

    async def _set_terminal(self, pod: dict[str, Any], code: int) -> None:
        md = pod["metadata"]
        now = _now()
        phase = "Succeeded" if code == 0 else "Failed"
        reason = "Completed" if code == 0 else "Error"
        cstatuses = [{"name": c["name"], "image": c.get("image"), "imageID": "", "ready": False,
                      "restartCount": 0, "started": False,
                      "state": {"terminated": {"exitCode": code, "reason": reason, "startedAt": now,
                                               "finishedAt": now}},
                      "lastState": {}} for c in pod["spec"].get("containers") or []]
        conds = [{"type": "PodScheduled", "status": "True", "lastTransitionTime": now},
                 {"type": "Initialized", "status": "True", "lastTransitionTime": now},
                 {"type": "Ready", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now},
                 {"type": "ContainersReady", "status": "False", "reason": "PodCompleted", "lastTransitionTime": now}]
        await self.client.patch(PODS, md["name"], {"status": {"phase": phase, "containerStatuses": cstatuses,
                                                              "conditions": conds}},
                                md.get("namespace"), sub="status")

    async def _terminate(self, pod: dict[str, Any]) -> None:
        md = pod["metadata"]
        phase = (pod.get("status") or {}).get("phase")
        if phase not in ("Succeeded", "Failed") and (pod.get("spec") or {}).get("nodeName"):
            # as a kubelet: a killed pod reaches a terminal phase before it goes
            await self._set_terminal(pod, 137)
        if md.get("deletionGracePeriodSeconds") != 0 or not md.get("finalizers"):
            await self.client.delete(PODS, md["name"], md.get("namespace"), grace_period=0,
                                     preconditions={"uid": md["uid"]})


@pytest.fixture(scope="module")
def seed_nodes(cluster):
    """The seed's cluster: node1 is the master, tainted NoSchedule; node2..node4 are workers."""
    fk = FakeKubelets(cluster.kubeconfig, {
        "node1": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}],
        "node2": [], "node3": [], "node4": [],
    }).start()
    yield fk
    fk.stop()


def wait_for(fn: Callable[[], Any], timeout: float = 30.0, interval: float = 0.2, what: str = "") -> Any:
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
    raise AssertionError(f"timed out waiting for {what or fn}: last={last!r}")


def get_json(cluster, *args: str) -> Any:
    return json.loads(cluster.kubectl("get", *args, "-o", "json").stdout)


def ds_row(cluster, name: str, ns: str = "default") -> list[str]:
    out = cluster.kubectl("get", "ds", name, "-n", ns, "--no-headers").stdout.split()
    return out[1:6]  # DESIRED CURRENT READY UP-TO-DATE AVAILABLE


def pods_of(cluster, selector: str, ns: str = "default", live_only: bool = True) -> list[dict[str, Any]]:
    items = get_json(cluster, "pods", "-n", ns, "-l", selector)["items"]
    if live_only:
        items = [p for p in items if not p["metadata"].get("deletionTimestamp")]
    return items


def target_node(pod: dict[str, Any]) -> str:
    terms = pod["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"]
    return terms[0]["matchFields"][0]["values"][0]


def test_seed_walkthrough_tainted_master_delete_and_bad_image_rollout(cluster, seed_nodes):
    """seeds/002: test-ds tolerates the master taint, so 4 nodes get 4 pods; a deleted pod comes
    back; a bad image stops the rollout after one node; a good image rolls through."""
    cluster.kubectl("apply", "-f", str(MANIFESTS / "test-ds.yaml"))
    wait_for(lambda: ds_row(cluster, "test-ds") == ["4"] * 5, what="test-ds 4 4 4 4 4")
    pods = pods_of(cluster, "name=my-test")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node1", "node2", "node3", "node4"]
    first_hash = pods[0]["metadata"]["labels"]["controller-revision-hash"]
    for p in pods:
        labels = p["metadata"]["labels"]
        assert labels["pod-template-generation"] == "1"
        assert labels["controller-revision-hash"] == first_hash
        assert p["metadata"]["name"].startswith("test-ds-")
        assert p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet"
        assert target_node(p) == p["spec"]["nodeName"]
        tols = {(t["key"], t["effect"]): t for t in p["spec"]["tolerations"]}
        # the seed's describe lists exactly these (not-ready/unreachable without "for 300s")
        assert set(tols) == {
            ("node-role.kubernetes.io/master", "NoSchedule"), ("node.kubernetes.io/disk-pressure", "NoSchedule"),
            ("node.kubernetes.io/memory-pressure", "NoSchedule"), ("node.kubernetes.io/not-ready", "NoExecute"),
            ("node.kubernetes.io/pid-pressure", "NoSchedule"), ("node.kubernetes.io/unreachable", "NoExecute"),
            ("node.kubernetes.io/unschedulable", "NoSchedule")}
        assert "tolerationSeconds" not in tols[("node.kubernetes.io/not-ready", "NoExecute")]
    ds = get_json(cluster, "ds", "test-ds")
    assert ds["status"]["observedGeneration"] == 1
    assert ds["status"]["numberMisscheduled"] == 0 and "numberUnavailable" not in ds["status"]
    revs = get_json(cluster, "controllerrevisions", "-l", "name=my-test")["items"]
    assert [(r["metadata"]["name"], r["revision"]) for r in revs] == [(f"test-ds-{first_hash}", 1)]
    assert revs[0]["data"]["spec"]["template"]["$patch"] == "replace"

    # delete one pod: the controller makes a new one on the same node
    victim = next(p for p in pods if p["spec"]["nodeName"] == "node4")
    cluster.kubectl("delete", "pod", victim["metadata"]["name"])

    def replaced() -> bool:
        now = pods_of(cluster, "name=my-test")
        on4 = [p for p in now if p["spec"].get("nodeName") == "node4"]
        return len(now) == 4 and len(on4) == 1 and on4[0]["metadata"]["name"] != victim["metadata"]["name"]
    wait_for(replaced, what="pod on node4 recreated")
    wait_for(lambda: ds_row(cluster, "test-ds") == ["4"] * 5, what="test-ds back to 4 4 4 4 4")

    # a bad image: one node gets the new pod, it never becomes ready, the rollout stops there
    cluster.kubectl("set", "image", "ds/test-ds", "my-test-busybox=busybox:nonexistent")

    def stalled() -> bool:
        now = pods_of(cluster, "name=my-test")
        gens = sorted(p["metadata"]["labels"]["pod-template-generation"] for p in now)
        return gens == ["1", "1", "1", "2"] and ds_row(cluster, "test-ds") == ["4", "4", "3", "1", "3"]
    wait_for(stalled, what="rollout stalled after one node (4 4 3 1 3)")
    deadline = time.monotonic() + 3
    while time.monotonic() < deadline:  # and it stays stalled
        assert stalled()
        time.sleep(0.5)
    bad = next(p for p in pods_of(cluster, "name=my-test")
               if p["metadata"]["labels"]["pod-template-generation"] == "2")
    assert bad["status"]["containerStatuses"][0]["state"]["waiting"]["reason"] == "ImagePullBackOff"
    bad_hash = bad["metadata"]["labels"]["controller-revision-hash"]
    assert bad_hash != first_hash

    # a good image: the pods are replaced one by one, all reach generation 3
    cluster.kubectl("set", "image", "ds/test-ds", "my-test-busybox=busybox:1.36")

    def rolled() -> bool:
        now = pods_of(cluster, "name=my-test", live_only=False)
        return (len(now) == 4 and {p["metadata"]["labels"]["pod-template-generation"] for p in now} == {"3"}
                and ds_row(cluster, "test-ds") == ["4"] * 5)
    wait_for(rolled, timeout=40, what="rollout to generation 3")
    good_hash = pods_of(cluster, "name=my-test")[0]["metadata"]["labels"]["controller-revision-hash"]
    assert good_hash not in (first_hash, bad_hash)
    revs = get_json(cluster, "controllerrevisions", "-l", "name=my-test")["items"]
    assert sorted((r["revision"], r["metadata"]["name"]) for r in revs) == [
        (1, f"test-ds-{first_hash}"), (2, f"test-ds-{bad_hash}"), (3, f"test-ds-{good_hash}")]
    ds = get_json(cluster, "ds", "test-ds")
    assert ds["status"]["observedGeneration"] == 3
    assert ds["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "3"
    events = get_json(cluster, "events", "--field-selector", "involvedObject.name=test-ds")["items"]
    reasons = {(e["reason"], e["source"].get("component")) for e in events}
    assert ("SuccessfulCreate", "daemonset-controller") in reasons
    assert ("SuccessfulDelete", "daemonset-controller") in reasons
    cluster.kubectl("delete", "ds", "test-ds")


def test_node_selector_follows_node_labels(cluster, seed_nodes):
    """Given a nodeSelector, only labelled nodes run the daemon; labelling a node adds its pod,
    unlabelling removes it (numberMisscheduled stays 0 because the pod is deleted)."""
    manifest = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "ssd-ds"},
        "spec": {"selector": {"matchLabels": {"app": "ssd"}},
                 "template": {"metadata": {"labels": {"app": "ssd"}},
                              "spec": {"nodeSelector": {"disktype": "ssd"},
                                       "containers": [{"name": "c", "image": "busybox"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: get_json(cluster, "ds", "ssd-ds").get("status", {}).get("observedGeneration") == 1)
    assert ds_row(cluster, "ssd-ds") == ["0", "0", "0", "0", "0"]
    cluster.kubectl("label", "node", "node2", "node3", "disktype=ssd")
    wait_for(lambda: ds_row(cluster, "ssd-ds") == ["2"] * 5, what="2 ssd pods")
    assert sorted(p["spec"]["nodeName"] for p in pods_of(cluster, "app=ssd")) == ["node2", "node3"]
    cluster.kubectl("label", "node", "node3", "disktype-")
    wait_for(lambda: ds_row(cluster, "ssd-ds") == ["1"] * 5
             and [p["spec"]["nodeName"] for p in pods_of(cluster, "app=ssd")] == ["node2"], what="1 ssd pod")
    cluster.kubectl("label", "node", "node2", "disktype-")
    cluster.kubectl("delete", "ds", "ssd-ds")


def test_on_delete_replaces_only_deleted_pods(cluster, seed_nodes):
    """OnDelete: a template change leaves running pods alone; a deleted pod comes back new."""
    manifest = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "od-ds"},
        "spec": {"selector": {"matchLabels": {"app": "od"}}, "updateStrategy": {"type": "OnDelete"},
                 "template": {"metadata": {"labels": {"app": "od"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: ds_row(cluster, "od-ds") == ["3"] * 5, what="3 pods (master not tolerated)")
    cluster.kubectl("set", "image", "ds/od-ds", "c=busybox:2")
    wait_for(lambda: get_json(cluster, "ds", "od-ds")["status"].get("observedGeneration") == 2)
    assert ds_row(cluster, "od-ds") == ["3", "3", "3", "0", "3"]
    victim = pods_of(cluster, "app=od")[0]
    cluster.kubectl("delete", "pod", victim["metadata"]["name"])
    wait_for(lambda: ds_row(cluster, "od-ds") == ["3", "3", "3", "1", "3"], what="one updated pod")
    gens = sorted(p["metadata"]["labels"]["pod-template-generation"] for p in pods_of(cluster, "app=od"))
    assert gens == ["1", "1", "2"]
    cluster.kubectl("delete", "ds", "od-ds")


class PodCountWatch:
    """The largest number of matching pods that existed at once, from a watch (polls can miss a short peak)."""

    def __init__(self, kubeconfig: str, selector: str) -> None:
        self.peak = 0
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run(kubeconfig, selector)), daemon=True)
        self._thread.start()
        assert self._ready.wait(15), "pod watch did not start"

    async def _run(self, kubeconfig: str, selector: str) -> None:
        client = Client.from_kubeconfig(kubeconfig)
        try:
            listed = await client.list(("", "v1", "pods"), "default", labelSelector=selector)
            live = {p["metadata"]["uid"] for p in listed["items"]}
            self.peak = len(live)
            self._ready.set()
            async for ev in client.watch(("", "v1", "pods"), "default", listed["metadata"]["resourceVersion"],
                                         timeout_seconds=60, labelSelector=selector):
                if self._stop.is_set():
                    break
                uid = ev["object"]["metadata"].get("uid")
                if ev["type"] == "ADDED":
                    live.add(uid)
                elif ev["type"] == "DELETED":
                    live.discard(uid)
                self.peak = max(self.peak, len(live))
        finally:
            await client.close()

    def stop(self) -> int:
        self._stop.set()
        return self.peak


def test_max_surge_starts_new_pod_before_deleting_old(cluster, seed_nodes):
    """RollingUpdate with maxSurge=1, maxUnavailable=0: every node always keeps an available pod."""
    manifest = {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "surge-ds"},
        "spec": {"selector": {"matchLabels": {"app": "surge"}},
                 "updateStrategy": {"type": "RollingUpdate",
                                    "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 0}},
                 "template": {"metadata": {"labels": {"app": "surge"}},
                              "spec": {"containers": [{"name": "c", "image": "busybox:1"}]}}}}
    cluster.kubectl("apply", "-f", "-", input=json.dumps(manifest))
    wait_for(lambda: ds_row(cluster, "surge-ds") == ["3"] * 5, what="3 surge pods")
    peak = PodCountWatch(cluster.kubeconfig, "app=surge")  # every add/delete, not a sample of them
    cluster.kubectl("set", "image", "ds/surge-ds", "c=busybox:2")
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        now = pods_of(cluster, "app=surge")
        row = ds_row(cluster, "surge-ds")
        assert int(row[4]) >= 3 or row[1] != "3", f"availability dropped: {row}"
        if row == ["3"] * 5 and {p["metadata"]["labels"]["pod-template-generation"] for p in now} == {"2"} \
                and len(now) == 3:
            break
        time.sleep(0.2)
    else:
        raise AssertionError("surge rollout did not finish")
    assert peak.stop() >= 4  # a surged pod ran beside an old one
    cluster.kubectl("delete", "ds", "surge-ds")
