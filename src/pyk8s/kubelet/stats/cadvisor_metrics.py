"""`GET /metrics/cadvisor`: cAdvisor's per-cgroup metrics as the kubelet serves them.

One series per cgroup: the machine ("/", every label empty), each pod cgroup (container="")
and each running container, labelled as cAdvisor labels them for a CRI runtime: container,
id (the cgroup path), image, name (the container ID), namespace, pod. Network counters are
the pod's (its network namespace), on the pod cgroup's series, per interface.
"""

from __future__ import annotations

import os
import time
from typing import Any

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from ..runtime.interface import SANDBOX_READY
from . import cgroups as C
from .resource_metrics import render
from .summary import SummaryProvider, running_by_sandbox

LABELS = ["container", "id", "image", "name", "namespace", "pod"]


def _device_of(path: str) -> str:
    """The mount source of the filesystem holding `path` (cAdvisor's `device` label)."""
    try:
        dev = os.stat(path).st_dev
        want = f"{os.major(dev)}:{os.minor(dev)}"
        with open("/proc/self/mountinfo") as f:
            for line in f:
                cols = line.split()
                if len(cols) > 2 and cols[2] == want and " - " in line:
                    return line.split(" - ", 1)[1].split()[1]
    except (OSError, IndexError):
        pass
    return ""


async def families(p: SummaryProvider) -> list[Metric]:
    cpu = CounterMetricFamily("container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.",
                              labels=LABELS)
    ws = GaugeMetricFamily("container_memory_working_set_bytes", "Current working set in bytes.", labels=LABELS)
    usage = GaugeMetricFamily("container_memory_usage_bytes",
                              "Current memory usage in bytes, including all memory regardless of when it was "
                              "accessed", labels=LABELS)
    rss = GaugeMetricFamily("container_memory_rss", "Size of RSS in bytes.", labels=LABELS)
    rx = CounterMetricFamily("container_network_receive_bytes_total", "Cumulative count of bytes received",
                             labels=[*LABELS, "interface"])
    tx = CounterMetricFamily("container_network_transmit_bytes_total", "Cumulative count of bytes transmitted",
                             labels=[*LABELS, "interface"])
    fs = GaugeMetricFamily("container_fs_usage_bytes", "Number of bytes that are consumed by the container on this "
                           "filesystem.", labels=[*LABELS, "device"])

    def add(labels: list[str], s: C.CgroupSample | None) -> None:
        if s is None:
            return
        ts = s.time
        cpu.add_metric(labels, s.cpu_ns / 1e9, timestamp=ts)
        ws.add_metric(labels, s.working_set, timestamp=ts)
        usage.add_metric(labels, s.memory_usage, timestamp=ts)
        rss.add_metric(labels, s.rss, timestamp=ts)

    add(["", "/", "", "", "", ""], p._sample("/", lambda now: C.read_machine(now, p.cgroup_root, p.proc)))
    running = await running_by_sandbox(p.runtime)
    for sb in await p.runtime.list_sandboxes():
        if sb.state != SANDBOX_READY:
            continue
        cfg = sb.config
        pod_cg = getattr(p.runtime, "sandbox_cgroup", lambda _i: "")(sb.id)
        containers = running.get(sb.id, [])
        if pod_cg:
            plabels = ["", "/" + pod_cg, "", "", cfg.namespace, cfg.name]
            add(plabels, p._cgroup(pod_cg))
            pid = next((c.pid for c in containers if c.pid), 0)
            if pid and not cfg.host_network:
                now = time.time()
                for i in C.read_net_dev(os.path.join(p.proc, str(pid), "net", "dev")):
                    rx.add_metric([*plabels, i.name], i.rx_bytes, timestamp=now)
                    tx.add_metric([*plabels, i.name], i.tx_bytes, timestamp=now)
        for c in containers:
            path = getattr(p.runtime, "container_cgroup", lambda _i: "")(c.id)
            if not path:
                continue
            labels = [c.name, "/" + path, c.image, c.id, cfg.namespace, cfg.name]
            add(labels, p._cgroup(path))
            layer = getattr(p.runtime, "container_writable_layer", lambda _i: "")(c.id)
            used = p.du.get(layer) if layer else None
            if used is not None:
                fs.add_metric([*labels, _device_of(layer)], used[0], timestamp=time.time())
    return [cpu, fs, usage, rss, ws, rx, tx]


async def render_cadvisor(p: SummaryProvider) -> bytes:
    fams: list[Any] = await families(p)
    return render(fams)
