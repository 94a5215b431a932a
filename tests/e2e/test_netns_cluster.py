"""The netns node harness itself: nodes in their own network namespaces join the server on the host, run real
pods, the host reaches those pods, and teardown leaves nothing behind."""

from __future__ import annotations

import ipaddress
import ssl
import urllib.error
import urllib.request

import pytest

from tests.e2e.netns_cluster import NetnsCluster, leftovers

pytestmark = [pytest.mark.xdist_group("netns-cluster"), pytest.mark.timeout(240)]


def _pod(name: str, node: str) -> dict:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox:e2e",
                                     "command": ["sh", "-c", "echo hello-$(hostname) > /tmp/index.html; echo serving; "
                                                             "exec httpd -f -p 8080 -h /tmp"]}]}}


def test_two_nodes_in_namespaces(tmp_path) -> None:
    nc = NetnsCluster(tmp_path, nodes=2)
    tag = nc.tag
    with nc:
        cidrs = [nc.pod_cidr(i) for i in range(2)]
        assert all(cidrs) and cidrs[0] != cidrs[1]
        nodes = {n["metadata"]["name"]: n for n in nc.get("/api/v1/nodes")["items"]}
        for name, ip in zip(nc.node_names, nc.node_ips, strict=True):
            addrs = {a["type"]: a["address"] for a in nodes[name]["status"]["addresses"]}
            assert addrs["InternalIP"] == ip
        for i, name in enumerate(nc.node_names):
            nc.create(_pod(f"web{i}", name))
        for i in range(2):
            p = nc.wait_running(f"web{i}", 60)
            ip = p["status"]["podIP"]
            assert ipaddress.ip_address(ip) in ipaddress.ip_network(cidrs[i])
            # from the host, through the route the harness adds to that node's pods
            with urllib.request.urlopen(f"http://{ip}:8080/", timeout=10) as r:
                assert r.read().decode().strip() == f"hello-web{i}"
            # and from its own node
            assert nc.node_exec(i, "curl", "-sS", "-m", "5", f"http://{ip}:8080/").stdout.strip() == f"hello-web{i}"
        # logs and exec go server -> kubelet on the node's own address
        assert nc.pod_exec("web1", "cat", "/tmp/index.html").stdout.strip() == "hello-web1"
        assert nc.kubectl("logs", "web0").strip() == "serving"
        # port 10250 on a node answers only the API server's client certificate
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
        with pytest.raises(urllib.error.HTTPError) as e:
            urllib.request.urlopen(f"https://{nc.node_ips[0]}:10250/containerLogs/default/web0/c", context=ctx,
                                   timeout=10)
        assert e.value.code == 401
        assert nc.kubectl("get", "pods", "-o", "wide").count("Running") == 2
        assert leftovers(tag)
    assert leftovers(tag) == []
