"""Plausible resource usage of simulated pods, for the stats a simulated kubelet serves.

A pod uses what its annotations declare:

    sim.pyk8s.io/cpu-usage: "250m"      the whole pod's CPU (a quantity of cores)
    sim.pyk8s.io/memory-usage: "64Mi"   the whole pod's memory working set

else a fraction (DEFAULT_FRACTION) of its containers' requests, else a small floor. The pod's
amount is shared among its containers in proportion to their requests (evenly without any).
CPU counters integrate the declared rate over time from the containers' start, changing slope
when the annotation changes, so a rate computed from two scrapes is the declared usage. The
node adds a fixed overhead to the sum of its pods.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ..api.quantity import parse_quantity

ANN_CPU = "sim.pyk8s.io/cpu-usage"
ANN_MEMORY = "sim.pyk8s.io/memory-usage"
DEFAULT_FRACTION = 0.5
CPU_FLOOR = 0.001  # cores: 1m, a sleeping process
MEMORY_FLOOR = 4 * 1024 * 1024
NODE_CPU_OVERHEAD = 0.1  # cores the simulated node spends itself (kubelet, runtime, system)
NODE_MEMORY_OVERHEAD = 512 * 1024 * 1024


def _q(v: Any) -> float | None:
    try:
        return parse_quantity(str(v)).to_float()
    except (ValueError, TypeError, ArithmeticError):
        return None


def _requests(c: dict[str, Any], name: str) -> float:
    r = (c.get("resources") or {})
    v = (r.get("requests") or {}).get(name, (r.get("limits") or {}).get(name))
    return (_q(v) or 0.0) if v is not None else 0.0


def declared(pod: dict[str, Any]) -> tuple[float, float, list[tuple[str, float, float]]]:
    """(pod cores, pod memory bytes, [(container, cores, bytes)]) this pod is using now."""
    containers = (pod.get("spec") or {}).get("containers") or []
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    totals = []
    for res, key, floor in (("cpu", ANN_CPU, CPU_FLOOR), ("memory", ANN_MEMORY, MEMORY_FLOOR)):
        reqs = [_requests(c, res) for c in containers]
        v = _q(ann[key]) if key in ann else None
        if v is None or v < 0:
            v = max(sum(reqs) * DEFAULT_FRACTION, floor)
        totals.append((v, reqs))
    out = []
    n = max(len(containers), 1)
    for i, c in enumerate(containers):
        shares = []
        for total, reqs in totals:
            s = sum(reqs)
            shares.append(total * (reqs[i] / s) if s > 0 else total / n)
        out.append((c.get("name", ""), shares[0], shares[1]))
    return totals[0][0], totals[1][0], out


@dataclass
class _Counter:
    """A CPU counter of constant slope since `t0` (`rate` cores), `base` ns before that."""
    t0: float
    base: float
    rate: float

    def at(self, now: float) -> float:
        return self.base + max(0.0, now - self.t0) * self.rate * 1e9

    def set_rate(self, rate: float, now: float) -> None:
        if rate != self.rate:
            self.base, self.t0, self.rate = self.at(now), now, rate


@dataclass
class PodUsage:
    started_at: float
    pod: _Counter
    containers: dict[str, _Counter]
    memory: float
    container_memory: dict[str, float]
    source: Any = None  # the pod object the usage was declared by


class UsageModel:
    """Usage state of every running simulated pod (a few objects per pod: cheap at 5,000 nodes)."""

    def __init__(self) -> None:
        self.pods: dict[str, PodUsage] = {}
        self.retired_ns: dict[str, float] = {}  # per node: CPU time of pods that are gone

    def observe(self, uid: str, node: str, pod: dict[str, Any], started_at: float, now: float | None = None) -> None:
        """The pod runs (again) since `started_at` with `pod`'s declared usage from now on."""
        now = time.time() if now is None else now
        u = self.pods.get(uid)
        if u is not None and u.source is pod and u.started_at == started_at:
            return  # the same pod object as last time: nothing new declared (a scrape's common case)
        cpu, mem, per = declared(pod)
        if u is None or u.started_at != started_at:
            if u is not None:
                self.retire(uid, node, now)
            start = min(started_at or now, now)
            self.pods[uid] = PodUsage(started_at, _Counter(start, 0.0, cpu),
                                      {n: _Counter(start, 0.0, c) for n, c, _ in per}, mem,
                                      {n: m for n, _, m in per}, pod)
            return
        u.source = pod
        u.pod.set_rate(cpu, now)
        for n, c, _ in per:
            ctr = u.containers.get(n)
            if ctr is None:
                u.containers[n] = _Counter(now, 0.0, c)
            else:
                ctr.set_rate(c, now)
        u.memory, u.container_memory = mem, {n: m for n, _, m in per}

    def retire(self, uid: str, node: str, now: float | None = None) -> None:
        u = self.pods.pop(uid, None)
        if u is not None:
            now = time.time() if now is None else now
            self.retired_ns[node] = self.retired_ns.get(node, 0.0) + u.pod.at(now)

    def forget_node(self, node: str) -> None:
        self.retired_ns.pop(node, None)
