"""The floor under pod startup: N pods started at once with only the external programs a pod start needs.

No pyk8s code in the path: per pod `ip netns add`, the CNI chain with the plugin config our kubelet
generates (bridge_conflist: bridge + host-local, portmap; the loopback plugin on lo; ipMasq off, as the agent
runs it with its one node-wide SNAT rule), with the environment and CNI_ARGS our CNI class passes, then
`runc run --detach` of a busybox-static `sleep 3600` joining that netns; all N concurrently. Latency is from
the common start to each pod's `runc run` returning. Three passes:

  full     netns + loopback + bridge/host-local + portmap + runc run   (every program a pod start can need)
  kubelet  netns + bridge/host-local + runc run   (what the kubelet execs for a pod without hostPorts: it makes
           the netns and brings lo up in-process, and skips portmap when there are no port mappings)
  runc     runc run alone (runc makes the netns)

CPU: the children's rusage misses runc init (it leaves us for the container), so the programs' CPU is taken from
a cgroup instead: during a pass this process sits in a cpuacct cgroup of its own, which what it starts inherits
and under which runc makes the containers' (its own CPU is subtracted). The machine-wide busy time from
/proc/stat is reported too; it includes whatever else the machine runs (on a saturated machine it is just cores x
wall), hence also the cores busy with other work in the second before each pass.

Own bridge, subnet, IPAM dataDir, netns names and runc root, so a running pyk8s node is not touched; all of it
is removed after each pass, also on error or Ctrl-C. Needs root, ip, runc, the CNI plugins in /usr/lib/cni and a
static /usr/bin/busybox; without them it prints a skip line.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import ipaddress
import json
import os
import resource
import shutil
import signal
import struct
import subprocess
import tempfile
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from .report import percentile, row

CNI_BIN = "/usr/lib/cni"
BUSYBOX = "/usr/bin/busybox"
NETNS_DIR = "/run/netns"
SLO_P99 = 5.0
# /16s that neither pyk8s nodes (10.244/16) nor the e2e harness (10.249/16) use; the first not routed here is taken
SUBNETS = ("10.252.0.0/16", "10.253.0.0/16", "10.254.0.0/16", "10.251.0.0/16", "172.30.0.0/16")


@dataclass(frozen=True)
class Pass:
    key: str
    what: str
    netns: bool  # `ip netns add` and join it (else runc makes one)
    plugins: tuple[str, ...]  # CNI plugins on eth0, in chain order
    loopback: bool  # the CNI loopback plugin on lo


PASSES = (
    Pass("full", "full: netns+CNI+runc run", True, ("bridge", "portmap"), True),
    Pass("kubelet", "kubelet's: netns+bridge+runc", True, ("bridge",), False),
    Pass("runc", "runc run alone", False, (), False),
)


def busy_seconds(stat_line: str, hz: int) -> float:
    """Non-idle CPU time in the "cpu" line of /proc/stat: user..steal minus idle and iowait (guest time is already
    inside user and nice, so the last two fields are left out)."""
    v = [int(x) for x in stat_line.split()[1:9]]
    return (sum(v) - v[3] - v[4]) / hz


def free_subnet(in_use: Iterable[str], candidates: Iterable[str] = SUBNETS) -> str:
    """The first candidate overlapping none of the networks in use here (route destinations, interface prefixes)."""
    used = [ipaddress.ip_network(u, strict=False) for u in in_use]
    for c in candidates:
        net = ipaddress.ip_network(c)
        if not any(net.overlaps(u) for u in used if u.version == 4):
            return c
    raise RuntimeError(f"no free subnet among {list(candidates)}")


def chain_confs(conflist: dict[str, Any], plugins: tuple[str, ...]) -> list[dict[str, Any]]:
    """Each plugin's config as our CNI class passes it (name and cniVersion of the list; prevResult added per ADD)."""
    by_type = {p["type"]: p for p in conflist["plugins"]}
    return [dict(by_type[t], name=conflist["name"], cniVersion=conflist["cniVersion"]) for t in plugins]


def summary(lat: list[float], wall: float, busy: float, programs: float, n: int, load: float,
            other: float) -> dict[str, float]:
    """A pass's figures; `other` = cores busy in the second before it (load not ours)."""
    return {"n": n, "wall": wall, "p50": percentile(lat, 50), "p99": percentile(lat, 99), "busy_cpu": busy,
            "programs_cpu": programs, "load": load, "other_cores": other}


def _static_elf(path: str) -> bool:
    """No PT_INTERP program header (64-bit little-endian ELF): runs in a rootfs that holds nothing else."""
    with open(path, "rb") as f:
        head = f.read(64)
        if head[:4] != b"\x7fELF" or head[4] != 2 or head[5] != 1:
            return False
        phoff, = struct.unpack_from("<Q", head, 0x20)
        phentsize, phnum = struct.unpack_from("<HH", head, 0x36)
        f.seek(phoff)
        table = f.read(phentsize * phnum)
    return all(struct.unpack_from("<I", table, i * phentsize)[0] != 3 for i in range(phnum))


def unavailable() -> str:
    """Why the floor cannot be measured here ("" when it can)."""
    if os.geteuid() != 0:
        return "needs root"
    for prog in ("ip", "runc"):
        if not shutil.which(prog):
            return f"no {prog} on PATH"
    for p in ("bridge", "host-local", "portmap", "loopback"):
        if not os.access(os.path.join(CNI_BIN, p), os.X_OK):
            return f"no CNI plugin {p} in {CNI_BIN}"
    if not os.path.exists(BUSYBOX):
        return f"no {BUSYBOX} (busybox-static)"
    if not _static_elf(BUSYBOX):
        return f"{BUSYBOX} is not a static x86-64/arm64 binary (install busybox-static)"
    return ""


def _networks_in_use() -> list[str]:
    out: list[str] = []
    for cmd in (["ip", "-j", "-4", "route", "show", "table", "all"], ["ip", "-j", "-4", "addr"]):
        doc = json.loads(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout or "[]")
        for d in doc:
            if "dst" in d and d["dst"] not in ("default", "broadcast", "local"):
                out.append(d["dst"] if "/" in d["dst"] else d["dst"] + "/32")
            out += [f"{a['local']}/{a['prefixlen']}" for a in d.get("addr_info", [])]
    return out


async def _run(*argv: str, stdin: bytes | None = None, env: dict[str, str] | None = None,
               err_path: str = "") -> bytes:
    """Run a program to its end; killed and waited for if we are cancelled, so nothing it makes appears after the
    clean-up. With err_path, stdin/stdout are /dev/null and stderr goes to that file: `runc run -d` leaves the
    container holding its stdio, so a pipe would never reach EOF and communicate() never return."""
    pipe = asyncio.subprocess.PIPE
    with open(err_path or os.devnull, "wb") as errf:
        if err_path:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=asyncio.subprocess.DEVNULL,
                                                        stdout=asyncio.subprocess.DEVNULL, stderr=errf, env=env)
        else:
            proc = await asyncio.create_subprocess_exec(*argv, stdin=pipe, stdout=pipe, stderr=pipe, env=env)
        try:
            out, err = await proc.communicate(stdin)
        except BaseException:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
            raise
    if proc.returncode:
        if err_path:
            with open(err_path, "rb") as f:
                err = f.read()
        raise RuntimeError(f"{' '.join(argv[:4])}: exit {proc.returncode}: {(out or b'').decode()[:300]}"
                           f"{(err or b'').decode()[:300]}")
    return out or b""


class ProgramsCPU:
    """CPU of every program started from construction to stop(), runc init and the containers included (runc makes
    their cgroups under ours, and cpuacct counts a cgroup's descendants), nobody else's. cgroup v1 only: on v2 runc
    could not enable controllers below a cgroup holding this process; nan there."""

    def __init__(self, tag: str) -> None:
        self.path = self.home = ""
        root = "/sys/fs/cgroup/cpuacct"
        with open("/proc/self/cgroup") as f:
            home = next((ln.rstrip("\n").split(":", 2)[2] for ln in f if "cpuacct" in ln.split(":")[1].split(",")),
                        None)
        if home is not None and os.path.exists(os.path.join(root, "cpuacct.usage")):
            path = os.path.join(root, home.lstrip("/"), f"{tag}-cpu")
            try:
                os.makedirs(path, exist_ok=True)
                self._move(path)
                self.path, self.home = path, os.path.dirname(path)
            except OSError:
                pass
        self.start = self._usage(self.path) - self._self_cpu() if self.path else 0.0

    @staticmethod
    def _move(cgroup: str) -> None:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(os.getpid()))

    @staticmethod
    def _self_cpu() -> float:
        r = resource.getrusage(resource.RUSAGE_SELF)
        return r.ru_utime + r.ru_stime

    @staticmethod
    def _usage(cgroup: str) -> float:
        with open(os.path.join(cgroup, "cpuacct.usage")) as f:
            return int(f.read()) / 1e9

    def stop(self) -> float:
        """Seconds used since construction by the programs and containers (before the containers are deleted)."""
        return self._usage(self.path) - self._self_cpu() - self.start if self.path else float("nan")

    def leave(self) -> None:
        """Back to the cgroup this process came from (ours goes in the sweep, after the containers' inside it)."""
        if self.path:
            with contextlib.suppress(OSError):
                self._move(self.home)


class Floor:
    def __init__(self, work: str, runc_root: str) -> None:
        self.work, self.runc_root = work, runc_root
        self.tag = f"pflr{os.getpid()}"  # names of our netns, containers and bridge (<= 15 chars for a link)
        self.bridge = self.tag
        self.conflist = self._conflist(free_subnet(_networks_in_use()))
        self.rootfs = os.path.join(work, "rootfs")
        for d in ("bin", "proc", "dev", "sys", "tmp", "etc"):
            os.makedirs(os.path.join(self.rootfs, d))
        shutil.copy(BUSYBOX, os.path.join(self.rootfs, "bin", "busybox"))
        spec_dir = os.path.join(work, "spec")
        os.makedirs(spec_dir)
        subprocess.run(["runc", "spec", "--bundle", spec_dir], check=True, capture_output=True)
        with open(os.path.join(spec_dir, "config.json")) as f:
            self.spec: dict[str, Any] = json.load(f)

    def _conflist(self, subnet: str) -> dict[str, Any]:
        from pyk8s.kubelet.runtime.cni import bridge_conflist

        conf = bridge_conflist(subnet, name=self.tag, bridge=self.bridge, data_dir=os.path.join(self.work, "ipam"))
        conf["plugins"][0]["ipMasq"] = False  # as the agent runs it: one node-wide SNAT rule, no chain per pod
        return conf

    def _bundle(self, p: Pass, i: int) -> str:
        s = copy.deepcopy(self.spec)
        s["process"]["terminal"] = False
        s["process"]["args"] = ["/bin/busybox", "sleep", "3600"]
        s["root"] = {"path": self.rootfs, "readonly": True}
        if p.netns:
            for ns in s["linux"]["namespaces"]:
                if ns["type"] == "network":
                    ns["path"] = os.path.join(NETNS_DIR, f"{self.tag}-{i}")
        b = os.path.join(self.work, p.key, str(i))
        os.makedirs(b)
        with open(os.path.join(b, "config.json"), "w") as f:
            json.dump(s, f)
        return b

    def _cni_env(self, command: str, name: str, ifname: str) -> dict[str, str]:
        # as CNI._exec sets it, with the CNI_ARGS the kubelet passes for a pod
        return {"PATH": os.environ.get("PATH", "/usr/sbin:/usr/bin:/sbin:/bin"), "CNI_COMMAND": command,
                "CNI_CONTAINERID": name, "CNI_NETNS": os.path.join(NETNS_DIR, name), "CNI_IFNAME": ifname,
                "CNI_PATH": CNI_BIN,
                "CNI_ARGS": f"IgnoreUnknown=1;K8S_POD_NAMESPACE=default;K8S_POD_NAME={name};"
                            f"K8S_POD_INFRA_CONTAINER_ID={name};K8S_POD_UID={name}"}

    async def _pod(self, p: Pass, i: int, bundle: str, t0: float) -> float:
        name = f"{self.tag}-{i}"
        if p.netns:
            await _run("ip", "netns", "add", name)
        if p.loopback:
            lo = {"cniVersion": self.conflist["cniVersion"], "name": "cni-loopback", "type": "loopback"}
            await _run(os.path.join(CNI_BIN, "loopback"), stdin=json.dumps(lo).encode(),
                       env=self._cni_env("ADD", name, "lo"))
        prev: Any = None
        for conf in chain_confs(self.conflist, p.plugins):
            if prev is not None:
                conf["prevResult"] = prev
            out = await _run(os.path.join(CNI_BIN, conf["type"]), stdin=json.dumps(conf).encode(),
                             env=self._cni_env("ADD", name, "eth0"))
            prev = json.loads(out) if out.strip() else prev
        await _run("runc", "--root", self.runc_root, "run", "--detach", "--bundle", bundle, name,
                   err_path=os.path.join(bundle, "runc.err"))
        return time.perf_counter() - t0

    async def run_pass(self, p: Pass, n: int) -> dict[str, float]:
        bundles = [self._bundle(p, i) for i in range(n)]
        load = os.getloadavg()[0]
        hz = os.sysconf("SC_CLK_TCK")
        # the kernel frees the last pass's netns in the background (and others share the machine): let that
        # settle, then note how busy the machine is without us, as the busy figure below includes it
        await asyncio.sleep(1.0)
        with open("/proc/stat") as f:
            q0, s0 = busy_seconds(f.readline(), hz), time.perf_counter()
        await asyncio.sleep(1.0)
        with open("/proc/stat") as f:
            other = (busy_seconds(f.readline(), hz) - q0) / (time.perf_counter() - s0)
        acct = ProgramsCPU(self.tag)
        with open("/proc/stat") as f:
            b0 = busy_seconds(f.readline(), hz)
        t0 = time.perf_counter()
        tasks = [asyncio.create_task(self._pod(p, i, bundles[i], t0)) for i in range(n)]
        try:
            lat = await asyncio.gather(*tasks)
            wall = time.perf_counter() - t0
            with open("/proc/stat") as f:
                busy = busy_seconds(f.readline(), hz) - b0
            programs = acct.stop()
        finally:
            # one failed pod ends the pass: the others' programs are stopped before anything is cleaned up
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            acct.leave()
        return summary(list(lat), wall, busy, programs, n, load, other)

    def sweep(self) -> None:
        """Remove what a pass made: containers, netns (with the pods' veths), the bridge, cgroups, IPAM files, bundles.
        Blocking on purpose: it also runs while the loop is being torn down after Ctrl-C. With ipMasq off and no
        port mappings the plugins leave nothing else behind, so no CNI DEL is needed."""
        if os.path.isdir(self.runc_root):
            ids = subprocess.run(["runc", "--root", self.runc_root, "list", "-q"], capture_output=True,
                                 text=True).stdout.split()
            procs = [subprocess.Popen(["runc", "--root", self.runc_root, "delete", "-f", cid],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) for cid in ids]
            for proc in procs:
                proc.wait()
        if os.path.isdir(NETNS_DIR):
            names = [d for d in os.listdir(NETNS_DIR) if d.startswith(self.tag + "-")]
            if names:
                subprocess.run(["ip", "-force", "-batch", "-"], input="".join(f"netns del {d}\n" for d in names),
                               text=True, capture_output=True)
        if os.path.exists(f"/sys/class/net/{self.bridge}"):
            subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        for cg in self._cgroups():  # a `runc run` killed mid-way made its cgroups but recorded no state to delete
            with contextlib.suppress(OSError):
                os.rmdir(cg)
        for d in ("ipam", *(p.key for p in PASSES), "warm-up"):
            shutil.rmtree(os.path.join(self.work, d), ignore_errors=True)

    def leftovers(self) -> list[str]:
        """What of ours is still there after a sweep (should be nothing)."""
        left = subprocess.run(["runc", "--root", self.runc_root, "list", "-q"], capture_output=True,
                              text=True).stdout.split() if os.path.isdir(self.runc_root) else []
        if os.path.isdir(NETNS_DIR):
            left += [f"netns {d}" for d in os.listdir(NETNS_DIR) if d.startswith(self.tag + "-")]
        if os.path.exists(f"/sys/class/net/{self.bridge}"):
            left.append(f"link {self.bridge}")
        return left + self._cgroups()

    def _cgroups(self) -> list[str]:
        """Our cgroups, deepest first: runc puts a container's at <cgroup of the caller>/<container id> in every
        hierarchy, which is nested wherever this process was started."""
        found = [d for d, _, _ in os.walk("/sys/fs/cgroup") if os.path.basename(d).startswith(self.tag + "-")]
        return sorted(found, key=lambda d: d.count("/"), reverse=True)


async def measure(n: int) -> dict[str, Any]:
    """{pass key: {n, wall, p50, p99, busy_cpu, programs_cpu, load, other_cores}} for each of PASSES (seconds; CPU
    for all n pods), plus "subnet"."""
    work = tempfile.mkdtemp(prefix="pyk8s-floor-")
    runc_root = tempfile.mkdtemp(prefix="pyk8s-floor-runc-", dir="/run")
    floor: Floor | None = None
    try:
        floor = Floor(work, runc_root)
        # one pod first, not measured: page cache warm for every program, and the setup checked before 100 start
        warm = Pass("warm-up", "", True, ("bridge", "portmap"), True)
        try:
            await floor.run_pass(warm, 1)
        finally:
            floor.sweep()
        out: dict[str, Any] = {"subnet": floor.conflist["plugins"][0]["ipam"]["ranges"][0][0]["subnet"]}
        for p in PASSES:
            try:
                out[p.key] = await floor.run_pass(p, n)
            finally:
                floor.sweep()
        left = floor.leftovers()
        if left:
            raise RuntimeError(f"left behind after clean-up: {left[:10]}")
        return out
    finally:
        if floor:
            floor.sweep()
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(runc_root, ignore_errors=True)


def print_rows(r: dict[str, Any]) -> None:
    n = r["full"]["n"]
    print(f"  floor: {n} pods at once, external programs only, no pyk8s code ({os.cpu_count()} cores, load average "
          f"{r['full']['load']:.1f}); latency = common start to each `runc run -d` returning")
    print("  (full = ip netns add, CNI loopback, bridge+host-local, portmap, runc run; kubelet's = what the kubelet "
          "execs for a pod without hostPorts, ip netns add standing in for its in-process netns; runc = runc alone)")
    for p in PASSES:
        m = r[p.key]
        row(f"floor p99 ({p.what})", m["p99"], "s", SLO_P99, "upstream SLO p99 5 s", higher_is_better=False)
        row(f"floor p50 ({p.key})", m["p50"], "s")
        row(f"floor all {n} started ({p.key})", m["wall"], "s")
        row(f"floor CPU/pod, machine-wide busy ({p.key})", m["busy_cpu"] / n * 1000, "ms")
        row(f"floor CPU/pod, programs' cgroup ({p.key})", m["programs_cpu"] / n * 1000, "ms")
        row(f"floor other load before ({p.key})", m["other_cores"], "cores")


async def _measure_until_term(n: int) -> dict[str, Any]:
    # SIGTERM cancels like Ctrl-C does under asyncio.run: at an await, so measure()'s clean-up runs
    task = asyncio.current_task()
    assert task is not None
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, task.cancel)
    return await measure(n)


def main() -> None:
    reason = unavailable()
    if reason:
        print(f"  skipped: floor not measured ({reason})")
        return
    try:
        r = asyncio.run(_measure_until_term(int(os.environ.get("BENCH_PODSTARTUP_PODS", "100"))))
    except (KeyboardInterrupt, asyncio.CancelledError):
        print("  floor interrupted (what it made is removed)")
        raise SystemExit(130) from None
    print_rows(r)


if __name__ == "__main__":
    main()
