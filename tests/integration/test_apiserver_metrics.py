"""The API server's /metrics (docs/metrics.md): upstream's families, labels and access rules.

Upstream's bootstrap policy lets the group system:monitoring (ClusterRole system:monitoring)
and cluster-admin get the nonResourceURLs /metrics and /metrics/slis; anyone else gets 403
'forbidden: User "..." cannot get path "/metrics"'; with --anonymous-auth=false a request
without credentials is 401.
"""

from __future__ import annotations

import json
import os
import time

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import Cluster, client_kubeconfig, raw_request

pytestmark = pytest.mark.xdist_group("apiserver-metrics")


def families(text: str) -> dict[str, object]:
    return {f.name: f for f in text_string_to_metric_families(text)}


def samples(fams: dict, name: str, suffix: str = "") -> list:
    fam = fams[name]
    return [s for s in fam.samples if s.name == name + suffix]


def scrape(c: Cluster) -> dict:
    return families(c.kubectl("get", "--raw", "/metrics").stdout)


def _value(fams: dict, name: str, suffix: str = "", **labels: str) -> float:
    return sum(s.value for s in samples(fams, name, suffix)
               if all(s.labels.get(k) == v for k, v in labels.items()))


def test_request_counts_have_upstream_labels(cluster: Cluster) -> None:
    """A 404 GET of a pod counts code="404" verb="GET" scope="resource"; a list is LIST; a create POST
    (scope "resource" as upstream's CleanScope: a name or a create)."""
    before = scrape(cluster)
    r = cluster.kubectl("get", "pod", "no-such-pod", "-n", "default", check=False)
    assert r.returncode != 0
    cluster.kubectl("get", "pods", "-A")
    cluster.kubectl("create", "configmap", "m1", "-n", "default", "--from-literal=a=b")
    after = scrape(cluster)
    common = {"component": "apiserver", "group": "", "version": "v1", "dry_run": ""}
    get404 = dict(common, verb="GET", resource="pods", subresource="", scope="resource", code="404")
    assert _value(after, "apiserver_request", "_total", **get404) \
        == _value(before, "apiserver_request", "_total", **get404) + 1
    lst = dict(common, verb="LIST", resource="pods", scope="cluster", code="200")
    assert _value(after, "apiserver_request", "_total", **lst) >= 1
    post = dict(common, verb="POST", resource="configmaps", scope="resource", code="201")
    assert _value(after, "apiserver_request", "_total", **post) >= 1
    # the histogram's buckets are upstream's, cumulative, and count the same requests
    buckets = [s for s in samples(after, "apiserver_request_duration_seconds", "_bucket")
               if s.labels["verb"] == "LIST" and s.labels["resource"] == "pods"]
    les = [s.labels["le"] for s in buckets]
    assert les[:3] == ["0.005", "0.025", "0.05"] and les[-2:] == ["60.0", "+Inf"] and len(les) == 24
    assert [s.value for s in buckets] == sorted(s.value for s in buckets)
    assert _value(after, "apiserver_request_duration_seconds", "_count", verb="LIST", resource="pods") >= 1
    assert _value(after, "apiserver_response_sizes", "_count", verb="LIST", resource="pods") >= 1
    # every label upstream gives these families, no more
    s = samples(after, "apiserver_request", "_total")[0]
    assert set(s.labels) == {"code", "component", "dry_run", "group", "resource", "scope", "subresource", "verb",
                             "version"}


def test_watch_apply_dry_run_and_unknown_paths(cluster: Cluster) -> None:
    """A watch is WATCH (and long-running while open), server-side apply APPLY, dryRun=All dry_run="All";
    paths the server does not serve add no series of their own (a client cannot mint label values)."""
    r = raw_request(cluster, "GET", "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1")
    assert r.status == 200
    body = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "m2"}, "data": {"a": "b"}}
    r = raw_request(cluster, "PATCH", "/api/v1/namespaces/default/configmaps/m2?fieldManager=t",
                    body=json.dumps(body), headers={"Content-Type": "application/apply-patch+yaml"})
    assert r.status == 201, r.body
    r = raw_request(cluster, "POST", "/api/v1/namespaces/default/configmaps?dryRun=All",
                    body=dict(body, metadata={"name": "m3"}))
    assert r.status == 201, r.body
    for junk in ("/apis/evil.example/v1/things", "/api/v1/namespaces/default/pods/p/evil-sub", "/evil-path"):
        raw_request(cluster, "GET", junk)
    fams = scrape(cluster)
    assert _value(fams, "apiserver_request", "_total", verb="WATCH", resource="configmaps", code="200") >= 1
    assert _value(fams, "apiserver_request", "_total", verb="APPLY", resource="configmaps", code="201") == 1
    assert _value(fams, "apiserver_request", "_total", verb="POST", resource="configmaps", dry_run="All") == 1
    assert _value(fams, "apiserver_watch_events", "_total", group="", version="v1", resource="configmaps") >= 1
    text = json.dumps([s.labels for f in fams.values() for s in f.samples])
    assert "evil" not in text
    assert _value(fams, "apiserver_request", "_total", subresource="other", code="404") >= 2


def test_state_families(cluster: Cluster) -> None:
    """storage objects per resource, storage call latency, in-flight, APF, authentication and process_*."""
    cluster.kubectl("create", "namespace", "metrics-ns")
    fams = scrape(cluster)
    assert _value(fams, "apiserver_storage_objects", resource="namespaces") >= 5
    assert _value(fams, "apiserver_storage_objects", resource="clusterroles.rbac.authorization.k8s.io") > 30
    assert _value(fams, "etcd_request_duration_seconds", "_count", operation="create", type="namespaces") >= 1
    assert _value(fams, "apiserver_admission_step_admission_duration_seconds", "_count", type="admit",
                  operation="CREATE", rejected="false") >= 1
    assert _value(fams, "apiserver_admission_step_admission_duration_seconds", "_count", type="validate",
                  operation="CREATE") >= 1
    # the scrape itself is in flight (read-only) while it is rendered
    assert _value(fams, "apiserver_current_inflight_requests", request_kind="readOnly") >= 1
    assert _value(fams, "apiserver_flowcontrol_dispatched_requests", "_total", priority_level="exempt") >= 1
    assert _value(fams, "apiserver_flowcontrol_nominal_limit_seats", priority_level="workload-low") > 0
    assert _value(fams, "authentication_attempts", "_total", result="success") >= 1
    assert _value(fams, "process_resident_memory_bytes") > 10_000_000
    assert _value(fams, "process_start_time_seconds") > time.time() - 3600
    assert "python_gc_collections" in fams and "process_open_fds" in fams
    assert "kubernetes_healthcheck" in families(cluster.kubectl("get", "--raw", "/metrics/slis").stdout)


def test_openmetrics_when_asked(cluster: Cluster) -> None:
    r = raw_request(cluster, "GET", "/metrics", headers={"Accept": "application/openmetrics-text; version=1.0.0"})
    assert r.status == 200
    assert r.headers["Content-Type"].startswith("application/openmetrics-text")
    assert r.body.rstrip().endswith(b"# EOF")
    r = raw_request(cluster, "GET", "/metrics")
    assert r.headers["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"


def _forbidden(user: str, path: str) -> dict:
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
            "message": f'forbidden: User "{user}" cannot get path "{path}"', "reason": "Forbidden",
            "details": {}, "code": 403}


@pytest.mark.parametrize("path", ["/metrics", "/metrics/slis"])
def test_metrics_rbac(cluster: Cluster, path: str) -> None:
    """system:monitoring may read; an ordinary user and anonymous get upstream's 403."""
    mon = client_kubeconfig(cluster, "prom-scraper", ["system:monitoring"], "prom-mon")
    r = cluster.kubectl("--kubeconfig", mon, "get", "--raw", path)
    assert "# TYPE" in r.stdout
    plain = client_kubeconfig(cluster, "prom-alice", ["devs"], "prom-alice")
    r = cluster.kubectl("--kubeconfig", plain, "get", "--raw", path, check=False)
    assert r.returncode != 0 and "Forbidden" in r.stderr
    r = raw_request(cluster, "GET", path, auth=False)
    assert (r.status, r.json()) == (403, _forbidden("system:anonymous", path))
    # nor a path beneath, for system:monitoring
    r2 = cluster.kubectl("--kubeconfig", mon, "get", "--raw", path + "/x", check=False)
    assert r2.returncode != 0 and "Forbidden" in r2.stderr


@pytest.fixture(scope="module")
def closed_cluster(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("prom-noanon")), extra_args=["--anonymous-auth=false",
                                                                          "--disable", "metrics"])
    c.start()
    yield c
    c.stop()


def test_unauthenticated_401_and_disable(closed_cluster: Cluster) -> None:
    """Without anonymous auth, no credentials is 401; `--disable metrics` serves no /metrics (404)."""
    r = raw_request(closed_cluster, "GET", "/metrics", auth=False)
    assert r.status == 401 and r.json()["reason"] == "Unauthorized"
    r = raw_request(closed_cluster, "GET", "/metrics")
    assert r.status == 404
    assert os.path.exists(closed_cluster.kubeconfig)


@pytest.fixture(scope="module")
def etcd_cluster(tmp_path_factory: pytest.TempPathFactory):
    from tests.conftest import require_binary

    require_binary("etcd")
    c = Cluster(str(tmp_path_factory.mktemp("prom-etcd")), datastore="etcd")
    c.start()
    yield c
    c.stop()


def test_etcd_backend_is_timed_too(etcd_cluster: Cluster) -> None:
    """etcd_request_duration_seconds times the etcd backend's calls as it does SQLite's."""
    etcd_cluster.kubectl("create", "configmap", "on-etcd", "-n", "default", "--from-literal=a=b")
    etcd_cluster.kubectl("delete", "configmap", "on-etcd", "-n", "default")
    fams = scrape(etcd_cluster)
    for op in ("create", "delete"):
        assert _value(fams, "etcd_request_duration_seconds", "_count", operation=op, type="configmaps") >= 1, op
    assert _value(fams, "apiserver_storage_objects", resource="namespaces") >= 4


def test_open_watch_is_long_running_not_in_flight(cluster: Cluster) -> None:
    """While a watch is open it is in apiserver_longrunning_requests; once its initial events are sent it
    no longer counts as executing in API Priority and Fairness; when it ends the gauge goes back."""
    import threading

    def lr(fams: dict) -> float:
        return _value(fams, "apiserver_longrunning_requests", verb="WATCH", resource="secrets", scope="namespace")

    threads = [threading.Thread(target=raw_request, args=(cluster, "GET",
               "/api/v1/namespaces/kube-system/secrets?watch=1&timeoutSeconds=3"), daemon=True) for _ in range(5)]
    for t in threads:
        t.start()
    deadline = time.monotonic() + 10
    while lr(scrape(cluster)) < 5:
        assert time.monotonic() < deadline, "the open watches were never counted"
        time.sleep(0.1)
    fams = scrape(cluster)
    # the admin's flow (exempt) executes the scrape and maybe an in-process component's call: not the 5 watches
    assert _value(fams, "apiserver_flowcontrol_current_executing_requests", flow_schema="exempt") < 5
    for t in threads:
        t.join(10)
    assert lr(scrape(cluster)) == 0
