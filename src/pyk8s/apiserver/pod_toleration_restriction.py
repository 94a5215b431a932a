"""The PodTolerationRestriction admission plug-in (upstream's
plugin/pkg/admission/podtolerationrestriction, off by default): a pod created in a namespace gets
the namespace's default tolerations (annotation `scheduler.alpha.kubernetes.io/defaultTolerations`,
a JSON list; where the namespace has none, the cluster's `default` from the plug-in's
PodTolerationRestrictionConfig), a pod that is not BestEffort tolerates memory pressure, and the
pod's tolerations (created or updated) must all be covered by the namespace's whitelist
(`scheduler.alpha.kubernetes.io/tolerationsWhitelist`; where none, the cluster's `whitelist`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from ..api import errors as E
from ..api.defaults.core import compute_pod_qos
from ..api.resources import Resource
from .admission_config import plugin_config
from .rest import RequestContext, RestStorage
from .tolerations import merge_tolerations, verify_against_whitelist

__all__ = ["PodTolerationRestriction", "load_config", "NS_DEFAULT_TOLERATIONS", "NS_WHITELIST_TOLERATIONS"]

NS_DEFAULT_TOLERATIONS = "scheduler.alpha.kubernetes.io/defaultTolerations"
NS_WHITELIST_TOLERATIONS = "scheduler.alpha.kubernetes.io/tolerationsWhitelist"
_CONFIG_VERSIONS = ("podtolerationrestriction.admission.k8s.io/v1alpha1",)
_OPERATORS = ("", "Equal", "Exists")
_EFFECTS = ("", "NoSchedule", "PreferNoSchedule", "NoExecute")
MEMORY_PRESSURE = {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"}


@dataclass(frozen=True)
class Config:
    default: list[dict[str, Any]] = field(default_factory=list)
    whitelist: list[dict[str, Any]] = field(default_factory=list)


def _tolerations(raw: Any, where: str) -> list[dict[str, Any]]:
    """A list of tolerations, checked as upstream's ValidateTolerations checks the essentials."""
    if raw is None:
        return []
    if not isinstance(raw, list) or any(not isinstance(t, dict) for t in raw):
        raise ValueError(f"{where}: must be a list of tolerations")
    for i, t in enumerate(raw):
        if t.get("operator", "") not in _OPERATORS:
            raise ValueError(f'{where}[{i}].operator: Unsupported value: "{t.get("operator")}"')
        if t.get("effect", "") not in _EFFECTS:
            raise ValueError(f'{where}[{i}].effect: Unsupported value: "{t.get("effect")}"')
        if t.get("operator") == "Exists" and t.get("value"):
            raise ValueError(f"{where}[{i}].operator: Invalid value: must be empty when `operator` is 'Exists'")
    return raw


def load_config(path: str | None) -> Config:
    """The plug-in's configuration from `--admission-control-config-file` (none: no cluster defaults)."""
    found = plugin_config(path, "PodTolerationRestriction")
    if found is None:
        return Config()
    doc, where = found
    if not isinstance(doc, dict) or doc.get("kind") != "Configuration" or doc.get("apiVersion") not in _CONFIG_VERSIONS:
        raise ValueError(f"{where}: expected kind Configuration of {', '.join(_CONFIG_VERSIONS)}")
    return Config(_tolerations(doc.get("default"), f"{where}: default"),
                  _tolerations(doc.get("whitelist"), f"{where}: whitelist"))


def _forbidden(pod: dict[str, Any], msg: str) -> E.StatusError:
    return E.new_forbidden("pods", (pod.get("metadata") or {}).get("name", ""), msg)


class PodTolerationRestriction:
    def __init__(self, cfg: Config) -> None:
        self.cfg = cfg

    async def _namespace_tolerations(self, rest: RestStorage, pod: dict[str, Any], namespace: str,
                                     key: str) -> list[dict[str, Any]] | None:
        """The namespace annotation's tolerations, or None where it has no such annotation."""
        ns_res = rest.registry.get("", "v1", "namespaces")
        assert ns_res is not None
        ns = await rest.get_current(ns_res, None, namespace) or {}
        anns = (ns.get("metadata") or {}).get("annotations") or {}
        if key not in anns:
            return None
        if not anns[key]:
            return []
        where = f"namespace {namespace} annotation {key}"
        try:
            return _tolerations(json.loads(anns[key]), where)
        except json.JSONDecodeError as e:
            raise _forbidden(pod, f"{where}: {e}") from None
        except ValueError as e:
            raise _forbidden(pod, str(e)) from None

    async def admit(self, rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != ("", "Pod") or ctx.subresource or op not in ("CREATE", "UPDATE"):
            return
        spec = pod.setdefault("spec", {})
        extra: list[dict[str, Any]] = []
        if op == "CREATE":
            ns_default = await self._namespace_tolerations(rest, pod, pod["metadata"].get("namespace", ""),
                                                           NS_DEFAULT_TOLERATIONS)
            extra = list(self.cfg.default if ns_default is None else ns_default)
        if compute_pod_qos(pod) != "BestEffort":
            extra.append(dict(MEMORY_PRESSURE))
        if extra:
            spec["tolerations"] = merge_tolerations(spec.get("tolerations") or [], extra)
        await self.validate(rest, res, op, pod, old, ctx)

    async def validate(self, rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                       old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != ("", "Pod") or ctx.subresource or op not in ("CREATE", "UPDATE"):
            return
        tols = (pod.get("spec") or {}).get("tolerations") or []
        if not tols:
            return
        whitelist = await self._namespace_tolerations(rest, pod, pod["metadata"].get("namespace", ""),
                                                      NS_WHITELIST_TOLERATIONS)
        scope = "namespace"
        if whitelist is None:
            whitelist, scope = self.cfg.whitelist, "cluster"
        if not verify_against_whitelist(tols, whitelist):
            raise _forbidden(pod, "pod tolerations (possibly merged with namespace default tolerations) "
                                  f"conflict with its {scope} whitelist")
