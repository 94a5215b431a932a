"""The kubelet: ties node registration, pod workers, volumes, probes, eviction and static pods together.

Everything it learns comes from the API (pods bound to this node, services, the
ConfigMaps/Secrets its pods name) and from the runtime; everything it decides goes back
through the API (node status, Lease, pod status, events, the final pod DELETE).
`start_local_agent` runs one inside `pyk8s server` for this machine.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import ipaddress
import logging
import os
import shlex
import shutil
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.quantity import parse_quantity
from ..client import Client, EventRecorder, Informer
from ..datadir import create_private_file, ensure_private_dir
from .backoff import Backoff
from .devices import extended_resources_fit, start_device_manager
from .dns import read_host_resolv
from .dra import start_dra_manager
from .eviction import DEFAULT_HARD, EvictionManager, parse_thresholds
from .images.reference import ReferenceError, parse_reference
from .images.registries import load_registries
from .images.service import ImageService
from .images.store import ImageStore
from .node import KUBELET_VERSION, NODES, NodeManager, runc_version
from .objects import ObjectCache, TokenManager
from .pleg import PLEG
from .podworkers import PodWorker, PodWorkers
from .probes import ProbeManager
from .runtime.interface import EXITED, RUNNING, ContainerStatus
from .runtime.resources import machine_memory_capacity, pod_requests
from .staticpods import StaticPods, is_mirror
from .status import StatusManager
from .volumes import VolumeManager

log = logging.getLogger("pyk8s.kubelet")

PODS = ("", "v1", "pods")
SERVICES = ("", "v1", "services")
PVCS = ("", "v1", "persistentvolumeclaims")
PVS = ("", "v1", "persistentvolumes")


@dataclass
class KubeletConfig:
    node_name: str
    data_dir: str
    node_labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    pod_cidr: str = ""
    node_ip: str = ""
    cluster_dns: list[str] = field(default_factory=lambda: ["10.96.0.10"])
    cluster_domain: str = "cluster.local"
    manifest_dir: str = ""  # default <data-dir>/manifests
    eviction_hard: str = DEFAULT_HARD
    eviction_transition: float = 300.0
    eviction_interval: float = 10.0
    reserved: dict[str, str] = field(default_factory=dict)
    max_pods: int = 110
    runtime: str = ""  # "", "runc" or "process"
    cni_bridge: str = "pyk8s0"
    resolv_conf: str = "/etc/resolv.conf"
    api_audience: str = ""
    # pods brought up at once (first sync: volumes, sandbox, containers); 0: no limit, as upstream's pod workers. Most
    # of a start is waiting for runc, CNI and the API, so more overlap helps: bench/podstartup, 100 pods, 2 cores at
    # load ~20: p99 41.9 s with 4, 35.1 s with 16 (older kubelet); now 21.7/15.2 s with 16, 15.9/13.6 s unlimited
    start_concurrency: int = 0
    runc_root: str = ""  # default /run/pyk8s/runc
    static_interval: float = 20.0  # upstream's fileCheckFrequency
    # the kubelet's HTTPS port (logs, exec, attach, port-forward); served when a cert is given
    serving_cert_file: str = ""
    serving_key_file: str = ""
    client_ca_file: str = ""
    port: int = 10250
    registries_file: str = ""  # k3s-style registries.yaml (default <data-dir>/registries.yaml)
    cluster_cidr: str = ""  # pods' traffic within it keeps its source IP (not masqueraded); "": only the node's own
    flannel_backend: str = "none"  # routes to other nodes' pods (pyk8s.flannel): auto, host-gw, vxlan or none
    flannel_kubeconfig: str = ""  # flannel's own identity (it lists every Node); "": the kubelet's
    root_dir: str = ""  # upstream's --root-dir (pods/, device-plugins/, pod-resources/); "": <data-dir>/kubelet
    device_plugins: bool = True  # the device manager and pod-resources sockets (`pyk8s server --disable device-plugins`)


def _expr_ok(e: dict[str, Any], labels: dict[str, str]) -> bool:
    key, op, vals = e.get("key", ""), e.get("operator", ""), list(e.get("values") or [])
    if op == "In":
        return key in labels and labels[key] in vals
    if op == "NotIn":
        return key not in labels or labels[key] not in vals
    if op == "Exists":
        return key in labels
    if op == "DoesNotExist":
        return key not in labels
    if op in ("Gt", "Lt") and key in labels and len(vals) == 1:
        try:
            a, b = int(labels[key]), int(vals[0])
        except ValueError:
            return False
        return a > b if op == "Gt" else a < b
    return False


def _node_affinity_ok(pod: dict[str, Any], labels: dict[str, str], node_name: str) -> bool:
    spec = pod.get("spec") or {}
    for k, v in (spec.get("nodeSelector") or {}).items():
        if labels.get(k) != v:
            return False
    req = (((spec.get("affinity") or {}).get("nodeAffinity") or {})
           .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = req.get("nodeSelectorTerms") or []
    if not terms:
        return True
    for term in terms:
        exprs = term.get("matchExpressions") or []
        fields = term.get("matchFields") or []
        if not exprs and not fields:
            continue
        ok = all(_expr_ok(e, labels) for e in exprs)
        for f in fields:
            if f.get("key") == "metadata.name":
                vals = f.get("values") or []
                op = f.get("operator")
                ok = ok and ((node_name in vals) if op == "In" else (node_name not in vals) if op == "NotIn" else False)
        if ok:
            return True
    return False


class Kubelet:
    def __init__(self, client: Client, config: KubeletConfig) -> None:
        self.client = client
        self.config = config
        self.node_name = config.node_name
        self.data_dir = os.path.abspath(config.data_dir)
        self.root = os.path.abspath(config.root_dir) if config.root_dir else os.path.join(self.data_dir, "kubelet")
        self.log_root = os.path.join(self.data_dir, "logs")
        self.seccomp_root = os.path.join(self.root, "seccomp")
        # its pki key, Secret volumes and logs: owner only, as the server's data dir
        ensure_private_dir(self.data_dir)
        for d in (self.root, self.log_root, os.path.join(self.root, "pods")):
            os.makedirs(d, exist_ok=True)
        self.cluster_dns = list(config.cluster_dns)
        self.cluster_domain = config.cluster_domain
        self.host_resolv = read_host_resolv(config.resolv_conf)
        self.memory_capacity = machine_memory_capacity()
        # two Event writes at a time (upstream's kubelet rate-limits its events, --event-qps 50): a pod burst's ~3
        # events per pod do not queue ahead of its TokenRequests and status patches
        self.recorder = EventRecorder(client, "kubelet", host=config.node_name, max_in_flight=2)
        self.image_store = ImageStore(os.path.join(self.data_dir, "images"))
        self.images = ImageService(self.image_store, registries_file=config.registries_file
                                   or os.path.join(self.data_dir, "registries.yaml"))
        self.container_backoff = Backoff(10.0, 300.0)
        self.image_backoff = Backoff(10.0, 300.0)
        # First syncs may queue here in arrival order (start_concurrency > 0). Unlimited by default: the last pod of a
        # burst (the p99) starts soonest when every start overlaps, its runc and CNI programs getting their share of
        # a busy machine's CPU alongside the others, as upstream's pod workers do.
        self.start_slots: asyncio.Semaphore | contextlib.nullcontext[None] = (
            asyncio.Semaphore(config.start_concurrency) if config.start_concurrency > 0 else contextlib.nullcontext())
        self.runtime: Any = None
        self.pod_workers = PodWorkers(self)
        from .metrics import KubeletMetrics

        self.metrics = KubeletMetrics(self)  # GET /metrics on the kubelet's port (kubelet/metrics.py)
        self.status_manager = StatusManager(client)
        self.objects = ObjectCache(client, self._object_changed)
        self.tokens = TokenManager(client)
        self.probes: ProbeManager = None  # type: ignore[assignment]
        self.pleg: PLEG = None  # type: ignore[assignment]
        hard = parse_thresholds(config.eviction_hard)
        self.eviction = EvictionManager(hard, self.data_dir, os.path.join(self.data_dir, "images"),
                                        config.eviction_transition, config.eviction_interval)
        self.node_manager = NodeManager(
            client, config.node_name, self.data_dir, self.recorder, labels=config.node_labels, taints=config.taints,
            pod_cidr=config.pod_cidr, node_ip=config.node_ip, reserved=config.reserved, hard_thresholds=hard,
            images=self.image_store.list, pressure=self.eviction.conditions, readiness=self._readiness,
            max_pods=config.max_pods, kubelet_port=config.port)
        self.volumes = VolumeManager(os.path.join(self.root, "pods"), self._get_object, self.tokens.token,
                                     self._get_pvc, self._get_pv, self.allocatable, config.api_audience)
        self.node_manager.volumes_in_use = self.volumes.volumes_in_use
        self.volumes.on_in_use_change = self._volumes_in_use_changed
        self._status_pokes: set[asyncio.Task[None]] = set()
        self.static = StaticPods(self, config.manifest_dir or os.path.join(self.data_dir, "manifests"),
                                 config.static_interval)
        self.pod_informer: Informer = None  # type: ignore[assignment]
        self.service_informer: Informer = None  # type: ignore[assignment]
        self._tasks: list[asyncio.Task[None]] = []
        self._image_names: dict[str, tuple[str, str]] = {}
        self.started_at = 0.0
        self.owns_client = False  # close the client on stop (the in-process kubelet's own certificate client)
        self.devices: Any = None  # the device manager (kubelet/devices.py), once started
        self.dra: Any = None  # the DRA manager (kubelet/dra.py), once started
        self.pod_resources: Any = None

    # ------------------------------------------------------------------ lifecycle

    async def start(self) -> None:
        from .runtime import new_runtime
        from .runtime.cni import CNI, bridge_conflist

        self.started_at = time.time()
        await self.node_manager.register()
        cidr = self.config.pod_cidr or await self.node_manager.wait_pod_cidr()
        if not cidr:
            cidr = "10.244.0.0/24"
            log.warning("node %s has no podCIDR; using %s", self.node_name, cidr)
        self.flannel: Any = None
        if self.config.flannel_backend not in ("", "none"):
            from ..flannel import Flannel

            fclient = self.client
            if self.config.flannel_kubeconfig:
                fclient = Client.from_kubeconfig(self.config.flannel_kubeconfig, user_agent="flannel/pyk8s")
            self.flannel = Flannel(fclient, self.node_name, self.node_manager.node_ip, cidr,
                                   self.config.flannel_backend)
            try:
                await self.flannel.prepare()  # the pods' MTU depends on the backend and the uplink
            except OSError as e:  # no iproute2 here: pods run, reachable from this node only
                log.warning("flannel disabled: %s", e)
                self.flannel = None
        conflist = bridge_conflist(cidr, bridge=self.config.cni_bridge,
                                   data_dir=os.path.join(self.data_dir, "cni", "networks"),
                                   mtu=self.flannel.mtu if self.flannel else 0)
        if await ensure_masquerade(cidr, self.config.cni_bridge, self.config.cluster_cidr):
            conflist["plugins"][0]["ipMasq"] = False  # one node-wide rule instead of a chain per pod
        cni = CNI(conflist)
        kw: dict[str, Any] = {"image_store": self.image_store, "cni": cni, "pod_cidr": cidr}
        if self.config.runtime:
            kw["force"] = self.config.runtime
        if self.config.runc_root:
            kw["runc_root"] = self.config.runc_root
        self.runtime = new_runtime(self.data_dir, **kw)
        self.metrics.instrument_runtime(self.runtime)
        v = await self.runtime.version()
        name = v.get("runtimeName", "runc")
        version = (v.get("runtimeVersion") or runc_version()).split("+")[0]  # drop distro build suffixes (+ds1)
        self.node_manager.runtime_version = f"{name}://{version}"
        self.probes = ProbeManager(self.runtime, self.record, self.pod_workers.wake)
        self.pleg = PLEG(self.runtime, self.pod_workers.wake)
        await self.pleg.relist()  # know what already runs before pods arrive, to adopt it
        # before pods are admitted: the checkpoint holds the devices of those already running
        if self.config.device_plugins:
            self.devices, self.pod_resources = await start_device_manager(self)
        self.node_manager.extended_resources = self.devices.capacity if self.devices is not None else None
        self.dra = await start_dra_manager(self.root, self.client)
        self.service_informer = Informer(self.client, SERVICES)
        self.service_informer.start()
        self.pod_informer = Informer(self.client, PODS, field_selector=f"spec.nodeName={self.node_name}")
        self.pod_informer.add_handlers(self._pod_added, self._pod_updated, self._pod_deleted)
        self.pod_informer.start()
        await asyncio.gather(self.pod_informer.wait_synced(60), self.service_informer.wait_synced(60))
        await self.node_manager.update_status(force=True)
        self.node_manager.event("Normal", "NodeAllocatableEnforced", "Updated Node Allocatable limit across pods")
        self.node_manager.start()
        if self.flannel is not None:
            await self.flannel.start()
        self.static.start()
        self.pleg.start()
        self._tasks = [asyncio.create_task(self._housekeeping(), name="kubelet-housekeeping"),
                       asyncio.create_task(self._eviction_loop(), name="kubelet-eviction")]
        await self._start_server()
        log.info("kubelet %s started on %s (runtime %s, podCIDR %s)", KUBELET_VERSION, self.node_name,
                 self.node_manager.runtime_version, cidr)

    async def _start_server(self) -> None:
        """The streaming server the API server proxies pods/log, exec, attach and port-forward to."""
        c = self.config
        if not (c.serving_cert_file and c.serving_key_file and c.client_ca_file) or self.runtime is None:
            return
        from .server import KubeletServer, server_tls_context

        async def lookup(namespace: str, name: str) -> Any:
            return self.pod_lookup(namespace, name)

        from .auth import KubeletAuth
        from .stats import SummaryProvider, provider_routes

        def api_pod(namespace: str, name: str) -> dict[str, Any] | None:
            found = self.pod_lookup(namespace, name)
            return found[0] if found else None

        srv = KubeletServer(self.runtime, lookup, server_tls_context(c.serving_cert_file, c.serving_key_file,
                                                                     c.client_ca_file), port=c.port,
                            auth=KubeletAuth(self.client), node_name=self.node_name)
        self.stats = SummaryProvider(self.node_name, self.runtime, self.root, get_pod=api_pod,
                                     images_dir=os.path.join(self.data_dir, "images"))
        provider_routes(srv.app, self.stats)
        srv.app.router.add_get("/metrics", self.metrics.handle)
        try:
            await srv.start()
        except OSError as e:  # another kubelet on this machine holds the port: pods still run
            log.warning("kubelet server not started on port %d: %s (kubectl logs/exec will not reach this node)",
                        c.port, e)
            return
        self.server: Any = srv  # None again after stop()
        self.stats.start()

    async def stop(self) -> None:
        """Stop the kubelet; containers keep running and a new kubelet adopts them."""
        stats = getattr(self, "stats", None)
        if stats is not None:
            await stats.stop()
        srv = getattr(self, "server", None)
        if srv is not None:
            with contextlib.suppress(Exception):
                await srv.stop()
            self.server = None
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await t
        self._tasks = []
        for part in (self.static, self.pleg, self.node_manager, getattr(self, "flannel", None), self.pod_resources,
                     self.devices, self.dra):
            if part is not None:
                with contextlib.suppress(Exception):
                    await part.stop()
        flannel = getattr(self, "flannel", None)
        if flannel is not None and flannel.client is not self.client:
            await flannel.client.close()
        for inf in (self.pod_informer, self.service_informer):
            if inf is not None:
                await inf.stop()
        await self.pod_workers.stop()
        if self.probes is not None:
            await self.probes.stop()
        await self.objects.stop()
        with contextlib.suppress(Exception):  # (bounded: its writes go two at a time, and they are best effort)
            await asyncio.wait_for(self.recorder.flush(), 10)
        if self.runtime is not None:
            await self.runtime.close()
        if self.owns_client:
            await self.client.close()

    # ------------------------------------------------------------------ pod sources

    def _pod_added(self, pod: dict[str, Any]) -> None:
        if is_mirror(pod):
            self.static.mirror_changed(pod)
            return
        self.pod_workers.update(pod)

    def _pod_updated(self, _old: dict[str, Any], pod: dict[str, Any]) -> None:
        self._pod_added(pod)

    def _pod_deleted(self, pod: dict[str, Any]) -> None:
        if is_mirror(pod):
            self.static.mirror_deleted(pod)
            return
        self.pod_workers.remove(pod["metadata"]["uid"])

    def _object_changed(self, kind: str, ns: str, name: str) -> None:
        for uid in self.objects.users(kind, ns, name):
            self.pod_workers.wake(uid)

    def api_pod_for(self, w: PodWorker) -> dict[str, Any] | None:
        if w.static:
            m = self.static.mirror_for(w.pod)
            if m is None or m["metadata"].get("deletionTimestamp") or \
                    (m["metadata"].get("annotations") or {}).get("kubernetes.io/config.mirror") != w.uid:
                return None
            return m
        return w.pod

    def pod_lookup(self, namespace: str, name: str) -> tuple[dict[str, Any], dict[str, str], dict[str, str]] | None:
        """For the kubelet's streaming server: the pod, its current and its previous container IDs by name."""
        for w in list(self.pod_workers.workers.values()):
            md = w.pod["metadata"]
            if md.get("name") != name or (md.get("namespace") or "default") != namespace or w.removed:
                continue
            current, previous = {}, {}
            for cname, runs in w.view.containers.items():
                if runs:
                    current[cname] = runs[0].id
                if len(runs) > 1:
                    previous[cname] = runs[1].id
            return w.pod, current, previous
        return None

    # ------------------------------------------------------------------ services for the workers

    def record(self, pod: dict[str, Any], type_: str, reason: str, message: str, field_path: str = "") -> None:
        ref = {"kind": "Pod", "apiVersion": "v1", "metadata": pod.get("metadata") or {}}
        self.recorder.event(ref, type_, reason, message, field_path)

    def host_ips(self) -> list[str]:
        return [self.node_manager.node_ip]

    def allocatable(self) -> dict[str, Any]:
        return self.node_manager.allocatable

    def services(self) -> list[dict[str, Any]]:
        return self.service_informer.list() if self.service_informer is not None else []

    def image_status_names(self, st: ContainerStatus) -> tuple[str, str]:
        """(image, imageID) to report for a container: the normalized reference and a repo digest or the image ID."""
        hit = self._image_names.get(st.image + "|" + st.image_id)
        if hit is not None:
            return hit
        try:
            name = str(parse_reference(st.image))
        except ReferenceError:
            name = st.image
        img = self.image_store.get(st.image_id) if st.image_id else None
        image_id = (img.repo_digests[0] if img is not None and img.repo_digests else st.image_id)
        self._image_names[st.image + "|" + st.image_id] = (name, image_id)
        return name, image_id

    async def _get_object(self, pod: dict[str, Any], kind: str, name: str) -> dict[str, Any] | None:
        return await self.objects.get(kind, pod["metadata"].get("namespace") or "default", name)

    async def _get_pvc(self, ns: str, name: str) -> dict[str, Any] | None:
        return await self.client.get_or_none(PVCS, name, ns)

    async def _get_pv(self, name: str) -> dict[str, Any] | None:
        return await self.client.get_or_none(PVS, name)

    def _readiness(self) -> tuple[bool, str]:
        if self.runtime is None:
            return False, "container runtime status check may not have completed yet"
        cni = getattr(self.runtime, "cni", None)
        if cni is not None and not cni.available():
            return False, ("container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady "
                           "message:Network plugin returns error: cni plugin not initialized")
        return True, ""

    def forget_pod(self, uid: str) -> None:
        self.objects.unregister(uid)
        self.tokens.forget(uid)
        self.probes.stop_pod(uid)
        self.status_manager.forget(uid)
        self.pleg.forget(uid)
        if self.devices is not None:
            self.devices.forget(uid)
        if self.dra is not None:
            self.dra.forget(uid)

    async def admit(self, pod: dict[str, Any], uid: str) -> tuple[str, str] | None:
        """upstream canAdmitPod: eviction (node pressure), node affinity, resources, host ports."""
        if pod["metadata"].get("annotations", {}).get("kubernetes.io/config.source", "api") != "api":
            # static pods are critical: only their devices are allocated
            return await self.devices.admit(pod) if self.devices is not None else None
        r = self.eviction.admit(pod)
        if r is not None:
            return r
        if not await self._node_affinity_admits(pod):
            return "NodeAffinity", "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector"
        admitted = [w for w in self.pod_workers.active() if w.uid != uid and w.admitted and not w.view.terminal]
        others = [w.pod for w in admitted]
        alloc = self.allocatable()
        used = {"cpu": 0, "memory": 0, "ephemeral-storage": 0}
        for w in admitted:
            for k, v in w.requests().items():
                used[k] += v
        want = pod_requests(pod)
        if len(others) + 1 > int(alloc.get("pods", "110")):
            return "OutOfpods", (f"Node didn't have enough resource: pods, requested: 1, used: {len(others)}, "
                                 f"capacity: {alloc.get('pods')}")
        for name in ("cpu", "memory", "ephemeral-storage"):
            if not want[name] or name not in alloc:
                continue
            cap = parse_quantity(alloc[name]).to_milli() if name == "cpu" else parse_quantity(alloc[name]).to_int()
            if used[name] + want[name] > cap:
                return f"OutOf{name}", (f"Node didn't have enough resource: {name}, requested: {want[name]}, "
                                        f"used: {used[name]}, capacity: {cap}")
        ports = set()
        for o in others:
            for c in (o.get("spec") or {}).get("containers") or []:
                for p in c.get("ports") or []:
                    if p.get("hostPort"):
                        ports.add((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", p["hostPort"]))
        for c in (pod.get("spec") or {}).get("containers") or []:
            for p in c.get("ports") or []:
                if p.get("hostPort"):
                    key = (p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", p["hostPort"])
                    if any(k[1:] == key[1:] and (k[0] == key[0] or "0.0.0.0" in (k[0], key[0])) for k in ports):
                        return "NodePorts", "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports"
        r = await self._extended_resources_fit(pod, others)
        if r is not None:
            return r
        if self.devices is not None:  # last, so a pod rejected above holds no devices
            return await self.devices.admit(pod)
        return None

    async def _extended_resources_fit(self, pod: dict[str, Any], others: list[dict[str, Any]]) -> tuple[str, str] | None:
        """Extended resources no device plugin manages, against the node's allocatable; on a shortage judged again
        on the node as the API server has it now (a hand-patched resource may be newer than our copy)."""
        managed = self.devices.resources if self.devices is not None else ()
        r = extended_resources_fit(pod, others, (self.node_manager.node.get("status") or {}).get("allocatable") or {},
                                   managed)
        if r is None:
            return None
        try:
            fresh = await self.client.get(NODES, self.node_name)
        except Exception as e:  # the API unreachable: judge on what we have
            log.info("re-reading node %s for admission: %s", self.node_name, e)
            return r
        return extended_resources_fit(pod, others, (fresh.get("status") or {}).get("allocatable") or {}, managed)

    async def _node_affinity_admits(self, pod: dict[str, Any]) -> bool:
        """Our copy of the node can be older than the labels the scheduler placed the pod by: on a mismatch,
        judge again on the node as the API server has it now (upstream's predicate admit handler re-fetches)."""
        labels = (self.node_manager.node.get("metadata") or {}).get("labels") or {}
        if _node_affinity_ok(pod, labels, self.node_name):
            return True
        try:
            fresh = await self.client.get(NODES, self.node_name)
        except Exception as e:  # the API unreachable: judge on what we have, as upstream does
            log.info("re-reading node %s for admission: %s", self.node_name, e)
            return False
        self.node_manager.node = fresh
        return _node_affinity_ok(pod, (fresh.get("metadata") or {}).get("labels") or {}, self.node_name)

    # ------------------------------------------------------------------ loops

    async def _housekeeping(self) -> None:
        """Remove what belongs to pods nobody knows (deleted while we were down), and old back-off entries."""
        while True:
            await asyncio.sleep(5)
            try:
                await self.static.scanned.wait()
                known = set(self.pod_workers.workers) | set(self.static.pods)
                known |= {p["metadata"]["uid"] for p in self.pod_informer.list()}
                for uid in self.pleg.uids() - known:
                    if uid in self.pod_workers.finished and not self.pleg.sandboxes.get(uid) \
                            and not self.pleg.containers.get(uid):
                        continue
                    await self._remove_orphan(uid)
                for uid in self.volumes.pod_dirs():
                    if uid not in known:
                        with contextlib.suppress(OSError):
                            self.volumes.teardown(uid)
                self.container_backoff.gc()
                self.image_backoff.gc()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("housekeeping")

    async def _remove_orphan(self, uid: str) -> None:
        sbs, cids = self.pleg.known(uid)
        log.info("removing containers of pod %s, which is no longer bound here", uid)
        for cid in cids:
            with contextlib.suppress(Exception):
                st = await self.runtime.container_status(cid)
                if st.state == RUNNING:
                    await self.runtime.stop_container(cid, 2)
        for sid in sbs:
            with contextlib.suppress(Exception):
                sb = await self.runtime.sandbox_status(sid)
                shutil.rmtree(sb.config.log_directory or "/nonexistent", ignore_errors=True)
            with contextlib.suppress(Exception):
                await self.runtime.remove_sandbox(sid)
        for cid in cids:
            with contextlib.suppress(Exception):
                await self.runtime.remove_container(cid)
        self.pleg.forget(uid)

    def device_resources_changed(self) -> None:
        """A device plugin's devices changed: report capacity/allocatable now, as volumesInUse."""
        self._volumes_in_use_changed()

    def _volumes_in_use_changed(self) -> None:
        """volumesInUse changed: report it now rather than at the next status interval."""
        async def report() -> None:
            try:
                await self.node_manager.update_status()
            except Exception as e:  # noqa: BLE001 - the status loop reports it again
                log.debug("reporting volumesInUse: %s", e)

        if self.node_manager.node:
            t = asyncio.get_running_loop().create_task(report())
            self._status_pokes.add(t)  # a reference until done, so the task is not collected
            t.add_done_callback(self._status_pokes.discard)

    async def _eviction_loop(self) -> None:
        while True:
            try:
                before = self.eviction.conditions()
                met = self.eviction.evaluate()
                if self.eviction.conditions() != before:
                    await self.node_manager.update_status(force=True)
                if met:
                    await self._evict_one()
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("eviction manager")
            await asyncio.sleep(self.eviction.interval)

    async def _evict_one(self) -> None:
        candidates = [w for w in self.pod_workers.active() if not w.static and not w.evicted and not w.view.terminal]
        by_uid = {w.uid: w for w in candidates}

        async def usage(pod: dict[str, Any], resource: str) -> tuple[int, dict[str, int]]:
            w = by_uid[pod["metadata"]["uid"]]
            per: dict[str, int] = {}
            if resource == "memory":
                for name, runs in w.view.containers.items():
                    if runs and runs[0].state == RUNNING:
                        with contextlib.suppress(Exception):
                            per[name] = (await self.runtime.container_stats(runs[0].id)).memory_working_set
            elif resource in ("ephemeral-storage", "inodes"):
                per["_"] = _dir_size(self.volumes.pod_dir(w.uid))
                for runs in w.view.containers.values():
                    for st in runs:
                        with contextlib.suppress(OSError):
                            per["_"] += os.path.getsize(st.log_path)
            elif resource == "pids":
                for runs in w.view.containers.values():
                    if runs and runs[0].state == RUNNING:
                        with contextlib.suppress(Exception):
                            per[runs[0].name] = (await self.runtime.container_stats(runs[0].id)).pids
            return sum(per.values()), per

        picked = await self.eviction.pick([w.pod for w in candidates], usage)
        if picked is None:
            return
        pod, message = picked
        w = by_uid[pod["metadata"]["uid"]]
        log.warning("evicting pod %s/%s: %s", pod["metadata"].get("namespace"), pod["metadata"]["name"], message)
        self.record(pod, "Warning", "Evicted", message)
        w.evict(message, message)


def _dir_size(path: str) -> int:
    total = 0
    for dirpath, _dirs, files in os.walk(path):
        for f in files:
            with contextlib.suppress(OSError):
                total += os.lstat(os.path.join(dirpath, f)).st_size
    return total


def masquerade_rule(cidr: str, bridge: str, cluster_cidr: str = "") -> list[str]:
    """As flannel's: traffic to other pods (the cluster CIDR) keeps its source IP, so pods on other nodes see the
    client pod's address; only what leaves the pod network is masqueraded."""
    pods, cluster = ipaddress.ip_network(cidr, strict=False), ipaddress.ip_network(cluster_cidr or cidr, strict=False)
    keep = cluster_cidr if pods.version == cluster.version and pods.subnet_of(cluster) else cidr  # type: ignore[arg-type]
    return ["POSTROUTING", "-s", cidr, "!", "-d", keep, "-m", "comment", "--comment",
            f"pyk8s {bridge} pod network masquerade", "-j", "MASQUERADE"]


async def _iptables(*args: str) -> int:
    try:
        proc = await asyncio.create_subprocess_exec("iptables", "-w", "5", *args, stdout=asyncio.subprocess.DEVNULL,
                                                    stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return -1
    return await proc.wait()


async def ensure_masquerade(cidr: str, bridge: str, cluster_cidr: str = "") -> bool:
    """SNAT what pods send beyond their network, with one node-wide rule (as kubenet and flannel do).

    The bridge plugin's ipMasq makes a chain and rules per pod: several iptables runs, serialised on the
    xtables lock, for every sandbox created and deleted. False when iptables is not usable here.
    """
    rule = masquerade_rule(cidr, bridge, cluster_cidr)
    await remove_masquerade(cidr, bridge, keep=rule)  # one from before a change of --cluster-cidr
    if await _iptables("-t", "nat", "-C", *rule) == 0:
        return True
    return await _iptables("-t", "nat", "-A", *rule) == 0


async def remove_masquerade(cidr: str, bridge: str, keep: list[str] | None = None) -> None:
    """Remove this bridge's masquerade rules (but `keep`), whatever cluster CIDR they were made for."""
    try:
        proc = await asyncio.create_subprocess_exec("iptables", "-w", "5", "-t", "nat", "-S", "POSTROUTING",
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
    except OSError:
        return
    out, _ = await proc.communicate()
    comment = f"pyk8s {bridge} pod network masquerade"
    for line in out.decode().splitlines():
        rule = shlex.split(line)[1:]  # "-A POSTROUTING ..." as iptables prints it
        if comment in rule and "-s" in rule and rule[rule.index("-s") + 1] in (cidr, cidr.split("/")[0] + "/32") \
                and (keep is None or not _same_rule(rule, keep)):
            await _iptables("-t", "nat", "-D", *rule)


def _same_rule(printed: list[str], wanted: list[str]) -> bool:
    """iptables -S prints the match module before the comment ("-m comment --comment"): compare as sets of words."""
    return sorted(printed) == sorted(wanted)


def use_cheap_subprocesses() -> None:
    """Spawn children through pidfds on a plain asyncio loop (call from within that running loop).

    The kubelet spawns ~10 processes per pod (unshare, CNI plugins, runc, shims). uvloop forks the whole
    interpreter for each (~2.5 ms of CPU and ~13 ms on the event loop at 45 MB); asyncio's Popen uses vfork
    and a pidfd watcher waits without a thread per child, about 8 times cheaper.
    """
    try:
        watcher: Any = asyncio.PidfdChildWatcher()
        os.close(os.pidfd_open(os.getpid()))
        watcher.attach_loop(asyncio.get_running_loop())  # call from the kubelet's running loop
    except (AttributeError, OSError):
        watcher = asyncio.ThreadedChildWatcher()
    policy = asyncio.get_event_loop_policy()
    import warnings

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)
            policy.set_child_watcher(watcher)
    except NotImplementedError:  # uvloop's policy (pyk8s server) has none; our thread's plain loop asks it for one
        policy.get_child_watcher = lambda: watcher  # type: ignore[method-assign]


class _NoAgent:
    """What start_local_agent returns when it cannot run a kubelet here."""

    def __init__(self, reason: str) -> None:
        self.reason = reason

    async def stop(self) -> None:
        return None


class LocalAgent:
    """A kubelet on its own thread and event loop inside `pyk8s server` (a plain asyncio loop: see
    use_cheap_subprocesses; and pod work does not queue behind API requests on the server's loop)."""

    def __init__(self) -> None:
        self.loop: asyncio.AbstractEventLoop | None = None
        self.thread: threading.Thread | None = None
        self.kubelet: Kubelet | None = None

    async def start(self, make: Callable[[], Kubelet]) -> None:
        started: concurrent.futures.Future[None] = concurrent.futures.Future()

        def run() -> None:
            loop = asyncio.SelectorEventLoop()
            self.loop = loop
            asyncio.set_event_loop(loop)

            async def boot() -> None:
                use_cheap_subprocesses()
                self.kubelet = make()
                await self.kubelet.start()

            try:
                loop.run_until_complete(boot())
            except BaseException as e:  # noqa: BLE001 - reported to the starting coroutine
                started.set_exception(e)
                with contextlib.suppress(Exception):
                    if self.kubelet is not None:
                        loop.run_until_complete(self.kubelet.stop())
                loop.close()
                return
            started.set_result(None)
            loop.run_forever()
            _finish_tasks(loop)
            loop.close()

        self.thread = threading.Thread(target=run, name="kubelet", daemon=True)
        self.thread.start()
        await asyncio.wrap_future(started)

    async def stop(self) -> None:
        loop, kl = self.loop, self.kubelet
        if loop is None or kl is None or loop.is_closed():
            return
        with contextlib.suppress(Exception):
            await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(kl.stop(), loop))
        loop.call_soon_threadsafe(loop.stop)
        if self.thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, self.thread.join, 10)


def _finish_tasks(loop: asyncio.AbstractEventLoop) -> None:
    """Cancel what the kubelet still had running (say, a container's grace period) and let it
    unwind before the loop closes, as asyncio.run does: closing over pending tasks printed
    "Task was destroyed but it is pending!" for each. Containers keep running; a kubelet that
    starts again adopts them."""
    tasks = asyncio.all_tasks(loop)
    for t in tasks:
        t.cancel()
    if tasks:
        loop.run_until_complete(asyncio.gather(*tasks, return_exceptions=True))


def _serving_cert(server: Any, node: str, data_dir: str) -> tuple[str, str]:
    """The kubelet's serving certificate, issued by the cluster CA for this node's names and addresses."""
    from ..pki import issue_serving_cert, local_addresses

    pki = os.path.join(data_dir, "pki")
    ensure_private_dir(data_dir)
    ensure_private_dir(pki)
    cert_file, key_file = os.path.join(pki, "kubelet.crt"), os.path.join(pki, "kubelet.key")
    cert, key = issue_serving_cert(server.pki, node, [node, "localhost", "127.0.0.1", *local_addresses()])
    with open(cert_file, "wb") as f:
        f.write(cert)
    os.chmod(cert_file, 0o644)  # not the umask's choice: never writable by others
    create_private_file(key_file)  # an existing key file keeps its mode through O_TRUNC: tighten it first
    with open(key_file, "wb") as f:
        f.write(key)
    return cert_file, key_file


def _server_cluster_dns(args: Any) -> list[str]:
    """`pyk8s server --cluster-dns`, else the tenth address of its service range (kubeadm's default)."""
    from ..dns.addon import cluster_dns_ips

    return cluster_dns_ips(getattr(args, "cluster_dns", None), getattr(args, "service_cluster_ip_range", None))


async def start_local_agent(server: Any, args: Any, component_client: Callable[..., Client]) -> Any:
    """A kubelet for this machine inside `pyk8s server`, with its own node client certificate.

    `component_client(server, cn, orgs, user_agent, loopback=...)` makes that client: cluster.py
    passes its own, so that the kubelet never imports the layer that assembles the cluster."""
    if os.geteuid() != 0:
        msg = "not running as root: pods cannot run here, so no kubelet is started (use `pyk8s agent` as root)"
        log.warning("pyk8s: local kubelet disabled: %s", msg)
        print(f"pyk8s: WARNING: local kubelet disabled: {msg}", flush=True)
        return _NoAgent(msg)

    node = socket.gethostname().lower()
    data_dir = os.path.join(getattr(args, "data_dir", None) or server.config.data_dir, "agent")
    registries_file = getattr(args, "private_registry", None) or os.path.join(data_dir, "registries.yaml")
    try:  # said at startup, not at the first pull; the kubelet keeps running on its previous (empty) config
        load_registries(registries_file)
    except ValueError as e:
        log.warning("%s", e)

    from . import tls_bootstrap

    def make() -> Kubelet:
        # CN=system:node:<name>, O=system:nodes, as upstream's kubelet: the Node authorizer (pyk8s server's default
        # --authorization-mode Node,RBAC) and NodeRestriction confine it to its own node's objects
        client = component_client(server, f"system:node:{node}", ["system:nodes"],
                                  f"kubelet/{KUBELET_VERSION} (linux/amd64) pyk8s",
                                  loopback=False)  # the kubelet has its own thread and loop
        client.pool_size = 0  # one watch per referenced ConfigMap/Secret: no pool limit
        client.request_connections = tls_bootstrap.API_CONNECTIONS
        # side-by-side instances on one machine (tests) give each kubelet its own bridge and runc state
        cert_file, key_file = _serving_cert(server, node, data_dir)
        kl = Kubelet(client, KubeletConfig(node_name=node, data_dir=data_dir,
                                           cni_bridge=os.environ.get("PYK8S_AGENT_CNI_BRIDGE", "pyk8s0"),
                                           runc_root=os.environ.get("PYK8S_AGENT_RUNC_ROOT", ""),
                                           serving_cert_file=cert_file, serving_key_file=key_file,
                                           port=getattr(args, "kubelet_port", None) or 10250,
                                           client_ca_file=str(server.pki.ca_cert_path),
                                           registries_file=registries_file,
                                           # the same DNS the server's cluster DNS serves (docs/dns.md)
                                           cluster_dns=_server_cluster_dns(args),
                                           cluster_domain=getattr(args, "cluster_domain", None) or "cluster.local",
                                           cluster_cidr=server.config.cluster_cidr,
                                           flannel_backend=getattr(args, "flannel_backend", None) or "none",
                                           device_plugins="device-plugins" not in (getattr(args, "disable", None) or ())))
        kl.owns_client = True
        return kl

    agent = LocalAgent()
    try:
        await agent.start(make)
    except Exception as e:  # noqa: BLE001 - the control plane keeps running without its kubelet
        log.exception("local kubelet failed to start")
        print(f"pyk8s: WARNING: local kubelet failed to start: {e}", flush=True)
        return _NoAgent(str(e))
    return agent


__all__ = ["Kubelet", "KubeletConfig", "start_local_agent", "EXITED"]
