"""The PodSecurity admission plug-in (upstream's k8s.io/pod-security-admission/admission).

- Pods (create, updates that change what the checks see, the ephemeralcontainers subresource):
  the namespace's enforce level refuses (403 `violates PodSecurity "level:version": ...`), its
  audit level annotates the audit event (`pod-security.kubernetes.io/audit-violations`), its
  warn level answers a `Warning` header (`would violate PodSecurity ...`).
- Workload resources (their pod templates): audit and warn only, as upstream: their pods meet
  enforce when they are created. Every create and update of one is judged, as upstream.
- Namespaces: the labels must parse (422 with upstream's field errors, so no casing trick passes
  as a level); a stricter enforce level answers warnings naming the existing pods that violate
  it (`kubectl label --dry-run=server` shows them); an exempt namespace is told it is exempt.
Exemptions and the defaults for unlabelled namespaces come from the admission configuration file.
Namespaces and pods are read from the watch cache.
"""

from __future__ import annotations

import time
from typing import Any

from ...api import errors as E
from ...api.resources import Resource
from ..audit.filter import add_annotation
from ..rest import RequestContext, RestStorage
from .checks import evaluate
from .config import PodSecurityConfig
from .policy import LABEL_PREFIX, LEVELS, MODES, LevelVersion, Policy, policy_from_labels

__all__ = ["PodSecurity"]

_ANN = "pod-security.kubernetes.io/"
# where each workload kind keeps its pod template
_TEMPLATES: dict[tuple[str, str], tuple[str, ...]] = {
    ("", "podtemplates"): ("template",),
    ("", "replicationcontrollers"): ("spec", "template"),
    ("apps", "deployments"): ("spec", "template"),
    ("apps", "replicasets"): ("spec", "template"),
    ("apps", "statefulsets"): ("spec", "template"),
    ("apps", "daemonsets"): ("spec", "template"),
    ("batch", "jobs"): ("spec", "template"),
    ("batch", "cronjobs"): ("spec", "jobTemplate", "spec", "template"),
}
MAX_PODS_TO_CHECK = 3000  # upstream's namespaceMaxPodsToCheck
POD_CHECK_SECONDS = 1.0  # and its namespacePodCheckTimeout
# pod subresources that carry no pod spec to judge (upstream's ignoredPodSubresources)
_IGNORED_POD_SUBRESOURCES = frozenset(("exec", "attach", "binding", "eviction", "log", "portforward", "proxy",
                                       "status"))


def _dig(obj: Any, path: tuple[str, ...]) -> dict[str, Any]:
    for k in path:
        obj = obj.get(k) if isinstance(obj, dict) else None
    return obj if isinstance(obj, dict) else {}


def _reasons(violations: list[tuple[str, str]]) -> str:
    """upstream's AggregateCheckResult.ForbiddenReason: `reason (detail)`, joined."""
    return ", ".join(f"{r} ({d})" if d else r for r, d in violations)


def _significant_container_change(new: dict[str, Any], old: dict[str, Any], nann: dict[str, Any],
                                  oann: dict[str, Any]) -> bool:
    key = "container.seccomp.security.alpha.kubernetes.io/" + str(new.get("name", ""))
    return new.get("image") != old.get("image") or nann.get(key) != oann.get(key)


def significant_pod_update(new: dict[str, Any], old: dict[str, Any]) -> bool:
    """Whether an update changes what the checks judge, as upstream's isSignificantPodUpdate: a pod's
    spec is immutable (validation refuses the rest) but for images and ephemeral containers, so
    metadata-only updates pass."""
    nann = (new.get("metadata") or {}).get("annotations") or {}
    oann = (old.get("metadata") or {}).get("annotations") or {}
    if nann.get("seccomp.security.alpha.kubernetes.io/pod") != oann.get("seccomp.security.alpha.kubernetes.io/pod"):
        return True
    ns, os_ = new.get("spec") or {}, old.get("spec") or {}
    for key in ("containers", "initContainers"):
        nc, oc = ns.get(key) or [], os_.get(key) or []
        if len(nc) != len(oc):
            return True
        if any(_significant_container_change(a, b, nann, oann) for a, b in zip(nc, oc, strict=True)):
            return True
    olds = {c.get("name"): c for c in os_.get("ephemeralContainers") or [] if isinstance(c, dict)}
    for c in ns.get("ephemeralContainers") or []:
        if not isinstance(c, dict):
            continue
        prev = olds.get(c.get("name"))
        if prev is None or _significant_container_change(c, prev, nann, oann):
            return True
    return False


class PodSecurity:
    def __init__(self, cfg: PodSecurityConfig) -> None:
        self.cfg = cfg
        self._policies: dict[tuple[str, str], tuple[Policy, str]] = {}

    def _user(self, ctx: RequestContext) -> str:
        return getattr(ctx.user, "name", "") or ""

    async def _policy(self, rest: RestStorage, ns: str) -> tuple[Policy, str]:
        """The namespace's policy and its labels' errors (as one message, "" when none)."""
        ns_res = rest.registry.get("", "v1", "namespaces")
        assert ns_res is not None
        nsobj = await rest.get_current(ns_res, None, ns, consistent=False)
        md = (nsobj or {}).get("metadata") or {}
        key = (ns, str(md.get("resourceVersion")))  # labels parse once per namespace write, not per pod
        got = self._policies.get(key)
        if got is None:
            if len(self._policies) > 4096:
                self._policies.clear()
            policy, errs = policy_from_labels(md.get("labels") or {}, self.cfg.defaults)
            msgs = [str(e) for e in errs]
            got = self._policies[key] = (policy, msgs[0] if len(msgs) == 1 else
                                         "[" + ", ".join(msgs) + "]" if msgs else "")
        return got

    def _exempt_request(self, ns: str, ctx: RequestContext) -> bool:
        """Exempt namespaces and users: nothing is evaluated (the audit event says why)."""
        if ns and ns in self.cfg.exempt_namespaces:
            add_annotation(_ANN + "exempt", "namespace")
            return True
        user = self._user(ctx)
        if user and user in self.cfg.exempt_usernames:
            add_annotation(_ANN + "exempt", "user")
            return True
        return False

    async def admit(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if op not in ("CREATE", "UPDATE"):
            return
        key = (res.group, res.resource)
        if key == ("", "namespaces"):
            if not ctx.subresource:
                await self._namespace(rest, op, obj, old, ctx)
            return
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        if key == ("", "pods"):
            # every subresource that can carry a pod spec is judged (ephemeralcontainers, resize, ...):
            # only those known to change none are not, so an unknown one fails safe, as upstream
            if ctx.subresource in _IGNORED_POD_SUBRESOURCES or self._exempt_request(ns, ctx):
                return
            policy, err = await self._policy(rest, ns)
            if not err and policy.fully_privileged():
                return
            if op == "UPDATE" and old is not None and not significant_pod_update(obj, old):
                return
            await self._evaluate(res, obj, ctx, policy, err, obj.get("metadata") or {}, obj.get("spec") or {},
                                 enforce=True)
            return
        path = _TEMPLATES.get(key)
        if path is None or ctx.subresource or self._exempt_request(ns, ctx):
            return
        policy, err = await self._policy(rest, ns)
        if not err and policy.warn.level == policy.audit.level == "privileged":
            return
        tmpl = _dig(obj, path)
        if not tmpl:
            return  # (a controller without a pod template)
        await self._evaluate(res, obj, ctx, policy, err, tmpl.get("metadata") or {}, tmpl.get("spec") or {},
                             enforce=False)

    async def _evaluate(self, res: Resource, obj: dict[str, Any], ctx: RequestContext, policy: Policy, err: str,
                        meta: dict[str, Any], spec: dict[str, Any], enforce: bool) -> None:
        rc = spec.get("runtimeClassName")
        if rc and rc in self.cfg.exempt_runtime_classes:
            add_annotation(_ANN + "exempt", "runtimeClass")
            return
        if err:
            add_annotation(_ANN + "error", f"Failed to parse policy: {err}")
        results: dict[LevelVersion, list[tuple[str, str]]] = {}

        def judge(lv: LevelVersion) -> list[tuple[str, str]]:
            if lv not in results:  # modes at the same level and version share one evaluation
                results[lv] = evaluate(lv.level, lv.effective_minor, meta, spec)
            return results[lv]

        denied = None
        if enforce:
            add_annotation(_ANN + "enforce-policy", str(policy.enforce))
            v = judge(policy.enforce)
            if v:
                denied = f"violates PodSecurity {_quote(str(policy.enforce))}: {_reasons(v)}"
        v = judge(policy.audit)
        if v:
            add_annotation(_ANN + "audit-violations",
                           f"would violate PodSecurity {_quote(str(policy.audit))}: {_reasons(v)}")
        if denied is not None:
            # (no warning on a request refused anyway, as upstream)
            raise E.new_forbidden(res.resource, (obj.get("metadata") or {}).get("name") or "", denied, res.group)
        v = judge(policy.warn)
        if v:
            ctx.warnings.append(f"would violate PodSecurity {_quote(str(policy.warn))}: {_reasons(v)}")

    def _exempt_namespace_warning(self, name: str, policy: Policy, labels: dict[str, Any]) -> str:
        """For a namespace exempt by configuration that labels itself a non-privileged policy."""
        if policy.fully_privileged() or policy.equivalent(self.cfg.defaults):
            return ""
        parts = [f"{mode}={lv}" for mode in MODES for lv in [getattr(policy, mode)]
                 if lv.level != "privileged" and (LABEL_PREFIX + mode in labels or
                                                  LABEL_PREFIX + mode + "-version" in labels)]
        return f"namespace {_quote(name)} is exempt from Pod Security, and the policy ({', '.join(parts)}) will be ignored"

    async def _namespace(self, rest: RestStorage, op: str, obj: dict[str, Any], old: dict[str, Any] | None,
                         ctx: RequestContext) -> None:
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        labels = md.get("labels") or {}
        policy, errs = policy_from_labels(labels, self.cfg.defaults)
        exempt = name in self.cfg.exempt_namespaces
        if op != "UPDATE" or old is None:
            if errs:
                raise E.new_invalid("Namespace", name, errs)
            warning = self._exempt_namespace_warning(name, policy, labels) if exempt else ""
            if warning:
                ctx.warnings.append(warning)
            return
        old_policy, old_errs = policy_from_labels((old.get("metadata") or {}).get("labels"), self.cfg.defaults)
        # labels already wrong stay writable (other fields must be); a new mistake is refused
        if errs and (not old_errs or [str(e) for e in errs] != [str(e) for e in old_errs]):
            raise E.new_invalid("Namespace", name, errs)
        new, prev = policy.enforce, old_policy.enforce
        if new == prev or new.level == "privileged":
            return
        if new.minor == prev.minor and LEVELS.index(new.level) <= LEVELS.index(prev.level):
            return  # relaxed at the same version: nothing that passed before fails now
        if exempt:
            warning = self._exempt_namespace_warning(name, policy, labels)
            if warning:
                ctx.warnings.append(warning)
            return
        ctx.warnings.extend(await self._existing_pods(rest, name, new))

    async def _existing_pods(self, rest: RestStorage, ns: str, lv: LevelVersion) -> list[str]:
        """upstream's EvaluatePodsInNamespace: pods grouped by the reasons they violate, one line per group
        naming its lexically first pod; one pod per controller first, so replicas do not crowd out the rest,
        at most MAX_PODS_TO_CHECK pods and POD_CHECK_SECONDS of work."""
        pod_res = rest.registry.get("", "v1", "pods")
        assert pod_res is not None
        first: list[dict[str, Any]] = []
        more: list[dict[str, Any]] = []
        owners: set[str] = set()
        for p in (await rest.cache_for(pod_res)).list(ns):
            spec = p.get("spec") or {}
            if spec.get("runtimeClassName") and spec["runtimeClassName"] in self.cfg.exempt_runtime_classes:
                continue
            ctrl = next((r.get("uid") for r in (p.get("metadata") or {}).get("ownerReferences") or []
                         if isinstance(r, dict) and r.get("controller")), None)
            if ctrl is not None and ctrl in owners:
                more.append(p)
                continue
            first.append(p)
            if ctrl is not None:
                owners.add(ctrl)
        ordered = first + more
        total = len(ordered)
        ordered = ordered[:MAX_PODS_TO_CHECK]
        deadline = time.monotonic() + POD_CHECK_SECONDS
        groups: dict[str, list[str]] = {}
        checked = len(ordered)
        for i, p in enumerate(ordered):
            v = evaluate(lv.level, lv.effective_minor, p.get("metadata") or {}, p.get("spec") or {})
            if v:
                groups.setdefault(", ".join(r for r, _ in v), []).append((p.get("metadata") or {}).get("name", ""))
            if time.monotonic() > deadline:
                checked = i + 1
                break
        out: list[str] = []
        if checked < total:
            out.append(f"new PodSecurity enforce level only checked against the first {checked} of {total} "
                       "existing pods")
        if groups:
            out.append(f"existing pods in namespace {_quote(ns)} violate the new PodSecurity enforce level "
                       f"{_quote(str(lv))}")
        lines = []
        for reasons, names in groups.items():
            n, head = len(names), min(names)
            others = "" if n == 1 else " (and 1 other pod)" if n == 2 else f" (and {n - 1} other pods)"
            lines.append(f"{head}{others}: {reasons}")
        return out + sorted(lines)


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
