"""The metrics server's cost per scraped kubelet: parsing /metrics/resource of a node with 30 pods.

Anchor: prometheus_client's text parser on the same page, measured in the same run; and the
budget that keeps a thousand nodes at the default 15 s resolution under 5 % of one core
(750 us a node).
"""

from __future__ import annotations

import time

from .report import row


def _page(pods: int = 30) -> str:
    from pyk8s.kubelet.stats.resource_metrics import families, render

    ts = "2026-01-01T00:00:00Z"
    summary = {"node": {"nodeName": "n", "cpu": {"time": ts, "usageCoreNanoSeconds": 10 ** 12},
                        "memory": {"time": ts, "workingSetBytes": 2 ** 30}},
               "pods": [{"podRef": {"name": f"pod-{i}", "namespace": "default", "uid": str(i)},
                         "startTime": ts,
                         "cpu": {"time": ts, "usageCoreNanoSeconds": 10 ** 9 * i},
                         "memory": {"time": ts, "workingSetBytes": 10 ** 7},
                         "containers": [{"name": "c", "startTime": ts,
                                         "cpu": {"time": ts, "usageCoreNanoSeconds": 10 ** 9 * i},
                                         "memory": {"time": ts, "workingSetBytes": 10 ** 7}}]}
                        for i in range(pods)]}
    return render(families(summary)).decode()


def _per_call(fn, n: int) -> float:  # type: ignore[no-untyped-def]
    fn()
    t = time.perf_counter()
    for _ in range(n):
        fn()
    return (time.perf_counter() - t) / n * 1e6


def main() -> None:
    from prometheus_client.parser import text_string_to_metric_families

    from pyk8s.metricsserver.storage import parse_resource_metrics

    page = _page()
    ours = _per_call(lambda: parse_resource_metrics(page, 0.0), 300)
    lib = _per_call(lambda: [s for f in text_string_to_metric_families(page) for s in f.samples], 100)
    row("parse /metrics/resource, 30 pods", ours, "us", lib, "prometheus_client parser", higher_is_better=False)
    row("parse /metrics/resource, 30 pods (budget)", ours, "us", 750, "5% core / 1000 nodes / 15 s",
        higher_is_better=False)
