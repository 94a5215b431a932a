"""Which webhooks a request goes to, as upstream's webhook/predicates: rules (operations, groups,
versions, resources with subresources, scope), matchPolicy, namespaceSelector, objectSelector and
matchConditions (CEL, compiled once per configuration generation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from celpy import celtypes

from ... import cel
from ...api.labels import Selector, SelectorParseError, selector_from_label_selector
from ..authn import UserInfo
from ..authz import RequestAttributes

__all__ = ["Hook", "rule_matches", "ConditionError", "authorizer_for", "CONDITION_ENV"]

# what a webhook's matchCondition sees, as upstream's (no params, no variables; validation compiles in the same)
CONDITION_ENV = cel.Env.of({n: None for n in ("object", "oldObject", "request", "authorizer")})


class ConditionError(Exception):
    """A matchCondition that does not compile or fails to evaluate."""


def _sel(s: Any) -> Selector | None:
    """A selector, None for "everything" (nil and {} both select all here, as upstream's defaults)."""
    if not s or not (s.get("matchLabels") or s.get("matchExpressions")):
        return None
    try:
        return selector_from_label_selector(s)
    except SelectorParseError:
        return selector_from_label_selector({"matchLabels": {"": ""}})  # invalid: matches nothing


@dataclass
class Hook:
    """One webhook of a configuration, with what matching needs prepared."""

    configuration: str
    spec: dict[str, Any]
    mutating: bool
    version: str = ""  # the configuration's resourceVersion
    index: int = 0  # the webhook's place in it
    name: str = ""
    rules: list[dict[str, Any]] = field(default_factory=list)
    exact: bool = False
    namespace_selector: Selector | None = None
    object_selector: Selector | None = None
    conditions: list[tuple[str, Any]] = field(default_factory=list)
    condition_error: str = ""
    fail_open: bool = False
    timeout: int = 10
    side_effects: str = ""
    reinvoke: bool = False
    review_versions: list[str] = field(default_factory=list)

    @classmethod
    def build(cls, configuration: str, spec: dict[str, Any], mutating: bool, version: str = "",
              index: int = 0) -> Hook:
        h = cls(configuration, spec, mutating, version, index, name=spec.get("name") or "")
        h.rules = [r for r in spec.get("rules") or [] if isinstance(r, dict)]
        h.exact = spec.get("matchPolicy") == "Exact"
        h.namespace_selector = _sel(spec.get("namespaceSelector"))
        h.object_selector = _sel(spec.get("objectSelector"))
        h.fail_open = spec.get("failurePolicy") == "Ignore"
        h.timeout = int(spec.get("timeoutSeconds") or 10)
        h.side_effects = spec.get("sideEffects") or ""
        h.reinvoke = spec.get("reinvocationPolicy") == "IfNeeded"
        h.review_versions = list(spec.get("admissionReviewVersions") or [])
        for c in spec.get("matchConditions") or []:
            try:  # (validation compiles them too; a configuration stored before that still fails here)
                prog = cel.compile(str(c.get("expression") or ""), CONDITION_ENV)
            except cel.CompileError as e:
                h.condition_error = f"matchCondition {c.get('name')!r}: {e}"
                break
            h.conditions.append((str(c.get("name") or ""), prog))
        return h

    def conditions_match(self, activation: dict[str, Any]) -> bool:
        """All matchConditions true (False: some is false); ConditionError for an error."""
        if self.condition_error:
            raise ConditionError(self.condition_error)
        if not self.conditions:
            return True
        failed: list[str] = []
        for name, prog in self.conditions:
            try:
                r = prog.evaluate(activation)
            except cel.CELError as e:
                failed.append(f"expression '{name}' resulted in error: {e}")
                continue
            if not isinstance(r, (bool, celtypes.BoolType)):
                failed.append(f"expression '{name}' resulted in error: no such overload")
            elif not r:
                return False  # a false condition skips the webhook, even when another errs (as upstream)
        if failed:
            raise ConditionError("; ".join(failed))
        return True


def authorizer_for(authorize: Any, user: Any) -> cel.Authorizer | None:
    """The `authorizer` variable: checks answered by the server's authorizer for the requesting user
    (or, after `serviceAccount(ns, name)`, for that service account)."""
    if authorize is None or user is None:
        return None

    def decide(check: cel.AuthzCheck) -> tuple[bool, str, str]:
        who = user
        if check.user and check.user != user.name:  # authorizer.serviceAccount(ns, name)
            ns = check.user.split(":")[2] if check.user.count(":") == 3 else ""
            who = UserInfo(name=check.user, groups=["system:serviceaccounts", f"system:serviceaccounts:{ns}",
                                                    "system:authenticated"])
        attrs = RequestAttributes(verb=str(check.verb), api_group=str(check.group), resource=str(check.resource),
                                  subresource=str(check.subresource), name=str(check.name),
                                  namespace=str(check.namespace), resource_request=not check.path,
                                  path=str(check.path))
        allowed, reason = authorize(who, attrs)
        return allowed, reason, ""

    return cel.Authorizer(decide, getattr(user, "name", ""))


def _in(values: list[Any], v: str) -> bool:
    return "*" in values or v in values


def rule_matches(rule: dict[str, Any], op: str, group: str, version: str, resource: str, sub: str,
                 namespaced: bool) -> bool:
    """upstream's rules.Matcher: operation, group, version, resource[/subresource] and scope."""
    if not _in(rule.get("operations") or [], op):
        return False
    if not _in(rule.get("apiGroups") or [], group) or not _in(rule.get("apiVersions") or [], version):
        return False
    scope = rule.get("scope") or "*"
    if (scope == "Cluster" and namespaced) or (scope == "Namespaced" and not namespaced):
        return False
    want = f"{resource}/{sub}" if sub else resource
    for r in rule.get("resources") or []:
        if r == "*/*" or r == want:
            return True
        if "/" in r:
            rr, rs = r.split("/", 1)
            if sub and ((rr == "*" and rs == sub) or (rr == resource and rs == "*")):
                return True
        elif r == "*" and not sub:
            return True
    return False
