"""Pod status as upstream's kubelet computes it (generateAPIPodStatus, getPhase, the condition generators).

Pure functions of the pod, what the runtime reports about its containers, and the pod
worker's memory (why a container is waiting, probe results, terminal decisions), plus
`StatusManager`, which writes changes to the API as strategic-merge patches of pods/status.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from typing import Any

from ..api.errors import StatusError
from ..api.timefmt import format_time
from ..client import Client
from .runtime.interface import CREATED, EXITED, RUNNING, ContainerStatus
from .runtime.resources import pod_qos_class

log = logging.getLogger("pyk8s.kubelet.status")

PODS = ("", "v1", "pods")

# conditions the kubelet owns (others, e.g. from controllers or readiness-gate writers, are left alone)
KUBELET_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "Ready", "ContainersReady", "DisruptionTarget")


def is_sidecar(c: dict[str, Any]) -> bool:
    return c.get("restartPolicy") == "Always"


@dataclass
class PodView:
    """What the pod worker knows beyond the API object."""

    containers: dict[str, list[ContainerStatus]] = field(default_factory=dict)  # name -> newest first
    image_names: dict[str, str] = field(default_factory=dict)  # container id -> image name to report
    image_ids: dict[str, str] = field(default_factory=dict)  # container id -> imageID to report
    reasons: dict[str, tuple[str, str]] = field(default_factory=dict)  # name -> (waiting reason, message)
    ready: dict[str, bool] = field(default_factory=dict)  # container id -> readiness probe result
    started: dict[str, bool] = field(default_factory=dict)  # container id -> startup probe passed
    sandbox_ready: bool = False
    pod_ips: list[str] = field(default_factory=list)
    host_ips: list[str] = field(default_factory=list)
    terminal: bool = False  # the pod is done: containers will not be (re)started
    reason: str = ""  # pod-level reason (Evicted, DeadlineExceeded, admission failures)
    message: str = ""
    phase_override: str = ""  # Failed for rejected/evicted/deadline pods
    extra_conditions: list[dict[str, Any]] = field(default_factory=list)  # e.g. DisruptionTarget
    rejected: bool = False  # turned away at admission: nothing ran
    start_time: str = ""


def _t(ts: float) -> str | None:
    return format_time(ts) if ts else None


def should_restart(pod: dict[str, Any], c: dict[str, Any], latest: ContainerStatus | None, sidecar: bool = False) -> bool:
    """upstream ShouldContainerBeRestarted (sidecars always restart)."""
    if (pod.get("metadata") or {}).get("deletionTimestamp"):
        return False
    if latest is None:
        return True
    if latest.state == RUNNING:
        return False
    if latest.state != EXITED:
        return True
    if sidecar:
        return True
    policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
    if policy == "Never":
        return False
    if policy == "OnFailure" and latest.exit_code == 0:
        return False
    return True


def _terminated(cs: ContainerStatus) -> dict[str, Any]:
    t: dict[str, Any] = {"exitCode": cs.exit_code, "reason": cs.reason or ("Completed" if cs.exit_code == 0 else "Error")}
    if cs.message:
        t["message"] = cs.message
    if cs.started_at:
        t["startedAt"] = _t(cs.started_at)
    if cs.finished_at:
        t["finishedAt"] = _t(cs.finished_at)
    t["containerID"] = f"runc://{cs.id}"
    return t


def _state(cs: ContainerStatus) -> dict[str, Any]:
    if cs.state == RUNNING:
        return {"running": {"startedAt": _t(cs.started_at)} if cs.started_at else {}}
    if cs.state == EXITED:
        return {"terminated": _terminated(cs)}
    return {"waiting": {}}


def _volume_mounts(c: dict[str, Any]) -> list[dict[str, Any]]:
    out = []
    for m in c.get("volumeMounts") or []:
        vm: dict[str, Any] = {"name": m.get("name"), "mountPath": m.get("mountPath")}
        if m.get("readOnly"):
            vm["readOnly"] = True
            vm["recursiveReadOnly"] = "Disabled"
        out.append(vm)
    return out


def container_statuses(pod: dict[str, Any], specs: list[dict[str, Any]], view: PodView, old: list[dict[str, Any]],
                       init: bool) -> list[dict[str, Any]]:
    """upstream convertToAPIContainerStatuses, plus the probe manager's ready/started."""
    has_init = bool((pod.get("spec") or {}).get("initContainers"))
    default_reason = "PodInitializing" if has_init else "ContainerCreating"
    olds = {s.get("name"): s for s in old or []}
    out = []
    for c in specs:
        name = c["name"]
        sidecar = init and is_sidecar(c)
        st: dict[str, Any] = {"name": name, "image": c.get("image", ""), "imageID": "", "ready": False,
                              "restartCount": 0, "state": {"waiting": {"reason": default_reason}}}
        o = olds.get(name)
        if o is not None:
            if (o.get("state") or {}).get("terminated"):
                st = {k: v for k, v in o.items()}
            else:
                st["restartCount"] = o.get("restartCount", 0)
                if o.get("lastState"):
                    st["lastState"] = o["lastState"]
        runs = view.containers.get(name) or []
        latest = runs[0] if runs else None
        if latest is not None:
            st = {"name": name, "state": _state(latest), "ready": False, "restartCount": latest.attempt,
                  "image": view.image_names.get(latest.id, c.get("image", "")),
                  "imageID": view.image_ids.get(latest.id, latest.image_id), "containerID": f"runc://{latest.id}"}
            if len(runs) > 1 and runs[1].state == EXITED:
                st["lastState"] = {"terminated": _terminated(runs[1])}
            elif o is not None and o.get("lastState") and latest.state != EXITED:
                st["lastState"] = o["lastState"]
        if should_restart(pod, c, latest, sidecar) and name in view.reasons and not view.terminal:
            reason, message = view.reasons[name]
            if (st.get("state") or {}).get("terminated"):
                st["lastState"] = st["state"]
            st["state"] = {"waiting": {"reason": reason, **({"message": message} if message else {})}}
        elif latest is None and o is not None and (o.get("state") or {}).get("running") and view.terminal:
            # it ran and is gone (upstream's ContainerStatusUnknown)
            st["state"] = {"terminated": {"exitCode": 137, "reason": "ContainerStatusUnknown",
                                          "message": "The container could not be located when the pod was terminated"}}
            st["restartCount"] = o.get("restartCount", 0) + 1
        state = st.get("state") or {}
        running = latest is not None and "running" in state
        started = running and view.started.get(latest.id, not _has_probe(c, "startupProbe"))  # type: ignore[union-attr]
        st["started"] = bool(started)
        if init and not sidecar:
            st["ready"] = bool(state.get("terminated") and state["terminated"].get("exitCode") == 0)
        else:
            st["ready"] = bool(started and view.ready.get(latest.id, not _has_probe(c, "readinessProbe")))  # type: ignore[union-attr]
        if latest is not None and latest.state in (RUNNING, EXITED) and c.get("volumeMounts"):
            st["volumeMounts"] = _volume_mounts(c)
        if st.get("state", {}).get("waiting") == {} and latest is not None and latest.state == CREATED:
            st["state"] = {"waiting": {"reason": default_reason}}
        out.append(_ordered(st))
    return out


_KEY_ORDER = ("containerID", "image", "imageID", "lastState", "name", "ready", "restartCount", "started", "state",
              "volumeMounts")


def ephemeral_container_statuses(pod: dict[str, Any], view: PodView, old: dict[str, Any]) -> list[dict[str, Any]]:
    """As regular containers' statuses, but never ready and without `started`: upstream's prober manager, which
    sets those, does not look at ephemeral containers."""
    out = container_statuses(pod, (pod.get("spec") or {}).get("ephemeralContainers") or [], view,
                             old.get("ephemeralContainerStatuses") or [], False)
    for st in out:
        st["ready"] = False
        st.pop("started", None)
    return out


def _ordered(st: dict[str, Any]) -> dict[str, Any]:
    out = {k: st[k] for k in _KEY_ORDER if k in st}
    out.update({k: v for k, v in st.items() if k not in out})
    return out


def _has_probe(c: dict[str, Any], kind: str) -> bool:
    return bool(c.get(kind))


def _by_name(statuses: list[dict[str, Any]], name: str) -> dict[str, Any] | None:
    for s in statuses:
        if s.get("name") == name:
            return s
    return None


def get_phase(pod: dict[str, Any], init_statuses: list[dict[str, Any]], statuses: list[dict[str, Any]],
              terminal: bool, initialized: bool) -> str:
    """upstream getPhase."""
    spec = pod.get("spec") or {}
    pending_init = pending_sidecars = failed_init = 0
    for c in spec.get("initContainers") or []:
        if is_sidecar(c):
            continue
        s = _by_name(init_statuses, c["name"])
        if s is None:
            pending_init += 1
            continue
        state = s.get("state") or {}
        if "running" in state:
            pending_init += 1
        elif "terminated" in state:
            if state["terminated"].get("exitCode", 0) != 0:
                failed_init += 1
        elif "waiting" in state:
            last = (s.get("lastState") or {}).get("terminated")
            if last is not None:
                if last.get("exitCode", 0) != 0:
                    failed_init += 1
            else:
                pending_init += 1
        else:
            pending_init += 1
    unknown = running = waiting = stopped = succeeded = 0
    for c in spec.get("initContainers") or []:
        if not is_sidecar(c):
            continue
        s = _by_name(init_statuses, c["name"])
        if s is None:
            unknown += 1
            continue
        state = s.get("state") or {}
        if "running" in state:
            if not s.get("started"):
                pending_sidecars += 1
            running += 1
        elif "terminated" in state:
            pass
        elif "waiting" in state:
            if not (s.get("lastState") or {}).get("terminated"):
                pending_sidecars += 1
                waiting += 1
        else:
            pending_sidecars += 1
            unknown += 1
    for c in spec.get("containers") or []:
        s = _by_name(statuses, c["name"])
        if s is None:
            unknown += 1
            continue
        state = s.get("state") or {}
        if "running" in state:
            running += 1
        elif "terminated" in state:
            stopped += 1
            if state["terminated"].get("exitCode", 0) == 0:
                succeeded += 1
        elif "waiting" in state:
            if (s.get("lastState") or {}).get("terminated"):
                stopped += 1
            else:
                waiting += 1
        else:
            unknown += 1
    policy = spec.get("restartPolicy") or "Always"
    if failed_init > 0 and policy == "Never":
        return "Failed"
    if pending_init > 0 or (pending_sidecars > 0 and not initialized) or waiting > 0:
        return "Pending"
    if running > 0 and unknown == 0:
        return "Running"
    if running == 0 and stopped > 0 and unknown == 0:
        if terminal and not is_static(pod):
            return "Succeeded" if stopped == succeeded else "Failed"
        if policy == "Always":
            return "Running"
        if stopped == succeeded:
            return "Succeeded"
        if policy == "Never":
            return "Failed"
        return "Running"
    return "Pending"


def is_static(pod: dict[str, Any]) -> bool:
    ann = (pod.get("metadata") or {}).get("annotations") or {}
    return ann.get("kubernetes.io/config.source", "api") != "api"


def _names(xs: list[str]) -> str:
    return "[" + " ".join(xs) + "]"


def initialized_condition(pod: dict[str, Any], init_statuses: list[dict[str, Any]], statuses: list[dict[str, Any]],
                          phase: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    unknown, incomplete = [], []
    for c in spec.get("initContainers") or []:
        s = _by_name(init_statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
            continue
        if is_sidecar(c):
            if not s.get("started"):
                incomplete.append(c["name"])
        elif not s.get("ready"):
            incomplete.append(c["name"])
    if phase == "Succeeded" and not unknown:
        return {"type": "Initialized", "status": "True", "reason": "PodCompleted"}
    for s in statuses:
        st = s.get("state") or {}
        if "running" in st or "terminated" in st or (s.get("lastState") or {}).get("terminated"):
            return {"type": "Initialized", "status": "True"}
    msgs = []
    if unknown:
        msgs.append(f"containers with unknown status: {_names(unknown)}")
    if incomplete:
        msgs.append(f"containers with incomplete status: {_names(incomplete)}")
    if msgs:
        return {"type": "Initialized", "status": "False", "reason": "ContainersNotInitialized", "message": ", ".join(msgs)}
    return {"type": "Initialized", "status": "True"}


def containers_ready_condition(pod: dict[str, Any], init_statuses: list[dict[str, Any]],
                               statuses: list[dict[str, Any]], phase: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    unknown, unready = [], []
    for c in spec.get("initContainers") or []:
        if not is_sidecar(c):
            continue
        s = _by_name(init_statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
        elif not s.get("ready"):
            unready.append(c["name"])
    for c in spec.get("containers") or []:
        s = _by_name(statuses, c["name"])
        if s is None:
            unknown.append(c["name"])
        elif not s.get("ready"):
            unready.append(c["name"])
    if phase == "Succeeded" and not unknown:
        return {"type": "ContainersReady", "status": "False", "reason": "PodCompleted"}
    if phase == "Failed":
        return {"type": "ContainersReady", "status": "False", "reason": "PodFailed"}
    msgs = []
    if unknown:
        msgs.append(f"containers with unknown status: {_names(unknown)}")
    if unready:
        msgs.append(f"containers with unready status: {_names(unready)}")
    if msgs:
        return {"type": "ContainersReady", "status": "False", "reason": "ContainersNotReady", "message": ", ".join(msgs)}
    return {"type": "ContainersReady", "status": "True"}


def ready_condition(pod: dict[str, Any], containers_ready: dict[str, Any], conditions: list[dict[str, Any]]) -> dict[str, Any]:
    if containers_ready["status"] != "True":
        out = {"type": "Ready", "status": "False", "reason": containers_ready.get("reason", "")}
        if containers_ready.get("message"):
            out["message"] = containers_ready["message"]
        return out
    msgs = []
    for g in (pod.get("spec") or {}).get("readinessGates") or []:
        t = g.get("conditionType", "")
        c = next((c for c in conditions if c.get("type") == t), None)
        if c is None:
            msgs.append(f'corresponding condition of pod readiness gate "{t}" does not exist.')
        elif c.get("status") != "True":
            msgs.append(f'the status of pod readiness gate "{t}" is not "True", but {c.get("status")}')
    if msgs:
        return {"type": "Ready", "status": "False", "reason": "ReadinessGatesNotReady", "message": ", ".join(msgs)}
    return {"type": "Ready", "status": "True"}


def _with_times(cond: dict[str, Any], old: dict[str, Any] | None, now: str) -> dict[str, Any]:
    out = {"type": cond["type"], "status": cond["status"]}
    if old is not None and old.get("status") == cond["status"] and old.get("lastTransitionTime"):
        out["lastTransitionTime"] = old["lastTransitionTime"]
    else:
        out["lastTransitionTime"] = now
    for k in ("reason", "message"):
        if cond.get(k):
            out[k] = cond[k]
    if "observedGeneration" in cond:
        out["observedGeneration"] = cond["observedGeneration"]
    return out


def build_status(pod: dict[str, Any], view: PodView, now: float) -> dict[str, Any]:
    """The pod's new status (generateAPIPodStatus)."""
    old = dict(pod.get("status") or {})
    spec = pod.get("spec") or {}
    now_s = format_time(now)
    if view.rejected:  # upstream's rejectPod: phase, reason and message only (other writers' conditions stay)
        out: dict[str, Any] = {"phase": "Failed", "reason": view.reason, "message": view.message,
                               "qosClass": pod_qos_class(pod)}
        if old.get("conditions"):
            out["conditions"] = old["conditions"]
        return out
    init_st = container_statuses(pod, spec.get("initContainers") or [], view, old.get("initContainerStatuses") or [], True)
    st = container_statuses(pod, spec.get("containers") or [], view, old.get("containerStatuses") or [], False)
    initialized_before = any((c.get("state") or {}).get("running") or (c.get("state") or {}).get("terminated")
                             or (c.get("lastState") or {}).get("terminated") for c in st)
    phase = view.phase_override or get_phase(pod, init_st, st, view.terminal, initialized_before)
    old_phase = old.get("phase")
    if old_phase in ("Failed", "Succeeded") and phase != old_phase:
        phase = old_phase  # a terminal phase never changes (upstream's status manager refuses the transition)
    old_conds = {c.get("type"): c for c in old.get("conditions") or []}
    init_c = initialized_condition(pod, init_st, st, phase)
    cr_c = containers_ready_condition(pod, init_st, st, phase)
    conds = []
    conds.append({"type": "PodReadyToStartContainers", "status": "True" if view.sandbox_ready else "False"})
    conds.append(init_c)
    others = [c for c in old.get("conditions") or [] if c.get("type") not in KUBELET_CONDITIONS]
    for extra in view.extra_conditions:
        others = [c for c in others if c.get("type") != extra["type"]] + [extra]
    conds.append(ready_condition(pod, cr_c, others))
    conds.append(cr_c)
    final = [_with_times(c, old_conds.get(c["type"]), now_s) for c in conds]
    for c in others:
        final.append(c if c in (old.get("conditions") or []) else _with_times(c, old_conds.get(c["type"]), now_s))
    if is_static(pod) and not any(c["type"] == "PodScheduled" for c in final):
        final.append(_with_times({"type": "PodScheduled", "status": "True"}, old_conds.get("PodScheduled"), now_s))
    status: dict[str, Any] = {"phase": phase, "conditions": final}
    if view.host_ips:
        status["hostIP"] = view.host_ips[0]
        status["hostIPs"] = [{"ip": ip} for ip in view.host_ips]
    pod_ips = view.pod_ips or ([] if not (spec.get("hostNetwork") and view.sandbox_ready) else view.host_ips)
    if pod_ips:
        status["podIP"] = pod_ips[0]
        status["podIPs"] = [{"ip": ip} for ip in pod_ips]
    elif old.get("podIP") and phase in ("Failed", "Succeeded"):
        status["podIP"], status["podIPs"] = old["podIP"], old.get("podIPs") or [{"ip": old["podIP"]}]
    status["startTime"] = old.get("startTime") or view.start_time or now_s
    if spec.get("initContainers"):
        status["initContainerStatuses"] = init_st
    status["containerStatuses"] = st
    status["qosClass"] = pod_qos_class(pod)
    if view.reason:
        status["reason"] = view.reason
    if view.message:
        status["message"] = view.message
    if spec.get("ephemeralContainers"):
        status["ephemeralContainerStatuses"] = ephemeral_container_statuses(pod, view, old)
    for k in ("nominatedNodeName", "resize", "resourceClaimStatuses"):
        if k in old:
            status[k] = old[k]
    return status


def status_patch(old: dict[str, Any], new: dict[str, Any]) -> dict[str, Any]:
    """A strategic-merge patch taking `old` to `new`: explicit nulls for dropped keys, as a two-way merge patch has."""
    patch: dict[str, Any] = {}
    for k, v in new.items():
        if k != "conditions" and old.get(k) != v:
            patch[k] = v
    for k in old:
        if k not in new:
            patch[k] = None
    old_conds = {c.get("type"): c for c in old.get("conditions") or []}
    new_conds = new.get("conditions") or []
    changed = []
    for c in new_conds:
        o = old_conds.get(c.get("type"))
        if o == c:
            continue
        item = dict(c)
        for k in o or {}:
            if k not in item:
                item[k] = None
        changed.append(item)
    if changed or [c.get("type") for c in new_conds] != list(old_conds):
        patch["conditions"] = changed
        patch["$setElementOrder/conditions"] = [{"type": c["type"]} for c in new_conds]
    return patch


class StatusManager:
    """Writes pod statuses to the API; only changes are sent (one writer at a time per pod)."""

    def __init__(self, client: Client) -> None:
        self.client = client
        self._sent: dict[str, dict[str, Any]] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    def forget(self, uid: str) -> None:
        self._sent.pop(uid, None)
        self._locks.pop(uid, None)

    async def update(self, api_pod: dict[str, Any], status: dict[str, Any]) -> dict[str, Any] | None:
        """Patch pods/status of `api_pod` (the pod, or a static pod's mirror) when `status` differs from its status;
        returns the updated object, or None when nothing was written."""
        md = api_pod["metadata"]
        uid = md["uid"]
        lock = self._locks.setdefault(uid, asyncio.Lock())
        async with lock:
            current = api_pod.get("status") or {}
            if self._sent.get(uid) == status and current == status:
                return None
            patch = status_patch(current, status)
            if not patch:
                self._sent[uid] = status
                return None
            try:
                out = await self.client.patch(PODS, md["name"], {"metadata": {"uid": uid}, "status": patch},
                                              md.get("namespace"), sub="status", patch_type="strategic")
            except StatusError as e:
                if e.code not in (404, 409):
                    log.warning("updating status of pod %s/%s: %s", md.get("namespace"), md.get("name"), e)
                return None
            self._sent[uid] = status
            return out  # type: ignore[no-any-return]
