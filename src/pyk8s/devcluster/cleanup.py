"""Remove what a stopped (or killed) kubelet left of its pods: sandboxes, containers, volume mounts, runc state."""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import subprocess


def remove_pods_left(data_dir: str, runc_root: str, bridge: str) -> None:
    """Through the runtime first (namespaces, cgroups, CNI), then whatever runc and the mount table still hold."""
    from ..kubelet.runtime.cni import CNI, bridge_conflist
    from ..kubelet.runtime.runc import RuncRuntime

    async def go() -> None:
        if not os.path.isdir(os.path.join(data_dir, "runtime")):
            return
        rt = RuncRuntime(data_dir, cni=CNI(bridge_conflist("10.0.0.0/24", bridge=bridge,  # DEL needs no real subnet
                                                           data_dir=os.path.join(data_dir, "cni", "networks"))),
                         runc_root=runc_root)
        for sb in await rt.list_sandboxes():
            with contextlib.suppress(Exception):
                await rt.remove_sandbox(sb.id)
        for c in await rt.list_containers():
            with contextlib.suppress(Exception):
                await rt.remove_container(c.id)

    with contextlib.suppress(Exception):
        asyncio.run(go())
    kubelet_pods = os.path.join(data_dir, "kubelet", "pods")
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f if line.split()[4].startswith(kubelet_pods + "/")]
    for mp in sorted(mounts, key=len, reverse=True):
        subprocess.run(["umount", "-l", mp], capture_output=True)
    if os.path.isdir(runc_root):
        for cid in os.listdir(runc_root):
            subprocess.run(["runc", "--root", runc_root, "delete", "--force", cid], capture_output=True)
        shutil.rmtree(runc_root, ignore_errors=True)
