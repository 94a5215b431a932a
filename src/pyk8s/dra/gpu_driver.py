"""Our GPU DRA driver, `gpu.pyk8s.io` (`pyk8s dra-driver gpu`): both halves of a DRA driver.

- Control plane: publishes the node's ResourceSlice (dra/gpu_slices.py: whole GPUs and 4Gi
  shares kept apart by counter sets) and the `gpu.pyk8s.io` / `gpu-share.pyk8s.io`
  DeviceClasses when they are missing.
- Node: registers with the kubelet through `<kubelet root>/plugins_registry/` and serves
  `v1beta1.DRAPlugin` on `<kubelet root>/plugins/gpu.pyk8s.io/dra.sock`. NodePrepareResources
  reads the claim, and for the devices allocated from this node's pool writes a CDI spec
  (`<cdi dir>/gpu.pyk8s.io-<claim uid>.json`, kind `gpu.pyk8s.io/claim`, one device named after
  the claim's UID): `NVIDIA_VISIBLE_DEVICES` with the GPUs' UUIDs, `PYK8S_GPU_MEMORY` with the
  memory a share claim holds per GPU, and on a real GPU node the device nodes and the driver's
  libraries as the NVIDIA container toolkit gives them. NodeUnprepareResources removes it.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import re
from typing import Any

import grpc

from ..api.errors import StatusError
from ..client import Client
from ..gpu.discovery import GPU
from .api import dra_v1beta1_pb2 as dra_pb
from .api import dra_v1beta1_pb2_grpc as dra_grpc
from .api import pluginregistration_v1_pb2 as reg_pb
from .api import pluginregistration_v1_pb2_grpc as reg_grpc
from .gpu_slices import DEFAULT_SHARE_BYTES, DRIVER, GIB, device_classes, slice_for_node

__all__ = ["GPUDriver"]

log = logging.getLogger("pyk8s.dra")

RESOURCESLICES = ("resource.k8s.io", "v1beta1", "resourceslices")
DEVICECLASSES = ("resource.k8s.io", "v1beta1", "deviceclasses")
RESOURCECLAIMS = ("resource.k8s.io", "v1beta1", "resourceclaims")
CDI_KIND = f"{DRIVER}/claim"
_DEVICE = re.compile(r"^gpu-(\d+)(?:-share-\d+)?$")


class GPUDriver(reg_grpc.RegistrationServicer, dra_grpc.DRAPluginServicer):
    def __init__(self, client: Client, node: str, gpus: list[GPU], kubelet_root: str, cdi_dir: str,
                 share_bytes: int = DEFAULT_SHARE_BYTES) -> None:
        self.client = client
        self.node = node
        self.gpus = {g.index: g for g in gpus}
        self.cdi_dir = cdi_dir
        self.share_bytes = share_bytes
        self.registry_socket = os.path.join(kubelet_root, "plugins_registry", f"{DRIVER}-reg.sock")
        self.endpoint = os.path.join(kubelet_root, "plugins", DRIVER, "dra.sock")
        self.registered = asyncio.Event()
        self._servers: list[grpc.aio.Server] = []

    # ---- control plane --------------------------------------------------------------------

    async def publish(self) -> None:
        """The node's slice (replaced with the next generation when one is there) and the classes."""
        for cls in device_classes():
            await self.client.create_or_get(DEVICECLASSES, cls)
        want = slice_for_node(self.node, list(self.gpus.values()), self.share_bytes)
        cur, created = await self.client.create_or_get(RESOURCESLICES, want)
        if not created:
            gen = int(((cur.get("spec") or {}).get("pool") or {}).get("generation") or 0) + 1
            want["spec"]["pool"]["generation"] = gen
            await self.client.update(RESOURCESLICES, {**want, "metadata": cur["metadata"]})

    # ---- node: gRPC servers ---------------------------------------------------------------

    async def start(self) -> None:
        for path in (self.registry_socket, self.endpoint):
            if len(path.encode()) > 107:
                raise OSError(f"socket path {path} is longer than AF_UNIX allows (107 bytes)")
            os.makedirs(os.path.dirname(path), mode=0o750, exist_ok=True)
            if os.path.exists(path):
                os.unlink(path)
        os.makedirs(self.cdi_dir, exist_ok=True)
        plugin = grpc.aio.server()
        dra_grpc.add_DRAPluginServicer_to_server(self, plugin)
        plugin.add_insecure_port(f"unix://{self.endpoint}")
        await plugin.start()
        os.chmod(self.endpoint, 0o600)
        reg = grpc.aio.server()
        reg_grpc.add_RegistrationServicer_to_server(self, reg)
        reg.add_insecure_port(f"unix://{self.registry_socket}")
        await reg.start()
        os.chmod(self.registry_socket, 0o600)
        self._servers = [reg, plugin]

    async def stop(self) -> None:
        for s in self._servers:
            await s.stop(1)
        for path in (self.registry_socket, self.endpoint):
            if os.path.exists(path):
                os.unlink(path)

    # Registration
    async def GetInfo(self, request: Any, context: Any) -> Any:
        return reg_pb.PluginInfo(type="DRAPlugin", name=DRIVER, endpoint=self.endpoint,
                                 supported_versions=["v1beta1.DRAPlugin"])

    async def NotifyRegistrationStatus(self, request: Any, context: Any) -> Any:
        if request.plugin_registered:
            log.info("registered with the kubelet")
            self.registered.set()
        else:
            log.error("the kubelet refused the registration: %s", request.error)
        return reg_pb.RegistrationStatusResponse()

    # DRAPlugin
    async def NodePrepareResources(self, request: Any, context: Any) -> Any:
        out = dra_pb.NodePrepareResourcesResponse()
        for c in request.claims:
            try:
                devices = await self._prepare(c)
            except (StatusError, ValueError, OSError) as e:
                out.claims[c.uid].error = str(e)
                continue
            out.claims[c.uid].devices.extend(devices)
        return out

    async def NodeUnprepareResources(self, request: Any, context: Any) -> Any:
        out = dra_pb.NodeUnprepareResourcesResponse()
        for c in request.claims:
            try:
                os.unlink(self._cdi_path(c.uid))
            except FileNotFoundError:
                pass
            except OSError as e:
                out.claims[c.uid].error = str(e)
                continue
            out.claims[c.uid].error = ""
        return out

    # ---- prepare --------------------------------------------------------------------------

    def _cdi_path(self, uid: str) -> str:
        if not re.fullmatch(r"[0-9a-fA-F-]{1,64}", uid):
            raise ValueError(f"invalid claim UID {uid!r}")
        return os.path.join(self.cdi_dir, f"{DRIVER}-{uid}.json")

    async def _prepare(self, c: Any) -> list[Any]:
        claim = await self.client.get(RESOURCECLAIMS, c.name, c.namespace)
        if (claim.get("metadata") or {}).get("uid") != c.uid:
            raise ValueError(f"claim {c.namespace}/{c.name} has another UID than {c.uid}")
        results = [r for r in (((claim.get("status") or {}).get("allocation") or {}).get("devices") or {})
                   .get("results") or () if r.get("driver") == DRIVER and r.get("pool") == self.node]
        uuids: list[str] = []
        share_bytes: dict[int, int] = {}
        minors: list[int] = []
        for r in results:
            m = _DEVICE.match(r.get("device", ""))
            gpu = self.gpus.get(int(m.group(1))) if m else None
            if gpu is None:
                raise ValueError(f"device {r.get('device')} is not one of this node's GPUs")
            if gpu.uuid not in uuids:
                uuids.append(gpu.uuid)
                minors.append(gpu.minor)
            if "-share-" in r["device"]:
                share_bytes[gpu.index] = share_bytes.get(gpu.index, 0) + self.share_bytes
        env = [f"NVIDIA_VISIBLE_DEVICES={','.join(uuids)}"]
        if share_bytes:
            env.append("PYK8S_GPU_MEMORY=" + ",".join(f"{b // GIB}Gi" for _, b in sorted(share_bytes.items())))
        edits: dict[str, Any] = {"env": env}
        nodes, mounts = await asyncio.to_thread(_toolkit_edits, minors)
        if nodes:
            edits["deviceNodes"] = [{"path": p} for p in nodes]
        if mounts:
            edits["mounts"] = [{"hostPath": h, "containerPath": cp, "options": ["ro", "nosuid", "nodev", "bind"]}
                               for cp, h in mounts]
        spec = {"cdiVersion": "0.6.0", "kind": CDI_KIND, "devices": [{"name": c.uid, "containerEdits": edits}]}
        path = self._cdi_path(c.uid)
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(spec, f)
        os.replace(tmp, path)
        cdi_id = f"{CDI_KIND}={c.uid}"
        return [dra_pb.PreparedDevice(request_names=[r["request"]], pool_name=r["pool"], device_name=r["device"],
                                      cdi_device_ids=[cdi_id]) for r in results]


def _toolkit_edits(minors: list[int]) -> tuple[list[str], list[tuple[str, str]]]:
    """Device nodes and driver mounts on a real GPU node; none for simulated GPUs."""
    from ..gpu.driver import control_devices, driver_mounts, gpu_device

    devs = [d for d in (gpu_device(m) for m in minors) if d]
    if not devs:
        return [], []
    return devs + control_devices(), driver_mounts()
