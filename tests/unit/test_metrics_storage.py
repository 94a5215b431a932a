"""metrics-server's storage semantics: rates between two scrapes, restarts, missing containers.

Upstream: metrics-server pkg/storage (node and pod storage): a point is served once two
readings exist; CPU is the counter's rate over their timestamps; a reset or a restart starts
over; a pod with a container lacking a rate is not reported.
"""

from __future__ import annotations

from pyk8s.metricsserver.api import cpu_quantity, go_duration, memory_quantity
from pyk8s.metricsserver.storage import MetricsStorage, NodeBatch, parse_resource_metrics

T0 = 1_700_000_000.0


def _text(t: float, node_cpu: float, containers: dict[tuple[str, str, str], tuple[float, float, float]]) -> str:
    ms = int(t * 1000)
    lines = ["# TYPE node_cpu_usage_seconds_total counter", f"node_cpu_usage_seconds_total {node_cpu} {ms}",
             "# TYPE node_memory_working_set_bytes gauge", f"node_memory_working_set_bytes 1.073741824e+09 {ms}",
             "# TYPE container_cpu_usage_seconds_total counter"]
    for (ns, pod, c), (cpu, _, _) in containers.items():
        lines.append(f'container_cpu_usage_seconds_total{{container="{c}",namespace="{ns}",pod="{pod}"}} {cpu} {ms}')
    lines.append("# TYPE container_memory_working_set_bytes gauge")
    for (ns, pod, c), (_, mem, _) in containers.items():
        lines.append(f'container_memory_working_set_bytes{{container="{c}",namespace="{ns}",pod="{pod}"}} {mem} {ms}')
    lines.append("# TYPE container_start_time_seconds gauge")
    for (ns, pod, c), (_, _, start) in containers.items():
        lines.append(f'container_start_time_seconds{{container="{c}",namespace="{ns}",pod="{pod}"}} {start} {ms}')
    return "\n".join(lines) + "\n"


def _scrape(s: MetricsStorage, t: float, node_cpu: float,
            containers: dict[tuple[str, str, str], tuple[float, float, float]]) -> None:
    s.store({"n1": parse_resource_metrics(_text(t, node_cpu, containers), t)})


def test_rate_needs_two_points_and_uses_the_samples_timestamps() -> None:
    s = MetricsStorage()
    c = {("default", "web", "app"): (10.0, 2 * 1024 * 1024, T0 - 100)}
    _scrape(s, T0, 100.0, c)
    assert s.node("n1") is None and s.pods() == {}
    _scrape(s, T0 + 15, 103.0, {("default", "web", "app"): (11.5, 3 * 1024 * 1024, T0 - 100)})
    n = s.node("n1")
    assert n is not None and n.cpu_nanocores == 200_000_000 and n.window == 15 and n.timestamp == T0 + 15
    u = s.pods()[("default", "web")]["app"]
    assert u.cpu_nanocores == 100_000_000 and u.memory_bytes == 3 * 1024 * 1024


def test_restart_and_counter_reset_start_over() -> None:
    s = MetricsStorage()
    _scrape(s, T0, 100.0, {("d", "p", "c"): (50.0, 1.0, T0 - 100)})
    _scrape(s, T0 + 15, 90.0, {("d", "p", "c"): (1.0, 1.0, T0 + 10)})  # node counter reset; container restarted
    assert s.node("n1") is None
    assert s.pods() == {}
    _scrape(s, T0 + 30, 91.5, {("d", "p", "c"): (2.5, 1.0, T0 + 10)})
    assert s.node("n1").cpu_nanocores == 100_000_000  # type: ignore[union-attr]
    assert s.pods()[("d", "p")]["c"].cpu_nanocores == 100_000_000


def test_pod_with_a_container_without_rate_is_dropped() -> None:
    s = MetricsStorage()
    _scrape(s, T0, 1.0, {("d", "p", "a"): (1.0, 1.0, T0 - 100)})
    _scrape(s, T0 + 15, 2.0, {("d", "p", "a"): (2.0, 1.0, T0 - 100), ("d", "p", "b"): (1.0, 1.0, T0 + 5)})
    assert ("d", "p") not in s.pods()  # b has one point only


def test_same_timestamp_keeps_the_earlier_point() -> None:
    """A kubelet answering from its cache (same timestamp) must not erase the rate."""
    s = MetricsStorage()
    _scrape(s, T0, 100.0, {})
    _scrape(s, T0 + 10, 101.0, {})
    _scrape(s, T0 + 10, 101.0, {})
    assert s.node("n1").cpu_nanocores == 100_000_000  # type: ignore[union-attr]


def test_nodes_missing_from_a_round_are_forgotten() -> None:
    s = MetricsStorage()
    _scrape(s, T0, 1.0, {})
    _scrape(s, T0 + 1, 2.0, {})
    assert set(s.nodes()) == {"n1"}
    s.store({"n2": NodeBatch()})
    assert s.nodes() == {}


def test_container_missing_memory_is_no_point() -> None:
    text = ('container_cpu_usage_seconds_total{container="c",namespace="d",pod="p"} 1 1700000000000\n'
            "node_cpu_usage_seconds_total 1 1700000000000\n")
    b = parse_resource_metrics(text, T0)
    assert b.pods == {} and b.node is None  # node without its memory reading either


def test_wire_formats() -> None:
    assert go_duration(15.012) == "15.012s" and go_duration(90) == "1m30s" and go_duration(0.25) == "250ms"
    assert cpu_quantity(123_456_789) == "123456789n" and cpu_quantity(2_000_000) == "2m"
    assert memory_quantity(256 * 1024 * 1024) == "256Mi" and memory_quantity(1000) == "1000"


def test_line_parser_agrees_with_prometheus_client() -> None:
    """The fast sample-line parser reads what prometheus_client reads, escapes and missing timestamps included."""
    from prometheus_client.parser import text_string_to_metric_families

    from pyk8s.metricsserver.storage import _samples

    text = ('# HELP container_cpu_usage_seconds_total [STABLE] x\n# TYPE container_cpu_usage_seconds_total counter\n'
            'container_cpu_usage_seconds_total{container="a",namespace="d",pod="p q"} 1.5e+00 1700000000123\n'
            'container_cpu_usage_seconds_total{container="we\\"ird",namespace="d",pod="p"} 2 1700000000000\n'
            'container_memory_working_set_bytes{container="a",namespace="d",pod="p q"} 4096\n'
            'pod_cpu_usage_seconds_total{namespace="d",pod="p"} 9 1700000000123\n'
            'node_cpu_usage_seconds_total 7 1700000000500\n')
    ours = sorted((n, tuple(sorted(lbl.items())), v, ts) for n, lbl, v, ts in _samples(text, 42.0))
    lib = sorted((s.name, tuple(sorted(s.labels.items())), s.value,
                  float(s.timestamp) if s.timestamp is not None else 42.0)
                 for f in text_string_to_metric_families(text) for s in f.samples if not s.name.startswith("pod_"))
    assert ours == lib
    assert ("container_cpu_usage_seconds_total", (("container", 'we"ird'), ("namespace", "d"), ("pod", "p")), 2.0,
            1_700_000_000.0) in ours
