"""Upstream's NodeRestriction admission plugin, for writes by kubelets (`system:node:<name>`).

A kubelet may create only mirror pods bound to itself (owned by its own Node as controller,
referencing no service account, Secret, ConfigMap, claim or ClusterTrustBundle), update the
status only of pods bound to itself, delete and evict only pods bound to itself, and create
or modify only its own Node, without touching labels under `node-restriction.kubernetes.io/`,
and create only its own node Lease and CSINode.
Errors are upstream's admission.NewForbidden texts.
Enabled with `--enable-admission-plugins=NodeRestriction` (upstream's default plugin set
does not include it either; kubeadm enables it).
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from .node_authorizer import NODE_LEASE_NAMESPACE, _refs, node_name

__all__ = ["admit", "admit_other"]

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"


def _forbidden(res: Resource, obj: dict[str, Any], msg: str) -> E.StatusError:
    return E.new_forbidden(res.resource, (obj.get("metadata") or {}).get("name", ""), msg, res.group)


# labels a kubelet may set on its own Node (k8s.io/kubelet's IsKubeletLabel)
KUBELET_LABELS = frozenset((
    "kubernetes.io/hostname", "topology.kubernetes.io/zone", "topology.kubernetes.io/region",
    "failure-domain.beta.kubernetes.io/zone", "failure-domain.beta.kubernetes.io/region",
    "beta.kubernetes.io/instance-type", "node.kubernetes.io/instance-type", "kubernetes.io/os", "kubernetes.io/arch",
    "beta.kubernetes.io/os", "beta.kubernetes.io/arch"))
KUBELET_LABEL_NAMESPACES = ("kubelet.kubernetes.io", "node.kubernetes.io")


def _in(namespace: str, domain: str) -> bool:
    return namespace == domain or namespace.endswith("." + domain)


def _forbidden_labels(new: dict[str, Any] | None, old: dict[str, Any] | None) -> list[str]:
    """Changed labels a node may not set: node-restriction.kubernetes.io/ ones, and kubernetes.io
    and k8s.io ones that are not kubelet labels (upstream's getForbiddenLabels)."""
    new, old = new or {}, old or {}
    out = []
    for key in set(new) | set(old):
        if key in new and key in old and new[key] == old[key]:
            continue
        ns = key.split("/", 1)[0] if "/" in key else ""
        kubelet = key in KUBELET_LABELS or any(_in(ns, d) for d in KUBELET_LABEL_NAMESPACES)
        if _in(ns, RESTRICTED_LABEL_DOMAIN) or ((_in(ns, "kubernetes.io") or _in(ns, "k8s.io")) and not kubelet):
            out.append(key)
    return sorted(out)


def _node_of(res: Resource, obj: dict[str, Any], ctx: Any) -> str | None:
    """The node a request comes from; None for anyone else. A node identity without a name may
    write nothing."""
    user = getattr(ctx, "user", None)
    node = node_name(user) if user is not None else None
    if node == "":
        raise _forbidden(res, obj, f'could not determine node from user "{getattr(user, "name", "")}"')
    return node


def admit(rest: Any, res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None, ctx: Any) -> Any:
    node = _node_of(res, obj, ctx)
    if node is None:
        return None
    kind = res.group_kind
    if kind == ("", "Pod"):
        _admit_pod(res, op, obj, old, ctx.subresource, node)
        if op == "CREATE" and not ctx.subresource:
            return _owner_is_this_node(rest, res, obj, node)
    elif kind == ("", "Node"):
        _admit_node(res, op, obj, old, node)
    elif kind == ("coordination.k8s.io", "Lease"):
        _admit_own_name(res, op, obj, node, ctx.subresource)
    elif kind == ("storage.k8s.io", "CSINode"):
        _admit_own_name(res, op, obj, node, ctx.subresource)
    return None


def _admit_own_name(res: Resource, op: str, obj: dict[str, Any], node: str, sub: str) -> None:
    """A node lease (in kube-node-lease) or a CSINode: only the node's own name. The authorizer
    checks the name of every other verb; a create's name is only in its body."""
    md = obj.get("metadata") or {}
    what = "node lease" if res.kind == "Lease" else "CSINode"
    if res.kind == "Lease" and md.get("namespace") != NODE_LEASE_NAMESPACE:
        raise _forbidden(res, obj, f'can only access leases in the "{NODE_LEASE_NAMESPACE}" system namespace')
    if md.get("name") != node:
        raise _forbidden(res, obj, f"can only access {what} with the same name as the requesting node")


async def admit_other(rest: Any, res: Resource, op: str, namespace: str | None, name: str, obj: dict[str, Any],
                      ctx: Any) -> None:
    """A pod's DELETE or eviction (obj: the stored pod), a service account token's CREATE (obj:
    the TokenRequest)."""
    node = _node_of(res, obj, ctx)
    if node is None:
        return
    if res.group_kind == ("", "ServiceAccount") and ctx.subresource == "token":
        await _admit_token(rest, res, namespace, name, obj, node)
        return
    if res.group_kind != ("", "Pod") or ((obj.get("spec") or {}).get("nodeName") or "") == node:
        return
    if ctx.subresource == "eviction":
        raise _forbidden(res, obj, f"node {node} can only evict pods with spec.nodeName set to itself")
    raise _forbidden(res, obj, f'node "{node}" can only delete pods with spec.nodeName set to itself')


async def _admit_token(rest: Any, res: Resource, namespace: str | None, name: str, tr: dict[str, Any],
                       node: str) -> None:
    """A kubelet's token must be bound to a pod that runs on it."""
    ref = (tr.get("spec") or {}).get("boundObjectRef") or {}
    if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
        raise E.new_forbidden(res.resource, name, "node requested token not bound to a pod")
    if not ref.get("uid"):
        raise E.new_forbidden(res.resource, name, "node requested token with a pod binding without a uid")
    pods = rest.registry.get("", "v1", "pods")
    pod = await rest.get_current(pods, namespace, ref["name"])
    if pod is None:
        raise E.new_not_found("pods", ref["name"])
    if ref["uid"] != pod["metadata"].get("uid"):
        raise E.new_forbidden(res.resource, name, f"the UID in the bound object reference ({ref['uid']}) does not "
                                                  "match the UID in record. The object might have been deleted and "
                                                  "then recreated")
    if (pod.get("spec") or {}).get("nodeName") != node:
        raise E.new_forbidden(res.resource, name, "node requested token bound to a pod scheduled on a different node")


def _admit_pod(res: Resource, op: str, pod: dict[str, Any], old: dict[str, Any] | None, sub: str, node: str) -> None:
    if sub == "status":
        bound = ((old or pod).get("spec") or {}).get("nodeName")
        if bound != node:
            raise _forbidden(res, pod, f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
        if old is not None and ((old.get("metadata") or {}).get("labels") or {}) != (
                (pod.get("metadata") or {}).get("labels") or {}):
            raise _forbidden(res, pod, f'node "{node}" cannot update labels through pod status')
        if old is not None and _claim_statuses(old) != _claim_statuses(pod):
            raise _forbidden(res, pod, f'node "{node}" cannot update resource claim statues')  # sic, upstream
        return
    if sub:
        raise _forbidden(res, pod, f"unexpected pod subresource \"{sub}\", only 'status' and 'eviction' are allowed")
    if op != "CREATE":
        raise _forbidden(res, pod, f'unexpected operation "{op}", node "{node}" can only create and delete mirror pods')
    _admit_mirror_pod(res, pod, node)


def _claim_statuses(pod: dict[str, Any]) -> list[tuple[Any, Any]]:
    return [(c.get("name"), c.get("resourceClaimName"))
            for c in (pod.get("status") or {}).get("resourceClaimStatuses") or []]


def _admit_mirror_pod(res: Resource, pod: dict[str, Any], node: str) -> None:
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    if MIRROR_ANNOTATION not in (md.get("annotations") or {}):
        raise _forbidden(res, pod, f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can only '
                                   f"create mirror pods")
    if spec.get("nodeName") != node:
        raise _forbidden(res, pod, f'node "{node}" can only create pods with spec.nodeName set to itself')
    owners = md.get("ownerReferences") or []
    if len(owners) > 1:
        raise _forbidden(res, pod, f'node "{node}" can only create pods with a single owner reference set to itself')
    if not owners:
        raise _forbidden(res, pod, f'node "{node}" can only create pods with an owner reference set to itself')
    owner = owners[0]
    if owner.get("apiVersion") != "v1" or owner.get("kind") != "Node" or owner.get("name") != node:
        raise _forbidden(res, pod, f'node "{node}" can only create pods with an owner reference set to itself')
    if not owner.get("controller"):
        raise _forbidden(res, pod, f'node "{node}" can only create pods with a controller owner reference set to '
                                   "itself")
    if owner.get("blockOwnerDeletion"):
        raise _forbidden(res, pod, f'node "{node}" must not set blockOwnerDeletion on an owner reference')
    # a mirror pod may reference no other API object: the node could read it through the pod otherwise
    if spec.get("serviceAccountName"):
        raise _forbidden(res, pod, f'node "{node}" can not create pods that reference a service account')
    for kind in ("secrets", "configmaps"):
        if any(True for _ in _refs(pod, kind)):
            raise _forbidden(res, pod, f'node "{node}" can not create pods that reference {kind}')
    vols = spec.get("volumes") or []
    if any(src.get("clusterTrustBundle") for v in vols for src in (v.get("projected") or {}).get("sources") or []):
        raise _forbidden(res, pod, f'node "{node}" can not create pods that reference clustertrustbundles')
    if any(v.get("persistentVolumeClaim") for v in vols):
        raise _forbidden(res, pod, f'node "{node}" can not create pods that reference persistentvolumeclaims')


async def _owner_is_this_node(rest: Any, res: Resource, pod: dict[str, Any], node: str) -> None:
    """A mirror pod's owner must be this Node as it is now, not one deleted and recreated."""
    nodes = rest.registry.get("", "v1", "nodes")
    cur = await rest.get_current(nodes, None, node)
    if cur is None:
        raise E.new_not_found("nodes", node)
    want = cur["metadata"].get("uid", "")
    got = ((pod.get("metadata") or {}).get("ownerReferences") or [{}])[0].get("uid", "")
    if got != want:
        raise _forbidden(res, pod, f"node {node} UID mismatch: expected {got} got {want}")


def _admit_node(res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None, node: str) -> None:
    name = (obj.get("metadata") or {}).get("name", "")
    if name != node:
        raise _forbidden(res, obj, f'node "{node}" is not allowed to modify node "{name}"')
    labels = (obj.get("metadata") or {}).get("labels")
    if op == "CREATE":
        if (obj.get("spec") or {}).get("configSource") is not None:
            raise _forbidden(res, obj, f'node "{node}" is not allowed to create pods with a non-nil configSource')
        if bad := _forbidden_labels(labels, None):
            raise _forbidden(res, obj, f'node "{node}" is not allowed to set the following labels: ' + ", ".join(bad))
        return
    spec, old_spec = obj.get("spec") or {}, (old or {}).get("spec") or {}
    if spec.get("configSource") is not None and spec.get("configSource") != old_spec.get("configSource"):
        raise _forbidden(res, obj, f'node "{node}" is not allowed to update configSource to a new non-nil '
                                   "configSource")
    # its own taints would let it steer workloads to itself, or keep them away
    if (spec.get("taints") or []) != (old_spec.get("taints") or []):
        raise _forbidden(res, obj, f'node "{node}" is not allowed to modify taints')
    if bad := _forbidden_labels(labels, ((old or {}).get("metadata") or {}).get("labels")):
        raise _forbidden(res, obj, "is not allowed to modify labels: " + ", ".join(bad))
