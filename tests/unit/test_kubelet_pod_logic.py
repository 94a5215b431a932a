"""The kubelet's pure logic: DNS, env vars, pod status and phase, back-off, atomic writer, eviction order, manifests."""

from __future__ import annotations

import base64
import os

import pytest

from pyk8s.kubelet.backoff import Backoff, go_duration
from pyk8s.kubelet.dns import HostResolv, parse_resolv_conf, pod_dns
from pyk8s.kubelet.envvars import EnvBuilder, EnvError, expand, resource_value, service_env, services_for_pod
from pyk8s.kubelet.eviction import parse_thresholds, rank_for_eviction
from pyk8s.kubelet.runtime.interface import EXITED, RUNNING, ContainerStatus
from pyk8s.kubelet.staticpods import load_manifest
from pyk8s.kubelet.status import PodView, build_status, status_patch
from pyk8s.kubelet.volumes import VolumeError, check_host_path, write_atomic


def pod(**spec):
    return {"metadata": {"name": "p", "namespace": "ns1", "uid": "u1", "labels": {"a": "b"}},
            "spec": {"containers": [{"name": "c", "image": "busybox"}], **spec}, "status": {}}


# ---- DNS


def test_cluster_first_dns():
    host = parse_resolv_conf("nameserver 1.1.1.1\nsearch example.com\noptions edns0\n")
    r = pod_dns(pod(), ["10.96.0.10"], "cluster.local", host)
    assert r.config.servers == ["10.96.0.10"]
    assert r.config.searches == ["ns1.svc.cluster.local", "svc.cluster.local", "cluster.local", "example.com"]
    assert r.config.options == ["ndots:5"]


def test_dns_policies_and_config():
    host = HostResolv(["1.1.1.1"], ["example.com"], ["edns0"])
    assert pod_dns(pod(hostNetwork=True), ["10.96.0.10"], "cluster.local", host).config.servers == ["1.1.1.1"]
    assert pod_dns(pod(dnsPolicy="ClusterFirstWithHostNet", hostNetwork=True), ["10.96.0.10"], "cluster.local",
                   host).config.servers == ["10.96.0.10"]
    none = pod_dns(pod(dnsPolicy="None", dnsConfig={"nameservers": ["8.8.8.8"], "searches": ["a.b"],
                                                    "options": [{"name": "ndots", "value": "2"}, {"name": "rotate"}]}),
                   [], "cluster.local", host).config
    assert (none.servers, none.searches, none.options) == (["8.8.8.8"], ["a.b"], ["ndots:2", "rotate"])
    merged = pod_dns(pod(dnsConfig={"options": [{"name": "ndots", "value": "1"}]}), ["10.96.0.10"], "cluster.local",
                     host).config
    assert merged.options == ["ndots:1"]


# ---- env


def test_expand():
    env = {"A": "x", "B": "y"}
    assert expand("$(A)-$(B)", env.get) == "x-y"
    assert expand("$$(A)", env.get) == "$(A)"
    assert expand("$(NOPE) $(A", env.get) == "$(NOPE) $(A"
    assert expand("a$b", env.get) == "a$b"


def test_service_env_and_links():
    svc = {"metadata": {"name": "my-svc", "namespace": "ns1"},
           "spec": {"clusterIP": "10.96.0.5", "ports": [{"port": 80, "protocol": "TCP"}, {"name": "https", "port": 443}]}}
    k8s = {"metadata": {"name": "kubernetes", "namespace": "default"},
           "spec": {"clusterIP": "10.96.0.1", "ports": [{"name": "https", "port": 443}]}}
    env = service_env(services_for_pod(pod(), [svc, k8s]))
    assert env["MY_SVC_SERVICE_HOST"] == "10.96.0.5"
    assert env["MY_SVC_SERVICE_PORT"] == "80"
    assert env["MY_SVC_SERVICE_PORT_HTTPS"] == "443"
    assert env["MY_SVC_PORT"] == "tcp://10.96.0.5:80"
    assert env["MY_SVC_PORT_443_TCP_ADDR"] == "10.96.0.5"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    off = service_env(services_for_pod(pod(enableServiceLinks=False), [svc, k8s]))
    assert "MY_SVC_SERVICE_HOST" not in off and off["KUBERNETES_SERVICE_PORT"] == "443"


def test_env_builder_sources_and_errors():
    p = pod()
    cms = {"cm": {"data": {"k": "v", "bad=key": "z"}}}
    secrets = {"s": {"data": {"pw": base64.b64encode(b"hunter2").decode()}}}
    b = EnvBuilder(p, cms.get, secrets.get, [], ["10.244.0.5"], ["192.0.2.2"], {"cpu": "2", "memory": "1Gi"})
    c = {"name": "c", "envFrom": [{"configMapRef": {"name": "cm"}, "prefix": "P_"}],
         "env": [{"name": "A", "value": "$(P_k)!"},
                 {"name": "NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
                 {"name": "IP", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                 {"name": "LBL", "valueFrom": {"fieldRef": {"fieldPath": "metadata.labels['a']"}}},
                 {"name": "PW", "valueFrom": {"secretKeyRef": {"name": "s", "key": "pw"}}},
                 {"name": "MEM", "valueFrom": {"resourceFieldRef": {"resource": "limits.memory", "divisor": "1Mi"}}},
                 {"name": "OPT", "valueFrom": {"configMapKeyRef": {"name": "missing", "key": "x", "optional": True}}}]}
    env = dict(b.build(c))
    assert env["P_k"] == "v" and env["A"] == "v!" and env["NAME"] == "p" and env["IP"] == "10.244.0.5"
    assert env["LBL"] == "b" and env["PW"] == "hunter2" and env["MEM"] == "1024" and "OPT" not in env
    assert b.warnings and b.warnings[0][0] == "InvalidEnvironmentVariableNames"
    with pytest.raises(EnvError, match="couldn't find key nope in ConfigMap ns1/cm"):
        b.build({"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "cm", "key": "nope"}}}]})
    with pytest.raises(EnvError, match='configmap "gone" not found'):
        b.build({"name": "c", "env": [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "gone", "key": "k"}}}]})


def test_resource_value_rounds_up():
    c = {"resources": {"limits": {"cpu": "250m"}, "requests": {"cpu": "100m"}}}
    assert resource_value({"resource": "limits.cpu"}, c, {}) == "1"
    assert resource_value({"resource": "limits.cpu", "divisor": "1m"}, c, {}) == "250"
    assert resource_value({"resource": "limits.memory"}, c, {"memory": "2Ki"}) == "2048"


# ---- status


def cs(name, state, exit_code=0, attempt=0, cid="x", created=1.0, **kw):
    return ContainerStatus(id=cid, sandbox_id="s", name=name, state=state, image="busybox", image_id="sha256:1",
                           created_at=created, started_at=created, finished_at=created + 1 if state == EXITED else 0,
                           exit_code=exit_code, attempt=attempt, **kw)


def test_status_running_and_conditions():
    p = pod()
    v = PodView(containers={"c": [cs("c", RUNNING)]}, sandbox_ready=True, pod_ips=["10.244.0.5"], host_ips=["1.2.3.4"])
    st = build_status(p, v, 1000.0)
    assert st["phase"] == "Running" and st["podIP"] == "10.244.0.5" and st["hostIP"] == "1.2.3.4"
    assert [c["type"] for c in st["conditions"]] == ["PodReadyToStartContainers", "Initialized", "Ready",
                                                      "ContainersReady"]
    assert all(c["status"] == "True" for c in st["conditions"])
    assert st["containerStatuses"][0]["containerID"] == "runc://x" and st["qosClass"] == "BestEffort"


def test_status_crashloop_and_init_and_never():
    p = pod()
    v = PodView(containers={"c": [cs("c", EXITED, 1, attempt=1)]}, sandbox_ready=True,
                reasons={"c": ("CrashLoopBackOff", "back-off 10s ...")})
    st = build_status(p, v, 1000.0)
    c = st["containerStatuses"][0]
    assert c["state"]["waiting"]["reason"] == "CrashLoopBackOff" and c["lastState"]["terminated"]["exitCode"] == 1
    assert c["restartCount"] == 1 and st["phase"] == "Running"
    ready = next(x for x in st["conditions"] if x["type"] == "Ready")
    assert ready["reason"] == "ContainersNotReady" and ready["message"] == "containers with unready status: [c]"
    pi = pod(initContainers=[{"name": "i1", "image": "busybox"}, {"name": "i2", "image": "busybox"}])
    st = build_status(pi, PodView(containers={"i1": [cs("i1", RUNNING)]}, sandbox_ready=True), 1000.0)
    init = next(x for x in st["conditions"] if x["type"] == "Initialized")
    assert st["phase"] == "Pending" and init["message"] == "containers with incomplete status: [i1 i2]"
    assert st["containerStatuses"][0]["state"]["waiting"]["reason"] == "PodInitializing"
    never = pod(restartPolicy="Never")
    st = build_status(never, PodView(containers={"c": [cs("c", EXITED, 0)]}, terminal=True), 1000.0)
    assert st["phase"] == "Succeeded"
    st = build_status(never, PodView(containers={"c": [cs("c", EXITED, 2)]}, terminal=True), 1000.0)
    assert st["phase"] == "Failed"


def test_status_readiness_gates_and_patch():
    p = pod(readinessGates=[{"conditionType": "example.com/gate"}])
    v = PodView(containers={"c": [cs("c", RUNNING)]}, sandbox_ready=True)
    st = build_status(p, v, 1000.0)
    ready = next(x for x in st["conditions"] if x["type"] == "Ready")
    assert ready["reason"] == "ReadinessGatesNotReady"
    p["status"] = {"conditions": [{"type": "example.com/gate", "status": "True"}]}
    st2 = build_status(p, v, 1000.0)
    assert next(x for x in st2["conditions"] if x["type"] == "Ready")["status"] == "True"
    patch = status_patch(st, st2)
    ready_patch = next(c for c in patch["conditions"] if c["type"] == "Ready")
    assert ready_patch["reason"] is None and ready_patch["message"] is None  # explicit deletes, as a two-way patch


# ---- back-off


def test_backoff_doubles_and_resets():
    now = [1000.0]
    b = Backoff(10, 300, clock=lambda: now[0])
    assert not b.is_in_backoff_since("k", 1000)
    b.next("k", 1000)
    assert b.get("k") == 10 and b.is_in_backoff_since("k", 1000)
    for want in (20, 40, 80, 160, 300, 300):
        b.next("k", now[0])
        assert b.get("k") == want
    now[0] += 601  # ran for more than twice the maximum: start over
    b.next("k", now[0])
    assert b.get("k") == 10
    assert go_duration(10) == "10s" and go_duration(80) == "1m20s" and go_duration(300) == "5m0s"


# ---- volumes


def test_atomic_writer(tmp_path):
    d = str(tmp_path / "vol")
    assert write_atomic(d, {"a": (b"1", 0o644), "sub/b": (b"2", 0o600)})
    assert open(os.path.join(d, "a")).read() == "1" and open(os.path.join(d, "sub", "b")).read() == "2"
    assert os.readlink(os.path.join(d, "a")) == "..data/a"
    first = os.readlink(os.path.join(d, "..data"))
    assert not write_atomic(d, {"a": (b"1", 0o644), "sub/b": (b"2", 0o600)})
    assert write_atomic(d, {"a": (b"3", 0o644)})
    assert open(os.path.join(d, "a")).read() == "3" and not os.path.lexists(os.path.join(d, "sub"))
    assert not os.path.exists(os.path.join(d, first))
    with pytest.raises(VolumeError):
        write_atomic(d, {"../x": (b"", 0o644)})


def test_host_path_types(tmp_path):
    check_host_path(str(tmp_path / "new"), "DirectoryOrCreate")
    assert os.path.isdir(tmp_path / "new")
    check_host_path(str(tmp_path / "f"), "FileOrCreate")
    assert os.path.isfile(tmp_path / "f")
    with pytest.raises(VolumeError, match="is not a directory"):
        check_host_path(str(tmp_path / "f"), "Directory")
    with pytest.raises(VolumeError, match="is not a socket file"):
        check_host_path(str(tmp_path / "f"), "Socket")
    with pytest.raises(VolumeError, match="is not a character device"):
        check_host_path(str(tmp_path / "f"), "CharDevice")
    check_host_path("/dev/null", "CharDevice")


# ---- eviction


def test_thresholds_and_ranking():
    ts = parse_thresholds("memory.available<100Mi,nodefs.available<10%")
    assert ts[0].value(0) == 100 * 1024 * 1024 and ts[1].value(1000) == 100
    best = {"metadata": {"name": "be", "uid": "1"}, "spec": {"containers": [{"name": "c"}]}}
    under = {"metadata": {"name": "under", "uid": "2"},
             "spec": {"containers": [{"name": "c", "resources": {"requests": {"memory": "1Gi"}}}]}}
    high = {"metadata": {"name": "high", "uid": "3"}, "spec": {"priority": 1000, "containers": [{"name": "c"}]}}
    order = rank_for_eviction([(under, 10 << 20), (high, 50 << 20), (best, 5 << 20)], "memory")
    assert [p["metadata"]["name"] for p in order] == ["be", "high", "under"]


# ---- static pods


def test_static_manifest(tmp_path):
    f = tmp_path / "web.yaml"
    f.write_text("apiVersion: v1\nkind: Pod\nmetadata: {name: web}\nspec:\n  containers: [{name: c, image: busybox}]\n")
    p = load_manifest(str(f), "node1")
    md = p["metadata"]
    assert md["name"] == "web-node1" and md["namespace"] == "default" and len(md["uid"]) == 32
    assert md["annotations"]["kubernetes.io/config.source"] == "file"
    assert md["annotations"]["kubernetes.io/config.hash"] == md["uid"]
    assert p["spec"]["nodeName"] == "node1"
    assert load_manifest(str(f), "node1")["metadata"]["uid"] == md["uid"]
    assert load_manifest(str(f), "node2")["metadata"]["uid"] != md["uid"]


# ---- objects and tokens


def test_referenced_objects():
    from pyk8s.kubelet.objects import referenced_objects

    p = pod(imagePullSecrets=[{"name": "pull"}],
            volumes=[{"name": "a", "configMap": {"name": "cm1"}}, {"name": "b", "secret": {"secretName": "s1"}},
                     {"name": "c", "projected": {"sources": [{"configMap": {"name": "cm2"}}, {"secret": {"name": "s2"}},
                                                             {"serviceAccountToken": {"path": "t"}}]}}])
    p["spec"]["containers"][0]["env"] = [{"name": "X", "valueFrom": {"secretKeyRef": {"name": "s3", "key": "k"}}}]
    p["spec"]["containers"][0]["envFrom"] = [{"configMapRef": {"name": "cm3"}}]
    assert referenced_objects(p) == {("secrets", "pull"), ("configmaps", "cm1"), ("secrets", "s1"), ("configmaps", "cm2"),
                                     ("secrets", "s2"), ("secrets", "s3"), ("configmaps", "cm3")}


def test_token_manager_refreshes_at_80_percent(monkeypatch):
    import asyncio

    from pyk8s.api.timefmt import format_time
    from pyk8s.kubelet import objects

    now = [1_000_000.0]
    monkeypatch.setattr(objects.time, "time", lambda: now[0])
    calls = []

    class FakeClient:
        async def request(self, method, path, body):
            calls.append((method, path, body))
            return {"status": {"token": f"tok{len(calls)}", "expirationTimestamp": format_time(now[0] + 1000)}}

    tm = objects.TokenManager(FakeClient())  # type: ignore[arg-type]
    p = pod(serviceAccountName="robot")

    async def go():
        assert await tm.token(p, "", 1000) == "tok1"
        method, path, body = calls[0]
        assert (method, path) == ("POST", "/api/v1/namespaces/ns1/serviceaccounts/robot/token")
        assert body["spec"]["boundObjectRef"] == {"apiVersion": "v1", "kind": "Pod", "name": "p", "uid": "u1"}
        assert body["spec"]["expirationSeconds"] == 1000 and body["spec"]["audiences"] == []
        now[0] += 790
        assert await tm.token(p, "", 1000) == "tok1"  # before 80% of its life: cached
        now[0] += 20
        assert await tm.token(p, "", 1000) == "tok2"  # past 80%: a fresh one
        assert await tm.token(p, "vault", 1000) == "tok3" and calls[-1][2]["spec"]["audiences"] == ["vault"]

    asyncio.run(go())
