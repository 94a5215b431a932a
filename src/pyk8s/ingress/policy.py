"""What the API server creates for the built-in Ingress controller at start (apiserver/bootstrap.py):
its least-privilege identity, as ingress-nginx's chart grants its controller (read Ingresses,
IngressClasses, Services, EndpointSlices and Secrets; write Ingress status and Events), bound to
the user the controller's client certificate names; and the default IngressClass `pyk8s`."""

from __future__ import annotations

from typing import Any

__all__ = ["USER", "CLUSTER_ROLE", "CLASS_NAME", "CONTROLLER_NAME", "DEFAULT_CLASS_ANNOTATION", "rbac_objects",
           "ingress_class"]

USER = "system:pyk8s-ingress"  # the controller's client certificate CN
CLUSTER_ROLE = "system:pyk8s-ingress"
CLASS_NAME = "pyk8s"
CONTROLLER_NAME = "pyk8s.io/ingress"  # the IngressClass spec.controller we serve
DEFAULT_CLASS_ANNOTATION = "ingressclass.kubernetes.io/is-default-class"
_RBAC = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]


def rbac_objects() -> list[dict[str, Any]]:
    md = {"name": CLUSTER_ROLE, "labels": {"app.kubernetes.io/name": "pyk8s-ingress"}}
    role = {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": dict(md),
        "rules": [
            {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": _READ},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": _READ},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"], "verbs": _READ},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"], "verbs": ["update"]},
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        ],
    }
    binding = {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": dict(md),
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": CLUSTER_ROLE},
        "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": USER}],
    }
    return [role, binding]


def ingress_class() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": CLASS_NAME, "annotations": {DEFAULT_CLASS_ANNOTATION: "true"},
                     "labels": {"app.kubernetes.io/name": "pyk8s-ingress"}},
        "spec": {"controller": CONTROLLER_NAME},
    }
