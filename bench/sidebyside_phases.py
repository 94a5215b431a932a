"""The phases of `python -m bench.sidebyside` against one cluster, through its kubeconfig.

The same code drives every target, pyk8s or upstream. Everything a run creates carries its run
id: namespaces `bench-sbs-<id>` (and `-watch`, `-bind`, `-deploy` after it) labelled
`bench-sbs/run=<id>`, and fake nodes `bench-sbs-<id>-node-NNNN` with the same label. A run
refuses to start when one of its namespaces exists, and its clean-up deletes only what it
created: its namespaces (force-deleting their pods, which no kubelet will ever confirm) and its
nodes. The fake nodes are Node objects with a Ready status and no kubelet (as scheduler_perf
and bench/scheduler.py make them), tainted so that no pod but the bench's lands on them; the
bench keeps their Ready heartbeat fresh so the node lifecycle controller leaves them Ready.
Pods of the create phases select a node label nobody has, so they stay Pending (a real node of
a foreign cluster never runs them).
"""

from __future__ import annotations

import asyncio
import datetime
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .report import process_name, process_tree, processes_matching, rss_kib
from .scheduler import BoundCounter, cpu_seconds, create_all, node_default, pod_default

PODS = ("", "v1", "pods")
NODES = ("", "v1", "nodes")
NAMESPACES = ("", "v1", "namespaces")
DEPLOYMENTS = ("apps", "v1", "deployments")
RUN_LABEL = "bench-sbs/run"
NO_NODE_LABEL = "bench-sbs/no-node"  # no node has it: the create phases' pods stay Pending
HEARTBEAT_PERIOD = 10.0  # the kubelet's node status/lease period; grace periods are 40-50 s


def seconds(v: float | str) -> str:
    return f"{v:.2f} s" if isinstance(v, float) else v


class Refused(Exception):
    """The cluster already holds what this run would create."""


@dataclass
class Sizes:
    pods: int = 1000
    nodes: int = 100

    @classmethod
    def scaled(cls, scale: float) -> Sizes:
        return cls(max(1, round(1000 * scale)), max(1, round(100 * scale)))


class ControlPlane:
    """The processes whose CPU seconds and RSS count as the control plane's. `find` returns their
    pids ({} when none is local); `why_not` says why there are none to measure."""

    def __init__(self, find: Callable[[], dict[int, str]], why_not: str) -> None:
        self.find = find
        self.why_not = why_not

    @classmethod
    def tree(cls, pid: int) -> ControlPlane:
        """A process and every process it started (pyk8s server: its scheduler, controller-manager, API workers)."""
        return cls(lambda: {p: process_name(p) for p in process_tree(pid) if rss_kib(p) is not None},
                   "the server process is gone")

    @classmethod
    def named(cls, pids: dict[str, int]) -> ControlPlane:
        return cls(lambda: {p: n for n, p in pids.items() if rss_kib(p) is not None},
                   "none of the --pids-of processes is running")

    @classmethod
    def matching(cls, pattern: str) -> ControlPlane:
        # the bench and its kubectl runs never count, whatever the pattern matches
        return cls(lambda: {p: process_name(p) for p in processes_matching(pattern, set(process_tree(os.getpid())))},
                   f"no process on this machine matches --process-match {pattern!r}")

    @classmethod
    def none(cls) -> ControlPlane:
        return cls(dict, "the control plane is not on this machine (give --pids-of or --process-match)")

    def cpu(self) -> dict[int, float]:
        return {p: cpu_seconds(p) for p in self.find()}

    def cpu_since(self, before: dict[int, float]) -> float | str:
        now = self.cpu()
        if not now:
            return f"not measured: {self.why_not}"
        return sum(c - before.get(p, 0.0) for p, c in now.items())

    def cpu_by_process(self, before: dict[int, float]) -> dict[str, float]:
        """CPU seconds since `before` by process name (summed over processes of one name), from one reading."""
        out: dict[str, float] = {}
        for p, name in self.find().items():
            out[name] = out.get(name, 0.0) + cpu_seconds(p) - before.get(p, 0.0)
        return out

    def rss_mib(self) -> float | str:
        sizes = [rss_kib(p) for p in self.find()]
        known = [s for s in sizes if s is not None]
        return sum(known) / 1024 if known else f"not measured: {self.why_not}"

    def per_process(self, since: dict[int, float]) -> dict[str, dict[str, float]]:
        """{name: {rss_mib, cpu_s (since `since`)}}; processes of one name are summed."""
        out: dict[str, dict[str, float]] = {}
        for p, name in self.find().items():
            rss = rss_kib(p)
            if rss is None:
                continue
            d = out.setdefault(name, {"rss_mib": 0.0, "cpu_s": 0.0, "processes": 0})
            d["rss_mib"] += rss / 1024
            d["cpu_s"] += cpu_seconds(p) - since.get(p, 0.0)
            d["processes"] += 1
        return out


@dataclass
class Run:
    """One pass of the phases against one cluster."""

    kubeconfig: str
    sizes: Sizes
    plane: ControlPlane
    phases: set[str]
    run_id: str
    kubectl: str = "kubectl"
    idle_seconds: float = 10.0
    timeout: float = 600.0
    log: Callable[[str], None] = print
    figures: dict[str, Any] = field(default_factory=dict)
    _created_ns: list[str] = field(default_factory=list)
    _created_nodes: list[str] = field(default_factory=list)

    @property
    def ns(self) -> str:
        return f"bench-sbs-{self.run_id}"

    def namespaces(self) -> dict[str, str]:
        return {"create": self.ns, "watch": f"{self.ns}-watch", "bind": f"{self.ns}-bind", "deploy": f"{self.ns}-deploy"}

    def node_name(self, i: int) -> str:
        return f"{self.ns}-node-{i:04d}"

    async def execute(self) -> dict[str, Any]:
        from pyk8s.client import Client
        from pyk8s.client.kubeconfig import load_kubeconfig

        self.kc = load_kubeconfig(self.kubeconfig)
        self.client = Client.from_kubeconfig(self.kubeconfig, user_agent="bench-sidebyside", pool_size=40, timeout=120)
        self.watch_client = Client.from_kubeconfig(self.kubeconfig, user_agent="bench-sidebyside", timeout=120)
        heartbeat: asyncio.Task[None] | None = None
        cpu_start = self.plane.cpu()
        try:
            await self.claim()
            if "resources" in self.phases:
                self.figures["rss_fresh"] = self.plane.rss_mib()
            needs_pods = self.phases & {"create", "get", "delete"}
            if needs_pods:
                await self.create_one_client()
            if self.phases & {"create", "watch"}:
                await self.create_eight_clients_watched()
            if "get" in self.phases:
                self.kubectl_get()
            if "delete" in self.phases:
                await self.delete_namespace()
            if self.phases & {"bind", "deployment"}:
                await self.create_nodes()
                heartbeat = asyncio.create_task(self.heartbeats())
                if "bind" in self.phases:
                    await self.bind()
                if "deployment" in self.phases:
                    await self.deployment()
            if "resources" in self.phases:
                self.figures["rss_after"] = self.plane.rss_mib()
                self.figures["per_process"] = self.plane.per_process(cpu_start)
        finally:
            if heartbeat is not None:
                heartbeat.cancel()
            # an interrupt (Ctrl-C, SIGTERM) that lands during the clean-up must not cut it short: it
            # finishes, then the interrupt goes on (a second Ctrl-C still stops at once)
            cleanup = asyncio.ensure_future(self.cleanup())
            try:
                try:
                    await asyncio.shield(cleanup)
                except asyncio.CancelledError:
                    await cleanup
                    raise
            finally:
                await self.client.close()
                await self.watch_client.close()
        if "resources" in self.phases:
            await self.idle_cpu()
        return self.figures

    # -- claiming and cleaning up ---------------------------------------------------------------

    async def claim(self) -> None:
        """Create the run's namespaces, or refuse when any exists (nothing of it is touched then)."""
        from pyk8s.api.errors import StatusError

        for name in self.namespaces().values():
            if await self.client.get_or_none(NAMESPACES, name) is not None:
                raise Refused(f'namespace "{name}" already exists: not running against this cluster')
        # an earlier run cut short (killed with SIGKILL) leaves its fake nodes: they would take part in
        # the scheduling phases, so say so; they are not this run's to delete
        stale = (await self.client.list(NODES, label_selector=RUN_LABEL)).get("items") or []
        if stale:
            self.log(f"  warning: {len(stale)} nodes of earlier runs are still there "
                     f"(kubectl delete nodes -l {RUN_LABEL} removes them)")
        for name in self.namespaces().values():
            try:
                await self.client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                                      "metadata": {"name": name, "labels": {RUN_LABEL: self.run_id}}})
            except StatusError as e:
                if e.code == 409:
                    raise Refused(f'namespace "{name}" already exists: not running against this cluster') from e
                raise
            self._created_ns.append(name)
        # pods need the namespace's `default` ServiceAccount (the ServiceAccount admission plugin)
        for name in self._created_ns:
            await self.wait_for(lambda n=name: self.client.get_or_none(("", "v1", "serviceaccounts"), "default", n),  # type: ignore[misc]
                                f"the default ServiceAccount of {name}")

    async def wait_for(self, probe: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
        deadline = time.monotonic() + timeout
        while True:
            got = await probe()
            if got:
                return got
            if time.monotonic() > deadline:
                raise TimeoutError(f"{what} did not appear in {timeout:.0f} s")
            await asyncio.sleep(0.05)

    async def cleanup(self) -> None:
        """Delete what this run created, and only that."""
        from pyk8s.api.errors import StatusError
        from pyk8s.client import resource_path

        for ns in self._created_ns:
            try:
                await self.client.delete(NAMESPACES, ns)
            except StatusError as e:
                if e.code != 404:
                    raise
        deadline = time.monotonic() + self.timeout
        left = list(self._created_ns)
        while left and time.monotonic() < deadline:
            for ns in list(left):
                if await self.client.get_or_none(NAMESPACES, ns) is None:
                    left.remove(ns)
                    continue
                # pods bound to a fake node wait for a kubelet that never comes: delete them now
                await self.client.request("DELETE", resource_path(PODS, ns), {"gracePeriodSeconds": 0})
            if left:
                await asyncio.sleep(0.5)
        if left:
            self.log(f"  clean-up: namespaces {', '.join(left)} still terminating after {self.timeout:.0f} s")
        self._created_ns = left
        # the fake nodes: those this run created, found again by their label (never another node)
        if self._created_nodes:
            listed = await self.client.list(NODES, label_selector=f"{RUN_LABEL}={self.run_id}")
            mine = set(self._created_nodes)
            for n in listed.get("items") or []:
                if n["metadata"]["name"] in mine:
                    await self.client.delete_ignore_missing(NODES, n["metadata"]["name"])
            self._created_nodes = []

    # -- objects ---------------------------------------------------------------------------------

    def pod(self, schedulable: bool) -> dict[str, Any]:
        p = pod_default()
        p["metadata"]["labels"] = {RUN_LABEL: self.run_id}
        selector = {RUN_LABEL: self.run_id}
        if not schedulable:
            selector[NO_NODE_LABEL] = "true"
        p["spec"]["nodeSelector"] = selector
        p["spec"]["tolerations"] = [{"key": RUN_LABEL, "operator": "Equal", "value": self.run_id,
                                     "effect": "NoSchedule"}]
        return p

    def node(self, i: int) -> dict[str, Any]:
        name = self.node_name(i)
        n = node_default(i, {RUN_LABEL: self.run_id})
        n["metadata"]["name"] = name
        n["metadata"]["labels"]["kubernetes.io/hostname"] = name
        # only the bench's pods tolerate this: a foreign cluster's own pods never land on a fake node
        n["spec"]["taints"] = [{"key": RUN_LABEL, "value": self.run_id, "effect": "NoSchedule"}]
        n["status"]["conditions"] = [self.ready_condition()]
        return n

    @staticmethod
    def ready_condition() -> dict[str, str]:
        now = datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "bench-sbs fake node",
                "lastHeartbeatTime": now, "lastTransitionTime": now}

    def pool(self, concurrency: int) -> Any:
        from pyk8s.client.http1 import ConnectionPool

        headers = {"Accept": "application/json", "User-Agent": "bench-sidebyside", **self.kc.auth_headers()}
        return ConnectionPool(self.kc.server, self.kc.ssl_client_context(), headers, concurrency)

    # -- phases ----------------------------------------------------------------------------------

    async def idle_cpu(self) -> None:
        """CPU over an idle window once the run's objects are gone: the control plane's own background
        work (measured last, so a server the bench just started is past its start-up work)."""
        before, t = self.plane.cpu(), time.monotonic()
        await asyncio.sleep(self.idle_seconds)
        used = self.plane.cpu_since(before)
        self.figures["idle_cpu"] = used if isinstance(used, str) else 100 * used / (time.monotonic() - t)

    def record_cpu(self, key: str, before: dict[int, float]) -> None:
        """figures[key]: the control plane's CPU seconds since `before`; key_by_process: per process (JSON only)."""
        split = self.plane.cpu_by_process(before)
        self.figures[key] = sum(split.values()) if split else f"not measured: {self.plane.why_not}"
        if split:
            self.figures[f"{key}_by_process"] = split

    async def _create(self, ns: str, clients: int, prefix: str, cpu_key: str) -> tuple[float, float]:
        """(seconds, when the clock started) of POSTing sizes.pods pods; figures[cpu_key]: the CPU it cost."""
        pool = self.pool(clients)
        try:
            cpu0 = self.plane.cpu()
            took = await create_all(pool, PODS, ns, lambda i: self.pod(False), self.sizes.pods, prefix,
                                    concurrency=clients)
            started = time.monotonic() - took
            self.record_cpu(cpu_key, cpu0)
            return took, started
        finally:
            pool.close()

    async def create_one_client(self) -> None:
        took, _ = await self._create(self.namespaces()["create"], 1, "one", "create1_cpu")
        self.figures["create1_rate"] = self.sizes.pods / took
        self.log(f"  POST {self.sizes.pods} pods, 1 client: {self.sizes.pods / took:.0f} pods/s")

    async def create_eight_clients_watched(self) -> None:
        """8 clients POST; a watch opened before them counts the ADDED events until it has all."""
        ns = self.namespaces()["watch"]
        rv = (await self.client.list(PODS, ns, limit=1))["metadata"]["resourceVersion"]
        seen: set[str] = set()
        done = asyncio.Event()
        last = [0.0]

        async def watch() -> None:
            # from the list's resourceVersion: a stream that opens after the first creates still gets them
            async for ev in self.watch_client.watch(PODS, ns, rv, timeout_seconds=int(self.timeout)):
                if ev.get("type") == "ADDED":
                    seen.add(ev["object"]["metadata"]["name"])
                    if len(seen) >= self.sizes.pods:
                        last[0] = time.monotonic()
                        done.set()
                        return

        task = asyncio.create_task(watch())
        try:
            took, started = await self._create(ns, 8, "eight", "create8_cpu")
            try:
                await asyncio.wait_for(done.wait(), self.timeout)
                watched: float | str = last[0] - started
            except TimeoutError:
                watched = f"not reached: {len(seen)} of {self.sizes.pods} ADDED in {self.timeout:.0f} s"
        finally:
            task.cancel()
        self.figures["create8_rate"] = self.sizes.pods / took
        self.figures["watch"] = watched
        self.log(f"  POST {self.sizes.pods} pods, 8 clients: {self.sizes.pods / took:.0f} pods/s; watch {seconds(watched)}")

    def kubectl_get(self) -> None:
        """The real kubectl: the median of 3 runs (1 for a small run), after one that fills its discovery cache."""
        repeats = 3 if self.sizes.pods >= 500 else 1
        ns = self.namespaces()["create"]
        with tempfile.TemporaryDirectory(prefix="bench-sbs-kubectl-") as home:
            env = dict(os.environ, KUBECONFIG=os.path.abspath(self.kubeconfig), HOME=home)
            env.pop("KUBECTL_EXTERNAL_DIFF", None)

            def once(*args: str) -> tuple[float, str]:
                t = time.perf_counter()
                r = subprocess.run([self.kubectl, "get", "pods", "-n", ns, *args], capture_output=True, text=True,
                                   env=env, timeout=self.timeout)
                took = time.perf_counter() - t
                if r.returncode != 0:
                    raise RuntimeError(f"kubectl get pods {' '.join(args)} failed: {r.stderr.strip()}")
                return took, r.stdout

            once("--no-headers")
            for key, args in (("get_table", ()), ("get_json", ("-o", "json"))):
                times = []
                for _ in range(repeats):
                    took, out = once(*args)
                    times.append(took)
                got = out.count("\n") - 1 if not args else len(json.loads(out)["items"])
                if got != self.sizes.pods:
                    raise RuntimeError(f"kubectl get pods {' '.join(args)} listed {got} pods, not {self.sizes.pods}")
                self.figures[key] = statistics.median(times)
        self.log(f"  kubectl get pods: table {self.figures['get_table']:.2f} s, -o json {self.figures['get_json']:.2f} s")

    async def delete_namespace(self) -> None:
        """DELETE the namespace holding the 1-client phase's pods; the clock stops when a GET says 404."""
        name = self.namespaces()["create"]
        for key, ns in (("delete_ns", name), ("delete_ns_watch", self.namespaces()["watch"])):
            t = time.monotonic()
            await self.client.delete(NAMESPACES, ns)
            deadline = t + self.timeout
            while await self.client.get_or_none(NAMESPACES, ns) is not None:
                if time.monotonic() > deadline:
                    raise TimeoutError(f"namespace {ns} still there after {self.timeout:.0f} s")
                await asyncio.sleep(0.05)
            self.figures[key] = time.monotonic() - t
            self._created_ns.remove(ns)
        self.log(f"  delete namespace with {self.sizes.pods} pods: {self.figures['delete_ns']:.1f} s")

    async def create_nodes(self) -> None:
        pool = self.pool(16)
        try:
            # names recorded before the creates: a run cut short still deletes those that landed
            self._created_nodes = [self.node_name(i) for i in range(self.sizes.nodes)]
            await create_all(pool, NODES, None, self.node, self.sizes.nodes, "unused", concurrency=16)
        finally:
            pool.close()

    async def heartbeats(self) -> None:
        """Move each fake node's Ready heartbeat every HEARTBEAT_PERIOD, spread over the period, so the
        node lifecycle controller (40-50 s grace) never taints them unreachable mid-phase."""
        from pyk8s.api.errors import StatusError

        step = HEARTBEAT_PERIOD / max(1, len(self._created_nodes))
        while True:
            for name in list(self._created_nodes):
                try:
                    await self.client.patch(NODES, name, {"status": {"conditions": [self.ready_condition()]}},
                                            sub="status", patch_type="merge")
                except StatusError:
                    pass
                await asyncio.sleep(step)

    async def _bound(self, ns: str, start: Callable[[], Any], cpu_key: str) -> float | str:
        """Seconds from start() until sizes.pods pods of ns are bound; figures[cpu_key]: the CPU it cost."""
        ctr = BoundCounter(self.watch_client, ns)
        await ctr.start()
        try:
            cpu0 = self.plane.cpu()
            t0 = await start()
            reached = await ctr.wait(self.sizes.pods, self.timeout)
            self.record_cpu(cpu_key, cpu0)
            if not reached:
                return f"not reached: {len(ctr.bound)} of {self.sizes.pods} bound in {self.timeout:.0f} s"
            return ctr.times[-1] - t0
        finally:
            await ctr.stop()

    async def bind(self) -> None:
        ns = self.namespaces()["bind"]
        pool = self.pool(8)

        async def create() -> float:
            took = await create_all(pool, PODS, ns, lambda i: self.pod(True), self.sizes.pods, "bind", concurrency=8)
            return time.monotonic() - took

        try:
            self.figures["bind"] = await self._bound(ns, create, "bind_cpu")
        finally:
            pool.close()
        self.log(f"  {self.sizes.pods} pods bound on {self.sizes.nodes} nodes: {seconds(self.figures['bind'])}")

    async def deployment(self) -> None:
        ns = self.namespaces()["deploy"]
        template = self.pod(True)
        template["metadata"]["labels"]["app"] = "bench-sbs"
        body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "bench", "namespace": ns},
                "spec": {"replicas": self.sizes.pods, "selector": {"matchLabels": {"app": "bench-sbs"}},
                         "template": {"metadata": template["metadata"], "spec": template["spec"]}}}

        async def create() -> float:
            t = time.monotonic()
            await self.client.create(DEPLOYMENTS, body, ns)
            return t

        self.figures["deployment"] = await self._bound(ns, create, "deployment_cpu")
        self.log(f"  Deployment of {self.sizes.pods}, all bound: {seconds(self.figures['deployment'])}")
