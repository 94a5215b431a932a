"""Server-side tables, checked against real kubectl output.

Expected blocks are copied from shared/reference/upstream-observed.md (line numbers cited
per test); objects are rebuilt from the YAML shown there (L348-640). `render` mimics
kubectl's printer: priority-1 columns only with -o wide, headers upper-cased.
"""

from __future__ import annotations

import re

import pytest

from pyk8s.api.errors import StatusError
from pyk8s.api.printers import DEFAULT, PRINTERS, build_table, crd_printer, printer_for
from pyk8s.api.printers.core import pod_status_reason
from pyk8s.api.timefmt import parse_time


def ts(hms: str) -> str:
    return f"2026-11-22T{hms}Z"


def at(hms: str) -> float:
    return parse_time(ts(hms)) + 0.5


def render(group: str, kind: str, objs: list[dict], now: float, wide: bool = False) -> list[list[str]]:
    table = build_table(printer_for(group, kind), objs, now)
    keep = [i for i, c in enumerate(table["columnDefinitions"]) if wide or c["priority"] == 0]
    out = [[table["columnDefinitions"][i]["name"].upper() for i in keep]]
    for row in table["rows"]:
        assert len(row["cells"]) == len(table["columnDefinitions"])  # the server always prints wide
        out.append(["<none>" if row["cells"][i] is None else str(row["cells"][i]) for i in keep])
    return out


def expected(block: str, strip_kind: bool = False) -> list[list[str]]:
    rows = [re.split(r"\s{2,}", line.strip()) for line in block.strip().splitlines()]
    if strip_kind:  # `kubectl get a,b` prefixes names with "kind.group/"
        rows = [rows[0]] + [[r[0].split("/", 1)[1], *r[1:]] for r in rows[1:]]
    return rows


def meta(name: str, created: str, namespace: str | None = "default", **kw: object) -> dict:
    md: dict = {"name": name, "creationTimestamp": ts(created), **kw}
    if namespace:
        md["namespace"] = namespace
    return md


# ---------------------------------------------------------------------------------------
# Transcript tables


def test_namespaces() -> None:
    # L124-129
    objs = [
        {"metadata": meta(n, c, None), "status": {"phase": "Active"}}
        for n, c in [
            ("default", "02:21:58"),
            ("kube-node-lease", "02:21:59"),
            ("kube-public", "02:21:58"),
            ("kube-system", "02:21:58"),
        ]
    ]
    assert render("", "Namespace", objs, at("02:22:14")) == expected("""
NAME              STATUS   AGE
default           Active   16s
kube-node-lease   Active   15s
kube-public       Active   16s
kube-system       Active   16s
""")


def test_configmaps_and_secrets() -> None:
    # L296-301
    cm = {"metadata": meta("kube-root-ca.crt", "02:21:56"), "data": {"ca.crt": "..."}}
    assert render("", "ConfigMap", [cm], at("02:22:14")) == expected(
        """
NAME                         DATA   AGE
configmap/kube-root-ca.crt   1      18s
""",
        strip_kind=True,
    )
    secret = {"metadata": meta("s", "02:22:09"), "type": "Opaque", "data": {"p": "cQ=="}}
    assert render("", "Secret", [secret], at("02:22:14")) == expected(
        """
NAME       TYPE     DATA   AGE
secret/s   Opaque   1      5s
""",
        strip_kind=True,
    )


TEMPLATE_TESTDEMO = {
    "metadata": {"labels": {"app": "testdemo"}},
    "spec": {"containers": [{"name": "testdemo", "image": "centos:7"}]},
}
TEMPLATE_WEB = {
    "metadata": {"labels": {"app": "web"}},
    "spec": {"containers": [{"name": "nginx", "image": "nginx:1.25"}]},
}


def workloads() -> dict[str, list[dict]]:
    return {
        "Deployment": [
            {
                "metadata": meta("testdemo", "02:22:08"),
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "testdemo"}},
                    "template": TEMPLATE_TESTDEMO,
                },
                "status": {
                    "observedGeneration": 1,
                    "replicas": 1,
                    "unavailableReplicas": 1,
                    "updatedReplicas": 1,
                },
            },
            {
                "metadata": meta("web", "02:22:09"),
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": TEMPLATE_WEB,
                },
                "status": {"replicas": 2, "unavailableReplicas": 2, "updatedReplicas": 2},
            },
        ],
        "ReplicaSet": [
            {
                "metadata": meta("testdemo-665685df7", "02:22:08"),
                "spec": {
                    "replicas": 1,
                    "selector": {"matchLabels": {"app": "testdemo", "pod-template-hash": "665685df7"}},
                    "template": TEMPLATE_TESTDEMO,
                },
                "status": {"replicas": 1, "fullyLabeledReplicas": 1},
            },
            {
                "metadata": meta("web-dc64c95dd", "02:22:09"),
                "spec": {
                    "replicas": 2,
                    "selector": {"matchLabels": {"app": "web"}},
                    "template": TEMPLATE_WEB,
                },
                "status": {"replicas": 2},
            },
        ],
        "DaemonSet": [  # L512-567
            {
                "metadata": meta("test-ds", "02:22:09"),
                "spec": {
                    "selector": {"matchLabels": {"name": "my-test"}},
                    "template": {
                        "metadata": {"labels": {"name": "my-test"}},
                        "spec": {"containers": [{"name": "my-test-busybox", "image": "busybox"}]},
                    },
                },
                "status": {
                    "currentNumberScheduled": 4,
                    "desiredNumberScheduled": 4,
                    "numberMisscheduled": 0,
                    "numberReady": 0,
                    "numberUnavailable": 4,
                    "observedGeneration": 1,
                    "updatedNumberScheduled": 4,
                },
            },
        ],
        "Job": [  # L604-640
            {
                "metadata": meta("j", "02:22:09"),
                "spec": {
                    "completions": 1,
                    "parallelism": 1,
                    "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": "3650e62b"}},
                    "template": {"spec": {"containers": [{"name": "j", "image": "busybox"}]}},
                },
                "status": {
                    "active": 1,
                    "ready": 0,
                    "startTime": ts("02:22:09"),
                    "terminating": 0,
                    "uncountedTerminatedPods": {},
                },
            },
        ],
        "CronJob": [
            {
                "metadata": meta("cj", "02:22:10"),
                "spec": {
                    "schedule": "*/5 * * * *",
                    "suspend": False,
                    "concurrencyPolicy": "Allow",
                    "jobTemplate": {
                        "spec": {"template": {"spec": {"containers": [{"name": "cj", "image": "busybox"}]}}}
                    },
                },
                "status": {},
            },
        ],
    }


def test_workloads_table() -> None:
    # L247-263: kubectl get deploy,rs,ds,job,cronjob
    w = workloads()
    now = at("02:22:14")
    assert render("apps", "Deployment", w["Deployment"], now) == expected(
        """
NAME                       READY   UP-TO-DATE   AVAILABLE   AGE
deployment.apps/testdemo   0/1     1            0           6s
deployment.apps/web        0/2     2            0           5s
""",
        strip_kind=True,
    )
    assert render("apps", "ReplicaSet", w["ReplicaSet"], now) == expected(
        """
NAME                                 DESIRED   CURRENT   READY   AGE
replicaset.apps/testdemo-665685df7   1         1         0       6s
replicaset.apps/web-dc64c95dd        2         2         0       5s
""",
        strip_kind=True,
    )
    assert render("apps", "DaemonSet", w["DaemonSet"], now) == expected(
        """
NAME                     DESIRED   CURRENT   READY   UP-TO-DATE   AVAILABLE   NODE SELECTOR   AGE
daemonset.apps/test-ds   4         4         0       4            0           <none>          5s
""",
        strip_kind=True,
    )
    assert render("batch", "Job", w["Job"], now) == expected(
        """
NAME          STATUS    COMPLETIONS   DURATION   AGE
job.batch/j   Running   0/1           5s         5s
""",
        strip_kind=True,
    )
    assert render("batch", "CronJob", w["CronJob"], now) == expected(
        """
NAME               SCHEDULE      TIMEZONE   SUSPEND   ACTIVE   LAST SCHEDULE   AGE
cronjob.batch/cj   */5 * * * *   <none>     False     0        <none>          4s
""",
        strip_kind=True,
    )


def test_workloads_wide_columns() -> None:
    w = workloads()
    now = at("02:22:14")
    assert render("apps", "Deployment", w["Deployment"][:1], now, wide=True)[1][5:] == [
        "testdemo",
        "centos:7",
        "app=testdemo",
    ]
    assert render("apps", "ReplicaSet", w["ReplicaSet"][:1], now, wide=True)[0][5:] == [
        "CONTAINERS",
        "IMAGES",
        "SELECTOR",
    ]
    assert (
        render("apps", "ReplicaSet", w["ReplicaSet"][:1], now, wide=True)[1][7]
        == "app=testdemo,pod-template-hash=665685df7"
    )
    assert render("apps", "DaemonSet", w["DaemonSet"], now, wide=True)[1][8:] == [
        "my-test-busybox",
        "busybox",
        "name=my-test",
    ]
    assert render("batch", "Job", w["Job"], now, wide=True)[1][5:] == [
        "j",
        "busybox",
        "batch.kubernetes.io/controller-uid=3650e62b",
    ]


def pending_pod(name: str, created: str, node: str) -> dict:
    return {
        "metadata": meta(name, created),
        "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox"}]},
        "status": {
            "phase": "Pending",
            "qosClass": "BestEffort",
            "conditions": [{"type": "PodScheduled", "status": "True", "lastTransitionTime": ts(created)}],
        },
    }


def test_pods_wide() -> None:
    # L267-277: kubectl get pods -o wide (no kubelet: pods stay Pending)
    pods = [
        pending_pod(n, c, node)
        for n, c, node in [
            ("j-4xf4l", "02:22:09", "node2"),
            ("test-ds-4vf9j", "02:22:09", "node3"),
            ("test-ds-9csqt", "02:22:09", "node4"),
            ("test-ds-jtfgh", "02:22:09", "node2"),
            ("test-ds-prdtz", "02:22:09", "node1"),
            ("testdemo-665685df7-sgczd", "02:22:08", "node2"),
            ("web-dc64c95dd-fspmc", "02:22:09", "node3"),
            ("web-dc64c95dd-mkgpq", "02:22:09", "node4"),
        ]
    ]
    assert render("", "Pod", pods, at("02:22:14"), wide=True) == expected("""
NAME                       READY   STATUS    RESTARTS   AGE   IP       NODE    NOMINATED NODE   READINESS GATES
j-4xf4l                    0/1     Pending   0          5s    <none>   node2   <none>           <none>
test-ds-4vf9j              0/1     Pending   0          5s    <none>   node3   <none>           <none>
test-ds-9csqt              0/1     Pending   0          5s    <none>   node4   <none>           <none>
test-ds-jtfgh              0/1     Pending   0          5s    <none>   node2   <none>           <none>
test-ds-prdtz              0/1     Pending   0          5s    <none>   node1   <none>           <none>
testdemo-665685df7-sgczd   0/1     Pending   0          6s    <none>   node2   <none>           <none>
web-dc64c95dd-fspmc        0/1     Pending   0          5s    <none>   node3   <none>           <none>
web-dc64c95dd-mkgpq        0/1     Pending   0          5s    <none>   node4   <none>           <none>
""")
    # plain `kubectl get pods` shows only the priority-0 columns (seed notes: NAME READY STATUS RESTARTS AGE)
    assert render("", "Pod", pods[:1], at("02:22:14"))[0] == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]


def test_services_and_endpoints() -> None:
    # L280-287; the web Service is L570-602
    svcs = [
        {
            "metadata": meta("kubernetes", "02:21:52"),
            "spec": {
                "type": "ClusterIP",
                "clusterIP": "10.96.0.1",
                "clusterIPs": ["10.96.0.1"],
                "ports": [{"name": "https", "port": 443, "protocol": "TCP", "targetPort": 6443}],
            },
        },
        {
            "metadata": meta("web", "02:22:09", labels={"app": "web"}),
            "spec": {
                "type": "NodePort",
                "clusterIP": "10.108.214.133",
                "clusterIPs": ["10.108.214.133"],
                "selector": {"app": "web"},
                "ports": [{"nodePort": 32743, "port": 80, "protocol": "TCP", "targetPort": 80}],
            },
            "status": {"loadBalancer": {}},
        },
    ]
    now = at("02:22:14")
    assert render("", "Service", svcs, now) == expected(
        """
NAME                 TYPE        CLUSTER-IP       EXTERNAL-IP   PORT(S)        AGE
service/kubernetes   ClusterIP   10.96.0.1        <none>        443/TCP        22s
service/web          NodePort    10.108.214.133   <none>        80:32743/TCP   5s
""",
        strip_kind=True,
    )
    assert render("", "Service", svcs, now, wide=True)[2][-1] == "app=web"
    ep = {"metadata": meta("web", "02:22:09")}
    assert render("", "Endpoints", [ep], now) == expected(
        """
NAME            ENDPOINTS   AGE
endpoints/web   <none>      5s
""",
        strip_kind=True,
    )


def test_endpoint_slices() -> None:
    # L290-293
    es = {"metadata": meta("web-tjj29", "02:22:09"), "addressType": "IPv4", "endpoints": None, "ports": None}
    assert render("discovery.k8s.io", "EndpointSlice", [es], at("02:22:15")) == expected("""
NAME        ADDRESSTYPE   PORTS     ENDPOINTS   AGE
web-tjj29   IPv4          <unset>   <unset>     6s
""")


def nodes() -> list[dict]:
    out = []
    for i, created in enumerate(["02:22:03", "02:22:04", "02:22:04", "02:22:04"], start=1):
        out.append(
            {
                "metadata": meta(
                    f"node{i}",
                    created,
                    None,
                    labels={"kubernetes.io/hostname": f"node{i}", "kubernetes.io/os": "linux"},
                ),
                "spec": {"taints": [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]}
                if i == 1
                else {},
                "status": {
                    "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady"}],
                    "addresses": [
                        {"type": "InternalIP", "address": f"192.0.2.{i}"},
                        {"type": "Hostname", "address": f"node{i}"},
                    ],
                    "nodeInfo": {
                        "kubeletVersion": "v1.32.0",
                        "osImage": "Debian GNU/Linux 12",
                        "kernelVersion": "6.1.0",
                        "containerRuntimeVersion": "containerd://1.7.0",
                    },
                },
            }
        )
    return out


def test_nodes() -> None:
    # L305-320 (node2 describe, L770-801, gives the addresses and node info)
    now = at("02:22:15")
    assert render("", "Node", nodes(), now) == expected("""
NAME    STATUS   ROLES    AGE   VERSION
node1   Ready    <none>   12s   v1.32.0
node2   Ready    <none>   11s   v1.32.0
node3   Ready    <none>   11s   v1.32.0
node4   Ready    <none>   11s   v1.32.0
""")
    assert render("", "Node", nodes(), now, wide=True) == expected("""
NAME    STATUS   ROLES    AGE   VERSION   INTERNAL-IP   EXTERNAL-IP   OS-IMAGE              KERNEL-VERSION   CONTAINER-RUNTIME
node1   Ready    <none>   12s   v1.32.0   192.0.2.1     <none>        Debian GNU/Linux 12   6.1.0            containerd://1.7.0
node2   Ready    <none>   11s   v1.32.0   192.0.2.2     <none>        Debian GNU/Linux 12   6.1.0            containerd://1.7.0
node3   Ready    <none>   11s   v1.32.0   192.0.2.3     <none>        Debian GNU/Linux 12   6.1.0            containerd://1.7.0
node4   Ready    <none>   11s   v1.32.0   192.0.2.4     <none>        Debian GNU/Linux 12   6.1.0            containerd://1.7.0
""")


@pytest.mark.parametrize(
    "labels, unschedulable, conditions, status, roles",
    [
        (
            {"node-role.kubernetes.io/control-plane": ""},
            False,
            [{"type": "Ready", "status": "True"}],
            "Ready",
            "control-plane",
        ),
        (
            {"node-role.kubernetes.io/worker": "", "kubernetes.io/role": "infra"},
            True,
            [{"type": "Ready", "status": "True"}],
            "Ready,SchedulingDisabled",
            "infra,worker",
        ),
        (
            {"node-role.kubernetes.io/": "x"},
            False,
            [{"type": "Ready", "status": "Unknown"}],
            "NotReady",
            "<none>",
        ),
        ({}, True, [], "Unknown,SchedulingDisabled", "<none>"),
    ],
)
def test_node_status_and_roles(
    labels: dict, unschedulable: bool, conditions: list, status: str, roles: str
) -> None:
    node = {
        "metadata": meta("n", "02:00:00", None, labels=labels),
        "spec": {"unschedulable": unschedulable},
        "status": {"conditions": conditions},
    }
    row = render("", "Node", [node], at("02:00:01"), wide=True)[1]
    assert row[1:3] == [status, roles]
    assert row[5:] == ["<none>", "<none>", "<unknown>", "<unknown>", "<unknown>"]


def test_events() -> None:
    # L323-327: a scheduler event (events.k8s.io recorder: eventTime, no lastTimestamp) and
    # controller events (legacy recorder: first/lastTimestamp, count, source).
    evs: list[dict] = [
        {
            "metadata": meta("testdemo-665685df7-sgczd.1", "02:22:08"),
            "type": "Normal",
            "reason": "Scheduled",
            "involvedObject": {"kind": "Pod", "namespace": "default", "name": "testdemo-665685df7-sgczd"},
            "message": "Successfully assigned default/testdemo-665685df7-sgczd to node2",
            "eventTime": "2026-11-22T02:22:08.512345Z",
            "reportingComponent": "default-scheduler",
            "reportingInstance": "default-scheduler-cp",
            "source": {},
            "firstTimestamp": None,
            "lastTimestamp": None,
        },
        {
            "metadata": meta("testdemo.2", "02:22:08"),
            "type": "Normal",
            "reason": "ScalingReplicaSet",
            "involvedObject": {
                "kind": "Deployment",
                "namespace": "default",
                "name": "testdemo",
                "apiVersion": "apps/v1",
            },
            "message": "Scaled up replica set testdemo-665685df7 from 0 to 1",
            "count": 1,
            "firstTimestamp": ts("02:22:08"),
            "lastTimestamp": ts("02:22:08"),
            "source": {"component": "deployment-controller"},
        },
        {
            "metadata": meta("testdemo-665685df7.3", "02:22:08"),
            "type": "Normal",
            "reason": "SuccessfulCreate",
            "involvedObject": {"kind": "ReplicaSet", "namespace": "default", "name": "testdemo-665685df7"},
            "message": "Created pod: testdemo-665685df7-sgczd\n",
            "count": 1,
            "firstTimestamp": ts("02:22:08"),
            "lastTimestamp": ts("02:22:08"),
            "source": {"component": "replicaset-controller"},
        },
    ]
    rows = render("", "Event", evs, at("02:22:15"))
    assert rows[0] == ["LAST SEEN", "TYPE", "REASON", "OBJECT", "MESSAGE"]
    assert (
        rows[2:]
        == expected("""
LAST SEEN   TYPE     REASON              OBJECT                          MESSAGE
7s          Normal   ScalingReplicaSet   deployment/testdemo             Scaled up replica set testdemo-665685df7 from 0 to 1
7s          Normal   SuccessfulCreate    replicaset/testdemo-665685df7   Created pod: testdemo-665685df7-sgczd
""")[1:]
    )
    assert rows[1][:4] == ["6s", "Normal", "Scheduled", "pod/testdemo-665685df7-sgczd"]
    wide = render("", "Event", evs, at("02:22:15"), wide=True)
    assert wide[0] == [
        "LAST SEEN",
        "TYPE",
        "REASON",
        "OBJECT",
        "SUBOBJECT",
        "SOURCE",
        "MESSAGE",
        "FIRST SEEN",
        "COUNT",
        "NAME",
    ]
    assert wide[1][5] == "default-scheduler, default-scheduler-cp"
    assert wide[1][7:] == ["6s", "1", "testdemo-665685df7-sgczd.1"]
    assert wide[2][5] == "deployment-controller"


def test_events_k8s_io_form() -> None:
    ev = {
        "metadata": meta("e", "02:00:00"),
        "type": "Warning",
        "reason": "BackOff",
        "note": "Back-off restarting",
        "regarding": {"kind": "Pod", "name": "p"},
        "reportingController": "kubelet",
        "reportingInstance": "node1",
        "eventTime": "2026-11-22T02:00:00.000000Z",
        "series": {"count": 7, "lastObservedTime": "2026-11-22T02:05:00.000000Z"},
    }
    cells = build_table(PRINTERS[("events.k8s.io", "Event")], [ev], at("02:10:00"))["rows"][0]["cells"]
    assert cells == [
        "5m",
        "Warning",
        "BackOff",
        "pod/p",
        "",
        "kubelet, node1",
        "Back-off restarting",
        "10m",
        7,
        "e",
    ]


# ---------------------------------------------------------------------------------------
# Pod STATUS / READY / RESTARTS (printPod)


def cs(
    name: str = "c",
    ready: bool = False,
    restarts: int = 0,
    state: dict | None = None,
    last: dict | None = None,
    **kw: object,
) -> dict:
    d: dict = {"name": name, "ready": ready, "restartCount": restarts, "state": state or {}, **kw}
    if last is not None:
        d["lastState"] = last
    return d


RUNNING = {"running": {"startedAt": ts("02:00:00")}}
NOW = at("02:10:00")


@pytest.mark.parametrize(
    "spec, status, deleting, want",
    [
        # phase only
        ({}, {"phase": "Pending"}, False, ("Pending", 0, 1, "0")),
        (
            {},
            {
                "phase": "Running",
                "containerStatuses": [cs(ready=True, state=RUNNING)],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
            False,
            ("Running", 1, 1, "0"),
        ),
        (
            {},
            {
                "phase": "Pending",
                "containerStatuses": [cs(state={"waiting": {"reason": "ContainerCreating"}})],
            },
            False,
            ("ContainerCreating", 0, 1, "0"),
        ),
        (
            {},
            {
                "phase": "Running",
                "containerStatuses": [
                    cs(
                        restarts=5,
                        state={"waiting": {"reason": "CrashLoopBackOff"}},
                        last={"terminated": {"exitCode": 1, "finishedAt": ts("02:06:53")}},
                    )
                ],
            },
            False,
            ("CrashLoopBackOff", 0, 1, "5 (3m7s ago)"),
        ),
        (
            {},
            {
                "phase": "Succeeded",
                "containerStatuses": [cs(state={"terminated": {"exitCode": 0, "reason": "Completed"}})],
            },
            False,
            ("Completed", 0, 1, "0"),
        ),
        (
            {},
            {
                "phase": "Failed",
                "containerStatuses": [cs(state={"terminated": {"exitCode": 2, "reason": "Error"}})],
            },
            False,
            ("Error", 0, 1, "0"),
        ),
        (
            {},
            {"phase": "Failed", "containerStatuses": [cs(state={"terminated": {"exitCode": 137}})]},
            False,
            ("ExitCode:137", 0, 1, "0"),
        ),
        (
            {},
            {
                "phase": "Failed",
                "containerStatuses": [cs(state={"terminated": {"exitCode": 0, "signal": 9}})],
            },
            False,
            ("Signal:9", 0, 1, "0"),
        ),
        # status.reason wins over phase: evictions
        (
            {},
            {"phase": "Failed", "reason": "Evicted", "message": "The node was low on resource: memory."},
            False,
            ("Evicted", 0, 1, "0"),
        ),
        # a completed container next to a running one
        (
            {"containers": [{"name": "a"}, {"name": "b"}]},
            {
                "phase": "Running",
                "containerStatuses": [
                    cs("a", ready=True, state=RUNNING),
                    cs("b", state={"terminated": {"exitCode": 0, "reason": "Completed"}}),
                ],
                "conditions": [{"type": "Ready", "status": "False"}],
            },
            False,
            ("NotReady", 1, 2, "0"),
        ),
        (
            {"containers": [{"name": "a"}, {"name": "b"}]},
            {
                "phase": "Running",
                "containerStatuses": [
                    cs("a", ready=True, state=RUNNING),
                    cs("b", state={"terminated": {"exitCode": 0, "reason": "Completed"}}),
                ],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
            False,
            ("Running", 1, 2, "0"),
        ),
        # init containers
        (
            {"initContainers": [{"name": "i1"}, {"name": "i2"}]},
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("i1", state={"terminated": {"exitCode": 0}}),
                    cs("i2", state={"running": {}}),
                ],
            },
            False,
            ("Init:1/2", 0, 1, "0"),
        ),
        (
            {"initContainers": [{"name": "i1"}]},
            {
                "phase": "Pending",
                "initContainerStatuses": [
                    cs("i1", restarts=3, state={"waiting": {"reason": "CrashLoopBackOff"}})
                ],
            },
            False,
            ("Init:CrashLoopBackOff", 0, 1, "3"),
        ),
        (
            {"initContainers": [{"name": "i1"}]},
            {
                "phase": "Pending",
                "initContainerStatuses": [cs("i1", state={"terminated": {"exitCode": 1, "reason": "Error"}})],
            },
            False,
            ("Init:Error", 0, 1, "0"),
        ),
        (
            {"initContainers": [{"name": "i1"}]},
            {"phase": "Pending", "initContainerStatuses": [cs("i1", state={"terminated": {"exitCode": 3}})]},
            False,
            ("Init:ExitCode:3", 0, 1, "0"),
        ),
        (
            {"initContainers": [{"name": "i1"}]},
            {
                "phase": "Pending",
                "initContainerStatuses": [cs("i1", state={"terminated": {"exitCode": 0}})],
                "containerStatuses": [cs(state={"waiting": {"reason": "PodInitializing"}})],
            },
            False,
            ("PodInitializing", 0, 1, "0"),
        ),
        # a started sidecar (restartPolicy Always init container) counts as a container
        (
            {"initContainers": [{"name": "side", "restartPolicy": "Always"}]},
            {
                "phase": "Running",
                "initContainerStatuses": [cs("side", ready=True, started=True, restarts=1, state=RUNNING)],
                "containerStatuses": [cs(ready=True, state=RUNNING)],
                "conditions": [{"type": "Ready", "status": "True"}],
            },
            False,
            ("Running", 2, 2, "1"),
        ),
        # deletion
        (
            {},
            {"phase": "Running", "containerStatuses": [cs(ready=True, state=RUNNING)]},
            True,
            ("Terminating", 1, 1, "0"),
        ),
        ({}, {"phase": "Succeeded"}, True, ("Succeeded", 0, 1, "0")),
        ({}, {"phase": "Running", "reason": "NodeLost"}, True, ("Unknown", 0, 1, "0")),
        # scheduling gates
        (
            {},
            {
                "phase": "Pending",
                "conditions": [{"type": "PodScheduled", "status": "False", "reason": "SchedulingGated"}],
            },
            False,
            ("SchedulingGated", 0, 1, "0"),
        ),
    ],
)
def test_pod_status(spec: dict, status: dict, deleting: bool, want: tuple) -> None:
    pod = {
        "metadata": meta("p", "02:00:00"),
        "spec": {"containers": [{"name": "c"}], **spec},
        "status": status,
    }
    if deleting:
        pod["metadata"]["deletionTimestamp"] = ts("02:09:00")
    assert pod_status_reason(pod, NOW) == want


def test_pod_row_extras() -> None:
    pod = {
        "metadata": meta("p", "02:00:00"),
        "spec": {
            "containers": [{"name": "c"}],
            "nodeName": "n1",
            "readinessGates": [{"conditionType": "x/ready"}, {"conditionType": "y"}],
        },
        "status": {
            "phase": "Succeeded",
            "podIP": "10.0.0.5",
            "podIPs": [{"ip": "10.0.0.5"}, {"ip": "fd00::5"}],
            "nominatedNodeName": "n2",
            "conditions": [{"type": "x/ready", "status": "True"}, {"type": "y", "status": "False"}],
        },
    }
    table = build_table(PRINTERS[("", "Pod")], [pod], NOW)
    assert table["rows"][0]["cells"][5:] == ["10.0.0.5", "n1", "n2", "1/2"]
    assert table["rows"][0]["conditions"] == [
        {
            "type": "Completed",
            "status": "True",
            "reason": "Succeeded",
            "message": "The pod has completed successfully.",
        }
    ]


# ---------------------------------------------------------------------------------------
# Other kinds


def test_column_sets() -> None:
    # Column names per upstream printers.go (v1.33); spot the tricky ones.
    def names(group: str, kind: str) -> list[str]:
        return [c["name"] for c in printer_for(group, kind).columns]

    assert names("batch", "CronJob") == [
        "Name",
        "Schedule",
        "Timezone",
        "Suspend",
        "Active",
        "Last Schedule",
        "Age",
        "Containers",
        "Images",
        "Selector",
    ]
    assert names("", "PersistentVolume") == [
        "Name",
        "Capacity",
        "Access Modes",
        "Reclaim Policy",
        "Status",
        "Claim",
        "StorageClass",
        "VolumeAttributesClass",
        "Reason",
        "Age",
        "VolumeMode",
    ]
    assert names("", "PersistentVolumeClaim") == [
        "Name",
        "Status",
        "Volume",
        "Capacity",
        "Access Modes",
        "StorageClass",
        "VolumeAttributesClass",
        "Age",
        "VolumeMode",
    ]
    assert names("autoscaling", "HorizontalPodAutoscaler") == [
        "Name",
        "Reference",
        "Targets",
        "MinPods",
        "MaxPods",
        "Replicas",
        "Age",
    ]
    assert names("certificates.k8s.io", "CertificateSigningRequest") == [
        "Name",
        "Age",
        "SignerName",
        "Requestor",
        "RequestedDuration",
        "Condition",
    ]
    assert names("scheduling.k8s.io", "PriorityClass") == [
        "Name",
        "Value",
        "Global-Default",
        "Age",
        "PreemptionPolicy",
    ]
    assert names("rbac.authorization.k8s.io", "Role") == ["Name", "Created At"]
    assert names("", "LimitRange") == ["Name", "Created At"]
    assert names("apiextensions.k8s.io", "CustomResourceDefinition") == ["Name", "Created At"]
    for gk, p in PRINTERS.items():
        cols = p.columns
        assert all(set(c) == {"name", "type", "format", "description", "priority"} for c in cols), gk
    assert (
        printer_for("", "Pod").columns[0]["description"].startswith("Name must be unique within a namespace.")
    )


def test_every_printer_handles_a_bare_object() -> None:
    bare = {"metadata": {"name": "x"}}
    for gk, p in PRINTERS.items():
        cells = p.cells(bare, NOW)
        assert len(cells) == len(p.columns), gk
        assert cells[0] == "x" or gk in {
            ("", "Event"),
            ("events.k8s.io", "Event"),
            ("certificates.k8s.io", "CertificateSigningRequest"),
        }


def test_default_table() -> None:
    crd = {
        "metadata": {
            "name": "widgets.example.com",
            "creationTimestamp": "2026-11-22T02:22:08Z",
            "resourceVersion": "7",
        }
    }
    table = build_table(DEFAULT, [crd], NOW)
    assert [(c["name"], c["type"], c["format"]) for c in table["columnDefinitions"]] == [
        ("Name", "string", "name"),
        ("Created At", "date", ""),
    ]
    assert table["rows"][0]["cells"] == ["widgets.example.com", "2026-11-22T02:22:08Z"]
    assert build_table(DEFAULT, [{"metadata": {"name": "x"}}], NOW)["rows"][0]["cells"] == [
        "x",
        "0001-01-01T00:00:00Z",
    ]
    assert build_table(DEFAULT, [], NOW)["rows"] is None  # the default convertor leaves rows nil


def test_build_table_include_object_and_meta() -> None:
    cm = {
        "kind": "ConfigMap",
        "apiVersion": "v1",
        "metadata": meta("c", "02:22:13", resourceVersion="42"),
        "data": {"a": "1"},
    }
    t = build_table(
        PRINTERS[("", "ConfigMap")], [cm], at("02:22:14"), list_meta={"resourceVersion": "99", "continue": ""}
    )
    assert t["kind"] == "Table" and t["apiVersion"] == "meta.k8s.io/v1"
    assert t["metadata"] == {"resourceVersion": "99"}
    assert t["rows"][0] == {
        "cells": ["c", 1, "1s"],
        "object": {
            "kind": "PartialObjectMetadata",
            "apiVersion": "meta.k8s.io/v1",
            "metadata": cm["metadata"],
        },
    }
    assert (
        build_table(PRINTERS[("", "ConfigMap")], [cm], 0.0, include_object="Object")["rows"][0]["object"]
        is cm
    )
    assert (
        build_table(PRINTERS[("", "ConfigMap")], [cm], 0.0, include_object="None")["rows"][0]["object"]
        is None
    )
    assert build_table(PRINTERS[("", "ConfigMap")], [cm], 0.0, no_headers=True)["columnDefinitions"] is None
    t1 = build_table(PRINTERS[("", "ConfigMap")], [cm], 0.0, api_version="meta.k8s.io/v1beta1")
    assert t1["rows"][0]["object"]["apiVersion"] == "meta.k8s.io/v1beta1"
    with pytest.raises(StatusError) as ei:
        build_table(PRINTERS[("", "ConfigMap")], [cm], 0.0, include_object="Everything")
    assert ei.value.code == 400 and ei.value.message == 'unrecognized includeObject value: "Everything"'


def test_crd_printer() -> None:
    cols: list[dict] = [
        {"name": "Replicas", "type": "integer", "jsonPath": ".spec.replicas"},
        {"name": "Ready", "type": "string", "jsonPath": '.status.conditions[?(@.type=="Ready")].status'},
        {"name": "Ratio", "type": "number", "jsonPath": ".spec.ratio", "priority": 1},
        {"name": "Paused", "type": "boolean", "jsonPath": ".spec.paused"},
        {"name": "Tags", "type": "string", "jsonPath": ".spec.tags", "description": "the tags"},
        {"name": "Started", "type": "date", "jsonPath": ".status.startTime"},
        {"name": "Missing", "type": "string", "jsonPath": ".status.nothing"},
    ]
    p = crd_printer(cols)
    assert [c["name"] for c in p.columns] == [
        "Name",
        "Replicas",
        "Ready",
        "Ratio",
        "Paused",
        "Tags",
        "Started",
        "Missing",
    ]
    assert (
        p.columns[1]["description"]
        == "Custom resource definition column (in JSONPath format): .spec.replicas"
    )
    assert p.columns[5]["description"] == "the tags"
    assert p.columns[3]["priority"] == 1
    obj = {
        "metadata": {"name": "w1"},
        "spec": {"replicas": 3, "ratio": 1, "paused": False, "tags": {"b": 1, "a": "<x>"}},
        "status": {
            "startTime": ts("02:05:00"),
            "conditions": [{"type": "Synced", "status": "True"}, {"type": "Ready", "status": "False"}],
        },
    }
    assert p.cells(obj, NOW) == ["w1", 3, "False", 1.0, False, '{"a":"\\u003cx\\u003e","b":1}', "5m", None]
    # no columns: Name plus an Age date column
    default = crd_printer([])
    assert [(c["name"], c["type"]) for c in default.columns] == [("Name", "string"), ("Age", "date")]
    assert default.cells({"metadata": {"name": "w", "creationTimestamp": ts("02:09:00")}}, NOW) == [
        "w",
        "60s",
    ]
    # type mismatches give null cells; unparsable dates give <invalid>
    q = crd_printer(
        [{"name": "N", "type": "integer", "jsonPath": ".a"}, {"name": "D", "type": "date", "jsonPath": ".b"}]
    )
    assert q.cells({"metadata": {"name": "x"}, "a": "three", "b": "yesterday"}, NOW) == [
        "x",
        None,
        "<invalid>",
    ]


def test_misc_kinds() -> None:
    now = at("02:10:00")
    created = meta("x", "02:00:00")

    def cells(group: str, kind: str, obj: dict) -> list:
        return PRINTERS[(group, kind)].cells({"metadata": created, **obj}, now)

    assert cells(
        "",
        "Service",
        {
            "spec": {
                "type": "LoadBalancer",
                "clusterIPs": ["10.0.0.9"],
                "ports": [{"port": 80, "nodePort": 30080, "protocol": "TCP"}],
            },
            "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.9"}, {"hostname": "lb.example"}]}},
        },
    )[2:5] == ["10.0.0.9", "203.0.113.9,lb.example", "80:30080/TCP"]
    assert cells("", "Service", {"spec": {"type": "LoadBalancer", "clusterIPs": ["10.0.0.9"]}})[3:5] == [
        "<pending>",
        "<none>",
    ]
    assert cells("", "Service", {"spec": {"type": "ExternalName", "externalName": "db.example"}})[2:4] == [
        "<none>",
        "db.example",
    ]
    subsets = [
        {"addresses": [{"ip": f"10.0.0.{i}"} for i in range(1, 4)], "ports": [{"port": 80}, {"port": 443}]}
    ]
    assert (
        cells("", "Endpoints", {"subsets": subsets})[1] == "10.0.0.1:80,10.0.0.2:80,10.0.0.3:80 + 3 more..."
    )
    assert cells("", "ServiceAccount", {"secrets": [{"name": "a"}]})[1] == 1
    assert cells(
        "",
        "PersistentVolume",
        {
            "spec": {
                "capacity": {"storage": "1Gi"},
                "accessModes": ["ReadWriteMany", "ReadWriteOnce"],
                "persistentVolumeReclaimPolicy": "Retain",
                "claimRef": {"namespace": "d", "name": "c"},
                "storageClassName": "fast",
            },
            "status": {"phase": "Bound"},
        },
    ) == ["x", "1Gi", "RWO,RWX", "Retain", "Bound", "d/c", "fast", "<unset>", "", "10m", "<unset>"]
    assert cells(
        "",
        "PersistentVolumeClaim",
        {"spec": {"resources": {"requests": {"storage": "1Gi"}}}, "status": {"phase": "Pending"}},
    ) == ["x", "Pending", "", "", "", "", "<unset>", "10m", "<unset>"]
    assert cells(
        "",
        "PersistentVolumeClaim",
        {
            "spec": {"volumeName": "pv1", "storageClassName": "fast", "volumeMode": "Filesystem"},
            "status": {"phase": "Bound", "capacity": {"storage": "1024Mi"}, "accessModes": ["ReadWriteOnce"]},
        },
    ) == ["x", "Bound", "pv1", "1Gi", "RWO", "fast", "<unset>", "10m", "Filesystem"]
    assert cells(
        "",
        "ResourceQuota",
        {
            "status": {
                "hard": {"limits.cpu": "2", "requests.cpu": "1", "pods": "10"},
                "used": {"requests.cpu": "500m", "pods": "1"},
            }
        },
    )[1:3] == ["pods: 1/10, requests.cpu: 500m/1", "limits.cpu: 0/2"]
    assert cells("apps", "StatefulSet", {"spec": {"replicas": 3}, "status": {"readyReplicas": 2}})[1] == "2/3"
    assert cells(
        "apps",
        "ControllerRevision",
        {
            "metadata": {
                **created,
                "ownerReferences": [
                    {"apiVersion": "apps/v1", "kind": "DaemonSet", "name": "test-ds", "controller": True}
                ],
            },
            "revision": 1,
        },
    )[1:3] == ["daemonset.apps/test-ds", 1]
    assert cells(
        "batch",
        "Job",
        {
            "spec": {"parallelism": 3},
            "status": {
                "succeeded": 1,
                "startTime": ts("02:00:00"),
                "completionTime": ts("02:03:07"),
                "conditions": [{"type": "Complete", "status": "True"}],
            },
        },
    )[1:4] == ["Complete", "1/1 of 3", "3m7s"]
    assert cells(
        "batch",
        "Job",
        {
            "spec": {"completions": 2, "suspend": True},
            "status": {"conditions": [{"type": "Suspended", "status": "True"}]},
        },
    )[1:4] == ["Suspended", "0/2", ""]
    assert cells(
        "networking.k8s.io",
        "Ingress",
        {"spec": {"ingressClassName": "nginx", "rules": [{"host": f"h{i}"} for i in range(5)], "tls": [{}]}},
    )[1:5] == ["nginx", "h0,h1,h2 + 2 more...", "", "80, 443"]
    assert cells("networking.k8s.io", "Ingress", {"spec": {"rules": [{}]}})[1:5] == ["<none>", "*", "", "80"]
    assert cells(
        "networking.k8s.io",
        "IngressClass",
        {
            "spec": {
                "controller": "k8s.io/ingress-nginx",
                "parameters": {"apiGroup": "k8s.example.com", "kind": "P", "name": "p"},
            }
        },
    )[1:3] == ["k8s.io/ingress-nginx", "P.k8s.example.com/p"]
    assert cells("networking.k8s.io", "NetworkPolicy", {"spec": {"podSelector": {}}})[1] == "<none>"
    assert (
        cells(
            "networking.k8s.io", "NetworkPolicy", {"spec": {"podSelector": {"matchLabels": {"role": "db"}}}}
        )[1]
        == "role=db"
    )
    assert cells(
        "policy",
        "PodDisruptionBudget",
        {"spec": {"minAvailable": "50%"}, "status": {"disruptionsAllowed": 1}},
    )[1:4] == ["50%", "N/A", 1]
    assert cells(
        "autoscaling",
        "HorizontalPodAutoscaler",
        {
            "spec": {
                "scaleTargetRef": {"kind": "Deployment", "name": "php-apache"},
                "minReplicas": 1,
                "maxReplicas": 10,
                "metrics": [
                    {
                        "type": "Resource",
                        "resource": {
                            "name": "cpu",
                            "target": {"type": "Utilization", "averageUtilization": 50},
                        },
                    }
                ],
            },
            "status": {"currentReplicas": 1},
        },
    )[1:6] == ["Deployment/php-apache", "cpu: <unknown>/50%", "1", 10, 1]
    assert cells(
        "autoscaling",
        "HorizontalPodAutoscaler",
        {
            "spec": {
                "scaleTargetRef": {"kind": "ReplicationController", "name": "php-apache"},
                "maxReplicas": 10,
                "targetCPUUtilizationPercentage": 50,
            },
            "status": {"currentCPUUtilizationPercentage": 12},
        },
    )[1:4] == ["ReplicationController/php-apache", "cpu: 12%/50%", "<unset>"]
    assert cells(
        "rbac.authorization.k8s.io",
        "RoleBinding",
        {
            "roleRef": {"kind": "Role", "name": "r"},
            "subjects": [
                {"kind": "User", "name": "alice"},
                {"kind": "Group", "name": "devs"},
                {"kind": "ServiceAccount", "namespace": "d", "name": "sa"},
            ],
        },
    )[1:] == ["Role/r", "10m", "alice", "devs", "d/sa"]
    assert cells(
        "certificates.k8s.io",
        "CertificateSigningRequest",
        {
            "spec": {
                "signerName": "kubernetes.io/kube-apiserver-client",
                "username": "alice",
                "expirationSeconds": 86400,
            },
            "status": {"conditions": [{"type": "Approved"}], "certificate": "LS0t"},
        },
    )[1:] == ["10m", "kubernetes.io/kube-apiserver-client", "alice", "24h", "Approved,Issued"]
    assert cells("coordination.k8s.io", "Lease", {"spec": {"holderIdentity": "node1"}})[1] == "node1"
    assert cells(
        "scheduling.k8s.io",
        "PriorityClass",
        {"value": 1000, "globalDefault": False, "preemptionPolicy": "Never"},
    ) == ["x", 1000, False, "10m", "Never"]
    assert cells(
        "storage.k8s.io",
        "StorageClass",
        {
            "metadata": {**created, "annotations": {"storageclass.kubernetes.io/is-default-class": "true"}},
            "provisioner": "rancher.io/local-path",
        },
    ) == ["x (default)", "rancher.io/local-path", "Delete", "Immediate", False, "10m"]
    assert cells("storage.k8s.io", "CSIDriver", {"spec": {}})[1:7] == [
        True,
        False,
        False,
        "<unset>",
        False,
        "<none>",
    ]
    assert cells(
        "storage.k8s.io", "CSIStorageCapacity", {"storageClassName": "fast", "capacity": "1024Mi"}
    ) == ["x", "fast", "1Gi"]
    assert cells(
        "storage.k8s.io",
        "VolumeAttachment",
        {
            "spec": {"attacher": "csi.example", "nodeName": "n1", "source": {"persistentVolumeName": "pv1"}},
            "status": {"attached": True},
        },
    ) == ["x", "csi.example", "pv1", "n1", True, "10m"]
    assert (
        cells("admissionregistration.k8s.io", "ValidatingWebhookConfiguration", {"webhooks": [{}, {}]})[1]
        == 2
    )
    assert cells(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicy",
        {"spec": {"validations": [{}], "paramKind": {"apiVersion": "v1", "kind": "ConfigMap"}}},
    )[1:3] == [1, "v1/ConfigMap"]
    assert cells(
        "admissionregistration.k8s.io",
        "ValidatingAdmissionPolicyBinding",
        {"spec": {"policyName": "p", "paramRef": {"name": "cfg"}}},
    )[1:3] == ["p", "*/cfg"]
    assert cells(
        "apiregistration.k8s.io",
        "APIService",
        {
            "spec": {"service": {"namespace": "kube-system", "name": "metrics-server"}},
            "status": {
                "conditions": [{"type": "Available", "status": "False", "reason": "MissingEndpoints"}]
            },
        },
    )[1:3] == ["kube-system/metrics-server", "False (MissingEndpoints)"]
    assert cells("apiregistration.k8s.io", "APIService", {"spec": {}})[1:3] == ["Local", "Unknown"]
    assert cells("flowcontrol.apiserver.k8s.io", "PriorityLevelConfiguration", {"spec": {"type": "Exempt"}})[
        1:6
    ] == ["Exempt", "<none>", "<none>", "<none>", "<none>"]


def test_flow_schemas_sort_by_precedence() -> None:
    fss = [
        {
            "metadata": {"name": n},
            "spec": {"matchingPrecedence": p, "priorityLevelConfiguration": {"name": "pl"}},
        }
        for n, p in [("global-default", 9900), ("exempt", 1), ("catch-all", 10000), ("b", 1)]
    ]
    rows = build_table(PRINTERS[("flowcontrol.apiserver.k8s.io", "FlowSchema")], fss, NOW)["rows"]
    assert [r["cells"][0] for r in rows] == ["b", "exempt", "global-default", "catch-all"]
    assert rows[0]["cells"][3:] == ["<none>", "<unknown>", "?"]
