"""The kubelet's /metrics on its port, read the way Prometheus' kubernetes-nodes job does:
through the API server's nodes/proxy (GET /api/v1/nodes/NODE/proxy/metrics), with a real pod
started under runc so the pod start latency, runtime operations and running pods move."""

from __future__ import annotations

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.e2e.kubelet_harness import Env, all_started, busybox_pod, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-metrics"), pytest.mark.timeout(120)]


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-metrics")))
    try:
        e.start()
        yield e
    finally:
        e.stop()


def value(text: str, metric: str, /, **labels: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()))


def test_kubelet_metrics_follow_a_pod(env: Env) -> None:
    env.create(busybox_pod("metered", "exec sleep 100000"))
    env.wait_pod("metered", all_started, timeout=60)
    text = env.kubectl("get", "--raw", f"/api/v1/nodes/{env.node}/proxy/metrics")
    assert value(text, "kubelet_node_name", node=env.node) == 1
    assert value(text, "kubelet_running_pods") >= 1
    assert value(text, "kubelet_running_containers", container_state="running") >= 1
    assert value(text, "kubelet_pod_start_duration_seconds_count") >= 1
    assert 0 < value(text, "kubelet_pod_start_duration_seconds_sum") < 60
    assert value(text, "kubelet_pod_worker_duration_seconds_count", operation="create") >= 1
    for op in ("run_podsandbox", "create_container", "start_container"):
        assert value(text, "kubelet_runtime_operations_total", operation_type=op) >= 1, op
    assert value(text, "process_resident_memory_bytes") > 0
    assert value(text, "rest_client_requests_total", method="PATCH") >= 1  # its status updates
    env.delete_pod("metered", grace=0)
    env.wait_gone("metered")

    def stopped() -> str | None:  # the PLEG relists every second
        t = env.kubectl("get", "--raw", f"/api/v1/nodes/{env.node}/proxy/metrics")
        return t if value(t, "kubelet_running_containers", container_state="running") == 0 else None

    text = env.wait(stopped, 20, "no running containers counted")
    assert value(text, "kubelet_running_pods") == 0
    assert value(text, "kubelet_runtime_operations_total", operation_type="stop_container") >= 1
