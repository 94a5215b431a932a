"""The kubelet's Summary API (`GET /stats/summary`, stats/v1alpha1) from cgroups, /proc and the runtime.

The node comes from the root cgroup (or /proc), each pod from its pod cgroup
(kubepods/<qos>/pod<uid>) and each running container from the cgroup runc made for it
under that. Rates (usageNanoCores) come from the two newest samples per cgroup
(`RateCache`); housekeeping samples every `interval` seconds and a scrape samples again
what is older than a second, as cAdvisor's housekeeping and on-demand updates do.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import time
from collections.abc import Callable
from typing import Any

from ..runtime.interface import RUNNING, SANDBOX_READY, ContainerRuntime, RuntimeError_
from . import cgroups as C
from .fsusage import DuCache, FsInfo, statvfs
from .rates import RateCache

log = logging.getLogger("pyk8s.kubelet.stats")

PodGetter = Callable[[str, str], "dict[str, Any] | None"]
KUBEPODS = "kubepods"


def rfc3339(t: float) -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(t))


def with_rfc3339_times(doc: Any) -> Any:
    """The Summary as JSON shows it: the readings' `time`s (kept as epoch floats, so the resource metrics
    carry their exact times) as metav1.Time strings."""
    if isinstance(doc, dict):
        return {k: rfc3339(v) if k == "time" and isinstance(v, float) else with_rfc3339_times(v)
                for k, v in doc.items()}
    if isinstance(doc, list):
        return [with_rfc3339_times(v) for v in doc]
    return doc


def _fs(now: float, info: FsInfo | None, used: tuple[int, int] | None) -> dict[str, Any]:
    out: dict[str, Any] = {"time": now}
    if info is not None:
        out.update(availableBytes=info.available, capacityBytes=info.capacity, inodesFree=info.inodes_free,
                   inodes=info.inodes)
    if used is not None:
        out.update(usedBytes=used[0], inodesUsed=used[1])
    return out


async def running_by_sandbox(runtime: ContainerRuntime) -> dict[str, list[Any]]:
    """The running containers of every sandbox, from one listing: asking per sandbox reads every container's state
    once per pod (quadratic: with 100 pods, 10,000 reads per stats round, on the kubelet's loop)."""
    out: dict[str, list[Any]] = {}
    for c in await runtime.list_containers():
        if c.state == RUNNING:
            out.setdefault(c.sandbox_id, []).append(c)
    return out


def _network(now: float, ifaces: list[C.InterfaceStats], default: str) -> dict[str, Any] | None:
    if not ifaces:
        return None
    items = [{"name": i.name, "rxBytes": i.rx_bytes, "rxErrors": i.rx_errors, "txBytes": i.tx_bytes,
              "txErrors": i.tx_errors} for i in ifaces]
    main = next((x for x in items if x["name"] == default), items[0])
    return {"time": now, **main, "interfaces": items}


class SummaryProvider:
    def __init__(self, node_name: str, runtime: ContainerRuntime, root_dir: str, *,
                 get_pod: PodGetter | None = None, pods_dir: str = "", images_dir: str = "",
                 cgroup_root: str = C.ROOT, proc: str = "/proc", interval: float = 10.0) -> None:
        self.node_name = node_name
        self.runtime = runtime
        self.root_dir = root_dir
        self.get_pod = get_pod
        self.pods_dir = pods_dir or os.path.join(root_dir, "pods")
        self.images_dir = images_dir or os.path.join(root_dir, "images")
        self.cgroup_root = cgroup_root
        self.v2 = C.is_v2(cgroup_root)
        self.proc = proc
        self.interval = interval
        self.rates = RateCache()
        self.du = DuCache()
        self.started = time.time()
        self._task: asyncio.Task[None] | None = None

    # ---- housekeeping

    def start(self) -> None:
        self._task = asyncio.create_task(self._housekeeping(), name="kubelet-stats-housekeeping")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None

    async def _housekeeping(self) -> None:
        while True:
            try:
                await self.summary()
                await asyncio.to_thread(self.du.refresh)
            except Exception:  # noqa: BLE001 - the next round tries again
                log.exception("stats housekeeping failed")
            await asyncio.sleep(self.interval)

    # ---- sampling

    def _sample(self, key: str, read: Callable[[float], C.CgroupSample | None]) -> C.CgroupSample | None:
        now = time.time()
        s = self.rates.fresh(key, now)
        if s is None:
            s = read(now)
            if s is not None:
                self.rates.add(key, s)
        return s

    def _cgroup(self, path: str) -> C.CgroupSample | None:
        return self._sample(path, lambda now: C.read_cgroup(path, now, self.cgroup_root, self.v2))

    def _cpu(self, key: str, s: C.CgroupSample) -> dict[str, Any]:
        out: dict[str, Any] = {"time": s.time}
        rate = self.rates.nano_cores(key)
        if rate is not None:
            out["usageNanoCores"] = rate
        out["usageCoreNanoSeconds"] = s.cpu_ns
        return out

    @staticmethod
    def _memory(s: C.CgroupSample, limit: int = 0) -> dict[str, Any]:
        out: dict[str, Any] = {"time": s.time}
        limit = limit or s.memory_limit
        if limit:
            out["availableBytes"] = max(0, limit - s.working_set)
        out.update(usageBytes=s.memory_usage, workingSetBytes=s.working_set, rssBytes=s.rss,
                   pageFaults=s.page_faults, majorPageFaults=s.major_page_faults)
        return out

    def _usage(self, out: dict[str, Any], path: str, keys: list[str]) -> C.CgroupSample | None:
        """Fill `out`'s cpu and memory from cgroup `path` (kept in the rate cache through `keys`)."""
        s = self._cgroup(path) if path else None
        if s is not None:
            keys.append(path)
            out["cpu"] = self._cpu(path, s)
            out["memory"] = self._memory(s)
        return s

    # ---- the summary

    async def summary(self, only_cpu_and_memory: bool = False) -> dict[str, Any]:
        keys: list[str] = ["/"]
        node = self._node(only_cpu_and_memory, keys)
        pods = []
        running = await running_by_sandbox(self.runtime)
        for sb in await self.runtime.list_sandboxes():
            if sb.state != SANDBOX_READY:
                continue
            try:
                pod = await self._pod(sb, running.get(sb.id, []), only_cpu_and_memory, keys)
            except RuntimeError_:
                continue  # removed while we looked
            if pod is not None:
                pods.append(pod)
        self.rates.retain(keys)
        return {"node": node, "pods": pods}

    def _node(self, only: bool, keys: list[str]) -> dict[str, Any]:
        s = self._sample("/", lambda now: C.read_machine(now, self.cgroup_root, self.proc))
        assert s is not None
        now = s.time
        node: dict[str, Any] = {"nodeName": self.node_name, "systemContainers": self._system_containers(only, keys),
                                "startTime": rfc3339(C.boot_time(self.proc)),
                                "cpu": self._cpu("/", s), "memory": self._memory(s)}
        if only:
            return node
        net = _network(now, C.read_net_dev(os.path.join(self.proc, "self", "net", "dev")),
                       C.default_interface(self.proc))
        if net is not None:
            node["network"] = net
        info = statvfs(self.root_dir)
        node["fs"] = _fs(now, info, (info.capacity - info.available, info.inodes - info.inodes_free) if info else None)
        node["runtime"] = {"imageFs": _fs(now, statvfs(self.images_dir), self.du.get(self.images_dir))}
        node["rlimit"] = {"time": now, **self._rlimit()}
        return node

    def _system_containers(self, only: bool, keys: list[str]) -> list[dict[str, Any]]:
        out = []
        own = _own_cgroup(self.proc, self.v2)
        for name, path, start in (("kubelet", own, self.started), ("pods", KUBEPODS, None)):
            if not path:  # a kubelet in the root cgroup has no container of its own
                continue
            s = self._cgroup(path)
            if s is None:
                continue
            keys.append(path)
            if start is None:
                with contextlib.suppress(OSError):
                    start = os.stat(os.path.join(self.cgroup_root, "" if self.v2 else "cpuacct", path)).st_mtime
            out.append({"name": name, "startTime": rfc3339(start or self.started), "cpu": self._cpu(path, s),
                        "memory": self._memory(s)})
        return out

    def _rlimit(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        with contextlib.suppress(OSError, ValueError):
            with open(os.path.join(self.proc, "sys", "kernel", "pid_max")) as f:
                out["maxpid"] = int(f.read())
        with contextlib.suppress(OSError, ValueError, IndexError):
            with open(os.path.join(self.proc, "loadavg")) as f:
                out["curproc"] = int(f.read().split()[3].split("/")[1])
        return out

    async def _pod(self, sb: Any, containers: list[Any], only: bool, keys: list[str]) -> dict[str, Any] | None:
        cfg = sb.config
        cgroup = getattr(self.runtime, "sandbox_cgroup", lambda _i: "")(sb.id)
        pod_obj = self.get_pod(cfg.namespace, cfg.name) if self.get_pod else None
        if pod_obj is not None and (pod_obj.get("metadata") or {}).get("uid") != cfg.uid:
            pod_obj = None
        start = ((pod_obj or {}).get("status") or {}).get("startTime") or rfc3339(sb.created_at)
        out: dict[str, Any] = {"podRef": {"name": cfg.name, "namespace": cfg.namespace, "uid": cfg.uid},
                               "startTime": start, "containers": []}
        eph_used, eph_inodes = 0, 0
        for c in containers:
            cs = self._container(c, only, keys)
            out["containers"].append(cs)
            for k in ("rootfs", "logs"):
                eph_used += (cs.get(k) or {}).get("usedBytes", 0)
                eph_inodes += (cs.get(k) or {}).get("inodesUsed", 0)
        ps = self._usage(out, cgroup, keys)
        if only:
            return out
        now = time.time()
        if not cfg.host_network:
            pid = next((c.pid for c in containers if c.pid), 0)
            net = _network(now, C.read_net_dev(os.path.join(self.proc, str(pid), "net", "dev")), "eth0") \
                if pid else None
            if net is not None:
                out["network"] = net
        vols = self._volumes(cfg.uid, now)
        if vols:
            out["volume"] = vols
        for v in vols:
            eph_used += v.get("usedBytes", 0)
            eph_inodes += v.get("inodesUsed", 0)
        info = statvfs(self.root_dir)
        out["ephemeral-storage"] = _fs(now, info, (eph_used, eph_inodes))
        if ps is not None:
            out["process_stats"] = {"process_count": ps.pids}
        return out

    def _container(self, c: Any, only: bool, keys: list[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"name": c.name, "startTime": rfc3339(c.started_at or c.created_at)}
        self._usage(out, getattr(self.runtime, "container_cgroup", lambda _i: "")(c.id), keys)
        if only:
            return out
        now = time.time()
        layer = getattr(self.runtime, "container_writable_layer", lambda _i: "")(c.id)
        if layer:
            out["rootfs"] = _fs(now, statvfs(layer), self.du.get(layer))
        if c.log_path:
            logs = os.path.dirname(c.log_path)
            out["logs"] = _fs(now, statvfs(logs), self.du.get(logs))
        return out

    def _volumes(self, uid: str, now: float) -> list[dict[str, Any]]:
        base = os.path.join(self.pods_dir, uid, "volumes")
        out = []
        with contextlib.suppress(OSError):
            for plugin in sorted(os.listdir(base)):
                for name in sorted(os.listdir(os.path.join(base, plugin))):
                    p = os.path.join(base, plugin, name)
                    out.append({**_fs(now, statvfs(p), self.du.get(p)), "name": name})
        return out


def _own_cgroup(proc: str, v2: bool) -> str | None:
    """This process's cpu cgroup (the kubelet's system container)."""
    try:
        with open(os.path.join(proc, "self", "cgroup")) as f:
            for line in f:
                _, ctrls, path = line.rstrip("\n").split(":", 2)
                if (v2 and ctrls == "") or (not v2 and "cpuacct" in ctrls.split(",")):
                    return path.strip("/")
    except (OSError, ValueError):
        pass
    return None
