"""The runc container runtime: pod sandboxes and containers from generated OCI bundles.

State lives on disk, one directory per sandbox and per container under
`<data-dir>/runtime`, so a new runtime object (a restarted kubelet) re-adopts whatever
is running: containers are owned by their shims, not by us.

    sandboxes/<id>/sandbox.json  config, namespaces, CNI result, pod IP, state
    sandboxes/<id>/{hosts,resolv.conf,hostname,shm/}
    containers/<id>/meta.json    config, image, cgroup, timestamps
    containers/<id>/config.json  the OCI bundle (rootfs/ is an overlay over the image layers)
    containers/<id>/{upper,work}/  the container's writable layer
    containers/<id>/{shim.pid,init.pid,exit.json,runc.log,shim.log}
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import os
import secrets
import shutil
import signal as _signal
import time
from typing import Any

from ..images.store import Image, ImageStore, ImageStoreError
from . import cgroups
from . import sandbox as sbx
from .cni import CNI, CNIError, bridge_conflist
from .interface import (
    CREATED,
    EXITED,
    RUNNING,
    SANDBOX_NOTREADY,
    SANDBOX_READY,
    UNKNOWN,
    ContainerConfig,
    ContainerRuntime,
    ContainerStatus,
    ExecResult,
    NotFound,
    ResourceStats,
    RuntimeError_,
    SandboxConfig,
    SandboxStatus,
    container_config_from_dict,
    sandbox_config_from_dict,
    to_dict,
)
from .resources import nofile_limit, pod_cgroup_parent
from .security import UserError, bounding_caps, resolve_user
from .shimlaunch import ShimLauncher, read_pipe
from .spec import SandboxView, SpecError, build_spec

log = logging.getLogger(__name__)

DEFAULT_RUNC_ROOT = "/run/pyk8s/runc"


def _new_id() -> str:
    return secrets.token_hex(32)


def _read_json(path: str) -> Any:
    try:
        with open(path) as f:
            return json.load(f)
    except (FileNotFoundError, ValueError):
        return None


def _read_cached(cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]], key: str,
                 path: str) -> dict[str, Any] | None:
    """A JSON state file, parsed again only when a stat shows a new version (writes replace the file); None when
    it is gone. Returns a shallow copy."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    version = (st.st_mtime_ns, st.st_size, st.st_ino)
    hit = cache.get(key)
    if hit is not None and hit[0] == version:
        return dict(hit[1])
    doc = _read_json(path)
    if doc is None:
        return None
    cache[key] = (version, doc)
    return dict(doc)


def _write_json(path: str, doc: Any) -> None:
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        f.write(json.dumps(doc))  # dumps is the C encoder; dump to a file is the pure-Python one (10x the CPU)
    os.replace(tmp, path)


def _signal_number(sig: str | int) -> int:
    if isinstance(sig, int):
        return sig
    s = sig.strip().upper()
    if s.isdigit():
        return int(s)
    if not s.startswith("SIG"):
        s = "SIG" + s
    return int(getattr(_signal, s))


def _pid_alive(pid: int, marker: str) -> bool:
    """Whether `pid` is still the shim of container `marker`: a shim works in its container's state dir (its
    command line is the zygote's when it was forked by one; a reused pid is some other process)."""
    try:
        return marker in os.readlink(f"/proc/{pid}/cwd")
    except OSError:
        return False


def _can_lower_oom_score() -> tuple[bool, int]:
    """Whether we hold CAP_SYS_RESOURCE (needed to set oom_score_adj below our own), and our own value."""
    own = 0
    with contextlib.suppress(OSError, ValueError):
        own = int(open("/proc/self/oom_score_adj").read())
    return "CAP_SYS_RESOURCE" in bounding_caps(), own


class RuncRuntime(ContainerRuntime):
    name = "runc"

    def __init__(self, data_dir: str, *, image_store: ImageStore | None = None, cni: CNI | None = None,
                 pod_cidr: str = "10.244.0.0/24", runc: str = "runc", runc_root: str = DEFAULT_RUNC_ROOT,
                 log_max_size: int = 10 * 1024 * 1024, log_max_files: int = 5,
                 cgroup_root: str = cgroups.ROOT) -> None:
        self.data_dir = os.path.abspath(data_dir)
        self.root = os.path.join(self.data_dir, "runtime")
        self.sandbox_dir = os.path.join(self.root, "sandboxes")
        self.container_dir = os.path.join(self.root, "containers")
        self.log_root = os.path.join(self.data_dir, "pods")
        for d in (self.sandbox_dir, self.container_dir, self.log_root):
            os.makedirs(d, exist_ok=True)
        self.images = image_store or ImageStore(os.path.join(self.data_dir, "images"))
        self.cni = cni or CNI(bridge_conflist(pod_cidr, data_dir=os.path.join(self.data_dir, "cni", "networks")))
        with contextlib.suppress(OSError):
            self.cni.write_conflist(os.path.join(self.data_dir, "cni", "net.d", f"10-{self.cni.conflist['name']}.conflist"))
        self.runc = shutil.which(runc) or runc
        self.runc_root = runc_root
        os.makedirs(runc_root, exist_ok=True)
        self.log_max_size = log_max_size
        self.log_max_files = log_max_files
        self.cgroup_root = cgroup_root
        self.cgroup_v2 = cgroups.is_v2(cgroup_root)
        self.memsw = os.path.exists(os.path.join(cgroup_root, "memory", "memory.memsw.limit_in_bytes"))
        self.allowed_caps = bounding_caps()
        self.nofile = nofile_limit()
        self._can_lower_oom, self._own_oom = _can_lower_oom_score()
        self._oom_warned = False
        self._meta_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
        self._sb_cache: dict[str, tuple[tuple[int, int, int], dict[str, Any]]] = {}
        self._configs: dict[str, ContainerConfig] = {}  # container id -> its config, as in meta.json
        self._pids: dict[tuple[str, str], int] = {}  # (container id, "shim.pid"|"init.pid") -> pid
        self._locks: dict[str, asyncio.Lock] = {}
        self.shims = ShimLauncher(os.path.join(self.root, "shim-zygote.log"))

    def _lock(self, key: str) -> asyncio.Lock:
        lk = self._locks.get(key)
        if lk is None:
            lk = self._locks[key] = asyncio.Lock()
        return lk

    async def _runc(self, *args: str, timeout: float = 30.0) -> tuple[int, str]:
        proc = await asyncio.create_subprocess_exec(self.runc, "--root", self.runc_root, *args,
                                                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.STDOUT)
        try:
            out, _ = await asyncio.wait_for(proc.communicate(), timeout)
        except TimeoutError:
            proc.kill()
            await proc.wait()
            return -1, f"runc {args[0]} timed out"
        return proc.returncode or 0, out.decode(errors="replace").strip()

    async def version(self) -> dict[str, str]:
        _, out = await self._runc("--version")
        v = out.split("\n")[0].split()[-1] if out else "unknown"
        return {"runtimeName": "runc", "runtimeVersion": v, "runtimeApiVersion": "v1"}

    # ------------------------------------------------------------------ sandboxes

    def _sb_path(self, sandbox_id: str, *parts: str) -> str:
        return os.path.join(self.sandbox_dir, sandbox_id, *parts)

    def _load_sandbox(self, sandbox_id: str) -> dict[str, Any]:
        """sandbox.json (a shallow copy: change it through _save_sandbox), parsed once per version of the file:
        every sync of a pod asks for its sandbox's status."""
        doc = _read_cached(self._sb_cache, sandbox_id, self._sb_path(sandbox_id, "sandbox.json"))
        if doc is None:
            self._sb_cache.pop(sandbox_id, None)
            raise NotFound(f"pod sandbox {sandbox_id} not found")
        return doc

    def _save_sandbox(self, doc: dict[str, Any]) -> None:
        _write_json(self._sb_path(doc["id"], "sandbox.json"), doc)

    async def create_sandbox(self, config: SandboxConfig) -> str:
        sid = _new_id()
        hostname = (config.hostname or config.name)[:63].rstrip("-.")
        netns_name = None if config.host_network else f"pyk8s-{sid[:16]}"
        ipc, uts = not config.host_ipc, not config.host_network
        doc: dict[str, Any] = {
            "id": sid, "config": to_dict(config), "state": SANDBOX_READY, "created_at": time.time(),
            "hostname": hostname, "ip": "", "ips": [], "cni": None,
            "ns": sbx.namespace_paths(sid, netns_name, ipc, uts),  # recorded first: clean-up finds them after a crash
            "shm": "/dev/shm" if config.host_ipc else self._sb_path(sid, "shm"),
            "cgroup_parent": pod_cgroup_parent(config.qos_class, config.uid),
            "log_directory": config.log_directory or os.path.join(
                self.log_root, f"{config.namespace}_{config.name}_{config.uid}"),
        }
        await asyncio.to_thread(self._begin_sandbox, doc)
        try:
            # the host side (mounts, directories, cgroup: mostly kernel time, on a worker thread) while the network
            # comes up; both finish before anything is judged or undone
            results = await asyncio.gather(asyncio.to_thread(self._sandbox_host_side, doc, config),
                                           self._sandbox_network(doc, config, netns_name, ipc, uts),
                                           return_exceptions=True)
            for r in results:
                if isinstance(r, BaseException):
                    raise r
            await asyncio.to_thread(self._finish_sandbox, doc, config)
        except BaseException as e:
            with contextlib.suppress(Exception):
                await self.remove_sandbox(sid)
            if isinstance(e, RuntimeError_):
                raise
            if isinstance(e, (OSError, CNIError)):
                raise RuntimeError_(f"failed to set up pod sandbox: {e}", "CreatePodSandboxError") from e
            raise
        return sid

    def _begin_sandbox(self, doc: dict[str, Any]) -> None:
        os.makedirs(self._sb_path(doc["id"]))
        self._save_sandbox(doc)

    def _sandbox_host_side(self, doc: dict[str, Any], config: SandboxConfig) -> None:
        if not config.host_ipc:
            sbx.mount_shm(doc["shm"], config.shm_size)
        os.makedirs(doc["log_directory"], exist_ok=True)
        try:
            cgroups.create_pod_cgroup(doc["cgroup_parent"], config.pod_resources, self.cgroup_root)
        except OSError as e:
            raise RuntimeError_(f"creating pod cgroup {doc['cgroup_parent']}: {e}", "CreatePodSandboxError") from e

    async def _sandbox_network(self, doc: dict[str, Any], config: SandboxConfig, netns_name: str | None, ipc: bool,
                               uts: bool) -> None:
        doc["ns"], lo_up = await sbx.create_namespaces(doc["id"], netns_name, ipc=ipc, uts=uts, hostname=doc["hostname"])
        doc["lo_up"] = lo_up  # lo is ours, not the CNI loopback plugin's: no loopback ADD/DEL
        if not config.host_network:
            res = await self.cni.add(doc["id"], doc["ns"]["net"], "eth0", config.port_mappings,
                                     self._cni_args(config, doc["id"]), loopback=not lo_up)
            doc["cni"] = res.raw
            doc["ip"], doc["ips"] = res.ip, res.ips

    def _finish_sandbox(self, doc: dict[str, Any], config: SandboxConfig) -> None:
        """Record the sandbox (with its CNI result, for DEL) and write the pod's /etc files."""
        self._save_sandbox(doc)
        sid, hostname = doc["id"], doc["hostname"]
        pod_ip = doc["ip"] or self._host_ip()
        sbx.write_file(self._sb_path(sid, "hostname"), hostname + "\n" if not config.host_network
                       else os.uname().nodename + "\n")
        sbx.write_file(self._sb_path(sid, "hosts"),
                       sbx.hosts_file(pod_ip, hostname, config.subdomain, config.namespace, config.cluster_domain,
                                      config.host_aliases, config.host_network))
        sbx.write_file(self._sb_path(sid, "resolv.conf"), sbx.resolv_conf(config.dns))

    @staticmethod
    def _cni_args(config: SandboxConfig, sid: str) -> dict[str, str]:
        return {"K8S_POD_NAMESPACE": config.namespace, "K8S_POD_NAME": config.name,
                "K8S_POD_INFRA_CONTAINER_ID": sid, "K8S_POD_UID": config.uid}

    @staticmethod
    def _host_ip() -> str:
        import socket

        try:
            return socket.gethostbyname(socket.gethostname())
        except OSError:
            return ""

    async def stop_sandbox(self, sandbox_id: str) -> None:
        async with self._lock(sandbox_id):
            try:
                doc = self._load_sandbox(sandbox_id)
            except NotFound:
                return
            for c in await self.list_containers(sandbox_id):
                if c.state in (RUNNING, CREATED, UNKNOWN):
                    await self.stop_container(c.id, 0)
            await self._teardown_network(doc)
            doc["state"] = SANDBOX_NOTREADY
            self._save_sandbox(doc)

    async def _teardown_network(self, doc: dict[str, Any]) -> None:
        config = sandbox_config_from_dict(doc["config"])
        netns = doc["ns"].get("net", "")
        if netns and (doc.get("cni") is not None or doc["state"] == SANDBOX_READY):
            try:
                await self.cni.delete(doc["id"], netns if os.path.exists(netns) else "", "eth0", doc.get("cni"),
                                      config.port_mappings, self._cni_args(config, doc["id"]),
                                      loopback=not doc.get("lo_up"))
            except CNIError as e:
                log.warning("CNI DEL for sandbox %s: %s", doc["id"][:12], e)
            doc["cni"] = None
        sbx.delete_namespaces(doc["id"], doc["ns"])

    async def check_sandbox_network(self, sandbox_id: str) -> None:
        """CNI CHECK of the pod's network (raises CNIError when a plugin finds it broken)."""
        doc = self._load_sandbox(sandbox_id)
        if doc.get("cni") is None:
            return
        config = sandbox_config_from_dict(doc["config"])
        await self.cni.check(sandbox_id, doc["ns"]["net"], "eth0", doc["cni"], config.port_mappings,
                             self._cni_args(config, sandbox_id))

    async def remove_sandbox(self, sandbox_id: str) -> None:
        await self.stop_sandbox(sandbox_id)
        async with self._lock(sandbox_id):
            try:
                doc = self._load_sandbox(sandbox_id)
            except NotFound:
                return
            for c in await self.list_containers(sandbox_id):
                await self.remove_container(c.id)
            if doc.get("shm") and doc["shm"] != "/dev/shm":
                with contextlib.suppress(OSError):
                    sbx.umount(doc["shm"])
            sbx.delete_namespaces(sandbox_id, doc.get("ns") or {})
            if not cgroups.remove_cgroup(doc["cgroup_parent"], self.cgroup_root):
                log.warning("pod cgroup %s still busy", doc["cgroup_parent"])
            shutil.rmtree(self._sb_path(sandbox_id), ignore_errors=True)
            self._sb_cache.pop(sandbox_id, None)
        self._locks.pop(sandbox_id, None)

    def _sandbox_status(self, doc: dict[str, Any]) -> SandboxStatus:
        state = doc["state"]
        netns = (doc.get("ns") or {}).get("net")
        if state == SANDBOX_READY and netns and not os.path.exists(netns):
            state = SANDBOX_NOTREADY  # e.g. after a reboot: the namespace mounts under /run are gone
        return SandboxStatus(id=doc["id"], config=sandbox_config_from_dict(doc["config"]), state=state,
                             created_at=doc["created_at"], ip=doc.get("ip", ""), additional_ips=doc.get("ips", [])[1:],
                             netns_path=doc.get("ns", {}).get("net", ""))

    async def sandbox_status(self, sandbox_id: str) -> SandboxStatus:
        return self._sandbox_status(self._load_sandbox(sandbox_id))

    async def list_sandboxes(self) -> list[SandboxStatus]:
        out = []
        for sid in sorted(os.listdir(self.sandbox_dir)):
            doc = _read_cached(self._sb_cache, sid, self._sb_path(sid, "sandbox.json"))
            if doc:
                out.append(self._sandbox_status(doc))
        return out

    # ------------------------------------------------------------------ containers

    def _c_path(self, container_id: str, *parts: str) -> str:
        return os.path.join(self.container_dir, container_id, *parts)

    def _read_meta(self, container_id: str) -> dict[str, Any] | None:
        """meta.json, parsed once per version of the file (PLEG's relists and sandbox teardown read every
        container's: a stat instead of a parse each time)."""
        doc = _read_cached(self._meta_cache, container_id, self._c_path(container_id, "meta.json"))
        if doc is None:
            self._forget(container_id)
        return doc

    def _forget(self, cid: str) -> None:
        """Drop what is remembered of a container that is gone."""
        self._meta_cache.pop(cid, None)
        self._configs.pop(cid, None)
        for name in ("shim.pid", "init.pid"):
            self._pids.pop((cid, name), None)

    def _load_meta(self, container_id: str) -> dict[str, Any]:
        doc = self._read_meta(container_id)
        if doc is None:
            raise NotFound(f"container {container_id} not found")
        return doc

    def container_log_path(self, container_id: str) -> str:
        return str(self._load_meta(container_id)["log_path"])

    def _oom_score(self, want: int) -> int:
        if self._can_lower_oom or want >= self._own_oom:
            return want
        if not self._oom_warned:
            log.warning("no CAP_SYS_RESOURCE: oom_score_adj below %d (e.g. Guaranteed's -997) is clamped to %d",
                        self._own_oom, self._own_oom)
            self._oom_warned = True
        return self._own_oom

    async def create_container(self, sandbox_id: str, config: ContainerConfig) -> str:
        sb = self._load_sandbox(sandbox_id)
        if sb["state"] != SANDBOX_READY:
            raise RuntimeError_(f"pod sandbox {sandbox_id[:12]} is not ready", "CreateContainerError")
        try:
            image = self.images.require(config.image)
        except ImageStoreError as e:
            raise RuntimeError_(str(e), "ErrImageNeverPull") from e
        cid = _new_id()
        # the file system work (directories, the overlay mount, the bundle) on a worker thread: it is mostly waiting
        # in the kernel, which the event loop spends on other pods meanwhile
        work = asyncio.ensure_future(asyncio.to_thread(self._make_container, cid, sandbox_id, sb, config, image))
        try:
            await asyncio.shield(work)
        except BaseException:
            with contextlib.suppress(BaseException):
                await work  # (a cancelled caller) the thread finishes before its directory is removed
            await self._cleanup_container_dir(cid)
            raise
        return cid

    def _make_container(self, cid: str, sandbox_id: str, sb: dict[str, Any], config: ContainerConfig,
                        image: Image) -> None:
        d = self._c_path(cid)
        rootfs = os.path.join(d, "rootfs")
        for sub in ("rootfs", "upper", "work"):
            os.makedirs(os.path.join(d, sub))
        self.images.add_lease(cid, image)
        _mount_overlay(self.images.unpack(image), os.path.join(d, "upper"), os.path.join(d, "work"), rootfs)
        sec = config.security
        try:
            uid, gid, gids, _ = resolve_user(rootfs, image.runtime_config.get("User", ""), sec.run_as_user,
                                             sec.run_as_group, sec.supplemental_groups)
        except UserError as e:
            raise RuntimeError_(str(e), "CreateContainerConfigError") from e
        if sec.run_as_non_root and uid == 0:
            lb = config.labels  # (the CRI labels name the pod, as upstream's format.Pod does)
            pod = (f'{lb.get("io.kubernetes.pod.name", "")}_{lb.get("io.kubernetes.pod.namespace", "")}'
                   f'({lb.get("io.kubernetes.pod.uid", "")})')
            raise RuntimeError_(f'container has runAsNonRoot and image will run as root (pod: "{pod}", '
                                f"container: {config.name})", "CreateContainerConfigError")
        sconf = sandbox_config_from_dict(sb["config"])
        view = SandboxView(
            hostname=sb["hostname"], ns_paths=sb["ns"], host_pid=sconf.host_pid,
            hosts_path=self._sb_path(sandbox_id, "hosts"), resolv_path=self._sb_path(sandbox_id, "resolv.conf"),
            hostname_path=self._sb_path(sandbox_id, "hostname"), shm_path=sb["shm"],
            cgroup_parent=sb["cgroup_parent"], sysctls=sconf.sysctls, pid_ns_path=self._pid_ns_path(config))
        try:
            spec = build_spec(config=config, image_cfg=image.runtime_config, rootfs=rootfs, sandbox=view,
                              user=(uid, gid, gids), container_id=cid, allowed_caps=self.allowed_caps,
                              nofile=self.nofile, oom_score_adj=self._oom_score(config.resources.oom_score_adj),
                              memsw=self.memsw, cgroup_v2=self.cgroup_v2)
        except (SpecError, ValueError, OSError) as e:
            raise RuntimeError_(str(e), "CreateContainerError") from e
        _write_json(os.path.join(d, "config.json"), spec)
        log_path = config.log_path or os.path.join(sb["log_directory"], config.name, f"{config.attempt}.log")
        os.makedirs(os.path.dirname(log_path), exist_ok=True)
        stop_signal = config.stop_signal or image.runtime_config.get("StopSignal") or "SIGTERM"
        _write_json(os.path.join(d, "meta.json"), {
            "id": cid, "sandbox_id": sandbox_id, "config": to_dict(config), "image_id": image.id,
            "created_at": time.time(), "started_at": 0.0, "log_path": log_path,
            "cgroup_path": spec["linux"]["cgroupsPath"].lstrip("/"), "stop_signal": stop_signal})

    async def _cleanup_container_dir(self, cid: str) -> None:
        d = self._c_path(cid)
        with contextlib.suppress(OSError):
            sbx.umount(os.path.join(d, "rootfs"))
        await asyncio.to_thread(shutil.rmtree, d, True)
        self._forget(cid)
        self.images.remove_lease(cid)

    async def start_container(self, container_id: str) -> None:
        meta = self._load_meta(container_id)
        d = self._c_path(container_id)
        if os.path.exists(os.path.join(d, "shim.pid")):
            st = await self.container_status(container_id)
            if st.state != CREATED:
                raise RuntimeError_(f"container {container_id[:12]} is {st.state}, not created", "RunContainerError")
            started = time.time()  # the process runs from within `runc start`: stamp before, so finished >= started
            rc, out = await self._runc("start", container_id)
            if rc != 0:
                raise RuntimeError_(f"runc start: {out}", "RunContainerError")
        else:
            started = time.time()
            await self._spawn_shim(meta, start=True)  # `runc run --detach`: created and started in one runc call
        meta["started_at"] = started
        await asyncio.to_thread(_write_json, os.path.join(d, "meta.json"), meta)

    async def _spawn_shim(self, meta: dict[str, Any], start: bool = False) -> None:
        cid = meta["id"]
        d = self._c_path(cid)
        cfg = meta.get("config") or {}
        msg = await self.launch_shim(d, [
            "--id", cid, "--runc", self.runc, "--root", self.runc_root, "--bundle", d, "--state-dir", d,
            "--log", meta["log_path"], "--log-max-size", str(self.log_max_size),
            "--log-max-files", str(self.log_max_files), "--cgroup-path", meta["cgroup_path"],
            "--stdin", str(int(bool(cfg.get("stdin")))), "--stdin-once", str(int(bool(cfg.get("stdin_once")))),
            "--tty", str(int(bool(cfg.get("tty")))), "--start", str(int(start))])
        if "error" in msg:
            raise RuntimeError_(f"failed to create the runc container: {msg['error']}", "RunContainerError")

    async def launch_shim(self, state_dir: str, args: list[str]) -> dict[str, Any]:
        """Start a shim (through the zygote) and return what it reports on its ready pipe: {"pid": ...} or
        {"error": ...}."""
        r, w = os.pipe()
        try:
            log_fd = os.open(os.path.join(state_dir, "shim.log"), os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                await self.shims.launch(args, w, log_fd)
            except OSError as e:
                return {"error": f"starting the container's shim: {e}"}
            finally:
                os.close(log_fd)
            os.close(w)
            w = -1
            raw = await read_pipe(r)  # EOF once the shim has reported (or died without a word)
        finally:
            os.close(r)
            if w >= 0:
                os.close(w)
        try:
            return json.loads(raw) if raw else {"error": "shim exited without reporting"}  # type: ignore[no-any-return]
        except ValueError:
            return {"error": raw.decode(errors="replace")}

    async def close(self) -> None:
        self.shims.close()

    async def stop_container(self, container_id: str, timeout: float, signal: str | int | None = None) -> None:
        meta = self._load_meta(container_id)
        st = await self.container_status(container_id)
        if st.state == EXITED:
            return
        if st.state == CREATED and not os.path.exists(self._c_path(container_id, "shim.pid")):
            return  # never started: nothing to stop
        sig = _signal_number(signal or meta.get("stop_signal") or "SIGTERM")
        if timeout > 0 and sig != _signal.SIGKILL:
            await self._runc("kill", container_id, str(sig))
            try:
                await self.wait_exit(container_id, timeout)
                return
            except TimeoutError:
                pass
        await self._runc("kill", "--all", container_id, "KILL")
        try:
            await self.wait_exit(container_id, 10)
        except TimeoutError:
            raise RuntimeError_(f"container {container_id[:12]} did not exit after SIGKILL", "StopContainerError") from None

    async def remove_container(self, container_id: str) -> None:
        try:
            meta = self._load_meta(container_id)
        except NotFound:
            await self._cleanup_container_dir(container_id)
            return
        st = await self.container_status(container_id)
        if st.state in (RUNNING, UNKNOWN) or (st.state == CREATED and os.path.exists(self._c_path(container_id, "shim.pid"))):
            await self.stop_container(container_id, 0)
        rc, out = await self._runc("delete", "--force", container_id)
        if rc != 0 and "does not exist" not in out and "not exist" not in out:
            log.warning("runc delete %s: %s", container_id[:12], out)
        cgroups.remove_cgroup(meta["cgroup_path"], self.cgroup_root)
        await self._cleanup_container_dir(container_id)

    def _status(self, meta: dict[str, Any]) -> ContainerStatus:
        cid = meta["id"]
        d = self._c_path(cid)
        config = self._configs.get(cid)
        if config is None:  # fixed at creation: parsed once (PLEG asks for every live container every second)
            config = self._configs[cid] = container_config_from_dict(meta["config"])
        st = ContainerStatus(id=cid, sandbox_id=meta["sandbox_id"], name=config.name, state=CREATED,
                             image=config.image, image_id=meta["image_id"], created_at=meta["created_at"],
                             started_at=meta.get("started_at", 0.0), log_path=meta["log_path"], attempt=config.attempt,
                             labels=config.labels, annotations=config.annotations)
        shim_pid = self._pid_file(cid, "shim.pid")
        ex = _read_json(os.path.join(d, "exit.json"))
        if ex is None and shim_pid and not _pid_alive(shim_pid, cid):
            # The shim writes exit.json, then exits: gone now, it may have written it since our read.
            ex = _read_json(os.path.join(d, "exit.json"))
        if ex is not None:
            st.state = EXITED
            st.exit_code = int(ex["exit_code"])
            st.finished_at = float(ex["finished_at"])
            st.oom_killed = bool(ex.get("oom_killed"))
            st.reason = ex.get("reason") or ("OOMKilled" if st.oom_killed else
                                             "Completed" if st.exit_code == 0 else "Error")
            if ex.get("reason") == "ContainerCannotRun":
                st.reason = "StartError"
            st.message = ex.get("message", "")
            return st
        if not shim_pid:
            return st  # created, never started
        st.pid = self._pid_file(cid, "init.pid")
        if not _pid_alive(shim_pid, cid):
            # the shim died without recording an exit (crash, or killed): the container's fate is unknown
            st.state = EXITED if not (st.pid and os.path.exists(f"/proc/{st.pid}")) else UNKNOWN
            st.exit_code, st.reason, st.message = 255, "Unknown", "the container's shim is gone"
            return st
        st.state = RUNNING if st.started_at else CREATED
        return st

    def _pid_ns_path(self, config: ContainerConfig) -> str:
        """The process namespace of config.pid_target's running init ("" for a namespace of its own)."""
        if not config.pid_target:
            return ""
        pid = self._pid_file(config.pid_target, "init.pid")
        path = f"/proc/{pid}/ns/pid"
        if not pid or not os.path.exists(path):
            raise RuntimeError_(f"target container {config.pid_target[:12]} is not running", "CreateContainerError")
        return path

    def _pid_file(self, cid: str, name: str) -> int:
        """shim.pid or init.pid of a container: each is written once, so read until known, then remembered."""
        pid = self._pids.get((cid, name), 0)
        if not pid:
            pid = _int_file(self._c_path(cid, name))
            if pid:
                self._pids[(cid, name)] = pid
        return pid

    async def container_status(self, container_id: str) -> ContainerStatus:
        return self._status(self._load_meta(container_id))

    async def list_containers(self, sandbox_id: str | None = None) -> list[ContainerStatus]:
        out = []
        for cid in sorted(os.listdir(self.container_dir)):
            meta = self._read_meta(cid)
            if meta and (sandbox_id is None or meta["sandbox_id"] == sandbox_id):
                out.append(self._status(meta))
        return out

    async def wait_exit(self, container_id: str, timeout: float | None = None) -> ContainerStatus:
        deadline = None if timeout is None else time.monotonic() + timeout
        delay = 0.005
        while True:
            st = await self.container_status(container_id)
            if st.state == EXITED:
                return st
            if st.state == CREATED and not os.path.exists(self._c_path(container_id, "shim.pid")):
                raise RuntimeError_(f"container {container_id[:12]} was never started", "NotStarted")
            if deadline is not None and time.monotonic() >= deadline:
                raise TimeoutError(f"container {container_id[:12]} still {st.state}")
            await asyncio.sleep(delay if deadline is None else max(0.0, min(delay, deadline - time.monotonic())))
            delay = min(delay * 2, 0.1)

    async def exec_sync(self, container_id: str, cmd: list[str], timeout: float = 10.0) -> ExecResult:
        st = await self.container_status(container_id)
        if st.state != RUNNING:
            raise RuntimeError_(f"container {container_id[:12]} is not running", "ExecError")
        proc = await asyncio.create_subprocess_exec(self.runc, "--root", self.runc_root, "exec", container_id, *cmd,
                                                    stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout if timeout > 0 else None)
        except TimeoutError:
            proc.kill()
            out, err = await proc.communicate()
            return ExecResult(exit_code=-1, stdout=out, stderr=err, timed_out=True)
        return ExecResult(exit_code=proc.returncode or 0, stdout=out, stderr=err)

    def attach_socket(self, container_id: str) -> str:
        """The shim's attach socket of a running container ("" when its shim serves none, e.g. an older shim's)."""
        path = self._c_path(container_id, "attach.sock")
        return path if os.path.exists(path) else ""

    def exec_command(self, container_id: str, cmd: list[str], tty: bool = False,
                     console_size: tuple[int, int] | None = None) -> list[str]:
        if tty and console_size is not None:
            # runc sizes the console it creates only from a process spec's consoleSize; with --tty alone
            # it is 0x0 until runc's first resize, which a loaded machine can delay past the command's
            # first look at it. The spec is the bundle's process, as runc's own exec builds it.
            path = self._exec_process_file(container_id, cmd, console_size)
            return [self.runc, "--root", self.runc_root, "exec", "--process", path, container_id]
        return [self.runc, "--root", self.runc_root, "exec", *(["--tty"] if tty else []), container_id, *cmd]

    def _exec_process_file(self, container_id: str, cmd: list[str], console_size: tuple[int, int]) -> str:
        """An OCI process spec for `runc exec --process` (0600: it holds the container's environment).
        runc reads it as it starts, so files of earlier execs older than a minute are removed here."""
        d = self._c_path(container_id)
        now = time.time()
        for name in os.listdir(d):
            if name.startswith("exec-") and name.endswith(".json"):
                with contextlib.suppress(OSError):
                    if now - os.stat(os.path.join(d, name)).st_mtime > 60:
                        os.unlink(os.path.join(d, name))
        with open(os.path.join(d, "config.json")) as f:
            process = json.load(f)["process"]
        width, height = console_size
        process.update(args=cmd, terminal=True, consoleSize={"height": height, "width": width})
        path = os.path.join(d, f"exec-{secrets.token_hex(8)}.json")
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as f:
            f.write(json.dumps(process))
        return path

    async def container_stats(self, container_id: str) -> ResourceStats:
        meta = self._load_meta(container_id)
        cpu, mem, ws, pids = cgroups.read_stats(meta["cgroup_path"], self.cgroup_root)
        return ResourceStats(time.time(), cpu, mem, ws, pids)

    async def sandbox_stats(self, sandbox_id: str) -> ResourceStats:
        doc = self._load_sandbox(sandbox_id)
        cpu, mem, ws, pids = cgroups.read_stats(doc["cgroup_parent"], self.cgroup_root)
        return ResourceStats(time.time(), cpu, mem, ws, pids)

    def container_cgroup(self, container_id: str) -> str:
        """The container's cgroup path (relative to the hierarchy roots), for the kubelet's stats."""
        return str(self._load_meta(container_id)["cgroup_path"])

    def sandbox_cgroup(self, sandbox_id: str) -> str:
        return str(self._load_sandbox(sandbox_id)["cgroup_parent"])

    def container_writable_layer(self, container_id: str) -> str:
        return self._c_path(container_id, "upper")

    async def reopen_container_log(self, container_id: str) -> None:
        """After the kubelet rotated the log file away, make the shim write to a fresh one (CRI ReopenContainerLog)."""
        pid = _int_file(self._c_path(container_id, "shim.pid"))
        if pid and _pid_alive(pid, container_id):
            os.kill(pid, _signal.SIGUSR1)


def _int_file(path: str) -> int:
    try:
        with open(path) as f:
            return int(f.read().strip() or 0)
    except (OSError, ValueError):
        return 0


def _mount_overlay(lowers: list[str], upper: str, work: str, target: str) -> None:
    opts = f"lowerdir={':'.join(lowers)},upperdir={upper},workdir={work}"
    if len(opts) < 4000:
        sbx._mount("overlay", target, "overlay", 0, opts)
        return
    # past a page of options: name the lower dirs relative to their common parent, mounting from there
    import subprocess

    base = os.path.dirname(lowers[0])
    rel = ":".join(os.path.relpath(x, base) for x in lowers)
    subprocess.run(["mount", "-t", "overlay", "overlay", "-o",
                    f"lowerdir={rel},upperdir={upper},workdir={work}", target], cwd=base, check=True)
