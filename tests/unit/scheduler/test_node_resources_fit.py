"""NodeResourcesFit: filter reasons and the three scoring strategies (upstream noderesources tests)."""

from __future__ import annotations

import pytest

from pyk8s.scheduler.plugins.node_resources_fit import NodeResourcesFit

from ._fixtures import cluster, node, one_plugin, pod, run_filter, run_score


def _reasons(prof, p):
    out, _, _ = run_filter(prof, p)
    return {n: (s.reasons if s else None) for n, s in out.items()}


CASES = [
    # (description, node kwargs, existing pod requests, incoming pod kwargs, expected reasons or None)
    ("no resources requested always fits", {"cpu": "1"}, {"cpu": "1"}, {}, None),
    ("too many pods", {"pods": "1"}, {}, {}, ("Too many pods",)),
    ("cpu insufficient", {"cpu": "1"}, {"cpu": "600m"}, {"requests": {"cpu": "500m"}}, ("Insufficient cpu",)),
    ("cpu fits exactly", {"cpu": "1"}, {"cpu": "500m"}, {"requests": {"cpu": "500m"}}, None),
    ("cpu and memory insufficient, in order", {"cpu": "1", "memory": "1Gi"}, {"cpu": "1", "memory": "1Gi"},
     {"requests": {"memory": "1", "cpu": "1m"}}, ("Insufficient cpu", "Insufficient memory")),
    ("pods and cpu together", {"cpu": "1", "pods": "1"}, {"cpu": "1"}, {"requests": {"cpu": "1m"}},
     ("Too many pods", "Insufficient cpu")),
    ("ephemeral storage", {"extra": {"ephemeral-storage": "1Gi"}}, {}, {"requests": {"ephemeral-storage": "2Gi"}},
     ("Insufficient ephemeral-storage",)),
    ("extended resource exhausted", {"extra": {"nvidia.com/gpu": "1"}}, {}, {"requests": {"nvidia.com/gpu": "2"}},
     ("Insufficient nvidia.com/gpu",)),
    ("extended resource the node lacks", {}, {}, {"requests": {"aliyun.com/gpu-mem": "4"}},
     ("Insufficient aliyun.com/gpu-mem",)),
    ("hugepages", {"extra": {"hugepages-2Mi": "4Mi"}}, {}, {"requests": {"hugepages-2Mi": "6Mi"}},
     ("Insufficient hugepages-2Mi",)),
]


@pytest.mark.parametrize("desc,nkw,existing,pkw,want", CASES, ids=[c[0] for c in CASES])
def test_filter(desc, nkw, existing, pkw, want):
    pods = [pod("old", node_name="n1", requests=existing)] if existing or nkw.get("pods") else []
    prof = one_plugin(NodeResourcesFit, cluster([node("n1", **nkw)], pods))
    assert _reasons(prof, pod("new", **pkw))["n1"] == want


def test_init_container_max_rule_in_filter():
    prof = one_plugin(NodeResourcesFit, cluster([node("n1", cpu="1")], [pod("old", node_name="n1", requests={"cpu": "200m"})]))
    p = pod("new", requests={"cpu": "100m"}, initContainers=[
        {"name": "init", "image": "x", "resources": {"requests": {"cpu": "900m"}}}])
    assert _reasons(prof, p)["n1"] == ("Insufficient cpu",)
    p["spec"]["initContainers"][0]["resources"]["requests"]["cpu"] = "800m"
    assert _reasons(prof, p)["n1"] is None


def test_sidecar_requests_count_for_the_pod_lifetime():
    prof = one_plugin(NodeResourcesFit, cluster([node("n1", cpu="1")], [pod("old", node_name="n1", requests={"cpu": "250m"})]))
    p = pod("new", requests={"cpu": "300m"}, initContainers=[
        {"name": "side", "image": "x", "restartPolicy": "Always", "resources": {"requests": {"cpu": "300m"}}},
        {"name": "init", "image": "x", "resources": {"requests": {"cpu": "500m"}}}])
    assert _reasons(prof, p)["n1"] == ("Insufficient cpu",)  # needs 800m, 750m free


def test_overhead_counts_in_filter():
    prof = one_plugin(NodeResourcesFit, cluster([node("n1", cpu="1")]))
    p = pod("new", requests={"cpu": "900m"}, overhead={"cpu": "200m"})
    assert _reasons(prof, p)["n1"] == ("Insufficient cpu",)


@pytest.mark.parametrize("args", [{"ignoredResources": ["nvidia.com/gpu"]}, {"ignoredResourceGroups": ["nvidia.com"]}])
def test_ignored_extended_resources(args):
    prof = one_plugin(NodeResourcesFit, cluster([node("n1")]), args)
    assert _reasons(prof, pod("new", requests={"nvidia.com/gpu": "1"}))["n1"] is None


def test_assumed_pods_take_room():
    h = cluster([node("n1", cpu="1")])
    prof = one_plugin(NodeResourcesFit, h)
    h.cache.assume_pod(pod("a", requests={"cpu": "800m"}), "n1")
    assert _reasons(prof, pod("b", requests={"cpu": "300m"}))["n1"] == ("Insufficient cpu",)


# -- scoring -----------------------------------------------------------------------------------

NODES = [node("n1", cpu="4", memory="8Gi"), node("n2", cpu="8", memory="8Gi")]
REQ = {"cpu": "1", "memory": "2Gi"}


def test_least_allocated():
    prof = one_plugin(NodeResourcesFit, cluster(NODES))
    # n1: cpu (4000-1000)*100/4000=75, mem 75 -> 75; n2: cpu 87 (87.5 truncated), mem 75 -> (87+75)/2 = 81
    assert run_score(prof, pod(requests=REQ)) == {"n1": 75, "n2": 81}


def test_least_allocated_counts_existing_pods():
    prof = one_plugin(NodeResourcesFit, cluster(NODES, [pod("old", node_name="n2", requests={"cpu": "2", "memory": "4Gi"})]))
    # n2: cpu (8000-3000)*100/8000 = 62, mem (8-6)/8 = 25 -> 43
    assert run_score(prof, pod(requests=REQ)) == {"n1": 75, "n2": 43}


def test_best_effort_pods_are_scored_with_default_requests():
    prof = one_plugin(NodeResourcesFit, cluster(NODES, [pod("old", node_name="n1")]))
    # 100m and 200Mi assumed for each container without requests (the existing pod too)
    # n1: cpu (4000-200)*100/4000 = 95, mem (8Gi-400Mi)*100/8Gi = 95 -> 95
    # n2: cpu (8000-100)*100/8000 = 98, mem (8Gi-200Mi)*100/8Gi = 97 -> 97
    assert run_score(prof, pod()) == {"n1": 95, "n2": 97}


def test_most_allocated():
    prof = one_plugin(NodeResourcesFit, cluster(NODES), {"scoringStrategy": {"type": "MostAllocated"}})
    # n1: 25, 25 -> 25; n2: cpu 12 (12.5), mem 25 -> 18
    assert run_score(prof, pod(requests=REQ)) == {"n1": 25, "n2": 18}


def test_most_allocated_caps_overcommit_at_full():
    prof = one_plugin(NodeResourcesFit, cluster([node("n1", cpu="1", memory="1Gi")], [pod("old", node_name="n1")]),
                      {"scoringStrategy": {"type": "MostAllocated"}})
    assert run_score(prof, pod(requests={"cpu": "2", "memory": "2Gi"})) == {"n1": 100}


def test_weights_apply():
    args = {"scoringStrategy": {"type": "LeastAllocated", "resources": [{"name": "cpu", "weight": 3},
                                                                       {"name": "memory", "weight": 1}]}}
    prof = one_plugin(NodeResourcesFit, cluster(NODES), args)
    # n2: (87*3 + 75) / 4 = 84
    assert run_score(prof, pod(requests=REQ)) == {"n1": 75, "n2": 84}


def _rtcr(shape):
    return {"scoringStrategy": {"type": "RequestedToCapacityRatio", "requestedToCapacityRatio": {"shape": shape}}}


def test_requested_to_capacity_ratio_rounds_half_away_from_zero():
    prof = one_plugin(NodeResourcesFit, cluster(NODES), _rtcr([{"utilization": 0, "score": 0},
                                                               {"utilization": 100, "score": 10}]))
    # n1: util cpu 25 mem 25 -> 25; n2: cpu 12, mem 25 -> round(37/2 = 18.5) = 19
    assert run_score(prof, pod(requests=REQ)) == {"n1": 25, "n2": 19}


def test_requested_to_capacity_ratio_descending_shape_truncates_toward_zero():
    prof = one_plugin(NodeResourcesFit, cluster(NODES), _rtcr([{"utilization": 0, "score": 10},
                                                               {"utilization": 30, "score": 0}]))
    # utilization 25: 100 + (0-100)*(25-0)/30 = 100 - 83 (Go truncation) = 17; n2 cpu 12: 100 - 40 = 60
    # n2 memory 25 -> 17; (60 + 17)/2 = 38.5 -> 39
    assert run_score(prof, pod(requests=REQ)) == {"n1": 17, "n2": 39}


def test_extended_resource_scored_only_when_requested():
    args = {"scoringStrategy": {"type": "MostAllocated", "resources": [
        {"name": "cpu", "weight": 1}, {"name": "nvidia.com/gpu", "weight": 1}]}}
    h = cluster([node("g", cpu="4", extra={"nvidia.com/gpu": "4"}), node("c", cpu="4")])
    prof = one_plugin(NodeResourcesFit, h, args)
    # with a gpu request: g -> (25 + 25)/2; c has no gpu column value -> only cpu counts
    assert run_score(prof, pod(requests={"cpu": "1", "nvidia.com/gpu": "1"})) == {"g": 25, "c": 25}
    # without: the gpu is not scored anywhere
    assert run_score(prof, pod(requests={"cpu": "2"})) == {"g": 50, "c": 50}


def test_least_allocated_skips_resources_a_node_lacks():
    h = cluster([node("nomem", cpu="4", memory="0"), node("both", cpu="4", memory="8Gi")])
    prof = one_plugin(NodeResourcesFit, h)
    # nomem: only cpu is scored (75); both: (75 + 75) / 2
    assert run_score(prof, pod(requests={"cpu": "1", "memory": "2Gi"})) == {"nomem": 75, "both": 75}
