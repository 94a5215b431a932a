"""RBAC escalation prevention, as upstream's policy-based RBAC storage (pkg/registry/rbac/*/policybased
and escalation_check.go): nobody grants through RBAC what they do not hold themselves.

* Roles and ClusterRoles: a create or update is refused unless the requester's own rules (in the
  role's namespace; cluster-wide for ClusterRoles) cover every rule of the role, or the requester
  may `escalate` roles/clusterroles. Setting (or changing, or dropping) an aggregationRule needs
  full authority (`*` on everything), since aggregation can gather any rule.
* RoleBindings and ClusterRoleBindings: refused unless the requester may `bind` the referenced
  role (by name, in the binding's namespace), or already holds every rule of that role.
* Members of system:masters skip the check (upstream's EscalationAllowed), and so do the server's
  own writes (no user: the bootstrap policy); a write that only changes finalizers or
  ownerReferences is not checked (the garbage collector's).

It runs as the last mutating admission step, so every write path (POST, PUT, every PATCH kind,
server-side apply, dry runs) passes it before validation, where upstream's storage wrapper sits.
"""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from .authn import SYSTEM_PRIVILEGED_GROUP, UserInfo
from .authz import RBAC_GROUP, RBACAuthorizer, RequestAttributes
from .rbac_validation import covers, escalation_message
from .rest import RequestContext, RestStorage

__all__ = ["EscalationCheck", "FULL_AUTHORITY"]

ROLE_KINDS = frozenset({"Role", "ClusterRole"})
BINDING_KINDS = frozenset({"RoleBinding", "ClusterRoleBinding"})
# what an aggregationRule may gather: everything
FULL_AUTHORITY: tuple[dict[str, Any], ...] = (
    {"verbs": ["*"], "apiGroups": ["*"], "resources": ["*"]},
    {"verbs": ["*"], "nonResourceURLs": ["*"]},
)
_REF_RESOURCES = {"ClusterRole": "clusterroles", "Role": "roles"}


def _only_gc_fields(new: dict[str, Any], old: dict[str, Any] | None) -> bool:
    """Whether an update changes nothing but finalizers and ownerReferences (IsOnlyMutatingGCFields)."""
    if old is None:
        return False
    nmd, omd = dict(new.get("metadata") or {}), dict(old.get("metadata") or {})
    for md in (nmd, omd):
        for k in ("finalizers", "ownerReferences", "resourceVersion", "managedFields", "selfLink"):
            md.pop(k, None)
    return nmd == omd and {**new, "metadata": None} == {**old, "metadata": None}


def _has_aggregation_rule(role: dict[str, Any] | None) -> bool:
    return bool(((role or {}).get("aggregationRule") or {}).get("clusterRoleSelectors"))


class EscalationCheck:
    """The admission step; `admit` has the signature of rest.AdmissionFn."""

    def __init__(self, authorizer: RBACAuthorizer) -> None:
        self.authorizer = authorizer

    def admit(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
              old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group != RBAC_GROUP or op not in ("CREATE", "UPDATE"):
            return
        user: UserInfo | None = ctx.user
        if user is None or SYSTEM_PRIVILEGED_GROUP in user.groups:
            return
        if op == "UPDATE" and _only_gc_fields(obj, old):
            return
        md = obj.get("metadata") or {}
        namespace, name = str(md.get("namespace") or "") if res.namespaced else "", str(md.get("name") or "")
        if res.kind in ROLE_KINDS:
            self._check_role(res, namespace, name, obj, old, ctx)
        elif res.kind in BINDING_KINDS:
            self._check_binding(res, namespace, name, obj, user)

    # ---- roles ----------------------------------------------------------------------------
    def _check_role(self, res: Resource, namespace: str, name: str, role: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        user: UserInfo = ctx.user
        # RoleEscalationAuthorized: the request's own name, so a POST (no name in its URL) matches
        # no resourceNames restriction
        escalate = RequestAttributes(verb="escalate", api_group=res.group, resource=res.resource,
                                     name="" if ctx.verb == "create" else name, namespace=namespace)
        if self.authorizer.authorize(user, escalate)[0]:
            return
        owner_rules, errors = self.authorizer.rules_for(user, namespace, storage=True)
        self._confirm(res, name, user, owner_rules, errors, role.get("rules") or [])
        if res.kind == "ClusterRole" and (_has_aggregation_rule(role) or _has_aggregation_rule(old)):
            if not covers(owner_rules, FULL_AUTHORITY)[0]:
                raise E.new_forbidden(res.resource, name, "must have cluster-admin privileges to use the aggregationRule",
                                      res.group)

    # ---- bindings -------------------------------------------------------------------------
    def _check_binding(self, res: Resource, namespace: str, name: str, binding: dict[str, Any],
                       user: UserInfo) -> None:
        ref = binding.get("roleRef") or {}
        ref_resource = _REF_RESOURCES.get(str(ref.get("kind") or ""))
        if ref_resource is not None:
            # BindingAuthorized: `bind` on the referenced role, in the binding's namespace
            bind = RequestAttributes(verb="bind", api_group=str(ref.get("apiGroup") or ""), resource=ref_resource,
                                     name=str(ref.get("name") or ""), namespace=namespace)
            if self.authorizer.authorize(user, bind)[0]:
                return
        try:
            rules = self.authorizer.role_reference_rules(ref, namespace, storage=True)
        except LookupError as e:
            raise E.new_forbidden(res.resource, name, str(e), res.group) from None
        owner_rules, errors = self.authorizer.rules_for(user, namespace, storage=True)
        self._confirm(res, name, user, owner_rules, errors, rules)

    @staticmethod
    def _confirm(res: Resource, name: str, user: UserInfo, owner_rules: list[dict[str, Any]], errors: list[str],
                 rules: list[dict[str, Any]]) -> None:
        """ConfirmNoEscalation: 403 naming every permission the requester lacks."""
        ok, missing = covers(owner_rules, rules)
        if not ok:
            raise E.new_forbidden(res.resource, name, escalation_message(user.name, user.groups, missing, errors),
                                  res.group)
