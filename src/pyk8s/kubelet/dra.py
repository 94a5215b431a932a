"""The kubelet's DRA manager: driver registration through the plugin watcher, and the
`dra.k8s.io` v1beta1 calls around a pod's life (upstream's pkg/kubelet/cm/dra and
pluginmanager, v1.33).

- Registration: a driver puts a socket in `<root-dir>/plugins_registry/` serving
  `pluginregistration.Registration`. The watcher (a directory scan every half second) dials
  each new socket, asks GetInfo, accepts type `DRAPlugin` with `v1beta1.DRAPlugin` among its
  supported versions and an endpoint socket, and answers NotifyRegistrationStatus. A socket
  that disappears unregisters its driver.
- Prepare: before the first container of a pod starts, each claim the pod uses is read from
  the API (the Node authorizer allows a kubelet exactly these), must be allocated and reserved
  for the pod, and is prepared by every driver of its allocation (NodePrepareResources). The
  CDI device IDs answered for the devices of a container's requests are resolved against the
  CDI spec directories into env, device nodes and mounts for that container.
- Unprepare: when the kubelet forgets the pod, NodeUnprepareResources for what it prepared.
- Checkpoint: which claims were prepared for which pod, and by which drivers, is kept in
  `<root-dir>/dra_manager_state` (0600, as upstream's checkpoint of that name), so a restarted
  kubelet still unprepares the claims of pods that go away after the restart.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import stat
from dataclasses import dataclass, field
from typing import Any

import grpc

from ..client import Client
from ..deviceplugin.manager import RunOptions
from ..dra.api import dra_v1beta1_pb2 as dra_pb
from ..dra.api import dra_v1beta1_pb2_grpc as dra_grpc
from ..dra.api import pluginregistration_v1_pb2 as reg_pb
from ..dra.api import pluginregistration_v1_pb2_grpc as reg_grpc
from ..dra.cdi import DEFAULT_SPEC_DIRS, CDIError, resolve
from ..dra.podclaims import claim_name_for

__all__ = ["DRAManager", "DRA_PLUGIN_TYPE", "SUPPORTED_VERSION", "start_dra_manager"]

log = logging.getLogger(__name__)

DRA_PLUGIN_TYPE = "DRAPlugin"
SUPPORTED_VERSION = "v1beta1.DRAPlugin"
RESOURCECLAIMS = ("resource.k8s.io", "v1beta1", "resourceclaims")
SCAN_PERIOD = 0.5
CALL_TIMEOUT = 45.0  # upstream's plugin client timeout


@dataclass
class _Driver:
    name: str
    endpoint: str
    registration_socket: str
    channel: grpc.aio.Channel


@dataclass
class _Prepared:
    """A pod's prepared claims: per claim uid, (namespace, name, driver names) and the devices answered."""

    claims: dict[str, tuple[str, str, set[str]]] = field(default_factory=dict)
    devices: dict[str, list[Any]] = field(default_factory=dict)  # claim uid -> PreparedDevice messages
    by_pod_claim: dict[str, str] = field(default_factory=dict)  # pod claim name -> claim uid


class DRAManager:
    def __init__(self, root: str, client: Client, cdi_dirs: tuple[str, ...] = DEFAULT_SPEC_DIRS) -> None:
        self.registry_dir = os.path.join(root, "plugins_registry")
        self.checkpoint = os.path.join(root, "dra_manager_state")
        self.client = client
        self.cdi_dirs = cdi_dirs
        self.drivers: dict[str, _Driver] = {}
        self._seen: dict[str, float] = {}  # registration socket -> mtime when last tried
        self._prepared: dict[str, _Prepared] = {}
        self._locks: dict[str, asyncio.Lock] = {}
        self._task: asyncio.Task[None] | None = None
        self._restored: set[str] = set()  # pods from the checkpoint, whose devices are asked again

    # ---- registration ---------------------------------------------------------------------

    async def start(self) -> None:
        os.makedirs(self.registry_dir, mode=0o750, exist_ok=True)
        self._restore()
        self._task = asyncio.create_task(self._watch(), name="dra-plugin-watcher")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        for d in list(self.drivers.values()):
            await d.channel.close()
        self.drivers.clear()

    async def _watch(self) -> None:
        while True:
            try:
                await self.scan()
            except Exception:  # noqa: BLE001 - the watcher must outlive one bad socket
                log.exception("scanning %s", self.registry_dir)
            await asyncio.sleep(SCAN_PERIOD)

    async def scan(self) -> None:
        try:
            names = os.listdir(self.registry_dir)
        except FileNotFoundError:
            names = []
        present: set[str] = set()
        for n in names:
            path = os.path.join(self.registry_dir, n)
            try:
                st = os.stat(path)
            except OSError:
                continue
            if not stat.S_ISSOCK(st.st_mode):
                continue
            present.add(path)
            if self._seen.get(path) != st.st_mtime:
                self._seen[path] = st.st_mtime
                await self._register(path)
        for path in [p for p in self._seen if p not in present]:
            del self._seen[path]
            for name, d in list(self.drivers.items()):
                if d.registration_socket == path:
                    log.info("DRA driver %s unregistered (its registration socket is gone)", name)
                    del self.drivers[name]
                    await d.channel.close()

    async def _register(self, path: str) -> None:
        async with grpc.aio.insecure_channel(f"unix://{path}") as ch:
            stub = reg_grpc.RegistrationStub(ch)
            try:
                info = await stub.GetInfo(reg_pb.InfoRequest(), timeout=5)
            except grpc.aio.AioRpcError as e:
                log.warning("plugin registration socket %s: GetInfo: %s", path, e.details())
                return
            if info.type != DRA_PLUGIN_TYPE:
                return  # CSI and device plugins register elsewhere in pyk8s
            err = ""
            if SUPPORTED_VERSION not in info.supported_versions:
                err = f"none of the versions supported by the plugin ({list(info.supported_versions)}) is " \
                      f"supported by the kubelet ({SUPPORTED_VERSION})"
            elif not info.name or not info.endpoint:
                err = "the plugin's name and endpoint must not be empty"
            if not err:
                old = self.drivers.get(info.name)
                if old is not None:
                    await old.channel.close()
                self.drivers[info.name] = _Driver(info.name, info.endpoint, path,
                                                  grpc.aio.insecure_channel(f"unix://{info.endpoint}"))
                log.info("DRA driver %s registered at %s", info.name, info.endpoint)
            try:
                await stub.NotifyRegistrationStatus(reg_pb.RegistrationStatus(plugin_registered=not err, error=err),
                                                    timeout=5)
            except grpc.aio.AioRpcError as e:
                log.warning("plugin %s: NotifyRegistrationStatus: %s", info.name, e.details())

    # ---- prepare / unprepare --------------------------------------------------------------

    async def run_options(self, pod: dict[str, Any], container: dict[str, Any]) -> RunOptions:
        """What the container's claims add to it; prepares the pod's claims the first time."""
        opts = RunOptions()
        if not (pod.get("spec") or {}).get("resourceClaims"):
            return opts
        uid = pod["metadata"]["uid"]
        lock = self._locks.setdefault(uid, asyncio.Lock())
        async with lock:
            prepared = self._prepared.get(uid)
            if prepared is not None and uid in self._restored:
                # after a restart: prepare again (drivers answer an already prepared claim as before)
                self._restored.discard(uid)
                prepared = None
            if prepared is None:
                prepared = await self._prepare(pod)
                self._prepared[uid] = prepared
                await asyncio.to_thread(self._save)
        ids: list[str] = []
        for ref in (container.get("resources") or {}).get("claims") or ():
            cuid = prepared.by_pod_claim.get(ref.get("name", ""))
            if cuid is None:
                continue
            for dev in prepared.devices.get(cuid, ()):
                if not ref.get("request") or ref["request"] in dev.request_names:
                    ids += [i for i in dev.cdi_device_ids if i not in ids]
        if ids:
            try:
                edits = await asyncio.to_thread(resolve, ids, self.cdi_dirs)
            except CDIError as e:
                raise ValueError(str(e)) from None
            opts.envs.update(edits.env)
            opts.devices.extend(edits.devices)
            opts.mounts.extend(edits.mounts)
        return opts

    async def _prepare(self, pod: dict[str, Any]) -> _Prepared:
        md = pod["metadata"]
        ns, uid = md.get("namespace", ""), md["uid"]
        out = _Prepared()
        by_driver: dict[str, list[Any]] = {}
        for pc in (pod.get("spec") or {}).get("resourceClaims") or ():
            name, _ = claim_name_for(pod, pc)
            if not name:
                if name is None:
                    raise ValueError(f"waiting for the resource claim of {pc.get('name')!r} to be created")
                continue
            claim = await self.client.get(RESOURCECLAIMS, name, ns)
            st = claim.get("status") or {}
            if not any(r.get("uid") == uid for r in st.get("reservedFor") or ()):
                raise ValueError(f"pod {ns}/{md.get('name')} is not in the reservedFor list of claim {name}")
            alloc = st.get("allocation") or {}
            cuid = claim["metadata"]["uid"]
            drivers = {r.get("driver", "") for r in (alloc.get("devices") or {}).get("results") or ()}
            out.claims[cuid] = (ns, name, drivers)
            out.by_pod_claim[pc.get("name", "")] = cuid
            for drv in drivers:
                by_driver.setdefault(drv, []).append(dra_pb.Claim(namespace=ns, uid=cuid, name=name))
        for drv, claims in by_driver.items():
            d = self.drivers.get(drv)
            if d is None:
                raise ValueError(f"prepare dynamic resources: DRA driver {drv} is not registered")
            resp = await dra_grpc.DRAPluginStub(d.channel).NodePrepareResources(
                dra_pb.NodePrepareResourcesRequest(claims=claims), timeout=CALL_TIMEOUT)
            for c in claims:
                result = resp.claims.get(c.uid)
                if result is None:
                    raise ValueError(f"prepare dynamic resources: NodePrepareResources skipped claim {c.uid}")
                if result.error:
                    raise ValueError(f"prepare dynamic resources: NodePrepareResources failed for claim "
                                     f"{c.namespace}/{c.name}: {result.error}")
                out.devices.setdefault(c.uid, []).extend(result.devices)
        return out

    def forget(self, uid: str) -> None:
        """The pod is gone from this node: unprepare what was prepared for it (in the background)."""
        prepared = self._prepared.pop(uid, None)
        self._locks.pop(uid, None)
        if prepared is not None and prepared.claims:
            self._save()
            asyncio.ensure_future(self._unprepare(prepared))

    def _save(self) -> None:
        state = {uid: {cuid: [ns, name, sorted(drivers)] for cuid, (ns, name, drivers) in p.claims.items()}
                 for uid, p in self._prepared.items() if p.claims}
        tmp = self.checkpoint + ".tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as f:
            json.dump(state, f)
        os.replace(tmp, self.checkpoint)

    def _restore(self) -> None:
        """Pods prepared before a restart: their claims (not their CDI answers, asked again when a
        container of theirs is created) so forget() can unprepare them."""
        try:
            with open(self.checkpoint) as f:
                state = json.load(f)
        except (OSError, ValueError):
            return
        for uid, claims in (state.items() if isinstance(state, dict) else ()):
            p = _Prepared()
            for cuid, (ns, name, drivers) in claims.items():
                p.claims[cuid] = (ns, name, set(drivers))
            self._prepared[uid] = p
            self._restored.add(uid)

    async def _unprepare(self, prepared: _Prepared) -> None:
        by_driver: dict[str, list[Any]] = {}
        for cuid, (ns, name, drivers) in prepared.claims.items():
            for drv in drivers:
                by_driver.setdefault(drv, []).append(dra_pb.Claim(namespace=ns, uid=cuid, name=name))
        for drv, claims in by_driver.items():
            d = self.drivers.get(drv)
            if d is None:
                log.warning("unprepare: DRA driver %s is not registered", drv)
                continue
            try:
                resp = await dra_grpc.DRAPluginStub(d.channel).NodeUnprepareResources(
                    dra_pb.NodeUnprepareResourcesRequest(claims=claims), timeout=CALL_TIMEOUT)
            except grpc.aio.AioRpcError as e:
                log.warning("NodeUnprepareResources (%s): %s", drv, e.details())
                continue
            for uid, r in resp.claims.items():
                if r.error:
                    log.warning("NodeUnprepareResources (%s) claim %s: %s", drv, uid, r.error)


async def start_dra_manager(root: str, client: Client) -> DRAManager | None:
    """The manager, or None when it cannot start (the node runs on without DRA drivers)."""
    m = DRAManager(root, client)
    try:
        await m.start()
    except OSError as e:
        log.warning("DRA manager not started: %s (DRA drivers cannot register on this node)", e)
        return None
    return m
