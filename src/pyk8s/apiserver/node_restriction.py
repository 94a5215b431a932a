"""Upstream's NodeRestriction admission plugin, for writes by kubelets (`system:node:<name>`).

A kubelet may create only mirror pods bound to itself, update the status only of pods bound
to itself, and create or modify only its own Node, without touching labels under
`node-restriction.kubernetes.io/`. Errors are upstream's admission.NewForbidden texts.
Enabled with `--enable-admission-plugins=NodeRestriction` (upstream's default plugin set
does not include it either; kubeadm enables it).
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from .node_authorizer import node_name

__all__ = ["admit", "enabled", "admit_token_request"]

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
RESTRICTED_LABEL_DOMAIN = "node-restriction.kubernetes.io"


def _forbidden(res: Resource, obj: dict[str, Any], msg: str) -> E.StatusError:
    return E.new_forbidden(res.resource, (obj.get("metadata") or {}).get("name", ""), msg, res.group)


def _restricted(labels: dict[str, Any] | None) -> dict[str, Any]:
    out = {}
    for k, v in (labels or {}).items():
        prefix = k.split("/", 1)[0] if "/" in k else ""
        if prefix == RESTRICTED_LABEL_DOMAIN or prefix.endswith("." + RESTRICTED_LABEL_DOMAIN):
            out[k] = v
    return out


def admit(rest: Any, res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None, ctx: Any) -> None:
    user = getattr(ctx, "user", None)
    node = node_name(user) if user is not None else None
    if node is None:
        return
    kind = res.group_kind
    if kind == ("", "Pod"):
        _admit_pod(res, op, obj, old, ctx.subresource, node)
    elif kind == ("", "Node"):
        _admit_node(res, op, obj, old, node)


def _admit_pod(res: Resource, op: str, pod: dict[str, Any], old: dict[str, Any] | None, sub: str, node: str) -> None:
    if sub == "status":
        bound = ((old or pod).get("spec") or {}).get("nodeName")
        if bound != node:
            raise _forbidden(res, pod, f'node "{node}" can only update pod status for pods with spec.nodeName set to itself')
        return
    if sub:
        return
    if op != "CREATE":
        raise _forbidden(res, pod, f'unexpected operation "{op}", node "{node}" can only create and delete mirror pods')
    if MIRROR_ANNOTATION not in ((pod.get("metadata") or {}).get("annotations") or {}):
        raise _forbidden(res, pod, f'pod does not have "{MIRROR_ANNOTATION}" annotation, node "{node}" can only '
                                   f"create mirror pods")
    if (pod.get("spec") or {}).get("nodeName") != node:
        raise _forbidden(res, pod, f'node "{node}" can only create pods with spec.nodeName set to itself')


def _admit_node(res: Resource, op: str, obj: dict[str, Any], old: dict[str, Any] | None, node: str) -> None:
    name = (obj.get("metadata") or {}).get("name", "")
    if name != node:
        raise _forbidden(res, obj, f'node "{node}" is not allowed to modify node "{name}"')
    new_labels = _restricted((obj.get("metadata") or {}).get("labels"))
    if op == "CREATE":
        if new_labels:
            raise _forbidden(res, obj, "is not allowed to set the following labels: " + ", ".join(sorted(new_labels)))
        return
    old_labels = _restricted(((old or {}).get("metadata") or {}).get("labels"))
    changed = sorted(k for k in set(new_labels) | set(old_labels) if new_labels.get(k) != old_labels.get(k))
    if changed:
        raise _forbidden(res, obj, "is not allowed to modify labels: " + ", ".join(changed))


def enabled(rest: Any) -> bool:
    """Whether the plugin is in the server's admission chain (--enable-admission-plugins=NodeRestriction)."""
    return admit in rest.mutating


def admit_token_request(user: Any, ns: str | None, sa_name: str, tr: dict[str, Any],
                        pod: dict[str, Any] | None) -> None:
    """Upstream's admitServiceAccount: a kubelet's TokenRequest is bound to a pod (by UID) scheduled on it.

    `pod` is the live pod the request's boundObjectRef names (None when it names none or none exists).
    """
    node = node_name(user) if user is not None else None
    if node is None:
        return
    ref = (tr.get("spec") or {}).get("boundObjectRef") or {}

    def forbidden(msg: str) -> E.StatusError:
        return E.new_forbidden("serviceaccounts", sa_name, msg)

    if ref.get("apiVersion") != "v1" or ref.get("kind") != "Pod" or not ref.get("name"):
        raise forbidden("node requested token not bound to a pod")
    if not ref.get("uid"):
        raise forbidden("node requested token with a pod binding without a uid")
    if pod is None:
        raise E.new_not_found("pods", str(ref["name"]))
    if ref["uid"] != pod["metadata"].get("uid"):
        raise forbidden(f"the UID in the bound object reference ({ref['uid']}) does not match the UID in record. "
                        "The object might have been deleted and then recreated")
    if (pod.get("spec") or {}).get("nodeName") != node:
        raise forbidden("node requested token bound to a pod scheduled on a different node")
