"""Garbage collector through a real server: background, foreground and orphan deletion,
dangling and invalid owner references, cluster-scoped and custom-resource owners.

Upstream references: pkg/controller/garbagecollector and the "Garbage Collection" concept
page (owner references must name an owner in the same namespace or a cluster-scoped one).
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from typing import Any

from tests.cluster import Cluster, raw_request

CM = "/api/v1/namespaces/{ns}/configmaps"


def req(c: Cluster, method: str, path: str, body: Any = None, ctype: str | None = None) -> Any:
    headers = {"Content-Type": ctype} if ctype else None
    r = raw_request(c, method, path, body, headers=headers)
    if r.status >= 400:
        raise AssertionError(f"{method} {path}: {r.status} {r.body[:500]!r}")
    return r.json() if r.body else None


def get_or_none(c: Cluster, path: str) -> Any:
    r = raw_request(c, "GET", path)
    if r.status == 404:
        return None
    assert r.status == 200, r.body
    return r.json()


def wait_for(cond: Callable[[], Any], timeout: float = 20.0, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def ref(obj: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"apiVersion": obj["apiVersion"], "kind": obj["kind"], "name": obj["metadata"]["name"],
            "uid": obj["metadata"]["uid"], **extra}


def cm(c: Cluster, ns: str, name: str, owners: list[dict[str, Any]] | None = None,
       finalizers: list[str] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if owners:
        md["ownerReferences"] = owners
    if finalizers:
        md["finalizers"] = finalizers
    return req(c, "POST", CM.format(ns=ns), {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md})


def gone(c: Cluster, path: str) -> Callable[[], bool]:
    return lambda: get_or_none(c, path) is None


def ensure_ns(c: Cluster, ns: str) -> None:
    if get_or_none(c, f"/api/v1/namespaces/{ns}") is None:
        req(c, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})


def test_background_deletes_dependents_of_a_deleted_owner(cluster):
    owner = cm(cluster, "default", "bg-owner")
    cm(cluster, "default", "bg-dep1", [ref(owner)])
    cm(cluster, "default", "bg-dep2", [ref(owner, controller=True, blockOwnerDeletion=True)])
    grandchild_owner = get_or_none(cluster, CM.format(ns="default") + "/bg-dep1")
    cm(cluster, "default", "bg-grandchild", [ref(grandchild_owner)])
    time.sleep(0.5)
    assert get_or_none(cluster, CM.format(ns="default") + "/bg-dep1") is not None  # owner alive: kept
    req(cluster, "DELETE", CM.format(ns="default") + "/bg-owner", {"propagationPolicy": "Background"})
    for name in ("bg-dep1", "bg-dep2", "bg-grandchild"):
        wait_for(gone(cluster, CM.format(ns="default") + "/" + name), what=f"{name} collected")


def test_dangling_reference_and_uid_mismatch_are_collected(cluster):
    base = CM.format(ns="default")
    cm(cluster, "default", "dg-missing", [{"apiVersion": "v1", "kind": "ConfigMap", "name": "no-such-owner",
                                           "uid": str(uuid.uuid4())}])
    owner = cm(cluster, "default", "dg-owner")
    # same name, another uid: counts as absent, as upstream
    cm(cluster, "default", "dg-mismatch", [dict(ref(owner), uid=str(uuid.uuid4()))])
    good = cm(cluster, "default", "dg-good", [ref(owner)])
    wait_for(gone(cluster, base + "/dg-missing"), what="dependent of a missing owner collected")
    wait_for(gone(cluster, base + "/dg-mismatch"), what="dependent of a uid-mismatched owner collected")
    assert get_or_none(cluster, base + "/dg-good")["metadata"]["uid"] == good["metadata"]["uid"]


def test_one_remaining_owner_keeps_the_dependent_and_drops_the_dangling_reference(cluster):
    base = CM.format(ns="default")
    a = cm(cluster, "default", "mo-a")
    b = cm(cluster, "default", "mo-b")
    cm(cluster, "default", "mo-dep", [ref(a), ref(b)])
    req(cluster, "DELETE", base + "/mo-a")
    wait_for(lambda: [r["name"] for r in get_or_none(cluster, base + "/mo-dep")["metadata"].get("ownerReferences", [])]
             == ["mo-b"], what="dangling reference removed")
    req(cluster, "DELETE", base + "/mo-b")
    wait_for(gone(cluster, base + "/mo-dep"), what="dependent collected after its last owner")


def test_foreground_deletion_waits_for_blocking_dependents(cluster):
    base = CM.format(ns="default")
    owner = cm(cluster, "default", "fg-owner")
    # a finalizer of our own keeps the blocking dependent around, so the wait is observable
    cm(cluster, "default", "fg-block", [ref(owner, blockOwnerDeletion=True)], finalizers=["example.com/hold"])
    cm(cluster, "default", "fg-free", [ref(owner)])
    req(cluster, "DELETE", base + "/fg-owner", {"propagationPolicy": "Foreground"})
    o = get_or_none(cluster, base + "/fg-owner")
    assert o["metadata"]["finalizers"] == ["foregroundDeletion"] and o["metadata"].get("deletionTimestamp")
    wait_for(lambda: (get_or_none(cluster, base + "/fg-block") or {}).get("metadata", {}).get("deletionTimestamp"),
             what="blocking dependent being deleted")
    wait_for(gone(cluster, base + "/fg-free"), what="non-blocking dependent deleted")
    time.sleep(1.0)
    assert get_or_none(cluster, base + "/fg-owner") is not None, "owner must wait for its blocking dependent"
    req(cluster, "PATCH", base + "/fg-block", {"metadata": {"finalizers": None}}, "application/merge-patch+json")
    wait_for(gone(cluster, base + "/fg-block"), what="blocking dependent gone")
    wait_for(gone(cluster, base + "/fg-owner"), what="owner deleted after its dependents")


def test_orphan_deletion_removes_owner_references(cluster):
    base = CM.format(ns="default")
    owner = cm(cluster, "default", "or-owner")
    other = cm(cluster, "default", "or-other")
    cm(cluster, "default", "or-dep1", [ref(owner, controller=True, blockOwnerDeletion=True)])
    cm(cluster, "default", "or-dep2", [ref(owner), ref(other)])
    req(cluster, "DELETE", base + "/or-owner", {"propagationPolicy": "Orphan"})
    wait_for(gone(cluster, base + "/or-owner"), what="owner deleted once orphaning is done")
    d1 = get_or_none(cluster, base + "/or-dep1")
    d2 = get_or_none(cluster, base + "/or-dep2")
    assert d1 is not None and not d1["metadata"].get("ownerReferences")
    assert [r["name"] for r in d2["metadata"]["ownerReferences"]] == ["or-other"]
    time.sleep(0.5)
    assert get_or_none(cluster, base + "/or-dep1") is not None


def test_cluster_scoped_owner_of_namespaced_dependents(cluster):
    base = CM.format(ns="default")
    cr = req(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
             {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole", "metadata": {"name": "gc-owner"},
              "rules": []})
    cm(cluster, "default", "cs-dep", [ref(cr)])
    time.sleep(1.0)
    assert get_or_none(cluster, base + "/cs-dep") is not None
    req(cluster, "DELETE", "/apis/rbac.authorization.k8s.io/v1/clusterroles/gc-owner")
    wait_for(gone(cluster, base + "/cs-dep"), what="dependent of a deleted cluster-scoped owner collected")


def test_cross_namespace_owner_is_invalid(cluster):
    ensure_ns(cluster, "gc-a")
    ensure_ns(cluster, "gc-b")
    owner = cm(cluster, "gc-a", "xn-owner")
    dep = cm(cluster, "gc-b", "xn-dep", [ref(owner)])
    wait_for(gone(cluster, CM.format(ns="gc-b") + "/xn-dep"), what="cross-namespace dependent collected")
    assert get_or_none(cluster, CM.format(ns="gc-a") + "/xn-owner") is not None

    def event():
        evs = req(cluster, "GET", "/api/v1/namespaces/gc-b/events?fieldSelector=reason%3DOwnerRefInvalidNamespace")
        return [e for e in evs["items"] if e["involvedObject"].get("uid") == dep["metadata"]["uid"]]

    ev = wait_for(event, what="OwnerRefInvalidNamespace event")[0]
    assert ev["type"] == "Warning"
    assert ev["message"] == (f"ownerRef [v1/ConfigMap, namespace: gc-b, name: xn-owner, uid: {owner['metadata']['uid']}]"
                             ' does not exist in namespace "gc-b"')
    assert ev["source"]["component"] == "garbage-collector-controller"


def test_cluster_scoped_dependent_of_namespaced_kind_is_left_alone(cluster):
    owner = cm(cluster, "default", "csn-owner")
    req(cluster, "POST", "/apis/rbac.authorization.k8s.io/v1/clusterroles",
        {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRole",
         "metadata": {"name": "gc-csn-dep", "ownerReferences": [ref(owner)]}, "rules": []})
    req(cluster, "DELETE", CM.format(ns="default") + "/csn-owner")
    time.sleep(2.0)
    # upstream: an unresolvable reference; the object is never collected
    assert get_or_none(cluster, "/apis/rbac.authorization.k8s.io/v1/clusterroles/gc-csn-dep") is not None


def test_custom_resource_owner(cluster):
    crd = {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.gc.example.com"},
        "spec": {"group": "gc.example.com", "scope": "Namespaced",
                 "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]},
    }
    req(cluster, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", crd)
    path = "/apis/gc.example.com/v1/namespaces/default/widgets"

    def create():
        r = raw_request(cluster, "POST", path, {"apiVersion": "gc.example.com/v1", "kind": "Widget",
                                                 "metadata": {"name": "w1"}})
        return r.json() if r.status == 201 else None

    w = wait_for(create, what="custom resource served")
    cm(cluster, "default", "cr-dep", [ref(w, blockOwnerDeletion=True)])
    # a custom dependent of a custom owner, foreground: exercises monitors added after discovery
    child = req(cluster, "POST", path, {"apiVersion": "gc.example.com/v1", "kind": "Widget",
                                        "metadata": {"name": "w2", "ownerReferences": [ref(w, blockOwnerDeletion=True)]}})
    assert child["metadata"]["ownerReferences"][0]["uid"] == w["metadata"]["uid"]
    req(cluster, "DELETE", path + "/w1", {"propagationPolicy": "Foreground"})
    wait_for(gone(cluster, CM.format(ns="default") + "/cr-dep"), timeout=40, what="dependent of a custom owner")
    wait_for(gone(cluster, path + "/w2"), timeout=40, what="custom dependent collected")
    wait_for(gone(cluster, path + "/w1"), timeout=40, what="custom owner deleted after its dependents")


def test_kubectl_delete_cascade_modes(cluster):
    base = CM.format(ns="default")
    owner = cm(cluster, "default", "kc-owner")
    cm(cluster, "default", "kc-dep", [ref(owner)])
    cluster.kubectl("delete", "configmap", "kc-owner", "--cascade=orphan")
    wait_for(gone(cluster, base + "/kc-owner"), what="owner deleted")
    time.sleep(0.5)
    d = get_or_none(cluster, base + "/kc-dep")
    assert d is not None and not d["metadata"].get("ownerReferences")
    owner = cm(cluster, "default", "kc-owner2")
    cm(cluster, "default", "kc-dep2", [ref(owner, blockOwnerDeletion=True)])
    out = cluster.kubectl("delete", "configmap", "kc-owner2", "--cascade=foreground").stdout
    assert 'configmap "kc-owner2" deleted' in out
    wait_for(gone(cluster, base + "/kc-dep2"), what="foreground dependent")
    wait_for(gone(cluster, base + "/kc-owner2"), what="foreground owner")
