"""Pod lifecycle under a real kubelet: init containers, sidecars, probes, hooks, graceful termination, restarts and
back-off, OOM, cgroup limits, termination messages, deadlines, image pull failures."""

from __future__ import annotations

import os
import threading
import time

import pytest

from pyk8s.api.timefmt import parse_time
from tests.e2e.kubelet_harness import (
    Env,
    busybox_pod,
    condition,
    container,
    container_status,
    requirements,
    watch_pod,
)

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-lifecycle"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-lifecycle")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


def _state(p, name, init=False):
    return container_status(p, name, init).get("state") or {}


def test_init_containers_and_sidecars(env):
    work = [{"name": "work", "mountPath": "/work"}]
    env.create(busybox_pod("init", "", initContainers=[
        container("i1", "sleep 3; echo one > /work/i1", volumeMounts=work),
        container("side", "trap 'exit 0' TERM; echo side-up > /work/side; while true; do sleep 0.2; done",
                  restartPolicy="Always",
                  volumeMounts=work),
        container("i2", "cat /work/i1 /work/side", volumeMounts=work),
    ], containers=[container("main", "trap 'exit 0' TERM; echo main-start; while true; do sleep 0.2; done",
                             volumeMounts=work)],
        volumes=[{"name": "work", "emptyDir": {}}]))
    env.create(busybox_pod("initfail", "", restartPolicy="Never",
                           initContainers=[container("bad", "exit 7")], containers=[container("c", "sleep 3600")]))
    env.wait_pod("init", lambda p: "running" in _state(p, "i1", True), 20, what="i1 running")
    row = env.kubectl("get", "pod", "init", "--no-headers").split()
    assert row[1:3] == ["0/2", "Init:0/3"], row
    p = env.wait_pod("init", lambda p: (p["status"].get("phase") == "Running" and "running" in _state(p, "main")), 30)
    i1, side, i2 = (container_status(p, n, True) for n in ("i1", "side", "i2"))
    assert i1["state"]["terminated"]["reason"] == "Completed" and i1["ready"]
    assert "running" in side["state"] and side["started"] and side["ready"]
    assert i2["state"]["terminated"]["exitCode"] == 0
    # strictly in order: i1 finished before the sidecar started, which started before i2
    assert parse_time(i1["state"]["terminated"]["finishedAt"]) <= parse_time(side["state"]["running"]["startedAt"])
    assert parse_time(side["state"]["running"]["startedAt"]) <= parse_time(i2["state"]["terminated"]["startedAt"])
    assert env.log_text(p, "i2") == ["one", "side-up"]
    assert condition(p, "Initialized")["status"] == "True"
    env.wait_pod("init", lambda p: condition(p, "Ready").get("status") == "True", 10)
    assert env.kubectl("get", "pod", "init", "--no-headers").split()[1:3] == ["2/2", "Running"]
    f = env.wait_pod("initfail", lambda p: p["status"].get("phase") == "Failed", 20)
    assert _state(f, "bad", True)["terminated"]["exitCode"] == 7
    assert condition(f, "Initialized")["reason"] == "ContainersNotInitialized"
    assert env.kubectl("get", "pod", "initfail", "--no-headers").split()[2] == "Init:Error"
    # deleting the pod stops the sidecar after the main container
    env.delete_pod("init", 5)
    env.wait_gone("init", 30)


def test_probes(env):
    env.create(busybox_pod("ready", "", containers=[container(
        "c", "sleep 3; touch /tmp/ready; sleep 5; rm /tmp/ready; sleep 3600",
        readinessProbe={"exec": {"command": ["cat", "/tmp/ready"]}, "periodSeconds": 1, "failureThreshold": 1})]))
    env.create(busybox_pod("live", "", containers=[container(
        "c", "sleep 2; touch /tmp/dead; sleep 3600",
        livenessProbe={"exec": {"command": ["sh", "-c", "test ! -e /tmp/dead"]}, "periodSeconds": 1,
                       "failureThreshold": 2})]))
    env.create(busybox_pod("startup", "", containers=[container(
        "c", "sleep 4; touch /tmp/up; sleep 3600",
        startupProbe={"exec": {"command": ["cat", "/tmp/up"]}, "periodSeconds": 1, "failureThreshold": 30})]))
    s = env.wait_running("startup", 20)
    assert not container_status(s, "c")["started"] and not container_status(s, "c")["ready"]
    p = env.wait_running("ready", 20)
    assert condition(p, "Ready")["status"] == "False" and condition(p, "Ready")["reason"] == "ContainersNotReady"
    p = env.wait_pod("ready", lambda p: condition(p, "Ready").get("status") == "True", 20, what="Ready")
    assert container_status(p, "c")["ready"]
    p = env.wait_pod("ready", lambda p: condition(p, "Ready").get("status") == "False", 20, what="not Ready again")
    assert condition(p, "Ready")["message"] == "containers with unready status: [c]"
    assert container_status(p, "c")["restartCount"] == 0  # readiness never restarts
    s = env.wait_pod("startup", lambda p: container_status(p, "c")["started"], 20, what="started")
    assert container_status(s, "c")["ready"]
    lv = env.wait_pod("live", lambda p: container_status(p, "c")["restartCount"] >= 1, 30, what="liveness restart")
    assert container_status(lv, "c")["lastState"]["terminated"]["exitCode"] in (137, 143)
    evs = [(e["reason"], e["message"]) for e in env.events("live")]
    assert ("Killing", "Container c failed liveness probe, will be restarted") in evs
    assert any(r == "Unhealthy" and m.startswith("Liveness probe failed") for r, m in evs)
    assert any(r == "Unhealthy" and m.startswith("Readiness probe failed: cat: can't open '/tmp/ready'")
               for r, m in [(e["reason"], e["message"]) for e in env.events("ready")])


def test_grpc_probe(env):
    import concurrent.futures

    grpc = pytest.importorskip("grpc")
    state = {"status": 1}  # grpc.health.v1 SERVING

    def check(_req: bytes, _ctx: object) -> bytes:
        return bytes([0x08, state["status"]])

    handler = grpc.method_handlers_generic_handler("grpc.health.v1.Health", {
        "Check": grpc.unary_unary_rpc_method_handler(check, request_deserializer=lambda b: b,
                                                     response_serializer=lambda b: b)})
    server = grpc.server(concurrent.futures.ThreadPoolExecutor(2))
    server.add_generic_rpc_handlers((handler,))
    port = server.add_insecure_port("0.0.0.0:0")
    server.start()
    try:
        # a host-network pod: the probe goes to the node's address, where this test serves the health API
        env.create(busybox_pod("grpc", "sleep 3600", hostNetwork=True, containers=[container(
            "c", "sleep 3600", readinessProbe={"grpc": {"port": port}, "periodSeconds": 1, "failureThreshold": 1})]))
        env.wait_pod("grpc", lambda p: condition(p, "Ready").get("status") == "True", 20, what="gRPC ready")
        state["status"] = 2
        env.wait_pod("grpc", lambda p: condition(p, "Ready").get("status") == "False", 20, what="gRPC not ready")
        assert ("Unhealthy", 'Readiness probe failed: service unhealthy (responded with "NOT_SERVING")') in \
            [(e["reason"], e["message"]) for e in env.events("grpc")]
    finally:
        env.delete_pod("grpc", 0)
        server.stop(0)


def test_hooks_and_graceful_termination(env, tmp_path):
    hp = str(tmp_path / "hooks")
    os.makedirs(hp)
    mounts = [{"name": "hp", "mountPath": "/hp"}]
    env.create(busybox_pod("hooks", "", terminationGracePeriodSeconds=10, containers=[container(
        "c", "trap 'touch /hp/term; exit 0' TERM; until test -e /tmp/poststart; do sleep 0.1; done; cat /tmp/poststart; "
        "while true; do sleep 0.1; done",
        volumeMounts=mounts,
        lifecycle={"postStart": {"exec": {"command": ["sh", "-c", "echo from-poststart > /tmp/poststart"]}},
                   "preStop": {"exec": {"command": ["sh", "-c", "touch /hp/prestop; sleep 2"]}}})],
        volumes=[{"name": "hp", "hostPath": {"path": hp, "type": "Directory"}}]))
    env.create(busybox_pod("stubborn", "sleep 3600", terminationGracePeriodSeconds=3))
    env.create(busybox_pod("sleeper", "", terminationGracePeriodSeconds=30, containers=[container(
        "c", "trap 'exit 0' TERM; while true; do sleep 0.1; done", lifecycle={"preStop": {"sleep": {"seconds": 1}}})]))
    env.wait_running("hooks")
    env.wait_running("stubborn")
    env.wait_running("sleeper")
    env.wait_log("hooks", "c", lambda ls: "from-poststart" in ls)
    # SIGTERM comes after the preStop hook finished
    t0 = time.time()
    env.delete_pod("hooks")
    env.wait_gone("hooks", 20)
    assert os.path.exists(os.path.join(hp, "prestop")) and os.path.exists(os.path.join(hp, "term"))
    pre, term = os.stat(os.path.join(hp, "prestop")).st_mtime, os.stat(os.path.join(hp, "term")).st_mtime
    assert t0 - 1 <= pre and term - pre >= 1.9, (pre - t0, term - pre)
    assert ("Killing", "Stopping container c") in [(e["reason"], e["message"]) for e in env.events("hooks")]
    # a container that ignores SIGTERM is killed when the grace period ends; the API object goes only after that,
    # with a terminal status written first
    events: list = []
    th = threading.Thread(target=lambda: events.extend(watch_pod(env, "stubborn", 30)))
    th.start()
    time.sleep(0.3)
    t0 = time.monotonic()
    env.delete_pod("stubborn")
    th.join(35)
    took = time.monotonic() - t0
    assert events and events[-1][0] == "DELETED", [e[0] for e in events]
    assert 2.5 <= took <= 10, took
    last = events[-2][1]
    assert last["metadata"]["deletionTimestamp"] and last["status"]["phase"] == "Failed"
    assert _state(last, "c")["terminated"]["exitCode"] == 137
    # preStop sleep action, then a prompt exit on SIGTERM: gone well before the 30 s grace period
    t0 = time.monotonic()
    env.delete_pod("sleeper")
    env.wait_gone("sleeper", 20)
    assert 0.9 <= time.monotonic() - t0 <= 8


def test_crashloop_backoff(env):
    env.create(busybox_pod("crash", "echo crashing; exit 3"))
    p = env.wait_pod("crash", lambda p: container_status(p, "c")["restartCount"] >= 1
                     and (_state(p, "c").get("waiting") or {}).get("reason") == "CrashLoopBackOff", 20, what="backoff")
    c = container_status(p, "c")
    uid = p["metadata"]["uid"]
    assert c["state"]["waiting"]["message"] == f"back-off 10s restarting failed container=c pod=crash_default({uid})"
    assert c["lastState"]["terminated"]["exitCode"] == 3 and c["lastState"]["terminated"]["reason"] == "Error"
    assert env.kubectl("get", "pod", "crash", "--no-headers").split()[2] == "CrashLoopBackOff"
    first_finish = parse_time(c["lastState"]["terminated"]["finishedAt"])
    p = env.wait_pod("crash", lambda p: container_status(p, "c")["restartCount"] >= 2, 25, what="second restart")
    c = container_status(p, "c")
    started = (c["state"].get("running") or c["state"].get("terminated") or c["lastState"]["terminated"])["startedAt"]
    assert parse_time(started) - first_finish >= 9, (started, first_finish)
    p = env.wait_pod("crash", lambda p: "back-off 20s" in ((_state(p, "c").get("waiting") or {}).get("message") or ""),
                     15, what="doubled back-off")
    # the current and the previous attempt keep their logs; older ones go with their containers
    assert env.log_text(p, "c", 1) == ["crashing"] and env.log_files(p, "c")[-1].endswith("/2.log")
    assert not os.path.exists(env.log_files(p, "c")[0].rsplit("/", 1)[0] + "/0.log")
    evs = [(e["reason"], e["message"]) for e in env.events("crash")]
    assert ("BackOff", f"Back-off restarting failed container c in pod crash_default({uid})") in evs


def test_oom_cpu_quota_messages_deadline(env):
    env.create(busybox_pod("oom", "", restartPolicy="Never", containers=[container(
        "c", "x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done", resources={"limits": {"memory": "20Mi"}})]))
    env.create(busybox_pod("cpu", "", containers=[container(
        "c", "sleep 3600", resources={"limits": {"cpu": "500m", "memory": "64Mi"}})]))
    env.create(busybox_pod("msg", "", restartPolicy="Never",
                           containers=[container("c", "echo -n custom message > /dev/termination-log; exit 1")]))
    env.create(busybox_pod("fallback", "", restartPolicy="Never", containers=[container(
        "c", "echo first; echo last words; exit 2", terminationMessagePolicy="FallbackToLogsOnError")]))
    env.create(busybox_pod("deadline", "sleep 3600", activeDeadlineSeconds=3))
    env.create(busybox_pod("done", "echo ok", restartPolicy="Never"))
    o = env.wait_pod("oom", lambda p: p["status"].get("phase") == "Failed", 30)
    t = _state(o, "c")["terminated"]
    assert (t["reason"], t["exitCode"]) == ("OOMKilled", 137)
    assert env.kubectl("get", "pod", "oom", "--no-headers").split()[2] == "OOMKilled"
    c = env.wait_running("cpu")
    assert c["status"]["qosClass"] == "Guaranteed"
    uid, cid = c["metadata"]["uid"], container_status(c, "c")["containerID"].split("//")[1]
    base = f"kubepods/pod{uid}/{cid}"
    assert open(f"/sys/fs/cgroup/cpu/{base}/cpu.cfs_quota_us").read().strip() == "50000"
    assert open(f"/sys/fs/cgroup/cpu/{base}/cpu.shares").read().strip() == "512"
    assert open(f"/sys/fs/cgroup/memory/{base}/memory.limit_in_bytes").read().strip() == str(64 << 20)
    assert open(f"/sys/fs/cgroup/cpu/kubepods/pod{uid}/cpu.cfs_quota_us").read().strip() == "50000"
    m = env.wait_pod("msg", lambda p: p["status"].get("phase") == "Failed", 20)
    assert _state(m, "c")["terminated"]["message"] == "custom message"
    f = env.wait_pod("fallback", lambda p: p["status"].get("phase") == "Failed", 20)
    assert _state(f, "c")["terminated"]["message"] == "first\nlast words\n"
    d = env.wait_pod("deadline", lambda p: p["status"].get("phase") == "Failed", 20)
    assert d["status"]["reason"] == "DeadlineExceeded"
    assert d["status"]["message"] == "Pod was active on the node longer than the specified deadline"
    ok = env.wait_pod("done", lambda p: p["status"].get("phase") == "Succeeded", 20)
    assert _state(ok, "c")["terminated"]["reason"] == "Completed"
    assert condition(ok, "Ready")["reason"] == "PodCompleted"
    assert env.kubectl("get", "pod", "done", "--no-headers").split()[2] == "Completed"


def test_image_pull_and_config_errors(env):
    env.create(busybox_pod("nopull", "", containers=[{"name": "c", "image": "127.0.0.1:9/nothing:v1"}]))
    env.create(busybox_pod("never", "", containers=[{"name": "c", "image": "absent:v1", "imagePullPolicy": "Never"}]))
    env.create(busybox_pod("badcfg", "", containers=[container("c", "sleep 3600", env=[
        {"name": "X", "valueFrom": {"configMapKeyRef": {"name": "nope", "key": "k"}}}])]))
    p = env.wait_pod("nopull", lambda p: (_state(p, "c").get("waiting") or {}).get("reason") == "ImagePullBackOff", 30)
    assert _state(p, "c")["waiting"]["message"] == 'Back-off pulling image "127.0.0.1:9/nothing:v1"'
    evs = [(e["reason"], e["message"]) for e in env.events("nopull")]
    assert ("Pulling", 'Pulling image "127.0.0.1:9/nothing:v1"') in evs
    assert any(r == "Failed" and m.startswith('Failed to pull image "127.0.0.1:9/nothing:v1": ') for r, m in evs)
    assert ("Failed", "Error: ErrImagePull") in evs and ("Failed", "Error: ImagePullBackOff") in evs
    assert ("BackOff", 'Back-off pulling image "127.0.0.1:9/nothing:v1"') in evs
    assert env.kubectl("get", "pod", "nopull", "--no-headers").split()[2] in ("ImagePullBackOff", "ErrImagePull")
    n = env.wait_pod("never", lambda p: (_state(p, "c").get("waiting") or {}).get("reason") == "ErrImageNeverPull", 20)
    assert _state(n, "c")["waiting"]["message"] == 'Container image "absent:v1" is not present with pull policy of Never'
    b = env.wait_pod("badcfg", lambda p: (_state(p, "c").get("waiting") or {}).get("reason")
                     == "CreateContainerConfigError", 20)
    assert _state(b, "c")["waiting"]["message"] == 'configmap "nope" not found'
    assert ("Failed", 'Error: configmap "nope" not found') in [(e["reason"], e["message"]) for e in env.events("badcfg")]


def test_pull_secrets_from_a_local_registry(env, tmp_path):
    """A private registry (Debian's docker-registry behind htpasswd basic auth) on loopback: the pod without
    credentials goes ErrImagePull then ImagePullBackOff; a docker-registry Secret named in imagePullSecrets, or
    given to the pod by its ServiceAccount, lets the kubelet pull it and the pod runs (upstream's events)."""
    from pyk8s.kubelet.images.store import ImageStore
    from tests.e2e.imagebuild import import_busybox
    from tests.e2e.registry import Pusher, run_registry, write_htpasswd

    local = ImageStore(str(tmp_path / "build"))
    import_busybox(local, str(tmp_path), "busybox:private")
    htpasswd = tmp_path / "htpasswd"
    write_htpasswd(htpasswd, "alice", "s3cret")
    with run_registry(tmp_path, f"auth:\n  htpasswd:\n    realm: basic-realm\n    path: {htpasswd}\n") as host:
        Pusher(host, "alice:s3cret").from_store(local, "busybox:private", "team/busybox", "v1")
        image = f"{host}/team/busybox:v1"

        def pod(name: str, **spec):
            return busybox_pod(name, "", containers=[{"name": "c", "image": image, "command": ["sleep", "3600"]}],
                               **spec)

        env.create(pod("nocreds"))
        p = env.wait_pod("nocreds", lambda p: (_state(p, "c").get("waiting") or {}).get("reason")
                         in ("ErrImagePull", "ImagePullBackOff"), 20, what="ErrImagePull")
        waiting = _state(p, "c")["waiting"]
        if waiting["reason"] == "ErrImagePull":  # a busy machine may only show the back-off that follows
            assert waiting["message"].startswith(f'failed to pull and unpack image "{image}": '), waiting
        p = env.wait_pod("nocreds", lambda p: (_state(p, "c").get("waiting") or {}).get("reason")
                         == "ImagePullBackOff", 30, what="ImagePullBackOff")
        assert _state(p, "c")["waiting"]["message"] == f'Back-off pulling image "{image}"'
        evs = [(e["type"], e["reason"], e["message"]) for e in env.events("nocreds")]
        assert ("Normal", "Pulling", f'Pulling image "{image}"') in evs
        assert any(t == "Warning" and r == "Failed" and m.startswith(
            f'Failed to pull image "{image}": failed to pull and unpack image "{image}": ') for t, r, m in evs), evs
        assert ("Warning", "Failed", "Error: ErrImagePull") in evs
        assert ("Normal", "BackOff", f'Back-off pulling image "{image}"') in evs
        assert ("Warning", "Failed", "Error: ImagePullBackOff") in evs
        assert env.kubectl("get", "pod", "nocreds", "--no-headers").split()[2] in ("ImagePullBackOff", "ErrImagePull")

        env.kubectl("create", "secret", "docker-registry", "regcred", f"--docker-server={host}",
                    "--docker-username=alice", "--docker-password=s3cret", "--docker-email=alice@example.com")
        env.create(pod("withsecret", imagePullSecrets=[{"name": "regcred"}]))
        env.wait_running("withsecret", 30)
        evs = [(e["type"], e["reason"], e["message"]) for e in env.events("withsecret")]
        assert ("Normal", "Pulling", f'Pulling image "{image}"') in evs
        assert any(t == "Normal" and r == "Pulled" and m.startswith(f'Successfully pulled image "{image}" in ')
                   and "Image size: " in m for t, r, m in evs), evs
        assert ("Normal", "Started", "Started container c") in evs

        # the ServiceAccount's imagePullSecrets reach pods that name none (ServiceAccount admission), and the
        # kubelet pulls with them (Always: the image is on the node already)
        env.kubectl("create", "serviceaccount", "puller")
        env.kubectl("patch", "serviceaccount", "puller", "-p", '{"imagePullSecrets": [{"name": "regcred"}]}')
        sa_pod = pod("viasa", serviceAccountName="puller")
        sa_pod["spec"]["containers"][0]["imagePullPolicy"] = "Always"
        created = env.create(sa_pod)
        assert created["spec"]["imagePullSecrets"] == [{"name": "regcred"}]
        env.wait_running("viasa", 30)
        evs = [(e["reason"], e["message"]) for e in env.events("viasa")]
        assert ("Pulling", f'Pulling image "{image}"') in evs
        assert any(r == "Pulled" and m.startswith(f'Successfully pulled image "{image}"') for r, m in evs), evs
        for name in ("nocreds", "withsecret", "viasa"):
            env.delete_pod(name, 0)
        for name in ("nocreds", "withsecret", "viasa"):
            env.wait_gone(name, 30)
