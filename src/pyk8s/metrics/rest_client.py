"""client-go's rest_client_* families for a component's API clients (client/rest.py)."""

from __future__ import annotations

from collections.abc import Iterator
from urllib.parse import urlsplit

from prometheus_client.metrics_core import CounterMetricFamily, Metric

from .core import Hist, histogram_family

__all__ = ["RestClientMetrics"]

DURATION_BUCKETS = (0.005, 0.025, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 15.0, 30.0, 60.0)  # client-go's


class RestClientMetrics:
    def __init__(self) -> None:
        self.requests: dict[tuple[str, str, str], int] = {}  # (code, host, method)
        self.durations: dict[tuple[str, str], Hist] = {}  # (host, verb)
        self._hosts: dict[str, str] = {}

    def host(self, server: str) -> str:
        h = self._hosts.get(server)
        if h is None:
            h = self._hosts[server] = urlsplit(server).netloc
        return h

    def observe(self, server: str, method: str, code: int, seconds: float) -> None:
        host = self.host(server)
        k = (str(code), host, method)
        self.requests[k] = self.requests.get(k, 0) + 1
        dk = (host, method)
        h = self.durations.get(dk)
        if h is None:
            h = self.durations[dk] = Hist(DURATION_BUCKETS)
        h.observe(seconds)

    def collect(self) -> Iterator[Metric]:
        c = CounterMetricFamily("rest_client_requests", "Number of HTTP requests, partitioned by status code, "
                                "method, and host.", labels=["code", "host", "method"])
        for k, n in list(self.requests.items()):
            c.add_metric(list(k), n)
        yield c
        yield histogram_family("rest_client_request_duration_seconds", "Request latency in seconds. Broken down "
                               "by verb, and host.", ("host", "verb"), list(self.durations.items()))
