"""Cluster DNS from inside real busybox pods (runc, CNI bridge): the resolv.conf the kubelet
writes, and names resolved by the server's DNS at the address kube-dns's EndpointSlice names
(reached from the pod's network namespace through its bridge, as the service proxy's DNAT for
10.96.0.10:53 delivers it), for names the endpointslice controller derived from a real pod.
"""

from __future__ import annotations

import json

import pytest

from tests.dns_helper import HEADLESS_DB, kube_dns_endpoint
from tests.e2e.kubelet_harness import Env, busybox_pod, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-cluster-dns-pods"), pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("cluster-dns-pods")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


@pytest.fixture(scope="module")
def dns_addr(env: Env) -> str:
    addr, port = kube_dns_endpoint(env.cluster)
    return f"{addr}:{port}"


def test_names_resolve_from_a_pod(env: Env, dns_addr: str) -> None:
    env.kubectl("apply", "-f", "-", input="""
apiVersion: v1
kind: Service
metadata: {name: web}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80}]
---
""" + HEADLESS_DB)
    # a StatefulSet-shaped pod: hostname + subdomain under a headless Service
    db0 = env.create(busybox_pod("db0", "sleep 3600", hostname="db-0", subdomain="db", labels={"app": "db"}))
    db0 = env.wait_running("db0", 60)
    pod_ip = db0["status"]["podIP"]
    env.wait(lambda: pod_ip in env.kubectl("get", "endpointslices", "-l", "kubernetes.io/service-name=db",
                                           "-o", "jsonpath={.items[*].endpoints[*].addresses}"), 20, "db's endpoint")
    web_ip = json.loads(env.kubectl("get", "svc", "web", "-o", "json"))["spec"]["clusterIP"]
    dashed = web_ip.replace(".", "-")
    # the probes run as the pod's command; their output is read from its log
    probes = ["web.default.svc.cluster.local", "db-0.db.default.svc.cluster.local", "db.default.svc.cluster.local",
              "-type=srv _pg._tcp.db.default.svc.cluster.local", f"{dashed}.default.pod.cluster.local",
              "nope.default.svc.cluster.local"]
    script = "cat /etc/resolv.conf; " + "; ".join(f"echo '== {p}'; nslookup {p} {dns_addr}" for p in probes)
    env.create(busybox_pod("client", script + "; echo '== end'; sleep 3600"))
    lines = env.wait_log("client", "c", lambda ls: "== end" in ls, 60)
    out: dict[str, str] = {}
    key = "resolv.conf"
    for line in lines:
        if line.startswith("== "):
            key = line[3:]
        else:
            out[key] = out.get(key, "") + line + "\n"

    resolv = out["resolv.conf"].strip().splitlines()
    assert resolv[0].startswith("search default.svc.cluster.local svc.cluster.local cluster.local")
    assert "nameserver 10.96.0.10" in resolv and resolv[-1] == "options ndots:5"
    # (busybox nslookup given a server does not walk the search path; the libc resolver that
    # would needs 10.96.0.10:53, which is the service proxy's part)
    assert f"Address: {web_ip}" in out["web.default.svc.cluster.local"]
    assert f"Address: {pod_ip}" in out["db-0.db.default.svc.cluster.local"]
    assert f"Address: {pod_ip}" in out["db.default.svc.cluster.local"]
    assert "service = 0 100 5432 db-0.db.default.svc.cluster.local" in out[probes[3]]
    assert f"Address: {web_ip}" in out[probes[4]]
    assert "NXDOMAIN" in out["nope.default.svc.cluster.local"]
