"""The kubelet's device manager (upstream pkg/kubelet/cm/devicemanager), for device plugins.

- Serves `Registration` on `<root-dir>/device-plugins/kubelet.sock`. The directory is 0700 and
  root's: being able to reach the socket is the authentication, as upstream. On start it
  removes the sockets left there (plugins watch for the new kubelet.sock and re-register).
- Each registered plugin is dialled on its endpoint (a socket file name in that directory) and
  followed through `ListAndWatch`; healthy devices make the node's allocatable, healthy plus
  unhealthy its capacity. A plugin that goes away keeps its capacity with 0 allocatable for
  `ENDPOINT_STOP_GRACE`, then the resource is reported as 0; a plugin registering again for the
  same resource replaces the old endpoint.
- At pod admission it picks devices per container (GetPreferredAllocation when the plugin offers
  it), calls Allocate, and keeps the answer; the kubelet applies it to the container (envs,
  mounts, device nodes, annotations) after PreStartContainer when the plugin asks for that.
- Assignments and registered devices are checkpointed (`checkpoint.py`), so a restarted kubelet
  neither loses a running pod's devices nor hands them to another pod.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import stat
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import grpc

from ..api.quantity import parse_quantity
from ..api.validation.resources import is_extended_resource
from ..datadir import ensure_private_dir
from . import checkpoint
from .api import deviceplugin_v1beta1_pb2 as pb
from .api import deviceplugin_v1beta1_pb2_grpc as pbg
from .endpoint import Endpoint

log = logging.getLogger(__name__)

KUBELET_SOCKET = "kubelet.sock"
SUPPORTED_VERSIONS = ("v1beta1",)
HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"
ENDPOINT_STOP_GRACE = 300.0  # upstream's endpointStopGracePeriod
UNEXPECTED = "UnexpectedAdmissionError"


class AllocationError(Exception):
    """Why a container's devices could not be allocated (upstream's wording)."""


def registration_error(req: pb.RegisterRequest) -> str | None:
    """Upstream's refusals of a RegisterRequest, or None for a good one."""
    if req.version not in SUPPORTED_VERSIONS:
        return (f"requested API version {json.dumps(req.version)} is not supported by kubelet. "
                f"Supported versions are {json.dumps(list(SUPPORTED_VERSIONS), separators=(',', ':'))}")
    if not is_extended_resource(req.resource_name):
        return f"the ResourceName {json.dumps(req.resource_name)} is invalid"
    # ours: upstream joins the endpoint to the socket dir as given; a path would let a plugin make the
    # kubelet dial any socket on the node, so only a file name in the directory is accepted
    if not req.endpoint or "/" in req.endpoint or req.endpoint in (".", "..", KUBELET_SOCKET):
        return f"the endpoint {json.dumps(req.endpoint)} is invalid: it must be a socket file name in the device-plugins directory"
    return None


def container_device_requests(c: dict[str, Any]) -> dict[str, int]:
    """Extended resources a container asks for (upstream reads limits; requests must equal them)."""
    res = c.get("resources") or {}
    want = {**(res.get("requests") or {}), **(res.get("limits") or {})}
    out: dict[str, int] = {}
    for name, q in want.items():
        if is_extended_resource(name):
            with contextlib.suppress(ValueError, TypeError):  # validation let only integers through
                out[name] = parse_quantity(q).to_int()
    return out


@dataclass
class RunOptions:
    """What the container gets from its devices' Allocate answers, merged over its resources."""

    envs: dict[str, str] = field(default_factory=dict)
    mounts: list[tuple[str, str, bool]] = field(default_factory=list)  # (container_path, host_path, read_only)
    devices: list[tuple[str, str, str]] = field(default_factory=list)  # (container_path, host_path, permissions)
    annotations: dict[str, str] = field(default_factory=dict)


@dataclass
class _Resource:
    endpoint: Endpoint | None = None
    stopped_at: float | None = None  # when its plugin went away (or the kubelet restarted)
    healthy: set[str] = field(default_factory=set)
    unhealthy: set[str] = field(default_factory=set)


class DeviceManager:
    def __init__(self, plugin_dir: str, active_pods: Callable[[], set[str]],
                 on_change: Callable[[], None] = lambda: None, grace: float = ENDPOINT_STOP_GRACE) -> None:
        self.plugin_dir = os.path.abspath(plugin_dir)
        self.socket_path = os.path.join(self.plugin_dir, KUBELET_SOCKET)
        self.checkpoint_path = os.path.join(self.plugin_dir, checkpoint.CHECKPOINT_NAME)
        self.active_pods = active_pods
        self.on_change = on_change
        self.grace = grace
        self.resources: dict[str, _Resource] = {}
        self.removed: set[str] = set()  # resources whose plugin stayed away past the grace period
        # (pod UID, container, resource) -> (device IDs, serialized ContainerAllocateResponse)
        self.pod_devices: dict[tuple[str, str, str], tuple[list[str], bytes]] = {}
        self._server: grpc.aio.Server | None = None
        self._lock = asyncio.Lock()
        self._tasks: set[asyncio.Task[None]] = set()

    # ---------------------------------------------------------------- lifecycle

    async def start(self) -> None:
        ensure_private_dir(self.plugin_dir)
        cp = checkpoint.read(self.checkpoint_path)
        now = time.monotonic()
        for e in cp.entries:
            self.pod_devices[(e.pod_uid, e.container_name, e.resource_name)] = (e.device_ids, e.alloc_resp)
        for name in cp.registered:
            # as upstream: no devices until the plugin registers again, so capacity stays 0 meanwhile
            self.resources[name] = _Resource(stopped_at=now)
        self._remove_sockets()
        server = grpc.aio.server()
        pbg.add_RegistrationServicer_to_server(_Registration(self), server)
        server.add_insecure_port("unix://" + self.socket_path)
        await server.start()
        os.chmod(self.socket_path, 0o600)
        self._server = server
        log.info("device manager: Registration served on %s", self.socket_path)

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0)
            self._server = None
        for t in list(self._tasks):
            t.cancel()
        for r in self.resources.values():
            if r.endpoint is not None:
                await r.endpoint.close()
                r.endpoint = None
        with contextlib.suppress(OSError):
            os.unlink(self.socket_path)

    def _remove_sockets(self) -> None:
        """Upstream removes every socket in the directory: plugins see their socket and kubelet.sock
        vanish, start serving again and re-register with the new kubelet."""
        for name in os.listdir(self.plugin_dir):
            p = os.path.join(self.plugin_dir, name)
            with contextlib.suppress(OSError):
                if stat.S_ISSOCK(os.lstat(p).st_mode):
                    os.unlink(p)

    def _spawn(self, coro: Any) -> None:
        t = asyncio.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ---------------------------------------------------------------- registration and devices

    async def connect(self, req: pb.RegisterRequest) -> None:
        """Dial a plugin that registered, then follow its devices (upstream does this after answering)."""
        ep = Endpoint(req.resource_name, os.path.join(self.plugin_dir, req.endpoint), req.options)
        try:
            await ep.dial()
        except (TimeoutError, grpc.aio.AioRpcError, OSError) as e:
            log.error("device manager: failed to dial device plugin %s at %s: %s", req.resource_name, ep.socket_path, e)
            return
        r = self.resources.setdefault(req.resource_name, _Resource())
        old, r.endpoint, r.stopped_at = r.endpoint, ep, None
        self.removed.discard(req.resource_name)
        if old is not None:
            await old.close()
        log.info("device manager: plugin for %s registered (endpoint %s)", req.resource_name, req.endpoint)
        ep.watch(self._devices_changed, self._plugin_gone)

    def _devices_changed(self, ep: Endpoint, devices: Sequence[pb.Device]) -> None:
        r = self.resources.get(ep.resource)
        if r is None or r.endpoint is not ep:
            return
        r.healthy = {d.ID for d in devices if d.health == HEALTHY}
        r.unhealthy = {d.ID for d in devices if d.health != HEALTHY}
        self._write_checkpoint()
        self.on_change()

    def _plugin_gone(self, ep: Endpoint) -> None:
        r = self.resources.get(ep.resource)
        if r is None or r.endpoint is not ep:
            return  # replaced by a newer registration
        r.endpoint, r.stopped_at = None, time.monotonic()
        # as upstream's markResourceUnhealthy: capacity stays, allocatable drops to 0
        r.unhealthy |= r.healthy
        r.healthy = set()
        self._spawn(ep.close())
        self.on_change()

    def capacity(self) -> tuple[dict[str, str], dict[str, str]]:
        """(capacity, allocatable) of the device-plugin resources, for node status."""
        cap: dict[str, str] = {}
        alloc: dict[str, str] = {}
        now = time.monotonic()
        for name, r in list(self.resources.items()):
            if r.stopped_at is not None and now - r.stopped_at > self.grace:
                del self.resources[name]
                self.removed.add(name)
                self._write_checkpoint()
                continue
            cap[name] = str(len(r.healthy) + len(r.unhealthy))
            alloc[name] = str(len(r.healthy))
        for name in self.removed:
            cap[name] = alloc[name] = "0"  # as upstream: zero, so the scheduler stops placing pods for it
        return cap, alloc

    def devices_of(self, resource: str) -> tuple[set[str], set[str]]:
        r = self.resources.get(resource)
        return (set(r.healthy), set(r.unhealthy)) if r is not None else (set(), set())

    # ---------------------------------------------------------------- allocation

    def _free_inactive(self) -> None:
        """upstream's UpdateAllocatedDevices: devices of pods no longer active go back to the pool."""
        active = self.active_pods()
        gone = [k for k in self.pod_devices if k[0] not in active]
        for k in gone:
            del self.pod_devices[k]
        if gone:
            self._write_checkpoint()

    def forget(self, pod_uid: str) -> None:
        gone = [k for k in self.pod_devices if k[0] == pod_uid]
        for k in gone:
            del self.pod_devices[k]
        if gone:
            self._write_checkpoint()

    def _in_use(self, resource: str) -> set[str]:
        return {i for (_, _, res), (ids, _) in self.pod_devices.items() if res == resource for i in ids}

    async def admit(self, pod: dict[str, Any]) -> tuple[str, str] | None:
        """Allocate every container's device-plugin resources, or upstream's rejection."""
        uid = pod["metadata"]["uid"]
        spec = pod.get("spec") or {}
        if not any(self._managed(container_device_requests(c)) for c in
                   [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]):
            return None
        async with self._lock:
            self._free_inactive()
            try:
                await self._allocate_pod(uid, spec)
            except AllocationError as e:
                self.forget(uid)
                return UNEXPECTED, f"Allocate failed due to {e}, which is unexpected"
            except grpc.aio.AioRpcError as e:
                self.forget(uid)
                return UNEXPECTED, (f"Allocate failed due to rpc error: code = {_code_name(e)} desc = {e.details()}, "
                                    "which is unexpected")
        return None

    def _managed(self, want: dict[str, int]) -> dict[str, int]:
        return {k: v for k, v in want.items() if k in self.resources and v > 0}

    async def _allocate_pod(self, uid: str, spec: dict[str, Any]) -> None:
        reusable: dict[str, set[str]] = {}  # devices of finished init containers, for the containers after them
        for init, c in [*((True, c) for c in spec.get("initContainers") or []),
                        *((False, c) for c in spec.get("containers") or [])]:
            sidecar = init and c.get("restartPolicy") == "Always"
            for resource, n in sorted(self._managed(container_device_requests(c)).items()):
                ids = await self._allocate_container(uid, c["name"], resource, n, reusable.get(resource, set()))
                if init and not sidecar:
                    reusable.setdefault(resource, set()).update(ids)
                else:
                    reusable.get(resource, set()).difference_update(ids)

    async def _allocate_container(self, uid: str, name: str, resource: str, n: int, reusable: set[str]) -> list[str]:
        key = (uid, name, resource)
        have = self.pod_devices.get(key)
        if have is not None:
            if len(have[0]) != n:
                raise AllocationError(f"pod {json.dumps(uid)} container {json.dumps(name)} changed request for resource "
                                      f"{json.dumps(resource)} from {len(have[0])} to {n}")
            return have[0]  # already allocated (a kubelet restart re-admits running pods)
        r = self.resources.get(resource)
        if r is None:  # a resource known from the checkpoint counts as registered, with no devices yet
            raise AllocationError(f"can't allocate unregistered device {resource}")
        taken = sorted(reusable & r.healthy)[:n]
        needed = n - len(taken)
        available = r.healthy - self._in_use(resource) - set(taken)
        if len(available) < needed:
            raise AllocationError(f"requested number of devices unavailable for {resource}. "
                                  f"Requested: {needed}, Available: {len(available)}")
        chosen = list(taken)
        ep = r.endpoint
        if needed and ep is not None and ep.options.get_preferred_allocation_available:
            for i in await ep.preferred(sorted(available | set(taken)), sorted(taken), n):
                if len(chosen) < n and i in available and i not in chosen:
                    chosen.append(i)
        for i in sorted(available):
            if len(chosen) >= n:
                break
            if i not in chosen:
                chosen.append(i)
        if ep is None:
            raise AllocationError(f"endpoint not found in cache for a registered resource: {resource}")
        self.pod_devices[key] = (chosen, b"")  # reserved while Allocate runs
        try:
            resp = await ep.allocate(chosen)
        except BaseException:
            self.pod_devices.pop(key, None)
            raise
        if not resp.container_responses:
            self.pod_devices.pop(key, None)
            raise AllocationError(f"no containers return in allocation response {resp}")
        self.pod_devices[key] = (chosen, resp.container_responses[0].SerializeToString())
        self._write_checkpoint()
        log.info("device manager: pod %s container %s got %s %s", uid, name, resource, chosen)
        return chosen

    # ---------------------------------------------------------------- containers

    def container_devices(self, uid: str, name: str) -> dict[str, list[str]]:
        return {res: list(ids) for (u, c, res), (ids, _) in sorted(self.pod_devices.items()) if u == uid and c == name}

    async def run_options(self, uid: str, name: str) -> RunOptions:
        """PreStartContainer where the plugin asked for it, then the merged Allocate answers."""
        out = RunOptions()
        mount_paths: dict[str, str] = {}
        device_paths: dict[str, str] = {}
        for (u, c, resource), (ids, raw) in sorted(self.pod_devices.items()):
            if u != uid or c != name:
                continue
            r = self.resources.get(resource)
            if r is not None and r.endpoint is not None and r.endpoint.options.pre_start_required:
                try:
                    await r.endpoint.pre_start(ids)
                except grpc.aio.AioRpcError as e:
                    raise AllocationError("device plugin PreStartContainer rpc failed with err: rpc error: "
                                          f"code = {_code_name(e)} desc = {e.details()}") from e
            resp = pb.ContainerAllocateResponse.FromString(raw)
            out.envs.update(resp.envs)
            for m in resp.mounts:
                if m.container_path in mount_paths:  # as upstream: the first answer for a path wins
                    if mount_paths[m.container_path] != m.host_path:
                        log.error("device manager: container %s mount %s already comes from %s, skipping %s", name,
                                  m.container_path, mount_paths[m.container_path], m.host_path)
                    continue
                mount_paths[m.container_path] = m.host_path
                out.mounts.append((m.container_path, m.host_path, m.read_only))
            for d in resp.devices:
                if d.container_path in device_paths:
                    continue
                device_paths[d.container_path] = d.host_path
                out.devices.append((d.container_path, d.host_path, d.permissions or "rwm"))
            out.annotations.update(resp.annotations)
        return out

    # ---------------------------------------------------------------- checkpoint

    def _write_checkpoint(self) -> None:
        cp = checkpoint.Checkpoint(
            entries=[checkpoint.PodDeviceEntry(u, c, res, ids, raw) for (u, c, res), (ids, raw) in
                     sorted(self.pod_devices.items()) if raw],
            registered={name: sorted(r.healthy) for name, r in self.resources.items()})
        try:
            checkpoint.write(self.checkpoint_path, cp)
        except OSError as e:
            log.error("device manager: writing checkpoint %s: %s", self.checkpoint_path, e)

    def allocated(self) -> Iterable[tuple[str, str, str, list[str]]]:
        """(pod UID, container, resource, device IDs) of every assignment."""
        for (u, c, res), (ids, _) in sorted(self.pod_devices.items()):
            yield u, c, res, list(ids)


def _code_name(e: grpc.aio.AioRpcError) -> str:
    # Go's codes.Code String(): Unknown, DeadlineExceeded, ...
    return "".join(p.capitalize() for p in e.code().name.split("_"))


class _Registration(pbg.RegistrationServicer):
    def __init__(self, manager: DeviceManager) -> None:
        self.m = manager

    async def Register(self, request: pb.RegisterRequest, context: grpc.aio.ServicerContext) -> pb.Empty:  # noqa: N802
        err = registration_error(request)
        if err is not None:
            log.info("Bad registration request from device plugin with resource %s: %s", request.resource_name, err)
            # a plain Go error from upstream's handler reaches the plugin as code Unknown
            await context.abort(grpc.StatusCode.UNKNOWN, err)
        log.info("Got registration request from device plugin with resource %s", request.resource_name)
        self.m._spawn(self.m.connect(request))
        return pb.Empty()
