"""The built-in metrics server behind v1beta1.metrics.k8s.io, and `kubectl top` on it.

Simulated nodes (`pyk8s sim --kubelet-port 0`) serve /metrics/resource with their pods'
declared usage; the metrics server scrapes them (every second here: `--metric-resolution 1s`,
a user flag) and serves NodeMetrics and PodMetrics through the aggregator. kubectl's tables
are upstream's, with the numbers the pods declared. Attackers: a client certificate that is
not the front proxy's sending X-Remote-* headers straight to the metrics server, and a user
without RBAC for pods.metrics.k8s.io, are refused.
"""

from __future__ import annotations

import json
import os
import re
import ssl
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import Cluster, client_kubeconfig, raw_request, scratch_dir
from tests.sim_nodes import sim_nodes

pytestmark = pytest.mark.xdist_group("metrics-server")

NS = "top"


def _wait(fn: Any, timeout: float = 40.0) -> Any:
    deadline = time.monotonic() + timeout
    last: Any = None
    while time.monotonic() < deadline:
        last = fn()
        if last:
            return last
        time.sleep(0.2)
    raise AssertionError(f"timed out; last: {last!r}")


@pytest.fixture(scope="module")
def ms(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-metrics")), extra_args=["--metric-resolution", "1s"]).start()
    try:
        with sim_nodes(c, 2, "top-node-", cpu="4", memory="8Gi"):
            c.kubectl("create", "namespace", NS)
            pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {
                "name": "burner", "namespace": NS, "labels": {"app": "burner"},
                "annotations": {"sim.pyk8s.io/cpu-usage": "500m", "sim.pyk8s.io/memory-usage": "256Mi"}},
                "spec": {"containers": [{"name": "main", "image": "busybox"}]}}
            c.kubectl("apply", "-f", "-", input=json.dumps(pod))
            idle = {**pod, "metadata": {**pod["metadata"], "name": "idle", "labels": {"app": "idle"},
                                        "annotations": {"sim.pyk8s.io/cpu-usage": "20m",
                                                        "sim.pyk8s.io/memory-usage": "32Mi"}},
                    "spec": {"containers": [{"name": "a", "image": "busybox"}, {"name": "b", "image": "busybox"}]}}
            c.kubectl("apply", "-f", "-", input=json.dumps(idle))
            yield c
    finally:
        c.stop()


def _top(c: Cluster, *args: str) -> list[list[str]]:
    r = c.kubectl("top", *args, check=False)
    if r.returncode != 0:
        return []
    return [line.split() for line in r.stdout.splitlines()]


def test_metrics_api_registered_and_available(ms: Cluster) -> None:
    def passed() -> dict[str, Any] | None:
        r = ms.kubectl("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json", check=False)
        conds = (json.loads(r.stdout).get("status") or {}).get("conditions") or [] if r.returncode == 0 else []
        return next((x for x in conds if x["reason"] == "Passed"), None)

    cond = _wait(passed)
    assert cond["status"] == "True"
    spec = json.loads(ms.kubectl("get", "apiservice", "v1beta1.metrics.k8s.io", "-o", "json").stdout)["spec"]
    assert spec["service"] == {"namespace": "kube-system", "name": "metrics-server", "port": 443}
    assert spec["caBundle"] and not spec.get("insecureSkipTLSVerify")
    out = ms.kubectl("api-resources", "--api-group=metrics.k8s.io").stdout
    assert re.search(r"^nodes\s+metrics.k8s.io/v1beta1\s+false\s+NodeMetrics", out, re.M), out
    assert re.search(r"^pods\s+metrics.k8s.io/v1beta1\s+true\s+PodMetrics", out, re.M), out
    # upstream's roles: readers aggregated into view
    view = ms.kubectl("auth", "can-i", "list", "pods.metrics.k8s.io", "--as=system:serviceaccount:top:default",
                      "-n", NS, check=False)
    assert view.stdout.strip() == "no"
    ms.kubectl("create", "rolebinding", "viewers", "-n", NS, "--clusterrole=view",
               "--serviceaccount=top:default")
    assert ms.kubectl("auth", "can-i", "list", "pods.metrics.k8s.io", "--as=system:serviceaccount:top:default",
                      "-n", NS).stdout.strip() == "yes"


def test_kubectl_top_nodes(ms: Cluster) -> None:
    def measured() -> list[list[str]]:
        # kubectl lists a node the metrics server has not yet got two samples of as <unknown>;
        # each simulated node joins (and is first scraped) at its own moment
        rows = _top(ms, "nodes")
        names = {r[0] for r in rows[1:] if len(r) == 5 and r[1] != "<unknown>"}
        return rows if {"top-node-0", "top-node-1"} <= names else []

    rows = _wait(measured)
    assert rows[0] == ["NAME", "CPU(cores)", "CPU(%)", "MEMORY(bytes)", "MEMORY(%)"]
    body = {r[0]: r for r in rows[1:]}
    assert {"top-node-0", "top-node-1"} <= set(body)
    for name in ("top-node-0", "top-node-1"):
        cpu, pct, mem, mpct = body[name][1:]
        assert re.fullmatch(r"\d+m", cpu) and re.fullmatch(r"\d+%", pct), body[name]
        assert re.fullmatch(r"\d+Mi", mem) and re.fullmatch(r"\d+%", mpct), body[name]
        assert int(cpu[:-1]) > 0
    nm = json.loads(ms.kubectl("get", "--raw", "/apis/metrics.k8s.io/v1beta1/nodes/top-node-0").stdout)
    assert nm["kind"] == "NodeMetrics" and nm["metadata"]["name"] == "top-node-0"
    assert re.fullmatch(r"[\d.]+m?s", nm["window"]) and nm["timestamp"].endswith("Z")
    r = ms.kubectl("top", "node", "no-such-node", check=False)
    assert 'nodemetrics.metrics.k8s.io "no-such-node" not found' in r.stderr


def test_kubectl_top_pods_containers_and_numbers(ms: Cluster) -> None:
    rows = _wait(lambda: len(_top(ms, "pods", "-n", NS)) == 3 and _top(ms, "pods", "-n", NS))
    assert rows[0] == ["NAME", "CPU(cores)", "MEMORY(bytes)"]
    body = {r[0]: r[1:] for r in rows[1:]}
    # the declared usage: a rate between two scrapes of an integrated counter. The kubelet's
    # /metrics/resource stamps samples to the second (its Summary's precision), so over a 1 s
    # resolution the window it reports can be off by up to a second: within a factor of two
    assert 250 <= int(body["burner"][0][:-1]) <= 1000 and body["burner"][1] == "256Mi"
    assert 10 <= int(body["idle"][0][:-1]) <= 40 and body["idle"][1] == "32Mi"
    assert int(body["burner"][0][:-1]) > int(body["idle"][0][:-1])
    rows = _top(ms, "pods", "-A", "--containers")
    assert rows[0] == ["NAMESPACE", "POD", "NAME", "CPU(cores)", "MEMORY(bytes)"]
    mine = sorted((r[1], r[2]) for r in rows[1:] if r[0] == NS)
    assert mine == [("burner", "main"), ("idle", "a"), ("idle", "b")]
    by_cpu = [r[0] for r in _top(ms, "pods", "-n", NS, "--sort-by=cpu")[1:]]
    assert by_cpu == ["burner", "idle"]
    assert [r[0] for r in _top(ms, "pods", "-n", NS, "-l", "app=idle")[1:]] == ["idle"]
    pm = json.loads(ms.kubectl("get", "--raw", f"/apis/metrics.k8s.io/v1beta1/namespaces/{NS}/pods?fieldSelector="
                                               "metadata.name%3Dburner").stdout)
    assert [i["metadata"]["name"] for i in pm["items"]] == ["burner"]
    assert pm["items"][0]["metadata"]["labels"] == {"app": "burner"}
    r = ms.kubectl("top", "pod", "nope", "-n", NS, check=False)
    assert f'podmetrics.metrics.k8s.io "{NS}/nope" not found' in r.stderr


def test_pods_without_metrics_yet(ms: Cluster) -> None:
    """A pod no kubelet runs has no metrics: kubectl says so, as against upstream's metrics-server."""
    ms.kubectl("create", "namespace", "fresh")
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "pending", "namespace": "fresh"},
           "spec": {"nodeSelector": {"no": "such-node"}, "containers": [{"name": "c", "image": "busybox"}]}}
    ms.kubectl("apply", "-f", "-", input=json.dumps(pod))
    r = ms.kubectl("top", "pods", "-n", "fresh", check=False)
    assert r.returncode != 0 and "error: metrics not available yet" in r.stderr, r.stderr
    ms.kubectl("create", "namespace", "empty")
    r = ms.kubectl("top", "pods", "-n", "empty", check=False)
    assert "No resources found in empty namespace." in r.stdout + r.stderr


def test_user_without_rbac_refused(ms: Cluster) -> None:
    conf = client_kubeconfig(ms, "eve", [], "eve")
    r = ms.kubectl("--kubeconfig", conf, "top", "pods", "-n", NS, check=False)
    assert r.returncode != 0
    assert 'User "eve" cannot list resource "pods" in API group "metrics.k8s.io" in the namespace "top"' in r.stderr


def _metrics_server_address(c: Cluster) -> tuple[str, int]:
    sl = raw_request(c, "GET", "/apis/discovery.k8s.io/v1/namespaces/kube-system/endpointslices/metrics-server").json()
    return sl["endpoints"][0]["addresses"][0], sl["ports"][0]["port"]


def _direct(c: Cluster, cert: tuple[bytes, bytes] | None, headers: dict[str, str]) -> tuple[int, str]:
    """A request straight to the metrics server, as an attacker on the network would send it."""
    host, port = _metrics_server_address(c)
    ctx = ssl.create_default_context(cafile=os.path.join(c.data_dir, "pki", "ca.crt"))
    ctx.check_hostname = False
    d = scratch_dir("aggr-ms-")
    if cert is not None:
        crt, key = os.path.join(d, "c.crt"), os.path.join(d, "c.key")
        for p, data in ((crt, cert[0]), (key, cert[1])):
            with open(p, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(crt, key)
    req = urllib.request.Request(f"https://{host}:{port}/apis/metrics.k8s.io/v1beta1/nodes", headers=headers)
    try:
        with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())["message"]  # a Status


def test_metrics_server_trusts_identity_headers_only_from_front_proxy(ms: Cluster) -> None:
    from cryptography import x509
    from cryptography.hazmat.primitives import serialization

    from pyk8s.pki import issue_client_cert

    _wait(lambda: _top(ms, "nodes"))
    forged = {"X-Remote-User": "admin", "X-Remote-Group": "system:masters"}
    pki = os.path.join(ms.data_dir, "pki")
    # a cluster-CA client certificate named like the front proxy: the headers mean nothing on it
    with open(os.path.join(pki, "ca.crt"), "rb") as f:
        ca_cert = x509.load_pem_x509_certificate(f.read())
    with open(os.path.join(pki, "ca.key"), "rb") as f:
        ca_key = serialization.load_pem_private_key(f.read(), None)
    import types

    cert = issue_client_cert(types.SimpleNamespace(ca_cert=ca_cert, ca_key=ca_key), "front-proxy-client", [])  # type: ignore[arg-type]
    status, body = _direct(ms, cert, forged)
    assert status == 403, body
    assert 'User "front-proxy-client" cannot list resource "nodes"' in body
    # no certificate at all: anonymous, whatever the headers say
    status, body = _direct(ms, None, forged)
    assert status == 403 and 'User "system:anonymous"' in body, body
    # the real front proxy's certificate: its headers are believed
    with open(os.path.join(pki, "front-proxy-client.crt"), "rb") as f1, \
            open(os.path.join(pki, "front-proxy-client.key"), "rb") as f2:
        front = (f1.read(), f2.read())
    status, body = _direct(ms, front, forged)
    assert status == 200 and json.loads(body)["kind"] == "NodeMetricsList", body
    # ... and its user goes through SubjectAccessReview like anyone else
    status, body = _direct(ms, front, {"X-Remote-User": "eve"})
    assert status == 403 and 'User "eve" cannot list resource "nodes"' in body, body


def test_top_without_metrics_api() -> None:
    d = scratch_dir("pyk8s-nometrics-")
    c = Cluster(d, extra_args=["--disable", "metrics-server"]).start()
    try:
        r = c.kubectl("top", "pods", check=False)
        assert r.returncode != 0 and "error: Metrics API not available" in r.stderr, r.stderr
    finally:
        c.stop()


def test_standalone_metrics_server(ms: Cluster) -> None:
    """`pyk8s metrics-server` with the ServiceAccount's credentials, as upstream's runs in its pod."""
    from tests.https_app import host_ip as _host_ip

    conf = client_kubeconfig(ms, "system:serviceaccount:kube-system:metrics-server",
                             ["system:serviceaccounts", "system:serviceaccounts:kube-system"], "ms-standalone")
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "metrics-server", "--kubeconfig", conf,
                             "--bind-address", _host_ip(), "--secure-port", "0", "--metric-resolution", "1s",
                             "--kubelet-insecure-tls"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    try:
        assert proc.stdout is not None
        line = ""
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and "serving metrics.k8s.io" not in line:
            line = proc.stdout.readline()
            assert line or proc.poll() is None, "pyk8s metrics-server exited"
        port = int(line.rsplit(" ", 1)[1])
        pki = os.path.join(ms.data_dir, "pki")
        with open(os.path.join(pki, "front-proxy-client.crt"), "rb") as f1, \
                open(os.path.join(pki, "front-proxy-client.key"), "rb") as f2:
            front = (f1.read(), f2.read())
        ctx = ssl.create_default_context()
        ctx.check_hostname = False
        ctx.verify_mode = ssl.CERT_NONE  # its self-signed serving certificate, as upstream's
        d = scratch_dir("aggr-ms-")
        crt, key = os.path.join(d, "c.crt"), os.path.join(d, "c.key")
        for p, data in ((crt, front[0]), (key, front[1])):
            with open(p, "wb") as f:
                f.write(data)
        ctx.load_cert_chain(crt, key)

        def nodes() -> list[str]:
            req = urllib.request.Request(f"https://{_host_ip()}:{port}/apis/metrics.k8s.io/v1beta1/nodes",
                                         headers={"X-Remote-User": "admin", "X-Remote-Group": "system:masters"})
            with urllib.request.urlopen(req, context=ctx, timeout=10) as r:
                return sorted(i["metadata"]["name"] for i in json.loads(r.read())["items"])

        assert {"top-node-0", "top-node-1"} <= set(_wait(nodes))
    finally:
        proc.terminate()
        proc.wait(20)


def test_in_process_components_read_the_metrics_api(tmp_path: Any) -> None:
    """The controllers in `pyk8s server`'s process (the HPA controller) reach metrics.k8s.io over the
    loopback (apiserver/loopback.py), through the same aggregator and metrics server."""
    import asyncio
    import types

    from pyk8s.apiserver.server import APIServer, ServerConfig
    from pyk8s.cluster import component_client
    from pyk8s.metricsserver.embedded import EmbeddedMetricsServer

    async def main() -> None:
        server = APIServer(ServerConfig(data_dir=str(tmp_path), port=0))
        await server.start()
        ms = EmbeddedMetricsServer(server, types.SimpleNamespace(metric_resolution=1.0), component_client)
        client = component_client(server, "system:kube-controller-manager", ["system:masters"], "test/loopback")
        try:
            await asyncio.wait_for(ms.ready.wait(), 30)
            deadline = asyncio.get_running_loop().time() + 30
            while True:
                svc = await client.get(("apiregistration.k8s.io", "v1", "apiservices"), "v1beta1.metrics.k8s.io")
                if any(c["reason"] == "Passed" for c in (svc.get("status") or {}).get("conditions") or []):
                    break
                assert asyncio.get_running_loop().time() < deadline, svc.get("status")
                await asyncio.sleep(0.2)
            out = await client.list(("metrics.k8s.io", "v1beta1", "pods"), "default")
            assert out["kind"] == "PodMetricsList" and out["items"] == []
            nobody = component_client(server, "someone", [], "test/loopback")
            try:
                await nobody.list(("metrics.k8s.io", "v1beta1", "nodes"))
                raise AssertionError("someone listed node metrics")
            except Exception as e:  # noqa: BLE001 - the client's StatusError
                assert getattr(e, "code", None) == 403, e
            finally:
                await nobody.close()
        finally:
            await client.close()
            await ms.stop()
            await server.stop()

    asyncio.run(main())
