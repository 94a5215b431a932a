"""CSR approving controller: approves kubelet client CSRs that their requester may have approved.

As upstream's csrapproving (pkg/controller/certificates/approver/sarapprove.go): a pending CSR
for `kubernetes.io/kube-apiserver-client-kubelet` that the signer would accept is approved
(reason AutoApproved) when a SubjectAccessReview for its requester allows `create` on
`certificatesigningrequests/selfnodeclient` (a node renewing its own certificate: the requester
is the certificate's CN) or `certificatesigningrequests/nodeclient` (a bootstrap identity asking
for a node's first one). Who holds those permissions is the cluster's RBAC; kubeadm binds them to
system:nodes and to its bootstrap-token group. A `kubernetes.io/kubelet-serving` CSR in which a node names
only itself is approved too (csrapproving_serving.py), which upstream leaves to the admin.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from cryptography import x509

from ..api.errors import StatusError
from .base import GVRS, Controller
from .csrapproving_serving import MESSAGE as SERVING_MESSAGE
from .csrapproving_serving import serving_names_are_nodes
from .csrsigning import KUBELET_CLIENT, KUBELET_SERVING, signer_validation_error, subject_common_name

__all__ = ["CSRApprovingController", "RECOGNIZERS"]

SAR = ("authorization.k8s.io", "v1", "subjectaccessreviews")

# (subresource the requester needs `create` on, whether the requester must be the CN, message)
RECOGNIZERS: tuple[tuple[str, bool, str], ...] = (
    ("selfnodeclient", True, "Auto approving self kubelet client certificate after SubjectAccessReview."),
    ("nodeclient", False, "Auto approving kubelet client certificate after SubjectAccessReview."),
)


class CSRApprovingController(Controller):
    name = "csrapproving"
    component = "csrapproving-controller"

    def setup(self) -> None:
        self.csrs = self.ctx.informer("certificatesigningrequests")
        self.csrs.add_handlers(on_add=self.enqueue, on_update=lambda old, new: self.enqueue(new))
        self.nodes = self.ctx.informer("nodes")  # kubelet-serving CSRs are checked against the Node's addresses
        self.nodes.add_handlers(on_add=self._node_changed, on_update=lambda old, new: self._node_changed(new))

    def _node_changed(self, node: dict[str, Any]) -> None:
        """A node's addresses may arrive after its serving CSR: look at its pending ones again."""
        user = "system:node:" + str((node.get("metadata") or {}).get("name") or "")
        for csr in self.csrs.list():
            spec = csr.get("spec") or {}
            if spec.get("signerName") == KUBELET_SERVING and spec.get("username") == user \
                    and not (csr.get("status") or {}).get("conditions"):
                self.enqueue(csr)

    async def _allowed(self, spec: dict[str, Any], subresource: str) -> bool:
        review = {"apiVersion": "authorization.k8s.io/v1", "kind": "SubjectAccessReview", "spec": {
            "user": spec.get("username", ""), "uid": spec.get("uid", ""), "groups": spec.get("groups") or [],
            "extra": spec.get("extra") or {},
            "resourceAttributes": {"group": "certificates.k8s.io", "resource": "certificatesigningrequests",
                                   "verb": "create", "subresource": subresource, "version": "*"}}}
        out = await self.client.create(SAR, review)
        return bool((out.get("status") or {}).get("allowed"))

    async def _approve(self, csr: dict[str, Any], message: str) -> None:
        status = csr.get("status") or {}
        conds = list(status.get("conditions") or []) + [
            {"type": "Approved", "status": "True", "reason": "AutoApproved", "message": message}]
        try:
            await self.client.update(GVRS["certificatesigningrequests"],
                                     {**csr, "status": {**status, "conditions": conds}}, sub="approval")
        except StatusError as e:
            if e.code != 404:
                raise

    async def sync(self, key: str) -> None:
        csr = self.csrs.get(key)
        if csr is None:
            return
        spec, status = csr.get("spec") or {}, csr.get("status") or {}
        if status.get("certificate") or spec.get("signerName") not in (KUBELET_CLIENT, KUBELET_SERVING):
            return
        if any(c.get("type") in ("Approved", "Denied") for c in status.get("conditions") or []):
            return
        try:
            req = x509.load_pem_x509_csr(base64.b64decode(spec.get("request") or "", validate=True))
        except (binascii.Error, ValueError) as e:
            raise ValueError(f"unable to parse csr {key!r}: {e}") from None
        if signer_validation_error(spec["signerName"], req, list(spec.get("usages") or [])) is not None:
            return  # not a node client certificate: left to people (and the signer's Failed condition)
        if spec["signerName"] == KUBELET_SERVING:
            node = self.nodes.get(str(spec.get("username") or "").removeprefix("system:node:"))
            if serving_names_are_nodes(spec, req, node):
                await self._approve(csr, SERVING_MESSAGE)
            return  # anything else is left to people, as upstream leaves every serving CSR
        tried: list[str] = []
        for subresource, must_be_self, message in RECOGNIZERS:
            if must_be_self and spec.get("username") != subject_common_name(req):
                continue
            tried.append(subresource)
            if await self._allowed(spec, subresource):
                await self._approve(csr, message)
                return
        # as upstream: retried with backoff, so a permission granted later still approves it
        raise PermissionError(f"recognized csr {key!r} as [{' '.join(tried)}] but subject access review was not "
                              "approved")
