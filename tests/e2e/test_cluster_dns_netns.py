"""Cluster DNS on a cluster of nodes in their own network namespaces (tests/e2e/netns_cluster.py):
the server's DNS listens on its advertise address on the node link, and a pod on one node and
a node itself resolve names of a pod on the other node there, through the address and port
kube-dns's EndpointSlice names. (Through 10.96.0.10:53 itself is the service proxy's part.)
"""

from __future__ import annotations

import pytest

from tests.dns_helper import HEADLESS_DB, kube_dns_endpoint
from tests.e2e.netns_cluster import NetnsCluster, netns_requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("cluster-dns-netns"), pytest.mark.timeout(240)]


def _pod(name: str, node: str, script: str, **spec: object) -> dict:
    labels = spec.pop("labels", {"app": name})
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0, **spec,
                     "containers": [{"name": "c", "image": "busybox:e2e", "command": ["sh", "-c", script]}]}}


def test_pods_on_other_nodes_resolve(tmp_path) -> None:
    netns_requirements()
    with NetnsCluster(tmp_path, nodes=2) as nc:
        addr, port = kube_dns_endpoint(nc.cluster)
        assert addr == nc.host_ip  # the advertise address, on the link every node reaches
        server = f"{addr}:{port}"
        nc.cluster.kubectl("apply", "-f", "-", input=HEADLESS_DB)
        nc.create(_pod("db0", nc.node_names[1], "sleep 3600", hostname="db-0", subdomain="db", labels={"app": "db"}))
        nc.create(_pod("client", nc.node_names[0], "sleep 3600"))
        ip = nc.wait_running("db0", 60)["status"]["podIP"]
        nc.wait_running("client", 60)

        def resolved() -> bool:
            r = nc.pod_exec("client", "nslookup", "db-0.db.default.svc.cluster.local", server, check=False)
            return f"Address: {ip}" in r.stdout

        nc.wait(resolved, 20, "db-0.db from a pod on the other node")
        r = nc.pod_exec("client", "nslookup", "-type=srv", "_pg._tcp.db.default.svc.cluster.local", server)
        assert "service = 0 100 5432 db-0.db.default.svc.cluster.local" in r.stdout
        r = nc.pod_exec("client", "cat", "/etc/resolv.conf")
        assert "nameserver 10.96.0.10" in r.stdout and "options ndots:5" in r.stdout
        # a node itself (a host-network pod's view)
        r = nc.node_exec(1, "busybox", "nslookup", "db.default.svc.cluster.local", server)
        assert f"Address: {ip}" in r.stdout
