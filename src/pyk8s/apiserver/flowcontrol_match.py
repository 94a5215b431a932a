"""API Priority and Fairness: which FlowSchema a request matches (upstream's rule matching).

A FlowSchema is compiled once per configuration change into sets, so matching a request is a
few set lookups; the filter (flowcontrol.py) caches the outcome per (user, groups, verb,
group, resource, namespace) besides. Semantics follow k8s.io/apiserver/pkg/util/flowcontrol's
rule.go: a subject matches a user by name, a group or a service account (name "*": any in
that namespace); a resource rule needs verb, API group, resource ("pods", or "pods/status"
for a subresource) and, for a namespaced request, the namespace ("*": any), for a cluster-
scoped one `clusterScope: true`; a non-resource rule needs verb and URL ("*": all; "/foo/*":
under /foo/; "/foo": /foo and what is under it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Digest", "CompiledFlowSchema", "compile_flow_schema", "distinguisher_of"]

_ALL = "*"
SA_PREFIX = "system:serviceaccount:"


@dataclass(frozen=True, slots=True)
class Digest:
    """What classification looks at in a request (upstream's RequestDigest)."""

    user: str
    groups: tuple[str, ...]
    verb: str
    resource_request: bool
    api_group: str = ""
    resource: str = ""  # "pods", or "pods/status" for a subresource
    namespace: str = ""
    path: str = ""


def _names(values: list[Any] | None) -> frozenset[str] | None:
    """The set of values, or None for "all" (the list holds "*")."""
    s = frozenset(str(v) for v in values or ())
    return None if _ALL in s else s


class _Subjects:
    __slots__ = ("users", "groups", "service_accounts", "sa_namespaces")

    def __init__(self, subjects: list[dict[str, Any]]) -> None:
        users: set[str] = set()
        groups: set[str] = set()
        sas: set[str] = set()
        sa_ns: set[str] = set()
        for s in subjects or ():
            kind = s.get("kind")
            if kind == "User":
                users.add(str((s.get("user") or {}).get("name", "")))
            elif kind == "Group":
                groups.add(str((s.get("group") or {}).get("name", "")))
            elif kind == "ServiceAccount":
                sa = s.get("serviceAccount") or {}
                ns, name = str(sa.get("namespace", "")), str(sa.get("name", ""))
                if name == _ALL:
                    sa_ns.add(f"{SA_PREFIX}{ns}:")
                else:
                    sas.add(f"{SA_PREFIX}{ns}:{name}")
        self.users = users
        self.groups = groups
        self.service_accounts = sas
        self.sa_namespaces = tuple(sa_ns)

    def match(self, d: Digest) -> bool:
        if _ALL in self.users or d.user in self.users:
            return True
        if self.groups and (_ALL in self.groups or not self.groups.isdisjoint(d.groups)):
            return True
        if d.user.startswith(SA_PREFIX):
            if d.user in self.service_accounts:
                return True
            # a service account user is system:serviceaccount:<namespace>:<name>
            return any(d.user.startswith(p) and ":" not in d.user[len(p):] for p in self.sa_namespaces)
        return False


class _ResourceRule:
    __slots__ = ("verbs", "groups", "resources", "namespaces", "cluster_scope")

    def __init__(self, r: dict[str, Any]) -> None:
        self.verbs = _names(r.get("verbs"))
        self.groups = _names(r.get("apiGroups"))
        self.resources = _names(r.get("resources"))
        self.namespaces = _names(r.get("namespaces"))
        self.cluster_scope = bool(r.get("clusterScope"))

    def match(self, d: Digest) -> bool:
        if self.verbs is not None and d.verb not in self.verbs:
            return False
        if self.resources is not None and d.resource not in self.resources:
            return False
        if self.groups is not None and d.api_group not in self.groups:
            return False
        if not d.namespace:
            return self.cluster_scope
        return self.namespaces is None or d.namespace in self.namespaces


class _NonResourceRule:
    __slots__ = ("verbs", "exact", "prefixes", "everything")

    def __init__(self, r: dict[str, Any]) -> None:
        self.verbs = _names(r.get("verbs"))
        urls = [str(u) for u in r.get("nonResourceURLs") or ()]
        self.everything = _ALL in urls
        self.exact = frozenset(urls)
        # "/foo/*" covers what starts with "/foo/"; "/foo" covers "/foo" and what is under "/foo/"
        self.prefixes = tuple(u[:-1] if u.endswith("*") else u + "/" for u in urls)

    def match(self, d: Digest) -> bool:
        if self.verbs is not None and d.verb not in self.verbs:
            return False
        return self.everything or d.path in self.exact or d.path.startswith(self.prefixes)


class _PolicyRules:
    __slots__ = ("subjects", "resource_rules", "non_resource_rules")

    def __init__(self, rule: dict[str, Any]) -> None:
        self.subjects = _Subjects(rule.get("subjects") or [])
        self.resource_rules = [_ResourceRule(r) for r in rule.get("resourceRules") or ()]
        self.non_resource_rules = [_NonResourceRule(r) for r in rule.get("nonResourceRules") or ()]

    def match(self, d: Digest) -> bool:
        if not self.subjects.match(d):
            return False
        rules: list[Any] = self.resource_rules if d.resource_request else self.non_resource_rules
        return any(r.match(d) for r in rules)


@dataclass(slots=True)
class CompiledFlowSchema:
    name: str
    uid: str
    precedence: int
    level: str  # the PriorityLevelConfiguration's name
    distinguisher: str  # "ByUser", "ByNamespace" or ""
    rules: list[_PolicyRules]

    def matches(self, d: Digest) -> bool:
        return any(r.match(d) for r in self.rules)


def compile_flow_schema(obj: dict[str, Any]) -> CompiledFlowSchema:
    md = obj.get("metadata") or {}
    spec = obj.get("spec") or {}
    precedence = spec.get("matchingPrecedence")
    return CompiledFlowSchema(
        name=str(md.get("name", "")),
        uid=str(md.get("uid", "")),
        precedence=int(precedence) if isinstance(precedence, int) else 1000,  # upstream's default
        level=str((spec.get("priorityLevelConfiguration") or {}).get("name", "")),
        distinguisher=str((spec.get("distinguisherMethod") or {}).get("type", "")),
        rules=[_PolicyRules(r) for r in spec.get("rules") or ()],
    )


def distinguisher_of(fs: CompiledFlowSchema, d: Digest) -> str:
    """The flow within the schema: per user, per namespace, or one flow for all."""
    if fs.distinguisher == "ByUser":
        return d.user
    if fs.distinguisher == "ByNamespace":
        return d.namespace
    return ""
