"""`pyk8s device-plugin gpu`: NVIDIA GPUs (or declared simulated ones) to the kubelet over the
v1beta1 device-plugin gRPC API, whole and shared, as NVIDIA's plugin and Alibaba's gpushare.

Three resources, each its own plugin socket in the kubelet's device-plugins directory:

- `nvidia.com/gpu`: one device per GPU, ID = the GPU's UUID. Allocate: NVIDIA_VISIBLE_DEVICES,
  /dev/nvidia<minor> plus the driver's control devices, and the driver's libraries and
  utilities read-only, where the NVIDIA container toolkit puts them (gpu/driver.py).
- `aliyun.com/gpu-mem`: one fake device per GiB of each GPU, ID `<uuid>-_-<n>` (gpushare's).
  Allocate finds the pod it is for (gpu/allocate.py: the Pending pod on this node with that
  share and ALIYUN_COM_GPU_MEM_ASSIGNED=false, oldest assume time first), exposes only the GPU
  the scheduler chose, gives ALIYUN_COM_GPU_MEM_* in env and marks the pod ASSIGNED=true.
- `aliyun.com/gpu-count`: one device per GPU, so the node reports how many it has.

The plugin re-registers whenever the kubelet's socket is recreated (a kubelet restart removes
the plugin sockets too), as upstream's plugins watch for it. Its sockets are 0600 in a 0700
directory: reaching them is the authentication, as upstream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from typing import Any

import grpc

from ..deviceplugin.api import deviceplugin_v1beta1_pb2 as pb
from ..deviceplugin.api import deviceplugin_v1beta1_pb2_grpc as pbg
from . import driver
from .allocate import candidate_pod, mem_device_gpu, mem_device_ids, share_env, whole_gpu_env
from .discovery import GPU
from .share import (
    ANN_ASSIGNED,
    GIB,
    RESOURCE_COUNT,
    RESOURCE_GPU,
    RESOURCE_MEM,
    assigned_index,
    is_active,
    pod_gpu_mem,
)

__all__ = ["ResourcePlugin", "GPUPlugin", "KUBELET_SOCKET"]

log = logging.getLogger(__name__)

KUBELET_SOCKET = "kubelet.sock"
API_VERSION = "v1beta1"
PODS = ("", "v1", "pods")
HEALTHY, UNHEALTHY = "Healthy", "Unhealthy"

Allocator = Callable[[pb.AllocateRequest], Awaitable[pb.AllocateResponse]]


class AllocationRefused(Exception):
    """Allocate cannot be answered; the kubelet fails the pod's admission with this message."""


class ResourcePlugin(pbg.DevicePluginServicer):
    """One resource's plugin: its devices, its socket and its Allocate."""

    def __init__(self, resource: str, socket_name: str, devices: Sequence[tuple[str, bool]], allocate: Allocator) -> None:
        self.resource = resource
        self.socket_name = socket_name
        self.devices = [pb.Device(ID=i, health=HEALTHY if ok else UNHEALTHY) for i, ok in devices]
        self._allocate = allocate
        self._server: grpc.aio.Server | None = None
        self._stopped = asyncio.Event()

    async def GetDevicePluginOptions(self, request: pb.Empty, context: Any) -> pb.DevicePluginOptions:
        return pb.DevicePluginOptions()

    async def ListAndWatch(self, request: pb.Empty, context: Any) -> AsyncIterator[pb.ListAndWatchResponse]:
        yield pb.ListAndWatchResponse(devices=self.devices)
        await self._stopped.wait()  # the stream stays open while the plugin serves

    async def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest, context: Any) -> pb.PreferredAllocationResponse:
        return pb.PreferredAllocationResponse()

    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:
        try:
            return await self._allocate(request)
        except AllocationRefused as e:
            log.warning("%s: Allocate refused: %s", self.resource, e)
            await context.abort(grpc.StatusCode.FAILED_PRECONDITION, str(e))
            raise  # abort raises; this line is for type checkers

    async def PreStartContainer(self, request: pb.PreStartContainerRequest, context: Any) -> pb.PreStartContainerResponse:
        return pb.PreStartContainerResponse()

    async def serve(self, directory: str) -> None:
        path = os.path.join(directory, self.socket_name)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        self._stopped.clear()
        server = grpc.aio.server()
        pbg.add_DevicePluginServicer_to_server(self, server)
        old = os.umask(0o177)  # the socket is born 0600
        try:
            server.add_insecure_port("unix://" + path)
            await server.start()
        finally:
            os.umask(old)
        self._server = server

    async def register(self, directory: str) -> None:
        async with grpc.aio.insecure_channel("unix://" + os.path.join(directory, KUBELET_SOCKET)) as ch:
            await pbg.RegistrationStub(ch).Register(pb.RegisterRequest(
                version=API_VERSION, endpoint=self.socket_name, resource_name=self.resource,
                options=pb.DevicePluginOptions()), timeout=10)

    async def stop(self) -> None:
        self._stopped.set()
        if self._server is not None:
            await self._server.stop(0.5)
            self._server = None


class GPUPlugin:
    """The three resources of one node's GPUs; `await run()` serves until cancelled."""

    def __init__(self, gpus: Sequence[GPU], node_name: str, directory: str, client: Any = None,
                 prefix: str = "pyk8s-gpu") -> None:
        self.gpus = list(gpus)
        self.node_name = node_name
        self.directory = directory
        self.client = client  # for gpu-mem: the pods of this node, and ASSIGNED=true
        self.by_uuid = {g.uuid: g for g in self.gpus}
        self._lock = asyncio.Lock()  # two Allocates must not claim the same candidate pod
        self._driver_mounts: list[tuple[str, str]] | None = None
        self.plugins = [
            ResourcePlugin(RESOURCE_GPU, f"{prefix}-nvidia.sock", [(g.uuid, g.healthy) for g in self.gpus],
                           self.allocate_whole),
            ResourcePlugin(RESOURCE_COUNT, f"{prefix}-count.sock", [(g.uuid, g.healthy) for g in self.gpus],
                           self.allocate_count),
        ]
        if client is not None:  # shares need the scheduler's annotations: no API, no gpu-mem
            healthy = {g.index: g.healthy for g in self.gpus}
            self.plugins.append(ResourcePlugin(RESOURCE_MEM, f"{prefix}-mem.sock",
                                               [(i, healthy[idx]) for i, idx in mem_device_ids(self.gpus)],
                                               self.allocate_mem))

    # -- what a container gets --------------------------------------------------------------

    def _mounts_and_devices(self, gpus: Sequence[GPU]) -> tuple[list[pb.Mount], list[pb.DeviceSpec]]:
        devices = [p for p in (driver.gpu_device(g.minor) for g in gpus) if p]
        if not devices:
            return [], []  # simulated GPUs: nothing on the host to give
        devices += driver.control_devices()
        if self._driver_mounts is None:
            self._driver_mounts = driver.driver_mounts()
        mounts = [pb.Mount(container_path=c, host_path=h, read_only=True) for c, h in self._driver_mounts]
        return mounts, [pb.DeviceSpec(container_path=d, host_path=d, permissions="rw") for d in devices]

    def _gpus_of(self, ids: Sequence[str]) -> list[GPU]:
        out = []
        for i in ids:
            g = self.by_uuid.get(i)
            if g is None:
                raise AllocationRefused(f"unknown device {i!r}")
            out.append(g)
        return out

    async def allocate_whole(self, req: pb.AllocateRequest) -> pb.AllocateResponse:
        resp = pb.AllocateResponse()
        for cr in req.container_requests:
            gpus = self._gpus_of(cr.devices_ids)
            mounts, devices = self._mounts_and_devices(gpus)
            resp.container_responses.append(pb.ContainerAllocateResponse(
                envs=whole_gpu_env([g.uuid for g in gpus]), mounts=mounts, devices=devices))
        return resp

    async def allocate_count(self, req: pb.AllocateRequest) -> pb.AllocateResponse:
        for cr in req.container_requests:
            self._gpus_of(cr.devices_ids)
        return pb.AllocateResponse(container_responses=[pb.ContainerAllocateResponse() for _ in req.container_requests])

    async def allocate_mem(self, req: pb.AllocateRequest) -> pb.AllocateResponse:
        assert self.client is not None
        for cr in req.container_requests:
            for i in cr.devices_ids:
                if mem_device_gpu(i) not in self.by_uuid:
                    raise AllocationRefused(f"unknown device {i!r}")
        want = sum(len(cr.devices_ids) for cr in req.container_requests)
        async with self._lock:
            pods = (await self.client.list(PODS, field_selector=f"spec.nodeName={self.node_name}"))["items"]
            pod = candidate_pod(pods, self.node_name, want)
            if pod is None:
                raise AllocationRefused(f"no pending pod on node {self.node_name} asks for {want} GiB of GPU memory "
                                        "with a GPU chosen by the scheduler (ALIYUN_COM_GPU_MEM_ASSIGNED=false)")
            idx = assigned_index(pod)
            gpu = next((g for g in self.gpus if g.index == idx), None)
            if gpu is None:
                raise AllocationRefused(f"pod asks for GPU {idx}, node {self.node_name} has {len(self.gpus)}")
            # Ours: a pod bound without the scheduler (spec.nodeName) may carry annotations naming any GPU;
            # the share must still fit beside the others there, or the GPU would be over-committed.
            uid = pod["metadata"].get("uid")
            used = sum(pod_gpu_mem(p) for p in pods if (p.get("metadata") or {}).get("uid") != uid and is_active(p)
                       and not (p.get("metadata") or {}).get("deletionTimestamp") and assigned_index(p) == idx)
            total = gpu.memory_bytes // GIB
            if used + want > total:
                raise AllocationRefused(f"GPU {idx} of node {self.node_name} has {max(total - used, 0)} GiB free, "
                                        f"the pod asks for {want} GiB")
            md = pod["metadata"]
            await self.client.patch(PODS, md["name"], {"metadata": {"uid": md["uid"],
                                                                     "annotations": {ANN_ASSIGNED: "true"}}},
                                    md["namespace"], patch_type="merge")
        mounts, devices = self._mounts_and_devices([gpu])
        resp = pb.AllocateResponse()
        for cr in req.container_requests:
            resp.container_responses.append(pb.ContainerAllocateResponse(
                envs=share_env(pod, gpu.uuid, len(cr.devices_ids)), mounts=mounts, devices=devices))
        log.info("allocated %d GiB of GPU %d (%s) to pod %s/%s", want, gpu.index, gpu.uuid, md["namespace"], md["name"])
        return resp

    # -- serving ----------------------------------------------------------------------------

    async def start(self) -> None:
        for p in self.plugins:
            await p.serve(self.directory)
        for p in self.plugins:
            await p.register(self.directory)
            log.info("registered %s (%d devices) with the kubelet", p.resource, len(p.devices))

    async def stop(self) -> None:
        for p in self.plugins:
            await p.stop()

    def _kubelet_socket_id(self) -> tuple[int, int] | None:
        try:
            st = os.stat(os.path.join(self.directory, KUBELET_SOCKET))
        except OSError:
            return None
        return st.st_ino, st.st_mtime_ns

    async def run(self, poll: float = 1.0) -> None:
        """Serve and register; start over whenever the kubelet's socket is recreated or ours vanish."""
        seen: tuple[int, int] | None = None
        try:
            while True:
                cur = self._kubelet_socket_id()
                ours = all(os.path.exists(os.path.join(self.directory, p.socket_name)) for p in self.plugins)
                if cur is not None and (cur != seen or not ours):
                    await self.stop()
                    try:
                        await self.start()
                        seen = cur
                    except (grpc.aio.AioRpcError, OSError) as e:
                        log.warning("registering with the kubelet failed, retrying: %s", e)
                await asyncio.sleep(poll)
        finally:
            await self.stop()
