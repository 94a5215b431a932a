"""Defaulting and create-time status of the non-core built-in kinds.

The Deployment, DaemonSet and Job expectations are the "full objects after defaulting"
of /work/shared/reference/upstream-observed.md; the others follow upstream's
pkg/apis/<group>/v1/defaults.go.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyk8s.api.defaults import DEFAULTERS, STATUS_ON_CREATE
from pyk8s.api.defaults.groups import prepare_daemon_set_for_update, prepare_job_for_create

UID = "3650e62b-9e4a-43ef-8dd1-42a4430f1716"


def _gk(obj: dict[str, Any]) -> tuple[str, str]:
    av = obj["apiVersion"]
    return (av.split("/")[0] if "/" in av else "", obj["kind"])


def defaulted(obj: dict[str, Any], status: bool = False) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    DEFAULTERS[_gk(obj)](obj)
    if status:
        STATUS_ON_CREATE[_gk(obj)](obj)
    return obj


# the defaulted pod template spec the transcript shows for a busybox-like container
def _pod_spec(container: dict[str, Any], restart: str = "Always", **extra: Any) -> dict[str, Any]:
    c = {**container, "resources": {}, "terminationMessagePath": "/dev/termination-log",
         "terminationMessagePolicy": "File"}
    return {"containers": [c], "dnsPolicy": "ClusterFirst", "restartPolicy": restart,
            "schedulerName": "default-scheduler", "securityContext": {}, "terminationGracePeriodSeconds": 30, **extra}


def test_deployment_as_observed() -> None:
    container = {"args": ["-c", "sleep 1000000"], "command": ["sh"], "image": "centos:7",
                 "imagePullPolicy": "IfNotPresent", "name": "testdemo"}
    dep = {"apiVersion": "apps/v1", "kind": "Deployment",
           "metadata": {"labels": {"app": "testdemo"}, "name": "testdemo", "namespace": "default"},
           "spec": {"selector": {"matchLabels": {"app": "testdemo"}},
                    "template": {"metadata": {"labels": {"app": "testdemo"}}, "spec": {"containers": [container]}}}}
    out = defaulted(dep, status=True)
    assert out["spec"] == {
        "progressDeadlineSeconds": 600, "replicas": 1, "revisionHistoryLimit": 10,
        "selector": {"matchLabels": {"app": "testdemo"}},
        "strategy": {"rollingUpdate": {"maxSurge": "25%", "maxUnavailable": "25%"}, "type": "RollingUpdate"},
        "template": {"metadata": {"creationTimestamp": None, "labels": {"app": "testdemo"}},
                     "spec": _pod_spec(container)},
    }
    assert out["status"] == {}


def test_deployment_recreate_gets_no_rolling_update() -> None:
    dep = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
           "spec": {"replicas": 3, "strategy": {"type": "Recreate"}, "template": {"spec": {"containers": []}}}}
    spec = defaulted(dep)["spec"]
    assert spec["strategy"] == {"type": "Recreate"} and spec["replicas"] == 3


def test_daemonset_as_observed() -> None:
    container = {"image": "busybox", "imagePullPolicy": "IfNotPresent", "name": "my-test-busybox", "stdin": True,
                 "tty": True}
    tolerations = [{"effect": "NoSchedule", "key": "node-role.kubernetes.io/master"}]
    ds = {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "test-ds", "namespace": "default"},
          "spec": {"selector": {"matchLabels": {"name": "my-test"}},
                   "template": {"metadata": {"labels": {"name": "my-test"}},
                                "spec": {"containers": [container], "tolerations": tolerations}}}}
    out = defaulted(ds, status=True)
    assert out["spec"] == {
        "revisionHistoryLimit": 10, "selector": {"matchLabels": {"name": "my-test"}},
        "template": {"metadata": {"creationTimestamp": None, "labels": {"name": "my-test"}},
                     "spec": _pod_spec(container, tolerations=tolerations)},
        "updateStrategy": {"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 1}, "type": "RollingUpdate"},
    }
    assert out["metadata"]["annotations"] == {"deprecated.daemonset.template.generation": "1"}
    assert out["status"] == {"currentNumberScheduled": 0, "desiredNumberScheduled": 0, "numberMisscheduled": 0,
                             "numberReady": 0}


def test_daemonset_template_generation_follows_template_changes() -> None:
    old = defaulted({"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "d"},
                     "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "a"}]}}}}, status=True)
    same = copy.deepcopy(old)
    prepare_daemon_set_for_update(same, old)
    assert same["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "1"
    changed = copy.deepcopy(old)
    changed["spec"]["template"]["spec"]["containers"][0]["image"] = "b"
    prepare_daemon_set_for_update(changed, old)
    assert changed["metadata"]["annotations"]["deprecated.daemonset.template.generation"] == "2"


def test_job_as_observed() -> None:
    """`kubectl create job j --image=busybox -- sh -c 'exit 0'`, then read back."""
    container = {"command": ["sh", "-c", "exit 0"], "image": "busybox", "name": "j", "resources": {}}
    job = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "namespace": "default", "uid": UID},
           "spec": {"template": {"metadata": {}, "spec": {"containers": [container], "restartPolicy": "Never"}}}}
    out = defaulted(job, status=True)
    generated = {"batch.kubernetes.io/controller-uid": UID, "batch.kubernetes.io/job-name": "j",
                 "controller-uid": UID, "job-name": "j"}
    assert out["metadata"]["labels"] == generated
    assert out["spec"] == {
        "backoffLimit": 6, "completionMode": "NonIndexed", "completions": 1, "manualSelector": False,
        "parallelism": 1, "podReplacementPolicy": "TerminatingOrFailed",
        "selector": {"matchLabels": {"batch.kubernetes.io/controller-uid": UID}}, "suspend": False,
        "template": {"metadata": {"creationTimestamp": None, "labels": generated},
                     "spec": _pod_spec({**container, "imagePullPolicy": "Always"}, restart="Never")},
    }
    assert out["status"] == {}


def test_job_defaults_depend_on_the_spec() -> None:
    base = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j", "labels": {"team": "a"}, "uid": UID},
            "spec": {"template": {"metadata": {"labels": {"app": "x"}}, "spec": {"containers": []}}}}
    parallel = copy.deepcopy(base)
    parallel["spec"].update(parallelism=3)
    spec = defaulted(parallel)["spec"]
    assert spec["parallelism"] == 3 and "completions" not in spec
    per_index = copy.deepcopy(base)
    per_index["spec"].update(completionMode="Indexed", completions=3, backoffLimitPerIndex=1,
                             podFailurePolicy={"rules": [{"action": "Ignore", "onPodConditions": [
                                 {"type": "DisruptionTarget"}]}]})
    spec = defaulted(per_index)["spec"]
    assert spec["backoffLimit"] == 2**31 - 1
    assert spec["podReplacementPolicy"] == "Failed"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"][0]["status"] == "True"
    # a Job's own labels are kept; selector generation adds to the template only
    out = defaulted(base, status=True)
    assert out["metadata"]["labels"] == {"team": "a"}
    assert out["spec"]["template"]["metadata"]["labels"]["app"] == "x"


def test_prepare_job_for_create_respects_manual_selectors_and_existing_labels() -> None:
    manual = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "m", "uid": UID},
              "spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "m"}},
                       "template": {"metadata": {"labels": {"app": "m"}}}}}
    prepare_job_for_create(manual)
    assert manual["spec"]["selector"] == {"matchLabels": {"app": "m"}}
    assert manual["spec"]["template"]["metadata"]["labels"] == {"app": "m"}
    conflicting = {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "c", "uid": UID},
                   "spec": {"template": {"metadata": {"labels": {"job-name": "mine"}}}}}
    prepare_job_for_create(conflicting)
    assert conflicting["spec"]["template"]["metadata"]["labels"]["job-name"] == "mine"  # validation rejects it


def test_cronjob() -> None:
    cj = {"apiVersion": "batch/v1", "kind": "CronJob", "metadata": {"name": "cj"},
          "spec": {"schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": {
              "containers": [{"name": "cj", "image": "busybox"}], "restartPolicy": "OnFailure"}}}}}}
    out = defaulted(cj, status=True)
    spec = out["spec"]
    assert (spec["concurrencyPolicy"], spec["suspend"], spec["successfulJobsHistoryLimit"],
            spec["failedJobsHistoryLimit"]) == ("Allow", False, 3, 1)
    jt = spec["jobTemplate"]
    assert jt["metadata"] == {"creationTimestamp": None}
    # only the pod template is defaulted inside the job template (no Job defaults)
    assert set(jt["spec"]) == {"template"}
    assert jt["spec"]["template"]["spec"]["dnsPolicy"] == "ClusterFirst"
    assert out["status"] == {}


def test_statefulset() -> None:
    sts = {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "web"},
           "spec": {"serviceName": "nginx", "selector": {"matchLabels": {"app": "nginx"}},
                    "template": {"metadata": {"labels": {"app": "nginx"}},
                                 "spec": {"containers": [{"name": "nginx", "image": "nginx"}]}},
                    "volumeClaimTemplates": [{"metadata": {"name": "www"}, "spec": {
                        "accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}]}}
    out = defaulted(sts, status=True)
    spec = out["spec"]
    assert spec["podManagementPolicy"] == "OrderedReady"
    assert spec["updateStrategy"] == {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
    assert spec["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Retain", "whenScaled": "Retain"}
    assert (spec["replicas"], spec["revisionHistoryLimit"]) == (1, 10)
    assert spec["volumeClaimTemplates"] == [{
        "apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": {"name": "www", "creationTimestamp": None},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}},
                 "volumeMode": "Filesystem"},
        "status": {"phase": "Pending"}}]
    assert out["status"] == {"availableReplicas": 0, "replicas": 0}
    on_delete = copy.deepcopy(sts)
    on_delete["spec"]["updateStrategy"] = {"type": "OnDelete"}
    assert defaulted(on_delete)["spec"]["updateStrategy"] == {"type": "OnDelete"}


def test_replicaset() -> None:
    rs = {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "rs"},
          "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "nginx:1.25"}]}}}}
    out = defaulted(rs, status=True)
    assert out["spec"]["replicas"] == 1
    assert out["spec"]["template"]["spec"]["containers"][0]["imagePullPolicy"] == "IfNotPresent"
    assert out["status"] == {"replicas": 0}


def test_hpa_v2() -> None:
    hpa = {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
           "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5,
                    "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}}
    out = defaulted(hpa, status=True)
    spec = out["spec"]
    assert spec["minReplicas"] == 1
    assert spec["metrics"] == [{"type": "Resource", "resource": {
        "name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}}}]
    assert spec["behavior"] == {
        "scaleUp": {"stabilizationWindowSeconds": 0, "selectPolicy": "Max", "policies": [
            {"type": "Pods", "value": 4, "periodSeconds": 15}, {"type": "Percent", "value": 100, "periodSeconds": 15}]},
        "scaleDown": {"stabilizationWindowSeconds": 60, "selectPolicy": "Max", "policies": [
            {"type": "Percent", "value": 100, "periodSeconds": 15}]},
    }
    assert out["status"] == {"currentMetrics": None, "desiredReplicas": 0}
    v1 = {"apiVersion": "autoscaling/v1", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
          "spec": {"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 5}}
    assert defaulted(v1)["spec"] == {**v1["spec"], "minReplicas": 1}


CASES: list[tuple[str, dict[str, Any], dict[str, Any]]] = [
    ("networkpolicy ingress only",
     {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"},
      "spec": {"ingress": [{"ports": [{"port": 80}]}]}},
     {"spec": {"podSelector": {}, "ingress": [{"ports": [{"port": 80, "protocol": "TCP"}]}], "policyTypes": ["Ingress"]}}),
    ("networkpolicy with egress",
     {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy", "metadata": {"name": "n"},
      "spec": {"podSelector": {}, "egress": [{}]}},
     {"spec": {"podSelector": {}, "egress": [{}], "policyTypes": ["Ingress", "Egress"]}}),
    ("ingressclass parameters scope",
     {"apiVersion": "networking.k8s.io/v1", "kind": "IngressClass", "metadata": {"name": "c"},
      "spec": {"controller": "x.io/c", "parameters": {"kind": "K", "name": "n"}}},
     {"spec": {"controller": "x.io/c", "parameters": {"kind": "K", "name": "n", "scope": "Cluster"}}}),
    ("storageclass",
     {"apiVersion": "storage.k8s.io/v1", "kind": "StorageClass", "metadata": {"name": "sc"}, "provisioner": "p.io/x"},
     {"provisioner": "p.io/x", "reclaimPolicy": "Delete", "volumeBindingMode": "Immediate"}),
    ("csidriver",
     {"apiVersion": "storage.k8s.io/v1", "kind": "CSIDriver", "metadata": {"name": "d.io"}, "spec": {}},
     {"spec": {"attachRequired": True, "podInfoOnMount": False, "storageCapacity": False,
               "fsGroupPolicy": "ReadWriteOnceWithFSType", "requiresRepublish": False, "seLinuxMount": False,
               "volumeLifecycleModes": ["Persistent"]}}),
    ("rolebinding",
     {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "RoleBinding", "metadata": {"name": "rb"},
      "roleRef": {"kind": "Role", "name": "r"},
      "subjects": [{"kind": "User", "name": "u"}, {"kind": "ServiceAccount", "name": "s"}]},
     {"roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"},
      "subjects": [{"kind": "User", "name": "u", "apiGroup": "rbac.authorization.k8s.io"},
                   {"kind": "ServiceAccount", "name": "s"}]}),
    ("priorityclass",
     {"apiVersion": "scheduling.k8s.io/v1", "kind": "PriorityClass", "metadata": {"name": "p"}, "value": 5},
     {"value": 5, "preemptionPolicy": "PreemptLowerPriority"}),
    ("endpointslice ports",
     {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "metadata": {"name": "e"}, "addressType": "IPv4",
      "ports": [{"port": 80}]},
     {"addressType": "IPv4", "ports": [{"port": 80, "name": "", "protocol": "TCP"}]}),
    ("validating webhook",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "ValidatingWebhookConfiguration",
      "metadata": {"name": "v"}, "webhooks": [{"name": "a.b.c", "clientConfig": {"service": {
          "namespace": "ns", "name": "svc"}}, "rules": [{"operations": ["CREATE"]}]}]},
     {"webhooks": [{"name": "a.b.c", "clientConfig": {"service": {"namespace": "ns", "name": "svc", "port": 443}},
                    "rules": [{"operations": ["CREATE"], "scope": "*"}], "failurePolicy": "Fail",
                    "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {},
                    "timeoutSeconds": 10}]}),
    ("mutating webhook reinvocation",
     {"apiVersion": "admissionregistration.k8s.io/v1", "kind": "MutatingWebhookConfiguration",
      "metadata": {"name": "m"}, "webhooks": [{"name": "a.b.c", "clientConfig": {"url": "https://x"}}]},
     {"webhooks": [{"name": "a.b.c", "clientConfig": {"url": "https://x"}, "failurePolicy": "Fail",
                    "matchPolicy": "Equivalent", "namespaceSelector": {}, "objectSelector": {}, "timeoutSeconds": 10,
                    "reinvocationPolicy": "Never"}]}),
    ("flowschema",
     {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "FlowSchema", "metadata": {"name": "f"},
      "spec": {"priorityLevelConfiguration": {"name": "p"}}},
     {"spec": {"priorityLevelConfiguration": {"name": "p"}, "matchingPrecedence": 1000}}),
    ("prioritylevelconfiguration",
     {"apiVersion": "flowcontrol.apiserver.k8s.io/v1", "kind": "PriorityLevelConfiguration", "metadata": {"name": "p"},
      "spec": {"type": "Limited", "limited": {"limitResponse": {"type": "Queue", "queuing": {}}}}},
     {"spec": {"type": "Limited", "limited": {"nominalConcurrencyShares": 30, "lendablePercent": 0, "limitResponse": {
         "type": "Queue", "queuing": {"handSize": 8, "queues": 64, "queueLengthLimit": 50}}}}}),
]


@pytest.mark.parametrize("name,obj,expected", CASES, ids=[c[0] for c in CASES])
def test_group_defaults(name: str, obj: dict[str, Any], expected: dict[str, Any]) -> None:
    out = defaulted(obj)
    for k, v in expected.items():
        assert out[k] == v


def test_crd_names_conversion_and_stored_versions() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
           "metadata": {"name": "widgets.example.com"},
           "spec": {"group": "example.com", "scope": "Namespaced", "names": {"plural": "widgets", "kind": "Widget"},
                    "versions": [{"name": "v1beta1", "served": True, "storage": False},
                                 {"name": "v1", "served": True, "storage": True}]},
           "status": {"conditions": [{"type": "Established", "status": "True"}]}}
    out = defaulted(crd, status=True)
    assert out["spec"]["names"] == {"plural": "widgets", "kind": "Widget", "singular": "widget", "listKind": "WidgetList"}
    assert out["spec"]["conversion"] == {"strategy": "None"}
    # a create starts the status over; the controllers set acceptedNames and conditions
    assert out["status"] == {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": ["v1"]}


def test_crd_update_records_a_new_storage_version() -> None:
    crd = {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition", "metadata": {"name": "w.x.io"},
           "spec": {"names": {"kind": "W"}, "versions": [{"name": "v1", "storage": False},
                                                          {"name": "v2", "storage": True}]},
           "status": {"storedVersions": ["v1"]}}
    assert defaulted(crd)["status"]["storedVersions"] == ["v1", "v2"]


def test_status_on_create_resets_what_clients_sent() -> None:
    objs = [
        ({"apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": "p"},
          "status": {"disruptionsAllowed": 9}},
         {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}),
        ({"apiVersion": "networking.k8s.io/v1", "kind": "Ingress", "metadata": {"name": "i"},
          "status": {"loadBalancer": {"ingress": [{"ip": "1.2.3.4"}]}}}, {"loadBalancer": {}}),
        ({"apiVersion": "storage.k8s.io/v1", "kind": "VolumeAttachment", "metadata": {"name": "v"},
          "status": {"attached": True}}, {"attached": False}),
    ]
    for obj, status in objs:
        STATUS_ON_CREATE[_gk(obj)](obj)
        assert obj["status"] == status


def test_defaulting_is_idempotent() -> None:
    objs = [
        {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "d"},
         "spec": {"template": {"spec": {"containers": [{"name": "c", "image": "i"}]}}}},
        {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "s"},
         "spec": {"volumeClaimTemplates": [{"metadata": {"name": "v"}, "spec": {}}]}},
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "j"}, "spec": {}},
        {"apiVersion": "autoscaling/v2", "kind": "HorizontalPodAutoscaler", "metadata": {"name": "h"},
         "spec": {"behavior": {}}},
    ]
    for obj in objs:
        once = defaulted(obj)
        assert defaulted(once) == once
