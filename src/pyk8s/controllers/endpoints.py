"""Endpoints controller: one Endpoints object per Service with a selector, listing the
ready and not-ready addresses of the pods it selects (upstream's pkg/controller/endpoint).

Terminating pods are left out unless the service publishes not-ready addresses. Named
target ports resolve per pod, so pods may expose one service port on different numbers;
addresses with the same resolved ports share a subset. Endpoints are written only when
their subsets or labels change, stamped with endpoints.kubernetes.io/last-change-trigger-time.
"""

from __future__ import annotations

import math
from typing import Any

import orjson

from ..api.errors import StatusError
from .base import GVRS, Controller, split_key
from .endpoints_util import (
    HEADLESS_LABEL,
    LAST_CHANGE_TRIGGER_TIME,
    TriggerTimeTracker,
    find_port,
    is_pod_ready,
    is_service_ip_set,
    pod_ip_for_service,
    selector_of,
    services_for_pod,
    should_pod_be_in_endpoints,
    should_set_hostname,
)

__all__ = ["EndpointsController", "compute_subsets", "pod_endpoints_changed"]

MAX_CAPACITY = 1000
OVER_CAPACITY = "endpoints.kubernetes.io/over-capacity"
LEADER_ANNOTATION = "control-plane.alpha.kubernetes.io/leader"


def pod_endpoints_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether a pod update can change any endpoint (upstream's podEndpointsChanged, plus labels)."""
    def view(p: dict[str, Any]) -> Any:
        md, sp, st = p.get("metadata") or {}, p.get("spec") or {}, p.get("status") or {}
        return (md.get("labels"), bool(md.get("deletionTimestamp")), st.get("podIP"), st.get("podIPs"),
                st.get("phase"), is_pod_ready(p), sp.get("nodeName"), sp.get("hostname"), sp.get("subdomain"))
    return view(old) != view(new)


def _address(svc: dict[str, Any], pod: dict[str, Any]) -> dict[str, Any] | None:
    ip = pod_ip_for_service(svc, pod)
    if ip is None:
        return None
    md = pod["metadata"]
    addr: dict[str, Any] = {"ip": ip}
    if should_set_hostname(pod, svc):
        addr["hostname"] = pod["spec"]["hostname"]
    addr["nodeName"] = (pod.get("spec") or {}).get("nodeName", "")
    addr["targetRef"] = {"kind": "Pod", "namespace": md.get("namespace"), "name": md["name"], "uid": md.get("uid")}
    return addr


def compute_subsets(svc: dict[str, Any], pods: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The repacked subsets: addresses grouped by the exact set of ports they serve."""
    spec = svc.get("spec") or {}
    publish = bool(spec.get("publishNotReadyAddresses"))
    svc_ports = spec.get("ports") or []
    # address (as canonical JSON) -> (address, ready, set of port JSONs)
    entries: dict[bytes, tuple[dict[str, Any], bool, set[bytes]]] = {}
    for pod in pods:
        if not should_pod_be_in_endpoints(pod, publish):
            continue
        addr = _address(svc, pod)
        if addr is None:
            continue
        ready = publish or is_pod_ready(pod)
        ports: set[bytes] = set()
        if not svc_ports:
            if spec.get("clusterIP") != "None":
                continue  # only headless services may have port-less endpoints
        else:
            for sp in svc_ports:
                num = find_port(pod, sp)
                if num is None:
                    continue
                ep: dict[str, Any] = {}
                if sp.get("name"):
                    ep["name"] = sp["name"]
                ep["port"] = num
                ep["protocol"] = sp.get("protocol") or "TCP"
                if sp.get("appProtocol"):
                    ep["appProtocol"] = sp["appProtocol"]
                ports.add(orjson.dumps(ep, option=orjson.OPT_SORT_KEYS))
            if not ports:
                continue
        k = orjson.dumps(addr, option=orjson.OPT_SORT_KEYS)
        prev = entries.get(k)
        if prev is not None:
            ports |= prev[2]
        entries[k] = (addr, ready, ports)
    groups: dict[tuple[bytes, ...], dict[str, list[dict[str, Any]]]] = {}
    for addr, ready, ports in entries.values():
        g = groups.setdefault(tuple(sorted(ports)), {"addresses": [], "notReadyAddresses": []})
        g["addresses" if ready else "notReadyAddresses"].append(addr)
    subsets = []
    for pkey in sorted(groups):
        g = groups[pkey]
        ss: dict[str, Any] = {}
        for field in ("addresses", "notReadyAddresses"):
            if g[field]:
                ss[field] = sorted(g[field], key=lambda a: (_ip_key(a["ip"]), a["targetRef"].get("uid", "")))
        if pkey:
            ss["ports"] = sorted((orjson.loads(p) for p in pkey),
                                 key=lambda p: (p.get("name", ""), p["port"], p["protocol"]))
        subsets.append(ss)
    return subsets


def _ip_key(ip: str) -> str:
    return ip  # upstream compares IP strings


def truncate(subsets: list[dict[str, Any]]) -> bool:
    """Keep at most MAX_CAPACITY addresses, ready ones first, proportionally per subset (as upstream)."""
    ready = sum(len(s.get("addresses") or []) for s in subsets)
    not_ready = sum(len(s.get("notReadyAddresses") or []) for s in subsets)
    if ready + not_ready <= MAX_CAPACITY:
        return False
    truncate_ready = ready > MAX_CAPACITY
    cap, total = (MAX_CAPACITY, ready) if truncate_ready else (MAX_CAPACITY - ready, not_ready)
    left = cap
    for s in subsets:
        field = "addresses" if truncate_ready else "notReadyAddresses"
        n = len(s.get(field) or [])
        take = min(math.ceil(n / total * cap) if total else 0, left)
        if n:
            s[field] = s[field][:take]
            if not s[field]:
                del s[field]
        if truncate_ready:
            s.pop("notReadyAddresses", None)
        left -= take if n else 0
    return True


class EndpointsController(Controller):
    name = "endpoints"
    workers = 5  # upstream's --concurrent-endpoint-syncs
    component = "endpoint-controller"

    def setup(self) -> None:
        self.services = self.ctx.informer("services")
        self.pods = self.ctx.informer("pods")
        self.endpoints = self.ctx.informer("endpoints")
        self.tracker = TriggerTimeTracker()
        self.services.add_handlers(on_add=self.enqueue, on_update=lambda o, n: self.enqueue(n),
                                   on_delete=self.enqueue)
        self.pods.add_handlers(on_add=self._pod_added, on_update=self._pod_updated, on_delete=self._pod_added)
        self.endpoints.add_handlers(on_delete=self.enqueue)

    def _pod_added(self, pod: dict[str, Any]) -> None:
        ns = pod["metadata"].get("namespace", "")
        for key in services_for_pod(self.services.list(ns), pod):
            self.queue.add(key)

    def _pod_updated(self, old: dict[str, Any], new: dict[str, Any]) -> None:
        if old["metadata"].get("resourceVersion") == new["metadata"].get("resourceVersion"):
            return
        if not pod_endpoints_changed(old, new):
            return
        ns = new["metadata"].get("namespace", "")
        svcs = self.services.list(ns)
        for key in set(services_for_pod(svcs, new)) | set(services_for_pod(svcs, old)):
            self.queue.add(key)

    async def started(self) -> None:
        # endpoints left behind by services deleted while we were not running
        for ep in self.endpoints.list():
            if LEADER_ANNOTATION not in ((ep["metadata"].get("annotations")) or {}):
                self.enqueue(ep)

    async def sync(self, key: str) -> None:
        ns, name = split_key(key)
        svc = self.services.get(key)
        if svc is None:
            self.tracker.delete(key)
            await self.client.delete_ignore_missing(GVRS["endpoints"], name, ns)
            return
        if key == "default/kubernetes":
            return  # the API server keeps its own service's endpoints
        if (svc.get("spec") or {}).get("type") == "ExternalName":
            return
        sel = selector_of(svc)
        if sel is None:
            return  # endpoints of selector-less services are written by their users
        pods = [p for p in self.pods.list(ns) if sel.matches(p["metadata"].get("labels") or {})]
        trigger = self.tracker.compute(svc, pods)
        subsets = compute_subsets(svc, pods)
        current = self.endpoints.get(key)
        svc_labels = dict(svc["metadata"].get("labels") or {})
        if current is not None:
            cur_labels = {k: v for k, v in (current["metadata"].get("labels") or {}).items() if k != HEADLESS_LABEL}
            n = sum(len(s.get("addresses") or []) + len(s.get("notReadyAddresses") or []) for s in subsets)
            cap_ok = (n <= MAX_CAPACITY) and OVER_CAPACITY not in (current["metadata"].get("annotations") or {})
            if _norm(current.get("subsets")) == _norm(subsets) and cur_labels == svc_labels and cap_ok:
                return
        new: dict[str, Any] = {"apiVersion": "v1", "kind": "Endpoints",
               "metadata": dict(current["metadata"]) if current else {"name": name, "namespace": ns}}
        md = new["metadata"]
        annotations = dict(md.get("annotations") or {})
        if trigger:
            annotations[LAST_CHANGE_TRIGGER_TIME] = trigger
        else:
            annotations.pop(LAST_CHANGE_TRIGGER_TIME, None)
        if truncate(subsets):
            annotations[OVER_CAPACITY] = "truncated"
        else:
            annotations.pop(OVER_CAPACITY, None)
        labels = dict(svc_labels)
        if not is_service_ip_set(svc):
            labels[HEADLESS_LABEL] = ""
        md["labels"] = labels or None
        md["annotations"] = annotations or None
        md = {k: v for k, v in md.items() if v is not None}
        new["metadata"] = md
        if subsets:
            new["subsets"] = subsets
        try:
            if current is None:
                await self.client.create(GVRS["endpoints"], new, ns)
            else:
                await self.client.update(GVRS["endpoints"], new)
        except StatusError as e:
            if current is None and e.code == 403 and "being terminated" in e.message:
                return  # the namespace is going away: creates keep failing, drop the key
            if current is None and e.code == 409:
                raise  # the informer has not seen it yet: retry with backoff
            if current is None:
                self.recorder.event(new, "Warning", "FailedToCreateEndpoint",
                                    f"Failed to create endpoint for service {ns}/{name}: {e.message}")
            elif e.code != 409:
                self.recorder.event(new, "Warning", "FailedToUpdateEndpoint",
                                    f"Failed to update endpoint {ns}/{name}: {e.message}")
            raise


def _norm(subsets: Any) -> bytes:
    """Subsets compared as upstream does: ignoring the pods' resourceVersions and empty fields."""
    out = []
    for s in subsets or []:
        ss = {}
        for f in ("addresses", "notReadyAddresses"):
            addrs = []
            for a in s.get(f) or []:
                a = dict(a)
                if a.get("targetRef"):
                    a["targetRef"] = {k: v for k, v in a["targetRef"].items() if k != "resourceVersion"}
                addrs.append(a)
            if addrs:
                ss[f] = addrs
        if s.get("ports"):
            ss["ports"] = s["ports"]
        out.append(ss)
    return orjson.dumps(out, option=orjson.OPT_SORT_KEYS)
