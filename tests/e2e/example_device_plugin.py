"""A device plugin written as a third party would write one against the v1beta1 protocol: its own
grpc.aio server on a socket in the kubelet's device-plugins directory, using only the generated
modules (pyk8s.deviceplugin.api) and nothing of the kubelet. Like upstream's example plugins it
watches kubelet.sock and, when a new kubelet recreates it, serves again and re-registers.

It runs on its own thread and event loop; the test drives it with thread-safe calls and reads
what the kubelet asked of it (registrations, Allocate, PreStartContainer, GetPreferredAllocation).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import threading
from collections.abc import Callable
from typing import Any

import grpc

from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2 as pb
from pyk8s.deviceplugin.api import deviceplugin_v1beta1_pb2_grpc as pbg

# Allocate's answer for the device IDs asked: (envs, mounts, devices, annotations)
Answer = Callable[[list[str]], pb.ContainerAllocateResponse]


class ExamplePlugin(pbg.DevicePluginServicer):
    def __init__(self, plugin_dir: str, resource: str, device_ids: list[str], answer: Answer, *,
                 endpoint: str = "", pre_start: bool = False, preferred: bool = False) -> None:
        self.plugin_dir = plugin_dir
        self.resource = resource
        self.endpoint = endpoint or resource.replace("/", "-") + ".sock"
        self.health = {i: "Healthy" for i in device_ids}
        self.answer = answer
        self.options = pb.DevicePluginOptions(pre_start_required=pre_start, get_preferred_allocation_available=preferred)
        self.registrations = 0
        self.allocate_calls: list[list[str]] = []
        self.pre_start_calls: list[list[str]] = []
        self.preferred_calls: list[tuple[list[str], list[str], int]] = []
        self.loop = asyncio.new_event_loop()
        self._changed: asyncio.Event | None = None
        self._server: grpc.aio.Server | None = None
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name=f"plugin-{resource}")
        self._watch: asyncio.Task[None] | None = None

    # ---- driving it from the test thread

    def call(self, coro: Any, timeout: float = 20.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> ExamplePlugin:
        self._thread.start()
        self.call(self._start())
        return self

    def stop(self) -> None:
        if not self._thread.is_alive():
            return
        with contextlib.suppress(Exception):
            self.call(self._stop())
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)

    def set_health(self, device_id: str, health: str) -> None:
        def apply() -> None:
            self.health[device_id] = health
            if self._changed is not None:
                self._changed.set()
        self.loop.call_soon_threadsafe(apply)

    # ---- plugin side (its own loop)

    async def _start(self) -> None:
        self._changed = asyncio.Event()
        await self._serve_and_register()
        self._watch = asyncio.create_task(self._watch_kubelet())

    async def _stop(self) -> None:
        if self._watch is not None:
            self._watch.cancel()
        if self._server is not None:
            await self._server.stop(0)

    async def _serve_and_register(self) -> None:
        if self._server is not None:
            await self._server.stop(0)
        path = os.path.join(self.plugin_dir, self.endpoint)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)
        server = grpc.aio.server()
        pbg.add_DevicePluginServicer_to_server(self, server)
        server.add_insecure_port("unix://" + path)
        await server.start()
        self._server = server
        async with grpc.aio.insecure_channel("unix://" + os.path.join(self.plugin_dir, "kubelet.sock")) as ch:
            await pbg.RegistrationStub(ch).Register(pb.RegisterRequest(
                version="v1beta1", endpoint=self.endpoint, resource_name=self.resource, options=self.options), timeout=10)
        self.registrations += 1

    async def _watch_kubelet(self) -> None:
        """As the Go plugins' fsnotify on kubelet.sock: a new kubelet socket means register again."""
        sock = os.path.join(self.plugin_dir, "kubelet.sock")
        mine = os.path.join(self.plugin_dir, self.endpoint)

        def identity() -> int:
            # a new socket may reuse the old one's inode number: the new kubelet removing ours tells too
            # (not ctime: the kubelet's chmod of its socket changes that)
            return os.stat(sock).st_ino

        seen = identity()
        while True:
            await asyncio.sleep(0.1)
            try:
                now = identity()
            except FileNotFoundError:
                continue
            if now != seen or not os.path.exists(mine):  # the new kubelet also removed our socket
                try:
                    await self._serve_and_register()
                except grpc.aio.AioRpcError:
                    continue  # the kubelet is not answering yet: try again on the next tick
                seen = now

    # ---- the DevicePlugin service

    async def GetDevicePluginOptions(self, request: pb.Empty, context: Any) -> pb.DevicePluginOptions:  # noqa: N802
        return self.options

    async def ListAndWatch(self, request: pb.Empty, context: Any) -> Any:  # noqa: N802
        assert self._changed is not None
        while True:
            self._changed.clear()
            yield pb.ListAndWatchResponse(devices=[pb.Device(ID=i, health=h) for i, h in sorted(self.health.items())])
            await self._changed.wait()

    async def GetPreferredAllocation(self, request: pb.PreferredAllocationRequest,  # noqa: N802
                                     context: Any) -> pb.PreferredAllocationResponse:
        out = pb.PreferredAllocationResponse()
        for r in request.container_requests:
            self.preferred_calls.append((list(r.available_deviceIDs), list(r.must_include_deviceIDs), r.allocation_size))
            # this plugin prefers the highest IDs (the kubelet's own default would take the lowest)
            pick = sorted(r.available_deviceIDs, reverse=True)[:r.allocation_size]
            out.container_responses.append(pb.ContainerPreferredAllocationResponse(deviceIDs=pick))
        return out

    async def Allocate(self, request: pb.AllocateRequest, context: Any) -> pb.AllocateResponse:  # noqa: N802
        out = pb.AllocateResponse()
        for r in request.container_requests:
            self.allocate_calls.append(list(r.devices_ids))
            out.container_responses.append(self.answer(list(r.devices_ids)))
        return out

    async def PreStartContainer(self, request: pb.PreStartContainerRequest,  # noqa: N802
                                context: Any) -> pb.PreStartContainerResponse:
        self.pre_start_calls.append(list(request.devices_ids))
        return pb.PreStartContainerResponse()


async def register_raw(plugin_dir: str, **req: Any) -> tuple[str, str]:
    """One Register call as any client could send it: ("OK", "") or (status code name, details)."""
    async with grpc.aio.insecure_channel("unix://" + os.path.join(plugin_dir, "kubelet.sock")) as ch:
        try:
            await pbg.RegistrationStub(ch).Register(pb.RegisterRequest(**req), timeout=10)
        except grpc.aio.AioRpcError as e:
            return e.code().name, e.details() or ""
    return "OK", ""
