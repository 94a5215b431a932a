"""Quantities and pod requests as the scheduler counts them (upstream resourcehelper.PodRequests)."""

from __future__ import annotations

from fractions import Fraction

import pytest

from pyk8s.scheduler.resources import (
    NON_MISSING_DEFAULTS,
    is_extended_resource_name,
    is_scalar_resource_name,
    node_allocatable,
    parse_quantity,
    pod_requests,
    quantity_to_int,
)


@pytest.mark.parametrize("text,value", [
    ("100m", Fraction(1, 10)), ("1", 1), ("1.5", Fraction(3, 2)), ("16Gi", 16 * 2**30), ("1k", 1000),
    ("1e3", 1000), ("1E-3", Fraction(1, 1000)), ("500Mi", 500 * 2**20), ("2M", 2_000_000), (".5", Fraction(1, 2)),
    ("-1", -1), (3, 3),
])
def test_parse_quantity(text, value):
    assert parse_quantity(text) == value


@pytest.mark.parametrize("bad", ["", "abc", "1Z", "1.2.3", "m"])
def test_parse_quantity_rejects(bad):
    with pytest.raises(ValueError):
        parse_quantity(bad)


def test_cpu_is_milli_and_everything_rounds_up():
    assert quantity_to_int("cpu", "64") == 64000
    assert quantity_to_int("cpu", "0.0001") == 1  # MilliValue rounds up
    assert quantity_to_int("memory", "1.5") == 2
    assert quantity_to_int("memory", "1Ki") == 1024


def test_resource_name_classes():
    assert is_extended_resource_name("nvidia.com/gpu")
    assert is_extended_resource_name("aliyun.com/gpu-mem")
    assert not is_extended_resource_name("kubernetes.io/whatever")
    assert not is_extended_resource_name("cpu")
    assert is_scalar_resource_name("hugepages-2Mi")
    assert is_scalar_resource_name("nvidia.com/gpu")
    assert not is_scalar_resource_name("memory")


def _c(cpu=None, mem=None, **kw):
    req = {}
    if cpu is not None:
        req["cpu"] = cpu
    if mem is not None:
        req["memory"] = mem
    return {"name": "x", "resources": {"requests": req}, **kw}


def test_containers_are_summed():
    assert pod_requests({"containers": [_c("1", "1Gi"), _c("500m", "1Gi")]}) == {"cpu": 1500, "memory": 2 * 2**30}


def test_init_containers_take_the_max():
    """upstream fit.go example: IC1 2cpu/1G, IC2 2cpu/3G, C1 2cpu/1G, C2 1cpu/1G -> 3 cpu, 3G."""
    spec = {"initContainers": [_c("2", "1G"), _c("2", "3G")], "containers": [_c("2", "1G"), _c("1", "1G")]}
    assert pod_requests(spec) == {"cpu": 3000, "memory": 3_000_000_000}


def test_sidecars_are_summed_and_add_to_later_init_containers():
    spec = {
        "initContainers": [_c("300m", restartPolicy="Always"), _c("500m")],
        "containers": [_c("300m")],
    }
    # running: 300m + sidecar 300m = 600m; the plain init runs beside the sidecar: 500m + 300m = 800m
    assert pod_requests(spec)["cpu"] == 800
    spec["initContainers"] = [_c("100m"), _c("300m", restartPolicy="Always")]
    assert pod_requests(spec)["cpu"] == 600


def test_overhead_is_added():
    spec = {"containers": [_c("1")], "overhead": {"cpu": "250m", "memory": "120Mi"}}
    assert pod_requests(spec) == {"cpu": 1250, "memory": 120 * 2**20}


def test_non_missing_defaults_fill_only_missing_requests():
    spec = {"containers": [_c(), _c("0"), _c(mem="1Gi")]}
    # container 1: 100m + 200Mi; container 2: 0 cpu (explicit) + 200Mi; container 3: 100m + 1Gi
    got = pod_requests(spec, NON_MISSING_DEFAULTS)
    assert got == {"cpu": 200, "memory": 400 * 2**20 + 2**30}


def test_extended_and_hugepages_requests_kept_unknown_dropped():
    spec = {"containers": [{"name": "x", "resources": {"requests": {
        "nvidia.com/gpu": "2", "hugepages-2Mi": "4Mi", "storage": "1Gi"}}}]}
    assert pod_requests(spec) == {"nvidia.com/gpu": 2, "hugepages-2Mi": 4 * 2**20}


def test_node_allocatable_falls_back_to_capacity():
    n = {"status": {"capacity": {"cpu": "4", "memory": "16Gi", "pods": "110", "aliyun.com/gpu-mem": "32"}}}
    assert node_allocatable(n) == {"cpu": 4000, "memory": 16 * 2**30, "pods": 110, "aliyun.com/gpu-mem": 32}
