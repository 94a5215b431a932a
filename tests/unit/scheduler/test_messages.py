"""FailedScheduling messages pinned to the upstream transcript (reference/upstream-observed.md,
"scheduling failures"): four nodes node1..node4 of 4 cpu / 16Gi, node1 tainted
node-role.kubernetes.io/master:NoSchedule."""

from __future__ import annotations

import pytest
import yaml

from pyk8s.scheduler.config import default_profile
from pyk8s.scheduler.framework import Code, Diagnosis, Status
from pyk8s.scheduler.messages import fit_error_message, truncate_message
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

from ._fixtures import cluster, node, pod

MANIFEST = SHARED_MANIFESTS / "node-affinity-pod.yaml"
MASTER_TAINT = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]


@pytest.fixture
def transcript_profile():
    nodes = [node("node1", taints=MASTER_TAINT, labels={"kubernetes.io/os": "linux"})]
    nodes += [node(f"node{i}", labels={"kubernetes.io/os": "linux"}) for i in (2, 3, 4)]
    return default_profile(cluster(nodes))


def _node_affinity_pod() -> dict:
    if MANIFEST.exists():
        p = yaml.safe_load(MANIFEST.read_text())
    else:  # the manifest's content, should the shared reference move
        p = {"metadata": {"name": "node-affinity-pod"}, "spec": {
            "affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
                {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]}]}]}}},
            "containers": [{"name": "busybox", "image": "busybox"}]}}
    p["metadata"]["namespace"] = "default"
    return p


def test_match_fields_pin_reads_didnt_satisfy_plugin(transcript_profile):
    """transcript: node-affinity-pod (matchFields metadata.name In [node1])."""
    r = transcript_profile.schedule_one(_node_affinity_pod())
    assert r.node is None
    assert r.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
        "3 node(s) didn't satisfy plugin(s) [NodeAffinity]. preemption: 0/4 nodes are available: "
        "4 Preemption is not helpful for scheduling.")


def test_node_selector_mismatch_reads_didnt_match_affinity_selector(transcript_profile):
    """transcript: sel (nodeSelector disktype=ssd)."""
    sel = {"metadata": {"name": "sel", "namespace": "default"},
           "spec": {"nodeSelector": {"disktype": "ssd"}, "containers": [{"name": "c", "image": "busybox"}]}}
    r = transcript_profile.schedule_one(sel)
    assert r.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
        "3 node(s) didn't match Pod's node affinity/selector. preemption: 0/4 nodes are available: "
        "4 Preemption is not helpful for scheduling.")


def test_insufficient_cpu_reads_no_preemption_victims(transcript_profile):
    """transcript: big (requests cpu 64)."""
    big = {"metadata": {"name": "big", "namespace": "default"},
           "spec": {"containers": [{"name": "c", "image": "busybox", "resources": {"requests": {"cpu": "64"}}}]}}
    r = transcript_profile.schedule_one(big)
    assert r.message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
        "3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for scheduling, "
        "3 No preemption victims found for incoming pod.")


def test_insufficient_with_pending_pods_of_same_priority_still_has_no_victims(transcript_profile):
    """The transcript's nodes carried priority-0 pods (j, test-ds, testdemo): equal priority is no victim."""
    h = transcript_profile.handle
    for i, n in enumerate(("node2", "node3", "node4")):
        h.cache.add_pod(pod(f"existing-{i}", node_name=n, priority=0))
    big = pod("big", requests={"cpu": "64"})
    assert transcript_profile.schedule_one(big).message.endswith(
        "3 No preemption victims found for incoming pod.")


def test_ordinary_pod_is_scheduled_off_the_master(transcript_profile):
    r = transcript_profile.schedule_one(pod("ok"))
    assert r.node in {"node2", "node3", "node4"}
    assert r.message == ""


def test_daemonset_style_toleration_reaches_the_master(transcript_profile):
    """seed 002: a pod pinned to node1 that tolerates the master taint lands there."""
    p = _node_affinity_pod()
    p["spec"]["tolerations"] = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]
    assert transcript_profile.schedule_one(p).node == "node1"


def test_preemption_policy_never_message(transcript_profile):
    big = pod("big", requests={"cpu": "64"}, preemptionPolicy="Never")
    assert transcript_profile.schedule_one(big).message == (
        "0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: }, "
        "3 Insufficient cpu. preemption: not eligible due to preemptionPolicy=Never.")


def test_reasons_sorted_as_go_strings_and_multi_reason_statuses_counted():
    import numpy as np

    d = Diagnosis([f"n{i}" for i in range(12)], 12)
    mem = d.add_status(Status(Code.UNSCHEDULABLE, ("Insufficient memory",)))
    both = d.add_status(Status(Code.UNSCHEDULABLE, ("Insufficient cpu", "Insufficient memory")))
    d.set_rows(np.arange(10), mem)
    d.set_rows(np.array([10, 11]), both)
    # Byte order of "<count> <reason>": "12 ..." < "2 ..." although 2 < 12 numerically.
    assert fit_error_message(12, d) == "0/12 nodes are available: 12 Insufficient memory, 2 Insufficient cpu."


def test_prefilter_rejection_is_said_once():
    d = Diagnosis(["a", "b"], 2)
    d.pre_filter_msg = "pod affinity terms conflict"
    d.absent = Status(Code.UNSCHEDULABLE_AND_UNRESOLVABLE, ("pod affinity terms conflict",))
    assert fit_error_message(2, d) == "0/2 nodes are available: pod affinity terms conflict."


def test_truncate_message():
    assert truncate_message("x" * 2000).endswith(" ...")
    assert len(truncate_message("x" * 2000)) == 1024
    assert truncate_message("short") == "short"


def test_prefilter_rejection_in_a_full_cycle(transcript_profile):
    p = _node_affinity_pod()
    p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["node1"]},
                         {"key": "metadata.name", "operator": "In", "values": ["node2"]}]}]
    assert transcript_profile.schedule_one(p).message == (
        "0/4 nodes are available: pod affinity terms conflict. preemption: 0/4 nodes are available: "
        "4 Preemption is not helpful for scheduling.")


def test_prefilter_result_naming_no_existing_node(transcript_profile):
    p = _node_affinity_pod()
    p["spec"]["affinity"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]["nodeSelectorTerms"] = [
        {"matchFields": [{"key": "metadata.name", "operator": "In", "values": ["gone"]}]}]
    assert transcript_profile.schedule_one(p).message.startswith(
        "0/4 nodes are available: 4 node(s) didn't satisfy plugin(s) [NodeAffinity].")
