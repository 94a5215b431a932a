"""Upstream kubelet's resource math: QoS class, cgroup values and oom_score_adj, from wire-form pod dicts.

Mirrors pkg/kubelet/cm (MilliCPUToShares/MilliCPUToQuota, ResourceConfigForPod),
pkg/kubelet/qos (GetContainerOOMScoreAdjust) and the v1 QoS helper (GetPodQOS).
"""

from __future__ import annotations

import os
from typing import Any

from ...api.quantity import parse_quantity
from .interface import BEST_EFFORT, BURSTABLE, GUARANTEED, LinuxResources

MIN_SHARES = 2
MAX_SHARES = 262144
SHARES_PER_CPU = 1024
MILLI_CPU_TO_CPU = 1000
QUOTA_PERIOD = 100_000  # cpuCFSQuotaPeriod default, 100ms in µs
MIN_QUOTA_PERIOD = 1000

GUARANTEED_OOM_SCORE_ADJ = -997
BEST_EFFORT_OOM_SCORE_ADJ = 1000
KUBELET_OOM_SCORE_ADJ = -999

_QOS_RESOURCES = ("cpu", "memory")


def milli_cpu_to_shares(milli_cpu: int) -> int:
    if milli_cpu == 0:
        return MIN_SHARES  # docker/runc treat 0 as "default 1024"; the kubelet wants the minimum
    shares = milli_cpu * SHARES_PER_CPU // MILLI_CPU_TO_CPU
    return max(MIN_SHARES, min(MAX_SHARES, shares))


def milli_cpu_to_quota(milli_cpu: int, period: int = QUOTA_PERIOD) -> int:
    if milli_cpu == 0:
        return 0
    quota = milli_cpu * period // MILLI_CPU_TO_CPU
    return max(quota, MIN_QUOTA_PERIOD)


def shares_to_weight(shares: int) -> int:
    """cgroup v2 cpu.weight for v1 shares, as runc converts them."""
    if shares == 0:
        return 0
    return 1 + ((shares - 2) * 9999) // 262142


def _res(container: dict[str, Any], kind: str) -> dict[str, Any]:
    return ((container.get("resources") or {}).get(kind)) or {}


def _milli(q: Any) -> int:
    return parse_quantity(q).to_milli() if q is not None else 0


def _value(q: Any) -> int:
    return parse_quantity(q).to_int() if q is not None else 0


def _all_containers(pod: dict[str, Any]) -> list[dict[str, Any]]:
    spec = pod.get("spec") or {}
    return list(spec.get("initContainers") or []) + list(spec.get("containers") or [])


def pod_qos_class(pod: dict[str, Any]) -> str:
    """Guaranteed, Burstable or BestEffort, as upstream's GetPodQOS (status.qosClass wins when set)."""
    status_qos = (pod.get("status") or {}).get("qosClass")
    if status_qos:
        return str(status_qos)
    requests: dict[str, int] = {}
    limits: dict[str, int] = {}
    guaranteed = True
    for c in _all_containers(pod):
        for name, q in _res(c, "requests").items():
            if name in _QOS_RESOURCES and parse_quantity(q).nanos > 0:
                requests[name] = requests.get(name, 0) + parse_quantity(q).nanos
        found = set()
        for name, q in _res(c, "limits").items():
            if name in _QOS_RESOURCES and parse_quantity(q).nanos > 0:
                found.add(name)
                limits[name] = limits.get(name, 0) + parse_quantity(q).nanos
        if not found.issuperset(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return BEST_EFFORT
    if guaranteed:
        for name, r in requests.items():
            if limits.get(name) != r:
                guaranteed = False
                break
    if guaranteed and len(requests) == len(limits):
        return GUARANTEED
    return BURSTABLE


def pod_requests(pod: dict[str, Any]) -> dict[str, int]:
    """Effective requests (milli-cpu, bytes): max(any init container, sum of app containers and sidecars) + overhead."""
    spec = pod.get("spec") or {}

    def req(c: dict[str, Any], name: str) -> int:
        q = ((c.get("resources") or {}).get("requests") or {}).get(name)
        if q is None:
            return 0
        return parse_quantity(q).to_milli() if name == "cpu" else parse_quantity(q).to_int()

    out = {}
    for name in ("cpu", "memory", "ephemeral-storage"):
        total = sum(req(c, name) for c in spec.get("containers") or [])
        side = 0
        for ic in spec.get("initContainers") or []:
            if ic.get("restartPolicy") == "Always":
                side += req(ic, name)
                total += req(ic, name)
            else:
                total = max(total, req(ic, name) + side)
        q = (spec.get("overhead") or {}).get(name)
        if q is not None:
            total += parse_quantity(q).to_milli() if name == "cpu" else parse_quantity(q).to_int()
        out[name] = total
    return out


def machine_memory_capacity() -> int:
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                return int(line.split()[1]) * 1024
    return 0


def _is_critical(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    prio = spec.get("priority")
    return (isinstance(prio, int) and prio >= 2_000_000_000) or spec.get("priorityClassName") in (
        "system-node-critical", "system-cluster-critical")


def container_oom_score_adj(pod: dict[str, Any], container: dict[str, Any], memory_capacity: int) -> int:
    """upstream GetContainerOOMScoreAdjust: -997 Guaranteed, 1000 BestEffort, Burstable by memory request share."""
    if _is_critical(pod) and (pod.get("spec") or {}).get("priorityClassName") == "system-node-critical":
        return GUARANTEED_OOM_SCORE_ADJ  # only node-critical pods are protected like Guaranteed
    qos = pod_qos_class(pod)
    if qos == GUARANTEED:
        return GUARANTEED_OOM_SCORE_ADJ
    if qos == BEST_EFFORT:
        return BEST_EFFORT_OOM_SCORE_ADJ
    memory_request = _value(_res(container, "requests").get("memory"))
    adj = 1000 - (1000 * memory_request) // memory_capacity if memory_capacity > 0 else 1000
    if adj < 1000 + GUARANTEED_OOM_SCORE_ADJ:  # never as protected as Guaranteed
        return 1000 + GUARANTEED_OOM_SCORE_ADJ
    if adj == BEST_EFFORT_OOM_SCORE_ADJ:  # never as exposed as BestEffort
        return adj - 1
    return int(adj)


def container_resources(pod: dict[str, Any], container: dict[str, Any], memory_capacity: int | None = None,
                        cpu_cfs_quota: bool = True, period: int = QUOTA_PERIOD) -> LinuxResources:
    """The container's cgroup settings, as upstream's generateLinuxContainerResources."""
    if memory_capacity is None:
        memory_capacity = machine_memory_capacity()
    req, lim = _res(container, "requests"), _res(container, "limits")
    cpu_request, cpu_limit = _milli(req.get("cpu")), _milli(lim.get("cpu"))
    if cpu_request == 0 and cpu_limit != 0:
        shares = milli_cpu_to_shares(cpu_limit)
    else:
        shares = milli_cpu_to_shares(cpu_request)
    quota = milli_cpu_to_quota(cpu_limit, period) if cpu_cfs_quota else 0
    return LinuxResources(
        cpu_shares=shares,
        cpu_quota=quota,
        cpu_period=period,
        memory_limit=_value(lim.get("memory")),
        oom_score_adj=container_oom_score_adj(pod, container, memory_capacity),
        hugepage_limits={k[len("hugepages-"):]: _value(v) for k, v in lim.items() if k.startswith("hugepages-")},
    )


def pod_resources(pod: dict[str, Any], cpu_cfs_quota: bool = True, period: int = QUOTA_PERIOD,
                  pids_limit: int = 0) -> LinuxResources:
    """The pod cgroup's settings, as upstream's ResourceConfigForPod.

    Requests and limits add over app containers; an init container counts when it needs
    more than all app containers together (init containers run one at a time), and pod
    overhead is added on top.
    """
    spec = pod.get("spec") or {}
    qos = pod_qos_class(pod)
    overhead = spec.get("overhead") or {}

    def total(kind: str, name: str, conv: Any) -> tuple[int, bool]:
        apps = spec.get("containers") or []
        s = sum(conv(_res(c, kind).get(name)) for c in apps)
        every = all(_res(c, kind).get(name) is not None for c in apps)
        restartable = 0  # sidecars (restartPolicy Always init containers) run alongside the app
        for ic in spec.get("initContainers") or []:
            v = conv(_res(ic, kind).get(name))
            if ic.get("restartPolicy") == "Always":
                restartable += v
                s += v
                every = every and _res(ic, kind).get(name) is not None
            else:
                s = max(s, v + restartable)
        if overhead.get(name) is not None:
            s += conv(overhead[name])
        return s, every

    cpu_req, _ = total("requests", "cpu", _milli)
    cpu_lim, cpu_all = total("limits", "cpu", _milli)
    mem_lim, mem_all = total("limits", "memory", _value)
    r = LinuxResources(cpu_period=period, pids_limit=pids_limit)
    if qos == BEST_EFFORT:
        r.cpu_shares = MIN_SHARES
        return r
    r.cpu_shares = milli_cpu_to_shares(cpu_req)
    if qos == GUARANTEED or cpu_all:
        r.cpu_quota = milli_cpu_to_quota(cpu_lim, period) if cpu_cfs_quota else 0
        if r.cpu_quota == 0:
            r.cpu_quota = -1
    else:
        r.cpu_quota = -1
    if qos == GUARANTEED or mem_all:
        r.memory_limit = mem_lim
    return r


def pod_cgroup_parent(qos_class: str, pod_uid: str) -> str:
    """`kubepods/burstable/pod<uid>`, `kubepods/besteffort/pod<uid>`, and `kubepods/pod<uid>` for Guaranteed,
    as upstream's cgroupfs driver lays them out."""
    if qos_class == GUARANTEED:
        return f"kubepods/pod{pod_uid}"
    return f"kubepods/{qos_class.lower()}/pod{pod_uid}"


def nofile_limit() -> int:
    """The hard RLIMIT_NOFILE we may give containers: ours, capped at upstream's 1048576 (never above ours,
    since raising it needs CAP_SYS_RESOURCE)."""
    import resource

    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard == resource.RLIM_INFINITY:
        return 1048576
    return min(hard, 1048576)


def cpu_count() -> int:
    return os.cpu_count() or 1
