"""The Node authorizer's graph walks that no served API reaches yet (upstream's
node_authorizer_test.go cases): ResourceClaims of a node's pods, Secrets named by the
PersistentVolumes of its pods' claims, node leases and CSINodes by the node's own name."""

from __future__ import annotations

from typing import Any

import pytest

from pyk8s.apiserver.authn import UserInfo
from pyk8s.apiserver.authz import RequestAttributes
from pyk8s.apiserver.node_authorizer import NodeAuthorizer

N1 = UserInfo(name="system:node:n1", groups=["system:nodes", "system:authenticated"])
PODS = [
    {"metadata": {"name": "p1", "namespace": "ns"}, "spec": {
        "nodeName": "n1", "containers": [],
        "resourceClaims": [{"name": "direct", "resourceClaimName": "claim-a"},
                           {"name": "templ", "resourceClaimTemplateName": "t"},
                           {"name": "pending", "resourceClaimTemplateName": "t"}],
        "volumes": [{"name": "v", "persistentVolumeClaim": {"claimName": "pvc1"}}]},
     "status": {"resourceClaimStatuses": [{"name": "templ", "resourceClaimName": "p1-templ-xyz"}]}},
    {"metadata": {"name": "p2", "namespace": "ns"}, "spec": {
        "nodeName": "n2", "containers": [], "resourceClaims": [{"name": "x", "resourceClaimName": "claim-b"}]}},
]
OBJECTS: dict[tuple[str, str, str | None, str], dict[str, Any]] = {
    ("", "persistentvolumeclaims", "ns", "pvc1"): {"spec": {"volumeName": "pv1"}},
    ("", "persistentvolumes", None, "pv1"): {"metadata": {"name": "pv1"}, "spec": {
        "claimRef": {"namespace": "ns"},
        "csi": {"driver": "d", "nodePublishSecretRef": {"name": "csi-secret", "namespace": "secrets-ns"}},
    }},
}


def _authz() -> NodeAuthorizer:
    return NodeAuthorizer(lambda ns: [p for p in PODS if ns is None or p["metadata"]["namespace"] == ns],
                          lambda g, r, ns, name: OBJECTS.get((g, r, ns, name)), [])


def _ask(**kw: Any) -> tuple[bool, str]:
    return _authz().authorize(N1, RequestAttributes(**kw))


@pytest.mark.parametrize("name, allowed", [("claim-a", True), ("p1-templ-xyz", True), ("claim-b", False),
                                           ("t", False)])
def test_resource_claims_of_its_pods(name: str, allowed: bool) -> None:
    ok, reason = _ask(verb="get", api_group="resource.k8s.io", resource="resourceclaims", namespace="ns", name=name)
    assert ok is allowed
    assert reason == ("" if allowed else "no relationship found between node 'n1' and this object")


def test_resource_claims_get_only() -> None:
    assert _ask(verb="list", api_group="resource.k8s.io", resource="resourceclaims", namespace="ns") == (
        False, "can only get individual resources of this type")


def test_secret_through_persistent_volume() -> None:
    assert _ask(verb="get", resource="secrets", namespace="secrets-ns", name="csi-secret") == (True, "")
    assert _ask(verb="get", resource="secrets", namespace="ns", name="csi-secret")[0] is False
    assert _ask(verb="get", resource="persistentvolumes", name="pv1") == (True, "")
    assert _ask(verb="get", resource="persistentvolumes", name="pv2")[0] is False


def test_lease_and_csinode_own_name_only() -> None:
    lease = {"api_group": "coordination.k8s.io", "resource": "leases"}
    assert _ask(verb="update", namespace="kube-node-lease", name="n1", **lease) == (True, "")
    assert _ask(verb="update", namespace="kube-node-lease", name="n2", **lease) == (
        False, "can only access node lease with the same name as the requesting node")
    assert _ask(verb="get", namespace="default", name="n1", **lease) == (
        False, 'can only access leases in the "kube-node-lease" system namespace')
    assert _ask(verb="list", namespace="kube-node-lease", **lease) == (
        False, "can only get, create, update, patch, or delete a node lease")
    csinode = {"api_group": "storage.k8s.io", "resource": "csinodes"}
    assert _ask(verb="get", name="n1", **csinode) == (True, "")
    assert _ask(verb="delete", name="n2", **csinode) == (
        False, "can only access CSINode with the same name as the requesting node")
