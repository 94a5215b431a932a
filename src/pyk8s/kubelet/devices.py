"""The kubelet's hooks into the device manager and the pod-resources API (pyk8s.deviceplugin):
starting both under `<root-dir>`, and giving a container what its devices' Allocate returned."""

from __future__ import annotations

import logging
import os
from typing import TYPE_CHECKING, Any

from ..deviceplugin.manager import DeviceManager, RunOptions
from ..deviceplugin.podresources import PodResourcesServer
from .runtime.interface import ContainerConfig, Device, Mount

if TYPE_CHECKING:
    from .agent import Kubelet

log = logging.getLogger(__name__)


async def start_device_manager(kl: Kubelet) -> tuple[DeviceManager | None, PodResourcesServer | None]:
    """Both servers, or None for each that could not start (the node runs on without device plugins)."""

    def active() -> set[str]:
        return {w.uid for w in kl.pod_workers.active() if not w.view.terminal}

    def pods() -> list[dict[str, Any]]:
        return [w.pod for w in kl.pod_workers.active()]

    dm: DeviceManager | None = DeviceManager(os.path.join(kl.root, "device-plugins"), active, kl.device_resources_changed)
    try:
        assert dm is not None
        await dm.start()
    except Exception as e:  # noqa: BLE001 - e.g. a socket path too long for AF_UNIX
        log.warning("device manager not started: %s (device plugins cannot register on this node)", e)
        return None, None
    pr: PodResourcesServer | None = PodResourcesServer(os.path.join(kl.root, "pod-resources"), dm, pods)
    try:
        assert pr is not None
        await pr.start()
    except Exception as e:  # noqa: BLE001
        log.warning("pod-resources API not started: %s", e)
        pr = None
    return dm, pr


def _container_path_error(kind: str, path: str) -> str | None:
    if not path.startswith("/") or os.path.normpath(path) == "/":
        return f"device plugin {kind} container path {path!r} must be an absolute path other than /"
    return None


def apply_run_options(cfg: ContainerConfig, opts: RunOptions) -> None:
    """As upstream's GenerateRunContainerOptions: device envs and mounts come before the container's own.

    Plugins are trusted as upstream trusts them (any host path, a mount of / included); only a container
    path that would replace the container's root, or a relative one, is refused (ValueError: the container
    fails with CreateContainerConfigError), since no runtime can honour it."""
    for kind, paths in (("mount", [m[0] for m in opts.mounts]), ("device", [d[0] for d in opts.devices])):
        for p in paths:
            err = _container_path_error(kind, p)
            if err:
                raise ValueError(err)
    if opts.envs:
        cfg.env = [*sorted(opts.envs.items()), *cfg.env]
    if opts.mounts:
        cfg.mounts = [Mount(container_path=c, host_path=h, readonly=ro) for c, h, ro in opts.mounts] + cfg.mounts
    cfg.devices = [*cfg.devices, *(Device(container_path=c, host_path=h, permissions=p) for c, h, p in opts.devices)]
    cfg.annotations.update(opts.annotations)
