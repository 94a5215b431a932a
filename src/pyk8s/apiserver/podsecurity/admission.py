"""The PodSecurity admission plug-in (upstream's k8s.io/pod-security-admission/admission).

- Pods (create, updates that change what the checks see, the ephemeralcontainers subresource):
  the namespace's enforce level refuses (403 `violates PodSecurity "level:version": ...`), its
  audit level annotates the audit event (`pod-security.kubernetes.io/audit-violations`), its
  warn level answers a `Warning` header (`would violate PodSecurity ...`).
- Workload resources (their pod templates): audit and warn only, as upstream: their pods meet
  enforce when they are created.
- Namespaces: the labels must parse (422 with upstream's field errors, so no casing trick passes
  as a level); a change of the enforce level answers warnings naming the existing pods that
  violate it (`kubectl label --dry-run=server` shows them).
Exemptions and the defaults for unlabelled namespaces come from the admission configuration file.
Namespaces and pods are read from the watch cache.
"""

from __future__ import annotations

from typing import Any

from ...api import errors as E
from ...api.resources import Resource
from ..audit.filter import add_annotation
from ..rest import RequestContext, RestStorage
from .checks import evaluate
from .config import PodSecurityConfig
from .policy import LevelVersion, Policy, policy_from_labels

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
    spec is immutable but for images and ephemeral containers; metadata-only updates pass."""
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
    # anything else a validation would refuse anyway; judging it costs nothing and fails closed
    for key in ("securityContext", "volumes", "hostNetwork", "hostPID", "hostIPC", "os", "hostUsers"):
        if ns.get(key) != os_.get(key):
            return True
    return False


class PodSecurity:
    def __init__(self, cfg: PodSecurityConfig) -> None:
        self.cfg = cfg
        self._policies: dict[tuple[str, str], Policy] = {}

    def _user(self, ctx: RequestContext) -> str:
        return getattr(ctx.user, "name", "") or ""

    async def _policy(self, rest: RestStorage, ns: str) -> Policy | None:
        ns_res = rest.registry.get("", "v1", "namespaces")
        assert ns_res is not None
        nsobj = await rest.get_current(ns_res, None, ns, consistent=False)
        md = (nsobj or {}).get("metadata") or {}
        key = (ns, str(md.get("resourceVersion")))  # labels parse once per namespace write, not per pod
        policy = self._policies.get(key)
        if policy is None:
            if len(self._policies) > 4096:
                self._policies.clear()
            policy, _ = policy_from_labels(md.get("labels") or {}, self.cfg.defaults)
            self._policies[key] = policy
        return policy

    def _exempt(self, ns: str, ctx: RequestContext, runtime_class: Any) -> str:
        if ns in self.cfg.exempt_namespaces:
            return "namespace"
        if self._user(ctx) in self.cfg.exempt_usernames:
            return "user"
        if runtime_class and runtime_class in self.cfg.exempt_runtime_classes:
            return "runtimeClass"
        return ""

    async def admit(self, rest: RestStorage, res: Resource, op: str, obj: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if op not in ("CREATE", "UPDATE"):
            return
        key = (res.group, res.resource)
        if key == ("", "namespaces"):
            if not ctx.subresource:
                await self._namespace(rest, op, obj, old, ctx)
            return
        if key == ("", "pods"):
            if ctx.subresource not in ("", "ephemeralcontainers"):
                return
            if op == "UPDATE" and old is not None and not significant_pod_update(obj, old):
                return
            await self._pod(rest, res, obj, ctx, obj.get("metadata") or {}, obj.get("spec") or {}, enforce=True)
            return
        path = _TEMPLATES.get(key)
        if path is None or ctx.subresource:
            return
        tmpl = _dig(obj, path)
        if op == "UPDATE" and old is not None and tmpl == _dig(old, path):
            return  # the template is what it was: nothing new to warn about
        await self._pod(rest, res, obj, ctx, tmpl.get("metadata") or {}, tmpl.get("spec") or {}, enforce=False)

    async def _pod(self, rest: RestStorage, res: Resource, obj: dict[str, Any], ctx: RequestContext,
                   meta: dict[str, Any], spec: dict[str, Any], enforce: bool) -> None:
        ns = (obj.get("metadata") or {}).get("namespace") or ""
        if not ns:
            return
        exempt = self._exempt(ns, ctx, spec.get("runtimeClassName"))
        if exempt:
            add_annotation(_ANN + "exempt", exempt)
            return
        policy = await self._policy(rest, ns)
        if policy is None or policy.fully_privileged():
            return
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

    async def _namespace(self, rest: RestStorage, op: str, obj: dict[str, Any], old: dict[str, Any] | None,
                         ctx: RequestContext) -> None:
        md = obj.get("metadata") or {}
        name = md.get("name") or ""
        policy, errs = policy_from_labels(md.get("labels"), self.cfg.defaults)
        if errs:
            raise E.new_invalid("Namespace", name, errs)
        if op != "UPDATE" or old is None:
            return  # a new namespace has no pods to judge
        old_policy, old_errs = policy_from_labels((old.get("metadata") or {}).get("labels"), self.cfg.defaults)
        if policy.enforce == old_policy.enforce and not old_errs:
            return
        if policy.enforce.level == "privileged":
            return
        if name in self.cfg.exempt_namespaces:
            ctx.warnings.append(f"namespace {_quote(name)} is exempt from Pod Security, and the policy will not "
                                "be enforced")
            return
        warnings = await self._existing_pods(rest, name, policy.enforce)
        if warnings:
            ctx.warnings.append(f"existing pods in namespace {_quote(name)} violate the new PodSecurity enforce "
                                f"level {_quote(str(policy.enforce))}")
            ctx.warnings.extend(warnings)

    async def _existing_pods(self, rest: RestStorage, ns: str, lv: LevelVersion) -> list[str]:
        """upstream's EvaluatePodsInNamespace: pods grouped by the reasons they violate, one line per group
        naming its first pod by name; one pod per controller first, so replicas do not crowd out the rest."""
        pod_res = rest.registry.get("", "v1", "pods")
        assert pod_res is not None
        pods = (await rest.cache_for(pod_res)).list(ns)
        first: list[dict[str, Any]] = []
        more: list[dict[str, Any]] = []
        owners: set[str] = set()
        for p in pods:
            ctrl = next((r.get("uid") for r in (p.get("metadata") or {}).get("ownerReferences") or []
                         if isinstance(r, dict) and r.get("controller")), None)
            if ctrl is None or ctrl not in owners:
                first.append(p)
                if ctrl is not None:
                    owners.add(ctrl)
            else:
                more.append(p)
        ordered = first + more
        total = len(ordered)
        ordered = ordered[:MAX_PODS_TO_CHECK]
        groups: dict[str, list[str]] = {}
        for p in ordered:
            spec = p.get("spec") or {}
            if spec.get("runtimeClassName") and spec["runtimeClassName"] in self.cfg.exempt_runtime_classes:
                continue
            v = evaluate(lv.level, lv.effective_minor, p.get("metadata") or {}, spec)
            if v:
                groups.setdefault(", ".join(r for r, _ in v), []).append((p.get("metadata") or {}).get("name", ""))
        out: list[str] = []
        if len(ordered) < total:
            out.append(f"new PodSecurity enforce level only checked against the first {len(ordered)} of {total} "
                       "existing pods")
        for reasons, names in groups.items():
            n = len(names)
            head = min(names)
            if n == 1:
                out.append(f"{head}: {reasons}")
            elif n == 2:
                out.append(f"{head} (and 1 other pod): {reasons}")
            else:
                out.append(f"{head} (and {n - 1} other pods): {reasons}")
        return out


def _quote(s: str) -> str:
    return '"' + s.replace("\\", "\\\\").replace('"', '\\"') + '"'
