"""A Deployment of 20 busybox replicas on a real node: controllers, scheduler and kubelet together, then a rollout."""

from __future__ import annotations

import ipaddress
import re
import time

import pytest

from tests.e2e.kubelet_harness import IMAGE, Env, all_started, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-kubelet-deployment"), pytest.mark.timeout(240)]

IMAGE2 = "busybox:e2e2"
REPLICAS = 20

DEPLOYMENT = f"""apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: {REPLICAS}
  selector:
    matchLabels: {{app: web}}
  strategy:
    rollingUpdate: {{maxSurge: 25%, maxUnavailable: 25%}}
  template:
    metadata:
      labels: {{app: web}}
    spec:
      terminationGracePeriodSeconds: 5
      containers:
      - name: c
        image: {IMAGE}
        imagePullPolicy: IfNotPresent
        command: ["sh", "-c", "trap 'exit 0' TERM; echo up; while true; do sleep 0.5; done"]
"""


@pytest.fixture(scope="module")
def env(tmp_path_factory):
    requirements()
    e = Env(str(tmp_path_factory.mktemp("kubelet-deploy")))
    try:
        e.start(images=(IMAGE, IMAGE2))
        yield e
    finally:
        e.stop()


def _web_pods(env):
    return env.pods(selector="app%3Dweb")


def test_deployment_runs_and_rolls(env):
    t0 = time.monotonic()
    env.kubectl("apply", "-f", "-", input=DEPLOYMENT)
    env.wait(lambda: len([p for p in _web_pods(env) if all_started(p)]) == REPLICAS, 120, "20 replicas running", 0.5)
    print(f"\n{REPLICAS} replicas running after {time.monotonic() - t0:.1f}s")
    cidr = ipaddress.ip_network(env.node_obj()["spec"]["podCIDR"])
    out = env.kubectl("get", "pods", "-o", "wide")
    lines = out.splitlines()
    assert re.split(r"\s{2,}", lines[0].strip()) == ["NAME", "READY", "STATUS", "RESTARTS", "AGE", "IP", "NODE",
                                                    "NOMINATED NODE", "READINESS GATES"]
    rows = [line.split() for line in lines[1:]]
    assert len(rows) == REPLICAS
    ips = set()
    for r in rows:
        assert re.fullmatch(r"web-[a-z0-9]+-[a-z0-9]{5}", r[0]), r
        assert r[1:4] == ["1/1", "Running", "0"] and r[6] == env.node and r[7:] == ["<none>", "<none>"], r
        assert ipaddress.ip_address(r[5]) in cidr
        ips.add(r[5])
    assert len(ips) == REPLICAS
    # roll to a new image: every pod is replaced, the old ones terminate gracefully
    t0 = time.monotonic()
    env.kubectl("set", "image", "deployment/web", f"c={IMAGE2}")
    env.kubectl("rollout", "status", "deployment/web", "--timeout=150s", timeout=160)

    def rolled() -> bool:
        pods = _web_pods(env)
        return len(pods) == REPLICAS and all(
            all_started(p) and p["spec"]["containers"][0]["image"] == IMAGE2 for p in pods)

    env.wait(rolled, 60, "rollout finished", 0.5)
    print(f"rollout took {time.monotonic() - t0:.1f}s")
    statuses = [p["status"]["containerStatuses"][0] for p in _web_pods(env)]
    assert {s["image"] for s in statuses} == {"docker.io/library/busybox:e2e2"}
    d = env.get("/apis/apps/v1/namespaces/default/deployments/web")
    assert d["status"]["readyReplicas"] == REPLICAS and d["status"]["updatedReplicas"] == REPLICAS
