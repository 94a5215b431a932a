"""Cluster DNS with two API servers on one etcd: each runs its DNS, one publishes kube-dns (the
holder of Lease kube-system/pyk8s-cluster-dns), and when it stops the other publishes itself.

Each server's DNS needs an address EndpointSlices accept (not loopback): two /32s on a veth pair
of this test's own, removed at the end.
"""

from __future__ import annotations

import json
import os
import random
import subprocess

import dns.message
import dns.query
import dns.rcode
import pytest

from tests.conftest import require, require_binary
from tests.etcd_helper import EtcdCluster
from tests.ha_helper import HAControlPlane, wait_for

pytestmark = [pytest.mark.xdist_group("cluster_dns_ha"), pytest.mark.timeout(180)]


@pytest.fixture
def dns_addresses():
    require("root", os.geteuid() == 0)
    require_binary("ip")
    tag = os.urandom(3).hex()
    a, b = f"dnsha{tag}", f"dnshb{tag}"
    net = f"198.18.{random.randint(0, 255)}"
    addrs = [f"{net}.2", f"{net}.3"]
    try:
        subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
        for ip in addrs:
            subprocess.run(["ip", "addr", "add", f"{ip}/32", "dev", a], check=True)
        for link in (a, b):
            subprocess.run(["ip", "link", "set", link, "up"], check=True)
        yield addrs
    finally:
        subprocess.run(["ip", "link", "del", a], capture_output=True)


def published(c) -> tuple[str, int] | None:
    r = c.kubectl("get", "endpointslice", "-n", "kube-system", "kube-dns", "-o", "json", check=False)
    if r.returncode != 0:
        return None
    es = json.loads(r.stdout)
    return es["endpoints"][0]["addresses"][0], es["ports"][0]["port"]


def answers(server: tuple[str, int]) -> bool:
    q = dns.message.make_query("kubernetes.default.svc.cluster.local", "A")
    try:
        return dns.query.udp(q, server[0], port=server[1], timeout=2).rcode() == dns.rcode.NOERROR
    except Exception:
        return False


def test_one_publisher_and_takeover(tmp_path, dns_addresses) -> None:
    require_binary("etcd")
    with EtcdCluster(tmp_path / "etcd", 1) as etcd:
        ha = HAControlPlane(tmp_path / "ha", etcd.endpoint, 2, extra_args=["--disable", "scheduler"])
        for s, addr in zip(ha.servers, dns_addresses, strict=True):
            s.extra_args += ["--dns-bind-address", addr]
        with ha:
            a, b = ha.servers
            first = wait_for(lambda: published(a), 10, "kube-dns published")
            assert first[0] == dns_addresses[0] and answers(first)
            # the second server serves too, but does not publish over the first
            lease = json.loads(a.kubectl("get", "lease", "-n", "kube-system", "pyk8s-cluster-dns", "-o",
                                         "json").stdout)
            assert lease["spec"]["holderIdentity"].endswith("_" + dns_addresses[0])
            a.kubectl("delete", "endpointslice", "-n", "kube-system", "kube-dns")
            assert wait_for(lambda: published(a), 10, "kube-dns restored") == first
            # the first one stops: it gives the Lease up and the second publishes itself
            a.stop()
            second = wait_for(lambda: (p := published(b)) and p[0] == dns_addresses[1] and p, 15,
                              "the second server's DNS published")
            assert answers(second)
