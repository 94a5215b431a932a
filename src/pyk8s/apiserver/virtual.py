"""Create-only virtual resources: reviews (authentication, authorization) and the bindings resource."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from ..api import errors as E
from ..api.resources import Resource
from . import appkeys
from .rest import RequestContext, deep_copy


async def create(h: Any, request: web.Request, res: Resource, ns: str | None, obj: dict[str, Any],
                 ctx: RequestContext) -> dict[str, Any]:
    app = request.app
    out = deep_copy(obj)
    out.setdefault("metadata", {}).setdefault("creationTimestamp", None)
    kind = res.kind
    user = ctx.user
    if kind == "Binding":
        from . import subresources

        name = (obj.get("metadata") or {}).get("name", "")
        await subresources.bind(h, ns, name, obj, ctx)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
    if kind == "SelfSubjectReview":
        out["status"] = {"userInfo": user.to_wire() if user else {}}
        return out
    if kind == "TokenReview":
        spec = obj.get("spec") or {}
        authn = app[appkeys.AUTHENTICATOR]
        try:
            u = authn.authenticate_token(spec.get("token", ""), spec.get("audiences") or None)
            out["status"] = {"authenticated": True, "user": u.to_wire(),
                             "audiences": spec.get("audiences") or [app[appkeys.API_AUDIENCE]]}
        except Exception as e:  # an invalid token is a review result, not an error
            out["status"] = {"user": {}, "error": str(getattr(e, "message", e))}
        return out
    if kind in ("SubjectAccessReview", "SelfSubjectAccessReview", "LocalSubjectAccessReview"):
        from .authn import UserInfo
        from .authz import RequestAttributes

        spec = obj.get("spec") or {}
        if kind == "SelfSubjectAccessReview":
            subject = user
        else:
            subject = UserInfo(name=spec.get("user", ""), uid=spec.get("uid", ""), groups=list(spec.get("groups") or []),
                               extra=dict(spec.get("extra") or {}))
        ra = spec.get("resourceAttributes")
        nra = spec.get("nonResourceAttributes")
        if kind == "LocalSubjectAccessReview" and ra is not None and ra.get("namespace", ns) != ns:
            raise E.new_bad_request("spec.resourceAttributes.namespace must match metadata.namespace")
        if ra is not None:
            attrs = RequestAttributes(verb=ra.get("verb", ""), api_group=ra.get("group", ""),
                                      resource=ra.get("resource", ""), subresource=ra.get("subresource", ""),
                                      name=ra.get("name", ""), namespace=ra.get("namespace", ns or ""),
                                      resource_request=True)
            raw = (ra.get("fieldSelector") or {}).get("rawSelector")
            if raw and attrs.verb in ("list", "watch"):  # as a request's (AuthorizeWithSelectors)
                attrs.field_selector = str(raw)
        elif nra is not None:
            attrs = RequestAttributes(verb=nra.get("verb", ""), path=nra.get("path", ""), resource_request=False)
        else:
            raise E.new_invalid(kind, "", [E.FieldError("spec.resourceAttributes", "Invalid", None,
                                                        "exactly one of nonResourceAttributes or resourceAttributes must be specified")],
                                "authorization.k8s.io")
        allowed, reason = app[appkeys.AUTHORIZER].authorize(subject, attrs)
        st: dict[str, Any] = {"allowed": bool(allowed)}
        if reason:
            st["reason"] = reason
        out["status"] = st
        return out
    if kind == "SelfSubjectRulesReview":
        ns_ = (obj.get("spec") or {}).get("namespace", "")
        rules, errors = app[appkeys.AUTHORIZER].rules_for(user, ns_)
        out["status"] = _rules_review_status(rules, errors)
        return out
    raise E.new_method_not_supported(res.resource, "create", res.group)


def _rules_review_status(rules: list[dict[str, Any]], errors: list[str]) -> dict[str, Any]:
    """SelfSubjectRulesReview status as upstream's RBAC RulesFor splits the rules: a rule naming
    resources is a resource rule, one naming URLs a non-resource rule (kubectl can-i --list
    prints both tables from these)."""
    resource_rules: list[dict[str, Any]] = []
    non_resource_rules: list[dict[str, Any]] = []
    for r in rules:
        if r.get("resources"):
            rr = {"verbs": list(r.get("verbs") or [])}
            for k in ("apiGroups", "resources", "resourceNames"):
                if r.get(k):
                    rr[k] = list(r[k])
            resource_rules.append(rr)
        if r.get("nonResourceURLs"):
            non_resource_rules.append({"verbs": list(r.get("verbs") or []), "nonResourceURLs": list(r["nonResourceURLs"])})
    st: dict[str, Any] = {"resourceRules": resource_rules, "nonResourceRules": non_resource_rules,
                          "incomplete": bool(errors)}
    if errors:
        st["evaluationError"] = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
    return st


# ---- readable virtual resources: componentstatuses -------------------------------------------

# as upstream's componentstatus REST: the scheduler, the controller manager and each etcd server, probed live
_COMPONENTS = ("scheduler", "controller-manager", "etcd-0")
COMPONENT_STATUS_WARNING = "v1 ComponentStatus is deprecated in v1.19+"


def _component_status(name: str) -> dict[str, Any]:
    # every component runs in this process (or reports through the API): healthy while we answer
    return {"kind": "ComponentStatus", "apiVersion": "v1", "metadata": {"name": name},
            "conditions": [{"type": "Healthy", "status": "True", "message": "ok"}]}


def readable(res: Resource) -> bool:
    """Whether GET on this virtual resource is served (rather than 405)."""
    return res.group == "" and res.resource == "componentstatuses"


def read(res: Resource, name: str | None) -> tuple[dict[str, Any], list[str]]:
    """(object or list, warnings) for GET on a readable virtual resource."""
    if name:
        if name not in _COMPONENTS:
            raise E.new_not_found(res.resource, name, res.group)
        return _component_status(name), [COMPONENT_STATUS_WARNING]
    return ({"kind": "ComponentStatusList", "apiVersion": "v1", "metadata": {},
             "items": [_component_status(n) for n in _COMPONENTS]}, [COMPONENT_STATUS_WARNING])
