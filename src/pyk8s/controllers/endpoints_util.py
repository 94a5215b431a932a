"""What the Endpoints and EndpointSlice controllers share (upstream's endpointslice/util and
pkg/api/v1/pod helpers): which pods back a service, their ports, and change trigger times."""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field
from typing import Any

from ..api import labels as L
from ..api.timefmt import format_time, parse_time_or_none

__all__ = [
    "LAST_CHANGE_TRIGGER_TIME", "HEADLESS_LABEL", "is_pod_ready", "should_pod_be_in_endpoints",
    "find_port", "should_set_hostname", "pod_ip_for_service", "services_for_pod", "is_service_ip_set",
    "TriggerTimeTracker", "selector_of",
]

LAST_CHANGE_TRIGGER_TIME = "endpoints.kubernetes.io/last-change-trigger-time"
HEADLESS_LABEL = "service.kubernetes.io/headless"


def is_pod_ready(pod: dict[str, Any]) -> bool:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return c.get("status") == "True"
    return False


def _ready_transition(pod: dict[str, Any]) -> float | None:
    for c in (pod.get("status") or {}).get("conditions") or []:
        if c.get("type") == "Ready":
            return parse_time_or_none(c.get("lastTransitionTime"))
    return None


def should_pod_be_in_endpoints(pod: dict[str, Any], include_terminating: bool) -> bool:
    """As upstream: not terminal, has an IP, and (unless asked) not terminating."""
    st = pod.get("status") or {}
    if st.get("phase") in ("Failed", "Succeeded"):
        return False
    if not st.get("podIP") and not st.get("podIPs"):
        return False
    if not include_terminating and (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    return True


def find_port(pod: dict[str, Any], svc_port: dict[str, Any]) -> int | None:
    """The container port a service port targets: a number as is, a name resolved per pod."""
    target = svc_port.get("targetPort")
    if target is None or target == "" or target == 0:
        return int(svc_port.get("port") or 0) or None
    if isinstance(target, int) or (isinstance(target, str) and target.isdigit()):
        return int(target)
    proto = svc_port.get("protocol") or "TCP"
    spec = pod.get("spec") or {}
    # restartable init containers (sidecars) serve ports too, as upstream's FindPort allows
    containers = list(spec.get("containers") or []) + [
        c for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    for c in containers:
        for p in c.get("ports") or []:
            if p.get("name") == target and (p.get("protocol") or "TCP") == proto:
                return int(p.get("containerPort"))
    return None


def should_set_hostname(pod: dict[str, Any], svc: dict[str, Any]) -> bool:
    spec = pod.get("spec") or {}
    return bool(spec.get("hostname")) and spec.get("subdomain") == svc["metadata"]["name"] \
        and pod["metadata"].get("namespace") == svc["metadata"].get("namespace")


def is_service_ip_set(svc: dict[str, Any]) -> bool:
    cip = (svc.get("spec") or {}).get("clusterIP")
    return bool(cip) and cip != "None"


def _is_v6(ip: str) -> bool:
    try:
        return ipaddress.ip_address(ip).version == 6
    except ValueError:
        return False


def service_ip_family(svc: dict[str, Any], pod: dict[str, Any] | None = None) -> str:
    spec = svc.get("spec") or {}
    fams = spec.get("ipFamilies") or []
    if fams:
        return fams[0]
    cip = spec.get("clusterIP")
    if cip and cip != "None":
        return "IPv6" if _is_v6(cip) else "IPv4"
    if pod is not None and _is_v6((pod.get("status") or {}).get("podIP") or ""):
        return "IPv6"
    return "IPv4"


def pod_ip_for_service(svc: dict[str, Any], pod: dict[str, Any], family: str | None = None) -> str | None:
    """The pod IP of the service's (first) IP family."""
    fam = family or service_ip_family(svc, pod)
    st = pod.get("status") or {}
    ips = [p.get("ip") for p in st.get("podIPs") or [] if p.get("ip")] or ([st["podIP"]] if st.get("podIP") else [])
    for ip in ips:
        if (fam == "IPv6") == _is_v6(ip):
            return ip
    return None


def selector_of(svc: dict[str, Any]) -> L.Selector | None:
    # an empty selector is no selector: upstream's storage turns an empty map into nil
    sel = (svc.get("spec") or {}).get("selector")
    if not sel:
        return None
    return L.selector_from_set(sel)


def services_for_pod(services: list[dict[str, Any]], pod: dict[str, Any]) -> list[str]:
    """Keys of the services (in the pod's namespace) whose selector matches the pod."""
    labels = (pod.get("metadata") or {}).get("labels") or {}
    out = []
    for s in services:
        sel = (s.get("spec") or {}).get("selector")
        if not sel:
            continue
        if all(labels.get(k) == v for k, v in sel.items()):
            out.append(f"{s['metadata'].get('namespace')}/{s['metadata']['name']}")
    return out


@dataclass
class _ServiceState:
    pod_times: dict[str, float] = field(default_factory=dict)
    service_time: float = 0.0


class TriggerTimeTracker:
    """When the change an Endpoints write reflects happened (upstream's TriggerTimeTracker).

    A pod's trigger time is its Ready condition's last transition; a service's is its
    creation. The value reported is the earliest of those that changed since the last sync,
    or the service's creation for a service seen for the first time; None when nothing did.
    """

    def __init__(self) -> None:
        self.states: dict[str, _ServiceState] = {}

    def compute(self, svc: dict[str, Any], pods: list[dict[str, Any]]) -> str | None:
        key = f"{svc['metadata'].get('namespace')}/{svc['metadata']['name']}"
        state = self.states.get(key)
        known = state is not None
        if state is None:
            state = _ServiceState()
        changed: float | None = None
        pod_times: dict[str, float] = {}
        for p in pods:
            t = _ready_transition(p)
            if t is None:
                continue
            pod_times[p["metadata"]["name"]] = t
            if t > state.pod_times.get(p["metadata"]["name"], float("-inf")):
                changed = t if changed is None else min(changed, t)
        svc_time = parse_time_or_none(svc["metadata"].get("creationTimestamp")) or 0.0
        if svc_time > state.service_time:
            changed = svc_time if changed is None else min(changed, svc_time)
        state.pod_times, state.service_time = pod_times, svc_time
        self.states[key] = state
        if not known:
            return format_time(svc_time)
        return format_time(changed) if changed is not None else None

    def delete(self, key: str) -> None:
        self.states.pop(key, None)
