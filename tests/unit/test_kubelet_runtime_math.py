"""Pure parts of the kubelet runtime: upstream's cgroup/QoS math, spec merging, users, capabilities, references."""

from __future__ import annotations

import pytest

from pyk8s.kubelet.images.reference import parse_reference
from pyk8s.kubelet.images.registry import Credentials, credentials_from_docker_config
from pyk8s.kubelet.runtime.interface import ContainerConfig
from pyk8s.kubelet.runtime.resources import (
    container_oom_score_adj,
    container_resources,
    milli_cpu_to_quota,
    milli_cpu_to_shares,
    pod_cgroup_parent,
    pod_qos_class,
    pod_resources,
    shares_to_weight,
)
from pyk8s.kubelet.runtime.security import DEFAULT_CAPS, effective_caps, resolve_user
from pyk8s.kubelet.runtime.spec import SpecError, merge_args, merge_env

GI = 1024**3


def pod(*containers: tuple[dict, dict], init: list[tuple[dict, dict]] = (), **spec) -> dict:
    def c(i: int, rl: tuple[dict, dict], **kw) -> dict:
        return {"name": f"c{i}", "resources": {"requests": rl[0], "limits": rl[1]}, **kw}

    return {"spec": {"containers": [c(i, rl) for i, rl in enumerate(containers)],
                     "initContainers": [c(i, rl) for i, rl in enumerate(init)], **spec}}


def test_cpu_conversions_match_upstream():
    assert milli_cpu_to_shares(0) == 2
    assert milli_cpu_to_shares(1) == 2
    assert milli_cpu_to_shares(100) == 102
    assert milli_cpu_to_shares(1000) == 1024
    assert milli_cpu_to_shares(10**9) == 262144
    assert milli_cpu_to_quota(0) == 0
    assert milli_cpu_to_quota(5) == 1000  # minimum quota
    assert milli_cpu_to_quota(500) == 50000
    assert milli_cpu_to_quota(2500) == 250000
    assert shares_to_weight(2) == 1 and shares_to_weight(262144) == 10000 and shares_to_weight(1024) == 39


def test_qos_classes():
    assert pod_qos_class(pod(({}, {}))) == "BestEffort"
    assert pod_qos_class(pod(({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))) == "Guaranteed"
    assert pod_qos_class(pod(({"cpu": "1"}, {}))) == "Burstable"
    assert pod_qos_class(pod(({"cpu": "1", "memory": "1Gi"}, {"cpu": "2", "memory": "1Gi"}))) == "Burstable"
    # one container without limits spoils Guaranteed
    assert pod_qos_class(pod(({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}), ({}, {}))) == "Burstable"
    # non-QoS resources do not count
    assert pod_qos_class(pod(({"ephemeral-storage": "1Gi"}, {"ephemeral-storage": "1Gi"}))) == "BestEffort"
    assert pod_qos_class({"spec": {}, "status": {"qosClass": "Guaranteed"}}) == "Guaranteed"


def test_oom_score_adj():
    g = pod(({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}))
    assert container_oom_score_adj(g, g["spec"]["containers"][0], 8 * GI) == -997
    be = pod(({}, {}))
    assert container_oom_score_adj(be, be["spec"]["containers"][0], 8 * GI) == 1000
    b = pod(({"memory": "2Gi"}, {}))
    assert container_oom_score_adj(b, b["spec"]["containers"][0], 8 * GI) == 1000 - 250
    big = pod(({"memory": "8Gi"}, {}))
    assert container_oom_score_adj(big, big["spec"]["containers"][0], 8 * GI) == 3  # never below 3
    tiny = pod(({"cpu": "10m"}, {}))
    assert container_oom_score_adj(tiny, tiny["spec"]["containers"][0], 8 * GI) == 999  # never 1000
    crit = pod(({}, {}), priorityClassName="system-node-critical", priority=2000001000)
    assert container_oom_score_adj(crit, crit["spec"]["containers"][0], 8 * GI) == -997


def test_container_resources():
    p = pod(({"cpu": "250m", "memory": "64Mi"}, {"cpu": "500m", "memory": "128Mi"}))
    r = container_resources(p, p["spec"]["containers"][0], 8 * GI)
    assert (r.cpu_shares, r.cpu_quota, r.cpu_period, r.memory_limit) == (256, 50000, 100000, 128 * 1024**2)
    p = pod(({}, {"cpu": "2"}))  # limit only: shares from the limit
    assert container_resources(p, p["spec"]["containers"][0], 8 * GI).cpu_shares == 2048
    p = pod(({}, {}))
    r = container_resources(p, p["spec"]["containers"][0], 8 * GI)
    assert (r.cpu_shares, r.cpu_quota, r.memory_limit, r.oom_score_adj) == (2, 0, 0, 1000)


def test_pod_resources_and_cgroup_parent():
    g = pod(({"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"}),
            ({"cpu": "500m", "memory": "1Gi"}, {"cpu": "500m", "memory": "1Gi"}))
    r = pod_resources(g)
    assert (r.cpu_shares, r.cpu_quota, r.memory_limit) == (1536, 150000, 2 * GI)
    b = pod(({"cpu": "1"}, {"cpu": "2"}), ({"cpu": "1"}, {}))  # not every container has a cpu limit
    r = pod_resources(b)
    assert (r.cpu_shares, r.cpu_quota, r.memory_limit) == (2048, -1, 0)
    # a big init container raises the pod's requests to its own
    i = pod(({"cpu": "1"}, {"cpu": "1"}), init=[({"cpu": "3"}, {"cpu": "3"})])
    assert pod_resources(i).cpu_shares == 3072
    assert pod_resources(pod(({}, {}))).cpu_shares == 2
    assert pod_cgroup_parent("Guaranteed", "u") == "kubepods/podu"
    assert pod_cgroup_parent("Burstable", "u") == "kubepods/burstable/podu"
    assert pod_cgroup_parent("BestEffort", "u") == "kubepods/besteffort/podu"


def test_command_args_env_merge_like_upstream():
    img = {"Entrypoint": ["/ep"], "Cmd": ["--default"], "Env": ["PATH=/img/bin", "A=image"]}
    assert merge_args(ContainerConfig(name="c", image="i"), img) == ["/ep", "--default"]
    assert merge_args(ContainerConfig(name="c", image="i", args=["x"]), img) == ["/ep", "x"]
    assert merge_args(ContainerConfig(name="c", image="i", command=["/c"]), img) == ["/c"]
    assert merge_args(ContainerConfig(name="c", image="i", command=["/c"], args=["y"]), img) == ["/c", "y"]
    with pytest.raises(SpecError):
        merge_args(ContainerConfig(name="c", image="i"), {})
    env = merge_env(ContainerConfig(name="c", image="i", env=[("A", "pod"), ("B", "b")]), img, "h")
    assert env == ["PATH=/img/bin", "HOSTNAME=h", "A=pod", "B=b"]


def test_capabilities():
    allowed = [c for c in DEFAULT_CAPS] + ["CAP_NET_ADMIN", "CAP_SYS_ADMIN"]
    assert effective_caps([], [], False, allowed) == DEFAULT_CAPS
    assert effective_caps(["NET_ADMIN"], ["ALL"], False, allowed) == ["CAP_NET_ADMIN"]
    assert "CAP_CHOWN" not in effective_caps([], ["chown"], False, allowed)
    assert effective_caps(["SYS_RESOURCE"], [], False, allowed) == DEFAULT_CAPS  # not ours to give
    assert effective_caps([], [], True, allowed) == allowed
    with pytest.raises(ValueError):
        effective_caps(["BOGUS"], [], False, allowed)


def test_resolve_user(tmp_path):
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc/passwd").write_text("root:x:0:0::/root:/bin/sh\nweb:x:33:33::/var/www:/bin/sh\n")
    (tmp_path / "etc/group").write_text("root:x:0:\nweb:x:33:\nlogs:x:4:web,other\nstaff:x:50:\n")
    r = str(tmp_path)
    assert resolve_user(r, "", None, None, []) == (0, 0, [0], "root")
    assert resolve_user(r, "web", None, None, []) == (33, 33, [33, 4], "web")
    assert resolve_user(r, "web:staff", None, None, [9]) == (33, 50, [50, 4, 9], "web")
    assert resolve_user(r, "1234", None, None, []) == (1234, 0, [0], "")
    assert resolve_user(r, "web", 33, 7, []) == (33, 7, [7, 4], "web")
    assert resolve_user(r, "", 5000, None, [])[:2] == (5000, 0)
    with pytest.raises(ValueError):
        resolve_user(r, "nobody", None, None, [])


def test_references_and_pull_secrets():
    assert str(parse_reference("busybox")) == "docker.io/library/busybox:latest"
    assert str(parse_reference("localhost:5000/a/b")) == "localhost:5000/a/b:latest"
    assert str(parse_reference("ghcr.io/x/y:1.2")) == "ghcr.io/x/y:1.2"
    r = parse_reference("quay.io/a/b@sha256:" + "a" * 64)
    assert r.digest and r.tag is None and r.object.startswith("sha256:")
    with pytest.raises(ValueError):
        parse_reference("Busybox")
    secret = {"auths": {"https://index.docker.io/v1/": {"username": "u", "password": "p"},
                        "*.example.com": {"auth": "YTpi"}}}
    assert credentials_from_docker_config(secret, "docker.io") == [Credentials("u", "p")]
    assert credentials_from_docker_config(secret, "reg.example.com") == [Credentials("a", "b")]
    assert credentials_from_docker_config(secret, "a.b.example.com") == []


def test_tty_container_env_and_cni_chain_without_host_ports():
    """containerd's CRI gives a TTY container TERM=xterm (the pod may override it); portmap only runs for hostPorts."""
    from pyk8s.kubelet.runtime.cni import CNI, bridge_conflist
    from pyk8s.kubelet.runtime.interface import PortMapping

    env = merge_env(ContainerConfig(name="c", image="i", tty=True), {"Env": ["A=1"]}, "h")
    assert "TERM=xterm" in env and env.index("A=1") < env.index("TERM=xterm")
    assert "TERM=vt100" in merge_env(ContainerConfig(name="c", image="i", tty=True, env=[("TERM", "vt100")]), {}, "h")
    assert not any(e.startswith("TERM=") for e in merge_env(ContainerConfig(name="c", image="i"), {}, "h"))
    cni = CNI(bridge_conflist("10.1.0.0/24"))
    assert [p["type"] for p in cni._plugins([])] == ["bridge"]
    assert [p["type"] for p in cni._plugins([PortMapping(container_port=80, host_port=8080)])] == ["bridge", "portmap"]
