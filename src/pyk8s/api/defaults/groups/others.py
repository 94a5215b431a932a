"""Defaulting for the smaller API groups, each as its upstream pkg/apis/<group>/v1/defaults.go:
autoscaling (v1 and v2), networking, storage, rbac, scheduling, discovery,
admissionregistration, flowcontrol and apiextensions; plus the status those strategies
start objects with.
"""

from __future__ import annotations

import copy
from typing import Any

from ._util import obj_dict, spec_dict

__all__ = [
    "default_hpa", "default_network_policy", "default_ingress_class", "default_storage_class", "default_csi_driver",
    "default_role_binding", "default_priority_class", "default_endpoint_slice", "default_webhook_configuration",
    "default_validating_admission_policy", "default_validating_admission_policy_binding", "default_flow_schema",
    "default_priority_level_configuration", "default_crd", "crd_status_on_create", "DEFAULT_CPU_UTILIZATION",
    "DEFAULTERS", "STATUS_ON_CREATE",
]

DEFAULT_CPU_UTILIZATION = 80

# ---- autoscaling -------------------------------------------------------------------------

_SCALE_UP = {"stabilizationWindowSeconds": 0, "selectPolicy": "Max",
             "policies": [{"type": "Pods", "value": 4, "periodSeconds": 15},
                          {"type": "Percent", "value": 100, "periodSeconds": 15}]}
# no stabilization window: the controller's --horizontal-pod-autoscaler-downscale-stabilization applies
_SCALE_DOWN = {"selectPolicy": "Max", "policies": [{"type": "Percent", "value": 100, "periodSeconds": 15}]}


def _scaling_rules(rules: Any, defaults: dict[str, Any]) -> dict[str, Any]:
    out = copy.deepcopy(defaults)
    if isinstance(rules, dict):
        for k in ("selectPolicy", "stabilizationWindowSeconds", "policies", "tolerance"):
            if rules.get(k) is not None:
                out[k] = rules[k]
    return out


def default_hpa(obj: dict[str, Any]) -> None:
    """autoscaling/v2 defaults; autoscaling/v1 bodies only get minReplicas (their CPU target
    default is applied by the v1->v2 conversion)."""
    spec = spec_dict(obj)
    if spec.get("minReplicas") is None:
        spec["minReplicas"] = 1
    if obj.get("apiVersion") == "autoscaling/v1":
        return
    if not spec.get("metrics"):
        spec["metrics"] = [{"type": "Resource", "resource": {
            "name": "cpu", "target": {"type": "Utilization", "averageUtilization": DEFAULT_CPU_UTILIZATION}}}]
    behavior = spec.get("behavior")
    if isinstance(behavior, dict):
        behavior["scaleUp"] = _scaling_rules(behavior.get("scaleUp"), _SCALE_UP)
        behavior["scaleDown"] = _scaling_rules(behavior.get("scaleDown"), _SCALE_DOWN)


def _hpa_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"currentMetrics": None, "desiredReplicas": 0}


def _pdb_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"currentHealthy": 0, "desiredHealthy": 0, "disruptionsAllowed": 0, "expectedPods": 0}


# ---- networking --------------------------------------------------------------------------


def default_network_policy(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    for direction in ("ingress", "egress"):
        for rule in spec.get(direction) or []:
            for port in (rule or {}).get("ports") or []:
                if isinstance(port, dict) and port.get("protocol") is None:
                    port["protocol"] = "TCP"
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    spec.setdefault("podSelector", {})


def default_ingress_class(obj: dict[str, Any]) -> None:
    params = spec_dict(obj).get("parameters")
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"


def _ingress_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"loadBalancer": {}}


# ---- storage -----------------------------------------------------------------------------


def default_storage_class(obj: dict[str, Any]) -> None:
    if obj.get("reclaimPolicy") is None:
        obj["reclaimPolicy"] = "Delete"
    if obj.get("volumeBindingMode") is None:
        obj["volumeBindingMode"] = "Immediate"


def default_csi_driver(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    for k, v in (("attachRequired", True), ("podInfoOnMount", False), ("storageCapacity", False),
                 ("fsGroupPolicy", "ReadWriteOnceWithFSType"), ("requiresRepublish", False),
                 ("seLinuxMount", False)):
        if spec.get(k) is None:
            spec[k] = v
    if not spec.get("volumeLifecycleModes"):
        spec["volumeLifecycleModes"] = ["Persistent"]


def _volume_attachment_status(obj: dict[str, Any]) -> None:
    obj["status"] = {"attached": False}


# ---- rbac, scheduling, discovery ----------------------------------------------------------


def default_role_binding(obj: dict[str, Any]) -> None:
    ref = obj_dict(obj, "roleRef")
    if not ref.get("apiGroup"):
        ref["apiGroup"] = "rbac.authorization.k8s.io"
    for s in obj.get("subjects") or []:
        if isinstance(s, dict) and not s.get("apiGroup") and s.get("kind") in ("User", "Group"):
            s["apiGroup"] = "rbac.authorization.k8s.io"


def default_priority_class(obj: dict[str, Any]) -> None:
    if obj.get("preemptionPolicy") is None:
        obj["preemptionPolicy"] = "PreemptLowerPriority"


def default_endpoint_slice(obj: dict[str, Any]) -> None:
    for port in obj.get("ports") or []:
        if isinstance(port, dict):
            if port.get("name") is None:
                port["name"] = ""
            if port.get("protocol") is None:
                port["protocol"] = "TCP"


# ---- admissionregistration ---------------------------------------------------------------


def _default_rule(rule: Any) -> None:
    if isinstance(rule, dict) and rule.get("scope") is None:
        rule["scope"] = "*"


def _default_selectors(obj: dict[str, Any]) -> None:
    for f in ("namespaceSelector", "objectSelector"):
        if obj.get(f) is None:
            obj[f] = {}


def _default_webhook(hook: dict[str, Any], mutating: bool) -> None:
    for k, v in (("failurePolicy", "Fail"), ("matchPolicy", "Equivalent")):
        if hook.get(k) is None:
            hook[k] = v
    _default_selectors(hook)
    if hook.get("timeoutSeconds") is None:
        hook["timeoutSeconds"] = 10
    if mutating and hook.get("reinvocationPolicy") is None:
        hook["reinvocationPolicy"] = "Never"
    for rule in hook.get("rules") or []:
        _default_rule(rule)
    svc = (hook.get("clientConfig") or {}).get("service")
    if isinstance(svc, dict) and svc.get("port") is None:
        svc["port"] = 443


def default_webhook_configuration(obj: dict[str, Any]) -> None:
    mutating = obj.get("kind") == "MutatingWebhookConfiguration"
    for hook in obj.get("webhooks") or []:
        if isinstance(hook, dict):
            _default_webhook(hook, mutating)


def _default_match_resources(mr: dict[str, Any]) -> None:
    if mr.get("matchPolicy") is None:
        mr["matchPolicy"] = "Equivalent"
    _default_selectors(mr)
    for f in ("resourceRules", "excludeResourceRules"):
        for rule in mr.get(f) or []:
            _default_rule(rule)


def default_validating_admission_policy(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if spec.get("failurePolicy") is None:
        spec["failurePolicy"] = "Fail"
    if isinstance(spec.get("matchConstraints"), dict):
        _default_match_resources(spec["matchConstraints"])


def default_validating_admission_policy_binding(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if isinstance(spec.get("matchResources"), dict):
        _default_match_resources(spec["matchResources"])
    ref = spec.get("paramRef")
    if isinstance(ref, dict) and ref.get("parameterNotFoundAction") is None:
        ref["parameterNotFoundAction"] = "Deny"


# ---- flowcontrol -------------------------------------------------------------------------


def default_flow_schema(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    if not spec.get("matchingPrecedence"):
        spec["matchingPrecedence"] = 1000


def default_priority_level_configuration(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    exempt, limited = spec.get("exempt"), spec.get("limited")
    if isinstance(exempt, dict):
        for k in ("nominalConcurrencyShares", "lendablePercent"):
            if exempt.get(k) is None:
                exempt[k] = 0
    if isinstance(limited, dict):
        if limited.get("nominalConcurrencyShares") is None:
            limited["nominalConcurrencyShares"] = 30
        if limited.get("lendablePercent") is None:
            limited["lendablePercent"] = 0
        queuing = (limited.get("limitResponse") or {}).get("queuing")
        if isinstance(queuing, dict):
            for k, v in (("handSize", 8), ("queues", 64), ("queueLengthLimit", 50)):
                if not queuing.get(k):
                    queuing[k] = v


def _empty_status(obj: dict[str, Any]) -> None:
    obj["status"] = {}


# ---- apiextensions -----------------------------------------------------------------------


def _storage_version(obj: dict[str, Any]) -> str | None:
    for v in spec_dict(obj).get("versions") or []:
        if isinstance(v, dict) and v.get("storage"):
            return str(v.get("name") or "")
    return None


def default_crd(obj: dict[str, Any]) -> None:
    spec = spec_dict(obj)
    names = obj_dict(spec, "names")
    if not names.get("singular") and names.get("kind"):
        names["singular"] = str(names["kind"]).lower()
    if not names.get("listKind") and names.get("kind"):
        names["listKind"] = f"{names['kind']}List"
    if spec.get("conversion") is None:
        spec["conversion"] = {"strategy": "None"}
    svc = ((spec["conversion"].get("webhook") or {}).get("clientConfig") or {}).get("service") \
        if isinstance(spec["conversion"], dict) else None
    if isinstance(svc, dict) and svc.get("port") is None:
        svc["port"] = 443
    # the storage version is always recorded as stored (SetDefaults on create, the strategy's
    # PrepareForUpdate when an update moves storage to a new version)
    sv = _storage_version(obj)
    if sv is not None:
        stored = obj_dict(obj, "status").get("storedVersions")
        if not isinstance(stored, list):
            stored = obj["status"]["storedVersions"] = []
        if sv not in stored:
            stored.append(sv)


def crd_status_on_create(obj: dict[str, Any]) -> None:
    """PrepareForCreate: the status starts over with the storage version recorded as stored;
    the naming and establishing controllers add acceptedNames and the conditions."""
    sv = _storage_version(obj)
    obj["status"] = {"acceptedNames": {"kind": "", "plural": ""}, "storedVersions": [sv] if sv is not None else []}


RB = "rbac.authorization.k8s.io"
AR = "admissionregistration.k8s.io"
FC = "flowcontrol.apiserver.k8s.io"
DEFAULTERS = {
    ("autoscaling", "HorizontalPodAutoscaler"): default_hpa,
    ("networking.k8s.io", "NetworkPolicy"): default_network_policy,
    ("networking.k8s.io", "IngressClass"): default_ingress_class,
    ("storage.k8s.io", "StorageClass"): default_storage_class,
    ("storage.k8s.io", "CSIDriver"): default_csi_driver,
    (RB, "RoleBinding"): default_role_binding,
    (RB, "ClusterRoleBinding"): default_role_binding,
    ("scheduling.k8s.io", "PriorityClass"): default_priority_class,
    ("discovery.k8s.io", "EndpointSlice"): default_endpoint_slice,
    (AR, "ValidatingWebhookConfiguration"): default_webhook_configuration,
    (AR, "MutatingWebhookConfiguration"): default_webhook_configuration,
    (AR, "ValidatingAdmissionPolicy"): default_validating_admission_policy,
    (AR, "ValidatingAdmissionPolicyBinding"): default_validating_admission_policy_binding,
    (FC, "FlowSchema"): default_flow_schema,
    (FC, "PriorityLevelConfiguration"): default_priority_level_configuration,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): default_crd,
}
STATUS_ON_CREATE = {
    ("autoscaling", "HorizontalPodAutoscaler"): _hpa_status,
    ("policy", "PodDisruptionBudget"): _pdb_status,
    ("networking.k8s.io", "Ingress"): _ingress_status,
    ("storage.k8s.io", "VolumeAttachment"): _volume_attachment_status,
    (AR, "ValidatingAdmissionPolicy"): _empty_status,
    (FC, "FlowSchema"): _empty_status,
    (FC, "PriorityLevelConfiguration"): _empty_status,
    ("certificates.k8s.io", "CertificateSigningRequest"): _empty_status,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): crd_status_on_create,
}
