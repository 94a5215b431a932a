"""audit.k8s.io/v1 Policy: loading, validation and rule evaluation (upstream's audit/policy).

Rules are tried in order and the first that matches gives the level (None when none matches).
A rule matches when every field it sets matches: users, userGroups, verbs, then either
resources/namespaces (resource requests only) or nonResourceURLs (the others only).
Everything is turned into frozensets once, at load: evaluation runs on every request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import yaml

from ...api.errors import FieldError
from ..authz import RequestAttributes

__all__ = ["LEVELS", "STAGES", "Attributes", "Decision", "Policy", "PolicyError", "load_policy", "parse_policy"]

LEVELS = ("None", "Metadata", "Request", "RequestResponse")
LEVEL_ORDER = {name: i for i, name in enumerate(LEVELS)}
STAGES = ("RequestReceived", "ResponseStarted", "ResponseComplete", "Panic")
# upstream's validation: a DNS-1123 subdomain (or "" for the core group)
_GROUP_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")


class PolicyError(ValueError):
    """The policy file cannot be used; the server refuses to start, as upstream's does."""


@dataclass(frozen=True, slots=True)
class Attributes:
    """What a rule looks at (upstream's authorizer.Attributes): the user and the request."""

    username: str | None  # None: the request was not authenticated
    groups: tuple[str, ...] | list[str]
    request: RequestAttributes


@dataclass(frozen=True, slots=True)
class Decision:
    level: str
    omit_stages: frozenset[str]
    omit_managed_fields: bool


@dataclass(frozen=True, slots=True)
class _GroupResources:
    group: str
    resources: tuple[str, ...]
    resource_names: frozenset[str]


@dataclass(frozen=True, slots=True)
class _Rule:
    decision: Decision
    users: frozenset[str]
    user_groups: frozenset[str]
    verbs: frozenset[str]
    namespaces: frozenset[str]
    resources: tuple[_GroupResources, ...]
    non_resource_urls: tuple[str, ...]

    def matches(self, attrs: Attributes) -> bool:
        if self.users and (attrs.username is None or attrs.username not in self.users):
            return False
        if self.user_groups and (attrs.username is None or self.user_groups.isdisjoint(attrs.groups)):
            return False
        a = attrs.request
        if self.verbs and a.verb not in self.verbs:
            return False
        if self.namespaces or self.resources:
            return self._matches_resource(a)
        if self.non_resource_urls:
            return not a.resource_request and any(_path_matches(a.path, spec) for spec in self.non_resource_urls)
        return True

    def _matches_resource(self, a: RequestAttributes) -> bool:
        if not a.resource_request:
            return False
        if self.namespaces and a.namespace not in self.namespaces:  # cluster-scoped: ""
            return False
        if not self.resources:
            return True
        sub = a.subresource
        combined = f"{a.resource}/{sub}" if sub else a.resource
        for gr in self.resources:
            if gr.group != a.api_group:
                continue
            if not gr.resources:
                return True
            if gr.resource_names and a.name not in gr.resource_names:
                continue
            for res in gr.resources:
                if res == combined or res == "*":
                    return True
                if sub and res.startswith("*/") and res[2:] == sub:
                    return True
                if res.endswith("/*") and res[:-2] == a.resource:  # the resource and all its subresources
                    return True
        return False


def _path_matches(path: str, spec: str) -> bool:
    if spec == "*" or spec == path:
        return True
    return spec.endswith("*") and path.startswith(spec.rstrip("*"))


class Policy:
    """A loaded policy: evaluate() gives the level, omitted stages and omitManagedFields of a request."""

    def __init__(self, rules: list[_Rule], default: Decision) -> None:
        self.rules = rules
        self.default = default

    def evaluate(self, attrs: Attributes) -> Decision:
        for rule in self.rules:
            if rule.matches(attrs):
                return rule.decision
        return self.default


def load_policy(path: str) -> Policy:
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as e:
        raise PolicyError(f"failed to read file path {path!r}: {e.strerror}") from None
    return parse_policy(data, path)


def parse_policy(data: bytes, path: str = "") -> Policy:
    try:
        doc = yaml.safe_load(data)
    except yaml.YAMLError as e:
        raise PolicyError(f"failed decoding file {path!r}: {e}") from None
    if not isinstance(doc, dict):
        raise PolicyError(f"failed decoding file {path!r}: not an audit.k8s.io/v1 Policy object")
    api_version, kind = doc.get("apiVersion"), doc.get("kind")
    if api_version != "audit.k8s.io/v1" or kind != "Policy":
        # upstream v1.33 serves the v1 Policy only (v1alpha1/v1beta1 were removed in v1.24)
        raise PolicyError(f"failed decoding file {path!r}: unknown group version kind "
                          f"{api_version or ''}, Kind={kind or ''}: expected audit.k8s.io/v1, Kind=Policy")
    errs: list[FieldError] = []
    policy_stages = _stages(doc.get("omitStages"), "omitStages", errs)
    policy_omit_mf = _bool(doc.get("omitManagedFields"), "omitManagedFields", errs)
    raw_rules = doc.get("rules")
    if raw_rules is not None and not isinstance(raw_rules, list):
        errs.append(FieldError("rules", "Invalid", raw_rules, "must be a list"))
        raw_rules = []
    rules = [_rule(r, i, policy_stages, bool(policy_omit_mf), errs) for i, r in enumerate(raw_rules or [])]
    if errs:
        raise PolicyError(f"invalid audit policy file {path!r}: " + ", ".join(str(e) for e in errs))
    if not rules:
        raise PolicyError(f"loaded illegal policy with 0 rules from file {path}")
    return Policy([r for r in rules if r is not None], Decision("None", policy_stages, bool(policy_omit_mf)))


def _strings(v: Any, path: str, errs: list[FieldError]) -> list[str]:
    if v is None:
        return []
    if not isinstance(v, list) or not all(isinstance(s, str) for s in v):
        errs.append(FieldError(path, "Invalid", v, "must be a list of strings"))
        return []
    return v


def _bool(v: Any, path: str, errs: list[FieldError]) -> bool | None:
    if v is None or isinstance(v, bool):
        return v
    errs.append(FieldError(path, "Invalid", v, "must be a boolean"))
    return None


def _stages(v: Any, path: str, errs: list[FieldError]) -> frozenset[str]:
    out = _strings(v, path, errs)
    for i, s in enumerate(out):
        if s not in STAGES:
            errs.append(FieldError(f"{path}[{i}]", "NotSupported", s, valid_values=list(STAGES)))
    return frozenset(out)


def _rule(r: Any, i: int, policy_stages: frozenset[str], policy_omit_mf: bool,
          errs: list[FieldError]) -> _Rule | None:
    p = f"rules[{i}]"
    if not isinstance(r, dict):
        errs.append(FieldError(p, "Invalid", r, "must be an object"))
        return None
    level = r.get("level")
    if not level:
        errs.append(FieldError(f"{p}.level", "Required"))
    elif level not in LEVELS:
        errs.append(FieldError(f"{p}.level", "NotSupported", level, valid_values=list(LEVELS)))
    urls = _strings(r.get("nonResourceURLs"), f"{p}.nonResourceURLs", errs)
    namespaces = _strings(r.get("namespaces"), f"{p}.namespaces", errs)
    raw_resources = r.get("resources")
    if raw_resources is not None and not isinstance(raw_resources, list):
        errs.append(FieldError(f"{p}.resources", "Invalid", raw_resources, "must be a list"))
        raw_resources = []
    if urls and (raw_resources or namespaces):
        errs.append(FieldError(f"{p}.nonResourceURLs", "Invalid", urls,
                               "rules cannot apply to both regular resources and non-resource URLs"))
    for j, u in enumerate(urls):
        if not u.startswith("/") and u != "*":
            errs.append(FieldError(f"{p}.nonResourceURLs[{j}]", "Invalid", u,
                                   "non-resource URL rules must begin with a '/' character"))
        elif "*" in u[:-1]:
            errs.append(FieldError(f"{p}.nonResourceURLs[{j}]", "Invalid", u,
                                   "non-resource URL wildcards '*' must be the final character of the rule"))
    resources = []
    for j, gr in enumerate(raw_resources or []):
        rp = f"{p}.resources[{j}]"
        if not isinstance(gr, dict):
            errs.append(FieldError(rp, "Invalid", gr, "must be an object"))
            continue
        group = gr.get("group") or ""
        if not isinstance(group, str) or (group and not _GROUP_RE.match(group)):
            errs.append(FieldError(f"{rp}.group", "Invalid", group, "must be a DNS-1123 subdomain"))
            continue
        names = _strings(gr.get("resources"), f"{rp}.resources", errs)
        rnames = _strings(gr.get("resourceNames"), f"{rp}.resourceNames", errs)
        if rnames and any("*" in n for n in names):
            errs.append(FieldError(f"{rp}.resourceNames", "Invalid", rnames,
                                   "using resourceNames with wildcard resources is not supported"))
        resources.append(_GroupResources(group, tuple(names), frozenset(rnames)))
    omit_mf = _bool(r.get("omitManagedFields"), f"{p}.omitManagedFields", errs)
    decision = Decision(level if level in LEVELS else "None",
                        policy_stages | _stages(r.get("omitStages"), f"{p}.omitStages", errs),
                        policy_omit_mf if omit_mf is None else omit_mf)
    return _Rule(decision, frozenset(_strings(r.get("users"), f"{p}.users", errs)),
                 frozenset(_strings(r.get("userGroups"), f"{p}.userGroups", errs)),
                 frozenset(_strings(r.get("verbs"), f"{p}.verbs", errs)), frozenset(namespaces),
                 tuple(resources), tuple(urls))
