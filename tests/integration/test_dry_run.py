"""dryRun=All on every verb and subresource: admission and validation run, nothing is stored.

kubectl puts a delete's dry run in the DeleteOptions body (`kubectl delete --dry-run=server`)
and a drain's in the Eviction's deleteOptions (`kubectl drain --dry-run=server`), not in the
query; both had deleted for real. Each case below compares a fingerprint of the namespace
(every object's resourceVersion and deletionTimestamp, events included) before and after.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request

# one server for the module (its setup takes a while); the table runs some 25 cases one after another
pytestmark = [pytest.mark.xdist_group("dry-run"), pytest.mark.slow, pytest.mark.timeout(600)]

NS = "dry"
NODE = "dry-node"
POD_SPEC = {"schedulerName": "nobody", "terminationGracePeriodSeconds": 30,
            "containers": [{"name": "c", "image": "busybox"}]}
# what the fingerprint covers: every kind a case could write in the namespace, and what controllers derive
COLLECTIONS = ["/api/v1/namespaces/dry/configmaps", "/api/v1/namespaces/dry/pods", "/api/v1/namespaces/dry/services",
               "/api/v1/namespaces/dry/endpoints", "/api/v1/namespaces/dry/events",
               "/api/v1/namespaces/dry/serviceaccounts", "/api/v1/namespaces/dry/secrets",
               "/apis/apps/v1/namespaces/dry/deployments", "/apis/apps/v1/namespaces/dry/replicasets",
               "/apis/policy/v1/namespaces/dry/poddisruptionbudgets"]


def _ok(r: Any, *codes: int) -> Any:
    assert r.status in (codes or (200, 201)), r.body
    return r.json()


def _wait(cond: Callable[[], bool], what: str, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if cond():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _fingerprint(c: Cluster) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for path in COLLECTIONS:
        for o in _ok(raw_request(c, "GET", path))["items"]:
            md = o["metadata"]
            out[f"{path}/{md['name']}"] = (md["resourceVersion"], md.get("deletionTimestamp"))
    node = _ok(raw_request(c, "GET", f"/api/v1/nodes/{NODE}"))
    out["node.unschedulable"] = node["spec"].get("unschedulable")
    r = raw_request(c, "GET", "/api/v1/namespaces/dry-ns")
    ns = r.json() if r.status == 200 else {"metadata": {"deletionTimestamp": "gone"}, "status": {"phase": "gone"}}
    out["dry-ns"] = (ns["metadata"].get("deletionTimestamp"), ns["status"]["phase"])
    return out


def _settled(c: Cluster) -> dict[str, Any]:
    """The fingerprint once the controllers are done with what setup made (two equal readings)."""
    last = _fingerprint(c)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        time.sleep(0.7)
        cur = _fingerprint(c)
        if cur == last:
            return cur
        last = cur
    raise AssertionError("the namespace did not settle")


@pytest.fixture(scope="module")
def srv(tmp_path_factory: pytest.TempPathFactory):
    c = Cluster(str(tmp_path_factory.mktemp("dryrun"))).start()
    c.kubectl("create", "namespace", NS)
    c.kubectl("create", "namespace", "dry-ns")
    _ok(raw_request(c, "POST", "/api/v1/nodes", {"metadata": {"name": NODE}}))
    _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/serviceaccounts", {"metadata": {"name": "robot"}}))
    _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/configmaps",
                    {"metadata": {"name": "keep"}, "data": {"a": "1"}}))
    _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/configmaps",
                    {"metadata": {"name": "held", "finalizers": ["example.com/hold"]}, "data": {"a": "1"}}))
    # bound pods: their deletion is graceful; "guarded" runs ready under a budget that allows one disruption
    for name, labels in (("bound", {}), ("guarded", {"app": "g"})):
        _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods",
                        {"metadata": {"name": name, "labels": labels}, "spec": {**POD_SPEC, "nodeName": NODE}}))
    _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/pods",
                    {"metadata": {"name": "unbound"}, "spec": POD_SPEC}))
    _ok(raw_request(c, "PATCH", f"/api/v1/namespaces/{NS}/pods/guarded/status",
                    {"status": {"phase": "Running", "conditions": [{"type": "Ready", "status": "True"}]}},
                    {"Content-Type": "application/merge-patch+json"}))
    _ok(raw_request(c, "POST", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets",
                    {"metadata": {"name": "pdb"}, "spec": {"minAvailable": 0, "selector": {"matchLabels": {"app": "g"}}}}))
    _ok(raw_request(c, "POST", f"/apis/apps/v1/namespaces/{NS}/deployments", {
        "metadata": {"name": "web"},
        "spec": {"replicas": 0, "selector": {"matchLabels": {"app": "w"}},
                 "template": {"metadata": {"labels": {"app": "w"}}, "spec": POD_SPEC}}}))
    _ok(raw_request(c, "POST", f"/api/v1/namespaces/{NS}/services",
                    {"metadata": {"name": "svc"}, "spec": {"ports": [{"port": 80}]}}))

    def budget_ready() -> bool:
        st = _ok(raw_request(c, "GET", f"/apis/policy/v1/namespaces/{NS}/poddisruptionbudgets/pdb")).get("status") or {}
        return st.get("disruptionsAllowed", 0) >= 1

    _wait(budget_ready, "the disruption controller to allow one disruption")
    stop = threading.Event()
    beat = threading.Thread(target=_heartbeat, args=(c, stop), daemon=True)
    beat.start()
    yield c
    stop.set()
    beat.join()
    c.stop()


def _heartbeat(c: Cluster, stop: threading.Event) -> None:
    """Post the node's status as a kubelet would: a node silent past its grace period would have its
    pods marked not ready by the node lifecycle controller, in the middle of a case."""
    while not stop.is_set():
        now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
        raw_request(c, "PATCH", f"/api/v1/nodes/{NODE}/status", {"status": {"conditions": [
            {"type": "Ready", "status": "True", "reason": "KubeletReady", "lastHeartbeatTime": now,
             "lastTransitionTime": now}]}}, {"Content-Type": "application/strategic-merge-patch+json"})
        stop.wait(2.0)


def _kubectl(*args: str) -> Callable[[Cluster], None]:
    def run(c: Cluster) -> None:
        c.kubectl(*args)
    return run


def _raw(method: str, path: str, body: Any = None, ct: str | None = None, *codes: int,
         check: Callable[[dict[str, Any]], None] | None = None) -> Callable[[Cluster], None]:
    def run(c: Cluster) -> None:
        r = raw_request(c, method, path, body, {"Content-Type": ct} if ct else None)
        got = _ok(r, *codes)
        if check is not None:
            check(got)
    return run


def _terminating_pod_answer(pod: dict[str, Any]) -> None:
    # as upstream: the answer is the pod as it would be, in graceful deletion, though nothing was stored
    assert pod["kind"] == "Pod" and pod["metadata"]["deletionTimestamp"]
    assert pod["metadata"]["deletionGracePeriodSeconds"] == 30


CM = f"/api/v1/namespaces/{NS}/configmaps"
PODS = f"/api/v1/namespaces/{NS}/pods"
KEEP_CHANGED = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                           "metadata": {"name": "keep", "namespace": NS}, "data": {"a": "2"}})
NEW_CM = json.dumps({"apiVersion": "v1", "kind": "ConfigMap",
                     "metadata": {"name": "dry-new", "namespace": NS}, "data": {"a": "2"}})
DRY_BODY = {"kind": "DeleteOptions", "apiVersion": "v1", "dryRun": ["All"]}

CASES: list[tuple[str, Callable[[Cluster], None]]] = [
    ("create", _kubectl("create", "configmap", "dry-new", "-n", NS, "--from-literal=a=b", "--dry-run=server")),
    ("create-generate-name", _raw("POST", f"{CM}?dryRun=All", {"metadata": {"generateName": "g-"}})),
    ("update", lambda c: c.kubectl("replace", "--dry-run=server", "-f", "-", input=KEEP_CHANGED)),
    ("patch-merge", _kubectl("patch", "cm", "keep", "-n", NS, "--type=merge", "-p", '{"data":{"a":"3"}}',
                             "--dry-run=server")),
    ("patch-strategic", _kubectl("patch", "cm", "keep", "-n", NS, "-p", '{"data":{"a":"3"}}', "--dry-run=server")),
    ("patch-json", _kubectl("patch", "cm", "keep", "-n", NS, "--type=json",
                            "-p", '[{"op":"replace","path":"/data/a","value":"3"}]', "--dry-run=server")),
    ("apply-update", lambda c: c.kubectl("apply", "--server-side", "--force-conflicts", "--dry-run=server", "-f", "-",
                                         input=KEEP_CHANGED)),
    ("apply-create", lambda c: c.kubectl("apply", "--server-side", "--dry-run=server", "-f", "-", input=NEW_CM)),
    ("delete", _kubectl("delete", "configmap", "keep", "-n", NS, "--dry-run=server")),
    ("delete-query", _raw("DELETE", f"{CM}/keep?dryRun=All")),
    ("delete-with-finalizer", _kubectl("delete", "configmap", "held", "-n", NS, "--dry-run=server")),
    ("delete-bound-pod", _raw("DELETE", f"{PODS}/bound", DRY_BODY, None, 200, check=_terminating_pod_answer)),
    ("delete-bound-pod-kubectl", _kubectl("delete", "pod", "bound", "-n", NS, "--dry-run=server", "--wait=false")),
    ("deletecollection", _raw("DELETE", CM, DRY_BODY, None, 200,
                              check=lambda lst: len(lst["items"]) >= 2)),
    ("deletecollection-pods", _raw("DELETE", f"{PODS}?dryRun=All", None, None, 200)),
    ("delete-namespace", _kubectl("delete", "namespace", "dry-ns", "--dry-run=server", "--wait=false")),
    ("eviction", _raw("POST", f"{PODS}/guarded/eviction",
                      {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "guarded"},
                       "deleteOptions": {"dryRun": ["All"]}}, None, 201)),
    ("eviction-query", _raw("POST", f"{PODS}/bound/eviction?dryRun=All",
                            {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": "bound"}}, None, 201)),
    ("drain", _kubectl("drain", NODE, "--dry-run=server", "--force", "--ignore-daemonsets", "--timeout=20s")),
    ("binding", _raw("POST", f"{PODS}/unbound/binding?dryRun=All",
                     {"apiVersion": "v1", "kind": "Binding", "metadata": {"name": "unbound"},
                      "target": {"kind": "Node", "name": NODE}}, None, 201)),
    ("scale", _kubectl("scale", "deployment", "web", "-n", NS, "--replicas=3", "--dry-run=server")),
    ("scale-patch", _raw("PATCH", f"/apis/apps/v1/namespaces/{NS}/deployments/web/scale?dryRun=All",
                         {"spec": {"replicas": 4}}, "application/merge-patch+json")),
    ("status", _raw("PATCH", f"{PODS}/bound/status?dryRun=All", {"status": {"phase": "Failed"}},
                    "application/merge-patch+json")),
    ("token", _raw("POST", f"/api/v1/namespaces/{NS}/serviceaccounts/robot/token?dryRun=All",
                   {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest", "spec": {}}, None, 201)),
    ("service-create", _raw("POST", f"/api/v1/namespaces/{NS}/services?dryRun=All",
                            {"metadata": {"name": "np"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}},
                            None, 201)),
]


def test_dry_run_stores_nothing_on_any_verb_or_subresource(srv: Cluster) -> None:
    """One table: every case runs, and every case that stored something (or failed) is reported."""
    stored: dict[str, Any] = {}
    before: dict[str, Any] | None = None
    for name, run in CASES:
        if before is None:
            before = _settled(srv)
        try:
            run(srv)
        except AssertionError as e:
            stored[name] = f"failed: {e}"
            before = None
            continue
        time.sleep(0.5)  # anything a write would set off (controllers, events) has had time to show
        after = _fingerprint(srv)
        changed = {k: (before.get(k), after.get(k)) for k in before.keys() | after.keys()
                   if before.get(k) != after.get(k)}
        if changed:
            stored[name] = changed
            before = None  # settle again before the next case
        else:
            before = after  # unchanged since a settled reading: still settled
    assert not stored, json.dumps(stored, indent=1, default=str)


def test_dry_run_holds_no_cluster_ip_or_node_port(srv: Cluster) -> None:
    """A dry-run create reports the ClusterIP and NodePort it would get; both stay free for a real create."""
    svc = _ok(raw_request(srv, "POST", f"/api/v1/namespaces/{NS}/services?dryRun=All",
                          {"metadata": {"name": "np1"}, "spec": {"type": "NodePort", "ports": [{"port": 80}]}}))
    ip, port = svc["spec"]["clusterIP"], svc["spec"]["ports"][0]["nodePort"]
    assert ip and port
    real = _ok(raw_request(srv, "POST", f"/api/v1/namespaces/{NS}/services", {
        "metadata": {"name": "np2"},
        "spec": {"type": "NodePort", "clusterIP": ip, "ports": [{"port": 80, "nodePort": port}]}}), 201)
    assert real["spec"]["clusterIP"] == ip and real["spec"]["ports"][0]["nodePort"] == port


def test_dry_run_delete_answers_the_object_and_unknown_directives_are_refused(srv: Cluster) -> None:
    r = srv.kubectl("delete", "pod", "bound", "-n", NS, "--dry-run=server", "--wait=false")
    assert r.stdout.strip() == 'pod "bound" deleted (server dry run)'
    bad = raw_request(srv, "DELETE", f"{CM}/keep", {"dryRun": ["Some"]})
    assert bad.status == 422 and bad.json()["reason"] == "Invalid", bad.body
    assert 'dryRun: Unsupported value: []string{"Some"}: supported values: "All"' in bad.json()["message"]
    assert raw_request(srv, "GET", f"{CM}/keep").status == 200
