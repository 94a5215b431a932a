"""Tables for the core ("") group, as pkg/printers/internalversion prints them."""

from __future__ import annotations

from typing import Any

from .base import (
    CONTAINERS_DESC,
    IMAGES_DESC,
    TablePrinter,
    age,
    age_col,
    col,
    containers_cells,
    format_labels,
    human_duration,
    name_col,
    parse_time_or_none,
    printer,
    quantity_str,
)

C = "io.k8s.api.core.v1."
GK = tuple[str, str]

# ---------------------------------------------------------------------------------------
# Pod

_POD_SUCCEEDED = [
    {
        "type": "Completed",
        "status": "True",
        "reason": "Succeeded",
        "message": "The pod has completed successfully.",
    }
]
_POD_FAILED = [{"type": "Completed", "status": "True", "reason": "Failed", "message": "The pod failed."}]


def _pod_conditions(pod: dict) -> list[dict] | None:
    phase = (pod.get("status") or {}).get("phase")
    if phase == "Succeeded":
        return _POD_SUCCEEDED
    if phase == "Failed":
        return _POD_FAILED
    return None


def _finished_at(cs: dict) -> float | None:
    term = (cs.get("lastState") or {}).get("terminated")
    if term is None:
        return None
    return parse_time_or_none(term.get("finishedAt"))


def _terminated_reason(term: dict, prefix: str) -> str:
    reason = term.get("reason") or ""
    if reason:
        return prefix + reason
    signal = term.get("signal") or 0
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{term.get('exitCode') or 0}"


def pod_status_reason(pod: dict, now: float = 0.0) -> tuple[str, int, int, str]:
    """printPod's computation: (STATUS, ready containers, total containers, RESTARTS)."""
    md = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    init_specs = spec.get("initContainers") or ()
    # Sidecars (init containers with restartPolicy Always) count as containers.
    restartable = {c.get("name") for c in init_specs if c.get("restartPolicy") == "Always"}
    total = len(spec.get("containers") or ()) + sum(
        1 for c in init_specs if c.get("restartPolicy") == "Always"
    )
    phase = status.get("phase") or ""
    reason = status.get("reason") or phase
    conditions = status.get("conditions") or ()
    for c in conditions:
        if c.get("type") == "PodScheduled" and c.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    restarts = 0
    sidecar_restarts = 0
    ready = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None
    initializing = False
    for i, cs in enumerate(status.get("initContainerStatuses") or ()):
        n = cs.get("restartCount") or 0
        restarts += n
        fin = _finished_at(cs)
        if fin is not None and (last_restart is None or fin > last_restart):
            last_restart = fin
        is_sidecar = cs.get("name") in restartable
        if is_sidecar:
            sidecar_restarts += n
            if fin is not None and (last_sidecar_restart is None or fin > last_sidecar_restart):
                last_sidecar_restart = fin
        state = cs.get("state") or {}
        term = state.get("terminated")
        waiting = state.get("waiting")
        if term is not None and (term.get("exitCode") or 0) == 0:
            continue
        if is_sidecar and cs.get("started"):
            if cs.get("ready"):
                ready += 1
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif waiting is not None and waiting.get("reason") and waiting.get("reason") != "PodInitializing":
            reason = "Init:" + waiting["reason"]
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _condition_true(conditions, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(status.get("containerStatuses") or ()):
            restarts += cs.get("restartCount") or 0
            fin = _finished_at(cs)
            if fin is not None and (last_restart is None or fin > last_restart):
                last_restart = fin
            state = cs.get("state") or {}
            term = state.get("terminated")
            waiting = state.get("waiting")
            if waiting is not None and waiting.get("reason"):
                reason = waiting["reason"]
            elif term is not None:
                reason = _terminated_reason(term, "")
            elif cs.get("ready") and state.get("running") is not None:
                has_running = True
                ready += 1
        # A pod whose last container completed but another still runs is not "Completed".
        if reason == "Completed" and has_running:
            reason = "Running" if _condition_true(conditions, "Ready") else "NotReady"

    if md.get("deletionTimestamp"):
        if status.get("reason") == "NodeLost":
            reason = "Unknown"
        elif phase not in ("Succeeded", "Failed"):
            reason = "Terminating"

    restarts_str = str(restarts)
    if restarts and last_restart is not None:
        restarts_str = f"{restarts} ({human_duration(now - last_restart)} ago)"
    return reason, ready, total, restarts_str


def _condition_true(conditions: Any, ctype: str) -> bool:
    for c in conditions or ():
        if c.get("type") == ctype:
            return c.get("status") == "True"
    return False


def _pod_row(pod: dict, now: float) -> list:
    reason, ready, total, restarts = pod_status_reason(pod, now)
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    ips = status.get("podIPs")
    ip = (ips[0].get("ip") if ips else "") or status.get("podIP") or "<none>"
    gates = spec.get("readinessGates")
    if gates:
        conds: dict[str, str] = {}
        for c in status.get("conditions") or ():
            conds.setdefault(c.get("type", ""), c.get("status", ""))  # the first of a type counts
        n_true = sum(1 for g in gates if conds.get(g.get("conditionType", "")) == "True")
        gates_str = f"{n_true}/{len(gates)}"
    else:
        gates_str = "<none>"
    return [
        (pod.get("metadata") or {}).get("name", ""),
        f"{ready}/{total}",
        reason,
        restarts,
        age(pod, now),
        ip,
        spec.get("nodeName") or "<none>",
        status.get("nominatedNodeName") or "<none>",
        gates_str,
    ]


POD = printer(
    [
        name_col(),
        col("Ready", description="The aggregate readiness state of this pod for accepting traffic."),
        col("Status", description="The aggregate status of the containers in this pod."),
        col(
            "Restarts",
            description="The number of times the containers in this pod have been restarted and when the last container in this pod has restarted.",
        ),
        age_col(),
        col("IP", description=(C + "PodStatus", "podIP"), priority=1),
        col("Node", description=(C + "PodSpec", "nodeName"), priority=1),
        col("Nominated Node", description=(C + "PodStatus", "nominatedNodeName"), priority=1),
        col("Readiness Gates", description=(C + "PodSpec", "readinessGates"), priority=1),
    ],
    _pod_row,
    conditions=_pod_conditions,
)


def _pod_template_row(obj: dict, now: float) -> list:
    tmpl = obj.get("template") or {}
    names, images = containers_cells((tmpl.get("spec") or {}).get("containers"))
    return [
        (obj.get("metadata") or {}).get("name", ""),
        names,
        images,
        format_labels((tmpl.get("metadata") or {}).get("labels")),
    ]


POD_TEMPLATE = printer(
    [
        name_col(),
        col("Containers", description=CONTAINERS_DESC),
        col("Images", description=IMAGES_DESC),
        col("Pod Labels", description="The labels for the pod template."),
    ],
    _pod_template_row,
)

# ---------------------------------------------------------------------------------------
# ReplicationController


def _rc_row(obj: dict, now: float) -> list:
    spec = obj.get("spec") or {}
    status = obj.get("status") or {}
    names, images = containers_cells(((spec.get("template") or {}).get("spec") or {}).get("containers"))
    return [
        (obj.get("metadata") or {}).get("name", ""),
        spec.get("replicas", 1),
        status.get("replicas") or 0,
        status.get("readyReplicas") or 0,
        age(obj, now),
        names,
        images,
        format_labels(spec.get("selector")),
    ]


REPLICATION_CONTROLLER = printer(
    [
        name_col(),
        col("Desired", "integer", (C + "ReplicationControllerSpec", "replicas")),
        col("Current", "integer", (C + "ReplicationControllerStatus", "replicas")),
        col("Ready", "integer", (C + "ReplicationControllerStatus", "readyReplicas")),
        age_col(),
        col("Containers", description=CONTAINERS_DESC, priority=1),
        col("Images", description=IMAGES_DESC, priority=1),
        col("Selector", description=(C + "ReplicationControllerSpec", "selector"), priority=1),
    ],
    _rc_row,
)

# ---------------------------------------------------------------------------------------
# Service, Endpoints


def _lb_ingress(status: dict) -> str:
    """loadBalancerStatusStringer (wide: the server never clips): sorted unique IPs/hostnames."""
    seen = set()
    for ing in (status.get("loadBalancer") or {}).get("ingress") or ():
        v = ing.get("ip") or ing.get("hostname")
        if v:
            seen.add(v)
    return ",".join(sorted(seen))


def _service_external_ip(svc: dict) -> str:
    spec = svc.get("spec") or {}
    stype = spec.get("type", "")
    ext = spec.get("externalIPs") or []
    if stype in ("ClusterIP", "NodePort"):
        return ",".join(ext) if ext else "<none>"
    if stype == "LoadBalancer":
        lb = _lb_ingress(svc.get("status") or {})
        if ext:
            return ",".join(([*lb.split(",")] if lb else []) + list(ext))
        return lb or "<pending>"
    if stype == "ExternalName":
        return spec.get("externalName", "")
    return "<unknown>"


def service_ports(ports: Any) -> str:
    """makePortString: "80/TCP", "80:30000/TCP", comma-joined."""
    pieces = []
    for p in ports or ():
        proto = p.get("protocol", "")
        node_port = p.get("nodePort") or 0
        if node_port > 0:
            pieces.append(f"{p.get('port', 0)}:{node_port}/{proto}")
        else:
            pieces.append(f"{p.get('port', 0)}/{proto}")
    return ",".join(pieces)


def _service_row(svc: dict, now: float) -> list:
    spec = svc.get("spec") or {}
    ips = spec.get("clusterIPs")
    cluster_ip = ips[0] if ips else (spec.get("clusterIP") or "<none>")
    return [
        (svc.get("metadata") or {}).get("name", ""),
        spec.get("type", ""),
        cluster_ip,
        _service_external_ip(svc),
        service_ports(spec.get("ports")) or "<none>",
        age(svc, now),
        format_labels(spec.get("selector")),
    ]


SERVICE = printer(
    [
        name_col(),
        col("Type", description=(C + "ServiceSpec", "type")),
        col("Cluster-IP", description=(C + "ServiceSpec", "clusterIP")),
        col("External-IP", description=(C + "ServiceSpec", "externalIPs")),
        col("Port(s)", description=(C + "ServiceSpec", "ports")),
        age_col(),
        col("Selector", description=(C + "ServiceSpec", "selector"), priority=1),
    ],
    _service_row,
)


def format_endpoints(ep: dict) -> str:
    """formatEndpoints: up to 3 "ip:port" entries, then " + N more..."; "<none>" without subsets."""
    subsets = ep.get("subsets") or ()
    if not subsets:
        return "<none>"
    out: list[str] = []
    count = 0
    for ss in subsets:
        addrs = ss.get("addresses") or ()
        ports = ss.get("ports") or ()
        if not ports:  # headless services may have no ports
            count += len(addrs)
            for a in addrs:
                if len(out) == 3:
                    break
                out.append(a.get("ip", ""))
            continue
        for p in ports:
            count += len(addrs)
            for a in addrs:
                if len(out) == 3:
                    break
                ip = a.get("ip", "")
                host = f"[{ip}]" if ":" in ip else ip  # net.JoinHostPort
                out.append(f"{host}:{p.get('port', 0)}")
    ret = ",".join(out)
    if count > 3:
        return f"{ret} + {count - 3} more..."
    return ret


ENDPOINTS = printer(
    [name_col(), col("Endpoints", description=(C + "Endpoints", "subsets")), age_col()],
    lambda ep, now: [(ep.get("metadata") or {}).get("name", ""), format_endpoints(ep), age(ep, now)],
)

# ---------------------------------------------------------------------------------------
# Node


def node_roles(labels: dict | None) -> str:
    roles = set()
    for k, v in (labels or {}).items():
        if k.startswith("node-role.kubernetes.io/"):
            role = k[len("node-role.kubernetes.io/") :]
            if role:
                roles.add(role)
        elif k == "kubernetes.io/role" and v:
            roles.add(v)
    return ",".join(sorted(roles)) or "<none>"


def node_status(node: dict) -> str:
    status = []
    ready = None
    for c in (node.get("status") or {}).get("conditions") or ():
        if c.get("type") == "Ready":
            ready = c  # the last one wins, as upstream's map does
    if ready is not None:
        status.append("Ready" if ready.get("status") == "True" else "NotReady")
    else:
        status.append("Unknown")
    if (node.get("spec") or {}).get("unschedulable"):
        status.append("SchedulingDisabled")
    return ",".join(status)


def _node_address(node: dict, atype: str) -> str:
    for a in (node.get("status") or {}).get("addresses") or ():
        if a.get("type") == atype:
            return a.get("address", "")
    return "<none>"


def _node_row(node: dict, now: float) -> list:
    md = node.get("metadata") or {}
    info = (node.get("status") or {}).get("nodeInfo") or {}
    return [
        md.get("name", ""),
        node_status(node),
        node_roles(md.get("labels")),
        age(node, now),
        info.get("kubeletVersion", ""),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


NODE = printer(
    [
        name_col(),
        col("Status", description="The status of the node"),
        col("Roles", description="The roles of the node"),
        age_col(),
        col("Version", description=(C + "NodeSystemInfo", "kubeletVersion")),
        col("Internal-IP", description=(C + "NodeStatus", "addresses"), priority=1),
        col("External-IP", description=(C + "NodeStatus", "addresses"), priority=1),
        col("OS-Image", description=(C + "NodeSystemInfo", "osImage"), priority=1),
        col("Kernel-Version", description=(C + "NodeSystemInfo", "kernelVersion"), priority=1),
        col("Container-Runtime", description=(C + "NodeSystemInfo", "containerRuntimeVersion"), priority=1),
    ],
    _node_row,
)

# ---------------------------------------------------------------------------------------
# Event (core/v1 and events.k8s.io/v1 print alike: upstream prints the internal type)


def _since(ts: Any, now: float) -> str | None:
    t = parse_time_or_none(ts)
    return None if t is None else human_duration(now - t)


def _event_row(ev: dict, now: float) -> list:
    if "regarding" in ev or "note" in ev or "deprecatedCount" in ev:
        ref = ev.get("regarding") or {}
        first_ts = ev.get("deprecatedFirstTimestamp")
        last_ts = ev.get("deprecatedLastTimestamp")
        count = ev.get("deprecatedCount") or 0
        source = ev.get("deprecatedSource") or {}
        message = ev.get("note") or ""
        controller = ev.get("reportingController") or ""
    else:
        ref = ev.get("involvedObject") or {}
        first_ts = ev.get("firstTimestamp")
        last_ts = ev.get("lastTimestamp")
        count = ev.get("count") or 0
        source = ev.get("source") or {}
        message = ev.get("message") or ""
        controller = ev.get("reportingComponent") or ""
    instance = ev.get("reportingInstance") or ""

    first = _since(first_ts, now)
    if first is None:
        first = _since(ev.get("eventTime"), now) or "<unknown>"
    last = _since(last_ts, now)
    if last is None:
        last = first
    series = ev.get("series")
    if series is not None:
        last = _since(series.get("lastObservedTime"), now) or "<unknown>"
        count = series.get("count") or 0
    elif count == 0:
        count = 1  # singleton events don't set a count in the new API

    kind = (ref.get("kind") or "").lower()
    target = f"{kind}/{ref['name']}" if ref.get("name") else kind
    component = source.get("component") or controller
    host = source.get("host") or instance
    src = f"{component}, {host}" if host else component
    return [
        last,
        ev.get("type", ""),
        ev.get("reason", ""),
        target,
        ref.get("fieldPath", ""),
        src,
        message.strip(),
        first,
        count,
        (ev.get("metadata") or {}).get("name", ""),
    ]


EVENT = printer(
    [
        col("Last Seen", description=(C + "Event", "lastTimestamp")),
        col("Type", description=(C + "Event", "type")),
        col("Reason", description=(C + "Event", "reason")),
        col("Object", description=(C + "Event", "involvedObject")),
        col("Subobject", description=(C + "ObjectReference", "fieldPath"), priority=1),
        col("Source", description=(C + "Event", "source"), priority=1),
        col("Message", description=(C + "Event", "message")),
        col("First Seen", description=(C + "Event", "firstTimestamp"), priority=1),
        col("Count", description=(C + "Event", "count"), priority=1),
        col(
            "Name",
            description=("io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta", "name"),
            priority=1,
            format="name",
        ),
    ],
    _event_row,
)

# ---------------------------------------------------------------------------------------
# Namespace, Secret, ServiceAccount, ConfigMap, ComponentStatus

NAMESPACE = printer(
    [name_col(), col("Status", description="The status of the namespace"), age_col()],
    lambda ns, now: [
        (ns.get("metadata") or {}).get("name", ""),
        (ns.get("status") or {}).get("phase", ""),
        age(ns, now),
    ],
)


def _secret_row(s: dict, now: float) -> list:
    data = s.get("data") or {}
    n = len(data)
    string_data = s.get("stringData")
    if string_data:  # merged into data by the internal conversion
        n += sum(1 for k in string_data if k not in data)
    return [(s.get("metadata") or {}).get("name", ""), s.get("type", ""), n, age(s, now)]


SECRET = printer(
    [
        name_col(),
        col("Type", description=(C + "Secret", "type")),
        col("Data", description=(C + "Secret", "data")),
        age_col(),
    ],
    _secret_row,
)

SERVICE_ACCOUNT = printer(
    [name_col(), col("Secrets", description=(C + "ServiceAccount", "secrets")), age_col()],
    lambda sa, now: [(sa.get("metadata") or {}).get("name", ""), len(sa.get("secrets") or ()), age(sa, now)],
)

CONFIG_MAP = printer(
    [name_col(), col("Data", description=(C + "ConfigMap", "data")), age_col()],
    lambda cm, now: [
        (cm.get("metadata") or {}).get("name", ""),
        len(cm.get("data") or ()) + len(cm.get("binaryData") or ()),
        age(cm, now),
    ],
)


def _component_status_row(cs: dict, now: float) -> list:
    status, message, error = "Unknown", "", ""
    for c in cs.get("conditions") or ():
        if c.get("type") == "Healthy":
            status = "Healthy" if c.get("status") == "True" else "Unhealthy"
            message = c.get("message", "")
            error = c.get("error", "")
            break
    return [(cs.get("metadata") or {}).get("name", ""), status, message, error]


COMPONENT_STATUS = printer(
    [
        name_col(),
        col("Status", description="Status of the component conditions"),
        col("Message", description="Message of the component conditions"),
        col("Error", description="Error of the component conditions"),
    ],
    _component_status_row,
)

# ---------------------------------------------------------------------------------------
# PersistentVolume, PersistentVolumeClaim


def access_modes(modes: Any) -> str:
    """GetAccessModesAsString: fixed order RWO, ROX, RWX, RWOP."""
    ms = set(modes or ())
    out = [
        short
        for full, short in (
            ("ReadWriteOnce", "RWO"),
            ("ReadOnlyMany", "ROX"),
            ("ReadWriteMany", "RWX"),
            ("ReadWriteOncePod", "RWOP"),
        )
        if full in ms
    ]
    return ",".join(out)


_BETA_CLASS = "volume.beta.kubernetes.io/storage-class"


def _storage_class(obj: dict) -> str:
    ann = (obj.get("metadata") or {}).get("annotations") or {}
    if _BETA_CLASS in ann:
        return ann[_BETA_CLASS]
    return (obj.get("spec") or {}).get("storageClassName") or ""


def _pv_row(pv: dict, now: float) -> list:
    spec = pv.get("spec") or {}
    status = pv.get("status") or {}
    claim = spec.get("claimRef")
    claim_str = f"{claim.get('namespace', '')}/{claim.get('name', '')}" if claim is not None else ""
    phase = "Terminating" if (pv.get("metadata") or {}).get("deletionTimestamp") else status.get("phase", "")
    return [
        (pv.get("metadata") or {}).get("name", ""),
        quantity_str((spec.get("capacity") or {}).get("storage")),
        access_modes(spec.get("accessModes")),
        spec.get("persistentVolumeReclaimPolicy", ""),
        phase,
        claim_str,
        _storage_class(pv),
        spec.get("volumeAttributesClassName") or "<unset>",
        status.get("reason", ""),
        age(pv, now),
        spec.get("volumeMode") or "<unset>",
    ]


PERSISTENT_VOLUME = printer(
    [
        name_col(),
        col("Capacity", description=(C + "PersistentVolumeSpec", "capacity")),
        col("Access Modes", description=(C + "PersistentVolumeSpec", "accessModes")),
        col("Reclaim Policy", description=(C + "PersistentVolumeSpec", "persistentVolumeReclaimPolicy")),
        col("Status", description=(C + "PersistentVolumeStatus", "phase")),
        col("Claim", description=(C + "PersistentVolumeSpec", "claimRef")),
        col("StorageClass", description="StorageClass of the pv"),
        col("VolumeAttributesClass", description="VolumeAttributesClass of the pv"),
        col("Reason", description=(C + "PersistentVolumeStatus", "reason")),
        age_col(),
        col("VolumeMode", description=(C + "PersistentVolumeSpec", "volumeMode"), priority=1),
    ],
    _pv_row,
)


def _pvc_row(pvc: dict, now: float) -> list:
    spec = pvc.get("spec") or {}
    status = pvc.get("status") or {}
    phase = "Terminating" if (pvc.get("metadata") or {}).get("deletionTimestamp") else status.get("phase", "")
    capacity = modes = ""
    if spec.get("volumeName"):
        modes = access_modes(status.get("accessModes"))
        capacity = quantity_str((status.get("capacity") or {}).get("storage"))
    return [
        (pvc.get("metadata") or {}).get("name", ""),
        phase,
        spec.get("volumeName", ""),
        capacity,
        modes,
        _storage_class(pvc),
        spec.get("volumeAttributesClassName") or "<unset>",
        age(pvc, now),
        spec.get("volumeMode") or "<unset>",
    ]


PERSISTENT_VOLUME_CLAIM = printer(
    [
        name_col(),
        col("Status", description=(C + "PersistentVolumeClaimStatus", "phase")),
        col("Volume", description=(C + "PersistentVolumeClaimSpec", "volumeName")),
        col("Capacity", description=(C + "PersistentVolumeClaimStatus", "capacity")),
        col("Access Modes", description=(C + "PersistentVolumeClaimStatus", "accessModes")),
        col("StorageClass", description="StorageClass of the pvc"),
        col("VolumeAttributesClass", description="VolumeAttributesClass of the pvc"),
        age_col(),
        col("VolumeMode", description=(C + "PersistentVolumeClaimSpec", "volumeMode"), priority=1),
    ],
    _pvc_row,
)

# ---------------------------------------------------------------------------------------
# ResourceQuota


def _resource_quota_row(rq: dict, now: float) -> list:
    status = rq.get("status") or {}
    hard = status.get("hard") or {}
    used = status.get("used") or {}
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard):
        parts = name.split(".")
        target = limits if len(parts) > 1 and parts[0] == "limits" else requests
        target.append(f"{name}: {quantity_str(used.get(name))}/{quantity_str(hard[name])}")
    return [(rq.get("metadata") or {}).get("name", ""), ", ".join(requests), ", ".join(limits), age(rq, now)]


RESOURCE_QUOTA = printer(
    [
        name_col(),
        col(
            "Request",
            description="Request represents a minimum amount of cpu/memory that a container may consume.",
        ),
        col(
            "Limit",
            description="Limits control the maximum amount of cpu/memory that a container may use independent of contention on the node.",
        ),
        age_col(),
    ],
    _resource_quota_row,
)

PRINTERS: dict[GK, TablePrinter] = {
    ("", "Pod"): POD,
    ("", "PodTemplate"): POD_TEMPLATE,
    ("", "ReplicationController"): REPLICATION_CONTROLLER,
    ("", "Service"): SERVICE,
    ("", "Endpoints"): ENDPOINTS,
    ("", "Node"): NODE,
    ("", "Event"): EVENT,
    ("events.k8s.io", "Event"): EVENT,
    ("", "Namespace"): NAMESPACE,
    ("", "Secret"): SECRET,
    ("", "ServiceAccount"): SERVICE_ACCOUNT,
    ("", "ConfigMap"): CONFIG_MAP,
    ("", "ComponentStatus"): COMPONENT_STATUS,
    ("", "PersistentVolume"): PERSISTENT_VOLUME,
    ("", "PersistentVolumeClaim"): PERSISTENT_VOLUME_CLAIM,
    ("", "ResourceQuota"): RESOURCE_QUOTA,
}

__all__ = [
    "PRINTERS",
    "pod_status_reason",
    "service_ports",
    "format_endpoints",
    "node_roles",
    "node_status",
    "access_modes",
]
