"""The kubelet's pod-resources API (podresources v1) on `<root-dir>/pod-resources/kubelet.sock`.

Monitoring agents (DCGM exporter and the like) ask it which devices each pod's containers hold.
As upstream, the socket's directory is root-only (0700): reaching it is the authentication.
`Get` is served (upstream has it behind the KubeletPodResourcesGet gate).
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from typing import Any

import grpc

from ..datadir import ensure_private_dir
from .api import podresources_v1_pb2 as pb
from .api import podresources_v1_pb2_grpc as pbg
from .manager import DeviceManager

log = logging.getLogger(__name__)

SOCKET_NAME = "kubelet.sock"


def _containers(pod: dict[str, Any]) -> list[str]:
    spec = pod.get("spec") or {}
    # as upstream (SidecarContainers on): restartable init containers run alongside the app ones
    inits = [c["name"] for c in spec.get("initContainers") or [] if c.get("restartPolicy") == "Always"]
    return inits + [c["name"] for c in spec.get("containers") or []]


class PodResourcesServer(pbg.PodResourcesListerServicer):
    def __init__(self, directory: str, devices: DeviceManager, pods: Callable[[], list[dict[str, Any]]]) -> None:
        self.directory = os.path.abspath(directory)
        self.socket_path = os.path.join(self.directory, SOCKET_NAME)
        self.devices = devices
        self.pods = pods
        self._server: grpc.aio.Server | None = None

    async def start(self) -> None:
        ensure_private_dir(self.directory)
        if os.path.lexists(self.socket_path):
            os.unlink(self.socket_path)
        server = grpc.aio.server()
        pbg.add_PodResourcesListerServicer_to_server(self, server)
        server.add_insecure_port("unix://" + self.socket_path)
        await server.start()
        os.chmod(self.socket_path, 0o600)
        self._server = server
        log.info("pod-resources API served on %s", self.socket_path)

    async def stop(self) -> None:
        if self._server is not None:
            await self._server.stop(0)
            self._server = None

    def _pod(self, pod: dict[str, Any]) -> pb.PodResources:
        md = pod["metadata"]
        out = pb.PodResources(name=md["name"], namespace=md.get("namespace") or "default")
        for name in _containers(pod):
            devs = self.devices.container_devices(md["uid"], name)
            out.containers.append(pb.ContainerResources(name=name, devices=[
                pb.ContainerDevices(resource_name=res, device_ids=ids) for res, ids in devs.items()]))
        return out

    async def List(self, request: pb.ListPodResourcesRequest,  # noqa: N802
                   context: grpc.aio.ServicerContext) -> pb.ListPodResourcesResponse:
        return pb.ListPodResourcesResponse(pod_resources=[self._pod(p) for p in self.pods()])

    async def Get(self, request: pb.GetPodResourcesRequest,  # noqa: N802
                  context: grpc.aio.ServicerContext) -> pb.GetPodResourcesResponse:
        for p in self.pods():
            md = p["metadata"]
            if md["name"] == request.pod_name and (md.get("namespace") or "default") == request.pod_namespace:
                return pb.GetPodResourcesResponse(pod_resources=self._pod(p))
        # upstream's handler returns a plain error: code Unknown for the client
        await context.abort(grpc.StatusCode.UNKNOWN,
                            f"pod {request.pod_name} in namespace {request.pod_namespace} not found")
        raise AssertionError("unreachable")

    async def GetAllocatableResources(self, request: pb.AllocatableResourcesRequest,  # noqa: N802
                                      context: grpc.aio.ServicerContext) -> pb.AllocatableResourcesResponse:
        out = pb.AllocatableResourcesResponse()
        for res in sorted(self.devices.resources):
            healthy, unhealthy = self.devices.devices_of(res)
            # as upstream's allDevices: every device the plugin reported, one entry each
            for i in sorted(healthy | unhealthy):
                out.devices.append(pb.ContainerDevices(resource_name=res, device_ids=[i]))
        return out
