"""Pure logic of the kubelet's stats: cgroup v1/v2 parsing on fixture trees, CPU rates, the resource metrics
text, the kubelet port's path -> nodes subresource mapping, and the simulated usage model."""

from __future__ import annotations

import os

import pytest
from prometheus_client.parser import text_string_to_metric_families

from pyk8s.kubelet.auth import request_attributes
from pyk8s.kubelet.stats import cgroups as C
from pyk8s.kubelet.stats import resource_metrics
from pyk8s.kubelet.stats.rates import RateCache
from pyk8s.sim.usage import UsageModel, declared

POD = "kubepods/burstable/podabc/0123cid"


def _write(path: str, text: str) -> None:
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def _v1_tree(root: str, usage: int = 50 << 20, inactive: int = 8 << 20, limit: int = 9223372036854771712) -> None:
    _write(f"{root}/cpuacct/{POD}/cpuacct.usage", "123456789\n")
    _write(f"{root}/memory/{POD}/memory.usage_in_bytes", f"{usage}\n")
    _write(f"{root}/memory/{POD}/memory.limit_in_bytes", f"{limit}\n")
    # the non-hierarchical keys come first and must not be taken for the total_* ones
    _write(f"{root}/memory/{POD}/memory.stat", f"inactive_file 1\nrss 2\ntotal_rss {30 << 20}\n"
           f"total_inactive_file {inactive}\ntotal_pgfault 77\ntotal_pgmajfault 3\n")
    _write(f"{root}/pids/{POD}/pids.current", "4\n")


def test_v1_cgroup_reading(tmp_path):
    root = str(tmp_path)
    _v1_tree(root)
    s = C.read_cgroup(POD, 100.0, root)
    assert s is not None and not C.is_v2(root)
    assert (s.cpu_ns, s.memory_usage, s.working_set, s.rss) == (123456789, 50 << 20, 42 << 20, 30 << 20)
    assert (s.page_faults, s.major_page_faults, s.pids, s.memory_limit) == (77, 3, 4, 0)  # v1's "no limit" is 0
    assert C.read_cgroup("kubepods/gone", 100.0, root) is None


def test_v1_working_set_never_negative_and_limit(tmp_path):
    root = str(tmp_path)
    _v1_tree(root, usage=1 << 20, inactive=5 << 20, limit=256 << 20)
    s = C.read_cgroup(POD, 1.0, root)
    assert s is not None and s.working_set == 0 and s.memory_limit == 256 << 20


def test_v2_cgroup_reading(tmp_path):
    root = str(tmp_path)
    _write(f"{root}/cgroup.controllers", "cpu memory pids\n")
    _write(f"{root}/{POD}/cpu.stat", "usage_usec 2500\nuser_usec 2000\nsystem_usec 500\n")
    _write(f"{root}/{POD}/memory.current", f"{20 << 20}\n")
    _write(f"{root}/{POD}/memory.max", "max\n")
    _write(f"{root}/{POD}/memory.stat", f"anon {12 << 20}\nfile 8\nactive_file 1\ninactive_file {3 << 20}\n"
           "pgfault 11\npgmajfault 2\n")
    _write(f"{root}/{POD}/pids.current", "2\n")
    s = C.read_cgroup(POD, 5.0, root)
    assert C.is_v2(root) and s is not None
    assert (s.cpu_ns, s.memory_usage, s.working_set, s.rss) == (2_500_000, 20 << 20, 17 << 20, 12 << 20)
    assert (s.page_faults, s.major_page_faults, s.pids, s.memory_limit) == (11, 2, 2, 0)


def test_machine_on_v2_from_proc(tmp_path):
    root, proc = str(tmp_path / "cg"), str(tmp_path / "proc")
    _write(f"{root}/cgroup.controllers", "cpu memory\n")
    _write(f"{root}/cpu.stat", "usage_usec 1000000\n")
    _write(f"{proc}/meminfo", "MemTotal:       1000 kB\nMemFree:         200 kB\nInactive(file):   100 kB\n"
           "AnonPages:        300 kB\n")
    _write(f"{proc}/vmstat", "pgfault 5\npgmajfault 1\n")
    s = C.read_machine(9.0, root, proc)
    assert (s.cpu_ns, s.memory_usage, s.working_set, s.rss, s.memory_limit) == \
        (10**9, 800 * 1024, 700 * 1024, 300 * 1024, 1000 * 1024)


def test_net_dev_leaves_out_loopback_and_veths(tmp_path):
    p = str(tmp_path / "dev")
    _write(p, "Inter-|   Receive                                                |  Transmit\n"
              " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo "
              "colls carrier compressed\n"
              "    lo:     100       1    0    0    0     0          0         0      100       1    0    0    0"
              "     0       0          0\n"
              "  eth0:    5000      10    2    0    0     0          0         0     7000      12    3    0    0"
              "     0       0          0\n"
              "veth12:       9       1    0    0    0     0          0         0        9       1    0    0    0"
              "     0       0          0\n")
    assert C.read_net_dev(p) == [C.InterfaceStats("eth0", 5000, 2, 7000, 3)]


def _sample(t: float, cpu: int) -> C.CgroupSample:
    return C.CgroupSample(t, cpu, 0, 0, 0, 0, 0)


def test_rate_from_two_samples():
    r = RateCache(min_interval=1.0)
    r.add("a", _sample(100.0, 1_000_000_000))
    assert r.nano_cores("a") is None  # one sample: no rate yet (usageNanoCores is left out)
    r.add("a", _sample(110.0, 6_000_000_000))
    assert r.nano_cores("a") == 500_000_000
    r.add("a", _sample(110.5, 9_000_000_000))  # too soon after the last: not a new pair
    assert r.nano_cores("a") == 500_000_000 and r.fresh("a", 110.5) is not None
    r.add("a", _sample(120.0, 6_000_000_000 + 25 * 10**8))  # 0.25 cores since 110
    assert r.nano_cores("a") == 250_000_000
    r.add("a", _sample(130.0, 10))  # the counter went back: a new cgroup, no rate across it
    assert r.nano_cores("a") is None
    r.retain([])
    assert r.fresh("a", 130.0) is None


def test_resource_metrics_text_parses_with_upstream_names():
    summary = {"node": {"cpu": {"time": "2026-01-02T03:04:05Z", "usageCoreNanoSeconds": 2_500_000_000},
                        "memory": {"time": "2026-01-02T03:04:05Z", "workingSetBytes": 1024}},
               "pods": [{"podRef": {"name": "web", "namespace": "prod", "uid": "u"},
                         "cpu": {"time": "2026-01-02T03:04:05Z", "usageCoreNanoSeconds": 10**9},
                         "memory": {"time": "2026-01-02T03:04:05Z", "workingSetBytes": 64},
                         "containers": [{"name": "app", "startTime": "2026-01-02T03:00:00Z",
                                         "cpu": {"time": "2026-01-02T03:04:05Z", "usageCoreNanoSeconds": 5 * 10**8},
                                         "memory": {"time": "2026-01-02T03:04:05Z", "workingSetBytes": 32}}]}]}
    text = resource_metrics.render(resource_metrics.families(summary)).decode()
    assert "# HELP container_cpu_usage_seconds_total [STABLE] Cumulative cpu time consumed by the container in " \
           "core-seconds" in text
    assert 'container_cpu_usage_seconds_total{container="app",namespace="prod",pod="web"} 0.5 1767323045000' in text
    fams = {f.name: f for f in text_string_to_metric_families(text)}
    assert {"container_cpu_usage_seconds", "container_memory_working_set_bytes", "container_start_time_seconds",
            "node_cpu_usage_seconds", "node_memory_working_set_bytes", "pod_cpu_usage_seconds",
            "pod_memory_working_set_bytes", "resource_scrape_error", "scrape_error"} <= set(fams)
    (node_cpu,) = fams["node_cpu_usage_seconds"].samples
    assert node_cpu.value == 2.5 and node_cpu.timestamp == 1767323045.0
    (pod_mem,) = fams["pod_memory_working_set_bytes"].samples
    assert pod_mem.labels == {"namespace": "prod", "pod": "web"} and pod_mem.value == 64
    assert fams["resource_scrape_error"].samples[0].value == 0
    assert fams["container_start_time_seconds"].samples[0].value == 1767322800.0
    failed = {f.name: f for f in text_string_to_metric_families(
        resource_metrics.render(resource_metrics.families(None)).decode())}
    assert failed["resource_scrape_error"].samples[0].value == 1 and not failed["pod_cpu_usage_seconds"].samples


@pytest.mark.parametrize("method,path,want", [
    ("GET", "/stats/summary", ("get", "stats")), ("GET", "/stats", ("get", "stats")),
    ("GET", "/metrics", ("get", "metrics")), ("GET", "/metrics/resource", ("get", "metrics")),
    ("GET", "/metrics/cadvisor", ("get", "metrics")), ("GET", "/logs/syslog", ("get", "log")),
    ("GET", "/spec/", ("get", "spec")), ("POST", "/exec/ns/p/c", ("create", "proxy")),
    ("GET", "/containerLogs/ns/p/c", ("get", "proxy")), ("POST", "/portForward/ns/p", ("create", "proxy")),
    # look-alike prefixes are not the subresource: /statsX is proxy, not stats
    ("GET", "/statsX", ("get", "proxy")), ("GET", "/metricsfoo", ("get", "proxy")),
    ("PUT", "/pods", ("update", "proxy")), ("DELETE", "/x", ("delete", "proxy")), ("PATCH", "/y", ("patch", "proxy")),
])
def test_kubelet_path_to_subresource(method, path, want):
    assert request_attributes(method, path) == want


def _pod(ann: dict[str, str] | None = None, reqs: tuple[str, ...] = ("200m", "")) -> dict:
    return {"metadata": {"annotations": ann or {}},
            "spec": {"containers": [{"name": f"c{i}", "resources": {"requests": {"cpu": r}} if r else {}}
                                    for i, r in enumerate(reqs)]}}


def test_declared_usage_from_annotation_or_requests():
    cpu, mem, per = declared(_pod({"sim.pyk8s.io/cpu-usage": "300m", "sim.pyk8s.io/memory-usage": "64Mi"}))
    assert cpu == pytest.approx(0.3) and mem == 64 << 20
    assert [(n, round(c, 3)) for n, c, _ in per] == [("c0", 0.3), ("c1", 0.0)]  # by request: c1 asked for none
    cpu, _, per = declared(_pod())
    assert cpu == pytest.approx(0.1)  # half of the 200m requested
    cpu, _, _ = declared(_pod({"sim.pyk8s.io/cpu-usage": "lots"}, reqs=("", "")))
    assert cpu == pytest.approx(0.001)  # unparsable: the floor, never an error


def test_cpu_counter_integrates_rate_changes():
    m = UsageModel()
    m.observe("u", "n", _pod({"sim.pyk8s.io/cpu-usage": "500m"}), started_at=100.0, now=110.0)
    assert m.pods["u"].pod.at(110.0) == pytest.approx(5e9)
    m.observe("u", "n", _pod({"sim.pyk8s.io/cpu-usage": "2"}), started_at=100.0, now=120.0)
    assert m.pods["u"].pod.at(130.0) == pytest.approx(10e9 + 20e9)  # 0.5 core for 20 s, then 2 for 10 s
    m.retire("u", "n", now=130.0)
    assert m.retired_ns["n"] == pytest.approx(30e9) and "u" not in m.pods


def test_reading_times_stay_exact_for_metrics_and_print_as_metav1_time_in_json():
    from pyk8s.kubelet.stats.summary import with_rfc3339_times

    doc = {"node": {"startTime": "2026-01-01T00:00:00Z", "cpu": {"time": 1767323045.75, "usageCoreNanoSeconds": 1}},
           "pods": [{"memory": {"time": 1767323046.5, "workingSetBytes": 2}}]}
    assert with_rfc3339_times(doc) == {
        "node": {"startTime": "2026-01-01T00:00:00Z", "cpu": {"time": "2026-01-02T03:04:05Z", "usageCoreNanoSeconds": 1}},
        "pods": [{"memory": {"time": "2026-01-02T03:04:06Z", "workingSetBytes": 2}}]}
    fams = {f.name: f for f in text_string_to_metric_families(
        resource_metrics.render(resource_metrics.families({"node": doc["node"], "pods": []})).decode())}
    assert fams["node_cpu_usage_seconds"].samples[0].timestamp == 1767323045.75  # milliseconds kept
