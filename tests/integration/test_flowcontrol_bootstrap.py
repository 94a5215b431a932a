"""API Priority and Fairness' bootstrap objects: `kubectl get flowschemas,prioritylevelconfigurations` as against a
fresh v1.33 cluster, the Dangling condition, and the ensurer's rules across restarts (mandatory specs always put
back, suggested ones only while `apf.kubernetes.io/autoupdate-spec` is "true", deleted ones re-created).

Expected tables: a fresh upstream v1.33 cluster (kubeadm/kind) lists the same rows; FlowSchemas come in
matching-precedence order (upstream's printer sorts them), PriorityLevelConfigurations by name.
"""

from __future__ import annotations

import json
import re
import time

import pytest

from tests.cluster import Cluster

# one server for the module, and the restart test expects what the tests before it made ("mine"):
# under `--dist loadgroup` only a group keeps them on one worker, in order
pytestmark = pytest.mark.xdist_group("flowcontrol-bootstrap")

FLOW_SCHEMAS = [
    ["NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "MISSINGPL"],
    ["exempt", "exempt", "1", "<none>", "False"],
    ["probes", "exempt", "2", "<none>", "False"],
    ["system-leader-election", "leader-election", "100", "ByUser", "False"],
    ["endpoint-controller", "workload-high", "150", "ByUser", "False"],
    ["workload-leader-election", "leader-election", "200", "ByUser", "False"],
    ["system-node-high", "node-high", "400", "ByUser", "False"],
    ["system-nodes", "system", "500", "ByUser", "False"],
    ["kube-controller-manager", "workload-high", "800", "ByNamespace", "False"],
    ["kube-scheduler", "workload-high", "800", "ByNamespace", "False"],
    ["kube-system-service-accounts", "workload-high", "900", "ByNamespace", "False"],
    ["service-accounts", "workload-low", "9000", "ByUser", "False"],
    ["global-default", "global-default", "9900", "ByUser", "False"],
    ["catch-all", "catch-all", "10000", "ByUser", "False"],
]
PRIORITY_LEVELS = [
    ["NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT"],
    ["catch-all", "Limited", "5", "<none>", "<none>", "<none>"],
    ["exempt", "Exempt", "<none>", "<none>", "<none>", "<none>"],
    ["global-default", "Limited", "20", "128", "6", "50"],
    ["leader-election", "Limited", "10", "16", "4", "50"],
    ["node-high", "Limited", "40", "64", "6", "50"],
    ["system", "Limited", "30", "64", "6", "50"],
    ["workload-high", "Limited", "40", "128", "6", "50"],
    ["workload-low", "Limited", "100", "128", "6", "50"],
]


def _rows(out: str, drop_column: str = "AGE") -> list[list[str]]:
    lines = [re.split(r"\s{2,}", line.strip()) for line in out.strip().splitlines()]
    if drop_column in lines[0]:
        i = lines[0].index(drop_column)
        lines = [row[:i] + row[i + 1:] for row in lines]
    return lines


def _get(c: Cluster, plural: str, name: str) -> dict:
    return json.loads(c.kubectl("get", plural, name, "-o", "json").stdout)


def _wait_for(predicate, what: str, timeout: float = 20.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    c = Cluster(str(tmp_path_factory.mktemp("pyk8s-apf")))
    c.start()
    yield c
    c.stop()


def test_fresh_cluster_lists_upstreams_configuration(server):
    assert _rows(server.kubectl("get", "flowschemas").stdout) == FLOW_SCHEMAS
    assert _rows(server.kubectl("get", "prioritylevelconfigurations").stdout) == PRIORITY_LEVELS
    fs = _get(server, "flowschemas", "probes")
    assert fs["metadata"]["annotations"] == {"apf.kubernetes.io/autoupdate-spec": "true"}
    assert fs["metadata"]["generation"] == 1
    assert fs["spec"]["rules"] == [{
        "nonResourceRules": [{"nonResourceURLs": ["/healthz", "/readyz", "/livez"], "verbs": ["get"]}],
        "subjects": [{"group": {"name": "system:unauthenticated"}, "kind": "Group"},
                     {"group": {"name": "system:authenticated"}, "kind": "Group"}],
    }]
    [cond] = fs["status"]["conditions"]
    assert {k: cond[k] for k in ("type", "status", "reason", "message")} == {
        "type": "Dangling", "status": "False", "reason": "Found",
        "message": 'This FlowSchema references the PriorityLevelConfiguration object named "exempt" and it exists'}
    pl = _get(server, "prioritylevelconfigurations", "workload-low")
    assert pl["spec"] == {"type": "Limited", "limited": {
        "nominalConcurrencyShares": 100, "lendablePercent": 90,
        "limitResponse": {"type": "Queue", "queuing": {"queues": 128, "handSize": 6, "queueLengthLimit": 50}}}}


def test_dangling_follows_the_priority_level(server):
    fs = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "mine"},
          "spec": {"priorityLevelConfiguration": {"name": "mine"}, "matchingPrecedence": 5000,
                   "rules": [{"subjects": [{"kind": "User", "user": {"name": "alice"}}],
                              "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}]}}
    server.kubectl("create", "-f", "-", input=json.dumps(fs))

    def missing_pl() -> str:
        rows = _rows(server.kubectl("get", "flowschemas", "mine").stdout)
        return rows[1][-1]

    _wait_for(lambda: missing_pl() == "True", "Dangling=True")
    cond = _get(server, "flowschemas", "mine")["status"]["conditions"][0]
    assert (cond["reason"], cond["message"]) == (
        "NotFound", 'This FlowSchema references the PriorityLevelConfiguration object named "mine" but there is no '
        "such object")
    pl = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration",
          "metadata": {"name": "mine"}, "spec": {"type": "Limited", "limited": {
              "nominalConcurrencyShares": 1, "limitResponse": {"type": "Reject"}}}}
    server.kubectl("create", "-f", "-", input=json.dumps(pl))
    _wait_for(lambda: missing_pl() == "False", "Dangling=False")


def test_restart_keeps_opted_out_edits_and_restores_the_rest(server):
    k = server.kubectl
    # suggested, opted out of auto-update: the operator's edit stays
    k("annotate", "prioritylevelconfigurations", "workload-low", "apf.kubernetes.io/autoupdate-spec=false",
      "--overwrite")
    k("patch", "prioritylevelconfigurations", "workload-low", "--type", "merge",
      "-p", '{"spec":{"limited":{"nominalConcurrencyShares":7}}}')
    # suggested, still auto-updated: put back
    k("patch", "flowschemas", "global-default", "--type", "merge", "-p", '{"spec":{"matchingPrecedence":9800}}')
    # mandatory: put back even when opted out
    k("annotate", "prioritylevelconfigurations", "catch-all", "apf.kubernetes.io/autoupdate-spec=false",
      "--overwrite")
    k("patch", "prioritylevelconfigurations", "catch-all", "--type", "merge",
      "-p", '{"spec":{"limited":{"nominalConcurrencyShares":50}}}')
    # deleted: re-created
    k("delete", "flowschemas", "probes")
    # auto-updated but no longer in the bootstrap set (as a renamed upstream object): removed
    stale = {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema",
             "metadata": {"name": "stale", "annotations": {"apf.kubernetes.io/autoupdate-spec": "true"}},
             "spec": {"priorityLevelConfiguration": {"name": "global-default"}, "matchingPrecedence": 9950,
                      "rules": [{"subjects": [{"kind": "User", "user": {"name": "bob"}}],
                                 "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/version"]}]}]}}
    k("create", "-f", "-", input=json.dumps(stale))
    untouched = _get(server, "flowschemas", "system-nodes")["metadata"]["resourceVersion"]

    server.stop()
    server.start()

    assert _get(server, "prioritylevelconfigurations", "workload-low")["spec"]["limited"][
        "nominalConcurrencyShares"] == 7
    assert _get(server, "flowschemas", "global-default")["spec"]["matchingPrecedence"] == 9900
    catch_all = _get(server, "prioritylevelconfigurations", "catch-all")
    assert catch_all["spec"]["limited"]["nominalConcurrencyShares"] == 5
    assert catch_all["metadata"]["annotations"]["apf.kubernetes.io/autoupdate-spec"] == "true"
    assert _get(server, "flowschemas", "probes")["metadata"]["generation"] == 1
    # idempotent: an object nobody touched is not rewritten
    assert _get(server, "flowschemas", "system-nodes")["metadata"]["resourceVersion"] == untouched
    assert k("get", "flowschemas", "stale", check=False).returncode == 1
    rows = _rows(server.kubectl("get", "flowschemas").stdout)
    assert [r[0] for r in rows[1:]] == [
        "exempt", "probes", "system-leader-election", "endpoint-controller", "workload-leader-election",
        "system-node-high", "system-nodes", "kube-controller-manager", "kube-scheduler",
        "kube-system-service-accounts", "mine", "service-accounts", "global-default", "catch-all"]
