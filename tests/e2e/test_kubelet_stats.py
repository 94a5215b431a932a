"""The kubelet's stats on its port with a real runc pod: `/stats/summary`, `/metrics/resource` and
`/metrics/cadvisor` against what the pod's cgroup says, through the API server's node proxy (kubectl get
--raw) and directly, and who may read them: certificates of the cluster CA, bearer tokens checked by a
TokenReview, a SubjectAccessReview on nodes/stats, nodes/metrics or nodes/proxy, nobody else."""

from __future__ import annotations

import datetime as dt
import glob
import http.client
import json
import os
import ssl
import time
from typing import Any

import pytest
from prometheus_client.parser import text_string_to_metric_families

from tests.client_certs import cert_files
from tests.cluster import client_kubeconfig
from tests.e2e.kubelet_harness import Env, busybox_pod, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-stats"), pytest.mark.timeout(300)]

BURNER = "burner"
PORT = 0  # the kubelet's free port, set by the env fixture


@pytest.fixture(scope="module")
def env(request, tmp_path_factory):
    requirements()
    global PORT
    e = Env(str(tmp_path_factory.mktemp("kstats")))
    request.addfinalizer(e.stop)
    e.start()
    PORT = e.agent.port or 0
    pod = busybox_pod(BURNER, "while :; do :; done")
    pod["spec"]["containers"][0]["resources"] = {"requests": {"cpu": "100m", "memory": "16Mi"},
                                                 "limits": {"cpu": "300m", "memory": "64Mi"}}
    e.create(pod)
    e.wait_running(BURNER, 60)
    # identities: one that may read stats only, one that may read metrics only, one whose account is gone
    for name in ("stats-reader", "metrics-reader", "nobody", "ghost"):
        e.api("POST", "/api/v1/namespaces/default/serviceaccounts", {"metadata": {"name": name}})
    for name, sub in (("stats-reader", "nodes/stats"), ("metrics-reader", "nodes/metrics")):
        e.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles", {
            "metadata": {"name": f"kstats-{name}"},
            "rules": [{"apiGroups": [""], "resources": [sub], "verbs": ["get"]}]})
        e.api("POST", "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings", {
            "metadata": {"name": f"kstats-{name}"},
            "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": f"kstats-{name}"},
            "subjects": [{"kind": "ServiceAccount", "name": name, "namespace": "default"}]})
    return e


def _token(env: Env, sa: str) -> str:
    out = env.api("POST", f"/api/v1/namespaces/default/serviceaccounts/{sa}/token",
                  {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}})
    return str(out["status"]["token"])


def _kubelet(path: str, *, method: str = "GET", token: str | None = None, cert: tuple[str, str] | None = None
             ) -> tuple[int, bytes]:
    ctx = ssl.create_default_context()
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE  # the kubelet's self-signed serving cert, as the API server takes it
    if cert:
        ctx.load_cert_chain(*cert)
    conn = http.client.HTTPSConnection("127.0.0.1", PORT, context=ctx, timeout=30)
    try:
        conn.request(method, path, headers={"Authorization": f"Bearer {token}"} if token else {})
        r = conn.getresponse()
        return r.status, r.read()
    finally:
        conn.close()


def _cgroup(env: Env, ctrl: str) -> str:
    pod = env.pod(BURNER)
    assert pod is not None
    cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("runc://")
    (path,) = glob.glob(f"/sys/fs/cgroup/{ctrl}/kubepods/**/pod{pod['metadata']['uid']}/{cid}", recursive=True)
    return path


def _read_int(path: str) -> int:
    with open(path) as f:
        return int(f.read())


def _working_set(env: Env) -> int:
    d = _cgroup(env, "memory")
    usage = _read_int(os.path.join(d, "memory.usage_in_bytes"))
    with open(os.path.join(d, "memory.stat")) as f:
        stat = dict(line.split() for line in f)
    return usage - int(stat["total_inactive_file"])


def _raw(env: Env, path: str) -> str:
    try:
        return env.kubectl("get", "--raw", f"/api/v1/nodes/{env.node}/proxy{path}")
    except AssertionError as e:  # say what the kubelet said (e.g. that its port was taken)
        raise AssertionError(f"{e}\nagent log tail:\n{''.join(env.agent.output[-30:])}") from None


def _burner(summary: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    (pod,) = [p for p in summary["pods"] if p["podRef"]["name"] == BURNER]
    (c,) = pod["containers"]
    return pod, c


def test_summary_through_the_node_proxy_matches_the_cgroup(env):
    cpuacct = os.path.join(_cgroup(env, "cpuacct"), "cpuacct.usage")
    # the rate needs two samples: housekeeping's and this scrape's, or two scrapes a second apart
    env.wait(lambda: "usageNanoCores" in _burner(json.loads(_raw(env, "/stats/summary")))[1]["cpu"], 30,
             "a CPU rate for the burner")

    def fresh() -> tuple[float, int, dict[str, Any]] | None:
        """A scrape that read the cgroup anew (a sample under a second old is served again): its counter lies
        between our readings before and after it."""
        t, before = time.time(), _read_int(cpuacct)
        summary = json.loads(_raw(env, "/stats/summary"))
        c = _burner(summary)[1]
        return (t, before, summary) if before <= c["cpu"]["usageCoreNanoSeconds"] <= _read_int(cpuacct) else None

    t0, c0, _ = env.wait(fresh, 10, "a scrape that samples the cgroup", 0.3)
    env.wait(lambda: time.time() - t0 >= 3, 5, "a 3 s window", 0.1)
    t1, c1, summary = env.wait(fresh, 10, "a second scrape that samples the cgroup", 0.3)
    pod, c = _burner(summary)
    want = (c1 - c0) / (t1 - t0)
    assert want > 50_000_000, want  # it burns (its limit is 300m)
    assert abs(c["cpu"]["usageNanoCores"] - want) <= 0.1 * want, (c["cpu"], want)
    ws = _working_set(env)
    assert abs(c["memory"]["workingSetBytes"] - ws) <= 0.1 * ws, (c["memory"], ws)
    assert c["memory"]["availableBytes"] == 64 * 1024 * 1024 - c["memory"]["workingSetBytes"]
    # the rest of upstream's shape: the node, the pod's own cgroup, its network namespace, its filesystems
    node = summary["node"]
    assert node["nodeName"] == env.node and node["cpu"]["usageCoreNanoSeconds"] > 0
    assert node["memory"]["workingSetBytes"] > 0 and node["fs"]["capacityBytes"] > 0
    assert "imageFs" in node["runtime"] and node["rlimit"]["maxpid"] > 0
    assert {s["name"] for s in node["systemContainers"]} >= {"pods"}
    assert pod["podRef"]["uid"] == env.pod(BURNER)["metadata"]["uid"]
    assert pod["cpu"]["usageCoreNanoSeconds"] >= c["cpu"]["usageCoreNanoSeconds"]
    assert pod["network"]["name"] == "eth0" and pod["network"]["interfaces"][0]["name"] == "eth0"
    assert pod["process_stats"]["process_count"] >= 1
    assert c["logs"]["capacityBytes"] > 0 and "ephemeral-storage" in pod
    only = json.loads(_raw(env, "/stats/summary?only_cpu_and_memory=true"))
    assert "network" not in _burner(only)[0] and "fs" not in only["node"]


def test_resource_metrics_through_the_node_proxy(env):
    text = _raw(env, "/metrics/resource")
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    (cpu,) = [s for s in fams["container_cpu_usage_seconds"].samples if s.labels.get("pod") == BURNER]
    assert cpu.labels == {"container": "c", "namespace": "default", "pod": BURNER} and cpu.value > 0
    assert cpu.timestamp is not None and abs(float(cpu.timestamp) - time.time()) < 60  # ms on the wire
    assert [s for s in fams["pod_memory_working_set_bytes"].samples if s.labels == {"namespace": "default",
                                                                                      "pod": BURNER}]
    assert fams["node_cpu_usage_seconds"].samples[0].value > 0
    assert fams["resource_scrape_error"].samples[0].value == 0
    (start,) = [s for s in fams["container_start_time_seconds"].samples if s.labels.get("pod") == BURNER]
    assert 0 < time.time() - start.value < 600


def test_cadvisor_metrics(env, tmp_path):
    cert = cert_files(client_kubeconfig(env.cluster, "kstats-admin", ["system:masters"], "kstats-admin"),
                       str(tmp_path))
    status, body = _kubelet("/metrics/cadvisor", cert=cert)
    assert status == 200, body[:300]
    fams = {f.name: f for f in text_string_to_metric_families(body.decode())}
    (ws,) = [s for s in fams["container_memory_working_set_bytes"].samples if s.labels.get("container") == "c"
             and s.labels.get("pod") == BURNER]
    pod = env.pod(BURNER)
    cid = pod["status"]["containerStatuses"][0]["containerID"].removeprefix("runc://")
    assert ws.labels["name"] == cid and ws.labels["id"].endswith(f"/pod{pod['metadata']['uid']}/{cid}")
    assert ws.labels["namespace"] == "default" and ws.labels["image"]
    for name in ("container_cpu_usage_seconds", "container_memory_usage_bytes", "container_memory_rss"):
        assert [s for s in fams[name].samples if s.labels.get("name") == cid], name
    rx = [s for s in fams["container_network_receive_bytes"].samples if s.labels.get("pod") == BURNER]
    assert rx and rx[0].labels["interface"] == "eth0"
    # the machine itself is the cgroup "/"
    assert [s for s in fams["container_cpu_usage_seconds"].samples if s.labels.get("id") == "/"]


def test_anonymous_is_refused(env):
    for path in ("/stats/summary", "/metrics/resource", "/metrics/cadvisor", "/containerLogs/default/burner/c"):
        status, body = _kubelet(path)
        assert (status, body) == (401, b"Unauthorized\n"), path
    status, _ = _kubelet("/stats/summary", token="not-a-token")
    assert status == 401


def test_service_account_without_the_subresource_is_forbidden(env):
    status, body = _kubelet("/stats/summary", token=_token(env, "nobody"))
    assert status == 403
    assert body.decode() == ("Forbidden (user=system:serviceaccount:default:nobody, verb=get, resource=nodes, "
                             "subresource(s)=[stats])\n")


def test_token_of_a_deleted_service_account_is_unauthorized(env):
    token = _token(env, "ghost")
    env.api("DELETE", "/api/v1/namespaces/default/serviceaccounts/ghost")
    env.wait(lambda: env.get("/api/v1/namespaces/default/serviceaccounts/ghost") is None, 10, "ghost deleted")
    assert _kubelet("/stats/summary", token=token)[0] == 401


def test_each_path_needs_its_own_subresource(env):
    stats = _token(env, "stats-reader")
    status, body = _kubelet("/stats/summary", token=stats)
    assert status == 200 and json.loads(body)["node"]["nodeName"] == env.node
    status, body = _kubelet("/metrics/resource", token=stats)
    assert status == 403 and b"subresource(s)=[metrics]" in body
    # nodes/stats is no way into a container: exec is nodes/proxy
    status, body = _kubelet(f"/exec/default/{BURNER}/c?command=id&stdout=1", method="POST", token=stats)
    assert status == 403
    assert body == (b"Forbidden (user=system:serviceaccount:default:stats-reader, verb=create, resource=nodes, "
                    b"subresource(s)=[proxy])\n")
    assert _kubelet(f"/containerLogs/default/{BURNER}/c", token=stats)[0] == 403
    # a path that starts as stats but climbs out of it is judged as stats and routed as written: nowhere
    for sneaky in (f"/stats/../exec/default/{BURNER}/c?command=id&stdout=1",
                   f"/stats/%2E%2E/exec/default/{BURNER}/c?command=id&stdout=1",
                   f"/stats%2F..%2Fexec/default/{BURNER}/c?command=id&stdout=1"):
        assert _kubelet(sneaky, token=stats)[0] == 404, sneaky  # (exec answers GET too)
    metrics = _token(env, "metrics-reader")
    status, body = _kubelet("/metrics/resource", token=metrics)
    assert status == 200 and b"container_cpu_usage_seconds_total" in body
    assert _kubelet("/stats/summary", token=metrics)[0] == 403


def test_client_certificate_of_another_ca_is_refused(env, tmp_path):
    from pyk8s.pki import certificate_pem, issue_leaf, new_ca, new_ec_key, private_key_pem, x509_name

    ca_cert, ca_key = new_ca("not-the-cluster-ca", dt.timedelta(hours=1))
    key = new_ec_key()
    cert = issue_leaf(ca_cert, ca_key, x509_name("mallory", ["system:masters"]), key, server=False)
    crt, kf = str(tmp_path / "m.crt"), str(tmp_path / "m.key")
    with open(crt, "wb") as f:
        f.write(certificate_pem(cert))
    with open(kf, "wb") as f:
        f.write(private_key_pem(key))
    try:
        status, _ = _kubelet("/stats/summary", cert=(crt, kf))
    except (ssl.SSLError, ConnectionError):
        return  # the handshake refused it
    assert status == 401
