"""The Ingress controller as `pyk8s agent --ingress-kubeconfig` runs it on each node: two nodes in
network namespaces (tests/e2e/netns_cluster.py), each serving the node's own ports 80 and 443,
real busybox pods behind a Service as backends (endpoints from the EndpointSlice controller), an
Ingress with two hosts and TLS from two Secrets, and both nodes' addresses in its status."""

from __future__ import annotations

import json
import os
import ssl
from typing import Any

import pytest

from tests.e2e.netns_cluster import NetnsCluster
from tests.ingress_util import FAKE_CN, get, self_signed, served_cn, tls_secret, wait_for

pytestmark = [pytest.mark.xdist_group("ingress-nodes"), pytest.mark.timeout(300)]


def _web(name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "web"}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "c", "image": "busybox:e2e",
                                     "command": ["sh", "-c", f"mkdir -p /w/app && echo {name} > /w/app/index.html && "
                                                             "exec httpd -f -p 8080 -h /w"],
                                     "readinessProbe": {"tcpSocket": {"port": 8080}, "periodSeconds": 1}}]}}


def test_ingress_on_every_node_with_two_hosts_and_tls(tmp_path: Any) -> None:
    conf = os.path.join(str(tmp_path), "server", "ingress.conf")  # written by the server before agents start
    nc = NetnsCluster(tmp_path, nodes=2, agent_args=["--ingress-kubeconfig", conf])
    with nc:
        for i, node in enumerate(nc.node_names):
            nc.create(_web(f"web{i}", node))
        for i in range(2):
            nc.wait_running(f"web{i}", 60)
        ca, ka = self_signed("a.example.com")
        cb, kb = self_signed("b.example.com")
        objs = [
            {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
             "spec": {"selector": {"app": "web"}, "ports": [{"name": "http", "port": 80, "targetPort": 8080}]}},
            tls_secret("a-tls", "default", ca, ka), tls_secret("b-tls", "default", cb, kb),
            {"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "two", "namespace": "default"},
             "spec": {"tls": [{"hosts": ["a.example.com"], "secretName": "a-tls"},
                              {"hosts": ["b.example.com"], "secretName": "b-tls"}],
                      "rules": [{"host": h, "http": {"paths": [{"path": "/app", "pathType": "Prefix", "backend": {
                          "service": {"name": "web", "port": {"name": "http"}}}}]}}
                          for h in ("a.example.com", "b.example.com")]}}]
        nc.kubectl("apply", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": objs}))

        # every node answers on its own 443, with each host's certificate, and reaches pods on both nodes
        for node_ip in nc.node_ips:
            for host, cert in (("a.example.com", ca), ("b.example.com", cb)):
                ctx = ssl.create_default_context(cadata=cert.decode())

                def answers(host: str = host, ctx: ssl.SSLContext = ctx, ip: str = node_ip) -> set[bytes]:
                    return {get(443, "/app/", host, ctx=ctx, addr=ip)[1].strip() for _ in range(6)}

                seen = wait_for(answers, 60, f"{host} on {node_ip}")
                assert seen == {b"web0", b"web1"}, seen
            assert served_cn(443, "other.example.com", addr=node_ip) == FAKE_CN
            status, _, headers = get(80, "/app/", "a.example.com", addr=node_ip)
            assert status == 308 and headers["Location"] == "https://a.example.com/app/"  # ssl-redirect
            assert get(80, "/", "c.example.com", addr=node_ip)[0] == 404

        def lb() -> Any:
            ing = json.loads(nc.kubectl("get", "ingress", "two", "-o", "json"))
            return sorted(e["ip"] for e in (ing.get("status") or {}).get("loadBalancer", {}).get("ingress") or [])

        assert wait_for(lambda: lb() == sorted(nc.node_ips), 30, "both nodes in the status")
        row = nc.kubectl("get", "ingress", "two", "--no-headers").split()
        assert row[:5] == ["two", "pyk8s", "a.example.com,b.example.com", ",".join(sorted(nc.node_ips)), "80,"]
