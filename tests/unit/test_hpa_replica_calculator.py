"""The HPA's replica calculator against upstream's own table (pkg/controller/podautoscaler/
replica_calculator_test.go): each pod has two containers that request `request` cpu each and use `level`
each; pods are Ready and long started unless a case says otherwise ("hot": started within the cpu
initialization period, its metric older than a window since it became ready)."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pyk8s.api.timefmt import format_time
from pyk8s.controllers.podautoscaler.replica_calculator import (
    PodMetric,
    ReplicaCalcError,
    ReplicaCalculator,
    group_pods,
)

NOW = time.time()
COOL = NOW - 3600.0  # started long ago: past the 5 min cpu initialization period
HOT = NOW - 10.0  # started 10 s ago
CALC = ReplicaCalculator()  # upstream's defaults: tolerance 0.1, 5 min, 30 s


def pod(i: int, request: str | None = "1.0", ready: str = "True", start: float = COOL, phase: str = "Running",
        deleting: bool = False, resource: str = "cpu") -> dict[str, Any]:
    res = {"requests": {resource: request}} if request is not None else {}
    p: dict[str, Any] = {
        "metadata": {"name": f"test-pod-{i}", "namespace": "test-namespace", "labels": {"name": "test-pod"}},
        "spec": {"containers": [{"name": "c0", "resources": res}, {"name": "c1", "resources": res}]},
        # the Ready condition's transition time is Go's zero time in upstream's table: "never changed"
        "status": {"phase": phase, "startTime": format_time(start),
                   "conditions": [{"type": "Ready", "status": ready}]},
    }
    if deleting:
        p["metadata"]["deletionTimestamp"] = format_time(NOW)
    return p


def pods(n: int, requests: list[str] | None = None, readiness: list[str] | None = None,
         starts: list[float] | None = None, phases: list[str] | None = None,
         deleting: list[bool] | None = None) -> list[dict[str, Any]]:
    return [pod(i, (requests[i] if requests is not None and i < len(requests) else None) if requests is not None
                else "1.0",
                (readiness or [])[i] if readiness and i < len(readiness) else "True",
                (starts or [])[i] if starts else COOL,
                (phases or [])[i] if phases else "Running",
                (deleting or [])[i] if deleting else False) for i in range(n)]


def levels(values: list[int], names: list[str] | None = None) -> dict[str, PodMetric]:
    """Two containers at `value` each, metric stamped at Go's zero time as upstream's table."""
    return {(names[i] if names and i < len(names) else f"test-pod-{i}"): PodMetric(2 * v, 0.0, 60.0)
            for i, v in enumerate(values)}


ONE = "1.0"


# (name, current, expected, target %, levels, pods kwargs, expected utilization, expected raw value)
RESOURCE_CASES = [
    ("ScaleUp", 3, 5, 30, [300, 500, 700], {}, 50, 2 * 500),
    ("ScaleUpUnreadyLessScale", 3, 4, 30, [300, 500, 700], {"readiness": ["False", "True", "True"]}, 60, 2 * 600),
    ("ScaleUpHotCpuLessScale", 3, 4, 30, [300, 500, 700], {"starts": [HOT, COOL, COOL]}, 60, 2 * 600),
    ("ScaleUpUnreadyNoScale", 3, 3, 30, [400, 500, 700], {"readiness": ["True", "False", "False"]}, 40, 2 * 400),
    ("ScaleHotCpuNoScale", 3, 3, 30, [400, 500, 700],
     {"readiness": ["True", "False", "False"], "starts": [COOL, HOT, HOT]}, 40, 2 * 400),
    ("ScaleUpIgnoresFailedPods", 2, 4, 30, [500, 700],
     {"n": 4, "readiness": ["True", "True", "False", "False"], "phases": ["Running", "Running", "Failed", "Failed"]},
     60, 2 * 600),
    ("ScaleUpIgnoresDeletionPods", 2, 4, 30, [500, 700],
     {"n": 4, "readiness": ["True", "True", "False", "False"], "deleting": [False, False, True, True]}, 60, 2 * 600),
    ("ScaleDown", 5, 3, 50, [100, 300, 500, 250, 250], {}, 28, 2 * 280),
    ("ScaleDownIncludeUnreadyPods", 5, 2, 50, [100, 300, 500, 250, 250],
     {"readiness": ["True", "True", "True", "False", "False"]}, 30, 2 * 300),
    ("ScaleDownExcludeUnscheduledPods", 5, 1, 50, [100],
     {"readiness": ["True", "False", "False", "False", "False"],
      "phases": ["Running", "Pending", "Pending", "Pending", "Pending"]}, 10, 2 * 100),
    ("ScaleDownIgnoreHotCpuPods", 5, 2, 50, [100, 300, 500, 250, 250],
     {"starts": [COOL, COOL, COOL, HOT, HOT]}, 30, 2 * 300),
    ("ScaleDownIgnoresFailedPods", 5, 3, 50, [100, 300, 500, 250, 250],
     {"n": 7, "readiness": ["True"] * 5 + ["False"] * 2, "phases": ["Running"] * 5 + ["Failed"] * 2}, 28, 2 * 280),
    ("ScaleDownIgnoresDeletionPods", 5, 3, 50, [100, 300, 500, 250, 250],
     {"n": 7, "readiness": ["True"] * 5 + ["False"] * 2, "deleting": [False] * 5 + [True] * 2}, 28, 2 * 280),
    ("Tolerance", 3, 3, 100, [1010, 1030, 1020], {"requests": ["0.9", "1.0", "1.1"]}, 102, 2 * 1020),
    ("SuperfluousMetrics", 4, 24, 100, [4000, 9500, 3000, 7000, 3200, 2000], {}, 587, 2 * 5875),
    ("MissingMetrics", 4, 3, 100, [400, 95], {}, 24, 495),
    ("MissingMetricsNoChangeEq", 2, 2, 100, [1000], {}, 100, 2 * 1000),
    ("MissingMetricsNoChangeGt", 2, 2, 100, [1900], {}, 190, 2 * 1900),
    ("MissingMetricsNoChangeLt", 2, 2, 100, [600], {}, 60, 2 * 600),
    ("MissingMetricsUnreadyChange", 3, 3, 50, [100, 450], {"readiness": ["False", "True", "True"]}, 45, 2 * 450),
    ("MissingMetricsHotCpuNoChange", 3, 3, 50, [100, 450], {"starts": [HOT, COOL, COOL]}, 45, 2 * 450),
    ("MissingMetricsUnreadyScaleUp", 3, 4, 50, [100, 2000], {"readiness": ["False", "True", "True"]}, 200, 2 * 2000),
    ("MissingMetricsHotCpuScaleUp", 3, 4, 50, [100, 2000],
     {"readiness": ["False", "True", "True"], "starts": [HOT, COOL, COOL]}, 200, 2 * 2000),
    ("MissingMetricsUnreadyScaleDown", 4, 3, 50, [100, 100, 100],
     {"readiness": ["False", "True", "True", "True"]}, 10, 2 * 100),
    ("DuringRollingUpdateWithMaxSurge", 2, 2, 50, [100, 100], {"n": 3}, 10, 2 * 100),
]


@pytest.mark.parametrize("name,current,expected,target,lv,kw,util,raw", RESOURCE_CASES,
                         ids=[c[0] for c in RESOURCE_CASES])
def test_resource_replicas_as_upstream_table(name: str, current: int, expected: int, target: int, lv: list[int],
                                             kw: dict[str, Any], util: int, raw: int) -> None:
    kw = dict(kw)
    n = kw.pop("n", current if "requests" not in kw else len(kw["requests"]))
    got = CALC.resource_replicas(current, target, "cpu", pods(n, **kw), levels(lv), "", NOW)
    assert got == (expected, util, raw)


def test_computed_tolerance_boundary() -> None:
    """Upstream's TestReplicaCalcComputedToleranceAlgImplementation: just past the tolerance scales down,
    just inside it does not."""
    start, used = 10, 1500
    requested = 2 * used
    per_pod = requested // start
    reqs = [f"{per_pod + d}m" for d in (100, -100, 10, -10, 2, -2, 1, -1, 0, 0)]
    for extra, expected in ((0.01, None), (0.004, start)):
        target = abs(1 / (2.0 * (1 - 0.1))) + extra
        pct = int(target * 100)
        if expected is None:
            import math

            expected = math.ceil(used / (requested * target) * start)
        got = CALC.resource_replicas(start, pct, "cpu", pods(10, requests=reqs), levels([used // 10] * 10), "", NOW)
        assert got[0] == expected
        assert got[1] == used * 100 // requested


def test_resource_errors_as_upstream() -> None:
    with pytest.raises(ReplicaCalcError, match="^no metrics returned matched known pods$"):
        CALC.resource_replicas(1, 100, "cpu", pods(1), levels([100], ["an-older-pod-name"]), "", NOW)
    with pytest.raises(ReplicaCalcError, match="^missing request for cpu in container c0 of Pod test-pod-0$"):
        CALC.resource_replicas(1, 100, "cpu", pods(1, requests=[]), levels([200]), "", NOW)
    with pytest.raises(ReplicaCalcError, match="^no pods returned by selector while calculating replica count$"):
        CALC.resource_replicas(1, 100, "cpu", [], levels([200]), "", NOW)
    with pytest.raises(ReplicaCalcError, match=r"^did not receive metrics for targeted pods \(pods might be unready\)$"):
        CALC.resource_replicas(2, 50, "cpu", pods(2, readiness=["False", "False"]), levels([900, 900]), "", NOW)


def test_container_resource_counts_one_container() -> None:
    """ContainerResource: only the named container's request (and metric) count."""
    ps = pods(2)
    for p in ps:
        p["spec"]["containers"][1]["resources"] = {"requests": {"cpu": "3"}}
    metrics = {f"test-pod-{i}": PodMetric(900) for i in range(2)}  # c0 uses 900m of its 1000m
    assert CALC.resource_replicas(2, 50, "cpu", ps, metrics, "c0", NOW) == (4, 90, 900)
    # the whole pod would be at 900 / 4000: a scale-down
    assert CALC.resource_replicas(2, 50, "cpu", ps, metrics, "", NOW)[0] == 1


def test_sidecars_count_and_plain_init_containers_do_not() -> None:
    p = pod(0)
    p["spec"]["initContainers"] = [{"name": "init", "resources": {"requests": {"cpu": "5"}}},
                                   {"name": "side", "restartPolicy": "Always", "resources": {"requests": {"cpu": "1"}}}]
    assert CALC.resource_replicas(1, 100, "cpu", [p], {"test-pod-0": PodMetric(3000)}, "", NOW) == (1, 100, 3000)


# per-pod custom metrics (calcPlainMetricReplicas): (name, current, expected, target, levels, pods kwargs, usage)
PODS_METRIC_CASES = [
    ("ScaleUpCM", 3, 4, 15000, [20000, 10000, 30000], {}, 20000),
    ("ScaleUpCMUnreadyHotCpuNoLessScale", 3, 6, 15000, [50000, 10000, 30000],
     {"readiness": ["True", "True", "False"], "starts": [COOL, COOL, HOT]}, 30000),
    ("ScaleUpCMUnreadyHotCpuScaleWouldScaleDown", 3, 7, 15000, [50000, 15000, 30000],
     {"readiness": ["False", "True", "False"], "starts": [HOT, COOL, HOT]}, 31666),
    ("ScaleUpCMExternalNoLabels", 1, 2, 4400, [8600], {}, 8600),
    ("ScaleDownCM", 5, 3, 20000, [12000] * 5, {}, 12000),
    ("ToleranceCM", 3, 3, 20000, [20000, 21000, 21000], {}, 20666),
]


@pytest.mark.parametrize("name,current,expected,target,lv,kw,usage", PODS_METRIC_CASES,
                         ids=[c[0] for c in PODS_METRIC_CASES])
def test_pods_metric_replicas_as_upstream_table(name: str, current: int, expected: int, target: int, lv: list[int],
                                                kw: dict[str, Any], usage: int) -> None:
    # a custom metric is per pod, not per container; readiness is not looked at for non-cpu metrics
    metrics = {f"test-pod-{i}": PodMetric(v) for i, v in enumerate(lv)}
    assert CALC.plain_metric_replicas(current, target, "", pods(current, **kw), metrics, NOW) == (expected, usage)


def test_average_value_missing_pods_count_as_the_target_on_scale_down() -> None:
    """calcPlainMetricReplicas: a missing pod uses exactly the target on a scale-down, 0 on a scale-up."""
    ps = pods(4)
    down = {"test-pod-0": PodMetric(100), "test-pod-1": PodMetric(100)}
    # ratio 0.1 -> with the 2 missing at the target (1000): (200 + 2000) / 4 = 550 -> ceil(0.55 * 4) = 3
    assert CALC.plain_metric_replicas(4, 1000, "cpu", ps, down, NOW) == (3, 100)
    up = {"test-pod-0": PodMetric(4000), "test-pod-1": PodMetric(4000)}
    # ratio 4 -> with the 2 missing at 0: 8000 / 4 = 2000 -> ceil(2 * 4) = 8
    assert CALC.plain_metric_replicas(4, 1000, "cpu", ps, up, NOW) == (8, 4000)


# object/external metrics: (name, current, expected, target, usage, readiness)
OBJECT_CASES = [
    ("ScaleUpCMObject", 3, 4, 15000, 20000, None),
    ("ScaleUpCMObjectIgnoresUnreadyPods", 3, 5, 10000, 50000, ["False", "True", "False"]),
    ("ScaleUpCMExternal", 1, 2, 4400, 8600, None),
    ("ScaleUpCMExternalIgnoresUnreadyPods", 3, 2, 4400, 8600, ["False", "True", "False"]),
    ("ScaleDownCMObject", 5, 3, 20000, 12000, None),
    ("ScaleDownCMExternal", 5, 3, 14334, 8600, None),
    ("ToleranceCMObject", 3, 3, 20000, 20666, None),
    ("ToleranceCMExternal", 3, 3, 8888, 8600, None),
]


@pytest.mark.parametrize("name,current,expected,target,usage,readiness", OBJECT_CASES,
                         ids=[c[0] for c in OBJECT_CASES])
def test_object_and_external_value_replicas(name: str, current: int, expected: int, target: int, usage: int,
                                            readiness: list[str] | None) -> None:
    assert CALC.object_metric_replicas(current, target, usage, pods(current, readiness=readiness)) == expected


def test_object_value_scales_from_zero_by_the_ratio() -> None:
    assert CALC.object_metric_replicas(0, 1000, 2500, []) == 3
    assert CALC.object_metric_replicas(0, 1000, 0, []) == 0


# per-pod object/external targets: (name, status replicas, expected, per-pod target, usage, usage per pod)
PER_POD_CASES = [
    ("ScaleUpCMPerPodObject", 3, 4, 5000, 20000, 6667),
    ("ScaleUpPerPodCMExternal", 3, 4, 2150, 8600, 2867),
    ("ScaleDownPerPodCMObject", 5, 3, 2000, 6000, 1200),
    ("ScaleDownPerPodCMExternal", 5, 3, 2867, 8600, 1720),
    ("TolerancePerPodCMObject", 4, 4, 5000, 20166, 5042),
    ("TolerancePerPodCMExternal", 3, 3, 2900, 8600, 2867),
]


@pytest.mark.parametrize("name,replicas,expected,target,usage,per_pod", PER_POD_CASES,
                         ids=[c[0] for c in PER_POD_CASES])
def test_per_pod_replicas(name: str, replicas: int, expected: int, target: int, usage: int, per_pod: int) -> None:
    assert CALC.per_pod_replicas(replicas, target, usage) == (expected, per_pod)


def test_group_pods_initialization_period() -> None:
    """Upstream's TestGroupPods: a Ready pod in its initialization period counts once a full metric window
    passed since it became ready; a pod without a Ready condition is unready for cpu only."""
    def started(minutes_ago: float, ready_ago: float, status: str = "True") -> dict[str, Any]:
        p = pod(0, start=NOW - minutes_ago * 60)
        p["status"]["conditions"] = [{"type": "Ready", "status": status,
                                      "lastTransitionTime": format_time(NOW - ready_ago)}]
        return p

    fresh = {"test-pod-0": PodMetric(1, NOW, 30.0)}
    assert group_pods([started(1, 30)], fresh, "cpu", 300, 30, NOW)[0] == 1
    stale = {"test-pod-0": PodMetric(1, NOW - 60, 60.0)}
    assert group_pods([started(1, 30)], stale, "cpu", 300, 30, NOW)[1] == {"test-pod-0"}
    # past the initialization period: unready only if it never became ready after the initial delay
    old = {"test-pod-0": PodMetric(1, NOW, 60.0)}
    assert group_pods([started(10, 10 * 60 - 20, "False")], old, "cpu", 300, 30, NOW)[1] == {"test-pod-0"}
    assert group_pods([started(10, 60, "False")], old, "cpu", 300, 30, NOW)[0] == 1
    no_cond = pod(0)
    no_cond["status"]["conditions"] = []
    assert group_pods([no_cond], old, "cpu", 300, 30, NOW)[1] == {"test-pod-0"}
    assert group_pods([no_cond], old, "memory", 300, 30, NOW)[0] == 1
