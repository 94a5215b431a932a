"""Simulated pod lifecycles: the pod status a v1.33 kubelet would report at each step.

Pure builders: `SimPod` is the simulator's memory of one pod (which step it is at, when its
containers started, how often they restarted), `pod_status` turns that into the wire-form
status the kubelet would PATCH. Steps:

    creating  -> phase Pending, containers waiting in ContainerCreating (PodInitializing with init containers)
    running   -> phase Running, containers running, Ready unless `sim.pyk8s.io/ready: "false"`
    backoff   -> phase Running, containers waiting in CrashLoopBackOff after an exit that restartPolicy restarts
    exited    -> phase Succeeded (every exit code 0) or Failed
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any

from .nodes import rfc3339

__all__ = [
    "ANN_READY", "ANN_RUN_SECONDS", "ANN_EXIT_CODE", "SimPod", "pod_status", "normalize_image", "exit_plan",
    "restarts_after_exit",
]

ANN_READY = "sim.pyk8s.io/ready"
ANN_RUN_SECONDS = "sim.pyk8s.io/run-seconds"
ANN_EXIT_CODE = "sim.pyk8s.io/exit-code"


@dataclass
class SimPod:
    uid: str
    namespace: str
    name: str
    node: str
    pod: dict[str, Any]
    stage: str = "new"          # new | creating | running | backoff | exited
    reported: str = ""          # the stage of the last status the API accepted
    # wall-clock times (time.time()); timers live in the simulator's wheel
    start_time: float = 0.0     # status.startTime: when the kubelet first saw the pod
    started_at: float = 0.0     # when the current containers started
    prev_started_at: float = 0.0  # when the containers of the previous run started
    finished_at: float = 0.0    # when they last exited
    restarts: int = 0
    exit_code: int = 0          # the last exit's code
    backoff: float = 0.0        # the CrashLoopBackOff delay being served
    pod_ip: str | None = None
    ready: bool = True
    exit_scheduled: bool = False
    deleting: bool = False
    gpu_allocated: bool = False  # the GPU share annotations were written (sim/gpus.py)
    # lastTransitionTime per condition type: (status, time) so a time moves only when its status does
    cond_times: dict[str, tuple[str, str]] = field(default_factory=dict)


def normalize_image(image: str) -> str:
    """What the runtime reports as the image: a fully qualified reference (docker.io/library/... for short names)."""
    name, digest = (image.split("@", 1) + [""])[:2]
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    if digest:
        return f"{name}@{digest}"
    last = name.rsplit("/", 1)[-1]
    return name if ":" in last else name + ":latest"


def _image_id(image: str) -> str:
    full = normalize_image(image)
    if "@" in full:
        return full
    repo = full.rsplit(":", 1)[0]
    return f"{repo}@sha256:{hashlib.sha256(full.encode()).hexdigest()}"


def _container_id(sp: SimPod, cname: str, restarts: int | None = None) -> str:
    n = sp.restarts if restarts is None else restarts
    return "sim://" + hashlib.sha256(f"{sp.uid}/{cname}/{n}".encode()).hexdigest()


def exit_plan(pod: dict[str, Any]) -> tuple[float, int] | None:
    """(run seconds, exit code) when the annotations tell the pod's containers to exit; None to run forever."""
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    rs, ec = ann.get(ANN_RUN_SECONDS), ann.get(ANN_EXIT_CODE)
    if rs is None and ec is None:
        return None
    try:
        run = max(0.0, float(rs)) if rs is not None else 0.0
    except ValueError:
        run = 0.0
    try:
        code = int(ec) if ec is not None else 0
    except ValueError:
        code = 1
    return run, code


def restarts_after_exit(pod: dict[str, Any], code: int) -> bool:
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    return policy == "Always" or (policy == "OnFailure" and code != 0)


def _cond(sp: SimPod, typ: str, status: str, now: str, reason: str | None = None,
          message: str | None = None) -> dict[str, Any]:
    prev = sp.cond_times.get(typ)
    t = prev[1] if prev is not None and prev[0] == status else now
    sp.cond_times[typ] = (status, t)
    c: dict[str, Any] = {"type": typ, "status": status, "lastProbeTime": None, "lastTransitionTime": t}
    if reason:
        c["reason"] = reason
    if message:
        c["message"] = message
    return c


def _volume_mounts(c: dict[str, Any]) -> list[dict[str, Any]] | None:
    out = []
    for m in c.get("volumeMounts") or []:
        vm: dict[str, Any] = {"name": m.get("name"), "mountPath": m.get("mountPath")}
        if m.get("readOnly"):
            vm["readOnly"] = True
            vm["recursiveReadOnly"] = "Disabled"
        out.append(vm)
    return out or None


def _user(pod: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    psc = (pod.get("spec") or {}).get("securityContext") or {}
    csc = c.get("securityContext") or {}
    uid = csc.get("runAsUser", psc.get("runAsUser", 0))
    gid = csc.get("runAsGroup", psc.get("runAsGroup", 0))
    groups = [gid] + [g for g in [psc.get("fsGroup"), *(psc.get("supplementalGroups") or [])] if g is not None]
    return {"linux": {"uid": uid, "gid": gid, "supplementalGroups": sorted(set(groups))}}


def _base_status(sp: SimPod, pod: dict[str, Any], c: dict[str, Any]) -> dict[str, Any]:
    st: dict[str, Any] = {"name": c.get("name"), "image": normalize_image(c.get("image") or ""),
                          "imageID": "", "ready": False, "restartCount": 0, "started": False}
    vm = _volume_mounts(c)
    if vm:
        st["volumeMounts"] = vm
    res = c.get("resources")
    if res and (res.get("requests") or res.get("limits")):
        st["resources"] = {k: dict(v) for k, v in res.items() if k in ("requests", "limits") and v}
    return st


def _unready(names: list[str]) -> str:
    return f"containers with unready status: [{' '.join(names)}]"


def _terminated(sp: SimPod, cname: str, run: tuple[float, float, int] | None) -> dict[str, Any]:
    started, finished, restarts = run or (sp.started_at, sp.finished_at, sp.restarts)
    return {"terminated": {"exitCode": sp.exit_code, "reason": "Completed" if sp.exit_code == 0 else "Error",
                           "startedAt": rfc3339(started), "finishedAt": rfc3339(finished),
                           "containerID": _container_id(sp, cname, restarts)}}


def pod_status(sp: SimPod, host_ip: str, now_wall: float) -> dict[str, Any]:
    """The status to PATCH for the pod's current step (the full lists, since merge patch replaces lists)."""
    pod = sp.pod
    spec = pod.get("spec") or {}
    containers = spec.get("containers") or []
    inits = spec.get("initContainers") or []
    names = [c.get("name") or "" for c in containers]
    now = rfc3339(now_wall)
    start = rfc3339(sp.start_time)
    st: dict[str, Any] = {"hostIP": host_ip, "hostIPs": [{"ip": host_ip}], "startTime": start}

    old_conds = (pod.get("status") or {}).get("conditions") or []
    scheduled = next((c for c in old_conds if c.get("type") == "PodScheduled"), None) or \
        {"type": "PodScheduled", "status": "True", "lastProbeTime": None, "lastTransitionTime": start}

    cstats: list[dict[str, Any]] = []
    istats: list[dict[str, Any]] = []
    conds: list[dict[str, Any]]
    if sp.stage == "creating":
        st["phase"] = "Pending"
        waiting = "PodInitializing" if inits else "ContainerCreating"
        for c in containers:
            cs = _base_status(sp, pod, c)
            cs["state"] = {"waiting": {"reason": waiting}}
            cs["lastState"] = {}
            cstats.append(cs)
        for c in inits:
            cs = _base_status(sp, pod, c)
            cs["state"] = {"waiting": {"reason": "PodInitializing"}}
            cs["lastState"] = {}
            istats.append(cs)
        init_names = [c.get("name") or "" for c in inits]
        conds = [
            _cond(sp, "PodReadyToStartContainers", "False", start),
            _cond(sp, "Initialized", "False", start, "ContainersNotInitialized",
                  f"containers with incomplete status: [{' '.join(init_names)}]") if inits else
            _cond(sp, "Initialized", "True", start),
            _cond(sp, "Ready", "False", start, "ContainersNotReady", _unready(names)),
            _cond(sp, "ContainersReady", "False", start, "ContainersNotReady", _unready(names)),
        ]
    else:
        started = rfc3339(sp.started_at)
        if sp.stage == "running":
            prev = (sp.prev_started_at, sp.finished_at, sp.restarts - 1) if sp.restarts else None
        else:  # the run that just ended
            prev = (sp.started_at, sp.finished_at, sp.restarts)
        ready = sp.stage == "running" and sp.ready
        for c in containers:
            cname = c.get("name") or ""
            cs = _base_status(sp, pod, c)
            cs["restartCount"] = sp.restarts
            cs["imageID"] = _image_id(c.get("image") or "")
            cs["user"] = _user(pod, c)
            if sp.stage == "running":
                cs["state"] = {"running": {"startedAt": started}}
                cs["lastState"] = _terminated(sp, cname, prev) if prev else {}
                cs["containerID"] = _container_id(sp, cname)
                cs["ready"], cs["started"] = ready, True
            elif sp.stage == "backoff":
                cs["state"] = {"waiting": {"reason": "CrashLoopBackOff", "message":
                               f"back-off {int(sp.backoff)}s restarting failed container={cname} "
                               f"pod={sp.name}_{sp.namespace}({sp.uid})"}}
                cs["lastState"] = _terminated(sp, cname, prev)
                cs["containerID"] = _container_id(sp, cname)
            else:  # exited
                cs["state"] = _terminated(sp, cname, prev)
                cs["lastState"] = {}
                cs["containerID"] = _container_id(sp, cname)
            cstats.append(cs)
        for c in inits:
            cname = c.get("name") or ""
            cs = _base_status(sp, pod, c)
            cs["imageID"] = _image_id(c.get("image") or "")
            cs["containerID"] = _container_id(sp, "init/" + cname, 0)
            cs["user"] = _user(pod, c)
            cs["lastState"] = {}
            if c.get("restartPolicy") == "Always" and sp.stage != "exited":  # a sidecar keeps running
                cs["state"] = {"running": {"startedAt": start}}
                cs["ready"], cs["started"] = True, True
            else:
                cs["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": start,
                                              "finishedAt": start, "containerID": cs["containerID"]}}
                cs["ready"] = True
            istats.append(cs)
        if sp.stage == "exited":
            succeeded = sp.exit_code == 0
            st["phase"] = "Succeeded" if succeeded else "Failed"
            term = "PodCompleted" if succeeded else "PodFailed"
            conds = [
                _cond(sp, "PodReadyToStartContainers", "False", now),
                _cond(sp, "Initialized", "True", start, "PodCompleted" if succeeded else None),
                _cond(sp, "Ready", "False", now, term),
                _cond(sp, "ContainersReady", "False", now, term),
            ]
        else:
            st["phase"] = "Running"
            conds = [
                _cond(sp, "PodReadyToStartContainers", "True", started),
                _cond(sp, "Initialized", "True", started),
                _cond(sp, "Ready", "True", started) if ready else
                _cond(sp, "Ready", "False", now, "ContainersNotReady", _unready(names)),
                _cond(sp, "ContainersReady", "True", started) if ready else
                _cond(sp, "ContainersReady", "False", now, "ContainersNotReady", _unready(names)),
            ]
        if sp.pod_ip:
            st["podIP"] = sp.pod_ip
            st["podIPs"] = [{"ip": sp.pod_ip}]
    conds.append(scheduled)
    st["conditions"] = conds
    st["containerStatuses"] = cstats
    if inits:
        st["initContainerStatuses"] = istats
    return st
