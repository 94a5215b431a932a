"""`pyk8s server --datastore-endpoint etcd://...` behaves as with the embedded store.

A real etcd (tests/etcd_helper.py) under a real server subprocess; kubectl and the official
Python client drive it. Also: objects are where kube-apiserver would put them in etcd, a
second API server on the same etcd reads the first one's writes at once, and the server
rides out an etcd restart.
"""

from __future__ import annotations

import json
import threading
import time

import pytest

from tests.cluster import Cluster, raw_request
from tests.etcd_helper import EtcdCluster, etcdctl

pytestmark = pytest.mark.timeout(60)


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory):
    with EtcdCluster(tmp_path_factory.mktemp("etcd"), 1) as c:
        yield c


@pytest.fixture(scope="module")
def server(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-etcd")), extra_args=["--datastore-endpoint", etcd.endpoint])
    c.start()
    yield c
    c.stop()


def test_kubectl_namespaces_configmaps_and_conflicts(server: Cluster, etcd: EtcdCluster):
    server.kubectl("create", "namespace", "etcd-demo")
    server.kubectl("create", "configmap", "c1", "-n", "etcd-demo", "--from-literal=k=v")
    got = json.loads(server.kubectl("get", "configmap", "c1", "-n", "etcd-demo", "-o", "json").stdout)
    assert got["data"] == {"k": "v"}
    names = server.kubectl("get", "configmaps", "-n", "etcd-demo", "-o", "name").stdout.split()
    assert "configmap/c1" in names
    # the object is where kube-apiserver keeps it, and its resourceVersion is etcd's mod_revision
    r = etcdctl(f"http://{etcd.endpoints[0]}", "get", "/registry/configmaps/etcd-demo/c1", "-w", "json")
    kv = json.loads(r.stdout)["kvs"][0]
    assert int(got["metadata"]["resourceVersion"]) == kv["mod_revision"]
    # an update with a stale resourceVersion is refused with 409
    stale = dict(got, data={"k": "first"})
    server.kubectl("replace", "-f", "-", input=json.dumps(stale))
    stale["data"] = {"k": "second"}
    r2 = raw_request(server, "PUT", "/api/v1/namespaces/etcd-demo/configmaps/c1", body=stale)
    assert r2.status == 409 and r2.json()["reason"] == "Conflict"
    r3 = raw_request(server, "POST", "/api/v1/namespaces/etcd-demo/configmaps", body={"metadata": {"name": "c1"}})
    assert r3.status == 409 and r3.json()["reason"] == "AlreadyExists"
    server.kubectl("delete", "configmap", "c1", "-n", "etcd-demo")
    r = etcdctl(f"http://{etcd.endpoints[0]}", "get", "--prefix", "/registry/configmaps/etcd-demo/", "--keys-only")
    assert r.stdout.split() == ["/registry/configmaps/etcd-demo/kube-root-ca.crt"] or r.stdout.split() == []


def test_python_client_create_get_list_watch(server: Cluster):
    from kubernetes import client, watch

    api = client.CoreV1Api(server.api_client())
    api.create_namespace({"metadata": {"name": "etcd-py"}})
    lst = api.list_namespaced_config_map("etcd-py")
    rv = lst.metadata.resource_version
    events: list[tuple[str, str]] = []

    def watcher() -> None:
        w = watch.Watch()
        for ev in w.stream(api.list_namespaced_config_map, "etcd-py", resource_version=rv, timeout_seconds=5):
            if ev["object"].metadata.name.startswith("w"):
                events.append((ev["type"], ev["object"].metadata.name))
            if len(events) >= 3:
                w.stop()

    t = threading.Thread(target=watcher)
    t.start()
    time.sleep(0.3)
    made = [api.create_namespaced_config_map("etcd-py", {"metadata": {"name": f"w{i}"}}) for i in range(2)]
    # read-your-writes: each object is there the moment its create returns
    for m in made:
        assert api.read_namespaced_config_map(m.metadata.name, "etcd-py").metadata.resource_version == \
            m.metadata.resource_version
    api.delete_namespaced_config_map("w0", "etcd-py")
    t.join(15)
    assert events == [("ADDED", "w0"), ("ADDED", "w1"), ("DELETED", "w0")]
    items = api.list_namespaced_config_map("etcd-py").items
    assert "w1" in [i.metadata.name for i in items] and "w0" not in [i.metadata.name for i in items]
    # paging reads the store at one revision
    for i in range(5):
        api.create_namespaced_config_map("etcd-py", {"metadata": {"name": f"p{i}"}})
    page = api.list_namespaced_config_map("etcd-py", limit=2)
    assert len(page.items) == 2 and page.metadata._continue
    rest = api.list_namespaced_config_map("etcd-py", limit=100, _continue=page.metadata._continue)
    assert len(page.items) + len(rest.items) == len(api.list_namespaced_config_map("etcd-py").items)


def test_writes_made_directly_in_etcd_reach_the_api(server: Cluster, etcd: EtcdCluster):
    """The cache follows etcd, not just this server's own writes (as with several API servers)."""
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "data": {"x": "1"},
           "metadata": {"name": "from-etcdctl", "namespace": "default", "uid": "0b5a0f52-1111-4c6e-9d3e-000000000001",
                        "creationTimestamp": "2026-01-01T00:00:00Z"}}
    r = etcdctl(f"http://{etcd.endpoints[0]}", "put", "/registry/configmaps/default/from-etcdctl", json.dumps(obj))
    assert r.returncode == 0, r.stderr
    g = raw_request(server, "GET", "/api/v1/namespaces/default/configmaps/from-etcdctl")
    assert g.status == 200 and g.json()["data"] == {"x": "1"}


def test_second_api_server_on_the_same_etcd_reads_the_first_ones_writes(server: Cluster, etcd: EtcdCluster,
                                                                        tmp_path):
    b = Cluster(str(tmp_path / "b"), extra_args=["--datastore-endpoint", etcd.endpoint]).start()
    try:
        for i in range(20):
            r = raw_request(server, "POST", "/api/v1/namespaces/default/configmaps",
                            body={"metadata": {"name": f"ha-{i}"}, "data": {"i": str(i)}})
            assert r.status == 201
            # consistent read on the other server: it waits for its cache to reach etcd's revision
            g = raw_request(b, "GET", f"/api/v1/namespaces/default/configmaps/ha-{i}")
            assert g.status == 200 and g.json()["metadata"]["resourceVersion"] == r.json()["metadata"]["resourceVersion"]
    finally:
        b.stop()


def test_server_rides_out_an_etcd_restart(tmp_path):
    with EtcdCluster(tmp_path / "etcd", 1) as e:
        c = Cluster(str(tmp_path / "data"), extra_args=["--datastore-endpoint", e.endpoint]).start()
        try:
            r = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "before"}})
            assert r.status == 201
            rv = r.json()["metadata"]["resourceVersion"]
            e.members[0].kill()
            # etcd is gone: a clear server error naming etcd, not a hang
            t0 = time.monotonic()
            r = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "down"}})
            assert r.status >= 500 and "etcd" in r.json()["message"], r.body
            assert time.monotonic() - t0 < 20
            e.restart(e.members[0])
            r = raw_request(c, "POST", "/api/v1/namespaces/default/configmaps", body={"metadata": {"name": "after"}})
            assert r.status == 201, r.body
            w = raw_request(c, "GET", f"/api/v1/namespaces/default/configmaps?watch=true&resourceVersion={rv}"
                            "&timeoutSeconds=1")
            names = [json.loads(line)["object"]["metadata"]["name"] for line in w.body.splitlines() if line.strip()]
            assert "after" in names and "before" not in names
            items = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps").json()["items"]
            assert {"before", "after"} <= {i["metadata"]["name"] for i in items}
        finally:
            c.stop()
