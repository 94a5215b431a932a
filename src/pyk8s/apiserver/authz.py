"""RBAC authorization as kube-apiserver's RBAC authorizer does it, plus the bootstrap policy.

* `RBACIndex` keeps Roles/ClusterRoles/RoleBindings/ClusterRoleBindings (wire dicts) fed from
  watches via `upsert`/`delete`, and resolves aggregated ClusterRoles (aggregationRule) at read
  time, so an aggregated role's effective rules are what the aggregation controller would write.
* `RBACAuthorizer.authorize(user, attrs)` walks ClusterRoleBindings, then (for namespaced
  requests) the namespace's RoleBindings, allowing on the first matching rule. Denials carry
  upstream's reason: "" or "RBAC: <errors resolving roles>".
* `forbidden_error` renders upstream's 403 ("pods is forbidden: User "x" cannot list resource
  "pods" in API group "" in the namespace "default"").
* `bootstrap_policy()` returns the default roles and bindings kube-apiserver creates.
"""

from __future__ import annotations

import copy
import threading
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pyk8s.api.errors import StatusError, new_forbidden

from .authn import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    SERVICE_ACCOUNTS_GROUP,
    SYSTEM_PRIVILEGED_GROUP,
    UserInfo,
    service_account_username,
)

__all__ = [
    "RequestAttributes",
    "RBACLookup",
    "RBACIndex",
    "RBACAuthorizer",
    "rule_allows",
    "aggregate_rules",
    "label_selector_matches",
    "forbidden_message",
    "forbidden_error",
    "bootstrap_policy",
    "RBAC_GROUP",
    "AUTOUPDATE_ANNOTATION",
    "BOOTSTRAP_LABEL",
]

RBAC_GROUP = "rbac.authorization.k8s.io"
RBAC_API_VERSION = f"{RBAC_GROUP}/v1"
AUTOUPDATE_ANNOTATION = "rbac.authorization.kubernetes.io/autoupdate"
BOOTSTRAP_LABEL = ("kubernetes.io/bootstrapping", "rbac-defaults")


@dataclass
class RequestAttributes:
    """What a request asks to do (upstream's authorizer.Attributes minus the user)."""

    verb: str
    api_group: str = ""
    resource: str = ""
    subresource: str = ""
    name: str = ""
    namespace: str = ""
    resource_request: bool = True
    path: str = ""
    api_version: str = ""
    # a list/watch's raw fieldSelector, for authorizers that judge it (AuthorizeWithSelectors)
    field_selector: str = ""


# --------------------------------------------------------------------------- rule matching


def _has_or_star(values: Sequence[str] | None, want: str) -> bool:
    return bool(values) and ("*" in values or want in values)  # type: ignore[operator]


def _resource_matches(rule_resources: Sequence[str] | None, combined: str, subresource: str) -> bool:
    for r in rule_resources or ():
        if r == "*" or r == combined:
            return True
        # "*/scale" grants the scale subresource of every resource
        if subresource and r == "*/" + subresource:
            return True
    return False


def _url_matches(rule_urls: Sequence[str] | None, path: str) -> bool:
    for u in rule_urls or ():
        if u == "*" or u == path:
            return True
        if u.endswith("*") and path.startswith(u.rstrip("*")):
            return True
    return False


def rule_allows(attrs: RequestAttributes, rule: Mapping[str, Any]) -> bool:
    """Whether one PolicyRule grants the request (upstream's RuleAllows)."""
    if not _has_or_star(rule.get("verbs"), attrs.verb):
        return False
    if not attrs.resource_request:
        return _url_matches(rule.get("nonResourceURLs"), attrs.path)
    combined = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    names = rule.get("resourceNames") or ()
    return (
        _has_or_star(rule.get("apiGroups"), attrs.api_group)
        and _resource_matches(rule.get("resources"), combined, attrs.subresource)
        and (not names or attrs.name in names)
    )


# --------------------------------------------------------------------------- label selectors / aggregation


def label_selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str] | None) -> bool:
    """metav1.LabelSelector semantics; an empty selector matches everything."""
    labels = labels or {}
    if selector is None:
        return False  # a nil selector selects nothing
    for k, v in (selector.get("matchLabels") or {}).items():
        if labels.get(k) != v:
            return False
    for expr in selector.get("matchExpressions") or ():
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        if op == "In":
            if key not in labels or labels[key] not in values:
                return False
        elif op == "NotIn":
            if key in labels and labels[key] in values:
                return False
        elif op == "Exists":
            if key not in labels:
                return False
        elif op == "DoesNotExist":
            if key in labels:
                return False
        else:
            return False
    return True


def _rule_key(rule: Mapping[str, Any]) -> tuple[Any, ...]:
    return tuple(
        tuple(rule.get(f) or ())
        for f in ("verbs", "apiGroups", "resources", "resourceNames", "nonResourceURLs")
    )


def aggregate_rules(
    role: Mapping[str, Any], cluster_roles: Iterable[Mapping[str, Any]], rules_of: Any = None
) -> list[dict[str, Any]]:
    """The rules the aggregation controller writes into `role`: the union, in order, of the rules of
    every other ClusterRole matched by each clusterRoleSelector (matches sorted by name, duplicates
    dropped). `rules_of(cr)` gives a matched role's rules (default: its own `rules`)."""
    name = (role.get("metadata") or {}).get("name")
    selectors = (role.get("aggregationRule") or {}).get("clusterRoleSelectors") or []
    ordered = sorted(cluster_roles, key=lambda cr: (cr.get("metadata") or {}).get("name") or "")
    out: list[dict[str, Any]] = []
    seen: set[tuple[Any, ...]] = set()
    for sel in selectors:
        for cr in ordered:
            meta = cr.get("metadata") or {}
            if meta.get("name") == name or not label_selector_matches(sel, meta.get("labels")):
                continue
            for rule in (rules_of(cr) if rules_of else cr.get("rules")) or ():
                k = _rule_key(rule)
                if k not in seen:
                    seen.add(k)
                    out.append(copy.deepcopy(dict(rule)))
    return out


# --------------------------------------------------------------------------- the index


class RBACLookup(Protocol):
    """What the authorizer needs; `RBACIndex` is the in-memory implementation."""

    def role_rules(self, namespace: str, name: str) -> list[dict[str, Any]] | None: ...
    def cluster_role_rules(self, name: str) -> list[dict[str, Any]] | None: ...
    def list_role_bindings(self, namespace: str) -> Iterable[dict[str, Any]]: ...
    def list_cluster_role_bindings(self) -> Iterable[dict[str, Any]]: ...


def _meta(obj: Mapping[str, Any]) -> tuple[str, str]:
    m = obj.get("metadata") or {}
    return str(m.get("namespace") or ""), str(m.get("name") or "")


class RBACIndex:
    """RBAC objects by kind, fed from watches (ADDED/MODIFIED -> upsert, DELETED -> delete)."""

    KINDS = ("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding")

    def __init__(self, objects: Iterable[Mapping[str, Any]] = ()):
        self._lock = threading.RLock()
        self._roles: dict[tuple[str, str], dict[str, Any]] = {}
        self._cluster_roles: dict[str, dict[str, Any]] = {}
        self._role_bindings: dict[str, dict[str, dict[str, Any]]] = {}
        self._cluster_role_bindings: dict[str, dict[str, Any]] = {}
        self._effective: dict[str, list[dict[str, Any]]] = {}
        self.generation = 0  # bumped on every change: authorizers cache what they derive per generation
        for o in objects:
            self.upsert(o)

    def upsert(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        ns, name = _meta(obj)
        o = dict(obj)
        with self._lock:
            self.generation += 1
            if kind == "Role":
                self._roles[(ns, name)] = o
            elif kind == "ClusterRole":
                self._cluster_roles[name] = o
                self._effective.clear()  # any label/rule change can alter an aggregation
            elif kind == "RoleBinding":
                self._role_bindings.setdefault(ns, {})[name] = o
            elif kind == "ClusterRoleBinding":
                self._cluster_role_bindings[name] = o

    def delete(self, obj: Mapping[str, Any]) -> None:
        kind = obj.get("kind")
        ns, name = _meta(obj)
        with self._lock:
            self.generation += 1
            if kind == "Role":
                self._roles.pop((ns, name), None)
            elif kind == "ClusterRole":
                if self._cluster_roles.pop(name, None) is not None:
                    self._effective.clear()
            elif kind == "RoleBinding":
                bucket = self._role_bindings.get(ns)
                if bucket is not None:
                    bucket.pop(name, None)
                    if not bucket:
                        del self._role_bindings[ns]
            elif kind == "ClusterRoleBinding":
                self._cluster_role_bindings.pop(name, None)

    def replace(self, objects: Iterable[Mapping[str, Any]], kinds: Sequence[str] = KINDS) -> None:
        """Re-list: drop every object of `kinds` and load `objects` (after a watch restart)."""
        with self._lock:
            self.generation += 1
            if "Role" in kinds:
                self._roles.clear()
            if "ClusterRole" in kinds:
                self._cluster_roles.clear()
                self._effective.clear()
            if "RoleBinding" in kinds:
                self._role_bindings.clear()
            if "ClusterRoleBinding" in kinds:
                self._cluster_role_bindings.clear()
            for o in objects:
                self.upsert(o)

    # lookups ---------------------------------------------------------------

    def get_role(self, namespace: str, name: str) -> dict[str, Any] | None:
        return self._roles.get((namespace, name))

    def get_cluster_role(self, name: str) -> dict[str, Any] | None:
        """The stored ClusterRole with its effective (aggregated) rules."""
        with self._lock:
            cr = self._cluster_roles.get(name)
            if cr is None:
                return None
            if cr.get("aggregationRule") is None:
                return cr
            out = dict(cr)
            out["rules"] = self._resolve(name, ())
            return out

    def list_roles(self, namespace: str | None = None) -> list[dict[str, Any]]:
        return [r for (ns, _), r in list(self._roles.items()) if namespace is None or ns == namespace]

    def list_cluster_roles(self) -> list[dict[str, Any]]:
        return list(self._cluster_roles.values())

    def role_rules(self, namespace: str, name: str) -> list[dict[str, Any]] | None:
        r = self._roles.get((namespace, name))
        return None if r is None else (r.get("rules") or [])

    def cluster_role_rules(self, name: str) -> list[dict[str, Any]] | None:
        with self._lock:
            if name not in self._cluster_roles:
                return None
            return self._resolve(name, ())

    def list_role_bindings(self, namespace: str) -> list[dict[str, Any]]:
        return list((self._role_bindings.get(namespace) or {}).values())

    def list_cluster_role_bindings(self) -> list[dict[str, Any]]:
        return list(self._cluster_role_bindings.values())

    def _resolve(self, name: str, stack: tuple[str, ...]) -> list[dict[str, Any]]:
        cached = self._effective.get(name)
        if cached is not None:
            return cached
        cr = self._cluster_roles[name]
        if cr.get("aggregationRule") is None or name in stack:
            # a cycle falls back to the stored rules rather than recursing forever
            return cr.get("rules") or []
        rules = aggregate_rules(
            cr,
            list(self._cluster_roles.values()),
            lambda other: self._resolve(_meta(other)[1], (*stack, name)),
        )
        if not stack:
            self._effective[name] = rules
        return rules


# --------------------------------------------------------------------------- the authorizer


def _describe_subject(subject: Mapping[str, Any], binding_ns: str) -> str:
    kind, name = subject.get("kind", ""), subject.get("name", "")
    if kind == "ServiceAccount":
        return f'{kind} "{name}/{subject.get("namespace") or binding_ns}"'
    return f'{kind} "{name}"'


def _applies_to(user: UserInfo, subjects: Sequence[Mapping[str, Any]] | None, namespace: str) -> int | None:
    """Index of the first subject matching the user (upstream's appliesTo), else None."""
    for i, s in enumerate(subjects or ()):
        kind = s.get("kind")
        if kind == "User":
            if user.name == s.get("name"):
                return i
        elif kind == "Group":
            if s.get("name") in user.groups:
                return i
        elif kind == "ServiceAccount":
            # an unqualified SA subject means the binding's own namespace
            sa_ns = s.get("namespace") or namespace
            if sa_ns and user.name == service_account_username(sa_ns, str(s.get("name") or "")):
                return i
    return None


class RBACAuthorizer:
    """Upstream's RBAC authorizer, with the privileged-group short-cut kube-apiserver puts in front."""

    def __init__(self, lookup: RBACLookup, privileged_groups: Sequence[str] = (SYSTEM_PRIVILEGED_GROUP,)):
        self.lookup = lookup
        self.privileged_groups = tuple(privileged_groups)
        # (user, groups, namespace) -> the rules visit_rules yields, for the lookup's generation:
        # walking every binding's subjects costs more than the request it guards
        self._visited: dict[tuple[str, tuple[str, ...], str], list[tuple[str, Any, str | None]]] = {}
        self._visited_gen = -1

    def _applicable(self, user: UserInfo, namespace: str) -> list[tuple[str, Any, str | None]]:
        gen = getattr(self.lookup, "generation", None)
        if gen is None:  # a lookup that cannot say when it changed: no cache
            return list(self.visit_rules(user, namespace))
        if gen != self._visited_gen or len(self._visited) > 4096:
            self._visited.clear()
            self._visited_gen = gen
        key = (user.name, tuple(user.groups), namespace)
        got = self._visited.get(key)
        if got is None:
            got = self._visited[key] = list(self.visit_rules(user, namespace))
        return got

    def role_reference_rules(self, ref: Mapping[str, Any], binding_ns: str,
                             storage: bool = False) -> list[dict[str, Any]]:
        """The rules a roleRef grants (GetRoleReferenceRules). `storage`: name a missing role as the
        RBAC storage's resolver does ("roles.rbac..."), not as the authorizer's listers ("role.rbac...")."""
        kind, name = ref.get("kind"), str(ref.get("name") or "")
        plural = "s" if storage else ""
        if kind == "Role":
            rules = self.lookup.role_rules(binding_ns, name)
            if rules is None:
                raise LookupError(f'role{plural}.{RBAC_GROUP} "{name}" not found')
            return rules
        if kind == "ClusterRole":
            rules = self.lookup.cluster_role_rules(name)
            if rules is None:
                raise LookupError(f'clusterrole{plural}.{RBAC_GROUP} "{name}" not found')
            return rules
        raise LookupError(f'unsupported role reference kind: "{kind}"')

    def visit_rules(
        self, user: UserInfo, namespace: str, storage: bool = False
    ) -> Iterator[tuple[str, Mapping[str, Any] | None, str | None]]:
        """Yield (source description, rule, None) per applicable rule and ("", None, error) per
        binding whose role cannot be resolved, in upstream's order."""
        for b in self.lookup.list_cluster_role_bindings():
            idx = _applies_to(user, b.get("subjects"), "")
            if idx is None:
                continue
            ref = b.get("roleRef") or {}
            try:
                rules = self.role_reference_rules(ref, "", storage)
            except LookupError as e:
                yield "", None, str(e)
                continue
            src = (
                f'ClusterRoleBinding "{_meta(b)[1]}" of {ref.get("kind", "")} "{ref.get("name", "")}" '
                f"to {_describe_subject(b['subjects'][idx], '')}"
            )
            for r in rules:
                yield src, r, None
        if not namespace:
            return
        for b in self.lookup.list_role_bindings(namespace):
            idx = _applies_to(user, b.get("subjects"), namespace)
            if idx is None:
                continue
            ref = b.get("roleRef") or {}
            try:
                rules = self.role_reference_rules(ref, namespace, storage)
            except LookupError as e:
                yield "", None, str(e)
                continue
            ns, name = _meta(b)
            src = (
                f'RoleBinding "{name}/{ns}" of {ref.get("kind", "")} "{ref.get("name", "")}" '
                f"to {_describe_subject(b['subjects'][idx], ns)}"
            )
            for r in rules:
                yield src, r, None

    def authorize(self, user: UserInfo, attrs: RequestAttributes) -> tuple[bool, str]:
        """(allowed, reason). Allowed reasons name the granting binding, as upstream's audit
        annotation does; denials give "" or "RBAC: <role resolution errors>"."""
        if any(g in user.groups for g in self.privileged_groups):
            return True, ""
        errors: list[str] = []
        for src, rule, err in self._applicable(user, attrs.namespace):
            if rule is not None and rule_allows(attrs, rule):
                return True, f"RBAC: allowed by {src}"
            if err is not None and err not in errors:
                errors.append(err)
        if not errors:
            return False, ""
        agg = errors[0] if len(errors) == 1 else "[" + ", ".join(errors) + "]"
        return False, f"RBAC: {agg}"

    def rules_for(self, user: UserInfo, namespace: str,
                  storage: bool = False) -> tuple[list[dict[str, Any]], list[str]]:
        """Every rule granted to the user in the namespace, plus resolution errors
        (what SelfSubjectRulesReview reports; `storage` as for role_reference_rules)."""
        rules: list[dict[str, Any]] = []
        errors: list[str] = []
        for _, rule, err in self.visit_rules(user, namespace, storage):
            if rule is not None:
                rules.append(dict(rule))
            if err is not None:
                errors.append(err)
        return rules, errors


# --------------------------------------------------------------------------- forbidden


def forbidden_message(username: str, attrs: RequestAttributes) -> str:
    """Upstream's responsewriters.forbiddenMessage."""
    if not attrs.resource_request:
        return f'User "{username}" cannot {attrs.verb} path "{attrs.path}"'
    resource = f"{attrs.resource}/{attrs.subresource}" if attrs.subresource else attrs.resource
    if attrs.namespace:
        return (
            f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
            f'in the namespace "{attrs.namespace}"'
        )
    return (
        f'User "{username}" cannot {attrs.verb} resource "{resource}" in API group "{attrs.api_group}" '
        "at the cluster scope"
    )


def forbidden_error(user: UserInfo | str, attrs: RequestAttributes, reason: str = "") -> StatusError:
    """The 403 Status upstream sends for a denied request."""
    username = user if isinstance(user, str) else user.name
    msg = forbidden_message(username, attrs)
    if reason:
        msg = f"{msg}: {reason}"
    if not attrs.resource_request or not attrs.resource:
        # NewForbidden with an empty GroupResource: "forbidden: <msg>"
        return StatusError(403, "Forbidden", f"forbidden: {msg}", {})
    return new_forbidden(attrs.resource, attrs.name, msg, attrs.api_group)


# --------------------------------------------------------------------------- bootstrap policy

READ = ("get", "list", "watch")
WRITE = ("create", "update", "patch", "delete", "deletecollection")
READ_WRITE = READ + WRITE
EVENTS_VERBS = ("create", "update", "patch")


def _rule(
    verbs: Iterable[str], groups: Iterable[str] = (), resources: Iterable[str] = (), names: Iterable[str] = ()
) -> dict[str, Any]:
    # upstream's PolicyRuleBuilder sorts every list; keys in PolicyRule field order
    r: dict[str, Any] = {"verbs": sorted(verbs), "apiGroups": sorted(groups), "resources": sorted(resources)}
    if names:
        r["resourceNames"] = sorted(names)
    return r


def _urls(verbs: Iterable[str], urls: Iterable[str]) -> dict[str, Any]:
    return {"verbs": sorted(verbs), "nonResourceURLs": sorted(urls)}


def _events_rule() -> dict[str, Any]:
    return _rule(EVENTS_VERBS, ["", "events.k8s.io"], ["events"])


def _meta_obj(name: str, namespace: str = "", labels: Mapping[str, str] | None = None) -> dict[str, Any]:
    m: dict[str, Any] = {"name": name}
    if namespace:
        m["namespace"] = namespace
    lbl = {BOOTSTRAP_LABEL[0]: BOOTSTRAP_LABEL[1]}
    lbl.update(labels or {})
    m["labels"] = lbl
    m["annotations"] = {AUTOUPDATE_ANNOTATION: "true"}
    return m


def _cluster_role(
    name: str,
    rules: list[dict[str, Any]],
    labels: Mapping[str, str] | None = None,
    aggregate_from: str | None = None,
) -> dict[str, Any]:
    cr: dict[str, Any] = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRole",
        "metadata": _meta_obj(name, labels=labels),
    }
    if aggregate_from:
        cr["aggregationRule"] = {"clusterRoleSelectors": [{"matchLabels": {aggregate_from: "true"}}]}
    cr["rules"] = rules
    return cr


def _role(namespace: str, name: str, rules: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "Role",
        "metadata": _meta_obj(name, namespace),
        "rules": rules,
    }


def _subj(kind: str, name: str, namespace: str = "") -> dict[str, Any]:
    if kind == "ServiceAccount":
        return {"kind": kind, "name": name, "namespace": namespace}
    return {"kind": kind, "apiGroup": RBAC_GROUP, "name": name}


def _crb(name: str, subjects: list[dict[str, Any]], role: str | None = None) -> dict[str, Any]:
    b: dict[str, Any] = {
        "apiVersion": RBAC_API_VERSION,
        "kind": "ClusterRoleBinding",
        "metadata": _meta_obj(name),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": role or name},
    }
    if subjects:
        b["subjects"] = subjects
    return b


def _rb(namespace: str, name: str, role: str, subjects: list[dict[str, Any]]) -> dict[str, Any]:
    return {
        "apiVersion": RBAC_API_VERSION,
        "kind": "RoleBinding",
        "metadata": _meta_obj(name, namespace),
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": role},
        "subjects": subjects,
    }


AGG_ADMIN = "rbac.authorization.k8s.io/aggregate-to-admin"
AGG_EDIT = "rbac.authorization.k8s.io/aggregate-to-edit"
AGG_VIEW = "rbac.authorization.k8s.io/aggregate-to-view"


def _cluster_roles() -> list[dict[str, Any]]:
    core, apps, authn, authz = "", "apps", "authentication.k8s.io", "authorization.k8s.io"
    storage, coord, certs = "storage.k8s.io", "coordination.k8s.io", "certificates.k8s.io"
    ext, batch, policy, net, autoscaling = "extensions", "batch", "policy", "networking.k8s.io", "autoscaling"
    write_no_read = ("create", "delete", "deletecollection", "patch", "update")

    roles = [
        _cluster_role(
            "cluster-admin",
            [_rule(["*"], ["*"], ["*"]), _urls(["*"], ["*"])],
        ),
        _cluster_role(
            "system:discovery",
            [
                _urls(
                    ["get"],
                    [
                        "/api",
                        "/api/*",
                        "/apis",
                        "/apis/*",
                        "/healthz",
                        "/livez",
                        "/openapi",
                        "/openapi/*",
                        "/readyz",
                        "/version",
                        "/version/",
                    ],
                )
            ],
        ),
        _cluster_role(
            "system:monitoring",
            [
                _urls(
                    ["get"],
                    [
                        "/healthz",
                        "/healthz/*",
                        "/livez",
                        "/livez/*",
                        "/metrics",
                        "/metrics/slis",
                        "/readyz",
                        "/readyz/*",
                    ],
                )
            ],
        ),
        _cluster_role(
            "system:basic-user",
            [
                _rule(["create"], [authz], ["selfsubjectaccessreviews", "selfsubjectrulesreviews"]),
                _rule(["create"], [authn], ["selfsubjectreviews"]),
            ],
        ),
        _cluster_role(
            "system:public-info-viewer",
            [_urls(["get"], ["/healthz", "/livez", "/readyz", "/version", "/version/"])],
        ),
        # user-facing roles: rules come from the aggregate-to-* roles
        _cluster_role("admin", [], aggregate_from=AGG_ADMIN),
        _cluster_role("edit", [], labels={AGG_ADMIN: "true"}, aggregate_from=AGG_EDIT),
        _cluster_role("view", [], labels={AGG_EDIT: "true"}, aggregate_from=AGG_VIEW),
        _cluster_role(
            "system:aggregate-to-admin",
            [
                _rule(["create"], [authz], ["localsubjectaccessreviews"]),
                _rule(READ_WRITE, ["rbac.authorization.k8s.io"], ["roles", "rolebindings"]),
            ],
            labels={AGG_ADMIN: "true"},
        ),
        _cluster_role(
            "system:aggregate-to-edit",
            [
                _rule(
                    READ,
                    [core],
                    [
                        "pods/attach",
                        "pods/proxy",
                        "pods/exec",
                        "pods/portforward",
                        "secrets",
                        "services/proxy",
                    ],
                ),
                _rule(["impersonate"], [core], ["serviceaccounts"]),
                _rule(
                    write_no_read,
                    [core],
                    ["pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward"],
                ),
                _rule(["create"], [core], ["pods/eviction"]),
                _rule(
                    write_no_read,
                    [core],
                    [
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/proxy",
                        "persistentvolumeclaims",
                        "configmaps",
                        "secrets",
                        "events",
                    ],
                ),
                _rule(["create"], [core], ["serviceaccounts/token"]),
                _rule(
                    write_no_read,
                    [apps],
                    [
                        "statefulsets",
                        "statefulsets/scale",
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "replicasets",
                        "replicasets/scale",
                    ],
                ),
                _rule(write_no_read, [autoscaling], ["horizontalpodautoscalers"]),
                _rule(write_no_read, [batch], ["jobs", "cronjobs"]),
                _rule(
                    write_no_read,
                    [ext],
                    [
                        "daemonsets",
                        "deployments",
                        "deployments/scale",
                        "deployments/rollback",
                        "ingresses",
                        "replicasets",
                        "replicasets/scale",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                _rule(write_no_read, [policy], ["poddisruptionbudgets"]),
                _rule(write_no_read, [net], ["networkpolicies", "ingresses"]),
                _rule(READ_WRITE, [coord], ["leases"]),
                _rule(READ + ("create", "delete", "deletecollection", "patch", "update"), ["resource.k8s.io"],
                      ["resourceclaims", "resourceclaimtemplates"]),
            ],
            labels={AGG_EDIT: "true"},
        ),
        _cluster_role(
            "system:aggregate-to-view",
            [
                _rule(
                    READ,
                    [core],
                    [
                        "pods",
                        "replicationcontrollers",
                        "replicationcontrollers/scale",
                        "serviceaccounts",
                        "services",
                        "services/status",
                        "endpoints",
                        "persistentvolumeclaims",
                        "persistentvolumeclaims/status",
                        "configmaps",
                    ],
                ),
                _rule(
                    READ,
                    [core],
                    [
                        "limitranges",
                        "resourcequotas",
                        "bindings",
                        "events",
                        "pods/status",
                        "resourcequotas/status",
                        "namespaces/status",
                        "replicationcontrollers/status",
                        "pods/log",
                    ],
                ),
                _rule(READ, [core], ["namespaces"]),
                _rule(READ, ["discovery.k8s.io"], ["endpointslices"]),
                _rule(
                    READ,
                    [apps],
                    [
                        "controllerrevisions",
                        "statefulsets",
                        "statefulsets/status",
                        "statefulsets/scale",
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/status",
                        "deployments/scale",
                        "replicasets",
                        "replicasets/status",
                        "replicasets/scale",
                    ],
                ),
                _rule(READ, [autoscaling], ["horizontalpodautoscalers", "horizontalpodautoscalers/status"]),
                _rule(READ, [batch], ["jobs", "cronjobs", "cronjobs/status", "jobs/status"]),
                _rule(
                    READ,
                    [ext],
                    [
                        "daemonsets",
                        "daemonsets/status",
                        "deployments",
                        "deployments/scale",
                        "deployments/status",
                        "ingresses",
                        "ingresses/status",
                        "replicasets",
                        "replicasets/scale",
                        "replicasets/status",
                        "replicationcontrollers/scale",
                        "networkpolicies",
                    ],
                ),
                _rule(READ, [policy], ["poddisruptionbudgets", "poddisruptionbudgets/status"]),
                _rule(READ, [net], ["ingresses", "ingresses/status", "networkpolicies"]),
                _rule(READ, ["resource.k8s.io"], ["resourceclaims", "resourceclaims/status", "resourceclaimtemplates"]),
            ],
            labels={AGG_VIEW: "true"},
        ),
        _cluster_role(
            "system:heapster",
            [
                _rule(READ, [core], ["events", "pods", "nodes", "namespaces"]),
                _rule(READ, [ext], ["deployments"]),
            ],
        ),
        _cluster_role(
            "system:node",
            [
                _rule(["create"], [authn], ["tokenreviews"]),
                _rule(["create"], [authz], ["subjectaccessreviews", "localsubjectaccessreviews"]),
                _rule(READ, [core], ["services"]),
                _rule(["create", "get", "list", "watch"], [core], ["nodes"]),
                _rule(["update", "patch"], [core], ["nodes/status"]),
                _rule(["update", "patch"], [core], ["nodes"]),
                _rule(EVENTS_VERBS, [core], ["events"]),
                _rule(READ, [core], ["pods"]),
                _rule(["create", "delete"], [core], ["pods"]),
                _rule(["update", "patch"], [core], ["pods/status"]),
                _rule(["create"], [core], ["pods/eviction"]),
                _rule(READ, [core], ["secrets", "configmaps"]),
                _rule(["get"], [core], ["persistentvolumeclaims", "persistentvolumes"]),
                _rule(["get"], [core], ["endpoints"]),
                _rule(["create", "get", "list", "watch"], [certs], ["certificatesigningrequests"]),
                _rule(["delete", "get", "create", "update", "patch"], [coord], ["leases"]),
                _rule(["get"], [storage], ["volumeattachments"]),
                _rule(["create"], [core], ["serviceaccounts/token"]),
                _rule(["get", "update", "patch"], [core], ["persistentvolumeclaims/status"]),
                _rule(READ, [storage], ["csidrivers"]),
                _rule(["create", "delete", "get", "patch", "update"], [storage], ["csinodes"]),
                _rule(READ, ["node.k8s.io"], ["runtimeclasses"]),
            ],
        ),
        # pyk8s's network policy controller (netpol/): what kube-router's role grants it, read-only
        _cluster_role(
            "system:pyk8s:network-policy",
            [
                _rule(READ, [net], ["networkpolicies"]),
                _rule(READ, [core], ["pods", "namespaces"]),
            ],
        ),
        # the nodes' local-path clean-up (kubelet/local_path_cleanup.py): it watches every PV (a node may
        # get only its pods' PVs) and removes its finalizer once the directory is gone; RBAC cannot narrow
        # a patch to one field, so it may patch PVs but neither create nor delete them
        _cluster_role(
            "system:pyk8s:local-path-cleaner",
            [
                _rule(READ, [core], ["persistentvolumes"]),
                _rule(["patch", "update"], [core], ["persistentvolumes"]),
                _events_rule(),
            ],
        ),
        # the scheduler's GPUShare plugin writes the chosen GPU into a pod's annotations before
        # binding it (gpushare's extender ships the same right in its own RBAC)
        _cluster_role("system:pyk8s:gpushare-scheduler", [_rule(["patch"], [core], ["pods"])]),
        _cluster_role(
            "system:node-problem-detector",
            [
                _rule(["get"], [core], ["nodes"]),
                _rule(["patch"], [core], ["nodes/status"]),
                _events_rule(),
            ],
        ),
        _cluster_role(
            "system:kubelet-api-admin",
            [
                _rule(READ, [core], ["nodes"]),
                _rule(["proxy"], [core], ["nodes"]),
                _rule(["*"], [core], ["nodes/proxy", "nodes/metrics", "nodes/stats", "nodes/log"]),
            ],
        ),
        _cluster_role(
            "system:node-bootstrapper",
            [_rule(["create", "get", "list", "watch"], [certs], ["certificatesigningrequests"])],
        ),
        _cluster_role(
            "system:auth-delegator",
            [
                _rule(["create"], [authn], ["tokenreviews"]),
                _rule(["create"], [authz], ["subjectaccessreviews"]),
            ],
        ),
        _cluster_role("system:kube-aggregator", [_rule(READ, [core], ["services", "endpoints"])]),
        _cluster_role(
            "system:kube-controller-manager",
            [
                _events_rule(),
                _rule(["create"], [coord], ["leases"]),
                _rule(["get", "update"], [coord], ["leases"], ["kube-controller-manager"]),
                _rule(["create"], [core], ["secrets", "serviceaccounts"]),
                _rule(["delete"], [core], ["secrets"]),
                _rule(["get"], [core], ["namespaces", "secrets", "serviceaccounts", "configmaps"]),
                _rule(["update"], [core], ["secrets", "serviceaccounts"]),
                _rule(["create"], [authn], ["tokenreviews"]),
                _rule(["create"], [authz], ["subjectaccessreviews"]),
                _rule(["list", "watch"], ["*"], ["*"]),
                _rule(["create"], [core], ["serviceaccounts/token"]),
            ],
        ),
        _cluster_role(
            "system:kube-dns",
            [_rule(["list", "watch"], [core], ["endpoints", "services"])],
        ),
        _cluster_role(
            "system:persistent-volume-provisioner",
            [
                _rule(["get", "list", "watch", "create", "delete"], [core], ["persistentvolumes"]),
                _rule(["get", "list", "watch", "update"], [core], ["persistentvolumeclaims"]),
                _rule(READ, [storage], ["storageclasses"]),
                _rule(["watch"], [core], ["events"]),
                _events_rule(),
            ],
        ),
        _cluster_role(
            "system:certificates.k8s.io:kubelet-serving-approver",
            [_rule(["approve"], [certs], ["signers"], ["kubernetes.io/kubelet-serving"])],
        ),
        _cluster_role(
            "system:certificates.k8s.io:kube-apiserver-client-approver",
            [_rule(["approve"], [certs], ["signers"], ["kubernetes.io/kube-apiserver-client"])],
        ),
        _cluster_role(
            "system:certificates.k8s.io:kube-apiserver-client-kubelet-approver",
            [_rule(["approve"], [certs], ["signers"], ["kubernetes.io/kube-apiserver-client-kubelet"])],
        ),
        _cluster_role(
            "system:certificates.k8s.io:legacy-unknown-approver",
            [_rule(["approve"], [certs], ["signers"], ["kubernetes.io/legacy-unknown"])],
        ),
        _cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:nodeclient",
            [_rule(["create"], [certs], ["certificatesigningrequests/nodeclient"])],
        ),
        _cluster_role(
            "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient",
            [_rule(["create"], [certs], ["certificatesigningrequests/selfnodeclient"])],
        ),
        _cluster_role(
            "system:service-account-issuer-discovery",
            [_urls(["get"], ["/.well-known/openid-configuration", "/openid/v1/jwks"])],
        ),
        _cluster_role(
            "system:node-proxier",
            [
                _rule(["list", "watch"], [core], ["services", "endpoints"]),
                _rule(READ, [core], ["nodes"]),
                _events_rule(),
                _rule(["list", "watch"], ["discovery.k8s.io"], ["endpointslices"]),
            ],
        ),
        _cluster_role(
            "system:volume-scheduler",
            [
                _rule(READ + ("patch", "update"), [core], ["persistentvolumes"]),
                _rule(READ, [storage], ["storageclasses"]),
                _rule(READ + ("patch", "update"), [core], ["persistentvolumeclaims"]),
            ],
        ),
        _cluster_role(
            "system:kube-scheduler",
            [
                _events_rule(),
                _rule(["create"], [coord], ["leases"]),
                _rule(["get", "update"], [coord], ["leases"], ["kube-scheduler"]),
                _rule(READ, [core], ["nodes"]),
                _rule(READ + ("delete",), [core], ["pods"]),
                _rule(["create"], [core], ["pods/binding", "bindings"]),
                _rule(["patch", "update"], [core], ["pods/status"]),
                _rule(READ, [core], ["replicationcontrollers", "services"]),
                _rule(READ, [apps, ext], ["replicasets"]),
                _rule(READ, [apps], ["statefulsets"]),
                _rule(READ, [policy], ["poddisruptionbudgets"]),
                _rule(READ, [core], ["persistentvolumeclaims", "persistentvolumes"]),
                _rule(["create"], [authn], ["tokenreviews"]),
                _rule(["create"], [authz], ["subjectaccessreviews"]),
                _rule(READ, [storage], ["csinodes"]),
                _rule(READ, [core], ["namespaces"]),
                _rule(READ, [storage], ["csidrivers"]),
                _rule(READ, [storage], ["csistoragecapacities"]),
                # DynamicResources (v1.33's DynamicResourceAllocation rules)
                _rule(READ, ["resource.k8s.io"], ["deviceclasses", "resourceslices"]),
                _rule(READ + ("update",), ["resource.k8s.io"], ["resourceclaims", "resourceclaims/status"]),
            ],
        ),
    ]
    return roles


def _cluster_role_bindings() -> list[dict[str, Any]]:
    return [
        _crb("cluster-admin", [_subj("Group", SYSTEM_PRIVILEGED_GROUP)]),
        _crb("system:monitoring", [_subj("Group", "system:monitoring")]),
        _crb("system:discovery", [_subj("Group", ALL_AUTHENTICATED)]),
        _crb("system:basic-user", [_subj("Group", ALL_AUTHENTICATED)]),
        _crb(
            "system:public-info-viewer",
            [_subj("Group", ALL_AUTHENTICATED), _subj("Group", ALL_UNAUTHENTICATED)],
        ),
        _crb("system:node-proxier", [_subj("User", "system:kube-proxy")]),
        _crb("system:kube-controller-manager", [_subj("User", "system:kube-controller-manager")]),
        _crb("system:kube-dns", [_subj("ServiceAccount", "kube-dns", "kube-system")]),
        # the network policy controllers' identity (cluster.py, `pyk8s agent --network-policy-kubeconfig`);
        # not the nodes': v1.33's Node authorizer lets a kubelet list only its own pods
        _crb("system:pyk8s:network-policy", [_subj("User", "system:pyk8s:network-policy")]),
        # the nodes' local-path clean-up (cluster.py, `pyk8s agent --local-path-kubeconfig`)
        _crb("system:pyk8s:local-path-cleaner", [_subj("User", "system:pyk8s:local-path-cleaner")]),
        _crb("system:kube-scheduler", [_subj("User", "system:kube-scheduler")]),
        _crb("system:volume-scheduler", [_subj("User", "system:kube-scheduler")]),
        _crb("system:pyk8s:gpushare-scheduler", [_subj("User", "system:kube-scheduler")]),
        # kept without subjects since the Node authorizer replaced it (1.7); nodes get their
        # access from that authorizer upstream
        _crb("system:node", []),
        _crb("system:service-account-issuer-discovery", [_subj("Group", SERVICE_ACCOUNTS_GROUP)]),
    ]


def _namespaced() -> list[dict[str, Any]]:
    ks, kp = "kube-system", "kube-public"
    leader = [
        _rule(["create", "get", "list", "update", "watch"], ["coordination.k8s.io"], ["leases"]),
        _rule(["create", "get", "list", "update", "watch"], ["coordination.k8s.io"], ["leasecandidates"]),
    ]
    roles = [
        _role(
            kp,
            "system:controller:bootstrap-signer",
            [
                _rule(READ, [""], ["configmaps"]),
                _rule(["update"], [""], ["configmaps"], ["cluster-info"]),
                _events_rule(),
            ],
        ),
        _role(
            ks,
            "extension-apiserver-authentication-reader",
            [_rule(READ, [""], ["configmaps"], ["extension-apiserver-authentication"])],
        ),
        _role(ks, "system::leader-locking-kube-controller-manager", copy.deepcopy(leader)),
        _role(ks, "system::leader-locking-kube-scheduler", copy.deepcopy(leader)),
        _role(ks, "system:controller:bootstrap-signer", [_rule(READ, [""], ["secrets"])]),
        _role(
            ks,
            "system:controller:cloud-provider",
            [_rule(["create", "get", "list", "watch"], [""], ["configmaps"])],
        ),
        _role(
            ks,
            "system:controller:token-cleaner",
            [_rule(["delete", "get", "list", "watch"], [""], ["secrets"]), _events_rule()],
        ),
    ]
    bindings = [
        _rb(
            kp,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            [_subj("ServiceAccount", "bootstrap-signer", ks)],
        ),
        _rb(
            ks,
            "system::extension-apiserver-authentication-reader",
            "extension-apiserver-authentication-reader",
            [_subj("User", "system:kube-controller-manager"), _subj("User", "system:kube-scheduler")],
        ),
        _rb(
            ks,
            "system::leader-locking-kube-controller-manager",
            "system::leader-locking-kube-controller-manager",
            [
                _subj("User", "system:kube-controller-manager"),
                _subj("ServiceAccount", "kube-controller-manager", ks),
                _subj("ServiceAccount", "leader-election-controller", ks),
            ],
        ),
        _rb(
            ks,
            "system::leader-locking-kube-scheduler",
            "system::leader-locking-kube-scheduler",
            [_subj("User", "system:kube-scheduler"), _subj("ServiceAccount", "kube-scheduler", ks)],
        ),
        _rb(
            ks,
            "system:controller:bootstrap-signer",
            "system:controller:bootstrap-signer",
            [_subj("ServiceAccount", "bootstrap-signer", ks)],
        ),
        _rb(
            ks,
            "system:controller:cloud-provider",
            "system:controller:cloud-provider",
            [_subj("ServiceAccount", "cloud-provider", ks)],
        ),
        _rb(
            ks,
            "system:controller:token-cleaner",
            "system:controller:token-cleaner",
            [_subj("ServiceAccount", "token-cleaner", ks)],
        ),
    ]
    return roles + bindings


def bootstrap_policy(include_namespaced: bool = True) -> list[dict[str, Any]]:
    """The default RBAC objects kube-apiserver reconciles at start-up (rbac/bootstrap-roles).

    Order: ClusterRoles, ClusterRoleBindings, then (unless excluded) the kube-system/kube-public
    Roles and RoleBindings. Aggregated roles (admin, edit, view) come with their rules already
    aggregated, as the aggregation controller would leave them.
    """
    roles = _cluster_roles()
    index = RBACIndex(roles)
    for cr in roles:
        if cr.get("aggregationRule") is not None:
            cr["rules"] = copy.deepcopy(index.cluster_role_rules(cr["metadata"]["name"]) or [])
    out = roles + _cluster_role_bindings()
    if include_namespaced:
        out += _namespaced()
    return out
