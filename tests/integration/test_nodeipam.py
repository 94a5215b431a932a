"""The node-ipam-controller (upstream's range allocator) in a real `pyk8s server`, through kubectl and the
official client: a /24 per Node from --cluster-cidr, podCIDRs a node brings respected, a deleted Node's
CIDR released and handed to a Node that was waiting, CIDRNotAvailable when the range is full."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from tests.cluster import Cluster

pytestmark = pytest.mark.xdist_group("nodeipam")

CLUSTER_CIDR = "10.77.0.0/22"  # room for four /24s


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path_factory.mktemp("nodeipam")), extra_args=["--cluster-cidr", CLUSTER_CIDR])
    c.start()
    yield c
    c.stop()


def wait(pred: Callable[[], Any], what: str, timeout: float = 15.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if v := pred():
            return v
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def node_manifest(name: str, cidr: str = "") -> str:
    spec = {"podCIDR": cidr, "podCIDRs": [cidr]} if cidr else {}
    return json.dumps({"apiVersion": "v1", "kind": "Node", "metadata": {"name": name}, "spec": spec})


def pod_cidrs(cluster: Cluster, name: str) -> list[str]:
    out = cluster.kubectl("get", "node", name, "-o", "jsonpath={.spec.podCIDRs}", check=False).stdout
    return json.loads(out) if out.strip() else []


def test_each_node_gets_its_own_cidr_and_a_node_s_own_is_respected(cluster: Cluster) -> None:
    cluster.kubectl("create", "-f", "-", input=node_manifest("own", "10.77.1.0/24"))  # as a kubelet's --pod-cidr
    for n in ("a", "b"):
        cluster.kubectl("create", "-f", "-", input=node_manifest(n))
    got = {n: wait(lambda n=n: pod_cidrs(cluster, n), f"podCIDRs of {n}") for n in ("a", "b")}
    assert sorted(c for v in got.values() for c in v) == ["10.77.0.0/24", "10.77.2.0/24"]  # 10.77.1.0/24 is own's
    from kubernetes import client

    node = client.CoreV1Api(cluster.api_client()).read_node("a")
    assert node.spec.pod_cidr == node.spec.pod_cidrs[0]
    assert pod_cidrs(cluster, "own") == ["10.77.1.0/24"]


def test_a_full_range_reports_cidr_not_available_and_a_release_serves_the_waiting_node(cluster: Cluster) -> None:
    cluster.kubectl("create", "-f", "-", input=node_manifest("c"))
    assert wait(lambda: pod_cidrs(cluster, "c"), "podCIDRs of c") == ["10.77.3.0/24"]
    cluster.kubectl("create", "-f", "-", input=node_manifest("waiting"))

    def not_available() -> bool:
        out = cluster.kubectl("get", "events", "-A", "--field-selector", "involvedObject.name=waiting",
                              "-o", "json").stdout
        return any(e["reason"] == "CIDRNotAvailable" and e["message"] == "Node waiting status is now: CIDRNotAvailable"
                   for e in json.loads(out)["items"])

    wait(not_available, "CIDRNotAvailable event")
    assert pod_cidrs(cluster, "waiting") == []
    freed = pod_cidrs(cluster, "a")
    cluster.kubectl("delete", "node", "a")
    assert wait(lambda: pod_cidrs(cluster, "waiting"), "podCIDRs of waiting") == freed


def test_node_ipam_controller_is_known_by_upstream_s_name(cluster: Cluster) -> None:
    from pyk8s.controllers.manager import select_controllers

    assert "nodeipam" in select_controllers(["*"])
    assert "nodeipam" not in select_controllers(["*", "-node-ipam-controller"])
    assert os.path.exists(cluster.kubeconfig)


def test_the_controller_manager_process_allocates_too(tmp_path_factory: pytest.TempPathFactory) -> None:
    """`pyk8s server --controller-manager-process` hands --allocate-node-cidrs and its --cluster-cidr to the child."""
    c = Cluster(str(tmp_path_factory.mktemp("nodeipam-cm")),
                extra_args=["--cluster-cidr", "10.78.0.0/16", "--controller-manager-process"])
    c.start()
    try:
        c.kubectl("create", "-f", "-", input=node_manifest("n"))
        assert wait(lambda: pod_cidrs(c, "n"), "podCIDRs of n", 30) == ["10.78.0.0/24"]
    finally:
        c.stop()
