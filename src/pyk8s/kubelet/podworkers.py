"""Pod workers: one asyncio task per pod, driving it through upstream's lifecycle.

    syncing ──(deleted / removed / evicted / deadline / terminal phase)──▶ terminating ──▶ terminated
    (volumes, sandbox, init containers in order,                  (preStop, SIGTERM,    (final status; when
     sidecars, app containers with back-off,                       grace, SIGKILL;       deleted: remove
     probes, status)                                               sidecars last)        everything, then the
                                                                                         final DELETE)

A worker sleeps until woken: by a pod update, a runtime change the PLEG saw, a probe
result, a ConfigMap/Secret change, or its own timer (back-off expiry, deadline, resync).
Each wake runs one sync, so a pod's work is serial while pods proceed concurrently.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import json
import logging
import os
import random
import shutil
import time
from typing import TYPE_CHECKING, Any

from ..api.timefmt import format_time, parse_time_or_none
from .backoff import go_duration
from .containers import (
    CONTAINER_HASH,
    PRESTOP,
    container_config,
    container_hash,
    sandbox_config,
    termination_message,
)
from .devices import apply_run_options
from .dns import pod_dns
from .envvars import EnvBuilder, EnvError, expand_list
from .images.service import ImagePullFailure, default_pull_policy
from .probes import SUCCESS, run_handler
from .runtime.interface import (
    CREATED,
    EXITED,
    RUNNING,
    SANDBOX_READY,
    ContainerStatus,
    NotFound,
    RuntimeError_,
)
from .runtime.resources import pod_requests
from .status import PodView, build_status, is_sidecar, should_restart
from .volumes import UNBOUND_PREFIX, MountedVolume, VolumeError

if TYPE_CHECKING:
    from .agent import Kubelet

log = logging.getLogger("pyk8s.kubelet.pods")

SYNCING, TERMINATING, TERMINATED = "syncing", "terminating", "terminated"
MIN_GRACE = 2.0  # upstream's minimumGracePeriodInSeconds
RESYNC = 30.0
PODS = ("", "v1", "pods")

_CREATE_REASONS = ("CreateContainerConfigError", "CreateContainerError", "ErrImageNeverPull")


class ImageFailure(Exception):
    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def pod_full_name(pod: dict[str, Any]) -> str:
    md = pod["metadata"]
    return f"{md['name']}_{md.get('namespace') or 'default'}({md.get('uid', '')})"


def _rv(pod: dict[str, Any]) -> int:
    try:
        return int((pod.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _duration_ms(s: float) -> str:
    ms = int(s * 1000)
    if ms < 1000:
        return f"{ms}ms"
    return go_duration(round(ms / 1000, 3))


class PodWorker:
    def __init__(self, kl: Kubelet, pod: dict[str, Any], static: bool = False) -> None:
        self.kl = kl
        self.pod = pod
        self.uid: str = pod["metadata"]["uid"]
        self.static = static
        self.removed = False  # gone from its source (API or manifest directory)
        self.state = SYNCING
        self.view = PodView(host_ips=kl.host_ips())
        self.sandboxes: list[str] = []  # newest first
        self.containers: set[str] = set()
        self.mounted: dict[str, MountedVolume] = {}
        self.volumes_ready = False
        self.admitted = False
        self.evicted = False
        self.grace_override: float | None = None
        self._wake = asyncio.Event()
        self._kill_now = asyncio.Event()
        self._timer: asyncio.TimerHandle | None = None
        self._timer_at = 0.0
        self._messages: dict[str, str] = {}  # container id -> termination message (read once)
        self._max_attempt: dict[str, int] = {}
        self.first_sync = 0.0
        self._traced = False
        self.running_since: float = 0.0  # when all containers were first seen started (for the bench)
        self._requests: tuple[Any, dict[str, int]] = (None, {})  # (the spec they were computed from, requests)
        self.task = asyncio.create_task(self._run(), name=f"pod-{pod['metadata']['name']}")

    # ------------------------------------------------------------------ inputs

    def update(self, pod: dict[str, Any]) -> None:
        """A newer pod object from the source."""
        if _rv(pod) and _rv(pod) < _rv(self.pod):
            return
        old_grace = (self.pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
        if self.static:
            pod = {**pod, "status": self.pod.get("status") or {}}
        self.pod = pod
        new_grace = (pod.get("metadata") or {}).get("deletionGracePeriodSeconds")
        if self.state == TERMINATING and new_grace is not None and (old_grace is None or new_grace < old_grace):
            self._kill_now.set()  # the grace period was shortened while we wait: kill what is left now
        self.wake()

    def remove(self) -> None:
        self.removed = True
        if self.state == TERMINATING:
            self._kill_now.set()
        self.wake()

    def evict(self, message: str, condition_message: str) -> None:
        self.evicted = True
        self.view.phase_override = "Failed"
        self.view.reason = "Evicted"
        self.view.message = message
        self.view.extra_conditions = [{"type": "DisruptionTarget", "status": "True", "reason": "TerminationByKubelet",
                                       "message": condition_message}]
        self.grace_override = 0
        self.wake()

    def wake(self) -> None:
        self._wake.set()

    def requests(self) -> dict[str, int]:
        """The pod's effective resource requests, recomputed only when its spec object changes (admission sums
        them over every admitted pod for each new one: quadratic in a burst otherwise)."""
        spec = self.pod.get("spec")
        if self._requests[0] is not spec:
            self._requests = (spec, pod_requests(self.pod))
        return self._requests[1]

    def wake_at(self, when: float) -> None:
        """Sync again at `when` (epoch seconds) unless something wakes the worker earlier."""
        now = time.time()
        if self._timer is not None and now < self._timer_at <= when:
            return
        if self._timer is not None:
            self._timer.cancel()
        self._timer_at = when
        self._timer = asyncio.get_running_loop().call_later(max(0.0, when - now), self._wake.set)

    # ------------------------------------------------------------------ the loop

    async def _run(self) -> None:
        try:
            await self.adopt()
        except Exception:  # noqa: BLE001 - the first sync retries what it needs
            log.exception("adopting the containers of pod %s", pod_full_name(self.pod))
        self._wake.set()
        while True:
            await self._wake.wait()
            self._wake.clear()
            try:
                if await self._sync_once():
                    return
            except asyncio.CancelledError:
                raise
            except Exception:
                log.exception("syncing pod %s", pod_full_name(self.pod))
                self.wake_at(time.time() + 2)

    async def _sync_once(self) -> bool:
        if self.state == SYNCING:
            if self._termination_wanted():
                self.state = TERMINATING
            else:
                t0, op = time.monotonic(), "sync" if self.first_sync else "create"
                await self.sync_pod()
                self.kl.metrics.pod_worker(op, time.monotonic() - t0)
                if not self.view.terminal and not self._termination_wanted():
                    return False
                self.state = TERMINATING
        if self.state == TERMINATING:
            self._kill_now.clear()
            await self.kill_pod()
            self.state = TERMINATED
        return await self.cleanup()

    def _deleted(self) -> bool:
        return self.removed or bool(self.pod["metadata"].get("deletionTimestamp"))

    def _termination_wanted(self) -> bool:
        if self._deleted() or self.evicted or self.view.terminal:
            return True
        if (self.pod.get("status") or {}).get("phase") in ("Succeeded", "Failed") and not self.static:
            self.view.terminal = True  # a terminal pod never runs again (e.g. after a kubelet restart)
            return True
        return False

    # ------------------------------------------------------------------ syncing

    def _event(self, type_: str, reason: str, message: str, field_path: str = "") -> None:
        self.kl.record(self.pod, type_, reason, message, field_path)

    async def sync_pod(self) -> None:
        if self.running_since or self.first_sync:
            await self._sync_pod()
            return
        async with self.kl.start_slots:
            await self._sync_pod()

    async def _sync_pod(self) -> None:
        if self._termination_wanted():
            return  # deleted while it waited for a start slot: the next pass terminates it
        pod, kl, now = self.pod, self.kl, time.time()
        if not self.first_sync:
            self.first_sync = now
            self.view.start_time = (pod.get("status") or {}).get("startTime") or format_time(now)
        if not self.admitted:
            rejected = await kl.admit(pod, self.uid)
            if rejected is not None:
                reason, message = rejected
                self._event("Warning", reason, message)
                self.view.phase_override, self.view.reason = "Failed", reason
                self.view.message = "Pod was rejected: " + message
                self.view.terminal = self.view.rejected = True
                return
            self.admitted = True
        deadline = (pod.get("spec") or {}).get("activeDeadlineSeconds")
        if deadline is not None:
            start = parse_time_or_none(self.view.start_time) or self.first_sync
            if now >= start + int(deadline):
                msg = "Pod was active on the node longer than the specified deadline"
                self._event("Normal", "DeadlineExceeded", msg)
                self.view.phase_override, self.view.reason, self.view.message = "Failed", "DeadlineExceeded", msg
                self.view.terminal = True
                return
            self.wake_at(start + int(deadline))
        kl.objects.register(pod)
        t_vol = time.monotonic()
        if not await self._setup_volumes():
            await self.push_status()
            self.wake_at(time.time() + 2 + random.random())
            return
        t_sb = time.monotonic()
        sandbox = await self._ensure_sandbox()
        if sandbox is None:
            await self.refresh()
            await self.push_status()
            return
        await self.refresh()
        t_c = time.monotonic()
        await self._sync_containers(sandbox)
        await self.refresh()
        t_st = time.monotonic()
        status = await self.push_status()
        if not self._traced and status.get("phase") == "Running":
            self._traced = True  # where a pod's start went (upstream's pod startup latency tracker, as a log line)
            created = parse_time_or_none(self.pod["metadata"].get("creationTimestamp", "")) or now
            log.info("Observed pod startup duration pod=%s/%s podStartE2EDuration=%.2fs (created->sync %.2f volumes %.2f "
                     "sandbox %.2f containers %.2f status %.2f)", self.pod["metadata"].get("namespace"),
                     self.pod["metadata"]["name"], time.time() - created, now - created, t_sb - t_vol, t_c - t_sb,
                     t_st - t_c, time.monotonic() - t_st)
        if status.get("phase") in ("Succeeded", "Failed"):
            self.view.terminal = True
        self.kl.probes.sync(pod, self._running_map(), self.view.pod_ips[0] if self.view.pod_ips else "",
                            lambda: self.pod)
        self.wake_at(time.time() + RESYNC + random.random() * 5)

    async def adopt(self) -> None:
        """Pick up what the runtime already runs for this pod (after a kubelet restart)."""
        sbs, cids = self.kl.pleg.known(self.uid)
        self.containers |= cids
        known = []
        for sid in sbs:
            with contextlib.suppress(NotFound):
                known.append(await self.kl.runtime.sandbox_status(sid))
        self.sandboxes = [s.id for s in sorted(known, key=lambda s: s.created_at, reverse=True)]

    async def _setup_volumes(self) -> bool:
        mounted, errors = await self.kl.volumes.setup(self.pod)
        self.mounted.update(mounted)
        unbound = [(n, m) for n, m in errors if m.startswith(UNBOUND_PREFIX)]
        if unbound:  # upstream's volume manager: one event for the volumes it could not process
            names = " ".join(sorted(n for n, _ in unbound))
            self._event("Warning", "FailedMount", f"Unable to attach or mount volumes: unmounted volumes=[{names}], "
                        f"unattached volumes=[], failed to process volumes=[{names}]: {unbound[0][1]}")
        for name, msg in errors:
            if not msg.startswith(UNBOUND_PREFIX):
                self._event("Warning", "FailedMount", f'MountVolume.SetUp failed for volume "{name}" : {msg}')
        if errors and not self.volumes_ready:
            return False
        self.volumes_ready = True
        return True

    async def _current_sandbox(self) -> Any:
        while self.sandboxes:
            try:
                return await self.kl.runtime.sandbox_status(self.sandboxes[0])
            except NotFound:
                self.sandboxes.pop(0)
        return None

    async def _ensure_sandbox(self) -> Any:
        sb = await self._current_sandbox()
        if sb is not None and sb.state == SANDBOX_READY:
            self.view.sandbox_ready = True
            self.view.pod_ips = [ip for ip in [sb.ip, *sb.additional_ips] if ip]
            return sb
        self.view.sandbox_ready = False
        policy = (self.pod.get("spec") or {}).get("restartPolicy") or "Always"
        if sb is not None:
            if policy == "Never" and self.containers:
                self.view.terminal = True  # upstream does not re-create the sandbox of a run-once pod
                return None
            self._event("Normal", "SandboxChanged", "Pod sandbox changed, it will be killed and re-created.")
            await self._kill_containers(await self._statuses(), "", MIN_GRACE)
            with contextlib.suppress(RuntimeError_):
                await self.kl.runtime.stop_sandbox(sb.id)
        dns = pod_dns(self.pod, self.kl.cluster_dns, self.kl.cluster_domain, self.kl.host_resolv)
        for reason, msg in dns.warnings:
            self._event("Warning", reason, msg)
        md = self.pod["metadata"]
        cfg = sandbox_config(self.pod, dns, self.kl.cluster_domain, len(self.sandboxes),
                             os.path.join(self.kl.log_root, f"{md.get('namespace') or 'default'}_{md['name']}_{self.uid}"))
        try:
            sid = await self.kl.runtime.create_sandbox(cfg)
        except RuntimeError_ as e:
            self._event("Warning", "FailedCreatePodSandBox", f"Failed to create pod sandbox: {e}")
            self.wake_at(time.time() + 5 + random.random() * 5)
            return None
        self.sandboxes.insert(0, sid)
        self.kl.pleg.note(self.uid, sandbox_id=sid)
        sb = await self.kl.runtime.sandbox_status(sid)
        self.view.sandbox_ready = True
        self.view.pod_ips = [ip for ip in [sb.ip, *sb.additional_ips] if ip]
        return sb

    async def _statuses(self) -> list[ContainerStatus]:
        out = []
        for cid in list(self.containers):
            try:
                out.append(await self.kl.runtime.container_status(cid))
            except NotFound:
                self.containers.discard(cid)
        return out

    async def refresh(self) -> None:
        """Re-read the pod's containers from the runtime into the view."""
        by_name: dict[str, list[ContainerStatus]] = {}
        for st in await self._statuses():
            if st.state == RUNNING:
                self.kl.pleg.seen(self.uid, st.id, st.state)  # (an exit still wakes the worker: it restarts containers)
            if st.state == EXITED:
                if st.id not in self._messages:
                    self._messages[st.id] = st.message or termination_message(st.annotations, st.exit_code, st.log_path)
                st.message = self._messages[st.id]
            by_name.setdefault(st.name, []).append(st)
            self._max_attempt[st.name] = max(self._max_attempt.get(st.name, 0), st.attempt)
            if st.id not in self.view.image_ids:
                self.view.image_names[st.id], self.view.image_ids[st.id] = self.kl.image_status_names(st)
        for runs in by_name.values():
            runs.sort(key=lambda s: s.created_at, reverse=True)
        self.view.containers = by_name
        self.view.ready = {cid: ok for cid, ok in self.kl.probes.readiness.items() if cid in self.containers}
        self.view.started = {cid: ok for cid, ok in self.kl.probes.started.items() if cid in self.containers}
        if not self.view.pod_ips and self.sandboxes and self.view.sandbox_ready:
            sb = await self._current_sandbox()
            if sb is not None:
                self.view.pod_ips = [ip for ip in [sb.ip, *sb.additional_ips] if ip]
        if self.view.sandbox_ready and ((self.pod.get("spec") or {}).get("hostNetwork") or not self.view.pod_ips):
            self.view.pod_ips = list(self.view.host_ips)  # host network (or a runtime without pod networking)

    def _latest(self, name: str) -> ContainerStatus | None:
        runs = self.view.containers.get(name) or []
        return runs[0] if runs else None

    def _running_map(self) -> dict[str, tuple[str, float]]:
        out = {}
        for name, runs in self.view.containers.items():
            if runs and runs[0].state == RUNNING:
                out[name] = (runs[0].id, runs[0].started_at)
        return out

    async def _sync_containers(self, sandbox: Any) -> None:
        spec = self.pod.get("spec") or {}
        policy = spec.get("restartPolicy") or "Always"
        await self._start_ephemeral_containers(sandbox)
        initialized = self._any_regular_started(sandbox.id)
        for c in spec.get("initContainers") or []:
            # a new sandbox (after a reboot, or a lost network namespace) runs the init containers again
            latest = next((r for r in self.view.containers.get(c["name"]) or [] if r.sandbox_id == sandbox.id), None)
            if is_sidecar(c):
                if latest is not None and latest.state == RUNNING:
                    if await self._check_liveness(c, latest, True):
                        continue
                    if not initialized and not self.kl.probes.started.get(latest.id, not c.get("startupProbe")):
                        break  # wait for the sidecar to start before the next init container
                    continue
                started = await self._maybe_start(c, latest, sandbox, True)
                if not initialized and not started:
                    break
                if not initialized and c.get("startupProbe"):
                    break
                continue
            if initialized:
                continue
            if latest is None or latest.state in (CREATED,):
                await self._maybe_start(c, latest, sandbox, True)
                break
            if latest.state == RUNNING:
                break
            if latest.state == EXITED and latest.exit_code == 0:
                continue
            if policy == "Never":
                self.view.terminal = True  # an init container failed and may not be retried: the pod fails
                return
            await self._maybe_start(c, latest, sandbox, True)
            break
        else:
            initialized = True
        if not initialized:
            return
        done = True
        for c in spec.get("containers") or []:
            latest = self._latest(c["name"])
            if latest is not None and latest.state == RUNNING:
                if await self._check_liveness(c, latest, False):
                    done = False
                    continue
                latest = self._latest(c["name"])
            if should_restart(self.pod, c, latest):
                done = False
                await self._maybe_start(c, latest, sandbox, False)
        if done and policy != "Always":
            self.view.terminal = True  # every regular container is finished for good: sidecars are stopped next

    async def _start_ephemeral_containers(self, sandbox: Any) -> None:
        """Each ephemeral container starts once, before the others (so it can debug init containers too), and is
        never restarted, as upstream's SyncPod."""
        for ec in (self.pod.get("spec") or {}).get("ephemeralContainers") or []:
            if not self.view.containers.get(ec["name"]):
                await self.start_container(ec, sandbox, False, f"spec.ephemeralContainers{{{ec['name']}}}")

    def _pid_target(self, c: dict[str, Any]) -> str:
        """The container whose process namespace an ephemeral container shares (`targetContainerName`)."""
        target = c.get("targetContainerName")
        if not target:
            return ""
        latest = self._latest(target)
        if latest is None:
            raise ValueError(f"unable to find target container {target}")
        return latest.id

    def _any_regular_started(self, sandbox_id: str) -> bool:
        for c in (self.pod.get("spec") or {}).get("containers") or []:
            if any(r.sandbox_id == sandbox_id for r in self.view.containers.get(c["name"]) or []):
                return True
        return False

    async def _check_liveness(self, c: dict[str, Any], latest: ContainerStatus, init: bool) -> bool:
        """True when the running container is fine; otherwise it is killed (and the view refreshed)."""
        failed = self.kl.probes.liveness_failed.get(latest.id)
        changed = latest.annotations.get(CONTAINER_HASH) not in (None, "", container_hash(c))
        if not failed and not changed:
            return True
        if failed:
            msg = f"Container {c['name']} failed {failed} probe, will be restarted"
        else:
            msg = f"Container {c['name']} definition changed, will be restarted"
        probe = c.get(f"{failed}Probe") or {} if failed else {}
        grace = probe.get("terminationGracePeriodSeconds")
        if grace is None:
            grace = (self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        await self._kill_one(latest, c, float(grace), msg, init)
        await self.refresh()
        return False

    async def _maybe_start(self, c: dict[str, Any], latest: ContainerStatus | None, sandbox: Any, init: bool) -> bool:
        """Start (or restart) `c` unless its restart is backing off; True when it started."""
        name = c["name"]
        fp = f"spec.{'initContainers' if init else 'containers'}{{{name}}}"
        if latest is not None and latest.state == EXITED:
            key = f"{self.pod['metadata']['name']}_{self.pod['metadata'].get('namespace')}_{self.uid}_{name}_{container_hash(c)}"
            bo = self.kl.container_backoff
            if bo.is_in_backoff_since(key, latest.finished_at):
                d = go_duration(bo.get(key))
                self._event("Warning", "BackOff",
                            f"Back-off restarting failed container {name} in pod {pod_full_name(self.pod)}", fp)
                self.view.reasons[name] = ("CrashLoopBackOff", f"back-off {d} restarting failed container={name} "
                                                               f"pod={pod_full_name(self.pod)}")
                self.wake_at(latest.finished_at + bo.get(key) + 0.05)
                return False
            bo.next(key, latest.finished_at)
        elif latest is not None and latest.state == CREATED:
            with contextlib.suppress(RuntimeError_):
                await self.kl.runtime.remove_container(latest.id)
            self.containers.discard(latest.id)
        return await self.start_container(c, sandbox, init, fp)

    async def _ensure_image(self, c: dict[str, Any], fp: str) -> Any:
        kl = self.kl
        image = c.get("image", "")
        policy = c.get("imagePullPolicy") or default_pull_policy(image)
        present = kl.image_store.get(image)
        if policy == "Never" or (policy == "IfNotPresent" and present is not None):
            if present is not None:
                self._event("Normal", "Pulled", f'Container image "{image}" already present on machine', fp)
                return present
            msg = f'Container image "{image}" is not present with pull policy of Never'
            self._event("Warning", "ErrImageNeverPull", msg, fp)
            raise ImageFailure("ErrImageNeverPull", msg)
        key = f"{self.uid}_{image}"
        if kl.image_backoff.is_in_backoff_since_update(key):
            msg = f'Back-off pulling image "{image}"'
            self._event("Normal", "BackOff", msg, fp)
            self.wake_at(kl.image_backoff.until(key) + 0.05)
            raise ImageFailure("ImagePullBackOff", msg)
        self._event("Normal", "Pulling", f'Pulling image "{image}"', fp)
        t0 = time.monotonic()
        secrets = []
        ns = self.pod["metadata"].get("namespace") or "default"
        for ref in (self.pod.get("spec") or {}).get("imagePullSecrets") or []:
            s = await kl.objects.get("secrets", ns, ref.get("name", ""))
            if s is not None:
                secrets.append(s)
        try:
            img = await kl.images.ensure(image, policy, secrets)
        except ImagePullFailure as e:
            self._event("Warning", "Failed", f'Failed to pull image "{image}": {e}', fp)
            kl.image_backoff.next(key, time.time())
            self.wake_at(kl.image_backoff.until(key) + 0.05)
            raise ImageFailure("ErrImagePull" if e.reason == "ErrImagePull" else e.reason, str(e)) from e
        d = _duration_ms(time.monotonic() - t0)
        self._event("Normal", "Pulled", f'Successfully pulled image "{image}" in {d} ({d} including waiting). '
                                        f"Image size: {img.size} bytes.", fp)
        return img

    async def start_container(self, c: dict[str, Any], sandbox: Any, init: bool, fp: str) -> bool:
        kl, name = self.kl, c["name"]
        try:
            img = await self._ensure_image(c, fp)
        except ImageFailure as e:
            self._event("Warning", "Failed", f"Error: {e.reason}", fp)
            self.view.reasons[name] = (e.reason, str(e))
            return False
        try:
            objs = await kl.objects.snapshot(self.pod)
            builder = EnvBuilder(self.pod, lambda n: objs.get(("configmaps", n)), lambda n: objs.get(("secrets", n)),
                                 kl.services(), self.view.pod_ips or list(self.view.host_ips), kl.host_ips(),
                                 kl.allocatable())
            env = builder.build(c)
            for reason, msg in builder.warnings:
                self._event("Warning", reason, msg)
            envd = dict(env)
            mounts = kl.volumes.container_mounts(self.pod, c, self.mounted, envd)
            attempt = self._max_attempt[name] + 1 if name in self._max_attempt else 0
            term = await asyncio.to_thread(kl.volumes.termination_log, self.uid, name)  # (mkdir, create: off the loop)
            cfg = container_config(self.pod, c, c.get("image") or img.id, env, expand_list(list(c.get("command") or []), envd),
                                   expand_list(list(c.get("args") or []), envd), mounts, attempt, term,
                                   kl.seccomp_root, kl.memory_capacity)
            cfg.pid_target = self._pid_target(c)
            if kl.devices is not None:  # what Allocate gave it, after PreStartContainer (upstream's GetResources)
                apply_run_options(cfg, await kl.devices.run_options(self.uid, name))
            if kl.dra is not None:  # the CDI devices its claims' drivers prepared (kubelet/dra.py)
                apply_run_options(cfg, await kl.dra.run_options(self.pod, c))
        except (EnvError, VolumeError) as e:
            self._event("Warning", "Failed", f"Error: {e}", fp)
            self.view.reasons[name] = ("CreateContainerConfigError", str(e))
            return False
        except Exception as e:  # e.g. the API is unreachable while fetching objects
            self._event("Warning", "Failed", f"Error: {e}", fp)
            self.view.reasons[name] = ("CreateContainerConfigError", str(e))
            return False
        try:
            cid = await kl.runtime.create_container(sandbox.id, cfg)
        except RuntimeError_ as e:
            self._event("Warning", "Failed", f"Error: {e}", fp)
            self.view.reasons[name] = (e.reason if e.reason in _CREATE_REASONS else "CreateContainerError", str(e))
            return False
        self.containers.add(cid)
        self._max_attempt[name] = attempt
        kl.pleg.note(self.uid, container_id=cid)
        self._event("Normal", "Created", f"Created container: {name}", fp)
        try:
            await kl.runtime.start_container(cid)
        except RuntimeError_ as e:
            self._event("Warning", "Failed", f"Error: {e}", fp)
            self.view.reasons[name] = ("RunContainerError", str(e))
            return False
        self._event("Normal", "Started", f"Started container {name}", fp)
        self.view.reasons.pop(name, None)
        post = (c.get("lifecycle") or {}).get("postStart")
        if post:
            ok, msg = await self._run_hook(post, c, cid, "PostStart", 3600.0)
            if not ok:
                self._event("Warning", "FailedPostStartHook", msg, fp)
                st = await kl.runtime.container_status(cid)
                await self._kill_one(st, c, float((self.pod.get("spec") or {}).get("terminationGracePeriodSeconds", 30)),
                                     "FailedPostStartHook", init)
                self.view.reasons[name] = ("PostStartHookError", msg)
                return False
        await self._gc_containers(name)
        return True

    async def _gc_containers(self, name: str) -> None:
        """Keep the running container and the one before it (for lastState and `logs --previous`)."""
        runs = sorted([s for s in await self._statuses() if s.name == name], key=lambda s: s.created_at, reverse=True)
        for old in runs[2:]:
            if old.state != EXITED:
                continue
            with contextlib.suppress(RuntimeError_):
                await self.kl.runtime.remove_container(old.id)
            with contextlib.suppress(OSError):
                os.unlink(old.log_path)
            self.containers.discard(old.id)
            self.kl.probes.forget_container(old.id)
            for memo in (self._messages, self.view.image_ids, self.view.image_names):
                memo.pop(old.id, None)

    async def _run_hook(self, h: dict[str, Any], c: dict[str, Any], cid: str, kind: str, timeout: float) -> tuple[bool, str]:
        ip = self.view.pod_ips[0] if self.view.pod_ips else ""
        try:
            result, out = await run_handler(h, c, cid, ip, self.kl.runtime, timeout)
        except Exception as e:  # noqa: BLE001
            result, out = "failure", str(e)
        if result == SUCCESS or result == "warning":
            return True, ""
        who = f'for Container "{c["name"]}" in Pod "{pod_full_name(self.pod)}"'
        if h.get("exec") is not None:
            cmd = "[" + " ".join(h["exec"].get("command") or []) + "]"
            return False, f"Exec lifecycle hook ({cmd}) {who} failed - error: command '{' '.join(h['exec'].get('command') or [])}' " \
                          f"exited with non-zero code, message: {json.dumps(out)}"
        if h.get("httpGet") is not None:
            return False, f"HTTP lifecycle hook ({h['httpGet'].get('path', '')}) {who} failed - error: {out}"
        return False, f"{kind} hook {who} failed - error: {out}"

    # ------------------------------------------------------------------ killing

    def _grace(self) -> float:
        if self.grace_override is not None:
            return self.grace_override
        if self.removed:
            return MIN_GRACE  # force-deleted from the API: nobody waits for a graceful stop any more
        md, spec = self.pod["metadata"], self.pod.get("spec") or {}
        if md.get("deletionGracePeriodSeconds") is not None:
            return float(md["deletionGracePeriodSeconds"])
        return float(spec.get("terminationGracePeriodSeconds", 30) if spec.get("terminationGracePeriodSeconds") is not None
                     else 30)

    async def _kill_one(self, st: ContainerStatus, c: dict[str, Any] | None, grace: float, message: str,
                        init: bool = False) -> None:
        name = st.name
        fp = f"spec.{'initContainers' if init else 'containers'}{{{name}}}"
        self.kl.record(self.pod, "Normal", "Killing", message or f"Stopping container {name}", fp)
        t0 = time.monotonic()
        pre = ((c or {}).get("lifecycle") or {}).get("preStop")
        if pre is None and st.annotations.get(PRESTOP):
            with contextlib.suppress(ValueError):
                pre = json.loads(st.annotations[PRESTOP])
        if pre and st.state == RUNNING and grace > 0:
            hook = asyncio.ensure_future(self._run_hook(pre, c or {"name": name}, st.id, "PreStop", grace))
            killer = asyncio.ensure_future(self._kill_now.wait())
            done, _ = await asyncio.wait({hook, killer}, timeout=grace, return_when=asyncio.FIRST_COMPLETED)
            killer.cancel()
            if hook in done:
                ok, msg = hook.result()
                if not ok:
                    self.kl.record(self.pod, "Warning", "FailedPreStopHook", msg, fp)
            else:
                hook.cancel()
        remaining = max(grace - (time.monotonic() - t0), MIN_GRACE)
        stop = asyncio.ensure_future(self.kl.runtime.stop_container(st.id, remaining))
        killer = asyncio.ensure_future(self._kill_now.wait())
        done, _ = await asyncio.wait({stop, killer}, return_when=asyncio.FIRST_COMPLETED)
        killer.cancel()
        if stop not in done:
            with contextlib.suppress(RuntimeError_):
                await self.kl.runtime.stop_container(st.id, 0)
            with contextlib.suppress(Exception):
                await stop
        elif stop.exception() is not None and not isinstance(stop.exception(), NotFound):
            log.warning("stopping container %s of %s: %s", name, pod_full_name(self.pod), stop.exception())
        self.kl.probes.forget_container(st.id)

    async def _kill_containers(self, statuses: list[ContainerStatus], message: str, grace: float) -> None:
        spec = self.pod.get("spec") or {}
        apps = {c["name"]: c for c in spec.get("containers") or []}
        inits = {c["name"]: c for c in spec.get("initContainers") or []}
        live = [s for s in statuses if s.state != EXITED]
        sidecar_names = [c["name"] for c in spec.get("initContainers") or [] if is_sidecar(c)]
        first = [s for s in live if s.name not in sidecar_names]
        deadline = time.monotonic() + grace
        await asyncio.gather(*(self._kill_one(s, apps.get(s.name) or inits.get(s.name), grace, message,
                                              s.name not in apps) for s in first), return_exceptions=True)
        # sidecars go last, in reverse order, with what is left of the grace period
        for name in reversed(sidecar_names):
            for s in live:
                if s.name == name:
                    await self._kill_one(s, inits.get(name), max(deadline - time.monotonic(), 0.0), message, True)

    async def kill_pod(self) -> None:
        self.kl.probes.stop_pod(self.uid)
        grace = self._grace()
        if grace < MIN_GRACE and not self._kill_now.is_set():
            grace = MIN_GRACE
        statuses = await self._statuses()
        await self._kill_containers(statuses, "", grace)
        for sid in self.sandboxes:
            try:
                await self.kl.runtime.stop_sandbox(sid)
            except NotFound:
                pass
            except RuntimeError_ as e:
                log.warning("stopping sandbox of %s: %s", pod_full_name(self.pod), e)
        self.view.sandbox_ready = False
        self.view.terminal = True
        await self.refresh()

    # ------------------------------------------------------------------ terminated

    async def cleanup(self) -> bool:
        """Terminated: report the final status; once deleted, remove everything and finish (returns True)."""
        kl = self.kl
        if not self._deleted():
            await self.push_status()
            with contextlib.suppress(OSError):
                kl.volumes.teardown(self.uid)
            kl.objects.unregister(self.uid)
            return False
        if not self.removed:
            await self.push_status()
        for sid in list(self.sandboxes):
            try:
                await kl.runtime.remove_sandbox(sid)
            except NotFound:
                pass
            except RuntimeError_ as e:
                log.warning("removing sandbox of %s: %s", pod_full_name(self.pod), e)
                self.wake_at(time.time() + 2)
                return False
        for cid in list(self.containers):  # containers of sandboxes already gone
            with contextlib.suppress(RuntimeError_):
                await kl.runtime.remove_container(cid)
        try:
            kl.volumes.teardown(self.uid)
        except OSError as e:
            log.warning("tearing down volumes of %s: %s", pod_full_name(self.pod), e)
            self.wake_at(time.time() + 2)
            return False
        md = self.pod["metadata"]
        shutil.rmtree(os.path.join(kl.log_root, f"{md.get('namespace') or 'default'}_{md['name']}_{self.uid}"),
                      ignore_errors=True)
        kl.forget_pod(self.uid)
        if not self.removed and not self.static:
            try:
                await kl.client.delete(PODS, md["name"], md.get("namespace"), grace_period=0,
                                       preconditions={"uid": self.uid})
            except Exception as e:  # noqa: BLE001 - 404/409: already gone or replaced
                code = getattr(e, "code", 0)
                if code not in (404, 409):
                    log.warning("final delete of %s: %s", pod_full_name(self.pod), e)
                    self.wake_at(time.time() + 2)
                    return False
        return True

    # ------------------------------------------------------------------ status

    async def push_status(self) -> dict[str, Any]:
        status = build_status(self.pod, self.view, time.time())
        api_pod = self.kl.api_pod_for(self)
        if api_pod is not None:
            out = await self.kl.status_manager.update(api_pod, status)
            if out is not None and not self.static and _rv(out) >= _rv(self.pod):
                self.pod = out
        self.pod = {**self.pod, "status": status}
        if not self.running_since and status.get("phase") == "Running":
            sts = status.get("containerStatuses") or []
            if sts and all((s.get("state") or {}).get("running") for s in sts):
                self.running_since = time.time()
                self.kl.metrics.pod_started(self.running_since - (self.first_sync or self.running_since))
        return status


class PodWorkers:
    """The pod workers of one kubelet, by pod UID."""

    def __init__(self, kl: Kubelet) -> None:
        self.kl = kl
        self.workers: dict[str, PodWorker] = {}
        self.finished: dict[str, float] = {}  # uid -> when its worker finished (late events are ignored)

    def get(self, uid: str) -> PodWorker | None:
        return self.workers.get(uid)

    def update(self, pod: dict[str, Any], static: bool = False) -> PodWorker | None:
        uid = pod["metadata"]["uid"]
        if static:
            self.finished.pop(uid, None)  # a manifest put back unchanged has the same UID again
        elif uid in self.finished:
            return None
        w = self.workers.get(uid)
        if w is None or w.task.done():
            w = PodWorker(self.kl, pod, static)
            self.workers[uid] = w
            w.task.add_done_callback(functools.partial(self._finished_cb, uid, w))
        else:
            w.update(pod)
        return w

    def _finished_cb(self, uid: str, w: PodWorker, _task: asyncio.Task[None]) -> None:
        self._finished(uid, w)

    def _finished(self, uid: str, w: PodWorker) -> None:
        if self.workers.get(uid) is w:
            del self.workers[uid]
        if not w.task.cancelled():
            now = time.time()
            self.finished[uid] = now
            for k in [k for k, t in self.finished.items() if now - t > 600]:
                del self.finished[k]

    def remove(self, uid: str) -> None:
        w = self.workers.get(uid)
        if w is not None:
            w.remove()

    def wake(self, uid: str) -> None:
        w = self.workers.get(uid)
        if w is not None:
            w.wake()

    def active(self) -> list[PodWorker]:
        return [w for w in self.workers.values() if w.state != TERMINATED]

    async def stop(self) -> None:
        """Stop the workers, leaving containers running (a restarted kubelet adopts them)."""
        for w in list(self.workers.values()):
            w.task.cancel()
        for w in list(self.workers.values()):
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await w.task
        self.workers.clear()
