"""The container runtime interface the kubelet's pod workers call, and its data types.

Shaped after the CRI (RunPodSandbox/CreateContainer/...), but as asyncio Python:
configs are plain dataclasses the kubelet fills from the pod spec (see
`resources.py` for the upstream cgroup/QoS math), statuses are what it reports back.
Every ID is a 64-hex string; every path is a host path.
"""

from __future__ import annotations

import abc
import dataclasses
from dataclasses import dataclass, field
from typing import Any

# Container states, as CRI's ContainerState (without the CONTAINER_ prefix).
CREATED = "created"
RUNNING = "running"
EXITED = "exited"
UNKNOWN = "unknown"

# Sandbox states.
SANDBOX_READY = "ready"
SANDBOX_NOTREADY = "notready"

GUARANTEED = "Guaranteed"
BURSTABLE = "Burstable"
BEST_EFFORT = "BestEffort"


class RuntimeError_(Exception):
    """A runtime operation failed; `reason` is what the kubelet puts into a waiting state (e.g. CreateContainerError)."""

    def __init__(self, message: str, reason: str = "RuntimeError") -> None:
        super().__init__(message)
        self.reason = reason


class NotFound(RuntimeError_):
    def __init__(self, message: str) -> None:
        super().__init__(message, "NotFound")


@dataclass
class PortMapping:
    container_port: int
    host_port: int = 0
    protocol: str = "TCP"  # TCP, UDP, SCTP
    host_ip: str = ""


@dataclass
class DNSConfig:
    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


@dataclass
class HostAlias:
    ip: str
    hostnames: list[str]


@dataclass
class LinuxResources:
    """Cgroup settings of one container (or of a pod's cgroup), in upstream's units."""

    cpu_shares: int = 0  # 0: unset (runc default 1024); the kubelet's minimum is 2
    cpu_quota: int = 0  # microseconds per period; 0 or -1: unlimited
    cpu_period: int = 100_000
    memory_limit: int = 0  # bytes; 0: unlimited
    pids_limit: int = 0  # 0: unlimited
    oom_score_adj: int = 0
    cpuset_cpus: str = ""
    hugepage_limits: dict[str, int] = field(default_factory=dict)


@dataclass
class SandboxConfig:
    """Everything a pod shares: namespaces, network, hostname, DNS, the pod cgroup."""

    uid: str  # pod metadata.uid
    name: str
    namespace: str = "default"
    attempt: int = 0
    hostname: str = ""  # default: the pod name (truncated to 63)
    subdomain: str = ""
    cluster_domain: str = "cluster.local"
    host_network: bool = False
    host_pid: bool = False
    host_ipc: bool = False
    dns: DNSConfig | None = None  # None: copy the host's /etc/resolv.conf (dnsPolicy Default)
    host_aliases: list[HostAlias] = field(default_factory=list)
    port_mappings: list[PortMapping] = field(default_factory=list)
    qos_class: str = BEST_EFFORT
    pod_resources: LinuxResources | None = None  # pod-level cgroup limits (resources.pod_resources)
    sysctls: dict[str, str] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)
    log_directory: str = ""  # default: <data-dir>/pods/<ns>_<name>_<uid>
    shm_size: int = 64 * 1024 * 1024


@dataclass
class Mount:
    container_path: str
    host_path: str
    readonly: bool = False
    propagation: str = "private"  # private, rslave (HostToContainer), rshared (Bidirectional)
    type: str = "bind"  # bind, or tmpfs (host_path ignored) for emptyDir medium Memory


@dataclass
class Device:
    container_path: str
    host_path: str
    permissions: str = "rwm"


@dataclass
class SecurityContext:
    run_as_user: int | None = None
    run_as_group: int | None = None
    run_as_non_root: bool = False
    supplemental_groups: list[int] = field(default_factory=list)
    privileged: bool = False
    read_only_root_filesystem: bool = False
    allow_privilege_escalation: bool | None = None  # None: true, as upstream (no_new_privs off)
    capabilities_add: list[str] = field(default_factory=list)  # names with or without CAP_, or ALL
    capabilities_drop: list[str] = field(default_factory=list)
    # RuntimeDefault, Unconfined, or Localhost/<path to a JSON profile>; upstream's default (no
    # seccompProfile, kubelet --seccomp-default=false) is Unconfined
    seccomp: str = "Unconfined"
    proc_mount: str = "Default"  # Default (masked paths) or Unmasked


@dataclass
class ContainerConfig:
    name: str
    image: str  # reference or image ID; must be in the image store
    command: list[str] = field(default_factory=list)  # k8s `command` (replaces ENTRYPOINT)
    args: list[str] = field(default_factory=list)  # k8s `args` (replaces CMD)
    working_dir: str = ""
    env: list[tuple[str, str]] = field(default_factory=list)  # already expanded by the kubelet
    mounts: list[Mount] = field(default_factory=list)
    devices: list[Device] = field(default_factory=list)
    resources: LinuxResources = field(default_factory=LinuxResources)
    security: SecurityContext = field(default_factory=SecurityContext)
    attempt: int = 0  # restart count
    log_path: str = ""  # default: <sandbox log dir>/<name>/<attempt>.log, as upstream
    stop_signal: str = ""  # default: the image's StopSignal, else SIGTERM
    tty: bool = False
    stdin: bool = False  # keep the container's stdin open for attach (k8s `stdin`)
    stdin_once: bool = False  # close it when the first attached client detaches (k8s `stdinOnce`)
    pid_target: str = ""  # a container ID whose process namespace this one joins (an ephemeral container's target)
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class SandboxStatus:
    id: str
    config: SandboxConfig
    state: str
    created_at: float
    ip: str = ""
    additional_ips: list[str] = field(default_factory=list)
    netns_path: str = ""


@dataclass
class ContainerStatus:
    id: str
    sandbox_id: str
    name: str
    state: str
    image: str  # the reference asked for
    image_id: str  # config digest
    created_at: float
    started_at: float = 0.0
    finished_at: float = 0.0
    exit_code: int = 0
    reason: str = ""  # Completed, Error, OOMKilled (as upstream's terminated reasons)
    message: str = ""
    pid: int = 0
    log_path: str = ""
    attempt: int = 0
    oom_killed: bool = False
    labels: dict[str, str] = field(default_factory=dict)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class ExecResult:
    exit_code: int
    stdout: bytes
    stderr: bytes
    timed_out: bool = False


@dataclass
class ResourceStats:
    """Usage of a container's or a pod's cgroup, as the kubelet's summary API needs it."""

    timestamp: float
    cpu_usage_ns: int = 0  # cumulative CPU time
    memory_usage: int = 0  # bytes, including page cache
    memory_working_set: int = 0  # usage minus inactive file cache, what eviction and `kubectl top` use
    pids: int = 0


def to_dict(obj: Any) -> Any:
    return dataclasses.asdict(obj)


def sandbox_config_from_dict(d: dict[str, Any]) -> SandboxConfig:
    d = dict(d)
    d["dns"] = DNSConfig(**d["dns"]) if d.get("dns") else None
    d["host_aliases"] = [HostAlias(**h) for h in d.get("host_aliases", [])]
    d["port_mappings"] = [PortMapping(**p) for p in d.get("port_mappings", [])]
    d["pod_resources"] = LinuxResources(**d["pod_resources"]) if d.get("pod_resources") else None
    return SandboxConfig(**d)


def container_config_from_dict(d: dict[str, Any]) -> ContainerConfig:
    d = dict(d)
    d["env"] = [tuple(e) for e in d.get("env", [])]
    d["mounts"] = [Mount(**m) for m in d.get("mounts", [])]
    d["devices"] = [Device(**x) for x in d.get("devices", [])]
    d["resources"] = LinuxResources(**d.get("resources", {}))
    d["security"] = SecurityContext(**d.get("security", {}))
    return ContainerConfig(**d)


class ContainerRuntime(abc.ABC):
    """What the kubelet needs from a container runtime. All methods are coroutines and idempotent where CRI's are
    (removing something gone is not an error)."""

    name: str = "abstract"

    @abc.abstractmethod
    async def version(self) -> dict[str, str]:
        """{"runtimeName", "runtimeVersion", "runtimeApiVersion"} for node status."""

    # ---- sandboxes

    @abc.abstractmethod
    async def create_sandbox(self, config: SandboxConfig) -> str:
        """Create the pod's namespaces, network (CNI ADD), cgroup and files; returns the sandbox ID."""

    @abc.abstractmethod
    async def stop_sandbox(self, sandbox_id: str) -> None:
        """Kill every container of the sandbox and tear down its network (CNI DEL); idempotent."""

    @abc.abstractmethod
    async def remove_sandbox(self, sandbox_id: str) -> None:
        """Stop (if needed) and remove the sandbox and all its containers; idempotent."""

    @abc.abstractmethod
    async def sandbox_status(self, sandbox_id: str) -> SandboxStatus: ...

    @abc.abstractmethod
    async def list_sandboxes(self) -> list[SandboxStatus]: ...

    # ---- containers

    @abc.abstractmethod
    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        """Prepare rootfs and bundle and create (not start) the container; returns its ID."""

    @abc.abstractmethod
    async def start_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    async def stop_container(self, container_id: str, timeout: float, signal: str | int | None = None) -> None:
        """Send `signal` (default: the container's stop signal), then SIGKILL after `timeout` seconds."""

    @abc.abstractmethod
    async def remove_container(self, container_id: str) -> None: ...

    @abc.abstractmethod
    async def container_status(self, container_id: str) -> ContainerStatus: ...

    @abc.abstractmethod
    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]: ...

    @abc.abstractmethod
    async def wait_exit(self, container_id: str, timeout: float | None = None) -> ContainerStatus:
        """Return once the container has exited (its final status), or raise TimeoutError."""

    @abc.abstractmethod
    async def exec_sync(self, container_id: str, cmd: list[str], timeout: float = 10.0) -> ExecResult: ...

    @abc.abstractmethod
    def container_log_path(self, container_id: str) -> str:
        """The CRI-format log file the container's stdout/stderr go to."""

    def exec_command(self, container_id: str, cmd: list[str], tty: bool = False) -> list[str]:
        """An argv that runs `cmd` in the container with the caller's stdio (for the streaming server's exec)."""
        raise NotImplementedError

    async def container_stats(self, container_id: str) -> ResourceStats:
        raise NotImplementedError

    async def sandbox_stats(self, sandbox_id: str) -> ResourceStats:
        raise NotImplementedError

    async def close(self) -> None:
        """Release the runtime object; containers keep running (a new runtime object re-adopts them)."""
        return None
