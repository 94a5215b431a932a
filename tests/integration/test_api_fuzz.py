"""The API fuzzed from its own OpenAPI document: no input gets a server error.

schemathesis generates requests for each operation of /openapi/v2, both ones that fit the
schema and ones that break it (wrong types, missing fields, odd strings, bad query values),
and every answer must be below 500: bad input is the client's error (a 4xx Status), and a 5xx
is a bug. The seed is fixed (Hypothesis' derandomize), so a run sends the same requests each
time and a failure reproduces; the budget is bounded for CI:

  PYK8S_FUZZ_EXAMPLES  examples per operation and generation mode (default 2)
  PYK8S_FUZZ_SECONDS   wall-clock budget for the whole run (default 60)
  PYK8S_FUZZ_ALL=1     every operation, not only the core paths below
  PYK8S_FUZZ_DUMP      a file the requests that got no answer are appended to, whole

Left out: streaming and connection-taking operations (watch paths, log, exec, attach,
port-forward, proxy), which need a kubelet or a backend and stream their answers; a
query's watch=true is kept, with timeoutSeconds=1 so the stream ends.
"""

from __future__ import annotations

import os
import time
from typing import Any

import pytest

from tests.cluster import raw_request

schemathesis = pytest.importorskip("schemathesis")
requests = pytest.importorskip("requests")

CORE = (
    "/api/v1/namespaces/{namespace}/configmaps", "/api/v1/namespaces/{namespace}/secrets",
    "/api/v1/namespaces/{namespace}/pods", "/api/v1/namespaces/{namespace}/services",
    "/api/v1/namespaces/{namespace}/serviceaccounts", "/api/v1/namespaces/{namespace}/bindings",
    "/api/v1/namespaces/{namespace}/events", "/api/v1/namespaces/{name}", "/api/v1/nodes",
    "/apis/apps/v1/namespaces/{namespace}/deployments", "/apis/batch/v1/namespaces/{namespace}/jobs",
    "/apis/rbac.authorization.k8s.io/v1/namespaces/{namespace}/roles",
    "/apis/coordination.k8s.io/v1/namespaces/{namespace}/leases",
    "/apis/policy/v1/namespaces/{namespace}/poddisruptionbudgets",
    "/apis/fuzz.example.com/v1/",  # the custom resource below
)
# a custom resource with a structural schema, a preserved-unknown-fields part, status and scale
CRD = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
       "metadata": {"name": "widgets.fuzz.example.com"},
       "spec": {"group": "fuzz.example.com", "scope": "Namespaced",
                "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                "versions": [{"name": "v1", "served": True, "storage": True,
                              "subresources": {"status": {}, "scale": {"specReplicasPath": ".spec.replicas",
                                                                       "statusReplicasPath": ".status.replicas"}},
                              "schema": {"openAPIV3Schema": {"type": "object", "properties": {
                                  "spec": {"type": "object", "properties": {
                                      "replicas": {"type": "integer", "minimum": 0},
                                      "name": {"type": "string", "maxLength": 10},
                                      "items": {"type": "array", "x-kubernetes-list-type": "map",
                                                "x-kubernetes-list-map-keys": ["k"],
                                                "items": {"type": "object", "required": ["k"],
                                                          "properties": {"k": {"type": "string"}}}},
                                      "free": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}},
                                  "status": {"type": "object", "properties": {"replicas": {"type": "integer"}}}}}}}]}}
SKIP = ("/watch/", "/log", "/exec", "/attach", "/portforward", "/proxy")


def _selected(path: str) -> bool:
    if any(s in path for s in SKIP):
        return False
    return os.environ.get("PYK8S_FUZZ_ALL") == "1" or path.startswith(CORE) or path == "/api/v1/namespaces"


def _session(cluster: Any) -> Any:
    """A requests session with the admin client certificate, through the kubeconfig's TLS context."""
    from requests.adapters import HTTPAdapter

    from pyk8s.client.kubeconfig import load_kubeconfig

    ctx = load_kubeconfig(cluster.kubeconfig).ssl_client_context()

    class Adapter(HTTPAdapter):
        def init_poolmanager(self, *args: Any, **kwargs: Any) -> Any:
            kwargs["ssl_context"] = ctx
            return super().init_poolmanager(*args, **kwargs)

        def cert_verify(self, conn: Any, url: str, verify: Any, cert: Any) -> None:
            pass  # the context verifies against the cluster's CA

    s = requests.Session()
    s.mount("https://", Adapter())
    return s


EXAMPLES = int(os.environ.get("PYK8S_FUZZ_EXAMPLES", "2"))
BUDGET = float(os.environ.get("PYK8S_FUZZ_SECONDS", "60"))


@pytest.mark.slow
@pytest.mark.timeout(int(BUDGET) + 240)  # the budget, the server's start and the last operation's examples
def test_fuzzing_the_api_finds_no_server_error(cluster, monkeypatch):
    import http.client

    from hypothesis import HealthCheck, Phase, given, settings

    # as upstream, an answer may carry up to 4096 runes of warnings: more than http.client's 100 headers
    monkeypatch.setattr(http.client, "_MAXHEADERS", 1000)
    examples, budget = EXAMPLES, BUDGET
    r = raw_request(cluster, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", CRD)
    assert r.status in (201, 409), r.body
    until = time.monotonic() + 30
    while b"fuzz.example.com" not in raw_request(cluster, "GET", "/openapi/v2").body:
        assert time.monotonic() < until, "the custom resource is not in /openapi/v2"
        time.sleep(0.2)
    doc = raw_request(cluster, "GET", "/openapi/v2").json()
    schema = schemathesis.openapi.from_dict(doc)
    ops = [r.ok() for r in schema.get_all_operations()]
    ops = sorted((op for op in ops if _selected(op.path)), key=lambda op: (op.path, op.method))
    assert ops, "no operation selected"
    session = _session(cluster)
    failures: list[str] = []
    sent = 0
    deadline = time.monotonic() + budget
    done = 0
    modes = (schemathesis.GenerationMode.POSITIVE, schemathesis.GenerationMode.NEGATIVE)
    for op in ops:
        if time.monotonic() > deadline:
            break
        for mode in modes:
            @given(case=op.as_strategy(generation_mode=mode))
            @settings(max_examples=examples, derandomize=True, database=None, deadline=None,
                      phases=[Phase.explicit, Phase.generate], suppress_health_check=list(HealthCheck))
            def send(case: Any) -> None:
                nonlocal sent
                if case.query and "watch" in case.query:
                    case.query["timeoutSeconds"] = 1  # a watch ends, whatever else the query says
                try:
                    r = case.call(base_url=cluster.url, session=session, timeout=60)
                except requests.exceptions.RequestException as e:
                    failures.append(f"{e!r}\n  {case.as_curl_command()}")
                    dump = os.environ.get("PYK8S_FUZZ_DUMP")
                    if dump:  # the whole request, to replay it (curl lines are long)
                        with open(dump, "a") as f:
                            f.write(repr((case.method, case.formatted_path, case.query, case.headers, case.body)) + "\n")
                    return
                sent += 1
                if r.status_code >= 500:
                    failures.append(f"{r.status_code} {r.text[:300]}\n  {case.as_curl_command()}")

            send()
        done += 1
    print(f"fuzzed {done} of {len(ops)} operations with {sent} requests")
    assert not failures, f"{len(failures)} server errors:\n" + "\n".join(failures[:20])
    assert done >= min(len(ops), 20), "the budget ran out before 20 operations: too slow to mean anything"
