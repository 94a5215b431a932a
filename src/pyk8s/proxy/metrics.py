"""kube-proxy's kubeproxy_* families (upstream's pkg/proxy/metrics names and buckets).

sync_proxy_rules_duration_seconds and last_timestamp_seconds per applied nftables transaction;
network_programming_duration_seconds from the EndpointSlice's
endpoints.kubernetes.io/last-change-trigger-time (stamped by the EndpointSlice controller when a
pod or Service changed) to the sync that programmed it, as upstream measures it."""

from __future__ import annotations

import datetime as dt
import time
from collections.abc import Iterable, Iterator
from typing import Any

from prometheus_client.metrics_core import GaugeMetricFamily, Metric

from ..metrics.core import Hist, exponential, histogram_family, linear

__all__ = ["ProxyMetrics"]

TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
SYNC_BUCKETS = exponential(0.001, 2, 15)
PROGRAMMING_BUCKETS = (*linear(0.25, 0.25, 2), *linear(1, 1, 59), *linear(60, 5, 12), *linear(120, 30, 7))


class ProxyMetrics:
    def __init__(self) -> None:
        self.sync = Hist(SYNC_BUCKETS)
        self.last_sync = 0.0
        self.programming = Hist(PROGRAMMING_BUCKETS)
        self._triggers: dict[str, float] = {}  # service key -> earliest unprogrammed trigger time

    def slice_changed(self, key: str, eps: dict[str, Any]) -> None:
        stamp = ((eps.get("metadata") or {}).get("annotations") or {}).get(TRIGGER_TIME)
        if not stamp:
            return
        try:
            t = dt.datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
        except ValueError:
            return
        old = self._triggers.get(key)
        self._triggers[key] = t if old is None else min(old, t)

    def synced(self, keys: Iterable[str], seconds: float) -> None:
        now = time.time()
        self.sync.observe(seconds)
        self.last_sync = now
        for k in keys:
            t = self._triggers.pop(k, None)
            if t is not None:
                self.programming.observe(max(0.0, now - t))

    def collect(self) -> Iterator[Metric]:
        yield histogram_family("kubeproxy_sync_proxy_rules_duration_seconds", "SyncProxyRules latency in seconds",
                               (), [((), self.sync)])
        g = GaugeMetricFamily("kubeproxy_sync_proxy_rules_last_timestamp_seconds", "The last time proxy rules "
                              "were successfully synced")
        g.add_metric([], self.last_sync)
        yield g
        yield histogram_family("kubeproxy_network_programming_duration_seconds", "In Cluster Network Programming "
                               "Latency in seconds", (), [((), self.programming)])
