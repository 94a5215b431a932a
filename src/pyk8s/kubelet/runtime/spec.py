"""OCI runtime-spec `config.json` for a container: process, mounts, namespaces, cgroup resources, security.

Merges the pod's container config with the image config as upstream does: `command`
replaces ENTRYPOINT (and drops CMD), `args` replaces CMD, env is default PATH <
HOSTNAME < image Env < container env, workingDir falls back to the image's, then "/".
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field
from typing import Any

from .interface import ContainerConfig, Mount
from .security import effective_caps, localhost_seccomp, runtime_default_seccomp

DEFAULT_PATH = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
MASKED_PATHS = ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi", "/sys/firmware", "/sys/devices/virtual/powercap"]
READONLY_PATHS = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


class SpecError(ValueError):
    """The pod asks for something we cannot run (reported as CreateContainerConfigError / CreateContainerError)."""


@dataclass
class SandboxView:
    """What a container needs to know about its sandbox."""

    hostname: str
    ns_paths: dict[str, str]  # net/ipc/uts -> path; missing: host namespace
    host_pid: bool
    hosts_path: str
    resolv_path: str
    hostname_path: str
    shm_path: str
    cgroup_parent: str
    sysctls: dict[str, str] = field(default_factory=dict)
    pid_ns_path: str = ""  # join this process namespace (another container's) instead of a new one


def merge_args(config: ContainerConfig, image_cfg: dict[str, Any]) -> list[str]:
    entrypoint = list(image_cfg.get("Entrypoint") or [])
    cmd = list(image_cfg.get("Cmd") or [])
    if config.command:
        argv = list(config.command) + list(config.args)
    else:
        argv = entrypoint + (list(config.args) if config.args else cmd)
    if not argv:
        raise SpecError("no command specified")
    return argv


def merge_env(config: ContainerConfig, image_cfg: dict[str, Any], hostname: str) -> list[str]:
    order: list[str] = []
    values: dict[str, str] = {}

    def put(kv: str) -> None:
        k, _, v = kv.partition("=")
        if k not in values:
            order.append(k)
        values[k] = v

    put(DEFAULT_PATH)
    put(f"HOSTNAME={hostname}")
    for kv in image_cfg.get("Env") or []:
        put(kv)
    if config.tty:
        put("TERM=xterm")  # as containerd's CRI does for a TTY container (the pod's env may override it)
    for k, v in config.env:
        put(f"{k}={v}")
    return [f"{k}={values[k]}" for k in order]


def _mount_opts(m: Mount) -> list[str]:
    opts = ["rbind", m.propagation if m.propagation in ("rprivate", "private", "rslave", "rshared") else "rprivate"]
    opts.append("ro" if m.readonly else "rw")
    return opts


def host_devices() -> list[dict[str, Any]]:
    """Every device node under the host's /dev, for privileged containers (as docker/containerd give them)."""
    out = []
    for dirpath, dirnames, filenames in os.walk("/dev"):
        dirnames[:] = [d for d in dirnames if d not in ("pts", "shm", "mqueue", "fd", ".lxc", ".udev")]
        for n in filenames:
            p = os.path.join(dirpath, n)
            try:
                st = os.lstat(p)
            except OSError:
                continue
            if not (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
                continue
            if p in ("/dev/console", "/dev/ptmx", "/dev/tty") or n.startswith("tty") and n[3:].isdigit():
                continue
            out.append({"path": p, "type": "c" if stat.S_ISCHR(st.st_mode) else "b",
                        "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev),
                        "fileMode": stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid})
    return out


def build_spec(*, config: ContainerConfig, image_cfg: dict[str, Any], rootfs: str, sandbox: SandboxView,
               user: tuple[int, int, list[int]], container_id: str, allowed_caps: list[str], nofile: int,
               oom_score_adj: int, memsw: bool, cgroup_v2: bool) -> dict[str, Any]:
    sec = config.security
    res = config.resources
    caps = effective_caps(sec.capabilities_add, sec.capabilities_drop, sec.privileged, allowed_caps)
    uid, gid, gids = user
    process: dict[str, Any] = {
        "terminal": config.tty,  # runc hands the pty master to the shim over its console socket
        "user": {"uid": uid, "gid": gid, "additionalGids": gids},
        "args": merge_args(config, image_cfg),
        "env": merge_env(config, image_cfg, sandbox.hostname),
        "cwd": config.working_dir or image_cfg.get("WorkingDir") or "/",
        "capabilities": {"bounding": caps, "effective": caps, "permitted": caps},
        "rlimits": [{"type": "RLIMIT_NOFILE", "hard": nofile, "soft": nofile}],
        # upstream: no_new_privs only when allowPrivilegeEscalation is explicitly false
        "noNewPrivileges": sec.allow_privilege_escalation is False and not sec.privileged,
        "oomScoreAdj": oom_score_adj,
    }
    ro_rootfs = sec.read_only_root_filesystem
    mounts: list[dict[str, Any]] = [
        {"destination": "/proc", "type": "proc", "source": "proc", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/dev", "type": "tmpfs", "source": "tmpfs",
         "options": ["nosuid", "strictatime", "mode=755", "size=65536k"]},
        {"destination": "/dev/pts", "type": "devpts", "source": "devpts",
         "options": ["nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"]},
        {"destination": "/dev/mqueue", "type": "mqueue", "source": "mqueue", "options": ["nosuid", "noexec", "nodev"]},
        {"destination": "/sys", "type": "sysfs", "source": "sysfs",
         "options": ["nosuid", "noexec", "nodev", "rw" if sec.privileged else "ro"]},
        {"destination": "/sys/fs/cgroup", "type": "cgroup", "source": "cgroup",
         "options": ["nosuid", "noexec", "nodev", "relatime", "rw" if sec.privileged else "ro"]},
        {"destination": "/dev/shm", "type": "bind", "source": sandbox.shm_path, "options": ["rbind", "rprivate", "rw"]},
    ]
    file_ro = "ro" if ro_rootfs else "rw"
    user_paths = {m.container_path.rstrip("/") for m in config.mounts}
    for dest, src in (("/etc/hosts", sandbox.hosts_path), ("/etc/resolv.conf", sandbox.resolv_path),
                      ("/etc/hostname", sandbox.hostname_path)):
        if src and dest not in user_paths:
            mounts.append({"destination": dest, "type": "bind", "source": src, "options": ["rbind", "rprivate", file_ro]})
    propagated = False
    for m in config.mounts:
        if m.type == "tmpfs":
            mounts.append({"destination": m.container_path, "type": "tmpfs", "source": "tmpfs",
                           "options": ["nosuid", "nodev", "mode=1777"] + (["ro"] if m.readonly else [])})
            continue
        if not os.path.exists(m.host_path):
            raise SpecError(f"failed to mount {m.host_path}: no such file or directory")
        propagated = propagated or m.propagation in ("rslave", "rshared")
        mounts.append({"destination": m.container_path, "type": "bind", "source": m.host_path, "options": _mount_opts(m)})

    namespaces: list[dict[str, str]] = [{"type": "mount"}]
    if sandbox.pid_ns_path:
        namespaces.append({"type": "pid", "path": sandbox.pid_ns_path})
    elif not sandbox.host_pid:
        namespaces.append({"type": "pid"})
    for kind, oci in (("net", "network"), ("ipc", "ipc"), ("uts", "uts")):
        if kind in sandbox.ns_paths:
            namespaces.append({"type": oci, "path": sandbox.ns_paths[kind]})
    if cgroup_v2:
        namespaces.append({"type": "cgroup"})

    resources: dict[str, Any] = {"devices": [{"allow": sec.privileged, "access": "rwm"}]}
    cpu: dict[str, Any] = {}
    if res.cpu_shares:
        cpu["shares"] = res.cpu_shares
    if res.cpu_quota > 0:
        cpu["quota"] = res.cpu_quota
        cpu["period"] = res.cpu_period or 100_000
    if res.cpuset_cpus:
        cpu["cpus"] = res.cpuset_cpus
    if cpu:
        resources["cpu"] = cpu
    if res.memory_limit > 0:
        resources["memory"] = {"limit": res.memory_limit}
        if memsw:  # no swapping past the limit, as containerd sets swap = limit where it can
            resources["memory"]["swap"] = res.memory_limit
    if res.pids_limit > 0:
        resources["pids"] = {"limit": res.pids_limit}
    if res.hugepage_limits:
        resources["hugepageLimits"] = [{"pageSize": k, "limit": v} for k, v in res.hugepage_limits.items()]

    linux: dict[str, Any] = {
        "cgroupsPath": "/" + sandbox.cgroup_parent.strip("/") + "/" + container_id,
        "namespaces": namespaces,
        "resources": resources,
    }
    sysctls = {k: v for k, v in sandbox.sysctls.items() if "net" in sandbox.ns_paths or not k.startswith("net.")}
    if sysctls:
        linux["sysctl"] = sysctls
    if propagated:
        linux["rootfsPropagation"] = "rslave"
    if sec.privileged:
        linux["devices"] = host_devices()
    else:
        if sec.proc_mount != "Unmasked":
            linux["maskedPaths"] = list(MASKED_PATHS)
            linux["readonlyPaths"] = list(READONLY_PATHS)
        if sec.seccomp == "RuntimeDefault" or sec.seccomp == "runtime/default":
            linux["seccomp"] = runtime_default_seccomp(caps)
        elif sec.seccomp.startswith("Localhost/") or sec.seccomp.startswith("localhost/"):
            linux["seccomp"] = localhost_seccomp(sec.seccomp.split("/", 1)[1])
        if config.devices:
            devs, allow = [], []
            for d in config.devices:
                # as containerd's custom devices: the host path must be a device node (stat follows links)
                try:
                    st = os.stat(d.host_path)
                except OSError as e:
                    raise SpecError(f'error gathering device information while adding custom device "{d.host_path}": '
                                    f"{e.strerror.lower() if e.strerror else e}") from e
                if not (stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode)):
                    raise SpecError(f'error gathering device information while adding custom device "{d.host_path}": '
                                    "not a device node")
                typ = "b" if stat.S_ISBLK(st.st_mode) else "c"
                devs.append({"path": d.container_path, "type": typ, "major": os.major(st.st_rdev),
                             "minor": os.minor(st.st_rdev), "fileMode": stat.S_IMODE(st.st_mode), "uid": 0, "gid": 0})
                allow.append({"allow": True, "type": typ, "major": os.major(st.st_rdev),
                              "minor": os.minor(st.st_rdev), "access": d.permissions})
            linux["devices"] = devs
            resources["devices"] += allow
    return {
        "ociVersion": "1.0.2",
        "process": process,
        "root": {"path": rootfs, "readonly": ro_rootfs},
        "mounts": mounts,
        "linux": linux,
        "annotations": {"io.kubernetes.cri.container-name": config.name, **config.annotations},
    }
