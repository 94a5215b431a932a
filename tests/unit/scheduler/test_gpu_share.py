"""GPUShare: gpu-mem shares bin-packed onto single GPUs (gpushare's extender, built in)."""

from __future__ import annotations

import pytest

from pyk8s.gpu.share import ANN_ASSIGNED, ANN_DEV, ANN_IDX, ANN_POD, choose_gpu, gpu_usage, pod_gpu_mem
from pyk8s.scheduler.framework import CycleState
from pyk8s.scheduler.plugins.gpu_share import GPUShare, assignment
from pyk8s.scheduler.podinfo import pod_info
from pyk8s.scheduler.scheduler import Scheduler

from ._fixtures import cluster, node, one_plugin, pod, run_filter, run_score


def gpu_node(name: str, count: int = 2, gib: int = 16) -> dict:
    return node(name, cpu="32", memory="256Gi",
                extra={"aliyun.com/gpu-mem": str(count * gib), "aliyun.com/gpu-count": str(count)})


def gpu_pod(name: str, gib: int, node_name: str = "", idx: int | None = None) -> dict:
    p = pod(name, node_name=node_name)
    p["spec"]["containers"][0]["resources"] = {"limits": {"aliyun.com/gpu-mem": str(gib)},
                                               "requests": {"aliyun.com/gpu-mem": str(gib)}}
    if idx is not None:
        p["metadata"]["annotations"] = {ANN_IDX: str(idx)}
    return p


def test_choose_gpu_is_best_fit_lowest_index_first() -> None:
    assert choose_gpu([0, 0], 16, 4) == 0
    assert choose_gpu([4, 0], 16, 8) == 0  # 4 left on GPU 0 beats 8 on GPU 1
    assert choose_gpu([12, 0], 16, 8) == 1
    assert choose_gpu([8, 4], 16, 8) == 0  # 0 left
    assert choose_gpu([10, 10], 16, 8) is None  # 12 GiB free on the node, but no single GPU has 8
    assert choose_gpu([0, 0], 16, 20) is None


def test_usage_ignores_shares_without_a_valid_index() -> None:
    assert gpu_usage(2, [(0, 4), (1, 8), (None, 6), (5, 3), (0, 2)]) == [6, 8]


def test_pod_gpu_mem_sums_containers_from_limits() -> None:
    p = gpu_pod("a", 4)
    p["spec"]["containers"].append({"name": "d", "image": "x", "resources": {"limits": {"aliyun.com/gpu-mem": "3"}}})
    assert pod_gpu_mem(p) == 7


def test_filter_needs_one_gpu_with_room_not_just_node_total() -> None:
    # n1: 10 GiB used on each GPU (12 free in all); n2: empty.
    h = cluster([gpu_node("n1"), gpu_node("n2")],
                [gpu_pod("a", 10, "n1", 0), gpu_pod("b", 10, "n1", 1)])
    prof = one_plugin(GPUShare, h)
    out, _, _ = run_filter(prof, gpu_pod("new", 8))
    assert out["n2"] is None
    assert out["n1"] is not None and out["n1"].reasons == ("node(s) had no single GPU with 8 GiB of free memory",)
    assert run_filter(prof, gpu_pod("small", 6))[0]["n1"] is None


def test_gpu_mem_without_gpu_count_is_one_gpu() -> None:
    h = cluster([node("old", extra={"aliyun.com/gpu-mem": "16"})], [gpu_pod("a", 8, "old", 0)])
    prof = one_plugin(GPUShare, h)
    assert run_filter(prof, gpu_pod("fits", 8))[0]["old"] is None
    assert run_filter(prof, gpu_pod("not", 9))[0]["old"] is not None


def test_pods_without_gpu_mem_are_skipped() -> None:
    prof = one_plugin(GPUShare, cluster([node("plain")]))
    out, st, _ = run_filter(prof, pod("cpu-only"))
    assert out["plain"] is None
    assert run_score(prof, pod("cpu-only")) is None


def test_score_prefers_the_fullest_gpu_after_placement() -> None:
    h = cluster([gpu_node("empty"), gpu_node("half"), gpu_node("tight")],
                [gpu_pod("h", 8, "half", 0), gpu_pod("t", 12, "tight", 1)])
    s = run_score(one_plugin(GPUShare, h), gpu_pod("new", 4))
    assert s is not None
    assert s["tight"] > s["half"] > s["empty"]


def _schedule(s: Scheduler, p: dict) -> tuple[str | None, int | None, str]:
    s.on_pod_add(p)
    d = s.schedule_next()
    assert d is not None
    if d.node is None:
        return None, None, d.message
    a = assignment(d.state)
    s.binding_done(d, True)
    bound = {**p, "spec": {**p["spec"], "nodeName": d.node},
             "metadata": {**p["metadata"], "annotations": a.annotations() if a else {}}}
    s.on_pod_update(p, bound)
    return d.node, (a.index if a else None), ""


def test_sequence_packs_as_gpushare_and_a_too_big_pod_says_why() -> None:
    s = Scheduler()
    s.on_node_add(gpu_node("n1"))
    picks = [_schedule(s, gpu_pod(f"p{i}", g))[:2] for i, g in enumerate([4, 8, 12, 4, 16])]
    # 4 -> GPU 0; 8 joins it (4 left); 12 cannot: GPU 1; 4 fills GPU 0 to 16; 16 fits nowhere.
    assert picks[:4] == [("n1", 0), ("n1", 0), ("n1", 1), ("n1", 0)]
    assert picks[4] == (None, None)
    s.on_node_add(gpu_node("n2"))
    node, _, msg = _schedule(s, gpu_pod("big", 20))  # n2 has 32 GiB free, but 16 per GPU
    assert node is None
    assert msg.startswith("0/2 nodes are available: 1 Insufficient aliyun.com/gpu-mem, "
                          "1 node(s) had no single GPU with 20 GiB of free memory. preemption: "), msg
    assert "1 Preemption is not helpful for scheduling" in msg


def test_a_pods_own_idx_annotation_is_overwritten_and_ignored() -> None:
    """An attacker pre-sets ALIYUN_COM_GPU_MEM_IDX=1 (and ASSIGNED=true) to land on the busy GPU's neighbour
    or to hide its share: the scheduler's choice replaces it, and the books keep the real choice."""
    s = Scheduler()
    s.on_node_add(gpu_node("n1"))
    assert _schedule(s, gpu_pod("first", 4))[:2] == ("n1", 0)
    sneaky = gpu_pod("sneaky", 4, idx=1)
    sneaky["metadata"]["annotations"][ANN_ASSIGNED] = "true"
    s.on_pod_add(sneaky)
    d = s.schedule_next()
    assert d is not None and d.node == "n1"
    ann = assignment(d.state).annotations()
    assert ann[ANN_IDX] == "0" and ann[ANN_ASSIGNED] == "false" and ann[ANN_POD] == "4" and ann[ANN_DEV] == "16"
    s.binding_done(d, True)
    # After binding the pod's author rewrites the index; our books still count it on GPU 0.
    bound = {**sneaky, "spec": {**sneaky["spec"], "nodeName": "n1"},
             "metadata": {**sneaky["metadata"], "annotations": {**ann, ANN_IDX: "1"}}}
    s.on_pod_update(sneaky, bound)
    pl = s.profiles["default-scheduler"].plugins["GPUShare"]
    assert pl.usage(s.cache.table, s.cache.table.index["n1"], 2) == [8, 0]


def test_deleting_a_pod_frees_its_share() -> None:
    s = Scheduler()
    s.on_node_add(gpu_node("n1", count=1))
    p = gpu_pod("a", 12)
    assert _schedule(s, p)[:2] == ("n1", 0)
    assert _schedule(s, gpu_pod("b", 8))[0] is None
    s.on_pod_delete({**p, "spec": {**p["spec"], "nodeName": "n1"}})
    assert _schedule(s, gpu_pod("c", 8))[:2] == ("n1", 0)


def test_unreserve_forgets_the_choice() -> None:
    h = cluster([gpu_node("n1")])
    pl = GPUShare({}, h)
    p = pod_info(gpu_pod("a", 4))
    h.cache.assume_pod(p, "n1")
    st = CycleState()
    st.table = h.cache.table
    assert pl.reserve(st, p, "n1") is None and assignment(st) is not None
    pl.unreserve(st, p, "n1")
    assert assignment(st) is None and p.key not in pl._chosen


@pytest.mark.parametrize("bad", ["-4", "1.5", "abc", "4Gi"])
def test_malformed_requests_count_as_none(bad: str) -> None:
    # The API server rejects these on create; pods read back from elsewhere must not hold a share by them.
    p = gpu_pod("x", 1)
    p["spec"]["containers"][0]["resources"] = {"limits": {"aliyun.com/gpu-mem": bad}}
    assert pod_gpu_mem(p) == 0


def test_preemption_frees_a_share_on_the_gpu() -> None:
    """12 GiB free on the node but 6 on each GPU: a high-priority 8 GiB share preempts one low-priority share,
    not both (the other is reprieved once one GPU has room)."""
    s = Scheduler()
    s.on_node_add(gpu_node("n1"))
    for name in ("low-a", "low-b"):
        low = gpu_pod(name, 10)
        low["spec"]["priority"] = 0
        assert _schedule(s, low)[0] == "n1"
    high = gpu_pod("high", 8)
    high["spec"]["priority"] = 1000
    s.on_pod_add(high)
    d = s.schedule_next()
    assert d is not None and d.node is None
    assert d.message.startswith("0/1 nodes are available: 1 node(s) had no single GPU with 8 GiB of free memory.")
    assert d.nominated_node == "n1" and len(d.victims) == 1 and d.victims[0].name in ("low-a", "low-b")
