"""The kubelet's Node: registration, status (capacity, allocatable, conditions, addresses, nodeInfo, images), Lease.

Registration creates the Node (or reconciles the default labels of an existing one) with
upstream's labels, the `--register-with-taints` taints and the not-ready taint the node
lifecycle controller lifts once the node is Ready. Status is computed every 10 seconds
and written when it changed or a minute has passed; the Lease in kube-node-lease is
renewed every 10 seconds (a quarter of its 40-second duration).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import platform
import socket
import subprocess
import time
from collections.abc import Callable
from typing import Any

from ..api.errors import StatusError
from ..api.quantity import BINARY_SI, DECIMAL_SI, Quantity, parse_quantity
from ..api.timefmt import format_micro_time, format_time
from ..client import Client, EventRecorder
from .local_path_cleanup import ROOT_ANNOTATION, local_path_root

log = logging.getLogger("pyk8s.kubelet.node")

KUBELET_VERSION = "v1.33.1"
NODES = ("", "v1", "nodes")
LEASES = ("coordination.k8s.io", "v1", "leases")
LEASE_NS = "kube-node-lease"
LEASE_DURATION = 40
KUBELET_PORT = 10250
MAX_IMAGES = 50

CONDITION_TEXT = {
    # condition: (False reason, False message, True reason, True message)
    "MemoryPressure": ("KubeletHasSufficientMemory", "kubelet has sufficient memory available",
                       "KubeletHasInsufficientMemory", "kubelet has insufficient memory available"),
    "DiskPressure": ("KubeletHasNoDiskPressure", "kubelet has no disk pressure",
                     "KubeletHasDiskPressure", "kubelet has disk pressure"),
    "PIDPressure": ("KubeletHasSufficientPID", "kubelet has sufficient PID available",
                    "KubeletHasInsufficientPID", "kubelet has insufficient PID available"),
}
# the event upstream records when a condition's status changes (False, True)
CONDITION_EVENTS = {
    "MemoryPressure": ("NodeHasSufficientMemory", "NodeHasInsufficientMemory"),
    "DiskPressure": ("NodeHasNoDiskPressure", "NodeHasDiskPressure"),
    "PIDPressure": ("NodeHasSufficientPID", "NodeHasInsufficientPID"),
    "Ready": ("NodeNotReady", "NodeReady"),
}


def parse_labels(spec: str) -> dict[str, str]:
    out = {}
    for part in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        k, _, v = part.partition("=")
        out[k.strip()] = v.strip()
    return out


def parse_taints(spec: str) -> list[dict[str, str]]:
    """key[=value]:Effect,... as --register-with-taints takes them."""
    out = []
    for part in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        kv, sep, effect = part.rpartition(":")
        if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
            raise ValueError(f"invalid taint spec {part!r}: expected key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
        k, _, v = kv.partition("=")
        t = {"key": k, "effect": effect}
        if v:
            t["value"] = v
        out.append(t)
    return out


def _read(path: str, default: str = "") -> str:
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError:
        return default


def os_image() -> str:
    for line in _read("/etc/os-release").splitlines():
        if line.startswith("PRETTY_NAME="):
            return line.split("=", 1)[1].strip().strip('"')
    return "Linux"


def runc_version(runc: str = "runc") -> str:
    try:
        out = subprocess.run([runc, "--version"], capture_output=True, text=True, timeout=10).stdout
        return out.split("\n")[0].split()[-1].split("+")[0]  # "1.1.5+ds1" (a distro build) is runc 1.1.5
    except (OSError, subprocess.SubprocessError, IndexError):
        return "unknown"


def default_node_ip() -> str:
    """The source address of the default route (no packet is sent), else what the hostname resolves to."""
    for probe in ("8.8.8.8", "10.255.255.254"):
        with contextlib.suppress(OSError):
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
                s.connect((probe, 9))
                ip = str(s.getsockname()[0])
                if not ip.startswith("127."):
                    return ip
    with contextlib.suppress(OSError):
        return socket.gethostbyname(socket.gethostname())
    return "127.0.0.1"


def machine_capacity(root: str, max_pods: int) -> dict[str, str]:
    mem_ki = 0
    for line in _read("/proc/meminfo").splitlines():
        if line.startswith("MemTotal:"):
            mem_ki = int(line.split()[1])
    try:
        cpus = len(os.sched_getaffinity(0))
    except OSError:
        cpus = os.cpu_count() or 1
    st = os.statvfs(root)
    return {"cpu": str(cpus), "ephemeral-storage": f"{st.f_blocks * st.f_frsize // 1024}Ki", "hugepages-1Gi": "0",
            "hugepages-2Mi": "0", "memory": f"{mem_ki}Ki", "pods": str(max_pods)}


def allocatable(capacity: dict[str, str], reserved: dict[str, str], hard: list[Any]) -> dict[str, str]:
    """capacity - kube/system reserved - hard eviction thresholds (memory and ephemeral-storage), as upstream."""
    out = dict(capacity)
    for name, cap in capacity.items():
        q = parse_quantity(cap)
        if name in reserved:
            q = q - parse_quantity(reserved[name])
        for t in hard:
            if (name == "memory" and t.signal == "memory.available") or \
                    (name == "ephemeral-storage" and t.signal == "nodefs.available"):
                q = q - Quantity.from_int(t.value(parse_quantity(cap).to_int()))
        if q.nanos < 0:
            q = Quantity(0)
        if name == "ephemeral-storage" and any(t.signal == "nodefs.available" and t.percentage for t in hard):
            out[name] = str(Quantity.from_int(q.to_int(), DECIMAL_SI))
        elif name == "memory":
            out[name] = str(Quantity(q.nanos, BINARY_SI))
        else:
            out[name] = str(q)
    return out


class NodeManager:
    def __init__(self, client: Client, name: str, root: str, recorder: EventRecorder, *,
                 labels: dict[str, str] | None = None, taints: list[dict[str, str]] | None = None,
                 pod_cidr: str = "", node_ip: str = "", reserved: dict[str, str] | None = None,
                 hard_thresholds: list[Any] | None = None, runtime_version: str = "runc://unknown",
                 images: Callable[[], list[Any]] | None = None,
                 pressure: Callable[[], set[str]] | None = None,
                 readiness: Callable[[], tuple[bool, str]] | None = None, max_pods: int = 110,
                 kubelet_port: int = KUBELET_PORT,
                 status_interval: float = 10.0, report_interval: float = 60.0, lease_interval: float = 10.0) -> None:
        self.client = client
        self.name = name
        self.root = root
        self.recorder = recorder
        self.labels = labels or {}
        self.taints = taints or []
        self.pod_cidr = pod_cidr
        self.node_ip = node_ip or default_node_ip()
        self.reserved = reserved or {}
        self.hard = hard_thresholds or []
        self.runtime_version = runtime_version
        self.images = images or (lambda: [])
        self.pressure = pressure or (lambda: set())
        self.readiness = readiness or (lambda: (True, ""))
        self.max_pods = max_pods
        self.kubelet_port = kubelet_port  # where the API server and metrics-server dial this kubelet
        self.status_interval = status_interval
        self.report_interval = report_interval
        self.lease_interval = lease_interval
        self.node: dict[str, Any] = {}
        self.capacity = machine_capacity(root, max_pods)
        self.allocatable = allocatable(self.capacity, self.reserved, self.hard)
        self._last_report = 0.0
        self._last_status: dict[str, Any] | None = None
        self._lease: dict[str, Any] | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self.on_status: Callable[[dict[str, Any]], None] | None = None
        self.volumes_in_use: Callable[[], list[str]] | None = None  # the volume manager's, once it exists
        # the device manager's (capacity, allocatable) of device-plugin resources, once it runs
        self.extended_resources: Callable[[], tuple[dict[str, str], dict[str, str]]] | None = None

    # ---- registration

    def _ref(self) -> dict[str, Any]:
        # upstream's node events name the node as their UID too
        return {"kind": "Node", "apiVersion": "v1", "metadata": {"name": self.name, "uid": self.name, "namespace": ""}}

    def event(self, type_: str, reason: str, message: str) -> None:
        self.recorder.event(self._ref(), type_, reason, message)

    def default_labels(self) -> dict[str, str]:
        arch = {"x86_64": "amd64", "aarch64": "arm64"}.get(platform.machine(), platform.machine())
        return {"beta.kubernetes.io/arch": arch, "beta.kubernetes.io/os": "linux", "kubernetes.io/arch": arch,
                "kubernetes.io/hostname": self.name.lower(), "kubernetes.io/os": "linux"}

    async def register(self, timeout: float = 120.0) -> dict[str, Any]:
        body: dict[str, Any] = {
            "apiVersion": "v1", "kind": "Node",
            "metadata": {"name": self.name, "labels": {**self.default_labels(), **self.labels},
                         "annotations": {"volumes.kubernetes.io/controller-managed-attach-detach": "true",
                                         # where the local-path provisioner puts this node's volumes
                                         ROOT_ANNOTATION: local_path_root(self.root)}},
            "spec": {"taints": [*self.taints, {"key": "node.kubernetes.io/not-ready", "effect": "NoSchedule"}]},
        }
        if self.pod_cidr:
            body["spec"]["podCIDR"] = self.pod_cidr
            body["spec"]["podCIDRs"] = [self.pod_cidr]
        deadline = time.monotonic() + timeout
        delay = 0.2
        while True:
            try:
                try:
                    self.node = await self.client.create(NODES, body)
                    log.info('"Successfully registered node" node="%s"', self.name)  # upstream's wording
                except StatusError as e:
                    if e.code != 409:
                        raise
                    self.node = await self.client.get(NODES, self.name)
                    want = {**self.default_labels(), **self.labels}
                    have = self.node["metadata"].get("labels") or {}
                    root = local_path_root(self.root)
                    if any(have.get(k) != v for k, v in want.items()) or (
                            (self.node["metadata"].get("annotations") or {}).get(ROOT_ANNOTATION) != root):
                        self.node = await self.client.patch(NODES, self.name, {"metadata": {
                            "labels": want, "annotations": {ROOT_ANNOTATION: root}}})
                break
            except StatusError as e:
                if time.monotonic() > deadline:
                    raise
                log.warning("registering node %s: %s (retrying)", self.name, e)
                await asyncio.sleep(delay)
                delay = min(delay * 2, 7)
        self.event("Normal", "Starting", "Starting kubelet.")
        return self.node

    async def wait_pod_cidr(self, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        while True:
            cidr = (self.node.get("spec") or {}).get("podCIDR") or ""
            if cidr or time.monotonic() > deadline:
                return str(cidr)
            await asyncio.sleep(0.2)  # the node-ipam-controller patches it in shortly after registration
            self.node = await self.client.get(NODES, self.name)

    # ---- status

    def build_status(self, now: float) -> dict[str, Any]:
        old = {c.get("type"): c for c in ((self.node.get("status") or {}).get("conditions") or [])}
        pressure = self.pressure()
        ready, not_ready_msg = self.readiness()
        ts = format_time(now)
        conds = []
        for ctype, (f_reason, f_msg, t_reason, t_msg) in CONDITION_TEXT.items():
            on = ctype in pressure
            conds.append(self._cond(ctype, on, t_reason if on else f_reason, t_msg if on else f_msg, old, ts))
        conds.append(self._cond("Ready", ready, "KubeletReady" if ready else "KubeletNotReady",
                                "kubelet is posting ready status" if ready else not_ready_msg, old, ts))
        imgs = sorted(self.images(), key=lambda i: -i.size)[:MAX_IMAGES]
        ext_cap, ext_alloc = self.extended_resources() if self.extended_resources is not None else ({}, {})
        return {
            "capacity": {**self.capacity, **ext_cap},
            "allocatable": {**self.allocatable, **ext_alloc},
            "conditions": conds,
            "addresses": [{"type": "InternalIP", "address": self.node_ip}, {"type": "Hostname", "address": self.name}],
            "daemonEndpoints": {"kubeletEndpoint": {"Port": self.kubelet_port}},
            "nodeInfo": {
                "machineID": _read("/etc/machine-id"),
                "systemUUID": _read("/sys/class/dmi/id/product_uuid") or _read("/etc/machine-id"),
                "bootID": _read("/proc/sys/kernel/random/boot_id"),
                "kernelVersion": platform.release(),
                "osImage": os_image(),
                "containerRuntimeVersion": self.runtime_version,
                "kubeletVersion": KUBELET_VERSION,
                "kubeProxyVersion": "",
                "operatingSystem": "linux",
                "architecture": self.default_labels()["kubernetes.io/arch"],
            },
            "images": [{"names": [*i.repo_digests, *i.names], "sizeBytes": i.size} for i in imgs],
            "runtimeHandlers": [{"name": "", "features": {"recursiveReadOnlyMounts": False, "userNamespaces": False}}],
            # a plain list (replaced whole by the patch); null clears it
            "volumesInUse": (self.volumes_in_use() if self.volumes_in_use is not None else None) or None,
        }

    @staticmethod
    def _cond(ctype: str, on: bool, reason: str, message: str, old: dict[str, Any], ts: str) -> dict[str, Any]:
        status = "True" if on else "False"
        prev = old.get(ctype)
        transition = prev.get("lastTransitionTime") if prev and prev.get("status") == status else ts
        return {"type": ctype, "status": status, "lastHeartbeatTime": ts, "lastTransitionTime": transition,
                "reason": reason, "message": message}

    @staticmethod
    def _strip(status: dict[str, Any]) -> Any:
        return {**status, "conditions": [{k: v for k, v in c.items() if k != "lastHeartbeatTime"}
                                         for c in status.get("conditions") or []]}

    async def update_status(self, force: bool = False) -> None:
        now = time.time()
        status = self.build_status(now)
        changed = self._last_status is None or self._strip(status) != self._strip(self._last_status)
        if not (force or changed or now - self._last_report >= self.report_interval):
            return
        old_conds = {c["type"]: c["status"] for c in ((self.node.get("status") or {}).get("conditions") or [])}
        patch = {"status": {**status, "$setElementOrder/conditions": [{"type": c["type"]} for c in status["conditions"]]}}
        self.node = await self.client.patch(NODES, self.name, patch, sub="status", patch_type="strategic")
        self._last_status = status
        self._last_report = now
        for c in status["conditions"]:
            prev = old_conds.get(c["type"])
            if prev == c["status"] or (c["type"] == "Ready" and prev is None and c["status"] != "True"):
                continue
            off, on = CONDITION_EVENTS[c["type"]]
            reason = on if c["status"] == "True" else off
            self.event("Normal", reason, f"Node {self.name} status is now: {reason}")
        if self.on_status is not None:
            self.on_status(self.node)

    # ---- lease

    async def renew_lease(self) -> None:
        now = format_micro_time(time.time())
        lease = self._lease
        if lease is None:
            lease = await self.client.get_or_none(LEASES, self.name, LEASE_NS)
            if lease is None:
                body = {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                        "metadata": {"name": self.name, "namespace": LEASE_NS,
                                     "ownerReferences": [{"apiVersion": "v1", "kind": "Node", "name": self.name,
                                                          "uid": self.node["metadata"]["uid"]}]},
                        "spec": {"holderIdentity": self.name, "leaseDurationSeconds": LEASE_DURATION,
                                 "renewTime": now}}
                self._lease = await self.client.create(LEASES, body, LEASE_NS)
                return
        lease = {**lease, "spec": {**(lease.get("spec") or {}), "holderIdentity": self.name,
                                   "leaseDurationSeconds": LEASE_DURATION, "renewTime": now}}
        try:
            self._lease = await self.client.update(LEASES, lease)
        except StatusError as e:
            self._lease = None
            if e.code not in (404, 409):
                raise

    # ---- loops

    def start(self) -> None:
        self._tasks = [asyncio.create_task(self._loop(self.update_status, self.status_interval), name="node-status"),
                       asyncio.create_task(self._loop(self.renew_lease, self.lease_interval), name="node-lease")]

    async def _loop(self, fn: Callable[[], Any], interval: float) -> None:
        while True:
            try:
                await fn()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - keep heartbeating through API hiccups
                log.warning("node %s: %s failed: %s", self.name, getattr(fn, "__name__", fn), e)
            await asyncio.sleep(interval)

    async def stop(self) -> None:
        for t in self._tasks:
            t.cancel()
        for t in self._tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await t
        self._tasks = []
