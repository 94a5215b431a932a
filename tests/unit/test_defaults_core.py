"""core/v1 defaulting, pinned against the defaulted objects of the observed transcript."""

from __future__ import annotations

import base64
import copy
from typing import Any

import pytest

from pyk8s.api.defaults import DEFAULTERS, STATUS_ON_CREATE
from pyk8s.api.defaults.core import (
    compute_pod_qos,
    default_pod_spec,
    default_pod_template,
    image_pull_policy,
    service_patch_allocated_values,
)
from pyk8s.api.validation import VALIDATORS


def apply(kind: str, obj: dict[str, Any], create: bool = True) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    DEFAULTERS[("", kind)](obj)
    if create and ("", kind) in STATUS_ON_CREATE:
        STATUS_ON_CREATE[("", kind)](obj)
    return obj


def test_transcript_pod_defaults() -> None:
    """`kubectl get pod -l app=testdemo -o yaml`, less what admission/scheduler add (SA, tolerations, nodeName)."""
    pod = {"apiVersion": "v1", "kind": "Pod",
           "metadata": {"name": "testdemo-665685df7-sgczd", "namespace": "default", "labels": {"app": "testdemo"}},
           "spec": {"containers": [{"name": "testdemo", "image": "centos:7", "command": ["sh"],
                                    "args": ["-c", "sleep 1000000"]}]}}
    got = apply("Pod", pod)
    assert got["spec"] == {
        "containers": [{"args": ["-c", "sleep 1000000"], "command": ["sh"], "image": "centos:7",
                        "imagePullPolicy": "IfNotPresent", "name": "testdemo", "resources": {},
                        "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
        "dnsPolicy": "ClusterFirst",
        "enableServiceLinks": True,
        "restartPolicy": "Always",
        "schedulerName": "default-scheduler",
        "securityContext": {},
        "terminationGracePeriodSeconds": 30,
    }
    assert got["status"] == {"phase": "Pending", "qosClass": "BestEffort"}
    assert VALIDATORS[("", "Pod")](got) == []


def test_transcript_template_defaults() -> None:
    """The Deployment's template: PodSpec defaults only (no enableServiceLinks), creationTimestamp null."""
    tpl = {"metadata": {"labels": {"app": "testdemo"}},
           "spec": {"containers": [{"args": ["-c", "sleep 1000000"], "command": ["sh"], "image": "centos:7",
                                    "imagePullPolicy": "IfNotPresent", "name": "testdemo"}]}}
    default_pod_template(tpl)
    assert tpl == {
        "metadata": {"creationTimestamp": None, "labels": {"app": "testdemo"}},
        "spec": {
            "containers": [{"args": ["-c", "sleep 1000000"], "command": ["sh"], "image": "centos:7",
                            "imagePullPolicy": "IfNotPresent", "name": "testdemo", "resources": {},
                            "terminationMessagePath": "/dev/termination-log", "terminationMessagePolicy": "File"}],
            "dnsPolicy": "ClusterFirst", "restartPolicy": "Always", "schedulerName": "default-scheduler",
            "securityContext": {}, "terminationGracePeriodSeconds": 30,
        },
    }


def test_transcript_job_template_keeps_restart_policy() -> None:
    spec = {"restartPolicy": "Never", "containers": [{"name": "j", "image": "busybox", "command": ["sh"]}]}
    default_pod_spec(spec)
    assert spec["restartPolicy"] == "Never"
    assert spec["containers"][0]["imagePullPolicy"] == "Always"  # no tag means :latest


def test_transcript_nodeport_service_defaults() -> None:
    """`kubectl get svc web -o yaml` (clusterIP and nodePort come from the allocators)."""
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "web", "namespace": "default"},
           "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80, "targetPort": 80}]}}
    got = apply("Service", svc)
    assert got["spec"] == {
        "externalTrafficPolicy": "Cluster", "internalTrafficPolicy": "Cluster", "ipFamilies": ["IPv4"],
        "ipFamilyPolicy": "SingleStack", "ports": [{"port": 80, "protocol": "TCP", "targetPort": 80}],
        "selector": {"app": "web"}, "sessionAffinity": "None", "type": "NodePort",
    }
    assert got["status"] == {"loadBalancer": {}}


@pytest.mark.parametrize(
    "image, policy",
    [("busybox", "Always"), ("busybox:latest", "Always"), ("centos:7", "IfNotPresent"), ("nginx:1.25", "IfNotPresent"),
     ("registry.k8s.io/pause:3.10", "IfNotPresent"), ("localhost:5000/app", "Always"),
     ("busybox@sha256:" + "a" * 64, "IfNotPresent"), ("busybox:1@sha256:" + "a" * 64, "IfNotPresent"),
     ("Busybox", "IfNotPresent"), ("", "IfNotPresent")],
)
def test_image_pull_policy(image: str, policy: str) -> None:
    assert image_pull_policy(image) == policy


def test_container_nested_defaults() -> None:
    pod = {"metadata": {"name": "p", "namespace": "d"}, "spec": {
        "containers": [{
            "name": "c", "image": "x:1",
            "ports": [{"containerPort": 80}],
            "env": [{"name": "N", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}}],
            "livenessProbe": {"httpGet": {"port": 80}},
            "readinessProbe": {"exec": {"command": ["true"]}, "periodSeconds": 5},
            "lifecycle": {"preStop": {"httpGet": {"port": 80}}},
            "resources": {"limits": {"cpu": "1000m", "memory": "1024Mi"}},
        }],
        "volumes": [{"name": "a"}, {"name": "b", "secret": {"secretName": "s"}}, {"name": "c", "configMap": {"name": "c"}},
                    {"name": "d", "hostPath": {"path": "/x"}},
                    {"name": "e", "projected": {"sources": [
                        {"serviceAccountToken": {"path": "token"}},
                        {"downwardAPI": {"items": [{"path": "ns", "fieldRef": {"fieldPath": "metadata.namespace"}}]}}]}},
                    {"name": "f", "downwardAPI": {"items": [{"path": "n", "fieldRef": {"fieldPath": "metadata.name"}}]}}],
    }}
    got = apply("Pod", pod)
    c = got["spec"]["containers"][0]
    assert c["ports"] == [{"containerPort": 80, "protocol": "TCP"}]
    assert c["env"][0]["valueFrom"]["fieldRef"] == {"apiVersion": "v1", "fieldPath": "metadata.name"}
    assert c["livenessProbe"] == {"httpGet": {"port": 80, "path": "/", "scheme": "HTTP"}, "timeoutSeconds": 1,
                                  "periodSeconds": 10, "successThreshold": 1, "failureThreshold": 3}
    assert c["readinessProbe"]["periodSeconds"] == 5
    assert c["lifecycle"]["preStop"]["httpGet"] == {"port": 80, "path": "/", "scheme": "HTTP"}
    # quantities come back canonical, and requests default to limits on pods
    assert c["resources"] == {"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "1", "memory": "1Gi"}}
    vols = {v["name"]: v for v in got["spec"]["volumes"]}
    assert vols["a"] == {"name": "a", "emptyDir": {}}
    assert vols["b"]["secret"]["defaultMode"] == 420
    assert vols["c"]["configMap"]["defaultMode"] == 420
    assert vols["d"]["hostPath"] == {"path": "/x", "type": ""}
    assert vols["e"]["projected"]["defaultMode"] == 420
    assert vols["e"]["projected"]["sources"][0]["serviceAccountToken"]["expirationSeconds"] == 3600
    assert vols["e"]["projected"]["sources"][1]["downwardAPI"]["items"][0]["fieldRef"]["apiVersion"] == "v1"
    assert vols["f"]["downwardAPI"] == {"items": [{"path": "n", "fieldRef": {"apiVersion": "v1",
                                                                             "fieldPath": "metadata.name"}}],
                                        "defaultMode": 420}
    assert got["status"]["qosClass"] == "Guaranteed"


def test_host_network_ports_and_service_account_alias() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"hostNetwork": True, "serviceAccount": "builder",
                                               "containers": [{"name": "c", "image": "x", "ports": [{"containerPort": 53}]}]}}
    got = apply("Pod", pod)
    assert got["spec"]["containers"][0]["ports"][0]["hostPort"] == 53
    assert got["spec"]["serviceAccountName"] == "builder"


@pytest.mark.parametrize(
    "resources, qos",
    [
        ([{}], "BestEffort"),
        ([{"requests": {"cpu": "100m"}}], "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}], "Guaranteed"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}, "requests": {"cpu": "500m"}}], "Burstable"),
        ([{"limits": {"cpu": "1", "memory": "1Gi"}}, {}], "Burstable"),
        ([{"limits": {"cpu": "1"}}], "Burstable"),
        ([{"requests": {"example.com/gpu": "1"}, "limits": {"example.com/gpu": "1"}}], "BestEffort"),
        ([{"requests": {"cpu": "0"}}], "BestEffort"),
    ],
)
def test_qos_class(resources: list[dict[str, Any]], qos: str) -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": f"c{i}", "image": "x", "resources": r} for i, r in enumerate(resources)]}}
    got = apply("Pod", pod)
    assert got["status"]["qosClass"] == qos
    assert compute_pod_qos(got) == qos


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"ports": [{"port": 80, "targetPort": "http"}], "selector": {"a": "b"}},
         {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
          "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
          "ports": [{"port": 80, "targetPort": "http", "protocol": "TCP"}], "selector": {"a": "b"}}),
        ({"type": "LoadBalancer", "ports": [{"port": 80}]},
         {"type": "LoadBalancer", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster",
          "externalTrafficPolicy": "Cluster", "allocateLoadBalancerNodePorts": True, "ipFamilyPolicy": "SingleStack",
          "ipFamilies": ["IPv4"], "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}]}),
        ({"type": "ExternalName", "externalName": "example.com"},
         {"type": "ExternalName", "externalName": "example.com", "sessionAffinity": "None"}),
        ({"clusterIP": "None", "ports": [{"port": 80}]},
         {"type": "ClusterIP", "sessionAffinity": "None", "internalTrafficPolicy": "Cluster", "clusterIP": "None",
          "clusterIPs": ["None"], "ipFamilyPolicy": "RequireDualStack", "ipFamilies": ["IPv4", "IPv6"],
          "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}]}),
        ({"sessionAffinity": "ClientIP", "ports": [{"port": 80}], "selector": {"a": "b"}},
         {"type": "ClusterIP", "sessionAffinity": "ClientIP", "sessionAffinityConfig": {"clientIP": {"timeoutSeconds": 10800}},
          "internalTrafficPolicy": "Cluster", "ipFamilyPolicy": "SingleStack", "ipFamilies": ["IPv4"],
          "ports": [{"port": 80, "targetPort": 80, "protocol": "TCP"}], "selector": {"a": "b"}}),
    ],
)
def test_service_defaults(spec: dict[str, Any], expected: dict[str, Any]) -> None:
    svc = {"apiVersion": "v1", "kind": "Service", "metadata": {"name": "s", "namespace": "d"}, "spec": spec}
    got = apply("Service", svc)
    assert got["spec"] == expected
    assert VALIDATORS[("", "Service")](got) == []


def test_service_patch_allocated_values() -> None:
    old = {"spec": {"type": "NodePort", "clusterIP": "10.96.0.5", "clusterIPs": ["10.96.0.5"],
                    "ports": [{"port": 80, "protocol": "TCP", "nodePort": 30001}]}}
    new = {"spec": {"type": "NodePort", "ports": [{"port": 80, "protocol": "TCP"}]}}
    service_patch_allocated_values(new, old)
    assert new["spec"]["clusterIP"] == "10.96.0.5" and new["spec"]["clusterIPs"] == ["10.96.0.5"]
    assert new["spec"]["ports"][0]["nodePort"] == 30001


def test_namespace_defaults_and_status() -> None:
    got = apply("Namespace", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "demo"}})
    assert got["metadata"]["labels"] == {"kubernetes.io/metadata.name": "demo"}
    assert got["spec"] == {"finalizers": ["kubernetes"]}
    assert got["status"] == {"phase": "Active"}
    # defaulting alone (on every update) never re-adds the finalizer
    upd = apply("Namespace", {"metadata": {"name": "demo"}, "spec": {"finalizers": []}}, create=False)
    assert upd["spec"] == {"finalizers": []}


def test_secret_defaults() -> None:
    got = apply("Secret", {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "d"},
                           "stringData": {"p": "q"}, "data": {"a": "MQ=="}})
    assert got["type"] == "Opaque"
    assert "stringData" not in got
    assert got["data"] == {"a": "MQ==", "p": base64.b64encode(b"q").decode()}


def test_pv_and_pvc_defaults() -> None:
    pv = apply("PersistentVolume", {"metadata": {"name": "pv"}, "spec": {"capacity": {"storage": "1024Mi"},
                                                                         "hostPath": {"path": "/x"}}})
    assert pv["spec"]["persistentVolumeReclaimPolicy"] == "Retain"
    assert pv["spec"]["volumeMode"] == "Filesystem"
    assert pv["spec"]["capacity"] == {"storage": "1Gi"}
    assert pv["spec"]["hostPath"]["type"] == ""
    assert pv["status"]["phase"] == "Pending" and "lastPhaseTransitionTime" in pv["status"]
    pvc = apply("PersistentVolumeClaim", {"metadata": {"name": "c", "namespace": "d"},
                                          "spec": {"resources": {"requests": {"storage": "0.5Gi"}}}})
    assert pvc["spec"]["volumeMode"] == "Filesystem"
    assert pvc["spec"]["resources"]["requests"]["storage"] == "512Mi"
    assert pvc["status"] == {"phase": "Pending"}


def test_replication_controller_defaults() -> None:
    rc = apply("ReplicationController", {
        "metadata": {"name": "r", "namespace": "d"},
        "spec": {"template": {"metadata": {"labels": {"name": "redis"}},
                              "spec": {"containers": [{"name": "c", "image": "redis"}]}}}})
    assert rc["spec"]["replicas"] == 1
    assert rc["spec"]["selector"] == {"name": "redis"}
    assert rc["metadata"]["labels"] == {"name": "redis"}
    assert rc["spec"]["template"]["spec"]["restartPolicy"] == "Always"
    assert rc["spec"]["template"]["metadata"]["creationTimestamp"] is None
    assert "enableServiceLinks" not in rc["spec"]["template"]["spec"]
    assert rc["status"] == {"replicas": 0}
    assert VALIDATORS[("", "ReplicationController")](rc) == []


def test_other_kind_defaults() -> None:
    ep = apply("Endpoints", {"metadata": {"name": "e"}, "subsets": [{"ports": [{"port": 80}]}]})
    assert ep["subsets"][0]["ports"][0]["protocol"] == "TCP"
    lr = apply("LimitRange", {"metadata": {"name": "l"}, "spec": {"limits": [
        {"type": "Container", "max": {"cpu": "2"}, "min": {"memory": "100Mi"}}]}})
    item = lr["spec"]["limits"][0]
    assert item["default"] == {"cpu": "2"}
    assert item["defaultRequest"] == {"cpu": "2", "memory": "100Mi"}
    node = apply("Node", {"metadata": {"name": "n"}, "status": {"capacity": {"cpu": "4", "memory": "16Gi"}}})
    assert node["status"]["allocatable"] == {"cpu": "4", "memory": "16Gi"}
    rq = apply("ResourceQuota", {"metadata": {"name": "q"}, "spec": {"hard": {"cpu": "0.5", "pods": "10"}}})
    assert rq["spec"]["hard"] == {"cpu": "500m", "pods": "10"}


def test_resource_lists_round_up_to_milli() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [
        {"name": "c", "image": "x", "resources": {"requests": {"cpu": "0.0001", "memory": 128974848}}}]}}
    got = apply("Pod", pod)
    assert got["spec"]["containers"][0]["resources"]["requests"] == {"cpu": "1m", "memory": "128974848"}


def test_defaulting_is_idempotent() -> None:
    pod = {"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c", "image": "x",
                                                             "resources": {"limits": {"cpu": "1"}}}]}}
    once = apply("Pod", pod, create=False)
    twice = apply("Pod", once, create=False)
    assert once == twice
