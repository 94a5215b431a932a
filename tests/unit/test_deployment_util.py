"""Pure pieces of the ReplicaSet and Deployment controllers, pinned to upstream's arithmetic
(pkg/controller/controller_utils.go, pkg/controller/deployment/util)."""

from __future__ import annotations

import asyncio
from typing import Any

from pyk8s.controllers.controller_utils import (
    ControllerExpectations,
    compute_hash,
    fnv32a,
    pods_ranked_by_related_pods_on_same_node,
    safe_encode_string,
    slow_start_batch,
    sort_pods_for_deletion,
)
from pyk8s.controllers.deployment_util import (
    REVISION,
    REVISION_HISTORY,
    calculate_status,
    deployment_timed_out,
    equal_ignore_hash,
    find_active_or_latest,
    find_new_replica_set,
    get_proportion,
    max_surge,
    max_unavailable,
    new_condition,
    new_rs_new_replicas,
    resolve_fenceposts,
    set_condition,
    set_new_replica_set_annotations,
)


def deploy(replicas: int, surge: Any = "25%", unavailable: Any = "25%", **status: Any) -> dict[str, Any]:
    return {"metadata": {"name": "d", "generation": 1, "annotations": {}},
            "spec": {"replicas": replicas, "progressDeadlineSeconds": 600,
                     "strategy": {"type": "RollingUpdate",
                                  "rollingUpdate": {"maxSurge": surge, "maxUnavailable": unavailable}},
                     "template": {"metadata": {"labels": {"app": "d"}}, "spec": {"containers": [{"name": "c"}]}}},
            "status": status}


def rs(name: str, replicas: int, created: str = "2026-01-01T00:00:00Z", available: int = 0,
       annotations: dict[str, str] | None = None, template: Any = None) -> dict[str, Any]:
    return {"metadata": {"name": name, "uid": name, "creationTimestamp": created, "annotations": annotations or {}},
            "spec": {"replicas": replicas, "template": template or {}},
            "status": {"replicas": replicas, "availableReplicas": available}}


# ---- pod-template-hash ------------------------------------------------------------------

def test_fnv32a_reference_vectors():
    assert fnv32a(b"") == 0x811C9DC5
    assert fnv32a(b"a") == 0xE40C292C
    assert fnv32a(b"foobar") == 0xBF9CF968


def test_safe_encode_string_turns_decimal_digits_into_upstream_hash_letters():
    """upstream-observed.md's `testdemo-665685df7` is the encoding of a decimal fnv32a sum."""
    assert safe_encode_string("221241893") == "665685df7"
    assert safe_encode_string("0123456789") == "456789bcdf"


def test_compute_hash_is_stable_and_moves_with_collision_count():
    t = {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}}
    h = compute_hash(t, None)
    assert h == compute_hash({"spec": t["spec"], "metadata": t["metadata"]}, None)  # key order does not matter
    assert set(h) <= set("456789bcdf") and 1 <= len(h) <= 10
    assert compute_hash(t, 1) != h and compute_hash(t, 1) != compute_hash(t, 2)


# ---- fenceposts and scaling ----------------------------------------------------------------

def test_surge_rounds_up_and_unavailable_rounds_down():
    assert resolve_fenceposts("25%", "25%", 3) == (1, 0)
    assert resolve_fenceposts("30%", "30%", 4) == (2, 1)
    assert resolve_fenceposts(3, 2, 10) == (3, 2)
    # both zero after rounding: one pod may be unavailable, or nothing could ever move
    assert resolve_fenceposts(0, "10%", 5) == (0, 1)
    assert max_surge(deploy(3)) == 1 and max_unavailable(deploy(3)) == 0
    assert max_unavailable(deploy(2, 0, "100%")) == 2
    assert max_unavailable(deploy(0)) == 0


def test_new_replica_set_grows_within_max_surge():
    d = deploy(10, 3, 2)
    new = rs("new", 0)
    assert new_rs_new_replicas(d, [rs("old", 10), new], new) == 3
    assert new_rs_new_replicas(d, [rs("old", 8), rs("new", 3)], rs("new", 3)) == 5
    assert new_rs_new_replicas(d, [rs("old", 8), rs("new", 5)], rs("new", 5)) == 5


def test_proportional_scaling_shares_follow_sizes():
    """The docs example: (8, 5) sized for 13, scaled 10 -> 15 with maxSurge 3: 5 more, +3 old, +2 new."""
    d = deploy(15, 3, 2)
    ann = {"deployment.kubernetes.io/max-replicas": "13"}
    old, new = rs("old", 8, annotations=ann), rs("new", 5, annotations=ann)
    p_old = get_proportion(old, d, 5, 0)
    p_new = get_proportion(new, d, 5, p_old)
    assert (p_old, p_new) == (3, 2)
    assert get_proportion(rs("zero", 0), d, 5, 0) == 0


def test_find_active_or_latest():
    a, b = rs("a", 0, "2026-01-01T00:00:00Z"), rs("b", 0, "2026-01-01T00:01:00Z")
    assert find_active_or_latest(None, [a, b]) is b
    c = rs("c", 3)
    assert find_active_or_latest(c, [a, b]) is c
    assert find_active_or_latest(c, [rs("d", 1)]) is None


# ---- revisions ----------------------------------------------------------------------------

def test_new_replica_set_is_the_oldest_with_the_template_ignoring_the_hash():
    d = deploy(1)
    t = d["spec"]["template"]
    hashed = {"metadata": {"labels": {"app": "d", "pod-template-hash": "abc"}, "creationTimestamp": None},
              "spec": t["spec"]}
    assert equal_ignore_hash(t, hashed)
    assert not equal_ignore_hash(t, {"metadata": {"labels": {"app": "e"}}, "spec": t["spec"]})
    older = rs("older", 1, "2026-01-01T00:00:00Z", template=hashed)
    newer = rs("newer", 1, "2026-01-01T00:05:00Z", template=hashed)
    assert find_new_replica_set(d, [newer, older]) is older


def test_rollback_moves_revision_forward_and_keeps_history():
    d = deploy(1)
    d["metadata"]["annotations"] = {"kubernetes.io/change-cause": "why", REVISION: "3",
                                    "kubectl.kubernetes.io/last-applied-configuration": "{}"}
    r = rs("r", 1, annotations={REVISION: "1"})
    assert set_new_replica_set_annotations(d, r, "4", True)
    ann = r["metadata"]["annotations"]
    assert ann[REVISION] == "4" and ann[REVISION_HISTORY] == "1"
    assert ann["kubernetes.io/change-cause"] == "why"
    assert "kubectl.kubernetes.io/last-applied-configuration" not in ann
    set_new_replica_set_annotations(d, r, "6", True)
    assert ann[REVISION_HISTORY] == "1,4"
    assert not set_new_replica_set_annotations(d, r, "5", True)  # never backwards
    fresh = rs("f", 0)
    set_new_replica_set_annotations(deploy(3), fresh, "1", False)
    assert fresh["metadata"]["annotations"] == {REVISION: "1", "deployment.kubernetes.io/desired-replicas": "3",
                                                "deployment.kubernetes.io/max-replicas": "4"}


# ---- status and conditions ------------------------------------------------------------------

def test_calculate_status_and_availability_condition():
    d = deploy(4, 1, 1)
    st = calculate_status([rs("old", 1, available=1), rs("new", 3, available=2)], rs("new", 3, available=2), d, 0)
    assert {k: v for k, v in st.items() if k != "conditions"} == {
        "observedGeneration": 1, "replicas": 4, "updatedReplicas": 3, "readyReplicas": 0, "availableReplicas": 3,
        "unavailableReplicas": 1}
    assert [(c["type"], c["status"], c["reason"]) for c in st["conditions"]] == [
        ("Available", "True", "MinimumReplicasAvailable")]


def test_set_condition_keeps_transition_time_while_status_holds():
    st: dict[str, Any] = {}
    set_condition(st, new_condition("Progressing", "True", "NewReplicaSetCreated", "m", 100))
    set_condition(st, new_condition("Progressing", "True", "ReplicaSetUpdated", "m2", 200))
    [c] = st["conditions"]
    assert c["reason"] == "ReplicaSetUpdated"
    assert c["lastTransitionTime"] == "1970-01-01T00:01:40Z" and c["lastUpdateTime"] == "1970-01-01T00:03:20Z"


def test_progress_deadline():
    d = deploy(1)
    st = {"conditions": [new_condition("Progressing", "True", "ReplicaSetUpdated", "", 1000)]}
    assert not deployment_timed_out(d, st, 1500)
    assert deployment_timed_out(d, st, 1601)
    st = {"conditions": [new_condition("Progressing", "True", "NewReplicaSetAvailable", "", 0)]}
    assert not deployment_timed_out(d, st, 10**6)


# ---- controller_utils -----------------------------------------------------------------------

def pod(name: str, phase: str = "Running", ready: str | None = None, node: str = "n1",
        created: str = "2026-01-01T00:00:00Z", cost: str | None = None, restarts: int = 0) -> dict[str, Any]:
    p: dict[str, Any] = {"metadata": {"name": name, "uid": name, "creationTimestamp": created,
                                      "annotations": {} if cost is None else
                                      {"controller.kubernetes.io/pod-deletion-cost": cost}},
                         "spec": {"nodeName": node}, "status": {"phase": phase,
                                                                "containerStatuses": [{"restartCount": restarts}]}}
    if ready is not None:
        p["status"]["conditions"] = [{"type": "Ready", "status": "True", "lastTransitionTime": ready}]
    return p


def test_deletion_order_follows_active_pods_ranking():
    now = 1_800_000_000.0
    pods = [
        pod("ready-old", ready="2026-01-01T00:00:00Z"),
        pod("unassigned", "Pending", node=""),
        pod("pending", "Pending"),
        pod("running-unready"),
        pod("ready-cheap", ready="2026-01-01T00:00:00Z", cost="-5"),
        pod("ready-restarting", ready="2026-01-01T00:00:00Z", restarts=4),
        pod("ready-bad-cost", ready="2026-01-01T00:00:00Z", cost="+5"),  # invalid: counts as 0
    ]
    order = [p["metadata"]["name"] for p in sort_pods_for_deletion(pods, now=now)]
    assert order[:5] == ["unassigned", "pending", "running-unready", "ready-cheap", "ready-restarting"]
    # doubled up first: a pod sharing its node with more related pods goes before one alone
    a, b = pod("a", ready="2026-01-01T00:00:00Z", node="busy"), pod("b", ready="2026-01-01T00:00:00Z", node="quiet")
    related = [a, b, pod("x", node="busy"), pod("y", node="busy")]
    ranks = pods_ranked_by_related_pods_on_same_node([b, a], related)
    assert ranks == [1, 3]
    assert [p["metadata"]["name"] for p in sort_pods_for_deletion([b, a], ranks, now)] == ["a", "b"]


def test_slow_start_batches_double_and_stop_at_the_first_failing_batch():
    calls: list[int] = []

    async def run(fail_after: int) -> tuple[int, BaseException | None]:
        async def fn() -> None:
            calls.append(1)
            if len(calls) > fail_after:
                raise RuntimeError("quota")
        return await slow_start_batch(10, 1, fn)

    assert asyncio.run(run(100)) == (10, None)  # 1 + 2 + 4 + 3
    calls.clear()
    ok, err = asyncio.run(run(4))  # batches 1, 2 succeed; the batch of 4 has 3 failures
    assert (ok, str(err), len(calls)) == (4, "quota", 7)


def test_expectations():
    e = ControllerExpectations()
    assert e.satisfied("ns/rs")
    e.expect_creations("ns/rs", 2)
    assert not e.satisfied("ns/rs")
    e.creation_observed("ns/rs")
    e.creation_observed("ns/rs")
    assert e.satisfied("ns/rs")
    e.expect_deletions("ns/rs", ["ns/a", "ns/b"])
    e.deletion_observed("ns/rs", "ns/a")
    e.deletion_observed("ns/rs", "ns/a")  # the same pod twice counts once
    assert not e.satisfied("ns/rs")
    e.deletion_observed("ns/rs", "ns/b")
    assert e.satisfied("ns/rs")
    e.expect_creations("ns/rs", 1)
    e.timeout = -1.0  # expired expectations no longer block
    assert e.satisfied("ns/rs")
