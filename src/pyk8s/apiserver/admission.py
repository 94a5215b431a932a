"""Built-in admission plug-ins, as upstream's defaults enable them.

Mutating: ServiceAccount (pod identity and the projected kube-api-access volume),
DefaultTolerationSeconds, Priority, service ClusterIP/NodePort allocation. Validating checks
that need other objects live here too. (Node podCIDRs come from the node-ipam-controller,
controllers/nodeipam.py, as upstream's kube-controller-manager gives them.)
"""

from __future__ import annotations

import ipaddress
import random
import time
from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from . import limitranger, quota_admission, runtimeclass_admission, storage_admission
from .rest import RequestContext, RestStorage

SA_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION = 3607  # upstream's bound token lifetime for kube-api-access volumes
_ALNUM = "bcdfghjklmnpqrstvwxz2456789"

SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}


def _forbidden_pod(name: str, msg: str) -> E.StatusError:
    return E.new_forbidden("pods", name, msg)


async def service_account(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                          old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != ("", "Pod") or op != "CREATE":
        return
    md, spec = pod["metadata"], pod.setdefault("spec", {})
    if (md.get("annotations") or {}).get("kubernetes.io/config.mirror"):
        return  # mirror pods keep what the kubelet gave them
    name = spec.get("serviceAccountName") or spec.get("serviceAccount") or "default"
    spec["serviceAccountName"] = name
    spec["serviceAccount"] = name
    sa_res = rest.registry.get("", "v1", "serviceaccounts")
    assert sa_res is not None
    sa = await rest.get_current(sa_res, md.get("namespace"), name)
    if sa is None:
        raise _forbidden_pod(md.get("name") or md.get("generateName", ""),
                             f'error looking up service account {md.get("namespace")}/{name}: '
                             f'serviceaccount "{name}" not found')
    if not spec.get("imagePullSecrets") and sa.get("imagePullSecrets"):
        # as upstream: a pod that names no pull secrets gets its service account's
        spec["imagePullSecrets"] = [{"name": r.get("name", "")} for r in sa["imagePullSecrets"]]
    automount = spec.get("automountServiceAccountToken")
    if automount is None:
        automount = sa.get("automountServiceAccountToken", True)
    if automount is False:
        return
    vols = spec.setdefault("volumes", [])
    if any(v.get("name", "").startswith("kube-api-access-") for v in vols):
        return
    # a container that mounts something at the token path already opts out of the default mount
    vname = "kube-api-access-" + "".join(random.choices(_ALNUM, k=5))
    vols.append({
        "name": vname,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION, "path": "token"}},
                {"configMap": {"name": "kube-root-ca.crt", "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {"downwardAPI": {"items": [{"path": "namespace",
                                            "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
            ],
        },
    })
    for key in ("initContainers", "containers"):
        for c in spec.get(key) or []:
            mounts = c.setdefault("volumeMounts", [])
            if any(m.get("mountPath") == SA_MOUNT_PATH for m in mounts):
                continue
            mounts.append({"name": vname, "readOnly": True, "mountPath": SA_MOUNT_PATH})


def default_toleration_seconds(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                               old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != ("", "Pod") or op != "CREATE":
        return
    spec = pod.setdefault("spec", {})
    tols = spec.get("tolerations") or []
    for key in ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable"):
        covered = any(
            (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            and t.get("effect") in (None, "", "NoExecute")
            for t in tols
        )
        if not covered:
            tols.append({"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300})
    spec["tolerations"] = tols


async def priority(rest: RestStorage, res: Resource, op: str, pod: dict[str, Any],
                   old: dict[str, Any] | None, ctx: RequestContext) -> None:
    if res.group_kind != ("", "Pod") or op != "CREATE":
        return
    spec = pod.setdefault("spec", {})
    pc_res = rest.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    assert pc_res is not None
    name = spec.get("priorityClassName")
    pc = None
    if name:
        pc = await rest.get_current(pc_res, None, name)
        if pc is None:
            if name in SYSTEM_PRIORITY_CLASSES:
                value = SYSTEM_PRIORITY_CLASSES[name]
                if spec.get("priority") not in (None, value):
                    raise _forbidden_pod(pod["metadata"].get("name", ""),
                                         "the integer value of priority must not be provided in pod spec; "
                                         "priority admission controller computed "
                                         f"{value} from the given PriorityClass name")
                spec["priority"] = value
                spec.setdefault("preemptionPolicy", "PreemptLowerPriority")
                return
            raise _forbidden_pod(pod["metadata"].get("name", ""), f"no PriorityClass with name {name} was found")
    else:
        cache = await rest.cache_for(pc_res)
        defaults = [p for p in cache.list(None) if p.get("globalDefault")]
        if defaults:
            pc = min(defaults, key=lambda p: p.get("value", 0))
            spec["priorityClassName"] = pc["metadata"]["name"]
    value = int(pc.get("value", 0)) if pc else 0
    if spec.get("priority") is not None and spec["priority"] != value:
        raise _forbidden_pod(pod["metadata"].get("name", ""),
                             "the integer value of priority must not be provided in pod spec; priority admission "
                             f"controller computed {value} from the given PriorityClass name")
    spec["priority"] = value
    spec.setdefault("preemptionPolicy", (pc or {}).get("preemptionPolicy", "PreemptLowerPriority"))


class ServiceAllocator:
    """ClusterIPs from the service CIDR and NodePorts from their range, allocated randomly as upstream does."""

    def __init__(self, service_cidr: str = "10.96.0.0/12", node_port_range: tuple[int, int] = (30000, 32767)) -> None:
        self.net = ipaddress.ip_network(service_cidr)
        self.port_lo, self.port_hi = node_port_range
        # values handed out by a create still in flight; once the cache shows the write (or a delete),
        # the cache is the truth again, so a deleted Service's IP and ports are free at once (as upstream's
        # allocator releases them in the delete)
        self._pending_ips: dict[str, float] = {}
        self._pending_ports: dict[int, float] = {}
        self._following = False

    @property
    def kubernetes_ip(self) -> str:
        return str(self.net.network_address + 1)

    def _used(self, services: list[dict[str, Any]]) -> tuple[set[str], set[int]]:
        now = time.monotonic()
        for ip in [k for k, t in self._pending_ips.items() if now - t > 30]:
            del self._pending_ips[ip]
        for port in [k for k, t in self._pending_ports.items() if now - t > 30]:
            del self._pending_ports[port]
        ips: set[str] = set(self._pending_ips)
        ports: set[int] = set(self._pending_ports)
        for s in services:
            sp = s.get("spec") or {}
            for ip in sp.get("clusterIPs") or ([sp["clusterIP"]] if sp.get("clusterIP") else []):
                ips.add(ip)
            for p in sp.get("ports") or []:
                if p.get("nodePort"):
                    ports.add(int(p["nodePort"]))
            if sp.get("healthCheckNodePort"):
                ports.add(int(sp["healthCheckNodePort"]))
        return ips, ports

    def _settled(self, ce: Any) -> None:
        """Cache listener: a Service written or deleted no longer holds anything pending."""
        for obj in (ce.obj, ce.prev):
            sp = (obj or {}).get("spec") or {}
            for ip in sp.get("clusterIPs") or ([sp["clusterIP"]] if sp.get("clusterIP") else []):
                self._pending_ips.pop(ip, None)
            for p in sp.get("ports") or []:
                if p.get("nodePort"):
                    self._pending_ports.pop(int(p["nodePort"]), None)
            if sp.get("healthCheckNodePort"):
                self._pending_ports.pop(int(sp["healthCheckNodePort"]), None)

    def allocate_ip(self, used: set[str], hold: bool = True) -> str:
        """A free ClusterIP, held for a while unless hold is False (a dry run: upstream's dry-run
        allocator reports a free address and reserves nothing)."""
        size = self.net.num_addresses
        # upstream reserves the lower band for static IPs and prefers the upper band for dynamic ones
        lo = max(2, min(size // 16, 256) if size > 64 else 2)
        # the tenth address is the cluster DNS Service's (kube-system/kube-dns), never handed out
        used = used | {str(self.net.network_address + 10)} if size > 12 else used
        for _ in range(64):
            ip = str(self.net.network_address + random.randrange(lo, size - 1))
            if ip not in used:
                if hold:
                    self._pending_ips[ip] = time.monotonic()
                return ip
        for i in range(1, size - 1):
            ip = str(self.net.network_address + i)
            if ip not in used:
                if hold:
                    self._pending_ips[ip] = time.monotonic()
                return ip
        raise E.new_internal_error("failed to allocate a serviceIP: range is full")

    def allocate_port(self, used: set[int], hold: bool = True) -> int:
        """A free NodePort, added to used; held for a while unless hold is False (a dry run)."""
        for _ in range(64):
            p = random.randint(self.port_lo, self.port_hi)
            if p not in used:
                if hold:
                    self._pending_ports[p] = time.monotonic()
                used.add(p)
                return p
        for p in range(self.port_lo, self.port_hi + 1):
            if p not in used:
                if hold:
                    self._pending_ports[p] = time.monotonic()
                used.add(p)
                return p
        raise E.new_internal_error("failed to allocate a nodePort: range is full")

    async def admit(self, rest: RestStorage, res: Resource, op: str, svc: dict[str, Any],
                    old: dict[str, Any] | None, ctx: RequestContext) -> None:
        if res.group_kind != ("", "Service"):
            return
        spec = svc.setdefault("spec", {})
        cache = await rest.cache_for(res)
        if not self._following:
            cache.listeners.append(self._settled)
            self._following = True
        others = [s for s in cache.list(None)
                  if old is None or s["metadata"].get("uid") != old["metadata"].get("uid")]
        used_ips, used_ports = self._used(others)
        name = svc["metadata"].get("name", "")
        stype = spec.get("type", "ClusterIP")
        if old is not None:
            osp = old.get("spec") or {}
            # as upstream's patchAllocatedValues: an update that omits allocated values keeps them
            if stype != "ExternalName":
                if not spec.get("clusterIP") and osp.get("clusterIP"):
                    spec["clusterIP"] = osp["clusterIP"]
                if not spec.get("clusterIPs") and osp.get("clusterIPs"):
                    spec["clusterIPs"] = osp["clusterIPs"]
            if stype in ("NodePort", "LoadBalancer"):
                old_ports = {(p.get("port"), p.get("protocol", "TCP")): p.get("nodePort")
                             for p in osp.get("ports") or []}
                for p in spec.get("ports") or []:
                    if not p.get("nodePort"):
                        np = old_ports.get((p.get("port"), p.get("protocol", "TCP")))
                        if np:
                            p["nodePort"] = np
        if stype == "ExternalName":
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
            spec.pop("ipFamilies", None)
            spec.pop("ipFamilyPolicy", None)
        else:
            cip = spec.get("clusterIP") or (spec.get("clusterIPs") or [None])[0]
            if cip in (None, ""):
                cip = self.allocate_ip(used_ips, hold=not ctx.dry_run)
            elif cip != "None":
                try:
                    addr = ipaddress.ip_address(cip)
                except ValueError:
                    addr = None
                if addr is None or addr not in self.net:
                    raise E.new_invalid("Service", name, [E.FieldError(
                        "spec.clusterIPs", "Invalid", [cip],
                        f"failed to allocate IP {cip}: the provided IP ({cip}) is not in the valid range. "
                        f"The range of valid IPs is {self.net}")])
                if (old is None or (old.get("spec") or {}).get("clusterIP") != cip) and cip in used_ips:
                    raise E.new_invalid("Service", name, [E.FieldError(
                        "spec.clusterIPs", "Invalid", [cip],
                        f"failed to allocate IP {cip}: provided IP is already allocated")])
            spec["clusterIP"] = cip
            spec["clusterIPs"] = [cip]
        if stype in ("NodePort", "LoadBalancer"):
            mine: set[int] = set()
            for i, p in enumerate(spec.get("ports") or []):
                np = p.get("nodePort")
                if np:
                    if not (self.port_lo <= int(np) <= self.port_hi):
                        raise E.new_invalid("Service", name, [E.FieldError(
                            f"spec.ports[{i}].nodePort", "Invalid", np,
                            f"provided port is not in the valid range. The range of valid ports is "
                            f"{self.port_lo}-{self.port_hi}")])
                    old_nps = {q.get("nodePort") for q in ((old or {}).get("spec") or {}).get("ports") or []}
                    if (np in used_ports and np not in old_nps) or np in mine:
                        raise E.new_invalid("Service", name, [E.FieldError(
                            f"spec.ports[{i}].nodePort", "Invalid", np, "provided port is already allocated")])
                    mine.add(int(np))
            for p in spec.get("ports") or []:
                if not p.get("nodePort"):
                    p["nodePort"] = self.allocate_port(used_ports | mine, hold=not ctx.dry_run)
                    mine.add(p["nodePort"])
        else:
            for p in spec.get("ports") or []:
                p.pop("nodePort", None)


def install(rest: RestStorage, service_cidr: str) -> ServiceAllocator:
    alloc = ServiceAllocator(service_cidr)
    from .default_ingress_class import default_ingress_class

    # as upstream's plugin order: LimitRanger first, so later plugins and the quota see its defaults
    rest.mutating.extend([limitranger.admit, service_account, default_toleration_seconds, priority, alloc.admit,
                          default_ingress_class, runtimeclass_admission.admit])
    rest.mutating.extend([storage_admission.default_storage_class, storage_admission.storage_object_in_use_protection,
                          storage_admission.warn_recycle])
    rest.validating.append(limitranger.validate)
    rest.validating.append(storage_admission.pvc_resize)
    rest.validating.append(runtimeclass_admission.validate)
    rest.validating.append(quota_admission.admit_quota)
    return alloc
