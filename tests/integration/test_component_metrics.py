"""Metrics of the scheduler, the controller manager and their API clients (docs/metrics.md).

In `pyk8s server` the in-process components' families are on the server's /metrics (as k3s
serves its embedded components'); `pyk8s scheduler` and `pyk8s controller-manager` serve
their own on --secure-port (upstream's 10259 and 10257) over HTTPS with delegated
authentication (TokenReview, client certificates of the cluster CA) and authorization
(SubjectAccessReview of the nonResourceURL): anonymous is 403, a bad token 401.
"""

from __future__ import annotations

import json
import os
import socket
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Callable
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.cluster import REPO, Cluster, client_kubeconfig

pytestmark = pytest.mark.xdist_group("component-metrics")


def node(name: str) -> dict[str, Any]:
    res = {"cpu": "4", "memory": "16Gi", "pods": "110"}
    return {"apiVersion": "v1", "kind": "Node",
            "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
            "status": {"capacity": res, "allocatable": res,
                       "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                                       "message": "kubelet is posting ready status"}]}}


def pod(name: str, cpu: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": cpu}}}]}}


def wait_for(fn: Callable[[], Any], timeout: float = 30.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = fn()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def value(text: str, metric: str, /, **labels: str) -> float:
    return sum(s.value for f in text_string_to_metric_families(text) for s in f.samples
               if s.name == metric and all(s.labels.get(k) == v for k, v in labels.items()))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("prom-components")), extra_args=["--in-process-scheduler"])
    c.start()
    c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
        node("prom-n1"), pod("fits", "100m"), pod("too-big", "100")]}))
    yield c
    c.stop()


def test_in_process_scheduler_and_controllers_on_server_metrics(cluster: Cluster) -> None:
    """scheduled and unschedulable attempts, pending pods per queue, e2e latency, extension points;
    workqueue_* per named controller queue; rest_client_* of the components' requests."""
    cluster.kubectl("create", "deployment", "web", "--image=busybox", "--replicas=2")

    def scraped() -> str | None:
        text = cluster.kubectl("get", "--raw", "/metrics").stdout
        ok = value(text, "scheduler_schedule_attempts_total", result="scheduled", profile="default-scheduler") >= 3 \
            and value(text, "scheduler_schedule_attempts_total", result="unschedulable") >= 1
        return text if ok else None

    text = wait_for(scraped, what="scheduling attempts counted")
    # "too-big" waits: unschedulable, or in backoff/active while a cluster event retries it
    assert sum(value(text, "scheduler_pending_pods", queue=q) for q in ("active", "backoff", "unschedulable")) == 1
    assert value(text, "scheduler_pending_pods", queue="gated") == 0
    assert value(text, "scheduler_pod_scheduling_sli_duration_seconds_count") >= 3
    # the Deployment's two pods came after the node, at their first attempt; "fits" came in the node's own
    # List, and the scheduler may see it before the node (no nodes yet: a retry after backoff, as upstream)
    assert value(text, "scheduler_pod_scheduling_sli_duration_seconds_count", attempts="1") >= 2
    assert value(text, "scheduler_scheduling_attempt_duration_seconds_count", result="scheduled") >= 3
    assert value(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="PreFilter",
                 status="Success", profile="default-scheduler") >= 3
    assert value(text, "scheduler_framework_extension_point_duration_seconds_count", extension_point="Reserve") >= 3
    for q in ("deployment", "replicaset"):
        assert value(text, "workqueue_adds_total", name=q) >= 1, q
        assert value(text, "workqueue_work_duration_seconds_count", name=q) >= 1, q
        assert value(text, "workqueue_queue_duration_seconds_count", name=q) >= 1, q
    names = {s.labels["name"] for f in text_string_to_metric_families(text) if f.name == "workqueue_depth"
             for s in f.samples}
    assert {"deployment", "replicaset", "job", "daemonset", "statefulset", "namespace"} <= names
    assert value(text, "workqueue_longest_running_processor_seconds", name="deployment") >= 0
    # the controllers' creates and the scheduler's bindings, through the in-process client
    assert value(text, "rest_client_requests_total", code="201", method="POST") >= 3
    assert value(text, "rest_client_request_duration_seconds_count", verb="POST") >= 3


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _get(url: str, ctx: ssl.SSLContext, token: str | None = None) -> tuple[int, str]:
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {token}"} if token else {})
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def _client_ctx(kubeconfig: str | None) -> ssl.SSLContext:
    """The components serve a self-signed certificate, as upstream's without --tls-cert-file."""
    if kubeconfig is not None:
        from pyk8s.client.kubeconfig import load_kubeconfig

        ctx = load_kubeconfig(kubeconfig).ssl_client_context()
        assert ctx is not None
    else:
        ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


@pytest.mark.parametrize("command,family", [("scheduler", "scheduler_pending_pods"),
                                            ("controller-manager", "workqueue_depth")])
def test_standalone_secure_port(cluster: Cluster, command: str, family: str) -> None:
    """system:monitoring (certificate or token) reads /metrics; others are refused as upstream."""
    identity = client_kubeconfig(cluster, "system:kube-scheduler" if command == "scheduler"
                                 else "system:kube-controller-manager", [] if command == "scheduler"
                                 else ["system:masters"], f"prom-{command}")
    port = _free_port()
    extra = ["--controllers", "ttl"] if command == "controller-manager" else []
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", command, "--kubeconfig", identity,
                             "--leader-elect=false", "--secure-port", str(port), "--bind-address", "127.0.0.1",
                             *extra], cwd=str(REPO), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"https://127.0.0.1:{port}"
        anon = _client_ctx(None)

        def healthy() -> bool:
            try:
                return _get(url + "/healthz", anon)[0] == 200  # always allowed, as upstream
            except OSError:
                assert proc.poll() is None, proc.stdout.read() if proc.stdout else ""
                return False

        wait_for(healthy, what=f"{command}'s secure port")
        status, body = _get(url + "/metrics", anon)
        assert status == 403
        assert json.loads(body)["message"] == 'forbidden: User "system:anonymous" cannot get path "/metrics"'
        mon = client_kubeconfig(cluster, "prom-scraper", ["system:monitoring"], "prom-mon-cert")
        status, body = _get(url + "/metrics", _client_ctx(mon))
        assert status == 200, body
        assert family in {f.name for f in text_string_to_metric_families(body)}
        assert value(body, "process_resident_memory_bytes") > 0
        assert value(body, "rest_client_requests_total", code="200", method="GET") >= 1
        plain = client_kubeconfig(cluster, "prom-bob", ["devs"], "prom-bob")
        status, body = _get(url + "/metrics", _client_ctx(plain))
        assert status == 403 and json.loads(body)["message"] == 'forbidden: User "prom-bob" cannot get path "/metrics"'
        assert _get(url + "/metrics", anon, token="not-a-token")[0] == 401
        ns = f"prom-{command}"
        cluster.kubectl("create", "namespace", ns)
        cluster.kubectl("create", "serviceaccount", "scraper", "-n", ns)
        cluster.kubectl("create", "clusterrolebinding", f"{ns}-scraper", "--clusterrole=system:monitoring",
                        f"--serviceaccount={ns}:scraper")
        token = cluster.kubectl("create", "token", "scraper", "-n", ns).stdout.strip()
        status, body = _get(url + "/metrics", anon, token=token)
        assert status == 200 and family in body
    finally:
        proc.terminate()
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
    assert not os.path.exists(os.path.join(cluster.data_dir, "tls.key"))


def test_server_children_serve_their_secure_ports(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`pyk8s server`'s scheduler (and --controller-manager-process's manager) child serves /metrics on
    127.0.0.1:--scheduler-secure-port / --controller-manager-secure-port, with the same delegated auth."""
    sport, cport = _free_port(), _free_port()
    c = Cluster(str(tmp_path_factory.mktemp("prom-children")),
                extra_args=["--controller-manager-process", "--scheduler-secure-port", str(sport),
                            "--controller-manager-secure-port", str(cport)])
    c.start()
    try:
        c.kubectl("create", "-f", "-", input=json.dumps({"apiVersion": "v1", "kind": "List", "items": [
            node("prom-c1"), pod("child-fits", "100m")]}))
        mon = _client_ctx(client_kubeconfig(c, "prom-scraper", ["system:monitoring"], "prom-child-mon"))
        anon = _client_ctx(None)
        for port, family in ((sport, "scheduler_schedule_attempts_total"), (cport, "workqueue_adds_total")):
            url = f"https://127.0.0.1:{port}/metrics"

            def scraped(url: str = url, family: str = family) -> str | None:
                try:
                    status, body = _get(url, mon)
                except OSError:
                    return None
                return body if status == 200 and family in body else None

            body = wait_for(scraped, what=f"{family} on 127.0.0.1:{port}")
            assert {f.name for f in text_string_to_metric_families(body)} >= {"process_resident_memory_bytes"}
            assert _get(url, anon)[0] == 403
        sched = wait_for(lambda: value(_get(f"https://127.0.0.1:{sport}/metrics", mon)[1],
                                       "scheduler_schedule_attempts_total", result="scheduled") >= 1,
                         what="the pod counted as scheduled")
        assert sched
    finally:
        c.stop()
