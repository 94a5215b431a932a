"""Validation of the non-core built-in kinds: messages pinned to upstream's.

Sources: the observed v1.32 transcript (/work/shared/reference/upstream-observed.md, the
refused Deployment selector patch) and upstream's pkg/apis/<group>/validation messages.
Objects are defaulted first, as the API server does.
"""

from __future__ import annotations

import base64
import copy
from collections.abc import Callable
from typing import Any

import pytest

from pyk8s.api.defaults import DEFAULTERS, STATUS_ON_CREATE
from pyk8s.api.errors import new_invalid
from pyk8s.api.validation import UPDATE_VALIDATORS, VALIDATORS
from pyk8s.api.validation.groups.cron import CronError, parse_go_duration, parse_standard

UID = "3650e62b-9e4a-43ef-8dd1-42a4430f1716"


def _container(name: str = "c") -> dict[str, Any]:
    return {"name": name, "image": "busybox"}


def _tpl(labels: dict[str, str] | None = None, restart: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {"containers": [_container()]}
    if restart:
        spec["restartPolicy"] = restart
    return {"metadata": {"labels": dict(labels or {"app": "a"})}, "spec": spec}


def _obj(api_version: str, kind: str, name: str = "x", namespace: str | None = "default", **body: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace:
        md["namespace"] = namespace
    return {"apiVersion": api_version, "kind": kind, "metadata": md, **body}


def _gk(obj: dict[str, Any]) -> tuple[str, str]:
    av = obj["apiVersion"]
    return (av.split("/")[0] if "/" in av else "", obj["kind"])


def created(obj: dict[str, Any]) -> dict[str, Any]:
    """Defaulted and given its create-time status, as the API server does before validating."""
    obj = copy.deepcopy(obj)
    obj["metadata"].setdefault("uid", UID)
    gk = _gk(obj)
    if gk in DEFAULTERS:
        DEFAULTERS[gk](obj)
    if gk in STATUS_ON_CREATE:
        STATUS_ON_CREATE[gk](obj)
    return obj


def errors(obj: dict[str, Any]) -> list[str]:
    obj = created(obj)
    return [str(e) for e in VALIDATORS[_gk(obj)](obj)]


def update_errors(old: dict[str, Any], change: Callable[[dict[str, Any]], None]) -> list[str]:
    old = created(old)
    old["metadata"]["resourceVersion"] = "5"
    new = copy.deepcopy(old)
    change(new)
    gk = _gk(new)
    if gk in DEFAULTERS:
        DEFAULTERS[gk](new)
    return [str(e) for e in UPDATE_VALIDATORS[gk](new, old)]


def deployment(**spec: Any) -> dict[str, Any]:
    base = {"selector": {"matchLabels": {"app": "a"}}, "template": _tpl()}
    base.update(spec)
    return _obj("apps/v1", "Deployment", "web", spec=base)


def replica_set(**spec: Any) -> dict[str, Any]:
    base = {"selector": {"matchLabels": {"app": "a"}}, "template": _tpl()}
    base.update(spec)
    return _obj("apps/v1", "ReplicaSet", "web", spec=base)


def daemon_set(**spec: Any) -> dict[str, Any]:
    base = {"selector": {"matchLabels": {"app": "a"}}, "template": _tpl()}
    base.update(spec)
    return _obj("apps/v1", "DaemonSet", "ds", spec=base)


def stateful_set(name: str = "db", **spec: Any) -> dict[str, Any]:
    base = {"selector": {"matchLabels": {"app": "a"}}, "template": _tpl(), "serviceName": "db"}
    base.update(spec)
    return _obj("apps/v1", "StatefulSet", name, spec=base)


def job(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"template": _tpl(restart="Never")}
    base.update(spec)
    return _obj("batch/v1", "Job", "j", spec=base)


def cron_job(name: str = "cj", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"schedule": "*/5 * * * *",
                            "jobTemplate": {"spec": {"template": _tpl(restart="OnFailure")}}}
    base.update(spec)
    return _obj("batch/v1", "CronJob", name, spec=base)


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(obj: dict[str, Any]) -> None:
        cur = obj
        parts = path.split(".")
        for p in parts[:-1]:
            cur = cur.setdefault(p, {})
        cur[parts[-1]] = value

    return change


# ---- valid objects are accepted ----------------------------------------------------------

VALID = [
    deployment(),
    replica_set(),
    daemon_set(),
    stateful_set(),
    job(),
    cron_job(),
    _obj("apps/v1", "ControllerRevision", "rev", data={"spec": {}}, revision=1),
    _obj("rbac.authorization.k8s.io/v1", "Role", "r",
         rules=[{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]),
    _obj("rbac.authorization.k8s.io/v1", "ClusterRole", "cr", None,
         rules=[{"nonResourceURLs": ["/healthz"], "verbs": ["get"]}]),
    _obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb", roleRef={"kind": "ClusterRole", "name": "view"},
         subjects=[{"kind": "ServiceAccount", "name": "default"}, {"kind": "User", "name": "alice"}]),
    _obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "crb", None,
         roleRef={"kind": "ClusterRole", "name": "view"},
         subjects=[{"kind": "ServiceAccount", "name": "default", "namespace": "default"}]),
    _obj("policy/v1", "PodDisruptionBudget", "pdb", spec={"minAvailable": 1, "selector": {"matchLabels": {"a": "b"}}}),
    _obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa",
         spec={"scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": "web"}, "maxReplicas": 5,
               "behavior": {"scaleDown": {"stabilizationWindowSeconds": 60}}}),
    _obj("networking.k8s.io/v1", "Ingress", "ing", spec={"rules": [{"host": "example.com", "http": {"paths": [
        {"path": "/", "pathType": "Prefix", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}),
    _obj("networking.k8s.io/v1", "IngressClass", "nginx", None, spec={"controller": "k8s.io/ingress-nginx"}),
    _obj("networking.k8s.io/v1", "NetworkPolicy", "np", spec={"podSelector": {}, "egress": [{"to": [
        {"ipBlock": {"cidr": "10.0.0.0/8", "except": ["10.1.0.0/16"]}}], "ports": [{"port": 53}]}]}),
    _obj("storage.k8s.io/v1", "StorageClass", "standard", None, provisioner="rancher.io/local-path"),
    _obj("storage.k8s.io/v1", "CSIDriver", "csi.example.com", None, spec={}),
    _obj("storage.k8s.io/v1", "CSINode", "node1", None, spec={"drivers": [{"name": "csi.example.com", "nodeID": "n1"}]}),
    _obj("storage.k8s.io/v1", "VolumeAttachment", "va", None,
         spec={"attacher": "csi.example.com", "nodeName": "node1", "source": {"persistentVolumeName": "pv1"}}),
    _obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap", storageClassName="standard", capacity="10Gi"),
    _obj("scheduling.k8s.io/v1", "PriorityClass", "high", None, value=1000),
    _obj("scheduling.k8s.io/v1", "PriorityClass", "system-node-critical", None, value=2000001000),
    _obj("node.k8s.io/v1", "RuntimeClass", "gvisor", None, handler="runsc", overhead={"podFixed": {"cpu": "100m"}}),
    _obj("coordination.k8s.io/v1", "Lease", "node1", "kube-node-lease",
         spec={"holderIdentity": "node1", "leaseDurationSeconds": 40}),
    _obj("discovery.k8s.io/v1", "EndpointSlice", "web-abc", addressType="IPv4",
         endpoints=[{"addresses": ["10.0.0.1"], "conditions": {"ready": True}}], ports=[{"name": "http", "port": 80}]),
    _obj("events.k8s.io/v1", "Event", "ev1", eventTime="2026-11-22T02:22:09.000000Z", reportingController="kubelet",
         reportingInstance="node1", action="Started", reason="Started", type="Normal",
         regarding={"kind": "Pod", "namespace": "default", "name": "p"}),
    _obj("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "vwc", None, webhooks=[{
        "name": "check.example.com", "sideEffects": "None", "admissionReviewVersions": ["v1"],
        "clientConfig": {"service": {"namespace": "default", "name": "hook", "path": "/validate"}},
        "rules": [{"operations": ["CREATE"], "apiGroups": [""], "apiVersions": ["v1"], "resources": ["pods"]}]}]),
    _obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "fs", None,
         spec={"priorityLevelConfiguration": {"name": "global-default"}}),
    _obj("flowcontrol.apiserver.k8s.io/v1", "PriorityLevelConfiguration", "pl", None,
         spec={"type": "Limited", "limited": {"limitResponse": {"type": "Reject"}}}),
]


@pytest.mark.parametrize("obj", VALID, ids=[f"{o['kind']}-{o['metadata']['name']}" for o in VALID])
def test_valid_objects_pass(obj: dict[str, Any]) -> None:
    assert errors(obj) == []


# ---- create: upstream messages -----------------------------------------------------------

CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("deployment replicas", deployment(replicas=-1),
     ["spec.replicas: Invalid value: -1: must be greater than or equal to 0"]),
    ("deployment selector required", deployment(selector=None),
     ["spec.selector: Required value",
      'spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: `selector` does not match '
      "template `labels`"]),
    ("deployment empty selector", deployment(selector={}),
     ["spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string(nil), "
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: empty selector is invalid for deployment"]),
    ("deployment restartPolicy", deployment(template=_tpl(restart="Never")),
     ['spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"']),
    ("deployment maxSurge and maxUnavailable zero",
     deployment(strategy={"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:0, IntVal:0, StrVal:""}: '
      "may not be 0 when `maxSurge` is 0"]),
    ("deployment maxUnavailable over 100%",
     deployment(strategy={"rollingUpdate": {"maxUnavailable": "150%"}}),
     ['spec.strategy.rollingUpdate.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, '
      'StrVal:"150%"}: must not be greater than 100%']),
    ("deployment maxSurge not a percent",
     deployment(strategy={"rollingUpdate": {"maxSurge": "ten"}}),
     ['spec.strategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"ten"}: '
      "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  or '93%', regex used "
      "for validation is '[0-9]+%')"]),
    ("deployment recreate with rollingUpdate",
     deployment(strategy={"type": "Recreate", "rollingUpdate": {"maxSurge": 1}}),
     ["spec.strategy.rollingUpdate: Forbidden: may not be specified when strategy `type` is 'Recreate'"]),
    ("deployment progress deadline", deployment(minReadySeconds=600),
     ["spec.progressDeadlineSeconds: Invalid value: 600: must be greater than minReadySeconds"]),
    ("deployment name", _obj("apps/v1", "Deployment", "Web", spec=deployment()["spec"]),
     ['metadata.name: Invalid value: "Web": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
      "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"]),
    ("replicaset activeDeadlineSeconds",
     replica_set(template={**_tpl(), "spec": {"containers": [_container()], "activeDeadlineSeconds": 5}}),
     ["spec.template.spec.activeDeadlineSeconds: Forbidden: activeDeadlineSeconds in ReplicaSet is not Supported"]),
    ("daemonset surge and unavailable",
     daemon_set(updateStrategy={"rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}}),
     ['spec.updateStrategy.rollingUpdate.maxSurge: Invalid value: intstr.IntOrString{Type:0, IntVal:1, StrVal:""}: '
      "may not be set when maxUnavailable is non-zero"]),
    ("daemonset neither surge nor unavailable",
     daemon_set(updateStrategy={"rollingUpdate": {"maxSurge": 0, "maxUnavailable": 0}}),
     ["spec.updateStrategy.rollingUpdate.maxUnavailable: Required value: cannot be 0 when maxSurge is 0"]),
    ("daemonset unknown strategy", daemon_set(updateStrategy={"type": "Sometimes"}),
     ['spec.updateStrategy: Unsupported value: apps.DaemonSetUpdateStrategy{Type:"Sometimes", '
      'RollingUpdate:(*apps.RollingUpdateDaemonSet)(nil)}: supported values: "RollingUpdate", "OnDelete"']),
    ("daemonset selector mismatch", daemon_set(selector={"matchLabels": {"app": "b"}}),
     ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: `selector` does not match '
      "template `labels`"]),
    ("statefulset pod management policy", stateful_set(podManagementPolicy="Random"),
     ["spec.podManagementPolicy: Invalid value: \"Random\": must be 'OrderedReady' or 'Parallel'"]),
    ("statefulset update strategy", stateful_set(updateStrategy={"type": "Later"}),
     ['spec.updateStrategy: Invalid value: apps.StatefulSetUpdateStrategy{Type:"Later", '
      "RollingUpdate:(*apps.RollingUpdateStatefulSetStrategy)(nil)}: must be 'RollingUpdate' or 'OnDelete'"]),
    ("statefulset partition", stateful_set(updateStrategy={"type": "RollingUpdate", "rollingUpdate": {"partition": -1}}),
     ["spec.updateStrategy.rollingUpdate.partition: Invalid value: -1: must be greater than or equal to 0"]),
    ("statefulset retention policy", stateful_set(persistentVolumeClaimRetentionPolicy={"whenDeleted": "Keep"}),
     ['spec.persistentVolumeClaimRetentionPolicy.whenDeleted: Unsupported value: "Keep": supported values: '
      '"Retain", "Delete"']),
    ("statefulset service name", stateful_set(serviceName="Db"),
     ['spec.serviceName: Invalid value: "Db": a lowercase RFC 1123 label must consist of lower case alphanumeric '
      "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
      "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("statefulset name is a DNS label", stateful_set(name="db.v1"),
     ['metadata.name: Invalid value: "db.v1": must not contain dots']),
    ("statefulset restartPolicy", stateful_set(template=_tpl(restart="OnFailure")),
     ['spec.template.spec.restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']),
    ("controllerrevision data", _obj("apps/v1", "ControllerRevision", "rev", revision=-1),
     ["data: Required value: data is mandatory", "revision: Invalid value: -1: must be greater than or equal to 0"]),
    ("job restartPolicy defaulted to Always", job(template=_tpl()),
     ['spec.template.spec.restartPolicy: Required value: valid values: "OnFailure", "Never"']),
    ("job restartPolicy with podFailurePolicy",
     job(template=_tpl(restart="OnFailure"),
         podFailurePolicy={"rules": [{"action": "FailJob", "onExitCodes": {"operator": "In", "values": [42]}}]}),
     # podReplacementPolicy is defaulted to Failed when a podFailurePolicy is set
     ['spec.template.spec.restartPolicy: Invalid value: "OnFailure": only "Never" is supported when '
      "podFailurePolicy is specified"]),
    ("job negative fields", job(parallelism=-1, backoffLimit=-2),
     ["spec.parallelism: Invalid value: -1: must be greater than or equal to 0",
      "spec.backoffLimit: Invalid value: -2: must be greater than or equal to 0"]),
    ("job indexed without completions", job(completionMode="Indexed", parallelism=2),
     ["spec.completions: Required value: when completion mode is Indexed"]),
    ("job backoffLimitPerIndex needs indexed", job(backoffLimitPerIndex=1),
     ["spec.backoffLimitPerIndex: Invalid value: 1: requires indexed completion mode"]),
    ("job indexed hostname", _obj("batch/v1", "Job", "j" * 62, spec={
        "completionMode": "Indexed", "completions": 10, "template": _tpl(restart="Never")}),
     [f'metadata.name: Invalid value: "{"j" * 62}": will not able to create pod with invalid DNS label: {"j" * 62}-9']),
    ("job manual selector mismatch",
     job(manualSelector=True, selector={"matchLabels": {"app": "b"}}),
     ['spec.template.metadata.labels: Invalid value: map[string]string{"app":"a"}: `selector` does not match '
      "template `labels`"]),
    ("job user selector not generated", job(selector={"matchLabels": {"app": "a"}}),
     ['spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"a", '
      f'"batch.kubernetes.io/controller-uid":"{UID}"}}, MatchExpressions:[]v1.LabelSelectorRequirement(nil)}}: '
      "`selector` not auto-generated"]),
    ("cronjob too few fields", cron_job(schedule="* * *"),
     ['spec.schedule: Invalid value: "* * *": expected exactly 5 fields, found 3: [* * *]']),
    ("cronjob out of range", cron_job(schedule="61 * * * *"),
     ['spec.schedule: Invalid value: "61 * * * *": end of range (61) above maximum (59): 61']),
    ("cronjob bad name", cron_job(schedule="0 0 * foo *"),
     ['spec.schedule: Invalid value: "0 0 * foo *": failed to parse int from foo: strconv.Atoi: parsing "foo": '
      "invalid syntax"]),
    ("cronjob unknown descriptor", cron_job(schedule="@fortnightly"),
     ['spec.schedule: Invalid value: "@fortnightly": unrecognized descriptor: @fortnightly']),
    ("cronjob TZ in schedule", cron_job(schedule="CRON_TZ=UTC 0 * * * *"),
     ['spec.schedule: Invalid value: "CRON_TZ=UTC 0 * * * *": cannot use TZ or CRON_TZ in schedule, use timeZone '
      "field instead"]),
    ("cronjob unknown time zone", cron_job(timeZone="Mars/Olympus"),
     ['spec.timeZone: Invalid value: "Mars/Olympus": unknown time zone Mars/Olympus']),
    ("cronjob local time zone", cron_job(timeZone="Local"),
     ['spec.timeZone: Invalid value: "Local": timeZone must be an explicit time zone as defined in '
      "https://www.iana.org/time-zones"]),
    ("cronjob concurrency policy", cron_job(concurrencyPolicy="Sometimes"),
     ['spec.concurrencyPolicy: Unsupported value: "Sometimes": supported values: "Allow", "Forbid", "Replace"']),
    ("cronjob long name", cron_job(name="c" * 53),
     [f'metadata.name: Invalid value: "{"c" * 53}": must be no more than 52 characters']),
    ("cronjob template selector", cron_job(jobTemplate={"spec": {"selector": {"matchLabels": {"a": "b"}},
                                                                 "template": _tpl(restart="Never")}}),
     ['spec.jobTemplate.spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"a":"b"}, '
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: `selector` will be auto-generated"]),
    ("role rule without verbs", _obj("rbac.authorization.k8s.io/v1", "Role", "r",
                                     rules=[{"apiGroups": [""], "resources": ["pods"]}]),
     ["rules[0].verbs: Required value: verbs must contain at least one value"]),
    ("role with non-resource urls", _obj("rbac.authorization.k8s.io/v1", "Role", "r",
                                         rules=[{"nonResourceURLs": ["/x"], "verbs": ["get"]}]),
     ['rules[0].nonResourceURLs: Invalid value: []string{"/x"}: namespaced rules cannot apply to non-resource URLs']),
    ("role name", _obj("rbac.authorization.k8s.io/v1", "Role", "a/b", rules=[]),
     ["metadata.name: Invalid value: \"a/b\": may not contain '/'"]),
    ("rolebinding bad refs", _obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb",
                                  roleRef={"kind": "Pod", "name": ""}, subjects=[{"kind": "Robot", "name": "r2"}]),
     ['roleRef.kind: Unsupported value: "Pod": supported values: "Role", "ClusterRole"',
      "roleRef.name: Required value",
      'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", "User", "Group"']),
    ("clusterrolebinding sa namespace", _obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "crb", None,
                                             roleRef={"kind": "Role", "name": "r"},
                                             subjects=[{"kind": "ServiceAccount", "name": "sa"}]),
     ['roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"',
      "subjects[0].namespace: Required value"]),
    ("pdb percent", _obj("policy/v1", "PodDisruptionBudget", "pdb", spec={"maxUnavailable": "120%"}),
     ['spec.maxUnavailable: Invalid value: intstr.IntOrString{Type:1, IntVal:0, StrVal:"120%"}: must not be greater '
      "than 100%"]),
    ("pdb eviction policy", _obj("policy/v1", "PodDisruptionBudget", "pdb",
                                 spec={"minAvailable": 1, "unhealthyPodEvictionPolicy": "Never"}),
     ['spec.unhealthyPodEvictionPolicy: Unsupported value: "Never": supported values: "AlwaysAllow", '
      '"IfHealthyBudget"']),
    ("hpa replicas", _obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa",
                          spec={"scaleTargetRef": {"kind": "Deployment", "name": "web"}, "minReplicas": 3,
                                "maxReplicas": 2}),
     ["spec.maxReplicas: Invalid value: 2: must be greater than or equal to `minReplicas`"]),
    ("hpa target ref and metric", _obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa",
                                       spec={"scaleTargetRef": {"name": "web"}, "maxReplicas": 0, "metrics": [
                                           {"type": "Resource", "resource": {"name": "cpu", "target": {
                                               "type": "Utilization", "averageUtilization": 0}}}]}),
     ["spec.maxReplicas: Invalid value: 0: must be greater than 0",
      # minReplicas was defaulted to 1
      "spec.maxReplicas: Invalid value: 0: must be greater than or equal to `minReplicas`",
      "spec.scaleTargetRef.kind: Required value",
      "spec.metrics[0].resource.target.averageUtilization: Invalid value: 0: must be greater than 0"]),
    ("hpa behavior", _obj("autoscaling/v2", "HorizontalPodAutoscaler", "hpa", spec={
        "scaleTargetRef": {"kind": "Deployment", "name": "web"}, "maxReplicas": 3,
        "behavior": {"scaleUp": {"stabilizationWindowSeconds": 4000,
                                 "policies": [{"type": "Pods", "value": 0, "periodSeconds": 1801}]}}}),
     ["spec.behavior.scaleUp.stabilizationWindowSeconds: Invalid value: 4000: must be less than or equal to 3600",
      "spec.behavior.scaleUp.policies[0].value: Invalid value: 0: must be greater than zero",
      "spec.behavior.scaleUp.policies[0].periodSeconds: Invalid value: 1801: must be less than or equal to 1800"]),
    ("ingress empty", _obj("networking.k8s.io/v1", "Ingress", "ing", spec={}),
     ["spec: Invalid value: []networking.IngressRule(nil): either `defaultBackend` or `rules` must be specified"]),
    ("ingress path type", _obj("networking.k8s.io/v1", "Ingress", "ing", spec={"rules": [{"http": {"paths": [
        {"path": "/", "backend": {"service": {"name": "web", "port": {"number": 80}}}}]}}]}),
     ["spec.rules[0].http.paths[0].pathType: Required value: pathType must be specified"]),
    ("ingress ip host and relative path", _obj("networking.k8s.io/v1", "Ingress", "ing", spec={"rules": [
        {"host": "10.0.0.1", "http": {"paths": [{"path": "api", "pathType": "Prefix",
                                                 "backend": {"service": {"name": "web", "port": {}}}}]}}]}),
     ['spec.rules[0].host: Invalid value: "10.0.0.1": must be a DNS name, not an IP address',
      'spec.rules[0].http.paths[0].path: Invalid value: "api": must be an absolute path',
      "spec.rules[0].http.paths[0].backend: Required value: port name or number is required"]),
    ("ingress class annotation mismatch", {
        **_obj("networking.k8s.io/v1", "Ingress", "ing", spec={"ingressClassName": "nginx", "defaultBackend": {
            "service": {"name": "web", "port": {"number": 80}}}}),
        "metadata": {"name": "ing", "namespace": "default", "annotations": {"kubernetes.io/ingress.class": "traefik"}}},
     ['annotations.kubernetes.io/ingress.class: Invalid value: "traefik": must match `ingressClassName` when both '
      "are specified"]),
    ("ingressclass controller", _obj("networking.k8s.io/v1", "IngressClass", "c", None, spec={"controller": "nginx"}),
     ['spec.controller: Invalid value: "nginx": must be a domain-prefixed path (such as "acme.io/foo")']),
    ("networkpolicy policy type and peer", _obj("networking.k8s.io/v1", "NetworkPolicy", "np", spec={
        "podSelector": {}, "policyTypes": ["Sideways"], "ingress": [{"from": [{}]}]}),
     ["spec.ingress[0].from[0]: Required value: must specify a peer",
      'spec.policyTypes[0]: Unsupported value: "Sideways": supported values: "Ingress", "Egress"']),
    ("networkpolicy except outside cidr", _obj("networking.k8s.io/v1", "NetworkPolicy", "np", spec={
        "podSelector": {}, "ingress": [{"from": [{"ipBlock": {"cidr": "10.0.0.0/16", "except": ["10.1.0.0/24"]}}]}]}),
     ['spec.ingress[0].from[0].ipBlock.except[0]: Invalid value: "10.1.0.0/24": must be a strict subset of `cidr`']),
    ("storageclass", _obj("storage.k8s.io/v1", "StorageClass", "sc", None, reclaimPolicy="Recycle",
                          volumeBindingMode="Later"),
     ["provisioner: Required value",
      'reclaimPolicy: Unsupported value: "Recycle": supported values: "Delete", "Retain"',
      'volumeBindingMode: Unsupported value: "Later": supported values: "Immediate", "WaitForFirstConsumer"']),
    ("csidriver", _obj("storage.k8s.io/v1", "CSIDriver", "csi_driver", None,
                       spec={"fsGroupPolicy": "Sometimes", "volumeLifecycleModes": ["Forever"]}),
     ['name: Invalid value: "csi_driver": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric '
      "characters, '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used "
      "for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
      'spec.fsGroupPolicy: Unsupported value: "Sometimes": supported values: "File", "None", '
      '"ReadWriteOnceWithFSType"',
      'spec.volumeLifecycleModes: Unsupported value: "Forever": supported values: "Persistent", "Ephemeral"']),
    ("volumeattachment source", _obj("storage.k8s.io/v1", "VolumeAttachment", "va", None,
                                     spec={"attacher": "csi.example.com", "nodeName": "n1", "source": {}}),
     ["spec.source: Required value: must specify exactly one of inlineVolumeSpec and persistentVolumeName"]),
    ("csistoragecapacity", _obj("storage.k8s.io/v1", "CSIStorageCapacity", "cap", storageClassName="standard",
                                capacity="-1Gi"),
     ['capacity: Invalid value: "-1Gi": must be greater than or equal to 0']),
    ("priorityclass too high", _obj("scheduling.k8s.io/v1", "PriorityClass", "pc", None, value=2000000000),
     ["value: Forbidden: maximum allowed value of a user defined priority is 1000000000"]),
    ("priorityclass system prefix", _obj("scheduling.k8s.io/v1", "PriorityClass", "system-mine", None, value=1),
     ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
      "error: system-mine is not a known system priority class"]),
    ("priorityclass system value", _obj("scheduling.k8s.io/v1", "PriorityClass", "system-cluster-critical", None,
                                        value=5),
     ["metadata.name: Forbidden: priority class names with 'system-' prefix are reserved for system use only. "
      "error: value of system-cluster-critical PriorityClass must be 2000000000"]),
    ("priorityclass preemption policy", _obj("scheduling.k8s.io/v1", "PriorityClass", "pc", None, value=1,
                                             preemptionPolicy="Always"),
     ['preemptionPolicy: Unsupported value: "Always": supported values: "PreemptLowerPriority", "Never"']),
    ("runtimeclass handler", _obj("node.k8s.io/v1", "RuntimeClass", "rc", None, handler="Run.SC"),
     ['handler: Invalid value: "Run.SC": a lowercase RFC 1123 label must consist of lower case alphanumeric '
      "characters or '-', and must start and end with an alphanumeric character (e.g. 'my-name',  or '123-abc', "
      "regex used for validation is '[a-z0-9]([-a-z0-9]*[a-z0-9])?')"]),
    ("lease duration", _obj("coordination.k8s.io/v1", "Lease", "l", spec={"leaseDurationSeconds": 0}),
     ["spec.leaseDurationSeconds: Invalid value: 0: must be greater than 0"]),
    ("endpointslice address type", _obj("discovery.k8s.io/v1", "EndpointSlice", "es", addressType="IPv5"),
     ['addressType: Unsupported value: "IPv5": supported values: "FQDN", "IPv4", "IPv6"']),
    ("endpointslice addresses", _obj("discovery.k8s.io/v1", "EndpointSlice", "es", addressType="IPv4",
                                     endpoints=[{"addresses": []}, {"addresses": ["fe80::1"]}]),
     ["endpoints[0].addresses: Required value: must contain at least 1 address",
      'endpoints[1].addresses[0]: Invalid value: "fe80::1": must be a valid IPv4 address']),
    ("event strict", _obj("events.k8s.io/v1", "Event", "ev", reason="X", type="Odd", deprecatedCount=3),
     ["eventTime: Required value", "type: Invalid value: \"\": has invalid value: Odd",
      'deprecatedCount: Invalid value: "": needs to be unset']),
    ("webhook basics", _obj("admissionregistration.k8s.io/v1", "MutatingWebhookConfiguration", "m", None, webhooks=[
        {"name": "hook", "clientConfig": {"url": "http://example.com/x?y=1"}, "timeoutSeconds": 31,
         "rules": [{"operations": ["PATCH"], "apiGroups": ["*", "apps"], "apiVersions": ["v1"],
                    "resources": ["pods"]}]}]),
     ['webhooks[0].name: Invalid value: "hook": should be a domain with at least three segments separated by dots',
      'webhooks[0].rules[0].operations[0]: Unsupported value: "PATCH": supported values: "*", "CONNECT", "CREATE", '
      '"DELETE", "UPDATE"',
      'webhooks[0].rules[0].apiGroups: Invalid value: []string{"*", "apps"}: if \'*\' is present, must not specify '
      "other API groups",
      "webhooks[0].sideEffects: Required value: must specify one of None, NoneOnDryRun",
      "webhooks[0].timeoutSeconds: Invalid value: 31: the timeout value must be between 1 and 30 seconds",
      "webhooks[0].clientConfig.url: Invalid value: \"http\": 'https' is the only allowed URL scheme; desired format: "
      "https://host[/path]",
      'webhooks[0].clientConfig.url: Invalid value: "y=1": query parameters are not permitted in the URL',
      "webhooks[0].admissionReviewVersions: Required value: must specify one of v1, v1beta1"]),
    ("admission policy", _obj("admissionregistration.k8s.io/v1", "ValidatingAdmissionPolicy", "p", None, spec={}),
     ["spec.matchConstraints: Required value",
      "spec.validations: Required value: validations or auditAnnotations must contain at least one item",
      "spec.auditAnnotations: Required value: validations or auditAnnotations must contain at least one item"]),
    ("flowschema precedence", _obj("flowcontrol.apiserver.k8s.io/v1", "FlowSchema", "fs", None,
                                   spec={"matchingPrecedence": 20000}),
     ["spec.matchingPrecedence: Invalid value: 20000: must not be greater than 10000",
      "spec.priorityLevelConfiguration.name: Required value: must reference a priority level"]),
]


@pytest.mark.parametrize("name,obj,expected", CASES, ids=[c[0] for c in CASES])
def test_create_messages(name: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert errors(obj) == expected


# ---- updates -----------------------------------------------------------------------------


def test_deployment_selector_patch_matches_the_transcript() -> None:
    """upstream-observed.md: `kubectl patch deploy testdemo -p '{"spec":{"selector":...}}'`."""
    dep = _obj("apps/v1", "Deployment", "testdemo", spec={
        "selector": {"matchLabels": {"app": "testdemo"}}, "template": _tpl({"app": "testdemo"})})
    errs = update_errors(dep, _set("spec.selector", {"matchLabels": {"app": "other"}}))
    old = created(dep)
    new = copy.deepcopy(old)
    new["metadata"]["resourceVersion"] = "5"
    new["spec"]["selector"] = {"matchLabels": {"app": "other"}}
    status = new_invalid("Deployment", "testdemo", UPDATE_VALIDATORS[("apps", "Deployment")](new, old), "apps")
    assert errs == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"testdemo"}: `selector` does not '
        "match template `labels`",
        'spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"other"}, '
        "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable",
    ]
    assert status.message.startswith('Deployment "testdemo" is invalid: [spec.template.metadata.labels: ')
    assert [c["field"] for c in status.details["causes"]] == ["spec.template.metadata.labels", "spec.selector"]


UPDATES: list[tuple[str, dict[str, Any], Callable[[dict[str, Any]], None], list[str]]] = [
    ("deployment scale is fine", deployment(), _set("spec.replicas", 5), []),
    ("replicaset selector immutable", replica_set(selector={"matchExpressions": [
        {"key": "app", "operator": "In", "values": ["a"]}]}), _set("spec.selector", {"matchLabels": {"app": "a"}}),
     ['spec.selector: Invalid value: v1.LabelSelector{MatchLabels:map[string]string{"app":"a"}, '
      "MatchExpressions:[]v1.LabelSelectorRequirement(nil)}: field is immutable"]),
    ("daemonset template change is fine", daemon_set(), _set("spec.template.spec.containers", [_container("d")]), []),
    ("statefulset forbidden field", stateful_set(), _set("spec.serviceName", "other"),
     ["spec: Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', 'template', "
      "'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and 'minReadySeconds' are forbidden"]),
    ("statefulset scale and template are fine", stateful_set(),
     lambda o: (o["spec"].update(replicas=3), o["spec"]["template"]["spec"]["containers"][0].update(image="nginx")),
     []),
    ("job completions immutable", job(), _set("spec.completions", 2),
     ["spec.completions: Invalid value: 2: field is immutable"]),
    ("job parallelism is mutable", job(), _set("spec.parallelism", 3), []),
    ("cronjob schedule change is fine", cron_job(), _set("spec.schedule", "@hourly"), []),
    ("rolebinding roleRef", _obj("rbac.authorization.k8s.io/v1", "RoleBinding", "rb",
                                 roleRef={"kind": "ClusterRole", "name": "view"}),
     _set("roleRef", {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "edit"}),
     ['roleRef: Invalid value: rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: '
      "cannot change roleRef"]),
    ("clusterrolebinding subjects are mutable", _obj("rbac.authorization.k8s.io/v1", "ClusterRoleBinding", "crb",
                                                     None, roleRef={"kind": "ClusterRole", "name": "view"}),
     _set("subjects", [{"kind": "Group", "name": "devs"}]), []),
    ("storageclass parameters", _obj("storage.k8s.io/v1", "StorageClass", "sc", None, provisioner="x.io/p"),
     _set("parameters", {"type": "ssd"}), ["parameters: Forbidden: updates to parameters are forbidden."]),
    ("priorityclass value", _obj("scheduling.k8s.io/v1", "PriorityClass", "pc", None, value=10),
     _set("value", 11), ["value: Forbidden: may not be changed in an update."]),
    ("runtimeclass handler", _obj("node.k8s.io/v1", "RuntimeClass", "rc", None, handler="runc"),
     _set("handler", "runsc"), ['handler: Invalid value: "runsc": field is immutable']),
    ("endpointslice address type", _obj("discovery.k8s.io/v1", "EndpointSlice", "es", addressType="IPv4"),
     _set("addressType", "IPv6"), ['addressType: Invalid value: "IPv6": field is immutable']),
    ("ingressclass controller", _obj("networking.k8s.io/v1", "IngressClass", "c", None,
                                     spec={"controller": "example.com/a"}),
     _set("spec.controller", "example.com/b"), ['spec.controller: Invalid value: "example.com/b": field is immutable']),
]


@pytest.mark.parametrize("name,old,change,expected", UPDATES, ids=[u[0] for u in UPDATES])
def test_update_messages(name: str, old: dict[str, Any], change: Callable[[dict[str, Any]], None],
                         expected: list[str]) -> None:
    assert update_errors(old, change) == expected


def test_job_template_is_immutable_unless_suspended_and_never_started() -> None:
    errs = update_errors(job(), _set("spec.template.spec.containers", [{"name": "c", "image": "nginx"}]))
    assert len(errs) == 1
    assert errs[0].startswith("spec.template: Invalid value: core.PodTemplateSpec{")
    assert errs[0].endswith(": field is immutable")
    # a suspended Job that never started may change its scheduling directives
    assert update_errors(job(suspend=True), _set("spec.template.spec.nodeSelector", {"disk": "ssd"})) == []
    assert update_errors(job(suspend=True), _set("spec.template.spec.containers", [_container("d")]))[0].startswith(
        "spec.template: Invalid value:")


def test_indexed_job_scales_completions_with_parallelism() -> None:
    base = job(completionMode="Indexed", completions=2, parallelism=2)
    ok = update_errors(base, lambda o: o["spec"].update(completions=4, parallelism=4))
    assert ok == []
    bad = update_errors(base, lambda o: o["spec"].update(completions=4))
    assert bad == ["spec.completions: Invalid value: 4: can only be modified in tandem with spec.parallelism"]


def test_job_without_generated_labels_is_rejected() -> None:
    obj = created(job())
    del obj["spec"]["template"]["metadata"]["labels"]["job-name"]
    assert [str(e) for e in VALIDATORS[("batch", "Job")](obj)] == [
        "spec.template.metadata.labels[job-name]: Required value: j"]
    obj["spec"]["template"]["metadata"]["labels"]["controller-uid"] = "other"
    assert [str(e) for e in VALIDATORS[("batch", "Job")](obj)][0].startswith(
        "spec.template.metadata.labels[controller-uid]: Invalid value: map[string]string{")


# ---- CustomResourceDefinition ------------------------------------------------------------

SCHEMA = {"openAPIV3Schema": {"type": "object", "properties": {"spec": {"type": "object", "properties": {
    "size": {"type": "integer"}}}}}}


def crd(name: str = "widgets.example.com", **spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"group": "example.com", "scope": "Namespaced",
                            "names": {"plural": "widgets", "kind": "Widget"},
                            "versions": [{"name": "v1", "served": True, "storage": True, "schema": SCHEMA}]}
    base.update(spec)
    return _obj("apiextensions.k8s.io/v1", "CustomResourceDefinition", name, None, spec=base)


CRD_CASES: list[tuple[str, dict[str, Any], list[str]]] = [
    ("valid", crd(), []),
    ("name", crd(name="widget.example.com"),
     ['metadata.name: Invalid value: "widget.example.com": must be spec.names.plural+"."+spec.group']),
    ("group without dot", crd(name="widgets.example", group="example"),
     ['spec.group: Invalid value: "example": should be a domain with at least one dot']),
    ("scope", crd(scope="Global"),
     ['spec.scope: Unsupported value: "Global": supported values: "Cluster", "Namespaced"']),
    ("schema required", crd(versions=[{"name": "v1", "served": True, "storage": True}]),
     ["spec.versions[0].schema.openAPIV3Schema: Required value: schemas are required"]),
    ("root type", crd(versions=[{"name": "v1", "served": True, "storage": True,
                                 "schema": {"openAPIV3Schema": {"type": "string"}}}]),
     ['spec.versions[0].schema.openAPIV3Schema.type: Invalid value: "string": must be object at the root']),
    ("untyped field", crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": {"type": "object", "properties": {"spec": {"properties": {"a": {"type": "int"}}}}}}}]),
     ["spec.versions[0].schema.openAPIV3Schema.properties[spec].type: Required value: must not be empty for "
      "specified object fields",
      'spec.versions[0].schema.openAPIV3Schema.properties[spec].properties[a].type: Unsupported value: "int": '
      'supported values: "array", "boolean", "integer", "number", "object", "string"']),
    ("version name", crd(versions=[{"name": "V1", "served": True, "storage": True, "schema": SCHEMA}]),
     ['spec.versions[0].name: Invalid value: "V1": a DNS-1035 label must consist of lower case alphanumeric '
      "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
      "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("kind", crd(names={"plural": "widgets", "kind": "Wid get"}),
     # singular and listKind are defaulted from the kind
     ['spec.names.singular: Invalid value: "wid get": a DNS-1035 label must consist of lower case alphanumeric '
      "characters or '-', start with an alphabetic character, and end with an alphanumeric character (e.g. "
      "'my-name',  or 'abc-123', regex used for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')",
      'spec.names.kind: Invalid value: "Wid get": may have mixed case, but should otherwise match: a DNS-1035 label '
      "must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end with an "
      "alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')",
      'spec.names.listKind: Invalid value: "Wid getList": may have mixed case, but should otherwise match: a DNS-1035 '
      "label must consist of lower case alphanumeric characters or '-', start with an alphabetic character, and end "
      "with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation is "
      "'[a-z]([-a-z0-9]*[a-z0-9])?')"]),
    ("conversion webhook", crd(conversion={"strategy": "Webhook"}),
     ["spec.conversion.webhookClientConfig: Required value: required when strategy is set to Webhook",
      "spec.conversion.conversionReviewVersions: Required value: must specify one of v1, v1beta1"]),
    ("printer column", crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": SCHEMA,
                                      "additionalPrinterColumns": [{"name": "Size", "type": "int"}]}]),
     ['spec.versions[0].additionalPrinterColumns[0].type: Unsupported value: "int": supported values: "boolean", '
      '"date", "integer", "number", "string"',
      "spec.versions[0].additionalPrinterColumns[0].JSONPath: Required value"]),
]


@pytest.mark.parametrize("name,obj,expected", CRD_CASES, ids=[c[0] for c in CRD_CASES])
def test_crd_messages(name: str, obj: dict[str, Any], expected: list[str]) -> None:
    assert errors(obj) == expected


def test_crd_storage_versions() -> None:
    two = crd(versions=[{"name": "v1", "served": True, "storage": True, "schema": SCHEMA},
                        {"name": "v2", "served": True, "storage": True, "schema": SCHEMA}])
    errs = errors(two)
    assert len(errs) == 2
    assert errs[0].startswith("spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{")
    assert errs[0].endswith(": must have exactly one version marked as storage version")
    # defaulting recorded only the first storage version as stored
    assert errs[1].startswith("status.storedVersions: Invalid value: apiextensions.CustomResourceDefinitionVersion{")
    assert errs[1].endswith(": must have the storage version v2")
    none = errors(crd(versions=[]))
    assert none == ["spec.versions: Invalid value: []apiextensions.CustomResourceDefinitionVersion{}: must have "
                    "exactly one version marked as storage version",
                    "status.storedVersions: Invalid value: []string{}: must have at least one stored version"]


def test_crd_update_immutables() -> None:
    errs = update_errors(crd(), lambda o: o["spec"]["names"].update(plural="gadgets"))
    assert 'spec.names.plural: Invalid value: "gadgets": field is immutable' in errs
    established = crd()
    established["status"] = {"conditions": [{"type": "Established", "status": "True"}]}
    old = created(established)
    old["status"]["conditions"] = [{"type": "Established", "status": "True"}]
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["scope"] = "Cluster"
    assert [str(e) for e in UPDATE_VALIDATORS[("apiextensions.k8s.io", "CustomResourceDefinition")](new, old)] == [
        'spec.scope: Invalid value: "Cluster": field is immutable']


# ---- CertificateSigningRequest -----------------------------------------------------------


def _csr_pem() -> str:
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    req = x509.CertificateSigningRequestBuilder().subject_name(
        x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "alice")])).sign(key, hashes.SHA256())
    return base64.b64encode(req.public_bytes(serialization.Encoding.PEM)).decode()


def _csr(**spec: Any) -> dict[str, Any]:
    base = {"request": _csr_pem(), "signerName": "kubernetes.io/kube-apiserver-client", "usages": ["client auth"]}
    base.update(spec)
    return _obj("certificates.k8s.io/v1", "CertificateSigningRequest", "alice", None, spec=base)


def test_csr_valid_and_invalid() -> None:
    assert errors(_csr()) == []
    bad = errors(_csr(request=base64.b64encode(b"hello").decode(), usages=["client auth", "client auth", "magic"],
                      signerName="kubernetes.io/legacy-unknown", expirationSeconds=60))
    assert bad == [
        "spec.request: Invalid value: []byte{0x68, 0x65, 0x6c, 0x6c, 0x6f}: PEM block type must be CERTIFICATE REQUEST",
        "spec.expirationSeconds: Invalid value: 60: may not specify a duration less than 600 seconds (10 minutes)",
        'spec.usages[2]: Unsupported value: "magic": supported values: ' + ", ".join(
            f'"{u}"' for u in sorted(["signing", "digital signature", "content commitment", "key encipherment",
                                      "key agreement", "data encipherment", "cert sign", "crl sign", "encipher only",
                                      "decipher only", "any", "server auth", "client auth", "code signing",
                                      "email protection", "s/mime", "ipsec end system", "ipsec tunnel", "ipsec user",
                                      "timestamping", "ocsp signing", "microsoft sgc", "netscape sgc"])),
        'spec.usages[1]: Duplicate value: "client auth"',
        'spec.signerName: Invalid value: "kubernetes.io/legacy-unknown": the legacy signerName is not allowed via this '
        "API version",
    ]
    assert errors(_csr(signerName="example")) == [
        "spec.signerName: Invalid value: \"example\": must be a fully qualified domain and path of the form "
        "'example.com/signer-name'"]


# ---- the cron parser ---------------------------------------------------------------------

CRON_OK = ["*/5 * * * *", "0 0 * * 0", "0 9-17/2 * JAN-mar mon-FRI", "5,10,15 * 1 * ?", "@hourly", "@yearly",
           "@every 1h30m", "TZ=America/New_York 0 9 * * *", "0 0 31 12 6"]


@pytest.mark.parametrize("spec", CRON_OK)
def test_cron_accepts_standard_syntax(spec: str) -> None:
    parse_standard(spec)


CRON_BAD = [
    ("", "empty spec string"),
    ("* * * * * *", "expected exactly 5 fields, found 6: [* * * * * *]"),
    ("0 24 * * *", "end of range (24) above maximum (23): 24"),
    ("0 0 0 * *", "beginning of range (0) below minimum (1): 0"),
    ("0 0 * * 7", "end of range (7) above maximum (6): 7"),
    ("5-1 * * * *", "beginning of range (5) beyond end of range (1): 5-1"),
    ("*/0 * * * *", "step of range should be a positive number: */0"),
    ("1-2-3 * * * *", "too many hyphens: 1-2-3"),
    ("*/2/3 * * * *", "too many slashes: */2/3"),
    ("-1 * * * *", "failed to parse int from : strconv.Atoi: parsing \"\": invalid syntax"),
    ("@every 5x", 'failed to parse duration @every 5x: time: unknown unit "x" in duration "5x"'),
    ("@every 10", 'failed to parse duration @every 10: time: missing unit in duration "10"'),
    ("TZ=Nowhere/Land 0 * * * *", "provided bad location Nowhere/Land: unknown time zone Nowhere/Land"),
]


@pytest.mark.parametrize("spec,message", CRON_BAD)
def test_cron_rejects_with_robfig_messages(spec: str, message: str) -> None:
    with pytest.raises(CronError) as ei:
        parse_standard(spec)
    assert str(ei.value) == message


def test_cron_schedule_bits_and_durations() -> None:
    s = parse_standard("0 9-17/4 * * mon")
    assert s.minute == 1 and s.hour == (1 << 9) | (1 << 13) | (1 << 17) and s.dow == 1 << 1
    assert parse_go_duration("1h30m") == 5400.0
    assert parse_go_duration("1.5s") == 1.5


# ---- status subresource ------------------------------------------------------------------


def test_status_updates_check_counters() -> None:
    from pyk8s.api.validation import STATUS_UPDATE_VALIDATORS

    old = created(deployment())
    old["metadata"]["resourceVersion"] = "3"
    old["status"] = {"replicas": 2, "readyReplicas": 2, "collisionCount": 2}
    new = copy.deepcopy(old)
    new["status"] = {"replicas": 1, "readyReplicas": 2, "availableReplicas": -1, "collisionCount": 1}
    assert [str(e) for e in STATUS_UPDATE_VALIDATORS[("apps", "Deployment")](new, old)] == [
        "status.availableReplicas: Invalid value: -1: must be greater than or equal to 0",
        "status.readyReplicas: Invalid value: 2: cannot be greater than status.replicas",
        "status.collisionCount: Invalid value: 1: cannot be decremented",
    ]
    jold = created(job())
    jold["metadata"]["resourceVersion"] = "3"
    jold["status"] = {"failed": 2}
    jnew = copy.deepcopy(jold)
    jnew["status"] = {"failed": 1}
    assert [str(e) for e in STATUS_UPDATE_VALIDATORS[("batch", "Job")](jnew, jold)] == [
        "status.failed: Invalid value: 1: cannot decrease the failed counter"]
