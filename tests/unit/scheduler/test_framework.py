"""Profiles from KubeSchedulerConfiguration, the cycle's node sampling, selection and nominated pods."""

from __future__ import annotations

import random
from collections import Counter

import numpy as np
import pytest

from pyk8s.scheduler.config import build_profiles, default_profile, parse_config
from pyk8s.scheduler.framework import Handle, num_feasible_nodes_to_find, select_host
from pyk8s.scheduler.podinfo import pod_info
from pyk8s.scheduler.queue import SchedulingQueue

from ._fixtures import cluster, node, pod

API = "kubescheduler.config.k8s.io/v1"


def _points(prof):
    return {
        "preEnqueue": [p.name for p in prof.pre_enqueue],
        "queueSort": [p.name for p in prof.queue_sort],
        "preFilter": [p.name for p in prof.pre_filter],
        "filter": [p.name for p in prof.filter],
        "postFilter": [p.name for p in prof.post_filter],
        "preScore": [p.name for p in prof.pre_score],
        "score": [(p.name, w) for p, w in prof.score],
        "reserve": [p.name for p in prof.reserve],
        "bind": [p.name for p in prof.bind],
    }


def test_default_profile_matches_v133_defaults():
    """v1.33's defaults, plus our GPUShare (gpushare's extender built in; it skips pods without gpu-mem)."""
    pts = _points(default_profile())
    assert pts["preEnqueue"] == ["SchedulingGates", "DynamicResources"]
    assert pts["queueSort"] == ["PrioritySort"]
    assert pts["preFilter"] == ["NodeAffinity", "NodePorts", "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding",
                                "VolumeZone", "PodTopologySpread", "InterPodAffinity", "DynamicResources", "GPUShare"]
    assert pts["filter"] == ["NodeUnschedulable", "NodeName", "TaintToleration", "NodeAffinity", "NodePorts",
                             "NodeResourcesFit", "VolumeRestrictions", "VolumeBinding", "VolumeZone", "PodTopologySpread",
                             "InterPodAffinity", "DynamicResources", "GPUShare"]
    assert pts["postFilter"] == ["DefaultPreemption"]
    assert pts["reserve"] == ["VolumeBinding", "DynamicResources", "GPUShare"]
    assert pts["score"] == [("TaintToleration", 3), ("NodeAffinity", 2), ("NodeResourcesFit", 1),
                            ("PodTopologySpread", 2), ("InterPodAffinity", 2), ("NodeResourcesBalancedAllocation", 1),
                            ("ImageLocality", 1), ("GPUShare", 5)]
    assert pts["bind"] == ["DefaultBinder"]


def test_disable_in_multipoint_and_per_point():
    cfg = {"apiVersion": API, "kind": "KubeSchedulerConfiguration", "profiles": [{
        "schedulerName": "no-spread",
        "plugins": {"multiPoint": {"disabled": [{"name": "PodTopologySpread"}]},
                    "score": {"disabled": [{"name": "ImageLocality"}],
                              "enabled": [{"name": "NodeResourcesFit", "weight": 5}]}}}]}
    prof = build_profiles(cfg, Handle())["no-spread"]
    pts = _points(prof)
    assert "PodTopologySpread" not in pts["filter"] + pts["preFilter"]
    assert ("ImageLocality", 1) not in pts["score"]
    # a re-configured plugin is placed first (upstream: overrides, then multiPoint, then others)
    assert pts["score"][0] == ("NodeResourcesFit", 5)


def test_disable_all_scores():
    cfg = {"profiles": [{"plugins": {"score": {"disabled": [{"name": "*"}]}}}]}
    prof = build_profiles(cfg, Handle())["default-scheduler"]
    assert prof.score == []
    assert [p.name for p in prof.pre_score] != []  # PreScore is its own point


def test_plugin_config_args_are_merged_over_defaults():
    cfg = {"profiles": [{"schedulerName": "bin-packing", "pluginConfig": [
        {"name": "NodeResourcesFit", "args": {"scoringStrategy": {"type": "MostAllocated"}}}]}]}
    h = cluster([node("small", cpu="2"), node("big", cpu="64")], [pod("old", node_name="small", requests={"cpu": "1"})])
    prof = build_profiles(cfg, h)["bin-packing"]
    fit = prof.plugins["NodeResourcesFit"]
    assert fit.strategy == "MostAllocated" and fit.resources == (("cpu", 1), ("memory", 1))
    assert prof.schedule_one(pod("new", requests={"cpu": "500m"})).node == "small"
    assert default_profile(h).schedule_one(pod("new2", requests={"cpu": "500m"})).node == "big"


def test_multiple_profiles_and_errors():
    cfg = {"profiles": [{"schedulerName": "a"}, {"schedulerName": "b", "plugins": {
        "multiPoint": {"disabled": [{"name": "*"}], "enabled": [
            {"name": "PrioritySort"}, {"name": "NodeResourcesFit"}, {"name": "DefaultBinder"}]}}}]}
    profs = build_profiles(cfg, Handle())
    assert set(profs) == {"a", "b"}
    assert _points(profs["b"])["filter"] == ["NodeResourcesFit"]
    with pytest.raises(ValueError, match="does not exist"):
        build_profiles({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "Nope"}]}}}]}, Handle())
    with pytest.raises(ValueError, match="duplicate"):
        parse_config({"profiles": [{"schedulerName": "a"}, {"schedulerName": "a"}]})
    with pytest.raises(ValueError, match="apiVersion"):
        parse_config({"apiVersion": "kubescheduler.config.k8s.io/v1beta3"})
    # upstream plugins not implemented here are accepted and dropped
    build_profiles({"profiles": [{"plugins": {"filter": {"enabled": [{"name": "NodeVolumeLimits"}]}}}]}, Handle())


@pytest.mark.parametrize("pct,n,want", [
    (0, 50, 50), (0, 99, 99), (0, 100, 100), (0, 150, 100), (0, 1000, 420), (0, 5000, 500),
    (0, 20000, 1000), (30, 1000, 300), (100, 5000, 5000), (1, 5000, 100),
])
def test_num_feasible_nodes_to_find(pct, n, want):
    assert num_feasible_nodes_to_find(pct, n) == want


def test_percentage_of_nodes_to_score_and_rotation():
    h = cluster([node(f"n{i:03d}") for i in range(300)])
    prof = build_profiles({"percentageOfNodesToScore": 50}, h)["default-scheduler"]
    r = prof.schedule_one(pod("p"))
    assert r.feasible_nodes == 150
    assert h.next_start_node_index == 150
    prof.schedule_one(pod("q"))
    assert h.next_start_node_index == 0


def test_select_host_breaks_ties_uniformly():
    rng = random.Random(1)
    total = np.array([5, 9, 9, 1, 9])
    picks = Counter(select_host(total, rng) for _ in range(3000))
    assert set(picks) == {1, 2, 4}
    assert min(picks.values()) > 850


def test_only_one_feasible_node_skips_scoring():
    h = cluster([node("a", cpu="1"), node("b", cpu="8")])
    r = default_profile(h).schedule_one(pod(requests={"cpu": "2"}), with_scores=True)
    assert r.node == "b" and r.feasible_nodes == 1 and r.scores is None


def test_nominated_pods_hold_their_room():
    """RunFilterPluginsWithNominatedPods: an equal-or-higher priority pod nominated to a node counts there."""
    h = cluster([node("a", cpu="1"), node("b", cpu="1")])
    prof = default_profile(h)
    q = SchedulingQueue(prof)
    h.nominator = q
    q.add_nominated_pod(pod_info(pod("vip", requests={"cpu": "800m"}, priority=100)), "a")
    assert prof.schedule_one(pod("low", requests={"cpu": "500m"}, priority=0)).node == "b"
    # a higher-priority pod ignores lower-priority nominations
    assert prof.schedule_one(pod("high", requests={"cpu": "500m"}, priority=1000), with_scores=True).feasible_nodes == 2


def test_pod_goes_to_its_nominated_node_first():
    h = cluster([node(f"n{i}") for i in range(5)])
    p = pod("p")
    p["status"] = {"nominatedNodeName": "n3"}
    assert default_profile(h).schedule_one(p).node == "n3"


def test_no_nodes():
    r = default_profile(Handle()).schedule_one(pod())
    assert r.node is None and r.message == "no nodes available to schedule pods"
