"""bench/api's admission phase: what a typical admission set costs on pod creates.

One server, two namespaces: `plain` (no LimitRange, no Pod Security labels) and `guarded` (a
LimitRange with Container defaults, min, max and a ratio, plus a Pod Security Pod limit, the
namespace labelled enforce/audit/warn=restricted, and one ValidatingAdmissionPolicy bound to it:
`object.spec.containers.all(c, has(c.resources))`). The same restricted-compliant pod, stating no
resources (so LimitRanger defaults them), is created in both, in alternating rounds so the shared
machine's load drifts over both alike. Reported: server CPU per create in each and their ratio
(guarded / plain), and the create rates. (No webhook is in the set yet.)
Run alone: `python -m bench api_admission` (BENCH_ADMISSION_PODS per namespace, default 2000).
"""

from __future__ import annotations

import asyncio
import os
import tempfile
import time
from collections.abc import Iterator
from typing import Any

import orjson

from .report import row, warm_up

N_PODS = int(os.environ.get("BENCH_ADMISSION_PODS", "2000"))
ROUND = 250
CONCURRENCY = 32

# the typical set's CEL policy: every container states resources (LimitRanger's defaults satisfy it)
CEL_POLICY = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicy",
              "metadata": {"name": "resources-stated"},
              "spec": {"failurePolicy": "Fail", "matchConstraints": {"resourceRules": [
                  {"apiGroups": [""], "apiVersions": ["v1"], "operations": ["CREATE", "UPDATE"],
                   "resources": ["pods"]}]},
                  "validations": [{"expression": "object.spec.containers.all(c, has(c.resources))",
                                   "message": "every container must state its resources"}]}}
CEL_BINDING = {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingAdmissionPolicyBinding",
               "metadata": {"name": "resources-stated"},
               "spec": {"policyName": "resources-stated", "validationActions": ["Deny"],
                        "matchResources": {"namespaceSelector": {"matchLabels": {"bench": "guarded"}}}}}
LIMIT_RANGE = {"metadata": {"name": "limits"}, "spec": {"limits": [
    {"type": "Container", "max": {"cpu": "1", "memory": "1Gi"}, "min": {"cpu": "1m", "memory": "1Mi"},
     "default": {"cpu": "100m", "memory": "64Mi"}, "defaultRequest": {"cpu": "10m", "memory": "16Mi"},
     "maxLimitRequestRatio": {"cpu": "20"}},
    {"type": "Pod", "max": {"cpu": "2", "memory": "2Gi"}}]}}
RESTRICTED_LABELS = {f"pod-security.kubernetes.io/{m}": "restricted" for m in ("enforce", "audit", "warn")}
RESTRICTED_LABELS["bench"] = "guarded"  # selects the CEL policy's binding


def pod(name: str) -> bytes:
    return orjson.dumps({"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"app": "bench"}},
                         "spec": {"securityContext": {"runAsNonRoot": True, "seccompProfile": {"type": "RuntimeDefault"}},
                                  "containers": [{"name": "c", "image": "busybox:1.36", "securityContext": {
                                      "allowPrivilegeEscalation": False, "capabilities": {"drop": ["ALL"]}}}]}})


async def _creator(pool: Any, url_pods: str, bodies: Iterator[bytes]) -> None:
    for b in bodies:
        status, reply = await pool.request("POST", url_pods, b, "application/json", 60)
        assert status == 201, reply


async def run(url: str, ssl_ctx: object, server_pid: int) -> None:
    from pyk8s.client.http1 import ConnectionPool

    from .api import tree_cpu_seconds

    pool = ConnectionPool(url, ssl_ctx, {"Accept": "application/json"}, CONCURRENCY)  # type: ignore[arg-type]
    ct = "application/json"
    for ns, labels in (("plain", {}), ("guarded", RESTRICTED_LABELS)):
        st, body = await pool.request("POST", "/api/v1/namespaces",
                                      orjson.dumps({"metadata": {"name": ns, "labels": labels}}), ct, 60)
        assert st == 201, body
        st, body = await pool.request("POST", f"/api/v1/namespaces/{ns}/serviceaccounts",
                                      orjson.dumps({"metadata": {"name": "default"}}), ct, 60)
        assert st == 201, body
    st, body = await pool.request("POST", "/api/v1/namespaces/guarded/limitranges", orjson.dumps(LIMIT_RANGE), ct, 60)
    assert st == 201, body
    vap = "/apis/admissionregistration.k8s.io/v1/"
    for path, doc in (("validatingadmissionpolicies", CEL_POLICY), ("validatingadmissionpolicybindings", CEL_BINDING)):
        st, body = await pool.request("POST", vap + path, orjson.dumps(doc), ct, 60)
        assert st == 201, body
    await warm_up(pool, CONCURRENCY)
    cpu = {"plain": 0.0, "guarded": 0.0}
    wall = {"plain": 0.0, "guarded": 0.0}
    for start in range(0, N_PODS, ROUND):
        for ns in ("plain", "guarded") if (start // ROUND) % 2 == 0 else ("guarded", "plain"):
            bodies = iter([pod(f"p{i:05d}") for i in range(start, min(start + ROUND, N_PODS))])
            c0, t0 = tree_cpu_seconds(server_pid), time.perf_counter()
            await asyncio.gather(*(_creator(pool, f"/api/v1/namespaces/{ns}/pods", bodies)
                                   for _ in range(CONCURRENCY)))
            wall[ns] += time.perf_counter() - t0
            cpu[ns] += tree_cpu_seconds(server_pid) - c0
    # the guarded pods really went through both plug-ins
    st, body = await pool.request("GET", "/api/v1/namespaces/guarded/pods/p00000", None, None, 60)
    assert b"kubernetes.io/limit-ranger" in body, body[:300]
    pool.close()
    plain_us, guarded_us = cpu["plain"] / N_PODS * 1e6, cpu["guarded"] / N_PODS * 1e6
    row(f"pod creates without admission set ({N_PODS})", N_PODS / wall["plain"], "/s")
    row("pod creates with LimitRange + restricted + CEL policy", N_PODS / wall["guarded"], "/s", N_PODS / wall["plain"],
        "same run without")
    row("server CPU per create, without", plain_us, "us")
    row("server CPU per create, with", guarded_us, "us", plain_us, "without", higher_is_better=False)
    row("admission cost ratio (CPU with / without)", guarded_us / plain_us if plain_us else float("nan"), "x")


def main() -> None:
    import sys

    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    from pyk8s.client.kubeconfig import load_kubeconfig

    print("  -- admission phase: LimitRanger + PodSecurity restricted + one CEL policy vs none, one server process")
    c = Cluster(tempfile.mkdtemp(prefix="pyk8s-bench-adm-"),
                extra_args=["--disable", "scheduler", "--disable", "controller-manager", "--disable", "dns"]).start()
    try:
        assert c.proc is not None
        asyncio.run(run(c.url, load_kubeconfig(c.kubeconfig).ssl_client_context(), c.proc.pid))
    finally:
        c.stop()


if __name__ == "__main__":
    main()
