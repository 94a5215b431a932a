"""API machinery through the official Python client and raw HTTP: metadata, conflicts, lists, watch, finalizers."""

import json
import threading
import time

import pytest

from tests.cluster import BOTH_DATASTORES, raw_request

pytestmark = BOTH_DATASTORES  # the same answers from SQLite and from etcd


@pytest.fixture(scope="module")
def v1(cluster):
    from kubernetes import client

    return client.CoreV1Api(cluster.api_client())


@pytest.fixture(scope="module")
def ns(v1):
    v1.create_namespace({"metadata": {"name": "sem"}})
    # a default ServiceAccount is the serviceaccount controller's job; the tests here need none
    return "sem"


def _cm(name, **labels):
    return {"metadata": {"name": name, "labels": labels}, "data": {"k": name}}


def test_metadata_is_filled_and_generation_tracks_spec(cluster, ns):
    from kubernetes import client

    apps = client.AppsV1Api(cluster.api_client())
    d = apps.create_namespaced_deployment(ns, {
        "metadata": {"generateName": "web-"},
        "spec": {"selector": {"matchLabels": {"app": "w"}},
                 "template": {"metadata": {"labels": {"app": "w"}},
                              "spec": {"containers": [{"name": "c", "image": "nginx"}]}}}})
    md = d.metadata
    assert md.name.startswith("web-") and len(md.name) == len("web-") + 5
    assert md.uid and md.creation_timestamp and int(md.resource_version) > 0
    assert md.generation == 1
    assert d.spec.replicas == 1 and d.spec.strategy.type == "RollingUpdate"
    assert d.spec.strategy.rolling_update.max_surge == "25%"
    assert d.spec.revision_history_limit == 10 and d.spec.progress_deadline_seconds == 600
    d2 = apps.patch_namespaced_deployment(md.name, ns, {"metadata": {"labels": {"x": "y"}}})
    assert d2.metadata.generation == 1  # metadata only
    d3 = apps.patch_namespaced_deployment(md.name, ns, {"spec": {"replicas": 3}})
    assert d3.metadata.generation == 2
    # status cannot be written through the main resource
    d4 = apps.patch_namespaced_deployment(md.name, ns, {"status": {"replicas": 7}})
    assert d4.status.replicas in (None, 0) or d4.status.replicas != 7
    d5 = apps.patch_namespaced_deployment_status(md.name, ns, {"status": {"replicas": 7}})
    assert d5.status.replicas == 7 and d5.metadata.generation == 2


def test_optimistic_concurrency_one_writer_wins(cluster, v1, ns):
    from kubernetes.client import ApiException

    cm = v1.create_namespaced_config_map(ns, _cm("race"))
    rv = cm.metadata.resource_version
    results = []

    def write(i):
        body = {"metadata": {"name": "race", "resourceVersion": rv}, "data": {"k": str(i)}}
        try:
            v1.replace_namespaced_config_map("race", ns, body)
            results.append("ok")
        except ApiException as e:
            results.append(e.status)

    threads = [threading.Thread(target=write, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results.count("ok") == 1 and results.count(409) == 7


def test_selectors_and_paging(cluster, v1, ns):
    from kubernetes.client import ApiException

    for i in range(25):
        v1.create_namespaced_config_map(ns, _cm(f"p{i:02d}", tier="front" if i % 2 else "back", idx=str(i)))
    names = lambda items: [x.metadata.name for x in items]  # noqa: E731
    assert len(v1.list_namespaced_config_map(ns, label_selector="tier=front").items) == 12
    assert len(v1.list_namespaced_config_map(ns, label_selector="tier in (front,back),idx notin (1,2,3)").items) == 22
    assert len(v1.list_namespaced_config_map(ns, label_selector="tier!=front,tier").items) == 13
    assert len(v1.list_namespaced_config_map(ns, label_selector="!tier").items) >= 0
    assert names(v1.list_namespaced_config_map(ns, field_selector="metadata.name=p03").items) == ["p03"]
    with pytest.raises(ApiException) as e:
        v1.list_namespaced_config_map(ns, field_selector="spec.nodeName=x")
    # as upstream: configmaps register no field label conversion, so the generic message applies
    assert e.value.status == 400
    assert '\\"spec.nodeName\\" is not a known field selector: only \\"metadata.name\\", \\"metadata.namespace\\"' \
        in e.value.body
    # paging: 25 labelled items in pages of 10, consistent at one resourceVersion
    seen, cont, rvs = [], None, set()
    while True:
        page = v1.list_namespaced_config_map(ns, label_selector="tier", limit=10, _continue=cont)
        seen += names(page.items)
        rvs.add(page.metadata.resource_version)
        cont = page.metadata._continue
        if not cont:
            break
        v1.create_namespaced_config_map(ns, _cm(f"late{len(seen)}", tier="late"))  # not in this list
    assert sorted(seen) == sorted(f"p{i:02d}" for i in range(25)) and len(rvs) == 1


def test_watch_resumes_and_sends_bookmarks(cluster, v1, ns):
    cm = v1.create_namespaced_config_map(ns, _cm("w1"))
    rv = cm.metadata.resource_version
    v1.patch_namespaced_config_map("w1", ns, {"data": {"k": "2"}})
    v1.delete_namespaced_config_map("w1", ns)
    r = raw_request(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps?watch=true&resourceVersion={rv}"
                    "&timeoutSeconds=1&fieldSelector=metadata.name%3Dw1&allowWatchBookmarks=true")
    events = [json.loads(line) for line in r.body.splitlines() if line.strip()]
    types = [e["type"] for e in events if e["type"] != "BOOKMARK"]
    assert types == ["MODIFIED", "DELETED"]
    assert events[0]["object"]["data"]["k"] == "2"


def test_watch_gets_a_burst_of_writes_whole_and_in_order(cluster, v1, ns):
    """Concurrent writes commit in batches and reach a watcher gathered per turn of the server's
    loop: every event arrives once, whole, in resourceVersion order."""
    from concurrent.futures import ThreadPoolExecutor

    start = v1.list_namespaced_config_map(ns).metadata.resource_version
    got = {}

    def watch():
        got["r"] = raw_request(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps?watch=true"
                               f"&resourceVersion={start}&timeoutSeconds=4")

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.5)  # the watch is open before the burst (a later one replays it from history: also checked)
    names = [f"burst-{i:03d}" for i in range(150)]
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda n: v1.create_namespaced_config_map(ns, _cm(n)), names))
        list(pool.map(lambda n: v1.delete_namespaced_config_map(n, ns), names))
    t.join(30)
    events = [json.loads(line) for line in got["r"].body.splitlines() if line.strip()]
    ours = [e for e in events if e["object"]["metadata"]["name"].startswith("burst-")]
    rvs = [int(e["object"]["metadata"]["resourceVersion"]) for e in events]
    assert rvs == sorted(rvs) and len(set(rvs)) == len(rvs)
    assert sorted(e["object"]["metadata"]["name"] for e in ours if e["type"] == "ADDED") == names
    assert sorted(e["object"]["metadata"]["name"] for e in ours if e["type"] == "DELETED") == names
    assert len(ours) == 2 * len(names)


def test_send_initial_events_ends_with_bookmark(cluster, v1, ns):
    v1.create_namespaced_config_map(ns, _cm("init1"))
    r = raw_request(cluster, "GET", f"/api/v1/namespaces/{ns}/configmaps?watch=true&sendInitialEvents=true"
                    "&resourceVersionMatch=NotOlderThan&allowWatchBookmarks=true&timeoutSeconds=1")
    events = [json.loads(line) for line in r.body.splitlines() if line.strip()]
    assert "init1" in [e["object"]["metadata"].get("name") for e in events if e["type"] == "ADDED"]
    marks = [e for e in events if e["type"] == "BOOKMARK"]
    assert marks and marks[0]["object"]["metadata"]["annotations"]["k8s.io/initial-events-end"] == "true"


def test_finalizers_hold_deletion(cluster, v1, ns):
    v1.create_namespaced_config_map(ns, {"metadata": {"name": "fin", "finalizers": ["example.com/hold"]}})
    v1.delete_namespaced_config_map("fin", ns)
    cm = v1.read_namespaced_config_map("fin", ns)
    assert cm.metadata.deletion_timestamp is not None
    v1.patch_namespaced_config_map("fin", ns, {"metadata": {"finalizers": None}})
    from kubernetes.client import ApiException

    with pytest.raises(ApiException) as e:
        v1.read_namespaced_config_map("fin", ns)
    assert e.value.status == 404


def test_pods_are_defaulted_and_deleted_gracefully(cluster, v1, ns):

    for _ in range(100):  # the serviceaccount controller creates it
        if [sa for sa in v1.list_namespaced_service_account(ns).items if sa.metadata.name == "default"]:
            break
        time.sleep(0.05)
    pod = v1.create_namespaced_pod(ns, {"metadata": {"name": "p1"},
                                        "spec": {"containers": [{"name": "c", "image": "busybox"}]}})
    s = pod.spec
    assert (s.restart_policy, s.dns_policy, s.scheduler_name, s.termination_grace_period_seconds) == \
        ("Always", "ClusterFirst", "default-scheduler", 30)
    assert s.containers[0].image_pull_policy == "Always" and s.service_account_name == "default"
    assert pod.status.phase == "Pending" and pod.status.qos_class == "BestEffort"
    assert {t.key for t in s.tolerations} == {"node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"}
    assert any(v.name.startswith("kube-api-access-") for v in s.volumes)
    # bound to a node, a pod is deleted gracefully; unbound pods go at once

    # upstream answers a binding with a Status, which the client cannot parse as a Binding: read it raw
    v1.create_namespaced_binding(ns, {"metadata": {"name": "p1"}, "target": {"kind": "Node", "name": "n1"}},
                                 _preload_content=False)
    assert v1.read_namespaced_pod("p1", ns).spec.node_name == "n1"
    v1.delete_namespaced_pod("p1", ns)
    p = v1.read_namespaced_pod("p1", ns)
    assert p.metadata.deletion_timestamp is not None and p.metadata.deletion_grace_period_seconds == 30
    v1.delete_namespaced_pod("p1", ns, grace_period_seconds=0)
    assert not [x for x in v1.list_namespaced_pod(ns).items if x.metadata.name == "p1"]


def test_bad_input_gets_upstream_statuses(cluster, ns):
    base = f"/api/v1/namespaces/{ns}/configmaps"
    r = raw_request(cluster, "POST", base, body=b'{"metadata": {"name": ')
    assert r.status == 400 and r.json()["reason"] == "BadRequest"
    r = raw_request(cluster, "POST", base, body={"apiVersion": "apps/v1", "kind": "ConfigMap", "metadata": {"name": "x"}})
    assert r.status == 400
    assert r.json()["message"] == "the API version in the data (apps/v1) does not match the expected API version (v1)"
    r = raw_request(cluster, "POST", base, body={"metadata": {"name": "x", "namespace": "other"}})
    assert r.status == 400
    assert r.json()["message"] == "the namespace of the provided object does not match the namespace sent on the request"
    r = raw_request(cluster, "POST", base + "?fieldValidation=Strict", body={"metadata": {"name": "x"}, "dta": {}})
    assert r.status == 400 and 'strict decoding error: unknown field "dta"' in r.json()["message"]
    r = raw_request(cluster, "POST", base + "?fieldValidation=Warn", body={"metadata": {"name": "warned"}, "dta": {}})
    assert r.status == 201 and 'unknown field \\"dta\\"' in r.headers.get("Warning", "") or \
        'unknown field "dta"' in r.headers.get("Warning", "")
    r = raw_request(cluster, "POST", base, body={"metadata": {"name": "x", "labels": {"a": "-bad-"}}})
    assert r.status == 422 and r.json()["reason"] == "Invalid"
    assert r.json()["details"]["causes"][0]["field"] == "metadata.labels"
    r = raw_request(cluster, "POST", base, body=b"{}", headers={"Content-Type": "text/plain"})
    assert r.status == 415
    big = {"metadata": {"name": "big"}, "data": {"k": "x" * (3 * 1024 * 1024 + 10)}}
    r = raw_request(cluster, "POST", base, body=big)
    assert r.status == 413
    pod = {"metadata": {"name": "huge"}, "spec": {"containers": [{"name": "c", "image": "busybox", "env": [
        {"name": f"V{i}", "value": "x" * 100_000} for i in range(17)]}]}}
    r = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/pods", body=pod)
    assert (r.status, r.json()["reason"], r.json()["message"]) == (  # upstream: a 500 (bad input is a 4xx)
        413, "RequestEntityTooLarge", "Request entity too large: etcdserver: request is too large")
    r = raw_request(cluster, "GET", base + "/x")
    assert r.status == 404 and r.json()["message"] == 'configmaps "x" not found'
    # nothing above was stored
    names = [i["metadata"]["name"] for i in raw_request(cluster, "GET", base).json()["items"]]
    assert "x" not in names and "big" not in names


def test_terminating_namespace_refuses_new_content(cluster, v1):
    v1.create_namespace({"metadata": {"name": "going"}})
    # an object the namespace controller cannot remove keeps the namespace Terminating (an empty
    # one can be gone before the next request)
    v1.create_namespaced_config_map("going", {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}})
    v1.delete_namespace("going")
    assert v1.read_namespace("going").status.phase == "Terminating"
    r = raw_request(cluster, "POST", "/api/v1/namespaces/going/configmaps", body={"metadata": {"name": "x"}})
    assert r.status == 403
    assert "unable to create new content in namespace going because it is being terminated" in r.json()["message"]
    v1.patch_namespaced_config_map("held", "going", {"metadata": {"finalizers": None}})


def test_services_get_cluster_ips_and_node_ports(cluster, v1, ns):
    svc = v1.create_namespaced_service(ns, {"metadata": {"name": "web"}, "spec": {
        "type": "NodePort", "selector": {"app": "w"}, "ports": [{"port": 80}]}})
    assert svc.spec.cluster_ip.startswith("10.") and svc.spec.cluster_ips == [svc.spec.cluster_ip]
    assert 30000 <= svc.spec.ports[0].node_port <= 32767
    assert svc.spec.ports[0].target_port == 80 and svc.spec.ports[0].protocol == "TCP"
    k = v1.read_namespaced_service("kubernetes", "default")
    assert k.spec.cluster_ip == "10.96.0.1" and k.spec.ports[0].port == 443
