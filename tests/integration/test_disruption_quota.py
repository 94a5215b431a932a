"""PodDisruptionBudget status and eviction (incl. `kubectl drain`), and ResourceQuota
status and admission, through a real server.

Upstream references: pkg/controller/disruption, plugin/pkg/admission/resourcequota,
and the quota walkthrough in the seed notes (E21/E22: four pods fit `pods: 4`, the fifth
is refused with "exceeded quota: compute-resources, requested: pods=1, used: pods=4,
limited: pods=4").
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.integration.test_gc import get_or_none, req, wait_for
from tests.integration.test_nodelifecycle import Kubelets

MERGE = "application/merge-patch+json"
PDBS = "/apis/policy/v1/namespaces/{ns}/poddisruptionbudgets"
PODS = "/api/v1/namespaces/{ns}/pods"
POOLS = "/apis/pdb.example.com/v1/namespaces/{ns}/pools"


@pytest.fixture(scope="module")
def kubelets(cluster):
    k = Kubelets(cluster)
    yield k
    k.close()


def ensure_ns(c: Cluster, ns: str) -> None:
    if get_or_none(c, f"/api/v1/namespaces/{ns}") is None:
        req(c, "POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": ns}})
    wait_for(lambda: get_or_none(c, f"/api/v1/namespaces/{ns}/serviceaccounts/default"), what="default SA")


def pod(c: Cluster, ns: str, name: str, labels: dict[str, str], node: str | None = None, ready: bool = True,
        owner: dict[str, Any] | None = None, resources: dict[str, Any] | None = None,
        volumes: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name, "labels": labels}
    if owner:
        md["ownerReferences"] = [owner]
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "nginx", **({"resources": resources} if resources else {})}]}
    if node:
        spec["nodeName"] = node
    if volumes:
        spec["volumes"] = volumes
    p = req(c, "POST", PODS.format(ns=ns), {"apiVersion": "v1", "kind": "Pod", "metadata": md, "spec": spec})
    set_ready(c, ns, name, ready)
    return p


def set_ready(c: Cluster, ns: str, name: str, ready: bool) -> None:
    req(c, "PATCH", f"{PODS.format(ns=ns)}/{name}/status", {"status": {"phase": "Running", "conditions": [
        {"type": "Ready", "status": "True" if ready else "False"}]}}, MERGE)


def pdb_status(c: Cluster, ns: str, name: str) -> dict[str, Any]:
    return (get_or_none(c, f"{PDBS.format(ns=ns)}/{name}") or {}).get("status") or {}


def wait_status(c: Cluster, ns: str, name: str, **want: Any) -> dict[str, Any]:
    def ok():
        st = pdb_status(c, ns, name)
        return st if all(st.get(k) == v for k, v in want.items()) else None

    try:
        return wait_for(ok, what=f"pdb {name} status {want}")
    except AssertionError:
        raise AssertionError(f"pdb {name}: wanted {want}, have {pdb_status(c, ns, name)}") from None


def pdb(c: Cluster, ns: str, name: str, selector: dict[str, Any], **spec: Any) -> dict[str, Any]:
    return req(c, "POST", PDBS.format(ns=ns), {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                               "metadata": {"name": name}, "spec": {"selector": selector, **spec}})


def ensure_pool_crd(c: Cluster) -> None:
    if get_or_none(c, "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/pools.pdb.example.com") is not None:
        return
    req(c, "POST", "/apis/apiextensions.k8s.io/v1/customresourcedefinitions", {
        "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
        "metadata": {"name": "pools.pdb.example.com"},
        "spec": {"group": "pdb.example.com", "scope": "Namespaced",
                 "names": {"plural": "pools", "singular": "pool", "kind": "Pool"},
                 "versions": [{"name": "v1", "served": True, "storage": True,
                               "subresources": {"scale": {"specReplicasPath": ".spec.replicas",
                                                          "statusReplicasPath": ".status.replicas"},
                                                "status": {}},
                               "schema": {"openAPIV3Schema": {"type": "object",
                                                              "x-kubernetes-preserve-unknown-fields": True}}}]}})


def pool(c: Cluster, ns: str, name: str, replicas: int) -> dict[str, Any]:
    """A custom controller with a scale subresource: the disruption controller's generic finder."""
    ensure_pool_crd(c)

    def create():
        r = raw_request(c, "POST", POOLS.format(ns=ns), {"apiVersion": "pdb.example.com/v1", "kind": "Pool",
                                                         "metadata": {"name": name}, "spec": {"replicas": replicas}})
        return r.json() if r.status == 201 else None

    return wait_for(create, what="pool created")


def ctl(owner: dict[str, Any]) -> dict[str, Any]:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": owner["metadata"]["name"],
            "uid": owner["metadata"]["uid"], "controller": True, "blockOwnerDeletion": True}


def evict(c: Cluster, ns: str, name: str) -> Any:
    return raw_request(c, "POST", f"{PODS.format(ns=ns)}/{name}/eviction",
                       {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns}})


# ---- PodDisruptionBudget ------------------------------------------------------------------
def test_min_available_integer_with_unmanaged_pods(cluster):
    ns = "pdb-a"
    ensure_ns(cluster, ns)
    for i in range(3):
        pod(cluster, ns, f"db-{i}", {"app": "db"})
    pdb(cluster, ns, "db", {"matchLabels": {"app": "db"}}, minAvailable=2)
    st = wait_status(cluster, ns, "db", currentHealthy=3, desiredHealthy=2, expectedPods=3, disruptionsAllowed=1,
                     observedGeneration=1)
    c = st["conditions"][0]
    assert (c["type"], c["status"], c["reason"], c["message"], c["observedGeneration"]) == (
        "DisruptionAllowed", "True", "SufficientPods", "", 1)
    assert c["lastTransitionTime"]
    set_ready(cluster, ns, "db-1", False)
    st = wait_status(cluster, ns, "db", currentHealthy=2, disruptionsAllowed=0)
    assert st["conditions"][0]["reason"] == "InsufficientPods" and st["conditions"][0]["status"] == "False"
    out = cluster.kubectl("get", "pdb", "db", "-n", ns).stdout.splitlines()
    assert out[0].split() == ["NAME", "MIN", "AVAILABLE", "MAX", "UNAVAILABLE", "ALLOWED", "DISRUPTIONS", "AGE"]
    assert out[1].split()[:4] == ["db", "2", "N/A", "0"]
    # a spec change bumps the generation; the controller catches up
    req(cluster, "PATCH", f"{PDBS.format(ns=ns)}/db", {"spec": {"minAvailable": 1}}, MERGE)
    wait_status(cluster, ns, "db", desiredHealthy=1, disruptionsAllowed=1, observedGeneration=2)
    # evictions in flight (as the eviction API records them) are not healthy; after 2 minutes they are forgotten
    now = time.time()
    recent = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 10))
    stale = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(now - 180))
    req(cluster, "PATCH", f"{PDBS.format(ns=ns)}/db/status",
        {"status": {"disruptedPods": {"db-0": recent, "db-2": stale}}}, MERGE)
    st = wait_status(cluster, ns, "db", currentHealthy=1, disruptionsAllowed=0)
    assert st["disruptedPods"] == {"db-0": recent}


def test_percentages_and_max_unavailable_use_the_controllers_scale(cluster):
    ns = "pdb-b"
    ensure_ns(cluster, ns)
    p = pool(cluster, ns, "web", 4)
    for i in range(3):  # one replica missing: the scale says 4
        pod(cluster, ns, f"web-{i}", {"app": "web"}, owner=ctl(p))
    pdb(cluster, ns, "mu", {"matchLabels": {"app": "web"}}, maxUnavailable=1)
    wait_status(cluster, ns, "mu", expectedPods=4, desiredHealthy=3, currentHealthy=3, disruptionsAllowed=0)
    pdb(cluster, ns, "mu-pct", {"matchLabels": {"app": "web"}}, maxUnavailable="50%")
    wait_status(cluster, ns, "mu-pct", expectedPods=4, desiredHealthy=2, disruptionsAllowed=1)
    pdb(cluster, ns, "ma-pct", {"matchLabels": {"app": "web"}}, minAvailable="60%")  # ceil(2.4) = 3
    wait_status(cluster, ns, "ma-pct", expectedPods=4, desiredHealthy=3, disruptionsAllowed=0)
    # scaling the controller changes the denominator (seen on the periodic or next pod-driven resync)
    req(cluster, "PATCH", f"{POOLS.format(ns=ns)}/web", {"spec": {"replicas": 3}}, MERGE)
    set_ready(cluster, ns, "web-0", True)  # any pod event makes the controller look again
    wait_status(cluster, ns, "mu", expectedPods=3, desiredHealthy=2, disruptionsAllowed=1)


def test_unmanaged_pods_and_scale_less_controllers(cluster):
    ns = "pdb-c"
    ensure_ns(cluster, ns)
    pod(cluster, ns, "lone", {"app": "lone"})
    pdb(cluster, ns, "lone", {"matchLabels": {"app": "lone"}}, maxUnavailable=1)
    wait_status(cluster, ns, "lone", expectedPods=0, currentHealthy=1, disruptionsAllowed=0)
    evs = wait_for(lambda: [e for e in req(cluster, "GET", f"/api/v1/namespaces/{ns}/events")["items"]
                            if e["reason"] == "UnmanagedPods"], what="UnmanagedPods event")
    assert evs[0]["type"] == "Warning" and "were found to be unmanaged" in evs[0]["message"]
    cm = req(cluster, "POST", f"/api/v1/namespaces/{ns}/configmaps",
             {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "owner"}})
    pod(cluster, ns, "odd", {"app": "odd"}, owner=ctl(cm))
    pdb(cluster, ns, "odd", {"matchLabels": {"app": "odd"}}, maxUnavailable=1)

    def failed():
        conds = pdb_status(cluster, ns, "odd").get("conditions") or []
        return conds[0] if conds and conds[0]["reason"] == "SyncFailed" else None

    c = wait_for(failed, what="SyncFailed")
    assert c["status"] == "False" and c["message"] == "configmaps does not implement the scale subresource"
    assert pdb_status(cluster, ns, "odd")["disruptionsAllowed"] == 0
    pdb(cluster, ns, "none", {"matchLabels": {"app": "nothing"}}, minAvailable=1)
    wait_status(cluster, ns, "none", expectedPods=0, disruptionsAllowed=0, observedGeneration=1)
    assert [e for e in req(cluster, "GET", f"/api/v1/namespaces/{ns}/events")["items"]
            if e["reason"] == "NoPods" and e["involvedObject"]["name"] == "none"][0]["message"] == "No matching pods found"


def test_eviction_respects_the_budget_and_records_disrupted_pods(cluster, kubelets):
    ns = "pdb-d"
    ensure_ns(cluster, ns)
    kubelets.add("pdb-node1")
    p = pool(cluster, ns, "api", 3)
    for i in range(3):
        pod(cluster, ns, f"api-{i}", {"app": "api"}, node="pdb-node1", owner=ctl(p))
    pdb(cluster, ns, "api", {"matchLabels": {"app": "api"}}, minAvailable=2)
    wait_status(cluster, ns, "api", currentHealthy=3, disruptionsAllowed=1)
    r = evict(cluster, ns, "api-0")
    assert r.status == 201, r.body
    r = evict(cluster, ns, "api-1")
    assert r.status == 429, r.body
    assert r.json()["message"] == "Cannot evict pod as it would violate the pod's disruption budget."
    # api-0 is terminating (no kubelet finishes it): not healthy, and no longer "disrupted" either
    st = wait_status(cluster, ns, "api", currentHealthy=2, disruptionsAllowed=0)
    assert "api-0" not in (st.get("disruptedPods") or {})


def test_kubectl_drain_waits_for_the_budget(cluster, kubelets):
    ns = "pdb-e"
    ensure_ns(cluster, ns)
    kubelets.add("drain-node")
    kubelets.add("drain-other")
    kubelets.reaping.update({"drain-node", "drain-other"})
    p = pool(cluster, ns, "shop", 3)
    pod(cluster, ns, "shop-0", {"app": "shop"}, node="drain-node", owner=ctl(p),
        volumes=[{"name": "scratch", "emptyDir": {}}])
    pod(cluster, ns, "shop-1", {"app": "shop"}, node="drain-node", owner=ctl(p))
    pod(cluster, ns, "shop-2", {"app": "shop"}, node="drain-other", owner=ctl(p))
    pdb(cluster, ns, "shop", {"matchLabels": {"app": "shop"}}, minAvailable=2)
    wait_status(cluster, ns, "shop", currentHealthy=3, disruptionsAllowed=1)
    r = cluster.kubectl("drain", "drain-node", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=12s",
                        check=False, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode != 0, out
    assert "node/drain-node cordoned" in out
    assert "Cannot evict pod as it would violate the pod's disruption budget." in out
    # one pod went (the budget allowed one disruption), the other is still there
    on_node = [x["metadata"]["name"] for x in req(cluster, "GET", f"{PODS.format(ns=ns)}?fieldSelector=spec.nodeName%3Ddrain-node")["items"]]
    assert len(on_node) == 1, on_node
    assert get_or_none(cluster, "/api/v1/nodes/drain-node")["spec"]["unschedulable"] is True
    # the controller's replacement comes up elsewhere: the budget allows another disruption
    pod(cluster, ns, "shop-3", {"app": "shop"}, node="drain-other", owner=ctl(p))
    wait_status(cluster, ns, "shop", currentHealthy=3, disruptionsAllowed=1)
    r = cluster.kubectl("drain", "drain-node", "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=30s",
                        check=False, timeout=60)
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    assert f"pod/{on_node[0]} evicted" in out and "node/drain-node drained" in out
    kubelets.reaping.clear()


# ---- ResourceQuota ------------------------------------------------------------------------
COMPUTE = {"pods": "4", "requests.cpu": "1", "requests.memory": "1Gi", "limits.cpu": "2", "limits.memory": "2Gi"}
SMALL = {"requests": {"cpu": "100m", "memory": "100Mi"}, "limits": {"cpu": "200m", "memory": "200Mi"}}


def quota(c: Cluster, ns: str, name: str, hard: dict[str, str], **spec: Any) -> dict[str, Any]:
    return req(c, "POST", f"/api/v1/namespaces/{ns}/resourcequotas",
               {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": {"name": name}, "spec": {"hard": hard, **spec}})


def used(c: Cluster, ns: str, name: str) -> dict[str, str]:
    return ((get_or_none(c, f"/api/v1/namespaces/{ns}/resourcequotas/{name}") or {}).get("status") or {}).get("used") or {}


def create_pod(c: Cluster, ns: str, name: str, resources: dict[str, Any] | None = None, **spec: Any) -> Any:
    body = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"containers": [{"name": "c", "image": "nginx", **({"resources": resources} if resources else {})}],
                     **spec}}
    return raw_request(c, "POST", PODS.format(ns=ns), body)


def test_quota_status_and_compute_admission(cluster):
    ns = "myspace"
    ensure_ns(cluster, ns)
    quota(cluster, ns, "compute-resources", COMPUTE)
    wait_for(lambda: used(cluster, ns, "compute-resources") == {k: "0" for k in COMPUTE}, what="quota status")
    q = get_or_none(cluster, f"/api/v1/namespaces/{ns}/resourcequotas/compute-resources")
    assert q["status"]["hard"] == COMPUTE
    out = cluster.kubectl("describe", "quota", "compute-resources", "-n", ns).stdout
    assert out.splitlines()[:9] == [
        "Name:            compute-resources", "Namespace:       myspace",
        "Resource         Used  Hard", "--------         ----  ----",
        "limits.cpu       0     2", "limits.memory    0     2Gi", "pods             0     4",
        "requests.cpu     0     1", "requests.memory  0     1Gi"]
    r = create_pod(cluster, ns, "bare")
    assert r.status == 403
    assert r.json()["message"] == ('pods "bare" is forbidden: failed quota: compute-resources: must specify '
                                   "limits.cpu for: c; limits.memory for: c; requests.cpu for: c; requests.memory for: c")
    for i in range(1, 5):
        r = create_pod(cluster, ns, f"p{i}", SMALL)
        assert r.status == 201, r.body
    r = cluster.kubectl("run", "p5", "-n", ns, "--image=nginx", "--overrides",
                        '{"spec":{"containers":[{"name":"p5","image":"nginx","resources":'
                        '{"requests":{"cpu":"100m","memory":"100Mi"},"limits":{"cpu":"200m","memory":"200Mi"}}}]}}',
                        check=False)
    assert r.returncode != 0
    assert ('pods "p5" is forbidden: exceeded quota: compute-resources, requested: pods=1, used: pods=4, '
            "limited: pods=4") in r.stderr
    assert used(cluster, ns, "compute-resources") == {"limits.cpu": "800m", "limits.memory": "800Mi", "pods": "4",
                                                       "requests.cpu": "400m", "requests.memory": "400Mi"}
    # several limits at once: every exceeded one is named, sorted
    big = {"requests": {"cpu": "800m", "memory": "100Mi"}, "limits": {"cpu": "1500m", "memory": "200Mi"}}
    req(cluster, "PATCH", f"/api/v1/namespaces/{ns}/pods/p4/status", {"status": {"phase": "Succeeded"}}, MERGE)
    wait_for(lambda: used(cluster, ns, "compute-resources").get("pods") == "3", what="terminal pod released")
    r = create_pod(cluster, ns, "big", big)
    assert r.status == 403
    assert r.json()["message"] == ('pods "big" is forbidden: exceeded quota: compute-resources, '
                                   "requested: limits.cpu=1500m,requests.cpu=800m, used: limits.cpu=600m,"
                                   "requests.cpu=300m, limited: limits.cpu=2,requests.cpu=1")
    r = create_pod(cluster, ns, "p5", SMALL)  # a terminal pod no longer counts toward pods
    assert r.status == 201, r.body
    r = raw_request(cluster, "DELETE", f"/api/v1/namespaces/{ns}/pods/p1", {"gracePeriodSeconds": 0})
    assert r.status == 200
    wait_for(lambda: used(cluster, ns, "compute-resources").get("requests.cpu") == "300m", what="release on delete")
    ns_desc = cluster.kubectl("describe", "namespace", ns).stdout
    assert "Resource Quotas" in ns_desc and "compute-resources" in ns_desc


def test_object_count_quotas(cluster):
    ns = "quota-obj"
    ensure_ns(cluster, ns)
    quota(cluster, ns, "objects", {"services": "1", "services.nodeports": "1", "configmaps": "2",
                                   "count/deployments.apps": "1", "count/secrets": "1"})
    # kube-root-ca.crt is already one configmap
    wait_for(lambda: used(cluster, ns, "objects").get("configmaps") == "1", what="configmaps counted")
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s1"},
           "spec": {"type": "NodePort", "ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]}}
    r = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/services", svc)
    assert r.status == 403
    assert r.json()["message"] == ('services "s1" is forbidden: exceeded quota: objects, requested: '
                                   "services.nodeports=2, used: services.nodeports=0, limited: services.nodeports=1")
    svc["spec"] = {"ports": [{"port": 80}]}
    assert raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/services", svc).status == 201
    svc["metadata"]["name"] = "s2"
    r = raw_request(cluster, "POST", f"/api/v1/namespaces/{ns}/services", svc)
    assert r.status == 403 and r.json()["message"] == (
        'services "s2" is forbidden: exceeded quota: objects, requested: services=1, used: services=1, '
        "limited: services=1")
    # a ClusterIP service turned NodePort is charged on update
    r = raw_request(cluster, "PATCH", f"/api/v1/namespaces/{ns}/services/s1",
                    {"spec": {"type": "NodePort", "ports": [{"port": 80, "name": "a"}, {"port": 81, "name": "b"}]}},
                    headers={"Content-Type": MERGE})
    assert r.status == 403 and "exceeded quota: objects, requested: services.nodeports=2" in r.json()["message"]
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d1"},
           "spec": {"replicas": 0, "selector": {"matchLabels": {"a": "b"}},
                    "template": {"metadata": {"labels": {"a": "b"}}, "spec": {"containers": [{"name": "c", "image": "x"}]}}}}
    assert raw_request(cluster, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", dep).status == 201
    dep["metadata"]["name"] = "d2"
    r = raw_request(cluster, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", dep)
    assert r.status == 403 and r.json()["message"] == (
        'deployments.apps "d2" is forbidden: exceeded quota: objects, requested: count/deployments.apps=1, '
        "used: count/deployments.apps=1, limited: count/deployments.apps=1")
    wait_for(lambda: used(cluster, ns, "objects") == {"configmaps": "1", "count/deployments.apps": "1",
                                                       "count/secrets": "0", "services": "1",
                                                       "services.nodeports": "0"}, what="counted objects")
    cluster.kubectl("delete", "deployment", "d1", "-n", ns)
    wait_for(lambda: used(cluster, ns, "objects").get("count/deployments.apps") == "0", timeout=30,
             what="deployment count released")


def test_scoped_quota_counts_only_matching_pods(cluster):
    ns = "quota-scope"
    ensure_ns(cluster, ns)
    quota(cluster, ns, "besteffort", {"pods": "1"}, scopes=["BestEffort"])
    wait_for(lambda: used(cluster, ns, "besteffort") == {"pods": "0"}, what="status")
    assert create_pod(cluster, ns, "be-1").status == 201
    r = create_pod(cluster, ns, "be-2")
    assert r.status == 403 and "exceeded quota: besteffort, requested: pods=1, used: pods=1, limited: pods=1" in r.json()["message"]
    # a pod with requests is not BestEffort: the quota does not apply
    assert create_pod(cluster, ns, "burstable", {"requests": {"cpu": "10m"}}).status == 201
    wait_for(lambda: used(cluster, ns, "besteffort") == {"pods": "1"}, what="only best-effort pods counted")


def test_kubectl_drain_of_a_sim_node_running_a_deployment(cluster):
    """The everyday drain: evictions go one at a time as the Deployment's replacements become ready elsewhere."""
    import asyncio
    import importlib.util
    import threading

    for mod in ("pyk8s.sim", "pyk8s.scheduler.runner", "pyk8s.controllers.deployment", "pyk8s.controllers.replicaset"):
        if importlib.util.find_spec(mod) is None:
            pytest.skip(f"{mod} not available")
    from pyk8s.client import Client
    Simulator = getattr(__import__("pyk8s.sim", fromlist=["Simulator"]), "Simulator", None)
    if Simulator is None:  # the simulated-node package has not landed in this checkout yet
        pytest.skip("pyk8s.sim.Simulator is not in this checkout")

    ns = "pdb-sim"
    ensure_ns(cluster, ns)
    loop = asyncio.new_event_loop()
    threading.Thread(target=loop.run_forever, daemon=True).start()

    def run(coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, loop).result(60)

    client = run(_make_client(cluster, Client))
    # tainted, so that unscheduled pods of the other tests stay off these nodes
    sim = Simulator(client, 3, name_prefix="drain-sim-", lease_period=2.0, labels={"drain-sim": "yes"},
                    taints=[{"key": "drain-sim", "value": "yes", "effect": "NoSchedule"}], delete_nodes_on_stop=True)
    run(sim.start())
    try:
        run(sim.wait_nodes_registered(30))
        req(cluster, "POST", f"/apis/apps/v1/namespaces/{ns}/deployments", {
            "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "shop"},
            "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "shop"}},
                     "template": {"metadata": {"labels": {"app": "shop"}},
                                  "spec": {"containers": [{"name": "c", "image": "busybox"}],
                                           "nodeSelector": {"drain-sim": "yes"},
                                           "tolerations": [{"key": "drain-sim", "operator": "Exists"}]}}}})
        pdb(cluster, ns, "shop", {"matchLabels": {"app": "shop"}}, maxUnavailable=1)

        def ready_pods() -> list[dict[str, Any]]:
            items = req(cluster, "GET", f"{PODS.format(ns=ns)}?labelSelector=app%3Dshop")["items"]
            return [p for p in items if not p["metadata"].get("deletionTimestamp") and any(
                c["type"] == "Ready" and c["status"] == "True" for c in (p.get("status") or {}).get("conditions") or [])]

        pods = wait_for(lambda: (lambda r: r if len(r) == 4 else None)(ready_pods()), timeout=30, what="4 ready")
        wait_status(cluster, ns, "shop", expectedPods=4, desiredHealthy=3, currentHealthy=4, disruptionsAllowed=1)
        counts: dict[str, int] = {}
        for p in pods:
            counts[p["spec"]["nodeName"]] = counts.get(p["spec"]["nodeName"], 0) + 1
        node = max(counts, key=lambda n: counts[n])
        r = cluster.kubectl("drain", node, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=50s",
                            check=False, timeout=60)
        out = r.stdout + r.stderr
        assert r.returncode == 0, out
        assert f"node/{node} drained" in out
        if counts[node] > 1:
            # the second eviction had to wait for the first pod's replacement (upstream prints this and retries)
            assert "Cannot evict pod as it would violate the pod's disruption budget." in out
        left = req(cluster, "GET", f"{PODS.format(ns=ns)}?fieldSelector=spec.nodeName%3D{node}")["items"]
        assert left == []
        wait_for(lambda: (lambda r: r if len(r) == 4 else None)(ready_pods()), timeout=30, what="4 ready again")
        req(cluster, "DELETE", f"/apis/apps/v1/namespaces/{ns}/deployments/shop")
    finally:
        run(sim.stop())
        run(client.close())
        loop.call_soon_threadsafe(loop.stop)


async def _make_client(cluster: Cluster, client_cls: Any) -> Any:
    return client_cls.from_kubeconfig(cluster.kubeconfig)
