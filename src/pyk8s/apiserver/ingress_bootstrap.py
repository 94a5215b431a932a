"""What the API server creates at start for the built-in Ingress controller (docs/ingress.md):
its least-privilege identity, as ingress-nginx's chart grants its controller (read Ingresses,
IngressClasses, Services, EndpointSlices and Secrets; write Ingress status and Events), bound to
the user the controller's client certificate names; and the default IngressClass `pyk8s`.

The names are the controller's (pyk8s/ingress/policy.py), written out here because the API server
imports none of its clients, as kube-apiserver's bootstrap policy names kube-proxy's user."""

from __future__ import annotations

from typing import Any

__all__ = ["rbac_objects", "ingress_class"]

USER = "system:pyk8s-ingress"
CLUSTER_ROLE = "system:pyk8s-ingress"
_RBAC = "rbac.authorization.k8s.io"
_READ = ["get", "list", "watch"]
_LABELS = {"app.kubernetes.io/name": "pyk8s-ingress"}


def rbac_objects() -> list[dict[str, Any]]:
    role = {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRole", "metadata": {"name": CLUSTER_ROLE, "labels": dict(_LABELS)},
        "rules": [
            {"apiGroups": [""], "resources": ["services", "secrets"], "verbs": _READ},
            {"apiGroups": ["discovery.k8s.io"], "resources": ["endpointslices"], "verbs": _READ},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses", "ingressclasses"], "verbs": _READ},
            {"apiGroups": ["networking.k8s.io"], "resources": ["ingresses/status"], "verbs": ["update"]},
            {"apiGroups": ["", "events.k8s.io"], "resources": ["events"], "verbs": ["create", "patch", "update"]},
        ],
    }
    binding = {
        "apiVersion": f"{_RBAC}/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": CLUSTER_ROLE, "labels": dict(_LABELS)},
        "roleRef": {"apiGroup": _RBAC, "kind": "ClusterRole", "name": CLUSTER_ROLE},
        "subjects": [{"apiGroup": _RBAC, "kind": "User", "name": USER}],
    }
    return [role, binding]


def ingress_class() -> dict[str, Any]:
    return {
        "apiVersion": "networking.k8s.io/v1", "kind": "IngressClass",
        "metadata": {"name": "pyk8s", "annotations": {"ingressclass.kubernetes.io/is-default-class": "true"},
                     "labels": dict(_LABELS)},
        "spec": {"controller": "pyk8s.io/ingress"},
    }
