"""The HPA on real containers: busybox CPU burners under runc behind a Deployment with an HPA at 50% of
their cpu request. The kubelet's /metrics/resource (cgroups) feeds the built-in metrics server
(`--metric-resolution 1s`), the HPA controller (`--horizontal-pod-autoscaler-sync-period 1s`) scales out
to maxReplicas while they burn, and back in once they idle, after the HPA's own 5 s
`behavior.scaleDown.stabilizationWindowSeconds` (upstream's flags and fields; no test-only switch)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.kubelet_harness import IMAGE, Env, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("runc-hpa"), pytest.mark.timeout(300)]

BURN_SECONDS = 30  # each replica burns this long from its start, then idles


@pytest.fixture(scope="module")
def env(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Env]:
    requirements()
    e = Env(str(tmp_path_factory.mktemp("hpa-runc")))
    e.cluster.extra_args += ["--metric-resolution", "1s", "--horizontal-pod-autoscaler-sync-period", "1s"]
    try:
        e.start()
        yield e
    finally:
        e.stop()


def _get(e: Env, *args: str) -> Any:
    return json.loads(e.kubectl("get", *args, "-o", "json"))


def test_cpu_burners_scale_out_and_back_in(env: Env) -> None:
    script = (f"trap 'exit 0' TERM; end=$(( $(date +%s) + {BURN_SECONDS} )); "
              "while [ $(date +%s) -lt $end ]; do :; done; while true; do sleep 1; done")
    deployment = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "burner"},
                  "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "burner"}},
                           "template": {"metadata": {"labels": {"app": "burner"}},
                                        "spec": {"terminationGracePeriodSeconds": 2, "containers": [{
                                            "name": "burn", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                            "command": ["sh", "-c", script],
                                            "resources": {"requests": {"cpu": "100m"}}}]}}}}
    env.kubectl("apply", "-f", "-", input=json.dumps(deployment))
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "burner"},
           "spec": {"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "burner"},
                    "minReplicas": 1, "maxReplicas": 3,
                    "metrics": [{"type": "Resource", "resource": {"name": "cpu", "target": {
                        "type": "Utilization", "averageUtilization": 50}}}],
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 5}}}}
    env.kubectl("apply", "-f", "-", input=json.dumps(hpa))

    # one busy core against a 100m request: far above 50%, so out to maxReplicas
    try:
        env.wait(lambda: _get(env, "deployment", "burner")["spec"]["replicas"] == 3, 90, "scale out to 3")
    except AssertionError:
        print(env.kubectl("describe", "hpa", "burner"), env.kubectl("get", "pods", "-o", "wide"))
        raise
    scaled_out = time.monotonic()
    status = _get(env, "hpa", "burner")["status"]
    current = next(m for m in status["currentMetrics"] if m.get("type") == "Resource")["resource"]["current"]
    assert current["averageUtilization"] > 100, current
    events = json.loads(env.kubectl("get", "events", "--field-selector",
                                    "involvedObject.name=burner,reason=SuccessfulRescale", "-o", "json"))["items"]
    assert any(e["message"].endswith("reason: cpu resource utilization (percentage of request) above target")
               for e in events), [e["message"] for e in events]

    # once the last replicas idle: back to 1, not before the 5 s window of higher recommendations
    env.wait(lambda: _get(env, "deployment", "burner")["spec"]["replicas"] == 1, BURN_SECONDS + 120, "scale in to 1")
    assert time.monotonic() >= scaled_out + 5
    events = json.loads(env.kubectl("get", "events", "--field-selector",
                                    "involvedObject.name=burner,reason=SuccessfulRescale", "-o", "json"))["items"]
    assert any(e["message"] == "New size: 1; reason: All metrics below target" for e in events)
