"""Local volumes across two real nodes (each in its own network namespace): the scheduler puts a
pod on the node holding its volume, refuses it with upstream's message when that node is
cordoned, and a WaitForFirstConsumer claim binds to the static PV of the node the pod can use."""

from __future__ import annotations

import pytest

from tests.e2e.kubelet_harness import busybox_pod
from tests.e2e.netns_cluster import NetnsCluster, netns_requirements
from tests.e2e.pv_helpers import MERGE, bind, claim_vol, make_pv, make_pvc, scheduling_message

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("pvnode-netns"), pytest.mark.timeout(240)]


@pytest.fixture(scope="module")
def nc(tmp_path_factory):
    netns_requirements()
    c = NetnsCluster(tmp_path_factory.mktemp("storage-nodes"), nodes=2)
    with c:
        yield c


def test_pod_follows_its_local_volume_and_cordon_refuses_it(nc, tmp_path):
    holder = nc.node_names[1]
    d = tmp_path / "vol"
    d.mkdir()
    make_pv(nc, "pv-n1", str(d), holder, "nodes-e2e", claim="n1")
    make_pvc(nc, "n1", "nodes-e2e", "pv-n1")
    bind(nc, "n1", "pv-n1")
    for i in range(2):
        nc.create(busybox_pod(f"user{i}", f"echo {i} > /data/u{i}; sleep 3600", volumes=claim_vol("n1")))
    for i in range(2):
        assert nc.wait_running(f"user{i}", 60)["spec"]["nodeName"] == holder
    nc.kubectl("cordon", holder)
    try:
        nc.create(busybox_pod("refused", "sleep 3600", volumes=claim_vol("n1")))
        msg = scheduling_message(nc, "refused")
        assert msg.startswith("0/2 nodes are available: 1 node(s) had volume node affinity conflict, "
                              "1 node(s) were unschedulable."), msg
    finally:
        nc.kubectl("uncordon", holder)
    nc.wait_running("refused", 60)  # the uncordon requeues it onto the holder
    assert nc.pod("refused")["spec"]["nodeName"] == holder


def test_wait_for_first_consumer_picks_the_node_with_a_volume(nc, tmp_path):
    nc.api("POST", "/apis/storage.k8s.io/v1/storageclasses", {
        "apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "wffc-nodes"},
        "provisioner": "kubernetes.io/no-provisioner", "volumeBindingMode": "WaitForFirstConsumer"})
    target = nc.node_names[0]
    d = tmp_path / "w"
    d.mkdir()
    make_pv(nc, "pv-w", str(d), target, "wffc-nodes")
    nc.api("PATCH", "/api/v1/persistentvolumes/pv-w/status", {"status": {"phase": "Available"}}, MERGE)
    make_pvc(nc, "w", "wffc-nodes")
    nc.create(busybox_pod("w-pod", "sleep 3600", volumes=claim_vol("w")))
    ref = nc.wait(lambda: nc.get("/api/v1/persistentvolumes/pv-w")["spec"].get("claimRef"), 30, "claimRef")
    assert ref["name"] == "w"
    bind(nc, "w", "pv-w")  # the PV controller's part
    assert nc.wait_running("w-pod", 60)["spec"]["nodeName"] == target
