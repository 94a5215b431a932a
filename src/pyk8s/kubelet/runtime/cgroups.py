"""Pod-level cgroups (kubepods/<qos>/pod<uid>) on cgroup v1 or v2, and OOM counters.

Container cgroups are runc's business (it creates `<pod cgroup>/<container id>` from
the OCI config); the pod cgroup above them is ours, as it is upstream kubelet's.
On hybrid hosts (v1 controllers, an empty cgroup2 at /sys/fs/cgroup/unified) runc
uses v1, and so do we.
"""

from __future__ import annotations

import contextlib
import os

from .interface import LinuxResources
from .resources import shares_to_weight

ROOT = "/sys/fs/cgroup"
# v1 hierarchies the pod cgroup is made in and limited through; runc creates the rest (cpuset needs
# cpus/mems copied down, which runc does for the directories it makes).
_V1_LIMITED = ("cpu", "memory", "pids")


def is_v2(root: str = ROOT) -> bool:
    return os.path.exists(os.path.join(root, "cgroup.controllers"))


def v1_hierarchies(root: str = ROOT) -> list[str]:
    """Mounted v1 hierarchy dirs (cpu, memory, ... and named ones like systemd); co-mounts appear once."""
    out = []
    try:
        for name in sorted(os.listdir(root)):
            p = os.path.join(root, name)
            if os.path.isdir(p) and not os.path.islink(p) and name != "unified" and os.path.ismount(p):
                out.append(p)
    except OSError:
        pass
    return out


def _write(path: str, value: str) -> None:
    with open(path, "w") as f:
        f.write(value)


def create_pod_cgroup(parent: str, r: LinuxResources | None, root: str = ROOT) -> None:
    """Make the pod cgroup and apply pod-level limits (cpu shares/quota, memory, pids)."""
    if is_v2(root):
        _create_v2(parent, r, root)
        return
    for ctrl in _V1_LIMITED:
        d = os.path.join(root, ctrl, parent)
        if not os.path.isdir(os.path.join(root, ctrl)):
            continue
        os.makedirs(d, exist_ok=True)
        if r is None:
            continue
        if ctrl == "cpu":
            if r.cpu_shares:
                _write(os.path.join(d, "cpu.shares"), str(r.cpu_shares))
            if r.cpu_period:
                _write(os.path.join(d, "cpu.cfs_period_us"), str(r.cpu_period))
            _write(os.path.join(d, "cpu.cfs_quota_us"), str(r.cpu_quota if r.cpu_quota > 0 else -1))
        elif ctrl == "memory" and r.memory_limit > 0:
            _write(os.path.join(d, "memory.limit_in_bytes"), str(r.memory_limit))
        elif ctrl == "pids" and r.pids_limit > 0:
            _write(os.path.join(d, "pids.max"), str(r.pids_limit))


def _create_v2(parent: str, r: LinuxResources | None, root: str) -> None:
    cur = root
    for comp in parent.strip("/").split("/"):
        with contextlib.suppress(OSError):  # enable controllers for the children, as far as the parent has them
            avail = open(os.path.join(cur, "cgroup.controllers")).read().split()
            want = [c for c in ("cpu", "memory", "pids", "cpuset", "io", "hugetlb") if c in avail]
            if want:
                _write(os.path.join(cur, "cgroup.subtree_control"), " ".join("+" + c for c in want))
        cur = os.path.join(cur, comp)
        os.makedirs(cur, exist_ok=True)
    if r is None:
        return
    with contextlib.suppress(FileNotFoundError):
        if r.cpu_shares:
            _write(os.path.join(cur, "cpu.weight"), str(shares_to_weight(r.cpu_shares)))
        quota = str(r.cpu_quota) if r.cpu_quota > 0 else "max"
        _write(os.path.join(cur, "cpu.max"), f"{quota} {r.cpu_period or 100000}")
    with contextlib.suppress(FileNotFoundError):
        if r.memory_limit > 0:
            _write(os.path.join(cur, "memory.max"), str(r.memory_limit))
    with contextlib.suppress(FileNotFoundError):
        if r.pids_limit > 0:
            _write(os.path.join(cur, "pids.max"), str(r.pids_limit))


def _rmdir_tree(d: str) -> None:
    """rmdir a cgroup and its (empty) children, deepest first; live processes make this fail, as they should."""
    if not os.path.isdir(d):
        return
    for dirpath, dirnames, _ in os.walk(d, topdown=False):
        for n in dirnames:
            with contextlib.suppress(OSError):
                os.rmdir(os.path.join(dirpath, n))
    with contextlib.suppress(OSError):
        os.rmdir(d)


def remove_cgroup(path: str, root: str = ROOT) -> bool:
    """Remove a cgroup (pod or container) from every hierarchy; True when nothing is left."""
    if is_v2(root):
        dirs = [os.path.join(root, path)]
    else:
        dirs = [os.path.join(h, path) for h in v1_hierarchies(root)]
        dirs.append(os.path.join(root, "unified", path))
    for d in dirs:
        _rmdir_tree(d)
    return not any(os.path.isdir(d) for d in dirs)


def cgroup_dir(path: str, controller: str, root: str = ROOT) -> str:
    """Where `controller`'s files for cgroup `path` live."""
    if is_v2(root):
        return os.path.join(root, path)
    return os.path.join(root, controller, path)


def oom_kill_count(path: str, root: str = ROOT) -> int:
    """The cgroup's OOM-kill counter: memory.oom_control's oom_kill (v1) or memory.events' oom_kill (v2)."""
    candidates = [(os.path.join(root, path, "memory.events"), "oom_kill"),
                  (os.path.join(root, "memory", path, "memory.oom_control"), "oom_kill")]
    for file, key in candidates:
        try:
            with open(file) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == key:
                        return int(v)
        except OSError:
            continue
    return 0


def _read_int(path: str) -> int:
    try:
        with open(path) as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 0


def _stat_field(path: str, key: str) -> int:
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                if k == key:
                    return int(v)
    except (OSError, ValueError):
        pass
    return 0


def read_stats(path: str, root: str = ROOT) -> tuple[int, int, int, int]:
    """(cpu ns, memory usage, memory working set, pids) of cgroup `path`."""
    if is_v2(root):
        d = os.path.join(root, path)
        cpu = _stat_field(os.path.join(d, "cpu.stat"), "usage_usec") * 1000
        mem = _read_int(os.path.join(d, "memory.current"))
        inactive = _stat_field(os.path.join(d, "memory.stat"), "inactive_file")
        pids = _read_int(os.path.join(d, "pids.current"))
    else:
        cpu = _read_int(os.path.join(root, "cpuacct", path, "cpuacct.usage"))
        mem = _read_int(os.path.join(root, "memory", path, "memory.usage_in_bytes"))
        inactive = _stat_field(os.path.join(root, "memory", path, "memory.stat"), "total_inactive_file")
        pids = _read_int(os.path.join(root, "pids", path, "pids.current"))
    return cpu, mem, max(0, mem - inactive), pids
