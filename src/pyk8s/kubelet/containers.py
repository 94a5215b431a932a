"""From a pod spec to the runtime's SandboxConfig and ContainerConfig (upstream's kuberuntime config generators),
and back: container labels, termination messages, the container spec hash.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Any

from .dns import DNSResult
from .runtime.interface import (
    ContainerConfig,
    HostAlias,
    LinuxResources,
    Mount,
    PortMapping,
    SandboxConfig,
    SecurityContext,
)
from .runtime.resources import container_resources, pod_qos_class, pod_resources

# labels/annotations on runtime objects, as upstream names them
POD_UID = "io.kubernetes.pod.uid"
POD_NAME = "io.kubernetes.pod.name"
POD_NAMESPACE = "io.kubernetes.pod.namespace"
CONTAINER_NAME = "io.kubernetes.container.name"
CONTAINER_HASH = "io.kubernetes.container.hash"
RESTART_COUNT = "io.kubernetes.container.restartCount"
TERMINATION_PATH = "io.kubernetes.container.terminationMessagePath"
TERMINATION_POLICY = "io.kubernetes.container.terminationMessagePolicy"
TERMINATION_HOST_PATH = "pyk8s.io/termination-message-host-path"
PRESTOP = "io.kubernetes.container.preStopHandler"
GRACE = "io.kubernetes.pod.terminationGracePeriod"

MAX_TERMINATION_MESSAGE = 4096
MAX_LOG_LINES = 80
MAX_LOG_BYTES = 2048


def container_hash(c: dict[str, Any]) -> str:
    """Changes when the container's spec (apart from resources, which may be resized in place) changes."""
    doc = {k: v for k, v in c.items() if k != "resources"}
    return hashlib.sha256(json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def sandbox_config(pod: dict[str, Any], dns: DNSResult, cluster_domain: str, attempt: int, log_dir: str) -> SandboxConfig:
    md = pod["metadata"]
    spec = pod.get("spec") or {}
    host_net = bool(spec.get("hostNetwork"))
    ports: list[PortMapping] = []
    if not host_net:
        for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            for p in c.get("ports") or []:
                if p.get("hostPort"):
                    ports.append(PortMapping(container_port=int(p["containerPort"]), host_port=int(p["hostPort"]),
                                             protocol=p.get("protocol") or "TCP", host_ip=p.get("hostIP") or ""))
    psc = spec.get("securityContext") or {}
    qos = pod_qos_class(pod)
    return SandboxConfig(
        uid=md["uid"], name=md["name"], namespace=md.get("namespace") or "default", attempt=attempt,
        hostname=spec.get("hostname") or md["name"], subdomain=spec.get("subdomain") or "",
        cluster_domain=cluster_domain, host_network=host_net, host_pid=bool(spec.get("hostPID")),
        host_ipc=bool(spec.get("hostIPC")), dns=dns.config,
        host_aliases=[HostAlias(ip=h.get("ip", ""), hostnames=list(h.get("hostnames") or []))
                      for h in spec.get("hostAliases") or []],
        port_mappings=ports, qos_class=qos, pod_resources=pod_resources(pod),
        sysctls={s["name"]: str(s.get("value", "")) for s in psc.get("sysctls") or [] if s.get("name")},
        labels={**(md.get("labels") or {}), POD_UID: md["uid"], POD_NAME: md["name"],
                POD_NAMESPACE: md.get("namespace") or "default"},
        log_directory=log_dir,
    )


def _seccomp(sc: dict[str, Any] | None) -> str | None:
    prof = (sc or {}).get("seccompProfile")
    if not prof:
        return None
    t = prof.get("type")
    if t == "Localhost":
        return "Localhost/" + str(prof.get("localhostProfile") or "")
    return str(t) if t else None


def security_context(pod: dict[str, Any], c: dict[str, Any], seccomp_root: str) -> SecurityContext:
    psc = (pod.get("spec") or {}).get("securityContext") or {}
    csc = c.get("securityContext") or {}

    def pick(key: str) -> Any:
        return csc.get(key) if csc.get(key) is not None else psc.get(key)

    groups = [int(g) for g in psc.get("supplementalGroups") or []]
    if psc.get("fsGroup") is not None and int(psc["fsGroup"]) not in groups:
        groups.append(int(psc["fsGroup"]))
    caps = csc.get("capabilities") or {}
    seccomp = _seccomp(csc) or _seccomp(psc) or "Unconfined"
    if seccomp.startswith("Localhost/") and not os.path.isabs(seccomp[10:]):
        seccomp = "Localhost/" + os.path.join(seccomp_root, seccomp[10:])
    return SecurityContext(
        run_as_user=pick("runAsUser"), run_as_group=pick("runAsGroup"), run_as_non_root=bool(pick("runAsNonRoot")),
        supplemental_groups=groups, privileged=bool(csc.get("privileged")),
        read_only_root_filesystem=bool(csc.get("readOnlyRootFilesystem")),
        allow_privilege_escalation=csc.get("allowPrivilegeEscalation"),
        capabilities_add=list(caps.get("add") or []), capabilities_drop=list(caps.get("drop") or []),
        seccomp=seccomp, proc_mount=csc.get("procMount") or "Default",
    )


def container_config(pod: dict[str, Any], c: dict[str, Any], image_ref: str, env: list[tuple[str, str]],
                     command: list[str], args: list[str], mounts: list[Mount], attempt: int, termination_host: str,
                     seccomp_root: str, memory_capacity: int) -> ContainerConfig:
    md = pod["metadata"]
    res: LinuxResources = container_resources(pod, c, memory_capacity)
    if termination_host:
        mounts = [*mounts, Mount(container_path=c.get("terminationMessagePath") or "/dev/termination-log",
                                 host_path=termination_host)]
    pre_stop = ((c.get("lifecycle") or {}).get("preStop"))
    grace = (pod.get("spec") or {}).get("terminationGracePeriodSeconds")
    ann = {CONTAINER_HASH: container_hash(c), RESTART_COUNT: str(attempt),
           TERMINATION_PATH: c.get("terminationMessagePath") or "/dev/termination-log",
           TERMINATION_POLICY: c.get("terminationMessagePolicy") or "File",
           TERMINATION_HOST_PATH: termination_host}
    if pre_stop:
        ann[PRESTOP] = json.dumps(pre_stop)
    if grace is not None:
        ann[GRACE] = str(grace)
    lifecycle = c.get("lifecycle") or {}
    stop_signal = str(lifecycle.get("stopSignal") or "")
    return ContainerConfig(
        name=c["name"], image=image_ref, command=command, args=args, working_dir=c.get("workingDir") or "",
        env=env, mounts=mounts, resources=res, security=security_context(pod, c, seccomp_root), attempt=attempt,
        stop_signal=stop_signal, tty=bool(c.get("tty")), stdin=bool(c.get("stdin")),
        stdin_once=bool(c.get("stdinOnce")),
        labels={POD_UID: md["uid"], POD_NAME: md["name"], POD_NAMESPACE: md.get("namespace") or "default",
                CONTAINER_NAME: c["name"]},
        annotations=ann,
    )


def termination_message(annotations: dict[str, str], exit_code: int, log_path: str) -> str:
    """What the container left at its terminationMessagePath, else (FallbackToLogsOnError, on failure) its log tail."""
    path = annotations.get(TERMINATION_HOST_PATH) or ""
    msg = ""
    if path:
        try:
            with open(path, "rb") as f:
                msg = f.read(MAX_TERMINATION_MESSAGE).decode(errors="replace")
        except OSError:
            msg = ""
    if msg or annotations.get(TERMINATION_POLICY) != "FallbackToLogsOnError" or exit_code == 0:
        return msg
    return log_tail(log_path, MAX_LOG_LINES, MAX_LOG_BYTES)


def log_tail(path: str, lines: int, max_bytes: int) -> str:
    """The last `lines` lines (at most `max_bytes`) of a CRI-format log, as plain text."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            raw = f.read()
    except OSError:
        return ""
    out: list[str] = []
    partial = ""
    for rec in raw.decode(errors="replace").splitlines():
        parts = rec.split(" ", 3)
        if len(parts) < 4:
            parts.append("")
        if len(parts) < 3:
            continue
        partial += parts[3]
        if parts[2] == "F":
            out.append(partial)
            partial = ""
    text = "\n".join(out[-lines:])
    if out:
        text += "\n"
    return text[-max_bytes:]
