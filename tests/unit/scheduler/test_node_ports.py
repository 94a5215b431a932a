"""NodePorts: hostPort conflicts with upstream's 0.0.0.0 semantics."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.plugins.node_ports import NodePorts

from ._fixtures import cluster, node, one_plugin, pod, run_filter


def _port(port, proto=None, ip=None):
    p = {"containerPort": port, "hostPort": port}
    if proto:
        p["protocol"] = proto
    if ip:
        p["hostIP"] = ip
    return p


@pytest.mark.parametrize("used,wanted,fits", [
    ([_port(8080)], [_port(8080)], False),
    ([_port(8080)], [_port(8081)], True),
    ([_port(8080, "UDP")], [_port(8080)], True),  # protocols differ
    ([_port(8080, ip="127.0.0.1")], [_port(8080, ip="127.0.0.2")], True),  # different IPs
    ([_port(8080, ip="127.0.0.1")], [_port(8080)], False),  # wanting 0.0.0.0 conflicts with any IP
    ([_port(8080)], [_port(8080, ip="127.0.0.1")], False),  # 0.0.0.0 in use blocks every IP
    ([_port(8080, ip="127.0.0.1")], [_port(8080, ip="127.0.0.1")], False),
])
def test_conflicts(used, wanted, fits):
    h = cluster([node("n1")], [pod("old", node_name="n1", ports=used)])
    out, _, _ = run_filter(one_plugin(NodePorts, h), pod("new", ports=wanted))
    assert (out["n1"] is None) == fits
    if not fits:
        assert out["n1"].reasons == ("node(s) didn't have free ports for the requested pod ports",)
        assert out["n1"].code.name == "UNSCHEDULABLE"


def test_container_port_without_host_port_is_ignored_and_prefilter_skips():
    h = cluster([node("n1")], [pod("old", node_name="n1", ports=[_port(80)])])
    prof = one_plugin(NodePorts, h)
    _, st, _ = run_filter(prof, pod("new", ports=[{"containerPort": 80}]))
    assert st.is_success()


def test_sidecar_host_ports_are_held():
    side = {"name": "s", "image": "x", "restartPolicy": "Always", "ports": [_port(9000)]}
    h = cluster([node("n1")], [pod("old", node_name="n1", initContainers=[side])])
    out, _, _ = run_filter(one_plugin(NodePorts, h), pod("new", ports=[_port(9000)]))
    assert out["n1"] is not None


def test_deleted_pod_frees_its_port():
    old = pod("old", node_name="n1", ports=[_port(8080)])
    h = cluster([node("n1")], [old])
    prof = one_plugin(NodePorts, h)
    assert run_filter(prof, pod("new", ports=[_port(8080)]))[0]["n1"] is not None
    h.cache.remove_pod(old)
    assert run_filter(prof, pod("new", ports=[_port(8080)]))[0]["n1"] is None
