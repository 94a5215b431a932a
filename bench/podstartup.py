"""Pod startup latency on one real node (runc), against upstream's SLO.

Upstream's SLI (sig-scalability, "pod startup latency"): from pod creation to all its
containers reported started, as observed through a watch, for stateless pods whose
images are present; its SLO: p99 <= 5 s. Here: a `pyk8s server` (API server, controllers,
scheduler) and one `pyk8s agent` (the kubelet, runc, CNI bridge) on this machine; this
process creates BENCH_PODSTARTUP_PODS (default 100) busybox pods at once and watches.
Also reported: the kubelet process's memory per running pod, and the per-container shims'.

Figures (2026-11-26, 2 shared cores, load average ~14 from other work; before = 1142b4d, after = the
shim zygote and off-loop file work of 3abd410..352f542, three pairs run alternately): p99 29.0/26.8/25.2 s
-> 15.0/18.1/19.3 s, p50 19.1/14.9/16.0 s -> 9.4/12.0/12.4 s; node CPU (agent + shims + runc + CNI, the
figure load skews least) 13.8/15.1/15.0 s -> 8.9/9.6/10.1 s, i.e. ~145 -> ~95 ms per pod. Where the
~95 ms go now: `runc run` ~30 ms (its Go start and runc init), the CNI bridge + host-local execs ~20 ms,
the kubelet's own Python ~40 ms (API writes: TokenRequest, 3 Events, 1 status patch per pod; sync logic).
Wall time is still mostly the wait for one of the 16 start slots: the run is CPU-bound on 2 cores, so
p99 is the whole burst's CPU (node + server ~3 s) over what the machine spares.

The floor (bench/podstartup_floor, measured after the servers stop): the same burst with only the external programs
a pod start needs and no pyk8s code in the path: per pod `ip netns add`, the CNI plugins with the kubelet's config,
`runc run --detach` of busybox; latency = common start to each `runc run` returning. Passes: full (also the CNI
loopback and portmap plugins), the kubelet's (bridge + host-local + runc: what it execs for a pod without hostPorts;
`ip netns add` stands in for its in-process netns), runc alone. 2026-11-26 06:26-06:29 UTC, 100 pods, four runs,
load average 12-26 with other work keeping ~2 cores busy just before each pass: p99 full 5.9-10.4 s, kubelet's
5.0-7.8 s, runc alone 3.0-4.1 s; the programs' CPU (their cgroup, runc init and containers included) 67-85, 58-76,
34-45 ms per pod. So on this shared machine the programs alone fill the 5 s SLO, and the pyk8s p99 above (15-19 s
at load ~14) is 2-4x the kubelet's floor; compare within one run, where both are printed.

2026-11-27 21:52-21:58 UTC, load average 18-27 from other work, base (4b9119a) and after dc1625a..c034baf (stats
listing once per round, 16 API connections, no start-slot limit, two Event writes at a time) run alternately: p99
17.4/17.0 s -> 17.9/12.9 s against floors 5.7/4.7 -> 5.5/4.8 s (3.0/3.6x -> 3.3/2.7x); kubelet CPU 3.7/3.4 ->
3.3/3.2 s. At this load the run is CPU-bound and a single p99 moves by +-30% between runs. Per pod (trace of one run):
creation->first sync ~1.3-2 s (server, scheduler, watch), volumes ~0.6-1 s (its TokenRequest), sandbox ~2 s (netns,
bridge + host-local), containers ~4-6 s, of which `runc run` under the shim ~3 s mean, 6.5 s max: the kubelet's own
Python is ~18 ms of the ~63 ms of node CPU per pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import time
from typing import Any

from .one_node import one_node, runc_skip_reason
from .report import percentile, row

N_PODS = int(os.environ.get("BENCH_PODSTARTUP_PODS", "100"))
NS = "default"
SLO_P99 = 5.0


def _rss_kib(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/status") as f:
            return float(next(line.split()[1] for line in f if line.startswith("VmRSS:")))
    except (OSError, StopIteration):
        return 0.0


def _cpu_s(pid: int) -> float:
    try:
        with open(f"/proc/{pid}/stat") as f:
            parts = f.read().rsplit(")", 1)[1].split()
        return (int(parts[11]) + int(parts[12]) + int(parts[13]) + int(parts[14])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def _shim_rss_kib(container_dir: str) -> tuple[float, int]:
    """Total RSS and count of the per-container shims of this node (each works in its container's state dir)."""
    total, n = 0.0, 0
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cwd = os.readlink(f"/proc/{pid}/cwd")
        except OSError:
            continue
        if cwd.startswith(container_dir + "/"):
            total += _rss_kib(int(pid))
            n += 1
    return total, n


class NodeCPU:
    """CPU of the agent and of every process it starts from now on (shim zygote, shims, runc, CNI plugins), through a
    cpuacct cgroup of its own. The agent's own figure counts only the children it waited for, not the daemonized shims
    and their runc; containers move to their pod cgroups, so their workload is not counted."""

    def __init__(self, pid: int) -> None:
        self.path = ""
        for base, usage in (("/sys/fs/cgroup/cpuacct", "cpuacct.usage"), ("/sys/fs/cgroup", "cpu.stat")):
            if os.path.exists(os.path.join(base, usage)) or os.path.exists(os.path.join(base, "cgroup.controllers")):
                path = os.path.join(base, f"pyk8s-bench-podstartup-{pid}")
                try:
                    os.makedirs(path, exist_ok=True)
                    with open(os.path.join(path, "cgroup.procs"), "w") as f:
                        f.write(str(pid))
                except OSError:
                    continue
                self.path, self.usage = path, usage
                return

    def seconds(self) -> float:
        if not self.path:
            return float("nan")
        with open(os.path.join(self.path, self.usage)) as f:
            text = f.read()
        if self.usage == "cpuacct.usage":
            return int(text) / 1e9
        return next(int(line.split()[1]) for line in text.splitlines() if line.startswith("usage_usec")) / 1e6

    def remove(self) -> None:
        if self.path:
            with contextlib.suppress(OSError):
                os.rmdir(self.path)


def _pod(i: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": f"startup-{i:03d}", "namespace": NS, "labels": {"bench": "podstartup"}},
            "spec": {"terminationGracePeriodSeconds": 5, "containers": [{
                "name": "c", "image": "busybox:e2e", "imagePullPolicy": "IfNotPresent",
                "command": ["sh", "-c", "trap 'exit 0' TERM; while true; do sleep 1; done"]}]}}


def _started(p: dict[str, Any]) -> bool:
    cs = (p.get("status") or {}).get("containerStatuses") or []
    return bool(cs) and all((c.get("state") or {}).get("running") and c.get("started") for c in cs)


async def _wait_default_service_account(c: Any) -> None:
    """Pods are refused until the service account controller has made the namespace's `default` account."""
    from pyk8s.api.errors import StatusError

    for _ in range(300):
        try:
            await c.get(("", "v1", "serviceaccounts"), "default", NS)
            return
        except StatusError as e:
            if e.code != 404:
                raise
        await asyncio.sleep(0.1)
    raise TimeoutError(f"no service account {NS}/default after 30 s")


async def run(env: Any) -> dict[str, Any]:
    from pyk8s.client import Client

    c = Client.from_kubeconfig(env.cluster.kubeconfig, pool_size=N_PODS + 8, timeout=120)
    pods = ("", "v1", "pods")
    created: dict[str, float] = {}
    started: dict[str, float] = {}
    done = asyncio.Event()
    await _wait_default_service_account(c)
    rv = (await c.list(pods, NS))["metadata"]["resourceVersion"]

    async def watch() -> None:
        async for ev in c.watch(pods, NS, rv, timeout_seconds=300, label_selector="bench=podstartup"):
            obj = ev.get("object") or {}
            name = (obj.get("metadata") or {}).get("name", "")
            if ev.get("type") in ("ADDED", "MODIFIED") and name not in started and _started(obj):
                started[name] = time.time()
                if len(started) == N_PODS:
                    done.set()
                    return

    agent_pid = env.agent.proc.pid
    server_pid = env.cluster.proc.pid
    rss_before = _rss_kib(agent_pid)
    node_cpu = NodeCPU(agent_pid)
    cpu0 = (_cpu_s(agent_pid), _cpu_s(server_pid), os.times(), node_cpu.seconds())
    w = asyncio.create_task(watch())
    await asyncio.sleep(0.3)

    async def create(i: int) -> None:
        p = _pod(i)
        created[p["metadata"]["name"]] = time.time()
        await c.create(pods, p, NS)

    t0 = time.time()
    await asyncio.gather(*(create(i) for i in range(N_PODS)))
    t_created = time.time() - t0
    try:
        await asyncio.wait_for(done.wait(), 300)
    finally:
        w.cancel()
    t_all = time.time() - t0
    tm = os.times()
    cpu = (_cpu_s(agent_pid) - cpu0[0], _cpu_s(server_pid) - cpu0[1],
           tm.user + tm.system - cpu0[2].user - cpu0[2].system, node_cpu.seconds() - cpu0[3])
    await asyncio.sleep(2)  # let the kubelet settle (status writes) before measuring memory
    rss_after = _rss_kib(agent_pid)
    shim_kib, shims = _shim_rss_kib(os.path.join(env.data, "runtime", "containers"))
    lat = [started[n] - created[n] for n in started]
    await c.close()
    return {"lat": lat, "created_s": t_created, "all_s": t_all, "rss_before": rss_before, "rss_after": rss_after,
            "shim_kib": shim_kib, "shims": shims, "cpu": cpu, "node_cpu": node_cpu}


def main() -> None:
    reason = runc_skip_reason()
    if reason:
        print(f"  skipped: runc cannot run pods here ({reason})")
        return
    r: dict[str, Any] = {}
    try:
        with one_node("pyk8s-bench-podstartup-", ["--max-pods", str(max(110, N_PODS + 10))]) as env:
            try:
                r = asyncio.run(run(env))
            finally:
                if os.environ.get("BENCH_PODSTARTUP_AGENT_LOG"):
                    with open(os.environ["BENCH_PODSTARTUP_AGENT_LOG"], "w") as f:
                        f.write("".join(env.agent.output))
    finally:
        if r:
            r["node_cpu"].remove()  # empty once the agent and its shims are gone
    lat = r["lat"]
    print(f"  ({N_PODS} busybox pods created at once on one node, image present; {os.cpu_count()} cores; "
          "server and kubelet are separate processes; latency = creation to all containers started, seen by a watch)")
    row("pod startup latency p50", percentile(lat, 50), "s", SLO_P99, "upstream SLO p99 5 s", higher_is_better=False)
    row("pod startup latency p90", percentile(lat, 90), "s", SLO_P99, "upstream SLO p99 5 s", higher_is_better=False)
    row("pod startup latency p99", percentile(lat, 99), "s", SLO_P99, "upstream SLO p99 5 s", higher_is_better=False)
    row("pod startup latency max", max(lat), "s")
    row(f"creating the {N_PODS} pods (client side)", r["created_s"], "s")
    row(f"all {N_PODS} pods started", r["all_s"], "s")
    row("kubelet CPU (with runc, CNI, shims it waited for)", r["cpu"][0], "s")
    row("node CPU (kubelet, shims, runc, CNI: all it started)", r["cpu"][3], "s")
    row("server CPU (API server, controllers, scheduler)", r["cpu"][1], "s")
    row("bench client CPU", r["cpu"][2], "s")
    per_pod = (r["rss_after"] - r["rss_before"]) / max(1, N_PODS)
    row("kubelet RSS before the pods", r["rss_before"] / 1024, "MiB")
    row(f"kubelet RSS with {N_PODS} pods running", r["rss_after"] / 1024, "MiB")
    row("kubelet memory per running pod", per_pod, "KiB")
    if r["shims"]:
        row(f"container shim RSS per container ({r['shims']} shims)", r["shim_kib"] / r["shims"], "KiB")
    _floor(percentile(lat, 99))


def _floor(p99: float) -> None:
    """The same burst with only the external programs (podstartup_floor), on the machine the servers just left."""
    from .podstartup_floor import measure, print_rows, unavailable

    reason = unavailable()
    if reason:
        print(f"  skipped: floor not measured ({reason})")
        return
    try:
        f = asyncio.run(measure(N_PODS))
    except Exception as e:  # the pyk8s figures above stand without it
        print(f"  floor not measured: {type(e).__name__}: {e}")
        return
    print_rows(f)
    row("pyk8s p99 / floor p99 (kubelet's programs)", p99 / f["kubelet"]["p99"], "x")


if __name__ == "__main__":
    main()
