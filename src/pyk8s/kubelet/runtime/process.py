"""FALLBACK runtime for machines where runc cannot run: plain processes, chrooted into the image rootfs.

Each container is `unshare --user --map-root-user --mount --pid --fork` running
`procinit.py`, which mounts the overlay rootfs (unprivileged overlayfs, Linux 5.11+)
and execs the command. Pods share the host network; there are no cgroup limits,
no seccomp, no capability sets, no OOM detection, and users other than root inside
the container are not supported. `select_runtime` picks this only when runc is
unusable, and says so loudly. Shims, logs, state dirs and re-adoption are the runc
runtime's, so the kubelet sees the same interface.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
import signal as _signal
import sys
import time
from typing import Any

from ..images.store import ImageStore, ImageStoreError
from . import sandbox as sbx
from .interface import (
    CREATED,
    EXITED,
    RUNNING,
    SANDBOX_NOTREADY,
    SANDBOX_READY,
    ContainerConfig,
    ExecResult,
    ResourceStats,
    RuntimeError_,
    SandboxConfig,
    to_dict,
)
from .runc import RuncRuntime, _int_file, _new_id, _signal_number, _write_json
from .spec import SpecError, merge_args, merge_env

PROCINIT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "procinit.py")


class ProcessRuntime(RuncRuntime):
    name = "process"

    def __init__(self, data_dir: str, *, image_store: ImageStore | None = None,
                 log_max_size: int = 10 * 1024 * 1024, log_max_files: int = 5) -> None:
        super().__init__(data_dir, image_store=image_store, log_max_size=log_max_size, log_max_files=log_max_files,
                         runc_root=os.path.join(os.path.abspath(data_dir), "runtime", "process-root"))

    async def version(self) -> dict[str, str]:
        return {"runtimeName": "pyk8s-process", "runtimeVersion": "0.1.0", "runtimeApiVersion": "v1"}

    async def create_sandbox(self, config: SandboxConfig) -> str:
        sid = _new_id()
        os.makedirs(self._sb_path(sid))
        hostname = os.uname().nodename
        doc: dict[str, Any] = {
            "id": sid, "config": to_dict(config), "state": SANDBOX_READY, "created_at": time.time(),
            "hostname": hostname, "ns": {}, "ip": "", "ips": [], "cni": None, "shm": "/dev/shm",
            "cgroup_parent": "", "log_directory": config.log_directory or os.path.join(
                self.log_root, f"{config.namespace}_{config.name}_{config.uid}"),
        }
        os.makedirs(doc["log_directory"], exist_ok=True)
        sbx.write_file(self._sb_path(sid, "hostname"), hostname + "\n")
        sbx.write_file(self._sb_path(sid, "hosts"), sbx.hosts_file("", hostname, "", config.namespace,
                                                                   config.cluster_domain, config.host_aliases, True))
        sbx.write_file(self._sb_path(sid, "resolv.conf"), sbx.resolv_conf(config.dns))
        self._save_sandbox(doc)
        return sid

    async def stop_sandbox(self, sandbox_id: str) -> None:
        doc = _maybe(self._load_sandbox, sandbox_id)
        if doc is None:
            return
        for c in await self.list_containers(sandbox_id):
            if c.state != EXITED:
                await self.stop_container(c.id, 0)
        doc["state"] = SANDBOX_NOTREADY
        self._save_sandbox(doc)

    async def remove_sandbox(self, sandbox_id: str) -> None:
        await self.stop_sandbox(sandbox_id)
        for c in await self.list_containers(sandbox_id):
            await self.remove_container(c.id)
        shutil.rmtree(self._sb_path(sandbox_id), ignore_errors=True)

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sb = self._load_sandbox(sandbox_id)
        try:
            image = self.images.require(config.image)
        except ImageStoreError as e:
            raise RuntimeError_(str(e), "ErrImageNeverPull") from e
        cid = _new_id()
        d = self._c_path(cid)
        for sub in ("rootfs", "upper", "work"):
            os.makedirs(os.path.join(d, sub))
        self.images.add_lease(cid, image)
        try:
            lowers = await asyncio.to_thread(self.images.unpack, image)
            try:
                args = merge_args(config, image.runtime_config)
            except SpecError as e:
                raise RuntimeError_(str(e), "CreateContainerError") from e
            binds: list[dict[str, Any]] = [{"source": self._sb_path(sandbox_id, n), "destination": f"/etc/{n}"}
                     for n in ("hosts", "resolv.conf", "hostname")]
            binds += [{"source": m.host_path, "destination": m.container_path, "readonly": m.readonly}
                      for m in config.mounts if m.type == "bind"]
            init = {
                "rootfs": os.path.join(d, "rootfs"),
                "overlay": f"lowerdir={':'.join(lowers)},upperdir={d}/upper,workdir={d}/work",
                "binds": binds, "args": args,
                "env": merge_env(config, image.runtime_config, sb["hostname"]),
                "cwd": config.working_dir or image.runtime_config.get("WorkingDir") or "/",
            }
            _write_json(os.path.join(d, "init.json"), init)
            _write_json(os.path.join(d, "exec.json"), {"args": [
                "unshare", "--user", "--map-root-user", "--mount", "--pid", "--fork", "--kill-child",
                sys.executable, "-S", "-P", PROCINIT, os.path.join(d, "init.json")]})
            log_path = config.log_path or os.path.join(sb["log_directory"], config.name, f"{config.attempt}.log")
            os.makedirs(os.path.dirname(log_path), exist_ok=True)
            _write_json(os.path.join(d, "meta.json"), {
                "id": cid, "sandbox_id": sandbox_id, "config": to_dict(config), "image_id": image.id,
                "created_at": time.time(), "started_at": 0.0, "log_path": log_path, "cgroup_path": "",
                "stop_signal": config.stop_signal or image.runtime_config.get("StopSignal") or "SIGTERM"})
        except BaseException:
            await self._cleanup_container_dir(cid)
            raise
        return cid

    async def start_container(self, container_id: str) -> None:
        meta = self._load_meta(container_id)
        d = self._c_path(container_id)
        if os.path.exists(os.path.join(d, "shim.pid")):
            raise RuntimeError_(f"container {container_id[:12]} was already started", "RunContainerError")
        msg = await self.launch_shim(d, [
            "--id", container_id, "--root", self.runc_root, "--bundle", d, "--state-dir", d,
            "--log", meta["log_path"], "--log-max-size", str(self.log_max_size),
            "--log-max-files", str(self.log_max_files), "--exec", os.path.join(d, "exec.json")])
        if "error" in msg:
            raise RuntimeError_(msg["error"], "RunContainerError")
        meta["started_at"] = time.time()
        _write_json(os.path.join(d, "meta.json"), meta)

    def _inner_pid(self, container_id: str) -> int:
        """The container's init as the host sees it: the child of `unshare --fork`."""
        outer = _int_file(self._c_path(container_id, "init.pid"))
        if not outer:
            return 0
        for name in os.listdir("/proc"):  # /proc/PID/task/TID/children needs CONFIG_PROC_CHILDREN: scan ppids
            if name.isdigit():
                with contextlib.suppress(OSError, ValueError, IndexError):
                    stat = open(f"/proc/{name}/stat").read()
                    if int(stat.rsplit(")", 1)[1].split()[1]) == outer:
                        return int(name)
        return outer

    async def stop_container(self, container_id: str, timeout: float, signal: str | int | None = None) -> None:
        meta = self._load_meta(container_id)
        st = await self.container_status(container_id)
        if st.state not in (RUNNING, CREATED) or not st.pid:
            return
        sig = _signal_number(signal or meta.get("stop_signal") or "SIGTERM")
        if timeout > 0:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self._inner_pid(container_id), sig)
            try:
                await self.wait_exit(container_id, timeout)
                return
            except TimeoutError:
                pass
        with contextlib.suppress(ProcessLookupError):
            os.kill(st.pid, _signal.SIGKILL)  # unshare --kill-child takes the container with it
        await self.wait_exit(container_id, 10)

    async def remove_container(self, container_id: str) -> None:
        if os.path.exists(self._c_path(container_id, "meta.json")):
            st = await self.container_status(container_id)
            if st.state == RUNNING:
                await self.stop_container(container_id, 0)
        await self._cleanup_container_dir(container_id)

    def exec_command(self, container_id: str, cmd: list[str], tty: bool = False,
                     console_size: tuple[int, int] | None = None) -> list[str]:
        # console_size needs nothing here: the command runs on the kubelet's own pty, made at that size
        return ["nsenter", "-t", str(self._inner_pid(container_id)), "-U", "-m", "-p", "-r", "-w",
                "--preserve-credentials", *cmd]

    async def container_stats(self, container_id: str) -> ResourceStats:
        return ResourceStats(time.time())  # no cgroups in the fallback

    async def sandbox_stats(self, sandbox_id: str) -> ResourceStats:
        return ResourceStats(time.time())

    async def exec_sync(self, container_id: str, cmd: list[str], timeout: float = 10.0) -> ExecResult:
        st = await self.container_status(container_id)
        if st.state != RUNNING:
            raise RuntimeError_(f"container {container_id[:12]} is not running", "ExecError")
        proc = await asyncio.create_subprocess_exec(*self.exec_command(container_id, cmd), stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            return ExecResult(-1, out, err, True)
        return ExecResult(proc.returncode or 0, out, err)


def _maybe(fn: Any, *a: Any) -> Any:
    try:
        return fn(*a)
    except Exception:
        return None
