"""The real kubectl against `pyk8s server`'s own kubelet (real runc pods): `kubectl run --rm -i`,
`kubectl label node` followed at once by a pod bound there, and `kubectl debug` with ephemeral containers.

kubectl reaches logs/attach/exec through the API server and the kubelet's streaming server, which the
in-process kubelet serves (on a free port: `pyk8s server --kubelet-port`).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time

import pytest

from tests.cluster import kubectl_binaries
from tests.e2e.kubelet_harness import busybox_pod, container, requirements
from tests.e2e.test_kubelet_inprocess import InProcess

# a group of its own: its kubelet has its own port, bridge, pod /16 and runc root (runs beside the
# other kubelet modules with -n 2)
pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("kubelet-kubectl"), pytest.mark.timeout(600)]

BUSYBOX = "busybox:1.37"


@pytest.fixture(scope="module")
def env(request, tmp_path_factory):
    requirements()
    e = InProcess(str(tmp_path_factory.mktemp("kubelet-kubectl")))
    request.addfinalizer(e.stop)  # (also after a failed start: what it started is cleaned up)
    return e.start(images=("busybox:e2e", BUSYBOX))


# ============================================================================ kubectl run --rm -i


def test_run_rm_i_prints_output_every_time(env):
    """The command has printed (often exited) before kubectl attaches: its output still arrives, every time."""
    versions = list(kubectl_binaries())
    for i in range(10):
        version = versions[-1 - i % len(versions)]
        r = env.cluster.kubectl("run", "--rm", "-i", f"t{i}", f"--image={BUSYBOX}", "--restart=Never",
                                "--", "echo", "hi", version=version, timeout=90, check=False)
        assert r.returncode == 0, (version, r.stdout, r.stderr)
        assert "hi" in r.stdout.splitlines(), (i, version, r.stdout, r.stderr)


def test_run_rm_i_stdin_reaches_command(env):
    r = env.cluster.kubectl("run", "--rm", "-i", "cat1", f"--image={BUSYBOX}", "--restart=Never", "--",
                            "sh", "-c", "echo start; cat; echo done", input="piped\n", timeout=90, check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    lines = r.stdout.splitlines()
    assert "start" in lines and "piped" in lines and "done" in lines, (r.stdout, r.stderr)


def _accept_queue(pid: int) -> int:
    """Connections queued, not yet accepted, on the listening unix sockets of process `pid` (ss's Recv-Q)."""
    out = subprocess.run(["ss", "-xlpn"], capture_output=True, text=True, check=True).stdout
    return sum(int(line.split()[2]) for line in out.splitlines() if f"pid={pid}," in line)


@pytest.mark.parametrize("version", ["1.27", "1.33"])  # SPDY, WebSocket v5
def test_attach_the_shim_never_took_is_an_error_not_an_empty_success(env, version):
    """The kubelet's connect() to attach.sock succeeds once the kernel queues it, before the shim accepts; a container
    exiting then has its shim close the socket over the queued connection. That attach must fail as upstream's
    attach to an exited container does (kubectl run -i then prints the logs), not end as a successful attach that
    printed nothing. Made certain here by stopping the shim (SIGSTOP) until the kubelet's connection is queued."""
    name = f"queued-{version.replace('.', '-')}"
    env.create(busybox_pod(name, "", containers=[container("c", "echo early; sleep 3600", stdin=True)],
                           restartPolicy="Never"))
    p = env.wait_running(name, 60)
    cid = p["status"]["containerStatuses"][0]["containerID"].split("://", 1)[1]
    state = os.path.join(env.data, "runtime", "containers", cid)
    with open(os.path.join(state, "shim.pid")) as f:
        shim = int(f.read())
    with open(os.path.join(state, "init.pid")) as f:
        init = int(f.read())
    binary = kubectl_binaries()[version]
    kenv = dict(os.environ, KUBECONFIG=env.cluster.kubeconfig, HOME=env.cluster.home)
    os.kill(shim, signal.SIGSTOP)
    proc = None
    try:
        proc = subprocess.Popen([binary, "attach", name, "-c", "c"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                text=True, env=kenv)
        env.wait(lambda: _accept_queue(shim) >= 1, 60, "the kubelet's connection queued on the stopped shim",
                 interval=0.1)
    finally:
        os.kill(init, signal.SIGKILL)  # the container exits...
        os.kill(shim, signal.SIGKILL)  # ...and its shim goes before accepting the kubelet's connection
    out, err = proc.communicate(timeout=60)
    assert proc.returncode != 0, (out, err)
    assert "error attaching to container: container is in CONTAINER_EXITED state" in err, (out, err)
    env.delete_pod(name, 0)
    env.wait_gone(name, 60)


# ============================================================================ admission on fresh node labels


def _phase_or_started(p: dict) -> str:
    st = p.get("status") or {}
    if st.get("phase") == "Failed":
        return "Failed"
    if any("running" in (c.get("state") or {}) for c in st.get("containerStatuses") or []):
        return "Running"
    return ""


def test_label_then_bind_is_admitted(env):
    """The kubelet's copy of its node lags behind `kubectl label node`: admission re-reads the node before it
    rejects a pod by node affinity, as upstream's does."""
    for i in range(6):
        env.kubectl("label", "node", env.node, f"gpu=v{i}", "--overwrite")
        name = f"label-{i}"
        env.create(busybox_pod(name, "sleep 3600", nodeName=env.node, nodeSelector={"gpu": f"v{i}"}))
        p = env.wait_pod(name, _phase_or_started, timeout=60)
        st = p["status"]
        assert st.get("phase") != "Failed", (st.get("reason"), st.get("message"))
        env.delete_pod(name, grace=0)
    # a selector the node really lacks is still refused, after the re-read
    env.create(busybox_pod("nomatch", "sleep 3600", nodeName=env.node, nodeSelector={"gpu": "never"}))
    p = env.wait_pod("nomatch", lambda p: p["status"].get("phase") == "Failed", timeout=60)
    assert p["status"]["reason"] == "NodeAffinity"
    assert p["status"]["message"] == ("Pod was rejected: Predicate NodeAffinity failed: node(s) didn't match "
                                      "Pod's node affinity/selector")
    env.delete_pod("nomatch", grace=0)


# ============================================================================ kubectl debug: ephemeral containers

PROBE = ("echo ns $(readlink /proc/self/ns/net) $(readlink /proc/self/ns/ipc) $(readlink /proc/self/ns/uts) "
         "$(readlink /proc/self/ns/pid); echo host $(hostname); grep -E '^(CapEff|Seccomp|NoNewPrivs):' /proc/self/status")
CAP_NET_ADMIN, CAP_NET_RAW, CAP_SYS_PTRACE, CAP_SYS_ADMIN = 12, 13, 19, 21


@pytest.fixture(scope="module")
def target(env):
    """A running pod whose container `c` the debug containers target."""
    env.create(busybox_pod("tgt", "sleep 3601", containers=[
        {"name": "c", "image": "busybox:e2e", "imagePullPolicy": "IfNotPresent", "command": ["sleep", "3601"]},
        {"name": "side", "image": "busybox:e2e", "imagePullPolicy": "IfNotPresent", "command": ["sleep", "3602"]}]))
    env.wait_running("tgt", 60)
    out = env.kubectl("exec", "tgt", "-c", "c", "--", "sh", "-c", PROBE)
    return _probe(out)


def _probe(out: str) -> dict[str, str]:
    got: dict[str, str] = {}
    for line in out.splitlines():
        key, _, rest = line.partition(" " if line.startswith(("ns ", "host ")) else ":")
        got[key.strip()] = rest.strip()
    return got


def _ephemeral_status(env, name: str) -> dict:
    p = env.pod("tgt")
    return next((s for s in (p.get("status") or {}).get("ephemeralContainerStatuses") or [] if s["name"] == name), {})


def _debug_and_wait(env, name: str, *args: str, state: str = "terminated", version: str | None = None) -> dict:
    env.cluster.kubectl("debug", "tgt", f"--image={BUSYBOX}", "-c", name, *args, version=version)
    env.wait(lambda: state in (_ephemeral_status(env, name).get("state") or {}), 60, f"{name} {state}")
    return _ephemeral_status(env, name)


def _caps(probe: dict[str, str]) -> int:
    return int(probe["CapEff"], 16)


def test_debug_target_shares_the_pod_namespaces_and_the_target_processes(env, target):
    st = _debug_and_wait(env, "dbg-target", "--target=c", "--", "sh", "-c", PROBE + "; ps")
    assert st["state"]["terminated"]["exitCode"] == 0, st
    assert st["ready"] is False and st["restartCount"] == 0 and "started" not in st
    assert st["containerID"].startswith("runc://") and st["image"].endswith(BUSYBOX)
    logs = env.kubectl("logs", "tgt", "-c", "dbg-target")
    got = _probe(logs)
    assert got["ns"] == target["ns"], (got, target)  # network, IPC, UTS and (--target) process namespaces
    assert got["host"] == "tgt"
    assert "sleep 3601" in logs and "sleep 3602" not in logs, logs  # the target's processes, not the other's
    spec = next(c for c in env.pod("tgt")["spec"]["ephemeralContainers"] if c["name"] == "dbg-target")
    assert spec["targetContainerName"] == "c"


def test_debug_without_target_has_its_own_process_namespace(env, target):
    _debug_and_wait(env, "dbg-own", "--", "sh", "-c", PROBE + "; ps", version=list(kubectl_binaries())[0])
    logs = env.kubectl("logs", "tgt", "-c", "dbg-own")
    got = _probe(logs)
    net, ipc, uts, pid = got["ns"].split()
    assert [net, ipc, uts] == target["ns"].split()[:3] and pid != target["ns"].split()[3]
    assert "sleep 3601" not in logs


@pytest.mark.parametrize("profile", ["legacy", "general", "baseline", "netadmin", "sysadmin"])
def test_debug_profiles_security_context_is_honoured(env, target, profile):
    name = f"dbg-{profile}"
    st = _debug_and_wait(env, name, "--target=c", f"--profile={profile}", "--", "sh", "-c", PROBE)
    assert st["state"]["terminated"]["exitCode"] == 0, st
    spec = next(c for c in env.pod("tgt")["spec"]["ephemeralContainers"] if c["name"] == name)
    sc = spec.get("securityContext") or {}
    caps = _caps(_probe(env.kubectl("logs", "tgt", "-c", name)))
    added = set((sc.get("capabilities") or {}).get("add") or [])
    if sc.get("privileged"):
        assert caps >> CAP_SYS_ADMIN & 1, (profile, hex(caps))
    else:
        assert not caps >> CAP_SYS_ADMIN & 1, (profile, hex(caps))
    for cap, bit in (("NET_ADMIN", CAP_NET_ADMIN), ("NET_RAW", CAP_NET_RAW), ("SYS_PTRACE", CAP_SYS_PTRACE)):
        if cap in added:
            assert caps >> bit & 1, (profile, cap, hex(caps))
    if profile == "netadmin":
        assert {"NET_ADMIN", "NET_RAW"} <= added
        assert caps >> CAP_NET_ADMIN & 1
    if profile == "sysadmin":
        assert sc.get("privileged") is True
    if profile in ("legacy", "baseline"):
        assert not caps >> CAP_NET_ADMIN & 1


def test_debug_restricted_profile_is_refused_for_a_root_image(env, target):
    """restricted asks for runAsNonRoot; busybox runs as root, so the kubelet refuses it, as upstream's does."""
    env.cluster.kubectl("debug", "tgt", f"--image={BUSYBOX}", "-c", "dbg-restricted", "--target=c",
                        "--profile=restricted", "--", "id")
    spec = next(c for c in env.pod("tgt")["spec"]["ephemeralContainers"] if c["name"] == "dbg-restricted")
    sc = spec["securityContext"]
    assert sc["runAsNonRoot"] is True and sc["capabilities"]["drop"] == ["ALL"]
    assert sc["seccompProfile"] == {"type": "RuntimeDefault"} and sc["allowPrivilegeEscalation"] is False
    env.wait(lambda: ((_ephemeral_status(env, "dbg-restricted").get("state") or {}).get("waiting") or {})
             .get("reason") == "CreateContainerConfigError", 60, "restricted refused")
    waiting = _ephemeral_status(env, "dbg-restricted")["state"]["waiting"]
    uid = env.pod("tgt")["metadata"]["uid"]
    assert waiting["message"] == ('container has runAsNonRoot and image will run as root '
                                  f'(pod: "tgt_default({uid})", container: dbg-restricted)'), waiting


def test_debug_restricted_profile_runs_as_non_root_with_runtime_default_seccomp(env, target):
    custom = os.path.join(env.base, "nonroot.json")
    with open(custom, "w") as f:
        json.dump({"securityContext": {"runAsUser": 1000}}, f)
    st = _debug_and_wait(env, "dbg-restricted-uid", "--target=c", "--profile=restricted", f"--custom={custom}",
                         "--", "sh", "-c", PROBE + "; id -u")
    assert st["state"]["terminated"]["exitCode"] == 0, st
    logs = env.kubectl("logs", "tgt", "-c", "dbg-restricted-uid")
    got = _probe(logs)
    assert _caps(got) == 0 and got["Seccomp"] == "2" and got["NoNewPrivs"] == "1", got
    assert logs.splitlines()[-1] == "1000"


def test_debug_custom_profile_file(env, target):
    custom = os.path.join(env.base, "custom.json")
    with open(custom, "w") as f:
        json.dump({"env": [{"name": "FROM_CUSTOM", "value": "yes"}],
                   "securityContext": {"capabilities": {"add": ["NET_ADMIN"]}}}, f)
    _debug_and_wait(env, "dbg-custom", "--target=c", f"--custom={custom}", "--", "sh", "-c",
                    PROBE + "; echo custom=$FROM_CUSTOM")
    logs = env.kubectl("logs", "tgt", "-c", "dbg-custom")
    assert "custom=yes" in logs.splitlines()
    assert _caps(_probe(logs)) >> CAP_NET_ADMIN & 1


def test_debug_interactive_stdin_piped(env, target):
    r = env.cluster.kubectl("debug", "-i", "tgt", f"--image={BUSYBOX}", "-c", "dbg-i", "--target=c", "--", "sh",
                            input="echo from-stdin-$((40+2)); ps; exit 0\n", timeout=90, check=False)
    assert r.returncode == 0, (r.stdout, r.stderr)
    assert "from-stdin-42" in r.stdout.splitlines() and "sleep 3601" in r.stdout, (r.stdout, r.stderr)
    env.wait(lambda: "terminated" in (_ephemeral_status(env, "dbg-i").get("state") or {}), 30, "dbg-i done")
    assert "from-stdin-42" in env.kubectl("logs", "tgt", "-c", "dbg-i")


def test_exec_and_attach_into_a_running_ephemeral_container(env, target):
    _debug_and_wait(env, "dbg-long", "--target=c", "--profile=netadmin", "--", "sh", "-c",
                    "echo $$$$ > /tmp/pid; echo ready; exec sleep 3600", state="running")  # ($$ escapes $)
    out = env.kubectl("exec", "tgt", "-c", "dbg-long", "--", "sh", "-c", "grep CapEff /proc/self/status; ps")
    assert int(out.split()[1], 16) >> CAP_NET_ADMIN & 1 and "sleep 3601" in out
    env.wait(lambda: "ready" in env.kubectl("logs", "tgt", "-c", "dbg-long").splitlines(), 20, "dbg-long log")
    # it is never restarted: killed, it stays terminated
    env.kubectl("exec", "tgt", "-c", "dbg-long", "--", "sh", "-c", "kill $(cat /tmp/pid)")  # (pid 1 is the target's)
    env.wait(lambda: "terminated" in (_ephemeral_status(env, "dbg-long").get("state") or {}), 30, "dbg-long ended")
    time.sleep(2)
    st = _ephemeral_status(env, "dbg-long")
    assert "terminated" in st["state"] and st["restartCount"] == 0, st


def test_debug_it_on_a_terminal(env, target):
    """`kubectl debug -it --target=c -- sh` on a real terminal: a shell in the target's process namespace,
    the terminal's size, `exit` ends the session."""
    from tests.e2e.terminal import Terminal

    bins = kubectl_binaries()
    term = Terminal([list(bins.values())[-1], "debug", "-it", "tgt", f"--image={BUSYBOX}", "-c", "dbg-it",
                     "--target=c", "--", "sh"],
                    dict(os.environ, KUBECONFIG=env.cluster.kubeconfig, HOME=env.cluster.home), rows=31, cols=97)
    steps = [(b"If you don't see a command prompt, try pressing enter.", b"\r"),
             (b"# ", b"stty size; ps | grep -c 'sleep 360[1]'\r"), (b"31 97", b""), (b"1\r\n", b"exit\r")]
    try:
        for want, send in steps:  # what the session shows, then what we type
            term.read_until(want, 60)
            if send:
                term.type(send)
        assert term.wait(60) == 0, term.out
    finally:
        term.close()
    env.wait(lambda: "terminated" in (_ephemeral_status(env, "dbg-it").get("state") or {}), 30, "dbg-it done")
    spec = next(c for c in env.pod("tgt")["spec"]["ephemeralContainers"] if c["name"] == "dbg-it")
    assert spec.get("stdin") is True and spec.get("tty") is True
