"""The kubelet's side of one registered device plugin: a gRPC channel to the plugin's socket,
its ListAndWatch stream, and the per-container calls (GetPreferredAllocation, Allocate,
PreStartContainer), as upstream's devicemanager endpoint."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Sequence

import grpc

from .api import deviceplugin_v1beta1_pb2 as pb
from .api import deviceplugin_v1beta1_pb2_grpc as pbg

log = logging.getLogger(__name__)

DIAL_TIMEOUT = 10.0  # upstream dials a registering plugin with a 10 s timeout
ALLOCATE_TIMEOUT = 120.0  # no deadline upstream for Allocate; we bound it so admission cannot hang forever
PRE_START_TIMEOUT = 30.0  # upstream's KubeletPreStartContainerRPCTimeoutInSecs


class Endpoint:
    def __init__(self, resource: str, socket_path: str, options: pb.DevicePluginOptions) -> None:
        self.resource = resource
        self.socket_path = socket_path
        self.options = options
        self.channel: grpc.aio.Channel | None = None
        self.stub: pbg.DevicePluginStub | None = None
        self._task: asyncio.Task[None] | None = None

    async def dial(self) -> None:
        self.channel = grpc.aio.insecure_channel("unix://" + self.socket_path)
        try:
            await asyncio.wait_for(self.channel.channel_ready(), DIAL_TIMEOUT)
        except BaseException:
            await self.channel.close()
            self.channel = None
            raise
        self.stub = pbg.DevicePluginStub(self.channel)

    def watch(self, on_devices: Callable[[Endpoint, Sequence[pb.Device]], None],
              on_gone: Callable[[Endpoint], None]) -> None:
        """Follow ListAndWatch until the stream ends or fails, then report the plugin gone."""

        async def run() -> None:
            assert self.stub is not None
            try:
                async for resp in self.stub.ListAndWatch(pb.Empty()):
                    on_devices(self, resp.devices)
            except grpc.aio.AioRpcError as e:
                log.info("device plugin %s: ListAndWatch ended: %s", self.resource, e.details() or e.code())
            except asyncio.CancelledError:
                raise
            on_gone(self)

        self._task = asyncio.create_task(run(), name=f"deviceplugin-{self.resource}")

    async def preferred(self, available: list[str], must_include: list[str], size: int) -> list[str]:
        assert self.stub is not None
        req = pb.PreferredAllocationRequest(container_requests=[pb.ContainerPreferredAllocationRequest(
            available_deviceIDs=available, must_include_deviceIDs=must_include, allocation_size=size)])
        resp = await self.stub.GetPreferredAllocation(req, timeout=ALLOCATE_TIMEOUT)
        return list(resp.container_responses[0].deviceIDs) if resp.container_responses else []

    async def allocate(self, ids: list[str]) -> pb.AllocateResponse:
        assert self.stub is not None
        req = pb.AllocateRequest(container_requests=[pb.ContainerAllocateRequest(devices_ids=ids)])
        return await self.stub.Allocate(req, timeout=ALLOCATE_TIMEOUT)

    async def pre_start(self, ids: list[str]) -> None:
        assert self.stub is not None
        await self.stub.PreStartContainer(pb.PreStartContainerRequest(devices_ids=ids), timeout=PRE_START_TIMEOUT)

    async def close(self) -> None:
        if self._task is not None and self._task is not asyncio.current_task():
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
        if self.channel is not None:
            with contextlib.suppress(Exception):
                await self.channel.close()
            self.channel = None
