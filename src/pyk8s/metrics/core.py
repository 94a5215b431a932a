"""The pieces every component's metrics share: a cheap histogram, registries, exposition."""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Sequence

from prometheus_client import CollectorRegistry, GCCollector, PlatformCollector, ProcessCollector
from prometheus_client.exposition import choose_encoder
from prometheus_client.metrics_core import HistogramMetricFamily

__all__ = ["Hist", "component_registry", "exposition", "histogram_family", "exponential", "linear"]


def exponential(start: float, factor: float, count: int) -> tuple[float, ...]:
    """upstream's prometheus.ExponentialBuckets."""
    return tuple(start * factor ** i for i in range(count))


def linear(start: float, width: float, count: int) -> tuple[float, ...]:
    """upstream's prometheus.LinearBuckets."""
    return tuple(start + width * i for i in range(count))


class Hist:
    """One histogram child: per-bucket counts (not cumulative) and the sum, cumulated on scrape.

    observe() is a bisect and two additions: cheaper than the client library's Histogram
    (a lock and a loop over the buckets) on paths that run for every request."""

    __slots__ = ("bounds", "counts", "total")

    def __init__(self, bounds: tuple[float, ...]) -> None:
        self.bounds = bounds
        self.counts = [0] * (len(bounds) + 1)  # the last: above every bound (+Inf only)
        self.total = 0.0

    def observe(self, v: float) -> None:
        self.counts[bisect_left(self.bounds, v)] += 1
        self.total += v

    def cumulative(self) -> list[tuple[str, float]]:
        out: list[tuple[str, float]] = []
        acc = 0
        for b, c in zip(self.bounds, self.counts, strict=False):
            acc += c
            out.append((_bound(b), acc))
        out.append(("+Inf", acc + self.counts[-1]))
        return out


def _bound(b: float) -> str:
    return repr(float(b)) if b != int(b) or abs(b) >= 1e15 else f"{float(b)}"


def histogram_family(name: str, doc: str, labels: Sequence[str],
                     children: Iterable[tuple[Sequence[str], Hist]]) -> HistogramMetricFamily:
    fam = HistogramMetricFamily(name, doc, labels=list(labels))
    for values, h in children:
        fam.add_metric(list(values), h.cumulative(), h.total)
    return fam


def component_registry(process: bool = True) -> CollectorRegistry:
    """A registry of its own with process_* (resident memory, cpu seconds, open fds, start time),
    python_gc_* and python_info, as upstream's binaries add process_* and go_* (Go's runtime
    metrics have no Python counterpart: python_gc_* stand in for go_gc_*)."""
    reg = CollectorRegistry(auto_describe=False)
    if process:
        ProcessCollector(registry=reg)
        GCCollector(registry=reg)
        PlatformCollector(registry=reg)
    return reg


def exposition(registry: CollectorRegistry, accept: str = "") -> tuple[bytes, str]:
    """The registry in the format the Accept header asks for (text 0.0.4 or OpenMetrics)."""
    encoder, content_type = choose_encoder(accept or "")
    return encoder(registry), content_type
