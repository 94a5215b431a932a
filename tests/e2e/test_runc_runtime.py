"""The runc runtime end to end: real sandboxes (netns + CNI bridge), runc containers, cgroups, shims.

Every test gets its own data dir, runc root, bridge and /24, so tests can run in
parallel; the `rt` fixture removes every sandbox it made and the bridge, even when
the test fails.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import random
import re
import shutil
import subprocess
import time
import uuid

import pytest

from pyk8s.kubelet.images.store import ImageStore
from pyk8s.kubelet.runtime import cgroups
from pyk8s.kubelet.runtime.cni import CNI, bridge_conflist
from pyk8s.kubelet.runtime.interface import (
    BURSTABLE,
    EXITED,
    RUNNING,
    ContainerConfig,
    LinuxResources,
    PortMapping,
    RuntimeError_,
    SandboxConfig,
    SecurityContext,
)
from pyk8s.kubelet.runtime.resources import (
    container_resources,
    pod_cgroup_parent,
    pod_qos_class,
    pod_resources,
)
from pyk8s.kubelet.runtime.runc import RuncRuntime
from tests.conftest import require, require_binary
from tests.e2e.imagebuild import import_busybox
from tests.e2e.podnet import reserve_pod_net

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(60)]

CRI_LINE = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z (stdout|stderr) (F|P) (.*)$")


def _requirements() -> None:
    require("root", os.geteuid() == 0)
    require_binary("runc")
    require_binary("unshare")
    require_binary("iptables")
    require("CNI plugins in /usr/lib/cni", all(os.path.exists(f"/usr/lib/cni/{p}") for p in
                                                ("bridge", "host-local", "loopback", "portmap")))


@pytest.fixture(scope="module")
def image_store(tmp_path_factory) -> ImageStore:
    _requirements()
    d = tmp_path_factory.mktemp("images")
    store = ImageStore(str(d / "images"))
    store.unpack(import_busybox(store, str(d)))  # unpack once, so latencies below are per container, not per image
    return store


class Env:
    def __init__(self, tmp_path, store: ImageStore, **kw) -> None:
        tag = uuid.uuid4().hex[:8]
        self.bridge = f"pk{tag}"
        self.pod_net = reserve_pod_net(range(100, 251))  # no other test's bridge or route in this /16
        self.subnet_prefix = f"{self.pod_net.prefix}.{random.randint(0, 255)}"
        self.cni_dir = str(tmp_path / "cni")
        self.conf = bridge_conflist(f"{self.subnet_prefix}.0/24", name=f"pyk8s-{tag}", bridge=self.bridge,
                                    data_dir=self.cni_dir)
        self.runc_root = f"/run/pyk8s/test-{tag}"
        self.data = str(tmp_path / "data")
        self.store = store
        self.kw = kw
        self.rt = self.new_runtime()

    def new_runtime(self) -> RuncRuntime:
        return RuncRuntime(self.data, image_store=self.store, cni=CNI(self.conf), runc_root=self.runc_root, **self.kw)

    async def cleanup(self) -> None:
        rt = self.new_runtime()
        for sb in await rt.list_sandboxes():
            with contextlib.suppress(Exception):
                await rt.remove_sandbox(sb.id)
        subprocess.run(["ip", "link", "del", self.bridge], capture_output=True)
        self.pod_net.release()
        # runc state of anything left (a failed test's half-made container)
        if os.path.isdir(self.runc_root):
            for cid in os.listdir(self.runc_root):
                subprocess.run(["runc", "--root", self.runc_root, "delete", "--force", cid], capture_output=True)
            shutil.rmtree(self.runc_root, ignore_errors=True)


@pytest.fixture
def env(tmp_path, image_store):
    e = Env(tmp_path, image_store)
    try:
        yield e
    finally:
        asyncio.run(e.cleanup())


def run(coro):
    return asyncio.run(coro)


def sandbox_config(**kw) -> SandboxConfig:
    kw.setdefault("uid", str(uuid.uuid4()))
    kw.setdefault("name", "pod-" + kw["uid"][:6])
    return SandboxConfig(**kw)


def cri_lines(path: str) -> list[tuple[str, str, str]]:
    out = []
    with open(path) as f:
        for line in f.read().splitlines():
            m = CRI_LINE.match(line)
            assert m, f"not a CRI log line: {line!r}"
            out.append((m.group(1), m.group(2), m.group(3)))
    return out


async def run_to_exit(rt: RuncRuntime, sid: str, cmd: list[str], timeout: float = 15, **kw):
    cid = await rt.create_container(sid, ContainerConfig(name=kw.pop("name", "c"), image="busybox:e2e", command=cmd, **kw))
    await rt.start_container(cid)
    st = await rt.wait_exit(cid, timeout)
    return cid, st, [text for _, _, text in cri_lines(st.log_path)]


# ---------------------------------------------------------------- basics


def test_container_gets_ip_logs_and_exit_code(env):
    async def go():
        rt = env.rt
        cfg = sandbox_config(hostname="web-0", subdomain="web", namespace="shop")
        t0 = time.monotonic()
        sid = await rt.create_sandbox(cfg)
        t_sandbox = time.monotonic() - t0
        sb = await rt.sandbox_status(sid)
        assert sb.state == "ready" and sb.ip.startswith(env.subnet_prefix + ".")
        # CNI CHECK passes on a healthy pod network (with hostPorts, Debian's portmap 1.1 CHECK wrongly wants
        # ip6tables chains too, so this pod has none)
        await rt.check_sandbox_network(sid)
        script = ("echo out-line; echo err-line >&2; hostname; ip -o -4 addr show eth0; "
                  "cat /etc/hosts; echo HOSTNAME=$HOSTNAME; echo MY=$MY; pwd; exit 3")
        t1 = time.monotonic()
        cid = await rt.create_container(sid, ContainerConfig(
            name="main", image="busybox:e2e", command=["sh", "-c", script], env=[("MY", "value")], working_dir="/tmp"))
        t2 = time.monotonic()
        await rt.start_container(cid)
        t3 = time.monotonic()
        st = await rt.wait_exit(cid, 10)
        print(f"\nlatency: sandbox {t_sandbox * 1000:.0f} ms, create {(t2 - t1) * 1000:.0f} ms, "
              f"start {(t3 - t2) * 1000:.0f} ms")
        assert (st.state, st.exit_code, st.reason, st.oom_killed) == (EXITED, 3, "Error", False)
        assert st.finished_at >= st.started_at > 0
        assert st.log_path.endswith(f"shop_{cfg.name}_{cfg.uid}/main/0.log")
        lines = cri_lines(st.log_path)
        assert ("stdout", "F", "out-line") in lines and ("stderr", "F", "err-line") in lines
        text = [t for _, _, t in lines]
        assert "web-0" in text
        assert any(f"inet {sb.ip}/24" in t for t in text)
        assert f"{sb.ip}\tweb-0.web.shop.svc.cluster.local\tweb-0" in text
        assert "HOSTNAME=web-0" in text and "MY=value" in text and "/tmp" in text
        # a container that exits 0 is Completed; the sandbox's IP stays until teardown
        _, st2, _ = await run_to_exit(rt, sid, ["true"], name="second")
        assert (st2.exit_code, st2.reason) == (0, "Completed")
        assert len(await rt.list_containers(sid)) == 2
        await rt.remove_sandbox(sid)
        assert await rt.list_containers() == [] and await rt.list_sandboxes() == []

    run(go())


def test_missing_executable_is_a_start_error(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config())
        cid = await rt.create_container(sid, ContainerConfig(name="bad", image="busybox:e2e", command=["/no/such"]))
        with pytest.raises(RuntimeError_) as ei:
            await rt.start_container(cid)
        assert ei.value.reason == "RunContainerError"
        st = await rt.container_status(cid)
        assert (st.state, st.exit_code, st.reason) == (EXITED, 128, "StartError")
        assert "/no/such" in st.message
        with pytest.raises(RuntimeError_) as ei:
            await rt.create_container(sid, ContainerConfig(name="x", image="nosuch:image", command=["true"]))
        await rt.remove_sandbox(sid)

    run(go())


# ---------------------------------------------------------------- resources


def _pod(requests: dict, limits: dict, uid: str) -> dict:
    return {"metadata": {"uid": uid}, "spec": {"containers": [
        {"name": "c", "resources": {"requests": requests, "limits": limits}}]}}


def test_memory_limit_oom_killed(env):
    async def go():
        rt = env.rt
        uid = str(uuid.uuid4())
        pod = _pod({"memory": "16Mi", "cpu": "100m"}, {"memory": "16Mi", "cpu": "100m"}, uid)
        assert pod_qos_class(pod) == "Guaranteed"
        sid = await rt.create_sandbox(sandbox_config(uid=uid, qos_class="Guaranteed", pod_resources=pod_resources(pod)))
        res = container_resources(pod, pod["spec"]["containers"][0])
        cid, st, _ = await run_to_exit(rt, sid, ["sh", "-c", "exec dd if=/dev/zero of=/dev/null bs=64M count=1"],
                                       resources=res)
        assert (st.exit_code, st.oom_killed, st.reason) == (137, True, "OOMKilled")
        cg = f"{pod_cgroup_parent('Guaranteed', uid)}/{cid}"
        assert cg == f"kubepods/pod{uid}/{cid}"
        assert int(open(cgroups.cgroup_dir(cg, "memory") + "/memory.limit_in_bytes").read()) == 16 * 1024 * 1024
        assert cgroups.oom_kill_count(cg) >= 1
        # a plain SIGKILL (exit 137 too) is not an OOM kill
        cid2 = await rt.create_container(sid, ContainerConfig(name="k", image="busybox:e2e",
                                                              command=["sleep", "30"], resources=res))
        await rt.start_container(cid2)
        await rt.stop_container(cid2, 0)
        st2 = await rt.container_status(cid2)
        assert (st2.exit_code, st2.oom_killed, st2.reason) == (137, False, "Error")
        await rt.remove_sandbox(sid)
        assert not os.path.exists(cgroups.cgroup_dir(f"kubepods/pod{uid}", "memory"))

    run(go())


def test_cpu_and_memory_cgroups_and_oom_score(env):
    async def go():
        rt = env.rt
        uid = str(uuid.uuid4())
        pod = _pod({"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m", "memory": "128Mi"}, uid)
        assert pod_qos_class(pod) == BURSTABLE
        pr = pod_resources(pod)
        assert (pr.cpu_shares, pr.cpu_quota, pr.memory_limit) == (256, 50000, 128 * 1024 * 1024)
        sid = await rt.create_sandbox(sandbox_config(uid=uid, qos_class=BURSTABLE, pod_resources=pr))
        res = container_resources(pod, pod["spec"]["containers"][0])
        assert (res.cpu_shares, res.cpu_quota, res.cpu_period) == (256, 50000, 100000)
        res.pids_limit = 64
        assert 3 <= res.oom_score_adj < 1000
        cid = await rt.create_container(sid, ContainerConfig(name="c", image="busybox:e2e",
                                                             command=["sleep", "30"], resources=res))
        await rt.start_container(cid)
        st = await rt.container_status(cid)
        assert st.state == RUNNING and st.pid > 0
        pod_cg = f"kubepods/burstable/pod{uid}"
        cpu_dir = cgroups.cgroup_dir(f"{pod_cg}/{cid}", "cpu")
        if cgroups.is_v2():
            assert open(cpu_dir + "/cpu.max").read().split() == ["50000", "100000"]
        else:
            assert int(open(cpu_dir + "/cpu.cfs_quota_us").read()) == 50000
            assert int(open(cpu_dir + "/cpu.cfs_period_us").read()) == 100000
            assert int(open(cpu_dir + "/cpu.shares").read()) == 256
            pod_cpu = cgroups.cgroup_dir(pod_cg, "cpu")
            assert int(open(pod_cpu + "/cpu.shares").read()) == 256
            assert int(open(pod_cpu + "/cpu.cfs_quota_us").read()) == 50000
            assert int(open(cgroups.cgroup_dir(pod_cg, "memory") + "/memory.limit_in_bytes").read()) == 128 * 1024 * 1024
        assert str(st.pid) in open(cgroups.cgroup_dir(f"{pod_cg}/{cid}", "memory") + "/cgroup.procs").read().split()
        assert open(cgroups.cgroup_dir(f"{pod_cg}/{cid}", "pids") + "/pids.max").read().strip() == "64"
        assert int(open(f"/proc/{st.pid}/oom_score_adj").read()) == res.oom_score_adj
        stats = await rt.container_stats(cid)
        assert stats.memory_usage > 0 and stats.pids >= 1 and 0 < stats.memory_working_set <= stats.memory_usage
        assert (await rt.sandbox_stats(sid)).memory_usage >= stats.memory_usage
        assert rt.exec_command(cid, ["true"])[-2:] == [cid, "true"]
        await rt.stop_container(cid, 0)
        await rt.remove_sandbox(sid)
        assert not os.path.exists(cpu_dir)

    run(go())


# ---------------------------------------------------------------- stopping


def test_stop_sends_sigterm_then_sigkill_after_timeout(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config())
        polite = await rt.create_container(sid, ContainerConfig(name="polite", image="busybox:e2e", command=[
            "sh", "-c", "trap 'echo got TERM; exit 0' TERM; echo ready; while true; do sleep 0.05; done"]))
        stubborn = await rt.create_container(sid, ContainerConfig(name="stubborn", image="busybox:e2e", command=[
            "sh", "-c", "trap 'echo ignoring TERM' TERM; echo ready; while true; do sleep 0.05; done"]))
        for cid in (polite, stubborn):
            await rt.start_container(cid)
        for cid in (polite, stubborn):  # wait until the traps are set
            for _ in range(200):
                if os.path.exists(rt.container_log_path(cid)) and "ready" in open(rt.container_log_path(cid)).read():
                    break
                await asyncio.sleep(0.02)
        t0 = time.monotonic()
        await rt.stop_container(polite, 10)
        assert time.monotonic() - t0 < 3
        st = await rt.container_status(polite)
        assert (st.exit_code, st.reason) == (0, "Completed")
        assert "got TERM" in [t for _, _, t in cri_lines(st.log_path)]
        t0 = time.monotonic()
        await rt.stop_container(stubborn, 1.0)
        took = time.monotonic() - t0
        assert 0.9 <= took < 5
        st = await rt.container_status(stubborn)
        assert (st.exit_code, st.oom_killed, st.reason) == (137, False, "Error")
        assert "ignoring TERM" in [t for _, _, t in cri_lines(st.log_path)]
        await rt.stop_container(stubborn, 1.0)  # stopping an exited container is a no-op
        await rt.remove_sandbox(sid)

    run(go())


# ---------------------------------------------------------------- shared namespaces


def test_containers_of_a_pod_share_the_network_namespace(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config(name="pair"))
        server = await rt.create_container(sid, ContainerConfig(name="server", image="busybox:e2e", command=[
            # busybox's nc -l hangs up as soon as its stdin ends, which can be before the client's
            # bytes arrive: its stdin is a FIFO held open read-write, so it never ends
            "sh", "-c", "mkfifo /tmp/in; exec 3<>/tmp/in; nc -l -p 8080 <&3 > /tmp/got; echo received: $(cat /tmp/got)"]))
        await rt.start_container(server)
        res = await rt.exec_sync(server, ["hostname"])
        assert (res.exit_code, res.stdout.strip()) == (0, b"pair")
        _, st, _ = await run_to_exit(rt, sid, ["sh", "-c", "for i in $(seq 100); do echo hello-from-client | "
                                               "nc 127.0.0.1 8080 && exit 0; sleep 0.05; done; exit 1"], name="client")
        assert st.exit_code == 0
        st = await rt.wait_exit(server, 10)
        assert st.exit_code == 0
        assert "received: hello-from-client" in [t for _, _, t in cri_lines(st.log_path)]
        # IPC and UTS are the pod's too: the same namespace inodes
        c1 = await rt.create_container(sid, ContainerConfig(name="ns1", image="busybox:e2e", command=["sleep", "30"]))
        c2 = await rt.create_container(sid, ContainerConfig(name="ns2", image="busybox:e2e", command=["sleep", "30"]))
        await rt.start_container(c1)
        await rt.start_container(c2)
        p1, p2 = (await rt.container_status(c1)).pid, (await rt.container_status(c2)).pid
        for ns in ("net", "ipc", "uts"):
            assert os.readlink(f"/proc/{p1}/ns/{ns}") == os.readlink(f"/proc/{p2}/ns/{ns}") != os.readlink(f"/proc/self/ns/{ns}")
        assert os.readlink(f"/proc/{p1}/ns/pid") != os.readlink(f"/proc/{p2}/ns/pid")
        await rt.remove_sandbox(sid)

    run(go())


def test_host_network_pod(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config(host_network=True, host_pid=True, host_ipc=True))
        sb = await rt.sandbox_status(sid)
        assert sb.netns_path == "" and sb.ip == ""
        cid, st, text = await run_to_exit(rt, sid, ["sh", "-c", "hostname; for n in net ipc uts pid; do "
                                                    "readlink /proc/self/ns/$n; done"])
        assert st.exit_code == 0
        assert text[0] == os.uname().nodename
        assert text[1:] == [os.readlink(f"/proc/self/ns/{n}") for n in ("net", "ipc", "uts", "pid")]
        # and without host namespaces, none of them is the host's
        sid2 = await rt.create_sandbox(sandbox_config())
        _, st, text = await run_to_exit(rt, sid2, ["sh", "-c", "for n in net ipc uts pid; do readlink /proc/self/ns/$n; done"])
        assert not set(text) & {os.readlink(f"/proc/self/ns/{n}") for n in ("net", "ipc", "uts", "pid")}
        await rt.remove_sandbox(sid2)
        await rt.remove_sandbox(sid)

    run(go())


# ---------------------------------------------------------------- teardown


def _iptables() -> str:
    return subprocess.run(["iptables-save"], capture_output=True, text=True).stdout


def test_teardown_leaves_no_netns_veth_ip_or_rules(env):
    async def go():
        rt = env.rt
        port = random.randint(30000, 32000)
        sid = await rt.create_sandbox(sandbox_config(port_mappings=[PortMapping(container_port=80, host_port=port)]))
        sb = await rt.sandbox_status(sid)
        netns_name = os.path.basename(sb.netns_path)
        assert netns_name in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        veths = subprocess.run(["ip", "-o", "link", "show", "master", env.bridge], capture_output=True, text=True).stdout
        assert veths.count("veth") == 1
        rules = _iptables()
        assert sid in rules and f"--dport {port}" in rules  # ipMasq and hostPort DNAT rules name the sandbox
        ipam = os.path.join(env.cni_dir, env.conf["name"])
        assert sb.ip in os.listdir(ipam)
        conflist = os.path.join(env.data, "cni", "net.d", f"10-{env.conf['name']}.conflist")
        assert os.path.exists(conflist)
        cid = await rt.create_container(sid, ContainerConfig(name="c", image="busybox:e2e", command=["sleep", "30"]))
        await rt.start_container(cid)
        rootfs = os.path.join(env.data, "runtime", "containers", cid, "rootfs")
        assert rootfs in open("/proc/self/mounts").read()

        await rt.remove_sandbox(sid)
        assert not os.path.exists(sb.netns_path)
        assert netns_name not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
        assert subprocess.run(["ip", "-o", "link", "show", "master", env.bridge],
                              capture_output=True, text=True).stdout.count("veth") == 0
        assert sb.ip not in os.listdir(ipam)
        rules = _iptables()
        assert sid not in rules and f"--dport {port}" not in rules and sb.ip + "/32" not in rules
        mounts = open("/proc/self/mounts").read()
        assert env.data not in mounts and sid[:16] not in mounts
        assert subprocess.run(["runc", "--root", env.runc_root, "list", "-q"], capture_output=True,
                              text=True).stdout.strip() == ""
        assert not os.path.exists(os.path.join(env.data, "runtime", "containers", cid))
        assert await rt.list_sandboxes() == []
        await rt.remove_sandbox(sid)  # idempotent

    run(go())


# ---------------------------------------------------------------- kubelet restart


def test_shim_keeps_container_across_runtime_restart(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config())
        cid = await rt.create_container(sid, ContainerConfig(name="long", image="busybox:e2e", command=[
            "sh", "-c", "i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.1; done"]))
        await rt.start_container(cid)
        pid = (await rt.container_status(cid)).pid
        await rt.close()
        del rt
        await asyncio.sleep(0.3)

        rt2 = env.new_runtime()  # "the kubelet restarted": nothing in memory, only the state dirs
        (sb,) = await rt2.list_sandboxes()
        assert sb.id == sid and sb.state == "ready"
        (st,) = await rt2.list_containers(sid)
        assert (st.id, st.state, st.pid) == (cid, RUNNING, pid)
        assert os.path.exists(f"/proc/{pid}")
        res = await rt2.exec_sync(cid, ["echo", "still here"])
        assert res.stdout == b"still here\n"
        n_before = len(cri_lines(st.log_path))
        await asyncio.sleep(0.3)
        assert len(cri_lines(st.log_path)) > n_before  # the shim still pumps the log
        await rt2.stop_container(cid, 2)
        st = await rt2.container_status(cid)
        assert st.state == EXITED and st.exit_code == 137  # sh as pid 1 ignores SIGTERM without a trap
        await rt2.remove_sandbox(sid)

    run(go())


# ---------------------------------------------------------------- security


def _status_field(text: list[str], name: str) -> str:
    return next(t.split(":", 1)[1].strip() for t in text if t.startswith(name + ":"))


def test_security_context(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config())
        probe = "grep -E '^(CapEff|NoNewPrivs|Seccomp):' /proc/self/status; ulimit -n; id"
        # defaults: containerd's 14 capabilities, no seccomp (upstream's Unconfined default), rlimit within ours
        _, st, text = await run_to_exit(rt, sid, ["sh", "-c", probe], name="default")
        assert st.exit_code == 0, text
        assert int(_status_field(text, "CapEff"), 16) == 0xA80425FB
        assert _status_field(text, "NoNewPrivs") == "0" and _status_field(text, "Seccomp") == "0"
        import resource

        assert int(text[3]) == min(resource.getrlimit(resource.RLIMIT_NOFILE)[1], 1048576)
        assert text[4].startswith("uid=0(root) gid=0(root)")

        sec = SecurityContext(run_as_user=1000, capabilities_drop=["ALL"], capabilities_add=["NET_BIND_SERVICE"],
                              allow_privilege_escalation=False, seccomp="RuntimeDefault",
                              read_only_root_filesystem=True, supplemental_groups=[4242])
        script = probe + "; touch /rootfs-write 2>&1 || echo ro-ok; touch /tmp/x 2>&1 || echo tmp-ro; unshare -n true || echo unshare-denied"
        _, st, text = await run_to_exit(rt, sid, ["sh", "-c", script], name="locked", security=sec)
        assert int(_status_field(text, "CapEff"), 16) == 0  # non-root: effective set cleared at exec
        assert _status_field(text, "NoNewPrivs") == "1" and _status_field(text, "Seccomp") == "2"
        ident = next(t for t in text if t.startswith("uid="))
        assert ident.startswith("uid=1000(app) gid=1000(app)") and "2000(extra)" in ident and "4242" in ident
        assert "ro-ok" in text and "tmp-ro" in text and "unshare-denied" in text

        # root with RuntimeDefault: seccomp refuses namespace creation even where caps would not
        sec = SecurityContext(seccomp="RuntimeDefault", capabilities_add=["SYS_ADMIN"])
        _, st, text = await run_to_exit(rt, sid, ["sh", "-c", "unshare -n true && echo unshared"], name="sysadmin",
                                        security=sec)
        assert "unshared" in text  # CAP_SYS_ADMIN lifts the namespace rules, as docker's profile does
        sec = SecurityContext(seccomp="RuntimeDefault")
        _, st, text = await run_to_exit(rt, sid, ["sh", "-c", "unshare -n true || echo denied"], name="rd", security=sec)
        assert "denied" in text

        _, st, text = await run_to_exit(rt, sid, ["sh", "-c", probe], name="priv",
                                        security=SecurityContext(privileged=True))
        from pyk8s.kubelet.runtime.security import CAP_NAMES, bounding_caps

        want = sum(1 << CAP_NAMES.index(c) for c in bounding_caps())
        assert int(_status_field(text, "CapEff"), 16) == want

        with pytest.raises(RuntimeError_) as ei:
            await rt.create_container(sid, ContainerConfig(name="nr", image="busybox:e2e", command=["true"],
                                                           security=SecurityContext(run_as_non_root=True)))
        assert ei.value.reason == "CreateContainerConfigError"
        await rt.remove_sandbox(sid)

    run(go())


def test_log_rotation_by_size(tmp_path, image_store):
    e = Env(tmp_path, image_store, log_max_size=4096, log_max_files=3)
    try:
        async def go():
            rt = e.rt
            sid = await rt.create_sandbox(sandbox_config(host_network=True))
            _, st, _ = await run_to_exit(rt, sid, ["sh", "-c", "for i in $(seq 400); do echo line-$i-padding-padding; done"])
            d = os.path.dirname(st.log_path)
            files = sorted(os.listdir(d))
            assert len(files) == 3  # the live file and max_files-1 rotated ones
            assert all(os.path.getsize(os.path.join(d, f)) <= 4096 for f in files)
            assert cri_lines(st.log_path)[-1][2] == "line-400-padding-padding"
            await rt.remove_sandbox(sid)

        run(go())
    finally:
        asyncio.run(e.cleanup())


def test_long_lines_are_split_with_the_partial_tag(env):
    async def go():
        rt = env.rt
        sid = await rt.create_sandbox(sandbox_config(host_network=True))
        _, st, _ = await run_to_exit(rt, sid, ["sh", "-c", "head -c 40000 /dev/zero | tr '\\0' a; echo; printf tail"])
        recs = cri_lines(st.log_path)
        assert [(tag, len(text)) for _, tag, text in recs] == [("P", 16384), ("P", 16384), ("F", 40000 - 32768), ("F", 4)]
        await rt.remove_sandbox(sid)

    run(go())


def test_pod_cgroup_layout_for_each_qos(env):
    async def go():
        rt = env.rt
        for qos, res in (("BestEffort", LinuxResources(cpu_shares=2)), ("Guaranteed", None)):
            uid = str(uuid.uuid4())
            sid = await rt.create_sandbox(sandbox_config(uid=uid, qos_class=qos, pod_resources=res))
            parent = pod_cgroup_parent(qos, uid)
            assert os.path.isdir(cgroups.cgroup_dir(parent, "cpu"))
            if qos == "BestEffort" and not cgroups.is_v2():
                assert parent == f"kubepods/besteffort/pod{uid}"
                assert open(cgroups.cgroup_dir(parent, "cpu") + "/cpu.shares").read().strip() == "2"
            await rt.remove_sandbox(sid)
            assert not os.path.exists(cgroups.cgroup_dir(parent, "cpu"))

    run(go())
