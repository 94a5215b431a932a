"""Upstream's Node authorizer (`--authorization-mode=Node`): what a kubelet may read and write.

A request from `system:node:<name>` in group `system:nodes` may read a Secret, ConfigMap or
PersistentVolumeClaim only when a pod bound to that node references it (volumes, env,
envFrom, imagePullSecrets, projected sources), a PersistentVolume (and the Secrets its
volume source names) only through such a claim, a ResourceClaim only when such a pod uses
it, and create a token only for the service account of such a pod. As v1.33 with
AuthorizeNodeWithSelectors (beta, on by default): pods are listed and watched only with
`spec.nodeName=<node>` and read one by one only when bound to it; Nodes are read only its
own (a list or watch names it with `metadata.name=<node>`); leases and CSINodes only its own
name. Anything else is judged by the static node rules (upstream's NodeRules, our bootstrap
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
from .selector_attributes import required_value

__all__ = ["NodeAuthorizer", "node_name"]

NODES_GROUP = "system:nodes"
NODE_PREFIX = "system:node:"
NODE_LEASE_NAMESPACE = "kube-node-lease"
# a PersistentVolume source's Secret references (upstream's VisitPVSecretNames), {name, namespace}
PV_CSI_SECRET_REFS = ("controllerPublishSecretRef", "nodeStageSecretRef", "nodePublishSecretRef",
                      "controllerExpandSecretRef", "nodeExpandSecretRef")


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


def _claim_names(pod: dict[str, Any]) -> Iterator[str]:
    """The ResourceClaims a pod uses: named directly, or generated from a template (then
    named in its status once made), as upstream's resourceclaim.Name."""
    generated = {s.get("name"): s.get("resourceClaimName")
                 for s in (pod.get("status") or {}).get("resourceClaimStatuses") or []}
    for c in (pod.get("spec") or {}).get("resourceClaims") or []:
        name = c.get("resourceClaimName") or (generated.get(c.get("name")) if c.get("resourceClaimTemplateName")
                                              else None)
        if name:
            yield name


def _pv_secrets(pv: dict[str, Any]) -> Iterator[tuple[str, str]]:
    """(namespace, name) of the Secrets a PersistentVolume's source names."""
    spec = pv.get("spec") or {}
    claim_ns = (spec.get("claimRef") or {}).get("namespace", "")
    csi = spec.get("csi") or {}
    for key in PV_CSI_SECRET_REFS:
        ref = csi.get(key)
        if isinstance(ref, dict) and ref.get("name"):
            yield ref.get("namespace", ""), ref["name"]
    for driver in ("cephfs", "flexVolume", "iscsi", "rbd", "scaleIO", "storageos"):
        ref = (spec.get(driver) or {}).get("secretRef")
        if isinstance(ref, dict) and ref.get("name"):
            # flexVolume's and scaleIO's refs without a namespace name the claim's, as upstream
            yield ref.get("namespace") or claim_ns, ref["name"]
    azure = spec.get("azureFile") or {}
    if azure.get("secretName"):
        yield azure.get("secretNamespace") or "default", azure["secretName"]


class NodeAuthorizer:
    """authorize(user, attrs) -> (allowed, reason); not allowed means no opinion."""

    def __init__(self, pods_in: Callable[[str | None], Iterable[dict[str, Any]]],
                 get: Callable[[str, str, str | None, str], dict[str, Any] | None],
                 node_rules: list[dict[str, Any]]) -> None:
        self.pods_in = pods_in  # namespace (None: all) -> pods, from the watch cache
        self.get = get  # (group, resource, namespace, name) -> object, from the watch cache
        self.node_rules = node_rules

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> tuple[bool, str]:
        node = node_name(user)
        if node is None:
            return False, ""
        if not node:
            return False, f'unknown node for user "{user.name}"'
        if attrs.resource_request:
            judge = self._JUDGES.get((attrs.api_group, attrs.resource))
            if judge is not None:
                return judge(self, node, attrs)
        if any(rule_allows(attrs, r) for r in self.node_rules):
            return True, ""
        return False, ""

    # ---- one judge per subdivided resource, as upstream's switch ---------------------------
    def _read_namespaced(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.verb not in ("get", "list", "watch"):
            return False, "can only read resources of this type"
        if attrs.subresource:
            return False, "cannot read subresource"
        if not attrs.namespace:
            return False, "can only read namespaced object of this type"
        return self._related(node, attrs)

    def _get_only(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.verb != "get":
            return False, "can only get individual resources of this type"
        if attrs.subresource:
            return False, "cannot get subresource"
        return self._related(node, attrs)

    def _pvc(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.subresource != "status":
            return self._get_only(node, attrs)
        if attrs.verb not in ("update", "patch"):
            return False, "can only get/update/patch this type"
        return self._related(node, attrs)

    def _token(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.verb != "create" or not attrs.name:
            return False, "can only create tokens for individual service accounts"
        if attrs.subresource != "token":
            return False, "can only create token subresource of serviceaccount"
        return self._related(node, attrs)

    def _lease(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return False, "can only get, create, update, patch, or delete a node lease"
        if attrs.namespace != NODE_LEASE_NAMESPACE:
            return False, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace'
        # create names nothing the authorizer sees: NodeRestriction checks it
        if attrs.verb != "create" and attrs.name != node:
            return False, "can only access node lease with the same name as the requesting node"
        return True, ""

    def _csinode(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.verb not in ("get", "create", "update", "patch", "delete"):
            return False, "can only get, create, update, patch, or delete a CSINode"
        if attrs.subresource:
            return False, "cannot authorize CSINode subresources"
        if attrs.verb != "create" and attrs.name != node:
            return False, "can only access CSINode with the same name as the requesting node"
        return True, ""

    def _resource_slice(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if attrs.subresource:
            return False, "cannot authorize ResourceSlice subresources"
        if attrs.verb == "create":
            return True, ""  # NodeRestriction checks spec.nodeName on create
        if attrs.verb in ("get", "update", "patch", "delete"):
            return self._related(node, attrs)
        if attrs.verb in ("watch", "list", "deletecollection"):
            if required_value(attrs.field_selector, "spec.nodeName") == node:
                return True, ""
            return False, "can only list/watch/deletecollection resourceslices with nodeName field selector"
        return False, ("only the following verbs are allowed for a ResourceSlice: get, watch, list, create, update, "
                       "patch, delete, deletecollection")

    def _node(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if not attrs.subresource:
            if attrs.verb in ("create", "update", "patch"):
                return True, ""  # NodeRestriction limits writes to its own Node
            if attrs.verb in ("get", "list", "watch"):
                # by name, not through pods, so a kubelet can look for its Node before creating it;
                # a list or watch names one with its metadata.name field selector (request info)
                if attrs.name == node:
                    return True, ""
                if not attrs.name:
                    return False, f"node '{node}' cannot read all nodes, only its own Node object"
                return False, f"node '{node}' cannot read '{attrs.name}', only its own Node object"
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return True, ""
        return False, ""

    def _pod(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if not attrs.subresource:
            if attrs.verb == "get":
                return self._get_only(node, attrs)
            if attrs.verb in ("list", "watch"):
                if required_value(attrs.field_selector, "spec.nodeName") == node:
                    return True, ""
                if attrs.name:
                    return self._related(node, attrs)
                return False, "can only list/watch pods with spec.nodeName field selector"
            if attrs.verb in ("create", "delete"):
                return True, ""  # mirror pods; NodeRestriction limits them to its own
        elif attrs.subresource == "status" and attrs.verb in ("update", "patch"):
            return True, ""  # NodeRestriction: only its own pods' status
        elif attrs.subresource == "eviction" and attrs.verb == "create":
            return True, ""  # NodeRestriction: only its own pods
        return False, ""

    _JUDGES: dict[tuple[str, str], Callable[[NodeAuthorizer, str, RequestAttributes], tuple[bool, str]]] = {
        ("", "secrets"): _read_namespaced,
        ("", "configmaps"): _read_namespaced,
        ("", "persistentvolumeclaims"): _pvc,
        ("", "persistentvolumes"): _get_only,
        ("resource.k8s.io", "resourceclaims"): _get_only,
        ("storage.k8s.io", "volumeattachments"): _get_only,
        ("", "serviceaccounts"): _token,
        ("coordination.k8s.io", "leases"): _lease,
        ("storage.k8s.io", "csinodes"): _csinode,
        ("resource.k8s.io", "resourceslices"): _resource_slice,
        ("", "nodes"): _node,
        ("", "pods"): _pod,
    }

    # ---- the graph: paths from an object to the node, walked over the watch cache ----------
    def _bound_pods(self, node: str, namespace: str | None) -> Iterator[dict[str, Any]]:
        return (p for p in self.pods_in(namespace) if (p.get("spec") or {}).get("nodeName") == node)

    def _node_pvs(self, node: str) -> Iterator[dict[str, Any]]:
        """PersistentVolumes bound to a claim of a pod on the node."""
        for pod in self._bound_pods(node, None):
            ns = (pod.get("metadata") or {}).get("namespace", "")
            for claim in _refs(pod, "persistentvolumeclaims"):
                pvc = self.get("", "persistentvolumeclaims", ns, claim)
                pv_name = ((pvc or {}).get("spec") or {}).get("volumeName")
                pv = self.get("", "persistentvolumes", None, pv_name) if pv_name else None
                if pv is not None:
                    yield pv

    def _related(self, node: str, attrs: RequestAttributes) -> tuple[bool, str]:
        if not attrs.name:
            return False, "No Object name found"
        if self._has_path(node, attrs.api_group, attrs.resource, attrs.namespace, attrs.name):
            return True, ""
        return False, f"no relationship found between node '{node}' and this object"

    def _has_path(self, node: str, group: str, res: str, ns: str, name: str) -> bool:
        if res == "pods":
            return any((p.get("metadata") or {}).get("name") == name for p in self._bound_pods(node, ns))
        if res == "serviceaccounts":
            return any((p.get("spec") or {}).get("serviceAccountName") == name for p in self._bound_pods(node, ns))
        if res == "resourceclaims":
            return any(name in _claim_names(p) for p in self._bound_pods(node, ns))
        if res in ("volumeattachments", "resourceslices"):
            obj = self.get(group, res, None, name)
            return obj is not None and (obj.get("spec") or {}).get("nodeName") == node
        if res == "persistentvolumes":
            return any((pv.get("metadata") or {}).get("name") == name for pv in self._node_pvs(node))
        if any(name in _refs(p, res) for p in self._bound_pods(node, ns)):
            return True
        # node <- pod <- pvc <- pv <- secret
        return res == "secrets" and any((ns, name) in set(_pv_secrets(pv)) for pv in self._node_pvs(node))
