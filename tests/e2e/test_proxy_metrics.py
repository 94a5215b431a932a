"""kube-proxy's /metrics on --metrics-bind-address (upstream's default 127.0.0.1:10249, plain HTTP):
the proxy runs in its own node network namespace (tests/e2e/proxy_rig.py), so its localhost port
is that namespace's and the host's network is untouched."""

from __future__ import annotations

import datetime as dt
import socket
import subprocess
import sys
from collections.abc import Iterator

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.proxy_rig import ProxyRig, requirements, wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("proxy-metrics")]

FETCH = "import urllib.request,sys; sys.stdout.write(urllib.request.urlopen(sys.argv[1], timeout=5).read().decode())"


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyRig]:
    requirements()
    r = ProxyRig(str(tmp_path_factory.mktemp("proxy-metrics")))
    try:
        r.setup()
        r.add_pod("a")
        r.start_server()
        r.start_proxy()
        yield r
    finally:
        r.teardown()


def scrape(rig: ProxyRig) -> str:
    return subprocess.run(rig.nsexec(rig.node_ns, sys.executable, "-c", FETCH, "http://127.0.0.1:10249/metrics"),
                          capture_output=True, text=True, timeout=30, check=True).stdout


def value(text: str, metric: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples if s.name == metric)


def test_proxy_metrics_count_syncs_and_network_programming(rig: ProxyRig) -> None:
    from kubernetes import client

    assert rig.cluster is not None
    api = rig.cluster.api_client()
    client.CoreV1Api(api).create_namespaced_service("default", {"metadata": {"name": "metered"}, "spec": {
        "ports": [{"port": 80, "targetPort": 8080}]}})
    trigger = dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    client.DiscoveryV1Api(api).create_namespaced_endpoint_slice("default", {
        "metadata": {"name": "metered-1", "labels": {"kubernetes.io/service-name": "metered"},
                     "annotations": {"endpoints.kubernetes.io/last-change-trigger-time": trigger}},
        "addressType": "IPv4", "ports": [{"name": "", "port": 8080, "protocol": "TCP"}],
        "endpoints": [{"addresses": [rig.pods["a"][1]], "conditions": {"ready": True}, "nodeName": rig.node_name}]})
    text = wait_for(lambda: (t := scrape(rig)) and value(t, "kubeproxy_network_programming_duration_seconds_count")
                    >= 1 and t, timeout=20, interval=0.2, what="the slice's programming counted")
    assert value(text, "kubeproxy_sync_proxy_rules_duration_seconds_count") >= 2
    assert value(text, "kubeproxy_sync_proxy_rules_last_timestamp_seconds") > dt.datetime.now().timestamp() - 60
    assert 0 <= value(text, "kubeproxy_network_programming_duration_seconds_sum") < 20
    assert value(text, "rest_client_requests_total") >= 1 and value(text, "process_start_time_seconds") > 0
    # localhost of the node only, as upstream's default: not reachable on the node's address
    with pytest.raises(OSError):
        socket.create_connection((rig.node_ip, 10249), timeout=2).close()
