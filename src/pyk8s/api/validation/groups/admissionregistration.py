"""admissionregistration.k8s.io/v1 validation, as upstream's
pkg/apis/admissionregistration/validation: webhook configurations in full (names, rules,
client config, policies, review versions), ValidatingAdmissionPolicy and its binding in
their structural rules (CEL expressions are not compiled here).
"""

from __future__ import annotations

from typing import Any

from ...errors import FieldError
from ..field import child, duplicate, go_string_slice, index, invalid, not_supported, required
from ..meta import validate_label_selector, validate_object_meta, validate_object_meta_update
from ..names import is_dns1035_label, is_fully_qualified_name, name_is_dns_subdomain
from ._common import is_int, spec_of, validate_webhook_service, validate_webhook_url

__all__ = [
    "validate_validating_webhook_configuration", "validate_mutating_webhook_configuration",
    "validate_validating_admission_policy", "validate_validating_admission_policy_binding",
    "VALIDATORS", "UPDATE_VALIDATORS",
]

AR = "admissionregistration.k8s.io"
_OPERATIONS = ["*", "CONNECT", "CREATE", "DELETE", "UPDATE"]
_SCOPES = ["*", "Cluster", "Namespaced"]
_FAILURE_POLICIES = ["Fail", "Ignore"]
_MATCH_POLICIES = ["Equivalent", "Exact"]
_SIDE_EFFECTS = ["None", "NoneOnDryRun"]
_REINVOCATION = ["IfNeeded", "Never"]
_REVIEW_VERSIONS = ["v1", "v1beta1"]
_VALIDATION_ACTIONS = ["Audit", "Deny", "Warn"]


def _resources(resources: list[Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    if not resources:
        errs.append(required(path))
    with_wild_sub: set[str] = set()
    sub_with_wild_res: set[str] = set()
    double = single = plain = False
    for i, rs in enumerate(resources):
        if rs == "":
            errs.append(required(index(path, i)))
            continue
        double |= rs == "*/*"
        single |= rs == "*"
        if "/" not in rs:
            plain = rs != "*"
            continue
        res, sub = rs.split("/", 1)
        if res in with_wild_sub:
            errs.append(invalid(index(path, i), rs, f"if '{res}/*' is present, must not specify {rs}"))
        if sub in sub_with_wild_res:
            errs.append(invalid(index(path, i), rs, f"if '*/{sub}' is present, must not specify {rs}"))
        if sub == "*":
            with_wild_sub.add(res)
        if res == "*":
            sub_with_wild_res.add(sub)
    if len(resources) > 1 and double:
        errs.append(invalid(path, go_string_slice(resources), "if '*/*' is present, must not specify other resources"))
    if single and plain:
        errs.append(invalid(path, go_string_slice(resources),
                            "if '*' is present, must not specify other resources without subresources"))
    return errs


def _rule(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    groups, versions = rule.get("apiGroups") or [], rule.get("apiVersions") or []
    if not groups:
        errs.append(required(child(path, "apiGroups")))
    if len(groups) > 1 and "*" in groups:
        errs.append(invalid(child(path, "apiGroups"), go_string_slice(groups),
                            "if '*' is present, must not specify other API groups"))
    if not versions:
        errs.append(required(child(path, "apiVersions")))
    if len(versions) > 1 and "*" in versions:
        errs.append(invalid(child(path, "apiVersions"), go_string_slice(versions),
                            "if '*' is present, must not specify other API versions"))
    for i, v in enumerate(versions):
        if not v:
            errs.append(required(index(child(path, "apiVersions"), i)))
    errs += _resources(rule.get("resources") or [], child(path, "resources"))
    scope = rule.get("scope")
    if scope is not None and scope not in _SCOPES:
        errs.append(not_supported(child(path, "scope"), scope, _SCOPES))
    return errs


def _rule_with_operations(rule: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    ops = rule.get("operations") or []
    if not ops:
        errs.append(required(child(path, "operations")))
    if len(ops) > 1 and "*" in ops:
        errs.append(invalid(child(path, "operations"), go_string_slice(ops, "[]admissionregistration.OperationType"),
                            "if '*' is present, must not specify other operations"))
    for i, op in enumerate(ops):
        if op not in _OPERATIONS:
            errs.append(not_supported(index(child(path, "operations"), i), op, _OPERATIONS))
    return errs + _rule(rule, path)


def _client_config(cc: Any, path: str) -> list[FieldError]:
    cc = cc if isinstance(cc, dict) else {}
    url, svc = cc.get("url"), cc.get("service")
    if (url is None) == (svc is None):
        return [required(path, "exactly one of url or service is required")]
    if url is not None:
        return validate_webhook_url(child(path, "url"), url, True)
    return validate_webhook_service(child(path, "service"), svc.get("namespace") or "", svc.get("name") or "",
                                    svc.get("path"), svc.get("port", 443))


def _review_versions(versions: list[Any], path: str) -> list[FieldError]:
    if not versions:
        return [required(path, "must specify one of " + ", ".join(_REVIEW_VERSIONS))]
    errs: list[FieldError] = []
    seen: set[str] = set()
    for i, v in enumerate(versions):
        if v in seen:
            errs.append(invalid(index(path, i), v, "duplicate version"))
            continue
        seen.add(v)
        errs += [invalid(index(path, i), v, m) for m in is_dns1035_label(v)]
    if not any(v in _REVIEW_VERSIONS for v in versions):
        errs.append(invalid(path, go_string_slice(versions), "must include at least one of " + ", ".join(_REVIEW_VERSIONS)))
    return errs


def _match_conditions(conds: list[Any], path: str, webhook: bool = False) -> list[FieldError]:
    errs: list[FieldError] = []
    names: set[str] = set()
    for i, c in enumerate(conds):
        if not isinstance(c, dict):
            continue
        cp = index(path, i)
        name = c.get("name") or ""
        if not name:
            errs.append(required(child(cp, "name")))
        elif name in names:
            errs.append(duplicate(child(cp, "name"), name))
        names.add(name)
        if not c.get("expression"):
            errs.append(required(child(cp, "expression")))
        elif webhook:
            errs += _compiles(c["expression"], child(cp, "expression"))
    return errs


def _compiles(expression: Any, path: str) -> list[FieldError]:
    """A webhook matchCondition must compile in its environment (object, oldObject, request, authorizer)."""
    from pyk8s import cel  # (on first use: the CEL interpreter is a heavy import)

    if not isinstance(expression, str):
        return []
    try:
        cel.compile(expression, cel.Env.of({n: None for n in ("object", "oldObject", "request", "authorizer")}))
    except cel.CompileError as e:
        return [invalid(path, expression, str(e))]
    return []


def _webhook(hook: dict[str, Any], path: str, mutating: bool) -> list[FieldError]:
    name = hook.get("name") or ""
    np_ = child(path, "name")
    errs = [required(np_)] if not name else [invalid(np_, name, m) for m in is_fully_qualified_name(name)]
    for i, r in enumerate(hook.get("rules") or []):
        if isinstance(r, dict):
            errs += _rule_with_operations(r, index(child(path, "rules"), i))
    fp, mp = hook.get("failurePolicy"), hook.get("matchPolicy")
    if fp is not None and fp not in _FAILURE_POLICIES:
        errs.append(not_supported(child(path, "failurePolicy"), fp, _FAILURE_POLICIES))
    if mp is not None and mp not in _MATCH_POLICIES:
        errs.append(not_supported(child(path, "matchPolicy"), mp, _MATCH_POLICIES))
    se = hook.get("sideEffects")
    if se is None:
        errs.append(required(child(path, "sideEffects"), "must specify one of " + ", ".join(_SIDE_EFFECTS)))
    elif se not in _SIDE_EFFECTS:
        errs.append(not_supported(child(path, "sideEffects"), se, _SIDE_EFFECTS))
    timeout = hook.get("timeoutSeconds")
    if is_int(timeout) and not 1 <= timeout <= 30:
        errs.append(invalid(child(path, "timeoutSeconds"), timeout, "the timeout value must be between 1 and 30 seconds"))
    for f in ("namespaceSelector", "objectSelector"):
        if hook.get(f) is not None:
            errs += validate_label_selector(hook[f], child(path, f))
    if mutating:
        rp = hook.get("reinvocationPolicy")
        if rp is not None and rp not in _REINVOCATION:
            errs.append(not_supported(child(path, "reinvocationPolicy"), rp, _REINVOCATION))
    errs += _client_config(hook.get("clientConfig"), child(path, "clientConfig"))
    return errs + _match_conditions(hook.get("matchConditions") or [], child(path, "matchConditions"), webhook=True)


def _webhook_configuration(obj: dict[str, Any], mutating: bool) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain, kube_finalizers=False)
    names: set[str] = set()
    for i, hook in enumerate(obj.get("webhooks") or []):
        if not isinstance(hook, dict):
            continue
        hp = index("webhooks", i)
        errs += _webhook(hook, hp, mutating)
        errs += _review_versions(hook.get("admissionReviewVersions") or [], child(hp, "admissionReviewVersions"))
        name = hook.get("name") or ""
        if name:
            if name in names:
                errs.append(duplicate(child(hp, "name"), name))
            names.add(name)
    return errs


def validate_validating_webhook_configuration(obj: dict[str, Any]) -> list[FieldError]:
    return _webhook_configuration(obj, False)


def validate_mutating_webhook_configuration(obj: dict[str, Any]) -> list[FieldError]:
    return _webhook_configuration(obj, True)


# ---- ValidatingAdmissionPolicy and binding ----------------------------------------------


def _match_resources(mr: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    mp = mr.get("matchPolicy")
    if mp is not None and mp not in _MATCH_POLICIES:
        errs.append(not_supported(child(path, "matchPolicy"), mp, _MATCH_POLICIES))
    for f in ("namespaceSelector", "objectSelector"):
        if mr.get(f) is not None:
            errs += validate_label_selector(mr[f], child(path, f))
    for f in ("resourceRules", "excludeResourceRules"):
        for i, r in enumerate(mr.get(f) or []):
            if isinstance(r, dict):
                errs += _rule_with_operations(r, index(child(path, f), i))
    return errs


def _policy_spec(spec: dict[str, Any], path: str) -> list[FieldError]:
    errs: list[FieldError] = []
    fp = spec.get("failurePolicy")
    if fp is None:
        errs.append(required(child(path, "failurePolicy")))
    elif fp not in _FAILURE_POLICIES:
        errs.append(not_supported(child(path, "failurePolicy"), fp, _FAILURE_POLICIES))
    pk = spec.get("paramKind")
    if isinstance(pk, dict):
        for f in ("apiVersion", "kind"):
            if not pk.get(f):
                errs.append(required(child(path, "paramKind", f)))
    mc = spec.get("matchConstraints")
    if not isinstance(mc, dict):
        errs.append(required(child(path, "matchConstraints")))
    else:
        errs += _match_resources(mc, child(path, "matchConstraints"))
        if not mc.get("resourceRules"):
            errs.append(required(child(path, "matchConstraints", "resourceRules")))
    errs += _match_conditions(spec.get("matchConditions") or [], child(path, "matchConditions"))
    validations, audits = spec.get("validations") or [], spec.get("auditAnnotations") or []
    if not validations and not audits:
        msg = "validations or auditAnnotations must contain at least one item"
        errs += [required(child(path, "validations"), msg), required(child(path, "auditAnnotations"), msg)]
    for i, v in enumerate(validations):
        if isinstance(v, dict) and not (v.get("expression") or "").strip():
            errs.append(required(child(index(child(path, "validations"), i), "expression")))
    from .admission_policy_cel import validate_policy_expressions  # (it compiles CEL: loaded on first use)

    errs += validate_policy_expressions(spec, path)
    return errs


def validate_validating_admission_policy(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain, kube_finalizers=False)
    return errs + _policy_spec(spec_of(obj), "spec")


def validate_validating_admission_policy_binding(obj: dict[str, Any]) -> list[FieldError]:
    errs = validate_object_meta(obj, False, name_is_dns_subdomain, kube_finalizers=False)
    spec = spec_of(obj)
    if not spec.get("policyName"):
        errs.append(required("spec.policyName"))
    actions = spec.get("validationActions") or []
    if not actions:
        errs.append(required("spec.validationActions", "at least one validation action is required"))
    seen: set[str] = set()
    for i, a in enumerate(actions):
        if a in seen:
            errs.append(duplicate(index("spec.validationActions", i), a))
        seen.add(a)
        if a not in _VALIDATION_ACTIONS:
            errs.append(not_supported(index("spec.validationActions", i), a, _VALIDATION_ACTIONS))
    if "Deny" in actions and "Warn" in actions:
        errs.append(invalid("spec.validationActions", go_string_slice(actions, "[]admissionregistration.ValidationAction"),
                            "must not contain both Deny and Warn (repeating the same validation failure information in "
                            "the API response and headers serves no purpose)"))
    if isinstance(spec.get("matchResources"), dict):
        errs += _match_resources(spec["matchResources"], "spec.matchResources")
    return errs


def _with_meta_update(create: Any) -> Any:
    def update(new: dict[str, Any], old: dict[str, Any]) -> list[FieldError]:
        return create(new) + validate_object_meta_update(new, old, kube_finalizers=False)

    return update


VALIDATORS = {
    (AR, "ValidatingWebhookConfiguration"): validate_validating_webhook_configuration,
    (AR, "MutatingWebhookConfiguration"): validate_mutating_webhook_configuration,
    (AR, "ValidatingAdmissionPolicy"): validate_validating_admission_policy,
    (AR, "ValidatingAdmissionPolicyBinding"): validate_validating_admission_policy_binding,
}
UPDATE_VALIDATORS = {gk: _with_meta_update(fn) for gk, fn in VALIDATORS.items()}
