"""`pyk8s server --v N` logs as upstream's components do with klog: a header per line, and what each level shows.

v=0: startup (API server listening, controllers started) and warnings, no requests;
v=2: per-object actions (the events controllers record);
v=3: one httplog line per request: verb, URI, latency, user agent, audit ID, source, status.
"""

from __future__ import annotations

import re
import time

import pytest

from tests.cluster import Cluster

pytestmark = pytest.mark.timeout(120)

HEADER = r"^[IWEF]\d{4} \d\d:\d\d:\d\d\.\d{6} +\d+ \w+ [\w.]+\.py:\d+\] "


def _wait_for(cluster: Cluster, pattern: str, timeout: float = 20) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for line in list(cluster.output):
            if re.search(pattern, line):
                return line
        time.sleep(0.1)
    raise AssertionError(f"no line matching {pattern!r} in:\n" + "".join(cluster.output[-40:]))


@pytest.fixture
def server(tmp_path, request):
    c = Cluster(str(tmp_path / "data"), extra_args=["--v", str(request.param)])
    c.start()
    try:
        yield c
    finally:
        c.stop()


@pytest.mark.parametrize("server", [0], indirect=True)
def test_v0_startup_lines_and_no_requests(server):
    _wait_for(server, HEADER + r"API server listening on https://")
    _wait_for(server, HEADER + r"Started \d+ controllers: .*deployment")
    server.kubectl("get", "pods")
    server.kubectl("create", "deployment", "web", "--image=busybox:1.35")
    time.sleep(1.5)
    text = "".join(server.output)
    assert '"HTTP" verb=' not in text and '"Event occurred"' not in text


@pytest.mark.parametrize("server", [2], indirect=True)
def test_v2_logs_controller_actions(server):
    server.kubectl("create", "deployment", "web", "--image=busybox:1.35")
    _wait_for(server, HEADER + r'"Event occurred" source="deployment-controller" object="default/web" '
                                r'kind="Deployment" type="Normal" reason="ScalingReplicaSet" '
                                r'message="Scaled up replica set web-\w+ from 0 to 1"')
    assert '"HTTP" verb=' not in "".join(server.output)


@pytest.mark.parametrize("server", [3], indirect=True)
def test_v3_logs_every_request_as_httplog(server):
    server.kubectl("get", "pods", version="1.33")
    line = _wait_for(server, HEADER + r'"HTTP" verb="LIST" URI="/api/v1/namespaces/default/pods\?limit=500"')
    m = re.search(r'latency="([\d.]+)(µs|ms|s)" userAgent="(kubectl[^"]*)" audit-ID="([0-9a-f-]{36})" '
                  r'srcIP="127\.0\.0\.1:\d+" resp=200$', line.strip())
    assert m, line
    assert "/v1.33." in m.group(3)  # kubectl names itself after its binary: kubectl.1.33/v1.33.1 ...
    server.kubectl("get", "pod", "nope", check=False)
    _wait_for(server, r'"HTTP" verb="GET" URI="/api/v1/namespaces/default/pods/nope" .* resp=404')
    server.kubectl("create", "configmap", "c", "--from-literal=a=1")
    _wait_for(server, r'"HTTP" verb="POST" URI="/api/v1/namespaces/default/configmaps\?fieldManager=kubectl-create'
                      r'&fieldValidation=Strict" .* resp=201')
