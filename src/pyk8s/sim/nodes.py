"""Simulated nodes: the Node object a kubelet registers, its status heartbeat and its Lease.

Everything here is pure (object builders); the Simulator in `__init__` decides when to write.
Field values follow what a v1.33 kubelet reports (pkg/kubelet/nodestatus setters), with
fake but deterministic addresses and IDs, so `kubectl get/describe node` reads like upstream.
"""

from __future__ import annotations

import hashlib
import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ..api.timefmt import format_micro_time, format_time

__all__ = [
    "KUBELET_VERSION", "SIM_LABEL", "HEARTBEAT_ANNOTATION", "NodeTemplate", "SimNode",
    "parse_labels", "parse_taints", "new_sim_node", "node_object", "node_status", "node_conditions",
    "transition_times",
    "lease_object", "micro_time", "rfc3339", "LEASE_NAMESPACE",
]

KUBELET_VERSION = "v1.33.1"
SIM_LABEL = "node.pyk8s.io/simulated"
HEARTBEAT_ANNOTATION = "sim.pyk8s.io/heartbeat"
LEASE_NAMESPACE = "kube-node-lease"
LEASE_DURATION = 40  # the kubelet's nodeLeaseDurationSeconds default

# (type, status, reason, message) in the order a kubelet (and the route controller) report them
_CONDITIONS = (
    ("NetworkUnavailable", "False", "RouteCreated", "RouteController created a route"),
    ("MemoryPressure", "False", "KubeletHasSufficientMemory", "kubelet has sufficient memory available"),
    ("DiskPressure", "False", "KubeletHasNoDiskPressure", "kubelet has no disk pressure"),
    ("PIDPressure", "False", "KubeletHasSufficientPID", "kubelet has sufficient PID available"),
    ("Ready", "True", "KubeletReady", "kubelet is posting ready status"),
)

_NODE_IP_BASE = int(ipaddress.IPv4Address("10.10.0.0"))   # InternalIPs: 10.10.0.1, 10.10.0.2, ...
# with a stats server: loopback InternalIPs (127.10.0.1, ...), all local, so scrapers of a node's address reach it
_LOOPBACK_IP_BASE = int(ipaddress.IPv4Address("127.10.0.0"))
_FAKE_CIDR_BASE = int(ipaddress.IPv4Address("10.64.0.0"))  # pod /24s when the API gave no podCIDR
_FAKE_CIDRS = (1 << 22) // 256                              # 10.64.0.0/10 holds 16,384 /24s


micro_time = format_micro_time  # Lease renewTime is a metav1.MicroTime
rfc3339 = format_time            # every other timestamp is a metav1.Time


def parse_labels(spec: str | list[str] | None) -> dict[str, str]:
    """`k=v,k2=v2` (or a list of such strings) into a dict; a bare `k` means an empty value."""
    out: dict[str, str] = {}
    items = spec if isinstance(spec, list) else [spec or ""]
    for chunk in items:
        for part in (chunk or "").split(","):
            part = part.strip()
            if not part:
                continue
            k, _, v = part.partition("=")
            out[k.strip()] = v.strip()
    return out


def parse_taints(spec: str | list[str] | None) -> list[dict[str, str]]:
    """`k=v:Effect,k2:Effect` into Taint dicts (kubectl taint syntax)."""
    out: list[dict[str, str]] = []
    items = spec if isinstance(spec, list) else [spec or ""]
    for chunk in items:
        for part in (chunk or "").split(","):
            part = part.strip()
            if not part:
                continue
            kv, sep, effect = part.rpartition(":")
            if not sep or effect not in ("NoSchedule", "PreferNoSchedule", "NoExecute"):
                raise ValueError(f"invalid taint {part!r}: want key[=value]:NoSchedule|PreferNoSchedule|NoExecute")
            k, _, v = kv.partition("=")
            t = {"key": k, "effect": effect}
            if v:
                t["value"] = v
            out.append(t)
    return out


@dataclass
class NodeTemplate:
    """What every simulated node of one Simulator looks like."""

    cpu: str = "32"
    memory: str = "256Gi"
    pods: str = "110"
    ephemeral_storage: str = "1Ti"
    labels: dict[str, str] = field(default_factory=dict)
    taints: list[dict[str, str]] = field(default_factory=list)
    annotations: dict[str, str] = field(default_factory=dict)
    kubelet_port: int = 10250  # status.daemonEndpoints.kubeletEndpoint.Port
    extended: dict[str, str] = field(default_factory=dict)  # extended resources (simulated GPUs)


@dataclass
class SimNode:
    """The simulator's memory of one node; no task per node, only timer-wheel entries."""

    name: str
    index: int
    internal_ip: str
    boot_id: str
    pod_cidr: str | None = None
    uid: str | None = None
    registered: bool = False
    lease_created: bool = False
    api_stopped: bool = False         # Simulator.stop_heartbeat()
    annotation_stopped: bool = False  # sim.pyk8s.io/heartbeat: "false" on the Node
    last_lease_renew: float = 0.0
    last_status: float = 0.0
    # pod IPs: host numbers in use inside this node's /24, and where the next search starts
    ips_in_use: set[int] = field(default_factory=set)
    next_host: int = 2

    @property
    def heartbeating(self) -> bool:
        return not (self.api_stopped or self.annotation_stopped)

    def cidr(self) -> ipaddress.IPv4Network:
        if self.pod_cidr:
            try:
                net = ipaddress.ip_network(self.pod_cidr, strict=False)
                if isinstance(net, ipaddress.IPv4Network) and net.num_addresses >= 4:
                    return net
            except ValueError:
                pass
        base = _FAKE_CIDR_BASE + (self.index % _FAKE_CIDRS) * 256
        return ipaddress.IPv4Network((base, 24))

    def allocate_ip(self) -> str:
        """host-local IPAM: the next free address after the last one handed out (.1 is the bridge)."""
        net = self.cidr()
        size = net.num_addresses
        for _ in range(size):
            h = self.next_host
            self.next_host = h + 1 if h + 1 < size - 1 else 2
            if h not in self.ips_in_use:
                self.ips_in_use.add(h)
                return str(net.network_address + h)
        # a full /24 (more than 253 pods): share an address rather than fail, as a simulation may
        return str(net.network_address + 2)

    def reserve_ip(self, ip: str) -> None:
        try:
            addr = ipaddress.IPv4Address(ip)
        except ValueError:
            return
        net = self.cidr()
        if addr in net:
            self.ips_in_use.add(int(addr) - int(net.network_address))

    def release_ip(self, ip: str | None) -> None:
        if not ip:
            return
        try:
            addr = ipaddress.IPv4Address(ip)
        except ValueError:
            return
        self.ips_in_use.discard(int(addr) - int(self.cidr().network_address))


def new_sim_node(name: str, index: int, loopback: bool = False) -> SimNode:
    ip = str(ipaddress.IPv4Address((_LOOPBACK_IP_BASE if loopback else _NODE_IP_BASE) + 1 + index % 65000))
    return SimNode(name=name, index=index, internal_ip=ip, boot_id=_uuid(f"boot/{name}/{index}"))


def _uuid(seed: str) -> str:
    h = hashlib.sha256(seed.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:32]}"


def node_conditions(now: str, since: dict[str, tuple[str, str]] | None = None) -> list[dict[str, Any]]:
    """Our conditions with lastHeartbeatTime now; `since` maps type -> (status, lastTransitionTime) as the
    API shows them, so a condition whose status does not change keeps its transition time."""
    out = []
    for typ, status, reason, message in _CONDITIONS:
        prev = (since or {}).get(typ)
        t = prev[1] if prev is not None and prev[0] == status and prev[1] else now
        out.append({"type": typ, "status": status, "lastHeartbeatTime": now, "lastTransitionTime": t,
                    "reason": reason, "message": message})
    return out


def transition_times(node: dict[str, Any] | None) -> dict[str, tuple[str, str]]:
    return {c.get("type", ""): (c.get("status", ""), c.get("lastTransitionTime", ""))
            for c in ((node or {}).get("status") or {}).get("conditions") or []}


def node_status(tpl: NodeTemplate, node: SimNode, now: str,
                since: dict[str, tuple[str, str]] | None = None) -> dict[str, Any]:
    capacity = {
        "cpu": tpl.cpu,
        "memory": tpl.memory,
        "pods": tpl.pods,
        "ephemeral-storage": tpl.ephemeral_storage,
        "hugepages-1Gi": "0",
        "hugepages-2Mi": "0",
        **tpl.extended,
    }
    machine_id = hashlib.md5(node.name.encode()).hexdigest()  # noqa: S324 - a fake ID, not security
    return {
        "capacity": capacity,
        "allocatable": dict(capacity),
        "conditions": node_conditions(now, since),
        "addresses": [{"type": "InternalIP", "address": node.internal_ip}, {"type": "Hostname", "address": node.name}],
        "daemonEndpoints": {"kubeletEndpoint": {"Port": tpl.kubelet_port}},
        "nodeInfo": {
            "machineID": machine_id,
            "systemUUID": _uuid(f"system/{node.name}"),
            "bootID": node.boot_id,
            "kernelVersion": "6.8.0-sim",
            "osImage": "pyk8s simulated node",
            "containerRuntimeVersion": "sim://1.0",
            "kubeletVersion": KUBELET_VERSION,
            "kubeProxyVersion": KUBELET_VERSION,
            "operatingSystem": "linux",
            "architecture": "amd64",
        },
    }


def node_object(tpl: NodeTemplate, node: SimNode, now: str) -> dict[str, Any]:
    labels = {
        "beta.kubernetes.io/arch": "amd64",
        "beta.kubernetes.io/os": "linux",
        "kubernetes.io/arch": "amd64",
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        SIM_LABEL: "true",
        **tpl.labels,
    }
    annotations = {"node.alpha.kubernetes.io/ttl": "0", "volumes.kubernetes.io/controller-managed-attach-detach": "true",
                   **tpl.annotations}
    spec: dict[str, Any] = {}
    if tpl.taints:
        spec["taints"] = [dict(t) for t in tpl.taints]
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": node.name, "labels": labels, "annotations": annotations},
        "spec": spec,
        "status": node_status(tpl, node, now),
    }


def lease_object(node: SimNode, renew: str) -> dict[str, Any]:
    md: dict[str, Any] = {"name": node.name, "namespace": LEASE_NAMESPACE}
    if node.uid:
        # upstream's lease is owned by its Node, so deleting the node collects the lease
        md["ownerReferences"] = [{"apiVersion": "v1", "kind": "Node", "name": node.name, "uid": node.uid}]
    return {
        "apiVersion": "coordination.k8s.io/v1",
        "kind": "Lease",
        "metadata": md,
        "spec": {"holderIdentity": node.name, "leaseDurationSeconds": LEASE_DURATION, "renewTime": renew},
    }
