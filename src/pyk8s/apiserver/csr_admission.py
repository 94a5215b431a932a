"""CertificateSigningRequests: upstream's registry strategy and its three admission plug-ins.

Strategy (pkg/registry/certificates/certificates/strategy.go):
* create: spec.username/uid/groups/extra are the requester's, whatever the client sent, and no
  status (a CSR cannot be created approved);
* update: the spec never changes; the main resource cannot write status; `/status` cannot
  change the Approved/Denied conditions; `/approval` changes only the conditions; condition
  timestamps are filled in (lastTransitionTime kept while a condition keeps its status).

Admission (plugin/pkg/admission/certificates):
* CertificateApproval: setting conditions through `/approval` needs `approve` on
  `signers` named by the CSR's signerName (or `<domain>/*`);
* CertificateSigning: writing status.certificate through `/status` needs `sign` on them;
* CertificateSubjectRestriction: no kube-apiserver-client CSR for the system:masters group.
"""

from __future__ import annotations

import base64
import binascii
import copy
from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from ..api.timefmt import now_rfc3339
from .authz import RequestAttributes
from .rest import RequestContext, RestStorage

__all__ = ["CSRAdmission", "CSR_KIND"]

CSR_KIND = ("certificates.k8s.io", "CertificateSigningRequest")
GROUP = "certificates.k8s.io"
KUBE_APISERVER_CLIENT = "kubernetes.io/kube-apiserver-client"


def _conditions(obj: dict[str, Any]) -> list[dict[str, Any]]:
    return [c for c in (obj.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]


def _set_conditions(obj: dict[str, Any], conds: list[dict[str, Any]]) -> None:
    status = obj.get("status")
    if not isinstance(status, dict):
        status = obj["status"] = {}
    if conds:
        status["conditions"] = conds
    else:
        status.pop("conditions", None)


def populate_condition_timestamps(new: dict[str, Any], old: dict[str, Any]) -> None:
    """lastUpdateTime now when unset; lastTransitionTime that of the old condition with the same
    type and status, else now."""
    now = now_rfc3339()
    olds = _conditions(old)
    for c in _conditions(new):
        if not c.get("lastUpdateTime"):
            c["lastUpdateTime"] = now
        if not c.get("lastTransitionTime"):
            prev = next((o.get("lastTransitionTime") for o in olds if o.get("type") == c.get("type")
                         and o.get("status") == c.get("status") and o.get("lastTransitionTime")), None)
            c["lastTransitionTime"] = prev or now


def _signer_allowed(authorizer: Any, user: Any, verb: str, signer: str) -> bool:
    """isAuthorizedForSignerName: the signer by name, or every signer of its domain."""
    for name in (signer, signer.split("/", 1)[0] + "/*"):
        attrs = RequestAttributes(verb=verb, api_group=GROUP, resource="signers", name=name)
        if authorizer.authorize(user, attrs)[0]:
            return True
    return False


def _request_organizations(csr: dict[str, Any]) -> list[str]:
    """The subject organizations of spec.request ([] when it does not parse: validation says why)."""
    from cryptography import x509
    from cryptography.x509.oid import NameOID

    raw = (csr.get("spec") or {}).get("request")
    if not isinstance(raw, str):
        return []
    try:
        pem = base64.b64decode(raw, validate=True)
        req = x509.load_pem_x509_csr(pem)
    except (binascii.Error, ValueError):
        return []
    return [str(a.value) for a in req.subject.get_attributes_for_oid(NameOID.ORGANIZATION_NAME)]


class CSRAdmission:
    """`prepare` is a mutating admission step (the strategy), `validate` a validating one."""

    def __init__(self, authorizer: Any) -> None:
        self.authorizer = authorizer

    def prepare(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != CSR_KIND:
            return
        if op == "CREATE":
            spec = obj.get("spec")
            if not isinstance(spec, dict):
                spec = obj["spec"] = {}
            for k in ("username", "uid", "groups", "extra"):
                spec.pop(k, None)
            if ctx.user is not None:
                spec.update(ctx.user.to_wire())  # username, uid, groups, extra: user.Info's fields
            obj.pop("status", None)
            return
        if op != "UPDATE" or old is None:
            return
        obj["spec"] = copy.deepcopy(old.get("spec"))
        sub = ctx.subresource
        if sub == "approval":
            # only the conditions change
            conds = _conditions(obj)
            status = copy.deepcopy(old.get("status") or {})
            obj["status"] = status
            _set_conditions(obj, conds)
        elif sub == "status":
            # approval is the approval subresource's: Approved/Denied stay as they were
            kept = [c for c in _conditions(obj) if c.get("type") not in ("Approved", "Denied")]
            kept += [copy.deepcopy(c) for c in _conditions(old) if c.get("type") in ("Approved", "Denied")]
            _set_conditions(obj, kept)
        elif not sub:
            if "status" in old:
                obj["status"] = copy.deepcopy(old["status"])
            else:
                obj.pop("status", None)
            return
        if not obj.get("status"):
            obj.pop("status", None)
        populate_condition_timestamps(obj, old)

    def validate(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                 old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != CSR_KIND or ctx.user is None:
            return
        name = str((obj.get("metadata") or {}).get("name") or "")
        signer = str((obj.get("spec") or {}).get("signerName") or "")
        if op == "CREATE":
            if signer == KUBE_APISERVER_CLIENT and "system:masters" in _request_organizations(obj):
                raise E.new_forbidden(res.resource, name, f"use of {KUBE_APISERVER_CLIENT} signer with "
                                      "system:masters group is not allowed", res.group)
            return
        if op != "UPDATE" or old is None:
            return
        if ctx.subresource == "approval":
            if not _signer_allowed(self.authorizer, ctx.user, "approve", signer):
                raise E.new_forbidden(res.resource, name,
                                      f'user not permitted to approve requests with signerName "{signer}"', res.group)
        elif ctx.subresource == "status":
            if (obj.get("status") or {}).get("certificate") == (old.get("status") or {}).get("certificate"):
                return
            if not _signer_allowed(self.authorizer, ctx.user, "sign", signer):
                raise E.new_forbidden(res.resource, name,
                                      f'user not permitted to sign requests with signerName "{signer}"', res.group)
