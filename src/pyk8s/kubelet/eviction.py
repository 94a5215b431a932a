"""Node-pressure eviction as upstream's eviction manager: signals, hard thresholds, pressure conditions, ranking.

Every `interval` seconds the manager observes memory.available (capacity minus the root
cgroup's working set), nodefs/imagefs available bytes and inodes, and pid.available; a
met threshold sets the matching node condition (held for the pressure transition period
after it clears) and evicts one pod, chosen in upstream's order: for memory, pods using
more than they request first, then lower priority, then larger use above request.
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..api.quantity import BINARY_SI, Quantity, parse_quantity
from .runtime.resources import pod_qos_class

log = logging.getLogger("pyk8s.kubelet.eviction")

DEFAULT_HARD = \
    "memory.available<100Mi,nodefs.available<10%,imagefs.available<15%,nodefs.inodesFree<5%,imagefs.inodesFree<5%"

# signal -> (node condition, resource the pod ranking is about)
SIGNALS = {
    "memory.available": ("MemoryPressure", "memory"),
    "nodefs.available": ("DiskPressure", "ephemeral-storage"),
    "nodefs.inodesFree": ("DiskPressure", "inodes"),
    "imagefs.available": ("DiskPressure", "ephemeral-storage"),
    "imagefs.inodesFree": ("DiskPressure", "inodes"),
    "pid.available": ("PIDPressure", "pids"),
}


@dataclass
class Threshold:
    signal: str
    quantity: int | None = None  # absolute
    percentage: float | None = None  # of capacity, 0..1
    text: str = ""

    def value(self, capacity: int) -> int:
        if self.quantity is not None:
            return self.quantity
        return int(capacity * (self.percentage or 0.0))


def parse_thresholds(spec: str) -> list[Threshold]:
    out = []
    for part in [p.strip() for p in (spec or "").split(",") if p.strip()]:
        if "<" not in part:
            raise ValueError(f"invalid eviction threshold {part!r}: expected signal<quantity")
        sig, _, val = part.partition("<")
        sig, val = sig.strip(), val.strip()
        if sig not in SIGNALS:
            raise ValueError(f"unknown eviction signal {sig!r}")
        if val.endswith("%"):
            out.append(Threshold(sig, percentage=float(val[:-1]) / 100, text=val))
        else:
            out.append(Threshold(sig, quantity=parse_quantity(val).to_int(), text=val))
    return out


@dataclass
class Observation:
    available: int
    capacity: int


def _read_int(path: str) -> int | None:
    try:
        with open(path) as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return None


def memory_observation(cgroup_root: str = "/sys/fs/cgroup") -> Observation:
    total = 0
    avail_meminfo = 0
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                total = int(line.split()[1]) * 1024
            elif line.startswith("MemAvailable:"):
                avail_meminfo = int(line.split()[1]) * 1024
    usage = _read_int(os.path.join(cgroup_root, "memory", "memory.usage_in_bytes"))
    if usage is not None:  # cgroup v1: the root cgroup's working set, as cAdvisor computes it
        inactive = 0
        try:
            with open(os.path.join(cgroup_root, "memory", "memory.stat")) as f:
                for line in f:
                    k, _, v = line.partition(" ")
                    if k == "total_inactive_file":
                        inactive = int(v)
        except OSError:
            pass
        working_set = max(0, usage - inactive)
        return Observation(max(0, total - working_set), total)
    return Observation(avail_meminfo, total)


def fs_observations(path: str) -> tuple[Observation, Observation]:
    st = os.statvfs(path)
    return (Observation(st.f_bavail * st.f_frsize, st.f_blocks * st.f_frsize),
            Observation(st.f_favail, st.f_files))


def pid_observation() -> Observation:
    pid_max = _read_int("/proc/sys/kernel/pid_max") or 32768
    try:
        procs = sum(1 for n in os.listdir("/proc") if n.isdigit())
    except OSError:
        procs = 0
    return Observation(max(0, pid_max - procs), pid_max)


def format_bytes(n: int) -> str:
    """A byte count as upstream prints observed quantities (BinarySI: 50Mi, 21468320Ki, 1234567)."""
    return str(Quantity.from_int(n, BINARY_SI))


def _priority(pod: dict[str, Any]) -> int:
    p = (pod.get("spec") or {}).get("priority")
    return int(p) if isinstance(p, int) else 0


def _requests(pod: dict[str, Any], resource: str) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        q = ((c.get("resources") or {}).get("requests") or {}).get(resource)
        if q is not None:
            total += parse_quantity(q).to_int()
    return total


def rank_for_eviction(pods: list[tuple[dict[str, Any], int]], resource: str) -> list[dict[str, Any]]:
    """Pods (with their usage of `resource`) in eviction order."""
    def key(item: tuple[dict[str, Any], int]) -> tuple[int, int, int]:
        pod, usage = item
        req = _requests(pod, resource) if resource in ("memory", "ephemeral-storage") else 0
        exceeds = usage > req if resource in ("memory", "ephemeral-storage") else True
        return (0 if exceeds else 1, _priority(pod), -(usage - req))

    return [p for p, _ in sorted(pods, key=key)]


def is_critical(pod: dict[str, Any]) -> bool:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return _priority(pod) >= 2_000_000_000 or ann.get("kubernetes.io/config.source", "api") != "api"


class EvictionManager:
    def __init__(self, thresholds: list[Threshold], nodefs_path: str, imagefs_path: str,
                 transition_period: float = 300.0, interval: float = 10.0) -> None:
        self.thresholds = thresholds
        self.nodefs_path = nodefs_path
        self.imagefs_path = imagefs_path
        self.transition_period = transition_period
        self.interval = interval
        self.observations: dict[str, Observation] = {}
        self.met: list[Threshold] = []
        self._last_met: dict[str, float] = {}  # condition -> last time a threshold for it was met

    def observe(self) -> dict[str, Observation]:
        obs = {"memory.available": memory_observation()}
        try:
            nb, ni = fs_observations(self.nodefs_path)
            obs["nodefs.available"], obs["nodefs.inodesFree"] = nb, ni
            ib, ii = fs_observations(self.imagefs_path)
            obs["imagefs.available"], obs["imagefs.inodesFree"] = ib, ii
        except OSError:
            pass
        obs["pid.available"] = pid_observation()
        self.observations = obs
        return obs

    def evaluate(self) -> list[Threshold]:
        obs = self.observe()
        met = []
        now = time.monotonic()
        for t in self.thresholds:
            o = obs.get(t.signal)
            if o is not None and o.available < t.value(o.capacity):
                met.append(t)
                self._last_met[SIGNALS[t.signal][0]] = now
        self.met = met
        return met

    def conditions(self) -> set[str]:
        """Pressure conditions in effect (a condition stays for the transition period after its thresholds clear)."""
        now = time.monotonic()
        return {c for c, t in self._last_met.items() if now - t < self.transition_period
                or any(SIGNALS[m.signal][0] == c for m in self.met)}

    def admit(self, pod: dict[str, Any]) -> tuple[str, str] | None:
        """Upstream's eviction admission: memory pressure turns away BestEffort pods, disk/PID pressure every pod."""
        conds = self.conditions()
        if not conds or is_critical(pod):
            return None
        if conds == {"MemoryPressure"}:
            if pod_qos_class(pod) != "BestEffort":
                return None
            tolerations = (pod.get("spec") or {}).get("tolerations") or []
            if any(t.get("key") == "node.kubernetes.io/memory-pressure" and t.get("effect") in ("NoSchedule", "")
                   for t in tolerations):
                return None
        return "Evicted", f"The node had condition: [{', '.join(sorted(conds))}]. "

    async def pick(self, pods: list[dict[str, Any]],
                   usage: Callable[[dict[str, Any], str], Awaitable[tuple[int, dict[str, int]]]]) -> tuple[dict[str, Any], str] | None:
        """The next pod to evict and the eviction message, or None."""
        if not self.met:
            return None
        t = self.met[0]
        resource = SIGNALS[t.signal][1]
        candidates = [p for p in pods if not is_critical(p)]
        if not candidates:
            return None
        measured = []
        per_container: dict[str, dict[str, int]] = {}
        for p in candidates:
            total, containers = await usage(p, resource)
            measured.append((p, total))
            per_container[p["metadata"]["uid"]] = containers
        victim = rank_for_eviction(measured, resource)[0]
        o = self.observations[t.signal]
        res_name = "memory" if resource == "memory" else "ephemeral-storage" if resource != "pids" else "pids"
        msg = f"The node was low on resource: {res_name}. "
        avail = format_bytes(o.available) if resource in ("memory", "ephemeral-storage") else str(o.available)
        msg += f"Threshold quantity: {t.text}, available: {avail}. "
        if resource == "memory":
            for c in (victim.get("spec") or {}).get("containers") or []:
                used = per_container[victim["metadata"]["uid"]].get(c["name"], 0)
                req = ((c.get("resources") or {}).get("requests") or {}).get("memory")
                req_n = parse_quantity(req).to_int() if req is not None else 0
                if used > req_n:
                    msg += (f"Container {c['name']} was using {format_bytes(used)}, request is {req or '0'}, "
                            "has larger consumption of memory. ")
        return victim, msg
