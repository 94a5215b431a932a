"""Several API servers on one etcd serve one cluster (issue 7, "past one machine").

Two real `pyk8s server` processes (127.0.0.2 and 127.0.0.3, one port, advertising 198.51.100.2
and .3: tests/ha_helper.py) on a real etcd: a write
on one reaches watches on the other with the same resourceVersion, optimistic concurrency holds
across them, certificates and tokens of either work on both, and the `kubernetes` Service's
endpoints list every live API server (upstream's lease endpoint reconciler), a dead one leaving
after its master lease TTL and a stopped one at once. Identity Leases as upstream's KEP-1965.
"""

from __future__ import annotations

import base64
import json
import threading
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.etcd_helper import EtcdCluster
from tests.ha_helper import ADMIN_TOKEN, HAControlPlane, as_client_of, wait_for

pytestmark = [pytest.mark.timeout(90), pytest.mark.xdist_group("etcd-ha")]

TTL = "3"  # --master-lease-ttl: a dead server leaves the endpoints within TTL + one renewal



@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory):
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 1) as c:
        yield c


@pytest.fixture(scope="module")
def ha(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory):
    with HAControlPlane(tmp_path_factory.mktemp("ha"), etcd.endpoint, 2,
                        extra_args=["--master-lease-ttl", TTL, "--disable", "scheduler"]) as h:
        yield h


def endpoint_ips(c: Cluster) -> tuple[list[str], list[int]]:
    ep = raw_request(c, "GET", "/api/v1/namespaces/default/endpoints/kubernetes").json()
    subsets = ep.get("subsets") or []
    return ([a["ip"] for s in subsets for a in s.get("addresses", [])],
            [p["port"] for s in subsets for p in s.get("ports", [])])


def test_kubernetes_endpoints_list_every_live_api_server(ha: HAControlPlane, etcd: EtcdCluster):
    a, b = ha.servers
    want = sorted(ha.advertised)
    wait_for(lambda: endpoint_ips(a)[0] == want, 10, "both API servers in the kubernetes endpoints")
    # the master leases are where upstream keeps them, each on an etcd lease (its TTL)
    r = etcd.etcdctl(etcd.members[0], "get", "--prefix", "/registry/masterleases/", "-w", "json")
    kvs = json.loads(r.stdout)["kvs"]
    assert sorted(base64.b64decode(kv["key"]).decode() for kv in kvs) == [f"/registry/masterleases/{ip}" for ip in want]
    assert all(kv.get("lease") for kv in kvs)
    ips, ports = endpoint_ips(b)
    assert ips == want and ports == [ha.port]
    sl = raw_request(b, "GET", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices/kubernetes").json()
    assert sorted(e["addresses"][0] for e in sl["endpoints"]) == want
    assert sl["ports"] == [{"name": "https", "port": ha.port, "protocol": "TCP"}]
    # one identity Lease per API server, as upstream names and labels them
    leases = raw_request(a, "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases"
                         "?labelSelector=apiserver.kubernetes.io/identity%3Dkube-apiserver").json()["items"]
    names = {lease["metadata"]["name"] for lease in leases}
    assert len(names) == 2 and all(n.startswith("kube-apiserver-") for n in names)
    for lease in leases:
        assert lease["spec"]["holderIdentity"].startswith(lease["metadata"]["name"] + "_")
        assert lease["spec"]["leaseDurationSeconds"] == 3600


def test_certificates_and_tokens_of_either_server_work_on_both(ha: HAControlPlane):
    a, b = ha.servers
    # b's own admin certificate and a's (one CA)
    assert raw_request(b, "GET", "/api/v1/namespaces").status == 200
    assert raw_request(as_client_of(b, a), "GET", "/api/v1/namespaces").status == 200
    # the shared static token file
    for c in (a, b):
        r = raw_request(c, "GET", "/api/v1/namespaces/default", headers={"Authorization": f"Bearer {ADMIN_TOKEN}"},
                        auth=False)
        assert r.status == 200, r.body
    # a service-account token issued by a is accepted by b (one signing key)
    r = raw_request(a, "POST", "/api/v1/namespaces/default/serviceaccounts/default/token",
                    body={"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    assert r.status == 201, r.body
    token = r.json()["status"]["token"]
    review = raw_request(b, "POST", "/apis/authentication.k8s.io/v1/selfsubjectreviews",
                         body={"apiVersion": "authentication.k8s.io/v1", "kind": "SelfSubjectReview"},
                         headers={"Authorization": f"Bearer {token}"}, auth=False)
    assert review.status == 201, review.body
    assert review.json()["status"]["userInfo"]["username"] == "system:serviceaccount:default:default"


def test_a_write_on_one_server_reaches_watches_on_the_other(ha: HAControlPlane):
    a, b = ha.servers
    start = raw_request(b, "GET", "/api/v1/namespaces/default/configmaps").json()["metadata"]["resourceVersion"]
    seen: list[dict[str, Any]] = []

    def watch() -> None:
        r = raw_request(b, "GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={start}"
                        "&timeoutSeconds=4&labelSelector=ha%3Dwatch")
        seen.extend(json.loads(line) for line in r.body.splitlines() if line.strip())

    t = threading.Thread(target=watch)
    t.start()
    made = []
    for i in range(5):
        r = raw_request(a, "POST", "/api/v1/namespaces/default/configmaps",
                        body={"metadata": {"name": f"cross-{i}", "labels": {"ha": "watch"}}, "data": {"i": str(i)}})
        assert r.status == 201
        made.append(r.json())
    t.join(10)
    assert [(e["type"], e["object"]["metadata"]["name"], e["object"]["metadata"]["resourceVersion"]) for e in seen] \
        == [("ADDED", m["metadata"]["name"], m["metadata"]["resourceVersion"]) for m in made]
    # both servers report the same resourceVersion for the same object and for a consistent list
    for m in made:
        got = raw_request(b, "GET", f"/api/v1/namespaces/default/configmaps/{m['metadata']['name']}").json()
        assert got["metadata"]["resourceVersion"] == m["metadata"]["resourceVersion"]


def test_optimistic_concurrency_holds_across_servers(ha: HAControlPlane):
    a, b = ha.servers
    r = raw_request(a, "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "occ"},
                                                                             "data": {"v": "0"}})
    base = r.json()
    # both read the same version; b writes first; a's write on the stale version is refused
    from_b = dict(base, data={"v": "b"})
    from_a = dict(base, data={"v": "a"})
    rb = raw_request(b, "PUT", "/api/v1/namespaces/default/configmaps/occ", body=from_b)
    assert rb.status == 200
    ra = raw_request(a, "PUT", "/api/v1/namespaces/default/configmaps/occ", body=from_a)
    assert ra.status == 409 and ra.json()["reason"] == "Conflict", ra.body
    # concurrent read-modify-writes through both servers: every increment lands exactly once
    def bump(c: Cluster, n: int) -> None:
        for _ in range(n):
            while True:
                cur = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps/occ").json()
                cur["data"]["n"] = str(int(cur["data"].get("n", "0")) + 1)
                if raw_request(c, "PUT", "/api/v1/namespaces/default/configmaps/occ", body=cur).status == 200:
                    break

    threads = [threading.Thread(target=bump, args=(c, 10)) for c in (a, b, a, b)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    final = raw_request(b, "GET", "/api/v1/namespaces/default/configmaps/occ").json()
    assert final["data"]["n"] == "40"


def test_a_dead_api_server_leaves_the_endpoints_after_its_lease_ttl(ha: HAControlPlane):
    a, _ = ha.servers
    c = ha.add("127.0.0.9")
    c.start()
    try:
        wait_for(lambda: "198.51.100.9" in endpoint_ips(a)[0], 10, "the third server in the endpoints")
        c.kill9()
        # a killed server cannot take itself out: its lease runs out (3 s) and a live server drops it
        wait_for(lambda: "198.51.100.9" not in endpoint_ips(a)[0], 15, "the dead server out of the endpoints")
        assert endpoint_ips(a)[0] == sorted(ha.advertised)
        # a clean stop takes the server out at once (upstream's RemoveEndpoints on shutdown)
        d = ha.add("127.0.0.10")
        d.start()
        wait_for(lambda: "198.51.100.10" in endpoint_ips(a)[0], 10, "the fourth server in the endpoints")
        d.stop()
        assert "198.51.100.10" not in endpoint_ips(a)[0]
    finally:
        c.stop()
        ha.servers = ha.servers[:2]
