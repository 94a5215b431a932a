"""The metrics server's API objects, as upstream's metrics-server manifest (components.yaml) has them.

ServiceAccount `kube-system/metrics-server`; ClusterRoles `system:aggregated-metrics-reader`
(aggregated to view, edit and admin) and `system:metrics-server` (nodes/metrics, nodes and pods);
the RoleBinding to `extension-apiserver-authentication-reader` and the ClusterRoleBindings to
`system:auth-delegator` and `system:metrics-server`; Service `kube-system/metrics-server` (port
443 `https`, no selector: its EndpointSlice names where the built-in server listens) and the
APIService `v1beta1.metrics.k8s.io`. Unlike the manifest's `insecureSkipTLSVerify: true`, the
APIService carries a caBundle: the built-in server's certificate is issued by the cluster CA.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

__all__ = ["NAMESPACE", "NAME", "SERVICE_ACCOUNT_USER", "SERVICE_ACCOUNT_GROUPS", "identity_objects",
           "service_objects", "ensure"]

log = logging.getLogger("pyk8s.metrics-server")

NAMESPACE = "kube-system"
NAME = "metrics-server"
SERVICE_ACCOUNT_USER = f"system:serviceaccount:{NAMESPACE}:{NAME}"
SERVICE_ACCOUNT_GROUPS = ["system:serviceaccounts", f"system:serviceaccounts:{NAMESPACE}"]
LABELS = {"k8s-app": NAME}
RBAC = "rbac.authorization.k8s.io"
Obj = tuple[tuple[str, str, str], dict[str, Any]]


def _sa_subject() -> list[dict[str, str]]:
    return [{"kind": "ServiceAccount", "name": NAME, "namespace": NAMESPACE}]


def identity_objects() -> list[Obj]:
    cr, crb = (RBAC, "v1", "clusterroles"), (RBAC, "v1", "clusterrolebindings")
    return [
        (("", "v1", "serviceaccounts"), {"apiVersion": "v1", "kind": "ServiceAccount",
                                         "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": LABELS}}),
        (cr, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole", "metadata": {
            "name": "system:aggregated-metrics-reader",
            "labels": {**LABELS, f"{RBAC}/aggregate-to-admin": "true", f"{RBAC}/aggregate-to-edit": "true",
                       f"{RBAC}/aggregate-to-view": "true"}},
            "rules": [{"apiGroups": ["metrics.k8s.io"], "resources": ["pods", "nodes"],
                       "verbs": ["get", "list", "watch"]}]}),
        (cr, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRole",
              "metadata": {"name": "system:metrics-server", "labels": LABELS},
              "rules": [{"apiGroups": [""], "resources": ["nodes/metrics"], "verbs": ["get"]},
                        {"apiGroups": [""], "resources": ["pods", "nodes"], "verbs": ["get", "list", "watch"]}]}),
        ((RBAC, "v1", "rolebindings"), {
            "apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
            "metadata": {"name": "metrics-server-auth-reader", "namespace": NAMESPACE, "labels": LABELS},
            "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": "extension-apiserver-authentication-reader"},
            "subjects": _sa_subject()}),
        (crb, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "metrics-server:system:auth-delegator", "labels": LABELS},
               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:auth-delegator"},
               "subjects": _sa_subject()}),
        (crb, {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding",
               "metadata": {"name": "system:metrics-server", "labels": LABELS},
               "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "system:metrics-server"},
               "subjects": _sa_subject()}),
    ]


def service_objects(address: str, port: int, ca_pem: bytes) -> list[Obj]:
    family = "IPv6" if ":" in address else "IPv4"
    return [
        (("", "v1", "services"), {
            "apiVersion": "v1", "kind": "Service",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": LABELS},
            "spec": {"type": "ClusterIP", "ports": [{"name": "https", "port": 443, "protocol": "TCP",
                                                     "targetPort": port}]}}),
        (("discovery.k8s.io", "v1", "endpointslices"), {
            "apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE,
                         "labels": {**LABELS, "kubernetes.io/service-name": NAME,
                                    "endpointslice.kubernetes.io/managed-by": "metrics-server.pyk8s.io"}},
            "addressType": family,
            "endpoints": [{"addresses": [address], "conditions": {"ready": True, "serving": True,
                                                                 "terminating": False}}],
            "ports": [{"name": "https", "port": port, "protocol": "TCP"}]}),
        (("apiregistration.k8s.io", "v1", "apiservices"), {
            "apiVersion": "apiregistration.k8s.io/v1", "kind": "APIService",
            "metadata": {"name": "v1beta1.metrics.k8s.io", "labels": LABELS},
            "spec": {"group": "metrics.k8s.io", "version": "v1beta1", "groupPriorityMinimum": 100,
                     "versionPriority": 100, "service": {"name": NAME, "namespace": NAMESPACE, "port": 443},
                     "caBundle": base64.b64encode(ca_pem).decode()}}),
    ]


async def ensure(client: Any, objects: list[Obj]) -> None:
    """Create each object, or bring an existing one's spec (rules, ports, endpoints) to ours."""
    for gvr, obj in objects:
        name, ns = obj["metadata"]["name"], obj["metadata"].get("namespace")
        cur = await client.get_or_none(gvr, name, ns)
        if cur is None:
            cur, created = await client.create_or_get(gvr, obj, ns)
            if created:
                continue
        if gvr[2] == "serviceaccounts":
            continue
        new = {**cur, **{k: v for k, v in obj.items() if k not in ("metadata", "status")}}
        if gvr[2] == "services":  # the ClusterIP the allocator gave it stays
            new["spec"] = {**(cur.get("spec") or {}), "ports": obj["spec"]["ports"]}
        new["metadata"] = {**cur["metadata"], "labels": {**(cur["metadata"].get("labels") or {}),
                                                         **(obj["metadata"].get("labels") or {})}}
        if new != cur:
            await client.update(gvr, new)
