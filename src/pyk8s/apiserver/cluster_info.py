"""What kubeadm's bootstrap-token phase sets up, done by `pyk8s server` at every start:

* kube-public/cluster-info: a kubeconfig with the API server's URL and the cluster CA (no credentials),
  which the bootstrapsigner controller signs with each bootstrap token and anyone may read
  (Role/RoleBinding kubeadm:bootstrap-signer-clusterinfo for system:anonymous);
* the group of kubeadm's node tokens (system:bootstrappers:kubeadm:default-node-token) may create CSRs
  (system:node-bootstrapper) that the csrapproving controller auto-approves (nodeclient), and
  system:nodes may renew their own client certificates (selfnodeclient).

`pyk8s server --disable node-bootstrap` leaves all of this out, with the two token controllers.
"""

from __future__ import annotations

import logging
from typing import Any

import yaml

from .. import bootstraptoken as bt
from ..api import errors as E
from .bootstrap import _ensure
from .rest import RequestContext

log = logging.getLogger("pyk8s.apiserver")

RBAC = "rbac.authorization.k8s.io"
CLUSTER_INFO_ROLE = "kubeadm:bootstrap-signer-clusterinfo"


def cluster_info_kubeconfig(server_url: str, ca_b64: str) -> str:
    """The published kubeconfig, shaped as kubeadm's (one unnamed cluster, nothing else)."""
    doc: dict[str, Any] = {"apiVersion": "v1", "clusters": [{"cluster": {"certificate-authority-data": ca_b64, "server": server_url},
                                             "name": ""}],
           "contexts": None, "current-context": "", "kind": "Config", "preferences": {}, "users": None}
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False)


def _crb(name: str, role: str, kind: str, subject: str) -> dict[str, Any]:
    return {"apiVersion": f"{RBAC}/v1", "kind": "ClusterRoleBinding", "metadata": {"name": name},
            "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": role},
            "subjects": [{"apiGroup": RBAC, "kind": kind, "name": subject}]}


def policy() -> list[tuple[str, dict[str, Any]]]:
    """(plural, object) of kubeadm's bootstrap RBAC."""
    role = {"apiVersion": f"{RBAC}/v1", "kind": "Role",
            "metadata": {"name": CLUSTER_INFO_ROLE, "namespace": bt.CLUSTER_INFO_NAMESPACE},
            "rules": [{"apiGroups": [""], "resources": ["configmaps"], "verbs": ["get"],
                       "resourceNames": [bt.CLUSTER_INFO]}]}
    binding = {"apiVersion": f"{RBAC}/v1", "kind": "RoleBinding",
               "metadata": {"name": CLUSTER_INFO_ROLE, "namespace": bt.CLUSTER_INFO_NAMESPACE},
               "roleRef": {"apiGroup": RBAC, "kind": "Role", "name": CLUSTER_INFO_ROLE},
               "subjects": [{"apiGroup": RBAC, "kind": "User", "name": "system:anonymous"}]}
    csr = "system:certificates.k8s.io:certificatesigningrequests:"
    return [("roles", role), ("rolebindings", binding),
            ("clusterrolebindings", _crb("kubeadm:kubelet-bootstrap", "system:node-bootstrapper", "Group",
                                         bt.KUBEADM_GROUP)),
            ("clusterrolebindings", _crb("kubeadm:node-autoapprove-bootstrap", csr + "nodeclient", "Group",
                                         bt.KUBEADM_GROUP)),
            ("clusterrolebindings", _crb("kubeadm:node-autoapprove-certificate-rotation", csr + "selfnodeclient",
                                         "Group", "system:nodes"))]


async def publish(server: Any, server_url: str) -> None:
    """Create or refresh cluster-info (keeping the signer's entries) and the bootstrap RBAC."""
    import base64

    for plural, obj in policy():
        try:
            await _ensure(server, RBAC, plural, obj, obj["metadata"].get("namespace"))
        except E.StatusError as e:
            log.error("bootstrap policy %s %s: %s", obj["kind"], obj["metadata"]["name"], e.message)
    content = cluster_info_kubeconfig(server_url, base64.b64encode(server.pki.ca_cert_path.read_bytes()).decode())
    res = server.registry.get("", "v1", "configmaps")
    ctx = RequestContext(field_manager="kube-apiserver")
    cur = await server.rest.get_current(res, bt.CLUSTER_INFO_NAMESPACE, bt.CLUSTER_INFO)
    if cur is None:
        await _ensure(server, "", "configmaps", {
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": {"name": bt.CLUSTER_INFO, "namespace": bt.CLUSTER_INFO_NAMESPACE},
            "data": {bt.KUBECONFIG_KEY: content}}, bt.CLUSTER_INFO_NAMESPACE)
    elif (cur.get("data") or {}).get(bt.KUBECONFIG_KEY) != content:
        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            assert c is not None
            c["data"] = {**(c.get("data") or {}), bt.KUBECONFIG_KEY: content}
            return c

        await server.rest.update(res, bt.CLUSTER_INFO_NAMESPACE, bt.CLUSTER_INFO, mutate, ctx, retry_on_conflict=True)
