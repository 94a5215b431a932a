"""core/v1 validation: upstream's paths and messages, pinned (examples from the observed transcript first)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from pyk8s.api.defaults import DEFAULTERS
from pyk8s.api.errors import new_invalid
from pyk8s.api.validation import (
    STATUS_UPDATE_VALIDATORS,
    UPDATE_VALIDATORS,
    VALIDATORS,
    names,
    validate_generic,
    validate_generic_update,
)
from pyk8s.api.validation.core import validate_cluster_ip_in_range, validate_node_port_in_range
from pyk8s.api.validation.meta import validate_label_selector
from pyk8s.api.validation.pod import validate_pod_template_spec
from pyk8s.api.validation.quantity import parse_quantity

SUBDOMAIN_MSG = (
    "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'example.com', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')"
)
NAME_PART_MSG = (
    "name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is "
    "'([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')"
)
LABEL_VALUE_MSG = (
    "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start "
    "and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation "
    "is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')"
)
LABEL_MSG = (
    "a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', and must start and end "
    "with an alphanumeric character (e.g. 'my-name',  or '123-abc', regex used for validation is "
    "'[a-z0-9]([-a-z0-9]*[a-z0-9])?')"
)
DNS1035_MSG = (
    "a DNS-1035 label must consist of lower case alphanumeric characters or '-', start with an alphabetic "
    "character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used for validation "
    "is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)
CONFIG_KEY_MSG = (
    "a valid config key must consist of alphanumeric characters, '-', '_' or '.' (e.g. 'key.name',  or "
    "'KEY_NAME',  or 'key-name', regex used for validation is '[-._a-zA-Z0-9]+')"
)


def defaulted(kind: str, obj: dict[str, Any]) -> dict[str, Any]:
    obj = copy.deepcopy(obj)
    fn = DEFAULTERS.get(("", kind))
    if fn:
        fn(obj)
    return obj


def msgs(kind: str, obj: dict[str, Any], default: bool = True) -> list[str]:
    if default:
        obj = defaulted(kind, obj)
    return [str(e) for e in VALIDATORS[("", kind)](obj)]


def update_msgs(kind: str, new: dict[str, Any], old: dict[str, Any]) -> list[str]:
    return [str(e) for e in UPDATE_VALIDATORS[("", kind)](defaulted(kind, new), defaulted(kind, old))]


def pod(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"containers": [{"name": "c", "image": "busybox"}]}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": base}


def ctr(**fields: Any) -> dict[str, Any]:
    c: dict[str, Any] = {"name": "c", "image": "busybox"}
    c.update(fields)
    return c


def meta(name: str = "x", namespace: str | None = "default", **extra: Any) -> dict[str, Any]:
    md: dict[str, Any] = {"name": name}
    if namespace is not None:
        md["namespace"] = namespace
    md.update(extra)
    return md


# ---- the transcript's own examples -------------------------------------------------------------------

def test_transcript_configmap_bad_name() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("Bad_Name")}
    err = new_invalid("ConfigMap", "Bad_Name", VALIDATORS[("", "ConfigMap")](cm))
    assert err.message == f'ConfigMap "Bad_Name" is invalid: metadata.name: Invalid value: "Bad_Name": {SUBDOMAIN_MSG}'


def test_transcript_bad_label_key() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c", "demo", labels={"bad key": "1"})}
    err = new_invalid("ConfigMap", "c", VALIDATORS[("", "ConfigMap")](cm))
    assert err.message == f'ConfigMap "c" is invalid: metadata.labels: Invalid value: "bad key": {NAME_PART_MSG}'


def test_transcript_label_value_message() -> None:
    assert names.is_label_value("-bad-") == [LABEL_VALUE_MSG]


def test_transcript_missing_container_port() -> None:
    # typo-pod.yaml: `containnerPort` dropped by --validate=warn leaves containerPort unset
    p = pod(containers=[ctr(name="typo", ports=[{"name": "http"}])])
    err = new_invalid("Pod", "typo", VALIDATORS[("", "Pod")](defaulted("Pod", p)))
    assert err.message == 'Pod "typo" is invalid: spec.containers[0].ports[0].containerPort: Required value'


def test_transcript_pod_update_refusal() -> None:
    # as a patch does: the new object starts from the stored (defaulted) one
    old = defaulted("Pod", pod(containers=[ctr(image="busybox", resources={"requests": {"cpu": "64"}})]))
    old["metadata"]["resourceVersion"] = "5"
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:2"
    new["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "1"
    errs = update_msgs("Pod", new, old)
    assert len(errs) == 1
    first, _, diff = errs[0].partition("\n")
    assert first == (
        "spec: Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
        "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only additions to "
        "existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be set to 1 if it was "
        "previously negative)"
    )
    assert "core.PodSpec{" in diff
    assert '-   containers[0].resources.requests.cpu: "64",' in diff
    assert '+   containers[0].resources.requests.cpu: "1",' in diff
    assert "image" not in diff  # image changes are allowed, so they are munged away before the diff


def test_pod_update_allowed_fields() -> None:
    old = defaulted("Pod", pod(tolerations=[{"key": "a", "operator": "Exists", "effect": "NoExecute",
                                             "tolerationSeconds": 10}]))
    old["metadata"]["resourceVersion"] = "5"
    new = copy.deepcopy(old)
    new["spec"]["containers"][0]["image"] = "busybox:2"
    new["spec"]["activeDeadlineSeconds"] = 30
    new["spec"]["tolerations"][0]["tolerationSeconds"] = 20
    new["spec"]["tolerations"].append({"key": "b", "operator": "Exists"})
    assert update_msgs("Pod", new, old) == []


@pytest.mark.parametrize(
    "mutate, expected",
    [
        (lambda s: s["containers"].append(ctr(name="d")),
         ["spec.containers: Forbidden: pod updates may not add or remove containers"]),
        (lambda s: s.update(tolerations=[]),
         ["spec.tolerations: Forbidden: existing toleration can not be modified except its tolerationSeconds"]),
        (lambda s: s["containers"][0].update(image=""), ["spec.containers[0].image: Required value"]),
    ],
)
def test_pod_update_refusals(mutate: Any, expected: list[str]) -> None:
    old = pod(tolerations=[{"key": "a", "operator": "Exists"}])
    old["metadata"]["resourceVersion"] = "5"
    new = copy.deepcopy(old)
    mutate(new["spec"])
    got = update_msgs("Pod", new, old)
    for e in expected:
        assert e in got, got


def test_pod_update_active_deadline_rules() -> None:
    old = pod(activeDeadlineSeconds=10)
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["activeDeadlineSeconds"] = 20
    assert update_msgs("Pod", new, old) == [
        "spec.activeDeadlineSeconds: Invalid value: 20: must be less than or equal to previous value"]
    del new["spec"]["activeDeadlineSeconds"]
    assert 'spec.activeDeadlineSeconds: Invalid value: "null": must not update from a positive integer to nil value' \
        in update_msgs("Pod", new, old)


def test_pod_update_meta_immutable() -> None:
    old = pod()
    old["metadata"].update(resourceVersion="1", uid="u1", generation=2)
    new = copy.deepcopy(old)
    new["metadata"].update(uid="u2", generation=1, namespace="other")
    assert update_msgs("Pod", new, old) == [
        "metadata.generation: Invalid value: 1: must not be decremented",
        'metadata.namespace: Invalid value: "other": field is immutable',
        'metadata.uid: Invalid value: "u2": field is immutable',
    ]


# ---- names -------------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "fn, value, expected",
    [
        (names.is_dns1123_subdomain, "example.com", []),
        (names.is_dns1123_subdomain, "Bad_Name", [SUBDOMAIN_MSG]),
        (names.is_dns1123_subdomain, "a" * 254, ["must be no more than 253 characters"]),
        (names.is_dns1123_label, "my-name", []),
        (names.is_dns1123_label, "a.b", ["must not contain dots"]),
        (names.is_dns1123_label, "A", [LABEL_MSG]),
        (names.is_dns1123_label, "a" * 64, ["must be no more than 63 characters"]),
        (names.is_dns1035_label, "1abc", [DNS1035_MSG]),
        (names.is_qualified_name, "example.com/MyName", []),
        (names.is_qualified_name, "bad key", [NAME_PART_MSG]),
        (names.is_qualified_name, "/a", ["prefix part must be non-empty"]),
        (names.is_qualified_name, "a" * 64, ["name part must be no more than 63 characters"]),
        (names.is_label_value, "", []),
        (names.is_label_value, "a" * 64, ["must be no more than 63 characters"]),
        (names.is_config_map_key, "a b", [CONFIG_KEY_MSG]),
        (names.is_config_map_key, "..a", ["must not start with '..'"]),
        (names.is_valid_port_num, 0, ["must be between 1 and 65535, inclusive"]),
        (names.is_valid_port_name, "http-80", []),
        (names.is_valid_port_name, "80", ["must contain at least one letter (a-z)"]),
        (names.is_valid_ip, "10.0.0.1", []),
        (names.is_valid_ip, "10.0.0.256", ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]),
        (names.is_relaxed_env_var_name, "A=B", ["a valid environment variable name must consist only of printable "
                                                "ASCII characters other than '='"]),
    ],
)
def test_name_formats(fn: Any, value: Any, expected: list[str]) -> None:
    assert fn(value) == expected


def test_generate_name_prefix_masking() -> None:
    # a generateName ending in '-' is valid: the trailing dash is masked
    assert names.name_is_dns_subdomain("web-", True) == []
    assert names.name_is_dns_subdomain("web-", False) == [SUBDOMAIN_MSG]


# ---- ObjectMeta --------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "md, namespaced, expected",
    [
        ({}, True, ["metadata.name: Required value: name or generateName is required",
                    "metadata.namespace: Required value"]),
        ({"generateName": "x-", "namespace": "default"}, True, []),
        ({"name": "x", "namespace": "Bad"}, True, [f'metadata.namespace: Invalid value: "Bad": {LABEL_MSG}']),
        ({"name": "x", "namespace": "default"}, False, ["metadata.namespace: Forbidden: not allowed on this type"]),
        ({"name": "x", "namespace": "d", "finalizers": ["foo"]}, True,
         ['metadata.finalizers[0]: Invalid value: "foo": name is neither a standard finalizer name nor is it fully '
          "qualified"]),
        ({"name": "x", "namespace": "d", "finalizers": ["example.com/f"]}, True, []),
        ({"name": "x", "namespace": "d", "annotations": {"a" * 300: "b"}}, True,
         [f'metadata.annotations: Invalid value: "{"a" * 300}": name part must be no more than 63 characters']),
        ({"name": "x", "namespace": "d", "annotations": {"a": "b" * (256 * 1024)}}, True,
         ["metadata.annotations: Too long: may not be more than 262144 bytes"]),
        ({"name": "x", "namespace": "d", "ownerReferences": [{"apiVersion": "v1", "kind": "Pod", "name": "p"}]}, True,
         ['metadata.ownerReferences.uid: Invalid value: "": must not be empty']),
    ],
)
def test_object_meta(md: dict[str, Any], namespaced: bool, expected: list[str]) -> None:
    obj = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": md}
    kind = "ConfigMap" if namespaced else "Namespace"
    got = msgs(kind, obj, default=False)
    assert got == expected


def test_generic_validators() -> None:
    obj = {"metadata": {"name": "Bad"}}
    assert [str(e) for e in validate_generic(obj, False)] == [f'metadata.name: Invalid value: "Bad": {SUBDOMAIN_MSG}']
    old = {"metadata": {"name": "a", "resourceVersion": "1"}}
    new = {"metadata": {"name": "b", "resourceVersion": "1"}}
    assert [str(e) for e in validate_generic_update(new, old)] == ['metadata.name: Invalid value: "b": field is immutable']


def test_label_selector() -> None:
    sel = {"matchExpressions": [{"key": "a", "operator": "In"}, {"key": "b", "operator": "Exists", "values": ["x"]},
                                {"key": "c", "operator": "Bogus"}]}
    assert [str(e) for e in validate_label_selector(sel, "spec.selector")] == [
        "spec.selector.matchExpressions[0].values: Required value: must be specified when `operator` is 'In' or 'NotIn'",
        "spec.selector.matchExpressions[1].values: Forbidden: may not be specified when `operator` is 'Exists' or "
        "'DoesNotExist'",
        'spec.selector.matchExpressions[2].operator: Invalid value: "Bogus": not a valid selector operator',
    ]


# ---- Pod spec ----------------------------------------------------------------------------------------

@pytest.mark.parametrize(
    "spec, expected",
    [
        ({"containers": []}, ["spec.containers: Required value"]),
        ({"containers": [ctr(name="")]}, ["spec.containers[0].name: Required value"]),
        ({"containers": [ctr(name="Bad")]}, [f'spec.containers[0].name: Invalid value: "Bad": {LABEL_MSG}']),
        ({"containers": [ctr(), ctr()]}, ['spec.containers[1].name: Duplicate value: "c"']),
        ({"containers": [ctr(image="")]}, ["spec.containers[0].image: Required value"]),
        ({"containers": [ctr(image=" busybox")]},
         ['spec.containers[0].image: Invalid value: " busybox": must not have leading or trailing whitespace']),
        ({"containers": [ctr(ports=[{"containerPort": 70000}])]},
         ["spec.containers[0].ports[0].containerPort: Invalid value: 70000: must be between 1 and 65535, inclusive"]),
        ({"containers": [ctr(ports=[{"containerPort": 80, "protocol": "HTTP"}])]},
         ['spec.containers[0].ports[0].protocol: Unsupported value: "HTTP": supported values: "SCTP", "TCP", "UDP"']),
        ({"containers": [ctr(ports=[{"containerPort": 80, "name": "web"}, {"containerPort": 81, "name": "web"}])]},
         ['spec.containers[0].ports[1].name: Duplicate value: "web"']),
        ({"containers": [ctr(env=[{"name": ""}])]}, ["spec.containers[0].env[0].name: Required value"]),
        ({"containers": [ctr(env=[{"name": "A", "valueFrom": {}}])]},
         ['spec.containers[0].env[0].valueFrom: Invalid value: "": must specify one of: `fieldRef`, `resourceFieldRef`, '
          "`configMapKeyRef` or `secretKeyRef`"]),
        ({"containers": [ctr(env=[{"name": "A", "valueFrom": {"fieldRef": {"fieldPath": "status.phase"}}}])]},
         ['spec.containers[0].env[0].valueFrom.fieldRef.fieldPath: Unsupported value: "status.phase": supported values: '
          '"metadata.name", "metadata.namespace", "metadata.uid", "spec.nodeName", "spec.serviceAccountName", '
          '"status.hostIP", "status.hostIPs", "status.podIP", "status.podIPs"']),
        ({"restartPolicy": "Sometimes"},
         ['spec.restartPolicy: Unsupported value: "Sometimes": supported values: "Always", "OnFailure", "Never"']),
        ({"dnsPolicy": "Bogus"},
         ['spec.dnsPolicy: Unsupported value: "Bogus": supported values: "ClusterFirstWithHostNet", "ClusterFirst", '
          '"Default", "None"']),
        ({"dnsPolicy": "None"}, ["spec.dnsConfig: Required value: must provide `dnsConfig` when `dnsPolicy` is None"]),
        ({"activeDeadlineSeconds": 0},
         ["spec.activeDeadlineSeconds: Invalid value: 0: must be between 1 and 2147483647, inclusive"]),
        ({"nodeSelector": {"disk": "-ssd-"}}, [f'spec.nodeSelector: Invalid value: "-ssd-": {LABEL_VALUE_MSG}']),
        ({"hostNetwork": True, "containers": [ctr(ports=[{"containerPort": 80, "hostPort": 81}])]},
         ["spec.containers[0].ports[0].hostPort: Invalid value: 81: must match `containerPort` when `hostNetwork` is true"]),
        ({"containers": [ctr(ports=[{"containerPort": 80, "hostPort": 8080}]),
                         ctr(name="d", ports=[{"containerPort": 81, "hostPort": 8080}])]},
         ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//8080"']),
        ({"serviceAccountName": "Bad"}, [f'spec.serviceAccountName: Invalid value: "Bad": {SUBDOMAIN_MSG}']),
        ({"hostname": "a.b"}, ['spec.hostname: Invalid value: "a.b": must not contain dots']),
        ({"preemptionPolicy": "Maybe"},
         ['spec.preemptionPolicy: Unsupported value: "Maybe": supported values: "PreemptLowerPriority", "Never"']),
        ({"os": {"name": "plan9"}}, ['spec.os: Unsupported value: "plan9": supported values: "linux", "windows"']),
    ],
)
def test_pod_spec(spec: dict[str, Any], expected: list[str]) -> None:
    assert msgs("Pod", pod(**spec)) == expected


@pytest.mark.parametrize(
    "resources, expected",
    [
        ({"requests": {"cpu": "2"}, "limits": {"cpu": "1"}},
         ['spec.containers[0].resources.requests: Invalid value: "2": must be less than or equal to cpu limit of 1']),
        ({"requests": {"memory": "1Gi"}, "limits": {"memory": "512Mi"}},
         ['spec.containers[0].resources.requests: Invalid value: "1Gi": must be less than or equal to memory limit '
          "of 512Mi"]),
        ({"limits": {"cpu": "-1"}},
         ['spec.containers[0].resources.limits[cpu]: Invalid value: "-1": must be greater than or equal to 0',
          'spec.containers[0].resources.requests[cpu]: Invalid value: "-1": must be greater than or equal to 0']),
        ({"limits": {"pods": "1"}},  # (requests are defaulted from limits, so both are reported)
         ['spec.containers[0].resources.limits[pods]: Invalid value: "pods": must be a standard resource for '
          "containers",
          'spec.containers[0].resources.requests[pods]: Invalid value: "pods": must be a standard resource for '
          "containers"]),
        ({"requests": {"example.com/gpu": "1"}},
         ["spec.containers[0].resources.limits: Required value: Limit must be set for non overcommitable resources"]),
        ({"requests": {"example.com/gpu": "1.5"}, "limits": {"example.com/gpu": "1.5"}},
         ["spec.containers[0].resources.limits[example.com/gpu]: Invalid value: 1500m: must be an integer",
          "spec.containers[0].resources.requests[example.com/gpu]: Invalid value: 1500m: must be an integer"]),
        ({"limits": {"cpu": "1", "memory": "1Gi"}}, []),
    ],
)
def test_container_resources(resources: dict[str, Any], expected: list[str]) -> None:
    assert msgs("Pod", pod(containers=[ctr(resources=resources)])) == expected


@pytest.mark.parametrize(
    "volumes, mounts, expected",
    [
        ([{"name": "v"}], [{"name": "v", "mountPath": "/d"}], []),  # defaulted to emptyDir
        ([{"name": "v", "emptyDir": {}, "hostPath": {"path": "/x"}}], [],
         ["spec.volumes[0].hostPath: Forbidden: may not specify more than 1 volume type"]),
        ([{"name": "v", "emptyDir": {}}, {"name": "v", "emptyDir": {}}], [],
         ['spec.volumes[1].name: Duplicate value: "v"']),
        ([{"name": "v", "emptyDir": {}}], [{"name": "w", "mountPath": "/d"}],
         ['spec.containers[0].volumeMounts[0].name: Not found: "w"']),
        ([{"name": "v", "emptyDir": {}}], [{"name": "v", "mountPath": "/d"}, {"name": "v", "mountPath": "/d"}],
         ['spec.containers[0].volumeMounts[1].mountPath: Invalid value: "/d": must be unique']),
        ([{"name": "v", "secret": {}}], [], ["spec.volumes[0].secret.secretName: Required value"]),
        ([{"name": "v", "configMap": {"name": "c", "defaultMode": 1000}}], [],
         ["spec.volumes[0].configMap.defaultMode: Invalid value: 1000: must be a number between 0 and 0777 (octal), "
          "both inclusive"]),
        ([{"name": "v", "hostPath": {"path": "/x", "type": "Dir"}}], [],
         ['spec.volumes[0].hostPath.type: Unsupported value: "Dir": supported values: "", "BlockDevice", '
          '"CharDevice", "Directory", "DirectoryOrCreate", "File", "FileOrCreate", "Socket"']),
        ([{"name": "v", "persistentVolumeClaim": {}}], [],
         ["spec.volumes[0].persistentVolumeClaim.claimName: Required value"]),
        ([{"name": "v", "emptyDir": {}}], [{"name": "v", "mountPath": "/d", "subPath": "../x"}],
         ['spec.containers[0].volumeMounts.subPath: Invalid value: "../x": must not contain \'..\'']),
    ],
)
def test_volumes(volumes: list[Any], mounts: list[Any], expected: list[str]) -> None:
    assert msgs("Pod", pod(volumes=volumes, containers=[ctr(volumeMounts=mounts)])) == expected


@pytest.mark.parametrize(
    "probe_field, probe, expected",
    [
        ("livenessProbe", {}, ["spec.containers[0].livenessProbe: Required value: must specify a handler type"]),
        ("livenessProbe", {"exec": {"command": ["true"]}, "httpGet": {"port": 80}},
         ["spec.containers[0].livenessProbe.httpGet: Forbidden: may not specify more than 1 handler type"]),
        ("livenessProbe", {"exec": {"command": ["true"]}, "successThreshold": 2},
         ["spec.containers[0].livenessProbe.successThreshold: Invalid value: 2: must be 1"]),
        ("readinessProbe", {"exec": {"command": ["true"]}, "timeoutSeconds": -1},
         ["spec.containers[0].readinessProbe.timeoutSeconds: Invalid value: -1: must be greater than or equal to 0"]),
        ("readinessProbe", {"tcpSocket": {"port": "80"}},
         ['spec.containers[0].readinessProbe.tcpSocket.port: Invalid value: "80": must contain at least one letter '
          "(a-z)"]),
        ("readinessProbe", {"exec": {}}, ["spec.containers[0].readinessProbe.exec.command: Required value"]),
    ],
)
def test_probes(probe_field: str, probe: dict[str, Any], expected: list[str]) -> None:
    assert msgs("Pod", pod(containers=[ctr(**{probe_field: probe})])) == expected


@pytest.mark.parametrize(
    "tol, expected",
    [
        ({"key": "k", "operator": "Exists", "effect": "NoSchedule"}, []),
        ({"operator": "Equal", "value": "v"},
         ['spec.tolerations[0].operator: Invalid value: "Equal": operator must be Exists when `key` is empty, which '
          'means "match all values and all keys"']),
        ({"key": "k", "operator": "Exists", "value": "v"},
         ["spec.tolerations[0].operator: Invalid value: \"v\": value must be empty when `operator` is 'Exists'"]),
        ({"key": "k", "operator": "Greater"},
         ['spec.tolerations[0].operator: Unsupported value: "Greater": supported values: "Equal", "Exists"']),
        ({"key": "k", "operator": "Exists", "tolerationSeconds": 5, "effect": "NoSchedule"},
         ["spec.tolerations[0].effect: Invalid value: \"NoSchedule\": effect must be 'NoExecute' when "
          "`tolerationSeconds` is set"]),
        ({"key": "k", "operator": "Exists", "effect": "Never"},
         ['spec.tolerations[0].effect: Unsupported value: "Never": supported values: "NoSchedule", '
          '"PreferNoSchedule", "NoExecute"']),
    ],
)
def test_tolerations(tol: dict[str, Any], expected: list[str]) -> None:
    assert msgs("Pod", pod(tolerations=[tol])) == expected


def test_node_affinity() -> None:
    aff = {"nodeAffinity": {
        "requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "disktype", "operator": "In"}],
             "matchFields": [{"key": "metadata.uid", "operator": "In", "values": ["a"]}]}]},
        "preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 0, "preference": {"matchExpressions": [{"key": "a", "operator": "Exists"}]}}]}}
    base = "spec.affinity.nodeAffinity."
    assert msgs("Pod", pod(affinity=aff)) == [
        base + "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchExpressions[0].values: "
        "Required value: must be specified when `operator` is 'In' or 'NotIn'",
        base + "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms[0].matchFields[0].key: "
        'Invalid value: "metadata.uid": not a valid field selector key',
        base + "preferredDuringSchedulingIgnoredDuringExecution[0].weight: Invalid value: 0: must be in the range 1-100",
    ]
    empty = {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": []}}}
    assert msgs("Pod", pod(affinity=empty)) == [
        base + "requiredDuringSchedulingIgnoredDuringExecution.nodeSelectorTerms: Required value: must have at least "
        "one node selector term"]


def test_init_containers() -> None:
    p = pod(initContainers=[ctr(name="c"), ctr(name="i", readinessProbe={"exec": {"command": ["x"]}})])
    assert msgs("Pod", p) == [
        'spec.initContainers[0].name: Duplicate value: "c"',
        "spec.initContainers[1].readinessProbe: Forbidden: may not be set for init containers without "
        "restartPolicy=Always",
    ]
    sidecar = pod(initContainers=[ctr(name="s", restartPolicy="OnFailure")])
    assert msgs("Pod", sidecar) == [
        'spec.initContainers[0].restartPolicy: Unsupported value: "OnFailure": supported values: "Always"']


def test_pod_create_only_rules() -> None:
    p = pod(nodeName="n1", schedulingGates=[{"name": "example.com/gate"}])
    assert msgs("Pod", p) == ["spec.nodeName: Forbidden: cannot be set until all schedulingGates have been cleared"]
    p = pod(volumes=[{"name": "t", "projected": {"sources": [{"serviceAccountToken": {"path": "token"}}]}}])
    assert msgs("Pod", p) == ["spec.volumes[0].projected.sources[0].serviceAccountToken: Forbidden: must not be "
                              "specified when serviceAccountName is not set"]


def test_pod_status_update() -> None:
    old = defaulted("Pod", pod(nodeName="n1"))
    old["metadata"]["resourceVersion"] = "1"
    old["status"] = {"phase": "Pending", "qosClass": "BestEffort"}
    new = copy.deepcopy(old)
    new["status"]["qosClass"] = "Burstable"
    new["status"]["conditions"] = [{"type": "bad type", "status": "True"}]
    got = [str(e) for e in STATUS_UPDATE_VALIDATORS[("", "Pod")](new, old)]
    assert 'status.qosClass: Invalid value: "Burstable": field is immutable' in got
    assert f'metadata.conditions[0].Type: Invalid value: "bad type": {NAME_PART_MSG}' in got


def test_pod_template_spec_for_other_kinds() -> None:
    tpl = {"metadata": {"labels": {"app": "-x-"}}, "spec": {"containers": [ctr(name="Bad")]}}
    from pyk8s.api.defaults.core import default_pod_template

    default_pod_template(tpl)
    assert [str(e) for e in validate_pod_template_spec(tpl, "spec.template")] == [
        f'spec.template.labels: Invalid value: "-x-": {LABEL_VALUE_MSG}',
        f'spec.template.spec.containers[0].name: Invalid value: "Bad": {LABEL_MSG}',
    ]
    # templates tolerate an unset hostPort with hostNetwork (it is defaulted when the pod is made)
    tpl = {"spec": {"hostNetwork": True, "containers": [ctr(ports=[{"containerPort": 80}])]}}
    default_pod_template(tpl)
    assert validate_pod_template_spec(tpl, "spec.template") == []


# ---- Service ------------------------------------------------------------------------------------------

def svc(**spec: Any) -> dict[str, Any]:
    base: dict[str, Any] = {"ports": [{"port": 80}], "selector": {"app": "web"}}
    base.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": meta("web"), "spec": base}


@pytest.mark.parametrize(
    "spec, expected",
    [
        ({}, []),
        ({"type": "NodePort", "ports": [{"port": 80, "nodePort": 30080}]}, []),
        ({"ports": []}, ["spec.ports: Required value"]),
        ({"ports": [{"port": 0}]}, ["spec.ports[0].port: Invalid value: 0: must be between 1 and 65535, inclusive",
                                    "spec.ports[0].targetPort: Invalid value: 0: must be between 1 and 65535, inclusive"]),
        ({"ports": [{"port": 80}, {"port": 81}]},
         ["spec.ports[0].name: Required value", "spec.ports[1].name: Required value"]),
        ({"ports": [{"port": 80, "protocol": "ICMP"}]},
         ['spec.ports[0].protocol: Unsupported value: "ICMP": supported values: "SCTP", "TCP", "UDP"']),
        ({"type": "Bogus"},
         ['spec.type: Unsupported value: "Bogus": supported values: "ClusterIP", "ExternalName", "LoadBalancer", '
          '"NodePort"']),
        ({"ports": [{"port": 80, "nodePort": 30080}]},
         ["spec.ports[0].nodePort: Forbidden: may not be used when `type` is 'ClusterIP'"]),
        ({"type": "NodePort", "clusterIP": "None"},
         ["spec.clusterIPs[0]: Invalid value: \"None\": may not be set to 'None' for NodePort services"]),
        ({"clusterIP": "1.2.3"},
         ['spec.clusterIPs[0]: Invalid value: "1.2.3": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)']),
        ({"type": "ExternalName", "ports": []}, ["spec.externalName: Required value"]),
        ({"sessionAffinity": "Sticky"},
         ['spec.sessionAffinity: Unsupported value: "Sticky": supported values: "ClientIP", "None"']),
        ({"externalTrafficPolicy": "Local"},
         ['spec.externalTrafficPolicy: Invalid value: "Local": may only be set for externally-accessible services']),
        ({"selector": {"app": "a b"}},
         ['spec.selector: Invalid value: "a b": ' + LABEL_VALUE_MSG]),
    ],
)
def test_service(spec: dict[str, Any], expected: list[str]) -> None:
    assert msgs("Service", svc(**spec)) == expected


def test_service_name_is_dns1035() -> None:
    s = svc()
    s["metadata"]["name"] = "1web"
    assert msgs("Service", s) == [f'metadata.name: Invalid value: "1web": {DNS1035_MSG}']


def test_service_cluster_ip_immutable() -> None:
    old = svc(clusterIP="10.96.0.10")
    old["metadata"]["resourceVersion"] = "1"
    new = copy.deepcopy(old)
    new["spec"]["clusterIP"] = "10.96.0.11"
    new["spec"]["clusterIPs"] = ["10.96.0.11"]
    assert update_msgs("Service", new, old) == [
        'spec.clusterIPs[0]: Invalid value: []string{"10.96.0.11"}: may not change once set']


def test_allocator_range_messages() -> None:
    assert [str(e) for e in validate_node_port_in_range(32768, "spec.ports[0].nodePort")] == [
        "spec.ports[0].nodePort: Invalid value: 32768: provided port is not in the valid range. The range of valid "
        "ports is 30000-32767"]
    s = defaulted("Service", svc(clusterIP="192.168.0.1"))
    assert [str(e) for e in validate_cluster_ip_in_range(s)] == [
        'spec.clusterIPs: Invalid value: []string{"192.168.0.1"}: failed to allocate IP 192.168.0.1: the provided IP '
        "(192.168.0.1) is not in the valid range. The range of valid IPs is 10.96.0.0/12"]


# ---- ConfigMap / Secret -------------------------------------------------------------------------------

def test_config_map_keys_and_size() -> None:
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c"), "data": {"a b": "1", "ok": "x" * (1 << 20)}}
    assert msgs("ConfigMap", cm) == [f'data[a b]: Invalid value: "a b": {CONFIG_KEY_MSG}',
                                     ": Too long: may not be more than 1048576 bytes"]
    cm = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c"), "data": {"k": "1"},
          "binaryData": {"k": "MQ=="}}
    assert msgs("ConfigMap", cm) == ['data[k]: Invalid value: "k": duplicate of key present in binaryData']


def test_immutable_config_map() -> None:
    old = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": meta("c", resourceVersion="1"), "data": {"a": "1"},
           "immutable": True}
    new = copy.deepcopy(old)
    new["data"]["a"] = "2"
    assert update_msgs("ConfigMap", new, old) == ["data: Forbidden: field is immutable when `immutable` is set"]


@pytest.mark.parametrize(
    "typ, data, annotations, expected",
    [
        ("Opaque", {"a": "MQ=="}, {}, []),
        ("kubernetes.io/tls", {"tls.crt": "YQ=="}, {}, ["data[tls.key]: Required value"]),
        ("kubernetes.io/dockerconfigjson", {}, {}, ["data[.dockerconfigjson]: Required value"]),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": "e30="}, {}, []),
        ("kubernetes.io/dockerconfigjson", {".dockerconfigjson": "W10="}, {},
         ['data[.dockerconfigjson]: Invalid value: "<secret contents redacted>": json: cannot unmarshal array into '
          "Go value of type map[string]interface {}"]),
        ("kubernetes.io/service-account-token", {}, {},
         ["metadata.annotations[kubernetes.io/service-account.name]: Required value"]),
        ("kubernetes.io/basic-auth", {}, {}, ["data[username]: Required value", "data[password]: Required value"]),
    ],
)
def test_secret_types(typ: str, data: dict[str, str], annotations: dict[str, str], expected: list[str]) -> None:
    s = {"apiVersion": "v1", "kind": "Secret", "metadata": meta("s", annotations=annotations), "type": typ, "data": data}
    assert msgs("Secret", s) == expected


def test_secret_type_immutable() -> None:
    old = {"apiVersion": "v1", "kind": "Secret", "metadata": meta("s", resourceVersion="1"), "type": "Opaque"}
    new = copy.deepcopy(old)
    new["type"] = "kubernetes.io/tls"
    new["data"] = {"tls.crt": "", "tls.key": ""}
    assert update_msgs("Secret", new, old) == ['type: Invalid value: "kubernetes.io/tls": field is immutable']


# ---- other kinds --------------------------------------------------------------------------------------

def test_namespace() -> None:
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a.b"}}
    assert msgs("Namespace", ns) == ['metadata.name: Invalid value: "a.b": must not contain dots']
    ns = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "ok"}, "spec": {"finalizers": ["bogus"]}}
    assert msgs("Namespace", ns) == [
        'spec.finalizers: Invalid value: "bogus": name is neither a standard finalizer name nor is it fully qualified']


def test_namespace_status_phase() -> None:
    old = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n", "resourceVersion": "1"},
           "status": {"phase": "Active"}}
    new = copy.deepcopy(old)
    new["status"]["phase"] = "Terminating"
    assert [str(e) for e in STATUS_UPDATE_VALIDATORS[("", "Namespace")](new, old)] == [
        "status.Phase: Invalid value: \"Terminating\": may only be 'Active' if `deletionTimestamp` is empty"]


def test_node_taints() -> None:
    node = {"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n1"},
            "spec": {"taints": [{"key": "a", "effect": "NoSchedule"}, {"key": "b"}]}}
    assert msgs("Node", node) == ["metadata.taints[1].effect: Required value"]


def test_endpoints() -> None:
    ep = {"apiVersion": "v1", "kind": "Endpoints", "metadata": meta("e"),
          "subsets": [{"addresses": [{"ip": "127.0.0.1"}], "ports": [{"port": 80}]}, {}]}
    assert msgs("Endpoints", ep) == [
        'subsets[0].addresses[0].ip: Invalid value: "127.0.0.1": may not be in the loopback range (127.0.0.0/8, '
        "::1/128)",
        "subsets[1]: Required value: must specify `addresses` or `notReadyAddresses`",
    ]


@pytest.mark.parametrize(
    "event_ns, involved_ns, expected",
    [
        ("default", "default", []),
        ("default", "", []),
        ("demo", "", ['involvedObject.namespace: Invalid value: "": does not match event.namespace']),
        ("demo", "other", ['involvedObject.namespace: Invalid value: "other": does not match event.namespace']),
    ],
)
def test_event_namespace_rules(event_ns: str, involved_ns: str, expected: list[str]) -> None:
    ev = {"apiVersion": "v1", "kind": "Event", "metadata": meta("e.1", event_ns),
          "involvedObject": {"kind": "Pod", "name": "p", "namespace": involved_ns}, "reason": "R"}
    assert msgs("Event", ev) == expected


def test_limit_range() -> None:
    lr = {"apiVersion": "v1", "kind": "LimitRange", "metadata": meta("l"), "spec": {"limits": [
        {"type": "Container", "min": {"cpu": "2"}, "max": {"cpu": "1"}},
        {"type": "Pod", "default": {"cpu": "1"}}]}}
    got = msgs("LimitRange", lr)
    assert "spec.limits[0].min[cpu]: Invalid value: 2: min value 2 is greater than max value 1" in got
    assert "spec.limits[1].default: Forbidden: may not be specified when `type` is 'Pod'" in got


def test_resource_quota() -> None:
    rq = {"apiVersion": "v1", "kind": "ResourceQuota", "metadata": meta("q"),
          "spec": {"hard": {"pods": "1.5", "bogus": "1"}, "scopes": ["BestEffort", "NotBestEffort"]}}
    got = msgs("ResourceQuota", rq)
    assert got == [  # (pods may be used with both BestEffort scopes: only the conflict is reported)
        'spec.hard[bogus]: Invalid value: "bogus": must be a standard resource type or fully qualified',
        'spec.hard[bogus]: Invalid value: "bogus": must be a standard resource for quota',
        "spec.hard[pods]: Invalid value: 1500m: must be an integer",
        'spec.scopes: Invalid value: []core.ResourceQuotaScope{"BestEffort", "NotBestEffort"}: conflicting scopes',
    ]


def test_pvc() -> None:
    pvc = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("c"), "spec": {}}
    assert msgs("PersistentVolumeClaim", pvc) == [
        "spec.accessModes: Required value: at least 1 access mode is required",
        "spec.resources[storage]: Required value",
    ]
    pvc["spec"] = {"accessModes": ["ReadWriteOnce", "Sometimes"], "resources": {"requests": {"storage": "0"}}}
    assert msgs("PersistentVolumeClaim", pvc) == [
        'spec.accessModes: Unsupported value: "Sometimes": supported values: "ReadOnlyMany", "ReadWriteMany", '
        '"ReadWriteOnce", "ReadWriteOncePod"',
        'spec.resources[storage]: Invalid value: "0": must be greater than zero',
    ]


def test_pvc_update_spec_immutable() -> None:
    base = {"apiVersion": "v1", "kind": "PersistentVolumeClaim", "metadata": meta("c", resourceVersion="1"),
            "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}}}
    new = copy.deepcopy(base)
    new["spec"]["accessModes"] = ["ReadWriteMany"]
    got = update_msgs("PersistentVolumeClaim", new, base)
    assert len(got) == 1 and got[0].startswith(
        "spec: Forbidden: spec is immutable after creation except resources.requests and volumeAttributesClassName "
        "for bound claims\n")


def test_pv() -> None:
    pv = {"apiVersion": "v1", "kind": "PersistentVolume", "metadata": {"name": "pv1"},
          "spec": {"accessModes": ["ReadWriteOnce"], "capacity": {"storage": "1Gi"}}}
    assert msgs("PersistentVolume", pv) == ["spec: Required value: must specify a volume type"]
    pv["spec"]["hostPath"] = {"path": "/tmp/x"}
    assert msgs("PersistentVolume", pv) == []


def test_replication_controller() -> None:
    rc = {"apiVersion": "v1", "kind": "ReplicationController", "metadata": meta("r"),
          "spec": {"selector": {"app": "other"},
                   "template": {"metadata": {"labels": {"app": "r"}},
                                "spec": {"restartPolicy": "Never", "containers": [ctr()]}}}}
    assert msgs("ReplicationController", rc) == [
        'spec.template.metadata.labels: Invalid value: map[string]string{"app":"r"}: `selector` does not match '
        "template `labels`",
        'spec.template.spec.restartPolicy: Unsupported value: "Never": supported values: "Always"',
    ]


def test_binding() -> None:
    b = {"apiVersion": "v1", "kind": "Binding", "metadata": meta("p"), "target": {"kind": "Pod"}}
    assert msgs("Binding", b) == ['target.kind: Unsupported value: "Pod": supported values: "Node", "<empty>"',
                                  "target.name: Required value"]


def test_errors_are_deduplicated() -> None:
    # the same message twice is reported once, as upstream's aggregate does
    p = pod(containers=[ctr(ports=[{"containerPort": 80, "hostPort": 80}]),
                        ctr(name="d", ports=[{"containerPort": 80, "hostPort": 80}]),
                        ctr(name="e", ports=[{"containerPort": 80, "hostPort": 80}])])
    got = msgs("Pod", p)
    assert got == ['spec.containers[1].ports[0].hostPort: Duplicate value: "TCP//80"',
                   'spec.containers[2].ports[0].hostPort: Duplicate value: "TCP//80"']


def test_quantity_canonical_forms() -> None:
    for raw, want in [("1000m", "1"), ("0.5", "500m"), ("1024Mi", "1Gi"), ("1.5Gi", "1536Mi"), ("2000", "2k"),
                      ("1500", "1500"), ("0.1Ki", "102400m"), (3, "3"), ("1e3", "1e3")]:
        assert parse_quantity(raw).canonical() == want, raw
    with pytest.raises(ValueError, match="quantities must match the regular expression"):
        parse_quantity("abc")


def test_service_replace_keeps_allocated_values() -> None:
    old = defaulted("Service", svc(type="NodePort", clusterIP="10.96.0.10", ports=[{"port": 80, "nodePort": 30080}]))
    old["metadata"]["resourceVersion"] = "1"
    new = defaulted("Service", svc(type="NodePort"))  # the original manifest: no clusterIP, no nodePort
    assert [str(e) for e in UPDATE_VALIDATORS[("", "Service")](new, old)] == []
    assert new["spec"]["clusterIPs"] == ["10.96.0.10"] and new["spec"]["ports"][0]["nodePort"] == 30080
