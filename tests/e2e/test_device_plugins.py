"""The kubelet's device-plugin API end to end (issue 21): a plugin written in the test against the
v1beta1 protocol (tests/e2e/example_device_plugin.py) registers with a real `pyk8s agent`; its
devices become node capacity and allocatable; pods asking for them get Allocate's envs, mounts and
device nodes in a real runc container (with the device cgroup allowing just those); the kubelet
restarts (SIGKILL) and the plugin re-registers while the checkpoint keeps the running pod's devices;
pod-resources shows who holds what. Upstream: pkg/kubelet/cm/devicemanager, test/e2e_node/device_plugin_test.go.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
import subprocess
import tempfile

import grpc
import pytest

from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2 as pb
from pyk8s.deviceplugin.api import podresources_v1_pb2 as prpb
from pyk8s.deviceplugin.api import podresources_v1_pb2_grpc as prg
from tests.e2e.example_device_plugin import ExamplePlugin, register_raw
from tests.e2e.kubelet_harness import Env, busybox_pod, container, container_status, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-device-plugins"), pytest.mark.timeout(240)]

RES = "example.com/dev"
# each device ID is a twin (same major:minor) of a host device, made by mknod under the test's dir
TWINS = {"dev0": "/dev/null", "dev1": "/dev/fuse", "dev2": "/dev/zero"}
SLEEP = "trap 'exit 0' TERM; while true; do sleep 0.2; done"


def _twin(dirpath: str, name: str, of: str) -> str:
    st = os.stat(of)
    p = os.path.join(dirpath, name)
    os.mknod(p, stat.S_IFCHR | 0o666, st.st_rdev)
    return p


class Fixture:
    def __init__(self, base: str) -> None:
        self.base = base
        self.root = os.path.join(base, "root")  # the agent's --root-dir
        self.plugin_dir = os.path.join(self.root, "device-plugins")
        self.nodes = os.path.join(base, "devnodes")
        self.share = os.path.join(base, "share")
        os.makedirs(self.nodes)
        os.makedirs(self.share)
        with open(os.path.join(self.share, "hello"), "w") as f:
            f.write("from the plugin\n")
        self.host_nodes = {i: _twin(self.nodes, f"example{i[-1]}", of) for i, of in TWINS.items()}
        self.env = Env(base, agent_args=["--root-dir", self.root])
        self.plugins: list[ExamplePlugin] = []

    def answer(self, ids: list[str]) -> pb.ContainerAllocateResponse:
        return pb.ContainerAllocateResponse(
            envs={"EXAMPLE_DEVICES": ",".join(sorted(ids))},
            mounts=[pb.Mount(container_path="/example", host_path=self.share, read_only=True)],
            devices=[pb.DeviceSpec(container_path=f"/dev/example{i[-1]}", host_path=self.host_nodes[i], permissions="rw")
                     for i in ids],
            annotations={"example.com/devices": ",".join(sorted(ids))})

    def plugin(self, *args: object, **kw: object) -> ExamplePlugin:
        p = ExamplePlugin(self.plugin_dir, *args, **kw).start()  # type: ignore[arg-type]
        self.plugins.append(p)
        return p


@pytest.fixture(scope="module")
def fx():
    requirements()
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse to make a twin of")
    base = tempfile.mkdtemp(prefix="devplug-", dir="/tmp")  # short: AF_UNIX paths are at most 107 bytes
    f = Fixture(base)
    try:
        f.env.start()
        yield f
    finally:
        for p in f.plugins:
            p.stop()
        f.env.stop()
        shutil.rmtree(base, ignore_errors=True)


def _node_res(env: Env) -> tuple[str | None, str | None]:
    st = env.node_obj()["status"]
    return st["capacity"].get(RES), st["allocatable"].get(RES)


def _dev_pod(name: str, n: int, script: str = SLEEP, **spec: object) -> dict:
    return busybox_pod(name, script, containers=[container("c", script, resources={
        "requests": {RES: str(n)}, "limits": {RES: str(n)}})], **spec)


def _exec(env: Env, pod: str, script: str) -> subprocess.CompletedProcess[str]:
    return env.cluster.kubectl("exec", pod, "--", "sh", "-c", script, check=False)


def _pod_resources(fx: Fixture, plugin: ExamplePlugin, method: str, req: object) -> object:
    async def call() -> object:
        path = os.path.join(fx.root, "pod-resources", "kubelet.sock")
        async with grpc.aio.insecure_channel("unix://" + path) as ch:
            return await getattr(prg.PodResourcesListerStub(ch), method)(req, timeout=10)
    return plugin.call(call())


def _held(fx: Fixture, plugin: ExamplePlugin) -> dict[str, dict[str, list[str]]]:
    resp = _pod_resources(fx, plugin, "List", prpb.ListPodResourcesRequest())
    return {p.name: {c.name: sorted(i for d in c.devices if d.resource_name == RES for i in d.device_ids)
                     for c in p.containers} for p in resp.pod_resources}  # type: ignore[attr-defined]


def test_device_plugin_lifecycle(fx: Fixture) -> None:
    env = fx.env
    plugin = fx.plugin(RES, sorted(TWINS), fx.answer, pre_start=True, preferred=True)
    env.wait(lambda: _node_res(env) == ("3", "3"), 20, "capacity and allocatable 3")

    # a pod asking for 2 gets the plugin's preferred two (the kubelet alone would take dev0, dev1)
    checks = ("env; echo hi > /dev/example2 && head -c 3 /dev/example2 | wc -c; : <> /dev/example1 && echo fuse-open; "
              "cat /example/hello; touch /example/x 2>/dev/null || echo ro-mount; ls /dev/example0 2>&1; echo checked; ")
    env.create(_dev_pod("holder", 2, checks + SLEEP))
    holder = env.wait_running("holder", 40)
    assert plugin.allocate_calls == [["dev2", "dev1"]]
    assert plugin.preferred_calls == [(["dev0", "dev1", "dev2"], [], 2)]
    assert plugin.pre_start_calls == [["dev2", "dev1"]]
    out = env.wait_log("holder", "c", lambda ls: "checked" in ls, 20)
    assert "EXAMPLE_DEVICES=dev1,dev2" in out
    assert "3" in out and "fuse-open" in out  # read the zero twin, opened the fuse twin read-write
    assert "from the plugin" in out and "ro-mount" in out
    assert any("No such file" in line for line in out)  # dev0 is not this pod's
    # and through the API server as a user would look (kubectl exec; retried)
    tried: list[str] = []

    def exec_env() -> list[str]:
        r = _exec(env, "holder", "env")
        tried.append(r.stderr)
        return r.stdout.splitlines()
    try:
        lines = env.wait(exec_env, 20, "kubectl exec env")
    except AssertionError as e:
        raise AssertionError(f"{e}\nkubectl: {tried[-1:]}\nagent: {''.join(env.agent.output[-15:])}") from None
    assert "EXAMPLE_DEVICES=dev1,dev2" in lines
    cid = container_status(holder, "c")["containerID"].split("//")[1]
    with open(os.path.join(env.data, "runtime", "containers", cid, "config.json")) as f:
        import json

        spec = json.load(f)
    assert spec["annotations"]["example.com/devices"] == "dev1,dev2"
    rules = [(r.get("major"), r.get("minor"), r["access"]) for r in spec["linux"]["resources"]["devices"] if r["allow"]]
    assert (10, 229, "rw") in rules and (1, 5, "rw") in rules

    # pod-resources: who holds what, and every device the plugin offers
    assert _held(fx, plugin)["holder"] == {"c": ["dev1", "dev2"]}
    alloc = _pod_resources(fx, plugin, "GetAllocatableResources", prpb.AllocatableResourcesRequest())
    assert sorted(i for d in alloc.devices for i in d.device_ids) == ["dev0", "dev1", "dev2"]  # type: ignore[attr-defined]
    got = _pod_resources(fx, plugin, "Get", prpb.GetPodResourcesRequest(pod_name="holder", pod_namespace="default"))
    assert got.pod_resources.containers[0].devices[0].resource_name == RES  # type: ignore[attr-defined]

    # an unhealthy device leaves capacity and drops allocatable
    plugin.set_health("dev0", "Unhealthy")
    env.wait(lambda: _node_res(env) == ("3", "2"), 20, "allocatable 2 with dev0 unhealthy")

    # nothing left: the scheduler keeps one Pending; one bound by hand is refused by the kubelet as upstream
    env.create(_dev_pod("unschedulable", 1))
    env.wait_pod("unschedulable", lambda p: any(
        c["type"] == "PodScheduled" and c["status"] == "False" and "Insufficient example.com/dev" in c.get("message", "")
        for c in (p.get("status") or {}).get("conditions") or []), 30)
    env.create(_dev_pod("bound-short", 1, nodeName=env.node))
    p = env.wait_pod("bound-short", lambda p: p["status"].get("phase") == "Failed", 30)
    assert p["status"]["reason"] == "UnexpectedAdmissionError"
    assert p["status"]["message"] == ("Pod was rejected: Allocate failed due to requested number of devices unavailable "
                                      "for example.com/dev. Requested: 1, Available: 0, which is unexpected")
    env.delete_pod("unschedulable", 0)
    env.delete_pod("bound-short", 0)

    # the kubelet dies and comes back: the plugin re-registers, the running pod keeps its devices
    plugin.set_health("dev0", "Healthy")
    env.wait(lambda: _node_res(env) == ("3", "3"), 20, "dev0 healthy again")
    regs = plugin.registrations
    env.agent.kill9()
    with open(os.path.join(fx.plugin_dir, "kubelet_internal_checkpoint")) as f:
        cp = json.load(f)
    assert [(e["ContainerName"], e["ResourceName"], sorted(e["DeviceIDs"]["-1"])) for e in cp["Data"]["PodDeviceEntries"]] \
        == [("c", RES, ["dev1", "dev2"])]
    env.agent.start()
    env.wait(lambda: plugin.registrations > regs, 30, "the plugin registered again")
    env.wait(lambda: _node_res(env) == ("3", "3"), 30, "capacity back after the restart")
    assert container_status(env.wait_running("holder"), "c")["containerID"].endswith(cid)
    assert _held(fx, plugin)["holder"] == {"c": ["dev1", "dev2"]}
    env.create(_dev_pod("too-many", 2, nodeName=env.node))
    p = env.wait_pod("too-many", lambda p: p["status"].get("phase") == "Failed", 30)
    assert "Requested: 2, Available: 1" in p["status"]["message"]  # dev1, dev2 are not handed out twice
    # (read from the container's log, not exec: the restarted kubelet's port is not needed for this)
    env.create(_dev_pod("second", 1, "env | grep EXAMPLE_DEVICES; mknod /tmp/fuse c 10 229 && (: <> /tmp/fuse) 2>&1; "
                                     "echo x > /dev/example0 && echo null-ok; " + SLEEP))
    out = "\n".join(env.wait_log("second", "c", lambda ls: "null-ok" in ls, 40))
    assert "EXAMPLE_DEVICES=dev0" in out
    assert "Operation not permitted" in out  # the device cgroup: fuse is holder's, not second's
    assert plugin.pre_start_calls[-1] == ["dev0"]

    # deleting the holder frees its devices
    env.delete_pod("holder", 0)
    env.delete_pod("too-many", 0)
    env.wait_gone("holder", 30)
    # freed once the kubelet has stopped its containers (a pod bound before that is refused, as upstream)
    env.wait(lambda: "holder" not in _held(fx, plugin), 30, "holder's devices freed")
    env.create(_dev_pod("after", 2))
    env.wait_running("after", 40)
    assert _held(fx, plugin)["after"] == {"c": ["dev1", "dev2"]}
    for name in ("second", "after"):
        env.delete_pod(name, 0)

    # a static pod's devices are allocated too (its admission skips everything else)
    env.wait(lambda: not {"second", "after"} & set(_held(fx, plugin)), 30, "devices freed")
    manifest = os.path.join(env.data, "manifests", "static-dev.json")
    os.makedirs(os.path.dirname(manifest), exist_ok=True)
    with open(manifest, "w") as f:
        json.dump(_dev_pod("static-dev", 3, "env; " + SLEEP), f)
    mirror = f"static-dev-{env.node}"
    try:
        env.wait_running(mirror, 40)

        def static_log() -> str:  # its log dir carries the static pod's UID, not the mirror's
            return "".join(open(f).read() for f in glob.glob(os.path.join(env.data, "logs", f"default_{mirror}_*",
                                                                          "c", "*.log")))
        env.wait(lambda: "EXAMPLE_DEVICES=dev0,dev1,dev2" in static_log(), 20, "the static pod's devices in its env")
    finally:
        os.unlink(manifest)
    env.wait_gone(mirror, 30)


def test_registration_refusals_and_socket_modes(fx: Fixture) -> None:
    """Bad registrations get upstream's errors; only root reaches the sockets."""
    plugin = fx.plugin("example.com/probe", ["p0"], fx.answer)
    cases = {
        "v1alpha": ("UNKNOWN", 'requested API version "v1alpha" is not supported by kubelet. '
                               'Supported versions are ["v1beta1"]'),
    }
    for version, want in cases.items():
        assert plugin.call(register_raw(fx.plugin_dir, version=version, endpoint="x.sock",
                                        resource_name="example.com/x")) == want
    for name in ("cpu", "memory", "kubernetes.io/gpu", "example.com/", "bad name/x"):
        assert plugin.call(register_raw(fx.plugin_dir, version="v1beta1", endpoint="x.sock", resource_name=name)) == (
            "UNKNOWN", f'the ResourceName "{name}" is invalid')
    for ep in ("../evil.sock", "/run/other.sock", "kubelet.sock"):
        code, msg = plugin.call(register_raw(fx.plugin_dir, version="v1beta1", endpoint=ep, resource_name="example.com/x"))
        assert code == "UNKNOWN" and "is invalid" in msg
    assert "example.com/x" not in fx.env.node_obj()["status"]["capacity"]
    for d in (fx.plugin_dir, os.path.join(fx.root, "pod-resources")):
        assert stat.S_IMODE(os.stat(d).st_mode) == 0o700, d
        sock = os.path.join(d, "kubelet.sock")
        assert stat.S_ISSOCK(os.stat(sock).st_mode) and stat.S_IMODE(os.stat(sock).st_mode) == 0o600
        r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", "/usr/bin/python3", "-c",
                            f"import socket; socket.socket(socket.AF_UNIX).connect({sock!r})"],
                           capture_output=True, text=True)
        assert r.returncode != 0 and "PermissionError" in r.stderr, r.stderr
    cp = os.path.join(fx.plugin_dir, "kubelet_internal_checkpoint")
    assert stat.S_IMODE(os.stat(cp).st_mode) == 0o600

    # a plugin that goes away keeps its capacity, with nothing allocatable (upstream's grace period)
    env = fx.env
    env.wait(lambda: env.node_obj()["status"]["allocatable"].get("example.com/probe") == "1", 20, "probe allocatable")
    plugin.stop()
    fx.plugins.remove(plugin)
    env.wait(lambda: (env.node_obj()["status"]["capacity"].get("example.com/probe"),
                      env.node_obj()["status"]["allocatable"].get("example.com/probe")) == ("1", "0"), 20,
             "probe capacity kept, allocatable 0")


def test_untrusted_answers_fail_the_container_not_the_kubelet(fx: Fixture) -> None:
    """A plugin answering with a regular file as a device node, or a mount over the container's root: the
    container fails to be created with a reason, the kubelet and the node go on."""
    env = fx.env

    def not_a_device(ids: list[str]) -> pb.ContainerAllocateResponse:
        return pb.ContainerAllocateResponse(devices=[pb.DeviceSpec(container_path="/dev/evil", host_path="/etc/passwd",
                                                                   permissions="rw")])

    def root_mount(ids: list[str]) -> pb.ContainerAllocateResponse:
        return pb.ContainerAllocateResponse(mounts=[pb.Mount(container_path="/", host_path="/")])

    def refuses(ids: list[str]) -> pb.ContainerAllocateResponse:
        raise ValueError("no devices for you")

    fx.plugin("example.com/notdev", ["n0"], not_a_device)
    fx.plugin("example.com/rootmount", ["r0"], root_mount)
    fx.plugin("example.com/refuses", ["f0"], refuses)
    for res in ("example.com/notdev", "example.com/rootmount", "example.com/refuses"):
        env.wait(lambda res=res: env.node_obj()["status"]["allocatable"].get(res) == "1", 20, f"{res} allocatable")
    for name, res, reason, text in (
            ("notdev", "example.com/notdev", "CreateContainerError", '"/etc/passwd": not a device node'),
            ("rootmount", "example.com/rootmount", "CreateContainerConfigError", "must be an absolute path other than /")):
        env.create(busybox_pod(name, SLEEP, containers=[container("c", SLEEP, resources={"limits": {res: "1"}})]))

        def waiting(p: dict, reason: str = reason) -> bool:
            cs = (p.get("status") or {}).get("containerStatuses") or []
            return bool(cs) and (cs[0].get("state") or {}).get("waiting", {}).get("reason") == reason
        p = env.wait_pod(name, waiting, 40)
        assert text in p["status"]["containerStatuses"][0]["state"]["waiting"]["message"]
        env.delete_pod(name, 0)
    # Allocate failing: the pod is refused with the plugin's error inside upstream's words
    env.create(busybox_pod("refused", SLEEP, containers=[container("c", SLEEP, resources={
        "limits": {"example.com/refuses": "1"}})]))
    p = env.wait_pod("refused", lambda p: p["status"].get("phase") == "Failed", 30)
    assert p["status"]["reason"] == "UnexpectedAdmissionError"
    msg = p["status"]["message"]
    assert msg.startswith("Pod was rejected: Allocate failed due to rpc error: code = Unknown desc = ") \
        and "no devices for you" in msg and msg.endswith(", which is unexpected"), msg
    env.delete_pod("refused", 0)
    assert env.node_ready()


def test_hand_patched_extended_resource_fits_at_admission(fx: Fixture) -> None:
    """An extended resource no plugin manages (patched into node status by hand, as upstream's docs show):
    a pod bound to the node past it is refused as upstream's admission does, one that fits runs."""
    env = fx.env
    res = "example.com/handmade"
    env.api("PATCH", f"/api/v1/nodes/{env.node}/status",
            {"status": {"capacity": {res: "1"}, "allocatable": {res: "1"}}},
            headers={"Content-Type": "application/merge-patch+json"})
    env.create(busybox_pod("hand-big", SLEEP, nodeName=env.node,
                           containers=[container("c", SLEEP, resources={"limits": {res: "2"}})]))
    p = env.wait_pod("hand-big", lambda p: p["status"].get("phase") == "Failed", 30)
    assert p["status"]["reason"] == "OutOfexample.com/handmade"
    assert p["status"]["message"] == ("Pod was rejected: Node didn't have enough resource: example.com/handmade, "
                                      "requested: 2, used: 0, capacity: 1")
    env.create(busybox_pod("hand-ok", SLEEP, nodeName=env.node,
                           containers=[container("c", SLEEP, resources={"limits": {res: "1"}})]))
    env.wait_running("hand-ok", 40)
    env.create(busybox_pod("hand-second", SLEEP, nodeName=env.node,
                           containers=[container("c", SLEEP, resources={"limits": {res: "1"}})]))
    p = env.wait_pod("hand-second", lambda p: p["status"].get("phase") == "Failed", 30)
    assert p["status"]["message"].endswith("requested: 1, used: 1, capacity: 1")
    for name in ("hand-big", "hand-ok", "hand-second"):
        env.delete_pod(name, 0)
