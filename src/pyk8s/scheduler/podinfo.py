"""Pods compiled once for the scheduler (upstream framework.PodInfo).

Everything derived from a pod's namespace, labels and spec (requests, tolerations, node
affinity, affinity terms, spread constraints, host ports, images) lives in a ``PodTemplate``
shared by all pods with the same content, so ten thousand replicas of one Deployment are
parsed once. Plugins may memoise per-template results in ``PodTemplate.memo``.
"""

from __future__ import annotations

import datetime as _dt
from collections import OrderedDict
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import orjson

from .resources import CPU, MEMORY, NON_MISSING_DEFAULTS, pod_requests
from .selectors import (
    LabelSelector,
    NodeSelectorTerm,
    RequiredNodeAffinity,
    Toleration,
    compile_label_selector,
    compile_node_selector_terms,
    compile_tolerations,
)

__all__ = ["AffinityTerm", "PodTemplate", "PodInfo", "pod_info", "pod_key", "normalized_image_name"]

DEFAULT_NAMESPACE_LABEL = "kubernetes.io/metadata.name"


@dataclass(frozen=True, slots=True)
class AffinityTerm:
    """A parsed PodAffinityTerm (upstream framework.AffinityTerm) with its weight when preferred."""

    namespaces: frozenset[str]
    namespace_selector: LabelSelector | None
    selector: LabelSelector
    topology_key: str
    weight: int = 0

    def matches(self, namespace: str, labels: Mapping[str, str] | None, ns_labels: Mapping[str, str] | None) -> bool:
        if namespace in self.namespaces or (
            self.namespace_selector is not None and self.namespace_selector.matches(ns_labels or {})
        ):
            return self.selector.matches(labels)
        return False


def _affinity_terms(ns: str, terms: Any, weighted: bool) -> tuple[AffinityTerm, ...]:
    out = []
    for t in terms or ():
        weight = 0
        if weighted:
            weight = int(t.get("weight") or 0)
            t = t.get("podAffinityTerm") or {}
        names = frozenset(t.get("namespaces") or ())
        nss = t.get("namespaceSelector")
        if not names and nss is None:
            names = frozenset([ns])
        out.append(
            AffinityTerm(
                names,
                compile_label_selector(nss) if nss is not None else None,
                compile_label_selector(t.get("labelSelector")),
                t.get("topologyKey") or "",
                weight,
            )
        )
    return tuple(out)


def normalized_image_name(name: str) -> str:
    """As upstream ImageLocality: an untagged image name means ':latest'."""
    if name.rfind(":") <= name.rfind("/"):
        return name + ":latest"
    return name


@dataclass(slots=True, eq=False)
class PodTemplate:
    namespace: str
    labels: dict[str, str]
    spec: Mapping[str, Any]
    priority: int
    preemption_policy: str
    scheduler_name: str
    requests: dict[str, int]
    nonzero_requests: dict[str, int]
    tolerations: tuple[Toleration, ...]
    required_node_affinity: RequiredNodeAffinity
    preferred_node_terms: tuple[tuple[int, NodeSelectorTerm], ...]
    required_affinity: tuple[AffinityTerm, ...]
    required_anti_affinity: tuple[AffinityTerm, ...]
    preferred_affinity: tuple[AffinityTerm, ...]
    preferred_anti_affinity: tuple[AffinityTerm, ...]
    spread_constraints: tuple[Mapping[str, Any], ...]
    host_ports: tuple[tuple[str, str, int], ...]
    images: tuple[str, ...]
    scheduling_gates: tuple[str, ...]
    pvc_names: tuple[str, ...]
    memo: dict[Any, Any] = field(default_factory=dict)

    @property
    def has_affinity(self) -> bool:
        """Upstream PodsWithAffinity: any pod (anti-)affinity, required or preferred."""
        return bool(self.required_affinity or self.required_anti_affinity or self.preferred_affinity
                    or self.preferred_anti_affinity)

    @property
    def nonzero_cpu(self) -> int:
        return self.nonzero_requests.get(CPU, 0)

    @property
    def nonzero_memory(self) -> int:
        return self.nonzero_requests.get(MEMORY, 0)


def _host_ports(spec: Mapping[str, Any]) -> tuple[tuple[str, str, int], ...]:
    out: list[tuple[str, str, int]] = []
    # Sidecars (restartable init containers) hold their ports for the pod's life (v1.33 patch fix).
    containers = list(spec.get("containers") or ())
    containers += [c for c in spec.get("initContainers") or () if c.get("restartPolicy") == "Always"]
    for c in containers:
        for p in c.get("ports") or ():
            hp = int(p.get("hostPort") or 0)
            if hp <= 0:
                continue
            out.append((p.get("hostIP") or "0.0.0.0", p.get("protocol") or "TCP", hp))
    return tuple(out)


def _compile(namespace: str, labels: dict[str, str], spec: Mapping[str, Any]) -> PodTemplate:
    affinity = spec.get("affinity") or {}
    node_aff = affinity.get("nodeAffinity") or {}
    preferred_node = tuple(
        (int(p.get("weight") or 0), t)
        for p, t in zip(
            node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or (),
            compile_node_selector_terms(
                (p.get("preference") or {}) for p in node_aff.get("preferredDuringSchedulingIgnoredDuringExecution") or ()
            ),
            strict=True,
        )
    )
    pa = affinity.get("podAffinity") or {}
    paa = affinity.get("podAntiAffinity") or {}
    images = tuple(
        normalized_image_name(c.get("image") or "")
        for c in list(spec.get("initContainers") or ()) + list(spec.get("containers") or ())
    )
    return PodTemplate(
        namespace=namespace,
        labels=labels,
        spec=spec,
        priority=int(spec.get("priority") or 0),
        preemption_policy=spec.get("preemptionPolicy") or "PreemptLowerPriority",
        scheduler_name=spec.get("schedulerName") or "default-scheduler",
        requests=pod_requests(spec),
        nonzero_requests=pod_requests(spec, NON_MISSING_DEFAULTS),
        tolerations=compile_tolerations(spec.get("tolerations")),
        required_node_affinity=RequiredNodeAffinity.from_spec(spec),
        preferred_node_terms=preferred_node,
        required_affinity=_affinity_terms(namespace, pa.get("requiredDuringSchedulingIgnoredDuringExecution"), False),
        required_anti_affinity=_affinity_terms(
            namespace, paa.get("requiredDuringSchedulingIgnoredDuringExecution"), False),
        preferred_affinity=_affinity_terms(namespace, pa.get("preferredDuringSchedulingIgnoredDuringExecution"), True),
        preferred_anti_affinity=_affinity_terms(
            namespace, paa.get("preferredDuringSchedulingIgnoredDuringExecution"), True),
        spread_constraints=tuple(spec.get("topologySpreadConstraints") or ()),
        host_ports=_host_ports(spec),
        images=images,
        scheduling_gates=tuple(g.get("name", "") for g in spec.get("schedulingGates") or ()),
        pvc_names=tuple(
            v["persistentVolumeClaim"].get("claimName", "")
            for v in spec.get("volumes") or ()
            if v.get("persistentVolumeClaim")
        ),
    )


_TEMPLATES: OrderedDict[bytes, PodTemplate] = OrderedDict()
_TEMPLATE_LIMIT = 8192


# Volume sources that never influence scheduling (no claims, no attach limits, no topology).
_INERT_VOLUMES = frozenset(("projected", "secret", "configMap", "downwardAPI", "emptyDir"))


def _template_spec(spec: Mapping[str, Any]) -> Mapping[str, Any]:
    """The spec without per-pod details that mean nothing to scheduling.

    nodeName differs between otherwise identical pods and is read from the pod itself. The
    ServiceAccount admission gives every pod its own ``kube-api-access-<random>`` volume and
    mounts; left in, they would make each replica a template of its own.
    """
    vols = spec.get("volumes")
    mounts = any("volumeMounts" in c for f in ("containers", "initContainers") for c in spec.get(f) or ())
    if "nodeName" not in spec and not vols and not mounts:
        return spec
    out = {k: v for k, v in spec.items() if k != "nodeName"}
    if vols:
        kept = [v for v in vols if not set(v) - {"name"} <= _INERT_VOLUMES]
        if kept:
            out["volumes"] = kept
        else:
            out.pop("volumes", None)
    if mounts:
        for f in ("containers", "initContainers"):
            if spec.get(f):
                out[f] = [{k: v for k, v in c.items() if k != "volumeMounts"} for c in spec[f]]
    return out


def _template(namespace: str, labels: dict[str, str], spec: Mapping[str, Any]) -> PodTemplate:
    spec = _template_spec(spec)
    key = orjson.dumps((namespace, labels, spec), option=orjson.OPT_SORT_KEYS)
    t = _TEMPLATES.get(key)
    if t is not None:
        _TEMPLATES.move_to_end(key)
        return t
    t = _compile(namespace, labels, spec)
    _TEMPLATES[key] = t
    if len(_TEMPLATES) > _TEMPLATE_LIMIT:
        _TEMPLATES.popitem(last=False)
    return t


def pod_key(pod: Mapping[str, Any]) -> str:
    """Upstream keys pods by UID; fall back to namespace/name for UID-less test objects."""
    md = pod.get("metadata") or {}
    uid = md.get("uid")
    if uid:
        return uid
    return f"{md.get('namespace') or 'default'}/{md.get('name', '')}"


def _parse_time(s: str | None) -> float | None:
    if not s:
        return None
    try:
        return _dt.datetime.fromisoformat(s.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


@dataclass(slots=True, eq=False)
class PodInfo:
    pod: Mapping[str, Any]
    key: str
    name: str
    namespace: str
    tmpl: PodTemplate
    node_name: str
    nominated_node_name: str
    terminating: bool
    start_time: float | None

    @property
    def labels(self) -> dict[str, str]:
        return self.tmpl.labels

    @property
    def priority(self) -> int:
        return self.tmpl.priority


def pod_info(pod: Mapping[str, Any] | PodInfo) -> PodInfo:
    """Compile a wire-form pod (idempotent on a PodInfo)."""
    if isinstance(pod, PodInfo):
        return pod
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ns = md.get("namespace") or "default"
    tmpl = _template(ns, md.get("labels") or {}, spec)
    return PodInfo(
        pod=pod,
        key=pod_key(pod),
        name=md.get("name", ""),
        namespace=ns,
        tmpl=tmpl,
        node_name=spec.get("nodeName") or "",
        nominated_node_name=status.get("nominatedNodeName") or "",
        terminating=md.get("deletionTimestamp") is not None,
        start_time=_parse_time(status.get("startTime")),
    )
