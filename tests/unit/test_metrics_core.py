"""metrics/core.py's histogram and the bucket helpers, against upstream's definitions."""

from __future__ import annotations

from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from pyk8s.metrics.core import Hist, exponential, histogram_family, linear
from pyk8s.metrics.serve import parse_bind_address


def test_buckets_are_upstreams() -> None:
    assert exponential(0.001, 2, 4) == (0.001, 0.002, 0.004, 0.008)
    assert linear(0.25, 0.25, 2) == (0.25, 0.5)


def test_hist_is_cumulative_with_le_inclusive_bounds() -> None:
    """Prometheus' le: an observation equal to a bound falls in that bound's bucket."""
    h = Hist((0.005, 0.025, 1.0))
    for v in (0.001, 0.005, 0.0051, 0.025, 2.0, 1e9):
        h.observe(v)
    assert h.cumulative() == [("0.005", 2), ("0.025", 4), ("1.0", 4), ("+Inf", 6)]
    assert h.total == 0.001 + 0.005 + 0.0051 + 0.025 + 2.0 + 1e9


def test_histogram_family_renders_and_parses() -> None:
    h = Hist((0.1, 1.0))
    h.observe(0.5)

    class C:
        def collect(self):  # type: ignore[no-untyped-def]
            yield histogram_family("x_seconds", "doc", ("verb",), [(("GET",), h)])

    reg = CollectorRegistry()
    reg.register(C())  # type: ignore[arg-type]
    fam = next(iter(text_string_to_metric_families(generate_latest(reg).decode())))
    got = {(s.name, s.labels.get("le")): s.value for s in fam.samples}
    assert got[("x_seconds_bucket", "0.1")] == 0 and got[("x_seconds_bucket", "1.0")] == 1
    assert got[("x_seconds_count", None)] == 1 and got[("x_seconds_sum", None)] == 0.5


def test_metrics_bind_address() -> None:
    assert parse_bind_address("127.0.0.1:10249", 10249) == ("127.0.0.1", 10249)
    assert parse_bind_address("[::1]:9000", 10249) == ("::1", 9000)
    assert parse_bind_address("0.0.0.0:0", 10249) == ("0.0.0.0", 0)
