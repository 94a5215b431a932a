"""What objects cost against a ResourceQuota (upstream's quota evaluators in
pkg/quota/v1/evaluator/core), as pure functions shared by the quota controller (status.used)
and the quota admission plug-in (refusing creates that would exceed status.hard).

Usage is a dict of resource name -> Quantity: object counts (`pods`, `count/pods`,
`count/deployments.apps`, ...), pod compute (`requests.cpu`, `limits.memory`, ...),
service node ports and load balancers, claim storage per storage class.
"""

from __future__ import annotations

import time
from typing import Any

from ..api.quantity import Quantity, parse_quantity
from ..api.timefmt import parse_time_or_none

__all__ = [
    "usage", "pod_usage", "matches_quota", "matching_resources", "pod_constraints", "quantities",
    "format_usage", "add", "pretty", "kind_of_resource", "LEGACY_COUNTS",
]

ONE = Quantity.from_int(1)
STORAGE_CLASS_SUFFIX = ".storageclass.storage.k8s.io/"
# legacy object-count names (and the plural they count)
LEGACY_COUNTS = {"pods": "pods", "services": "services", "replicationcontrollers": "replicationcontrollers",
                 "resourcequotas": "resourcequotas", "secrets": "secrets", "configmaps": "configmaps",
                 "persistentvolumeclaims": "persistentvolumeclaims"}
POD_COMPUTE = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory",
               "ephemeral-storage", "requests.ephemeral-storage", "limits.ephemeral-storage"}
CONSTRAINED = {"cpu", "memory", "requests.cpu", "requests.memory", "limits.cpu", "limits.memory"}
SERVICE_NAMES = {"services", "services.nodeports", "services.loadbalancers"}


def quantities(rl: dict[str, Any] | None) -> dict[str, Quantity]:
    out = {}
    for k, v in (rl or {}).items():
        try:
            out[k] = parse_quantity(v)
        except ValueError:
            continue
    return out


def add(a: dict[str, Quantity], b: dict[str, Quantity]) -> dict[str, Quantity]:
    out = dict(a)
    for k, v in b.items():
        out[k] = out[k] + v if k in out else v
    return out


def _max(a: dict[str, Quantity], b: dict[str, Quantity]) -> dict[str, Quantity]:
    out = dict(a)
    for k, v in b.items():
        if k not in out or v > out[k]:
            out[k] = v
    return out


def format_usage(u: dict[str, Quantity]) -> dict[str, str]:
    return {k: str(v) for k, v in sorted(u.items())}


def pretty(u: dict[str, Quantity]) -> str:
    """upstream's prettyPrint: sorted name=quantity pairs joined by commas."""
    return ",".join(f"{k}={v}" for k, v in sorted(u.items()))


def kind_of_resource(name: str) -> tuple[str, str] | None:
    """The (plural, group) whose objects a quota resource name counts, or None for pod-compute names."""
    if name.startswith("count/"):
        plural, _, group = name[len("count/"):].partition(".")
        return plural, group
    if name in LEGACY_COUNTS:
        return LEGACY_COUNTS[name], ""
    if name in SERVICE_NAMES:
        return "services", ""
    if name == "requests.storage" or STORAGE_CLASS_SUFFIX in name:
        return "persistentvolumeclaims", ""
    return None


def _is_pod_resource(name: str) -> bool:
    if kind_of_resource(name) is not None:
        return name in ("pods", "count/pods")
    return True  # compute: cpu, memory, hugepages-*, requests.<extended>, ...


def matching_resources(plural: str, group: str, names: list[str]) -> list[str]:
    """The quota resource names (of `names`) that objects of plural.group can use."""
    out = []
    for n in names:
        k = kind_of_resource(n)
        if plural == "pods" and not group:
            if _is_pod_resource(n):
                out.append(n)
        elif k == (plural, group):
            out.append(n)
    return out


# ---- pods ---------------------------------------------------------------------------------
def _counts_for_quota(pod: dict[str, Any], now: float) -> bool:
    """upstream's QuotaV1Pod: terminal pods, and pods stuck past their deletion grace, cost nothing."""
    if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
        return False
    md = pod.get("metadata") or {}
    if md.get("deletionTimestamp") and md.get("deletionGracePeriodSeconds") is not None:
        t = parse_time_or_none(md["deletionTimestamp"])
        if t is not None and now > t + int(md["deletionGracePeriodSeconds"]):
            return False
    return True


def _pod_requests_limits(spec: dict[str, Any]) -> tuple[dict[str, Quantity], dict[str, Quantity]]:
    """Effective pod requests/limits: app containers plus sidecars, or the largest init step if larger."""
    req: dict[str, Quantity] = {}
    lim: dict[str, Quantity] = {}
    for c in spec.get("containers") or []:
        r = c.get("resources") or {}
        req, lim = add(req, quantities(r.get("requests"))), add(lim, quantities(r.get("limits")))
    sidecar_req: dict[str, Quantity] = {}
    sidecar_lim: dict[str, Quantity] = {}
    init_req: dict[str, Quantity] = {}
    init_lim: dict[str, Quantity] = {}
    for c in spec.get("initContainers") or []:
        r = c.get("resources") or {}
        cr, cl = quantities(r.get("requests")), quantities(r.get("limits"))
        if c.get("restartPolicy") == "Always":
            sidecar_req, sidecar_lim = add(sidecar_req, cr), add(sidecar_lim, cl)
            init_req, init_lim = _max(init_req, sidecar_req), _max(init_lim, sidecar_lim)
        else:
            init_req, init_lim = _max(init_req, add(sidecar_req, cr)), _max(init_lim, add(sidecar_lim, cl))
    req, lim = _max(add(req, sidecar_req), init_req), _max(add(lim, sidecar_lim), init_lim)
    overhead = quantities(spec.get("overhead"))
    return add(req, overhead), add(lim, overhead)


def _compute(requests: dict[str, Quantity], limits: dict[str, Quantity]) -> dict[str, Quantity]:
    """upstream's podComputeUsageHelper."""
    out: dict[str, Quantity] = {"pods": ONE}
    for r in ("cpu", "memory", "ephemeral-storage"):
        if r in requests:
            out[r] = requests[r]
            out[f"requests.{r}"] = requests[r]
        if r in limits:
            out[f"limits.{r}"] = limits[r]
    for name, q in requests.items():
        if name.startswith("hugepages-"):
            out[name] = q
            out[f"requests.{name}"] = q
        elif "/" in name and not name.startswith("kubernetes.io/") and not name.startswith("requests."):
            out[f"requests.{name}"] = q  # extended resources are quota'd as requests.<name> only
    return out


def pod_usage(pod: dict[str, Any], now: float | None = None) -> dict[str, Quantity]:
    out = {"count/pods": ONE}
    if not _counts_for_quota(pod, time.time() if now is None else now):
        return out
    req, lim = _pod_requests_limits(pod.get("spec") or {})
    return add(out, _compute(req, lim))


def pod_constraints(required: list[str], pod: dict[str, Any]) -> str | None:
    """upstream's podEvaluator.Constraints: quota on cpu/memory needs every container to state it."""
    need = set(required) & CONSTRAINED
    if not need:
        return None
    missing: dict[str, set[str]] = {}
    spec = pod.get("spec") or {}
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        r = c.get("resources") or {}
        have = set(_compute(quantities(r.get("requests")), quantities(r.get("limits"))))
        for res in need - have:
            missing.setdefault(res, set()).add(c.get("name", ""))
    if not missing:
        return None
    return "must specify " + "; ".join(f"{res} for: {','.join(sorted(missing[res]))}" for res in sorted(missing))


def _best_effort(pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    for c in list(spec.get("containers") or []) + list(spec.get("initContainers") or []):
        r = c.get("resources") or {}
        for part in ("requests", "limits"):
            if any(k in ("cpu", "memory") for k in (r.get(part) or {})):
                return False
    return True


def _cross_namespace_affinity(pod: dict[str, Any]) -> bool:
    aff = (pod.get("spec") or {}).get("affinity") or {}
    for kind in ("podAffinity", "podAntiAffinity"):
        a = aff.get(kind) or {}
        terms = list(a.get("requiredDuringSchedulingIgnoredDuringExecution") or []) + [
            w.get("podAffinityTerm") or {} for w in a.get("preferredDuringSchedulingIgnoredDuringExecution") or []]
        if any(t.get("namespaces") or t.get("namespaceSelector") is not None for t in terms):
            return True
    return False


def _pod_matches_scope(scope: str, op: str, values: list[str], pod: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    if scope == "Terminating":
        return spec.get("activeDeadlineSeconds") is not None and int(spec["activeDeadlineSeconds"]) >= 0
    if scope == "NotTerminating":
        return not (spec.get("activeDeadlineSeconds") is not None and int(spec["activeDeadlineSeconds"]) >= 0)
    if scope == "BestEffort":
        return _best_effort(pod)
    if scope == "NotBestEffort":
        return not _best_effort(pod)
    if scope == "PriorityClass":
        pc = spec.get("priorityClassName")
        if op == "Exists":
            return bool(pc)
        if op == "DoesNotExist":
            return not pc
        if op == "In":
            return bool(pc) and pc in values
        if op == "NotIn":
            return not pc or pc not in values
        return False
    if scope == "CrossNamespacePodAffinity":
        return _cross_namespace_affinity(pod)
    return False


def _scopes(quota: dict[str, Any]) -> list[tuple[str, str, list[str]]]:
    spec = quota.get("spec") or {}
    out: list[tuple[str, str, list[str]]] = [(s, "Exists", []) for s in spec.get("scopes") or []]
    for e in (spec.get("scopeSelector") or {}).get("matchExpressions") or []:
        out.append((e.get("scopeName", ""), e.get("operator", ""), list(e.get("values") or [])))
    return out


def matches_quota(quota: dict[str, Any], plural: str, group: str, obj: dict[str, Any]) -> bool:
    """Whether the quota constrains this object: it limits something the object uses, and its scopes match."""
    # status.hard, as upstream: a quota the controller has not processed yet constrains nothing
    hard = list((quota.get("status") or {}).get("hard") or {})
    if not matching_resources(plural, group, hard):
        return False
    scopes = _scopes(quota)
    if not scopes:
        return True
    if plural != "pods" or group:
        return False  # scopes only ever select pods
    return all(_pod_matches_scope(s, op, vals, obj) for s, op, vals in scopes)


# ---- other kinds --------------------------------------------------------------------------
def _service_usage(svc: dict[str, Any]) -> dict[str, Quantity]:
    out = {"count/services": ONE, "services": ONE}
    spec = svc.get("spec") or {}
    ports = len(spec.get("ports") or [])
    typ = spec.get("type") or "ClusterIP"
    if typ == "NodePort":
        out["services.nodeports"] = Quantity.from_int(ports)
    elif typ == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts", True) is not False:
            out["services.nodeports"] = Quantity.from_int(ports)
        out["services.loadbalancers"] = ONE
    return out


def _pvc_usage(pvc: dict[str, Any]) -> dict[str, Quantity]:
    out = {"count/persistentvolumeclaims": ONE, "persistentvolumeclaims": ONE}
    spec = pvc.get("spec") or {}
    sc = spec.get("storageClassName") or ((pvc.get("metadata") or {}).get("annotations") or {}).get(
        "volume.beta.kubernetes.io/storage-class", "")
    if sc:
        out[f"{sc}{STORAGE_CLASS_SUFFIX}persistentvolumeclaims"] = ONE
    req = quantities((spec.get("resources") or {}).get("requests"))
    alloc = quantities((pvc.get("status") or {}).get("allocatedResources"))
    storage = req.get("storage")
    if "storage" in alloc and (storage is None or alloc["storage"] > storage):
        storage = alloc["storage"]
    if storage is not None:
        out["requests.storage"] = storage
        if sc:
            out[f"{sc}{STORAGE_CLASS_SUFFIX}requests.storage"] = storage
    return out


def usage(plural: str, group: str, obj: dict[str, Any], now: float | None = None) -> dict[str, Quantity]:
    """What one object of plural.group uses."""
    if not group:
        if plural == "pods":
            return pod_usage(obj, now)
        if plural == "services":
            return _service_usage(obj)
        if plural == "persistentvolumeclaims":
            return _pvc_usage(obj)
        if plural in LEGACY_COUNTS:
            return {f"count/{plural}": ONE, plural: ONE}
        return {f"count/{plural}": ONE}
    return {f"count/{plural}.{group}": ONE}
