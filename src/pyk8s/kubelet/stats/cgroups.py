"""Reading usage from cgroups (v1 and v2) and /proc, as cAdvisor does for the kubelet's Summary API.

Working set is usage minus inactive file cache (cAdvisor's definition, what eviction and
`kubectl top` use); on v1 from the hierarchical `total_*` counters of memory.stat.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

ROOT = "/sys/fs/cgroup"
# v1 reports "no limit" as the largest page-aligned int64; anything this large is unlimited
_V1_UNLIMITED = 1 << 62


@dataclass(frozen=True)
class CgroupSample:
    """One reading of a cgroup (or of the whole machine) at `time` (epoch seconds)."""
    time: float
    cpu_ns: int  # cumulative CPU time
    memory_usage: int
    working_set: int
    rss: int
    page_faults: int
    major_page_faults: int
    memory_limit: int = 0  # 0: unlimited
    pids: int = 0


def is_v2(root: str = ROOT) -> bool:
    return os.path.exists(os.path.join(root, "cgroup.controllers"))


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            word = f.read().split()[0]
    except (OSError, IndexError):
        return None
    if word == "max":
        return 0
    try:
        return int(word)
    except ValueError:
        return None


def read_flat_keyed(path: str) -> dict[str, int]:
    """A `key value` per line file (memory.stat, cpu.stat); {} when it is missing."""
    out: dict[str, int] = {}
    try:
        with open(path) as f:
            for line in f:
                k, _, v = line.partition(" ")
                try:
                    out[k] = int(v)
                except ValueError:
                    continue
    except OSError:
        pass
    return out


def read_cgroup(path: str, now: float, root: str = ROOT, v2: bool | None = None) -> CgroupSample | None:
    """The usage of cgroup `path` (relative to the hierarchy roots); None when the cgroup is gone."""
    if v2 is None:
        v2 = is_v2(root)
    path = path.strip("/")
    if v2:
        d = os.path.join(root, path)
        cpu = read_flat_keyed(os.path.join(d, "cpu.stat"))
        usage = _read_int(os.path.join(d, "memory.current"))
        if not cpu and usage is None:
            return None
        mem = read_flat_keyed(os.path.join(d, "memory.stat"))
        usage = usage or 0
        return CgroupSample(now, cpu.get("usage_usec", 0) * 1000, usage,
                            max(0, usage - mem.get("inactive_file", 0)), mem.get("anon", 0),
                            mem.get("pgfault", 0), mem.get("pgmajfault", 0),
                            _read_int(os.path.join(d, "memory.max")) or 0,
                            _read_int(os.path.join(d, "pids.current")) or 0)
    cpu_ns = _read_int(os.path.join(root, "cpuacct", path, "cpuacct.usage"))
    md = os.path.join(root, "memory", path)
    usage = _read_int(os.path.join(md, "memory.usage_in_bytes"))
    if cpu_ns is None and usage is None:
        return None
    usage = usage or 0
    mem = read_flat_keyed(os.path.join(md, "memory.stat"))
    limit = _read_int(os.path.join(md, "memory.limit_in_bytes")) or 0
    return CgroupSample(now, cpu_ns or 0, usage, max(0, usage - mem.get("total_inactive_file", 0)),
                        mem.get("total_rss", 0), mem.get("total_pgfault", 0), mem.get("total_pgmajfault", 0),
                        0 if limit >= _V1_UNLIMITED else limit,
                        _read_int(os.path.join(root, "pids", path, "pids.current")) or 0)


def read_meminfo(proc: str = "/proc") -> dict[str, int]:
    """/proc/meminfo in bytes."""
    out: dict[str, int] = {}
    try:
        with open(os.path.join(proc, "meminfo")) as f:
            for line in f:
                k, _, rest = line.partition(":")
                parts = rest.split()
                if parts:
                    out[k] = int(parts[0]) * (1024 if len(parts) > 1 else 1)
    except (OSError, ValueError):
        pass
    return out


def read_machine(now: float, root: str = ROOT, proc: str = "/proc") -> CgroupSample:
    """The node's usage: the root cgroup where it accounts (v1), else /proc (v2's root has no memory files)."""
    info = read_meminfo(proc)
    total = info.get("MemTotal", 0)
    if not is_v2(root):
        s = read_cgroup("", now, root, v2=False)
        if s is not None and s.cpu_ns:
            return CgroupSample(now, s.cpu_ns, s.memory_usage, s.working_set, s.rss, s.page_faults,
                                s.major_page_faults, total)
    cpu = read_flat_keyed(os.path.join(root, "cpu.stat")).get("usage_usec", 0) * 1000 or proc_stat_cpu_ns(proc)
    usage = max(0, total - info.get("MemFree", 0))
    vm = read_flat_keyed(os.path.join(proc, "vmstat"))
    return CgroupSample(now, cpu, usage, max(0, usage - info.get("Inactive(file)", 0)),
                        info.get("AnonPages", 0), vm.get("pgfault", 0), vm.get("pgmajfault", 0), total)


def proc_stat_cpu_ns(proc: str = "/proc") -> int:
    """Busy CPU time of the machine from /proc/stat's cpu line (everything but idle and iowait)."""
    try:
        with open(os.path.join(proc, "stat")) as f:
            fields = f.readline().split()[1:]
    except OSError:
        return 0
    ticks = [int(x) for x in fields[:8]]
    busy = sum(ticks) - ticks[3] - (ticks[4] if len(ticks) > 4 else 0)
    return busy * 1_000_000_000 // os.sysconf("SC_CLK_TCK")


def boot_time(proc: str = "/proc") -> float:
    try:
        with open(os.path.join(proc, "stat")) as f:
            for line in f:
                if line.startswith("btime "):
                    return float(line.split()[1])
    except OSError:
        pass
    return 0.0


@dataclass(frozen=True)
class InterfaceStats:
    name: str
    rx_bytes: int
    rx_errors: int
    tx_bytes: int
    tx_errors: int


# cAdvisor leaves out loopback and the host ends of container links
_IGNORED_PREFIXES = ("lo", "veth", "docker", "nerdctl")


def read_net_dev(path: str) -> list[InterfaceStats]:
    """/proc/<pid>/net/dev: the interfaces of that process's network namespace, loopback and veths left out."""
    out = []
    try:
        with open(path) as f:
            lines = f.readlines()[2:]
    except OSError:
        return []
    for line in lines:
        name, _, rest = line.partition(":")
        name = name.strip()
        cols = rest.split()
        if len(cols) < 16 or name.startswith(_IGNORED_PREFIXES):
            continue
        out.append(InterfaceStats(name, int(cols[0]), int(cols[2]), int(cols[8]), int(cols[10])))
    return out


def default_interface(proc: str = "/proc") -> str:
    """The interface of the default route (what the node's `network.name` reports)."""
    try:
        with open(os.path.join(proc, "self", "net", "route")) as f:
            for line in f.readlines()[1:]:
                cols = line.split()
                if len(cols) > 2 and cols[1] == "00000000":
                    return cols[0]
    except OSError:
        pass
    return "eth0"
