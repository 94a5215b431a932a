"""Upstream's Node authorizer (`--authorization-mode=Node`): what a kubelet may read and write.

A request from `system:node:<name>` in group `system:nodes` may read a Secret, ConfigMap or
PersistentVolumeClaim only when a pod bound to that node references it (volumes, env,
envFrom, imagePullSecrets, projected sources), a PersistentVolume only through such a
claim, and request tokens only for the ServiceAccounts its pods run as (NodeRestriction then
holds it to tokens bound to those pods); anything else is judged by the static node rules (upstream's NodeRules, our bootstrap
`system:node` ClusterRole). Where it does not allow, it has no opinion and the next mode
(RBAC) decides, as in upstream's union of authorizers; its reason joins the 403's message.

Upstream keeps a graph updated by informers; we walk the pods of the object's namespace in
the watch cache when a kubelet asks, which only kubelets' reads of these four kinds pay.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any

from .authn import UserInfo
from .authz import RequestAttributes, rule_allows

__all__ = ["NodeAuthorizer", "node_name"]

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"


def node_name(user: UserInfo) -> str | None:
    """The node a kubelet's identity names, or None for any other user."""
    if NODES_GROUP in user.groups and user.name.startswith(NODE_PREFIX):
        return user.name[len(NODE_PREFIX):]
    return None


def _containers(spec: dict[str, Any]) -> Iterator[dict[str, Any]]:
    for key in ("initContainers", "containers", "ephemeralContainers"):
        yield from spec.get(key) or []


def _refs(pod: dict[str, Any], kind: str) -> Iterator[str]:
    """Names of the Secrets / ConfigMaps / PVCs a pod references."""
    spec = pod.get("spec") or {}
    vols = spec.get("volumes") or []
    if kind == "persistentvolumeclaims":
        pod_name = (pod.get("metadata") or {}).get("name", "")
        for v in vols:
            if v.get("persistentVolumeClaim"):
                yield v["persistentVolumeClaim"].get("claimName", "")
            if v.get("ephemeral"):
                yield f"{pod_name}-{v.get('name', '')}"  # generic ephemeral volume's claim
        return
    secret = kind == "secrets"
    src_key, key_ref, env_ref = (("secret", "secretKeyRef", "secretRef") if secret
                                 else ("configMap", "configMapKeyRef", "configMapRef"))
    if secret:
        yield from (s.get("name", "") for s in spec.get("imagePullSecrets") or [])
    for v in vols:
        src = v.get(src_key)
        if src:
            yield src.get("secretName" if secret else "name", "")
        for p in (v.get("projected") or {}).get("sources") or []:
            if p.get(src_key):
                yield p[src_key].get("name", "")
        for driver in ("csi", "cephfs", "cinder", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos", "azureFile"):
            d = v.get(driver) or {}
            for ref_key in ("nodePublishSecretRef", "secretRef"):
                if secret and isinstance(d.get(ref_key), dict):
                    yield d[ref_key].get("name", "")
            if secret and driver == "azureFile" and d.get("secretName"):
                yield d["secretName"]
    for c in _containers(spec):
        for e in c.get("env") or []:
            ref = (e.get("valueFrom") or {}).get(key_ref)
            if ref:
                yield ref.get("name", "")
        for ef in c.get("envFrom") or []:
            if ef.get(env_ref):
                yield ef[env_ref].get("name", "")


class NodeAuthorizer:
    """authorize(user, attrs) -> (allowed, reason); not allowed means no opinion."""

    def __init__(self, pods_in: Callable[[str | None], Iterable[dict[str, Any]]],
                 get_pvc: Callable[[str, str], dict[str, Any] | None], node_rules: list[dict[str, Any]]) -> None:
        self.pods_in = pods_in  # namespace (None: all) -> pods, from the watch cache
        self.get_pvc = get_pvc
        self.node_rules = node_rules

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> tuple[bool, str]:
        node = node_name(user)
        if node is None:
            return False, ""
        if not node:
            return False, f'unknown node for user "{user.name}"'
        if attrs.resource_request and attrs.api_group == "":
            res = attrs.resource
            if res in ("secrets", "configmaps"):
                if attrs.verb not in ("get", "list", "watch"):
                    return False, "can only read resources of this type"
                if attrs.subresource:
                    return False, "cannot read subresource"
                if not attrs.namespace:
                    return False, "can only read namespaced object of this type"
                return self._related(node, res, attrs)
            if res == "serviceaccounts":  # tokens only for the ServiceAccounts of its own pods
                return self._create_token(node, attrs)
            if res in ("persistentvolumeclaims", "persistentvolumes") and attrs.subresource != "status":
                if attrs.verb != "get":
                    return False, "can only get individual resources of this type"
                if attrs.subresource:
                    return False, "cannot get subresource"
                return self._related(node, res, attrs)
        if any(rule_allows(attrs, r) for r in self.node_rules):
            return True, ""
        return False, ""

    def _create_token(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        """As upstream's authorizeCreateToken: a TokenRequest for a ServiceAccount a pod on the node runs as."""
        if attrs.verb != "create" or not attrs.name:
            return False, "can only create tokens for individual service accounts"
        if attrs.subresource != "token":
            return False, "can only create token subresource of serviceaccount"
        if any(((p.get("spec") or {}).get("serviceAccountName") or "default") == attrs.name
               for p in self._bound_pods(node, attrs.namespace)):
            return True, ""
        return False, f"no relationship found between node '{node}' and this object"

    def _bound_pods(self, node: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        return (p for p in self.pods_in(namespace) if (p.get("spec") or {}).get("nodeName") == node)

    def _related(self, node: str, res: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if not attrs.name:
            return False, "No Object name found"
        if res == "persistentvolumes":
            # a PV is reachable through a claim of a pod on the node: look at every namespace's pods
            for pod in self._bound_pods(node, None):
                ns = (pod.get("metadata") or {}).get("namespace", "")
                for claim in _refs(pod, "persistentvolumeclaims"):
                    pvc = self.get_pvc(ns, claim)
                    if pvc is not None and (pvc.get("spec") or {}).get("volumeName") == attrs.name:
                        return True, ""
        elif any(attrs.name in _refs(p, res) for p in self._bound_pods(node, attrs.namespace)):
            return True, ""
        return False, f"no relationship found between node '{node}' and this object"
