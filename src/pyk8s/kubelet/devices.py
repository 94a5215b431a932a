"""The kubelet's hooks into the device manager and the pod-resources API (pyk8s.deviceplugin):
starting both under `<root-dir>`, and giving a container what its devices' Allocate returned."""

from __future__ import annotations

import logging
import os
from collections.abc import Container
from typing import TYPE_CHECKING, Any

from ..api.quantity import parse_quantity
from ..deviceplugin.manager import DeviceManager, RunOptions, container_device_requests
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


def extended_requests(pod: dict[str, Any]) -> dict[str, int]:
    """A pod's extended-resource requests as upstream sums them: app containers and sidecars, or the largest
    init container (plus the sidecars started before it) when that is more."""
    spec = pod.get("spec") or {}
    total: dict[str, int] = {}
    side: dict[str, int] = {}
    for c in spec.get("containers") or []:
        for k, v in container_device_requests(c).items():
            total[k] = total.get(k, 0) + v
    for ic in spec.get("initContainers") or []:
        for k, v in container_device_requests(ic).items():
            if ic.get("restartPolicy") == "Always":
                side[k] = side.get(k, 0) + v
                total[k] = total.get(k, 0) + v
            else:
                total[k] = max(total.get(k, 0), v + side.get(k, 0))
    return {k: v for k, v in total.items() if v}


def extended_resources_fit(pod: dict[str, Any], others: list[dict[str, Any]], allocatable: dict[str, Any],
                           managed: Container[str]) -> tuple[str, str] | None:
    """upstream's admission fit for extended resources no device plugin manages (e.g. patched into node status
    by hand): what the pod asks must fit next to the admitted pods, else OutOf<name> in upstream's words."""
    want = {k: v for k, v in extended_requests(pod).items() if k not in managed}
    if not want:
        return None
    for name, n in sorted(want.items()):
        try:
            cap = parse_quantity(str(allocatable.get(name, "0"))).to_int()
        except ValueError:
            cap = 0
        used = sum(extended_requests(o).get(name, 0) for o in others)
        if used + n > cap:
            return f"OutOf{name}", (f"Node didn't have enough resource: {name}, requested: {n}, used: {used}, "
                                    f"capacity: {cap}")
    return None
