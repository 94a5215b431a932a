"""Pod volumes: materialised under `<kubelet dir>/pods/<uid>/volumes/kubernetes.io~<plugin>/<name>` as upstream.

emptyDir (a directory, or tmpfs for medium Memory sized by sizeLimit), hostPath (with
every `type` check), configMap / secret / downwardAPI / projected (written by an atomic
writer: files live in a timestamped `..<ts>` directory, `..data` points at it and every
user-visible name is a symlink through `..data`, so an update is one rename and readers
never see half an update), and persistentVolumeClaim bound to hostPath/local volumes (see docs/storage.md: the wait
for an unbound claim, local-path directories, fsGroup ownership, volumesInUse).
Secret, downwardAPI and projected volumes sit on tmpfs, as upstream's memory-backed wrapper.

`setup` is idempotent and is called on every pod sync, which is what propagates ConfigMap,
Secret, label and token changes into running pods.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import secrets as _secrets
import shutil
import stat
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..api.quantity import parse_quantity
from .envvars import EnvError, expand, field_value, format_map, resource_value
from .runtime.interface import Mount
from .runtime.sandbox import _mount, is_mountpoint, umount

EMPTY_DIR = "kubernetes.io~empty-dir"
CONFIGMAP = "kubernetes.io~configmap"
SECRET = "kubernetes.io~secret"
DOWNWARD = "kubernetes.io~downward-api"
PROJECTED = "kubernetes.io~projected"

TOKEN_PATH_DEFAULT_EXPIRY = 3600


class VolumeError(Exception):
    """A volume cannot be set up; the message follows upstream's MountVolume.SetUp errors."""


class ClaimNotBound(VolumeError):
    """A persistentVolumeClaim the pod uses is not bound yet: upstream's volume manager leaves
    such a volume out of its desired state ("failed to process volumes") and the pod waits."""


# The provisioner of local-path volumes (the control plane's half); its directories are made
# here, on the node that mounts them first, as k3s's local-path provisioner leaves them: 0777.
LOCAL_PATH_PROVISIONER = "pyk8s.io/local-path"
ANN_PROVISIONED_BY = "pv.kubernetes.io/provisioned-by"
LOCAL_VOLUME_PLUGIN = "kubernetes.io/local-volume"
UNBOUND_PREFIX = "error processing PVC "


@dataclass
class MountedVolume:
    name: str
    path: str  # host path to bind
    readonly: bool = False  # forced read-only (configMap, secret, downwardAPI, projected)
    kind: str = ""


# Async lookups the manager needs: (kind, name) -> object or None; token(pod, audience, expiry) -> str
ObjectGetter = Callable[[str, str], Awaitable["dict[str, Any] | None"]]
TokenGetter = Callable[[dict[str, Any], str, int], Awaitable[str]]


@dataclass
class Payload:
    files: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # relative path -> (content, mode)


# ------------------------------------------------------------------ atomic writer


def _safe_rel(path: str) -> str:
    p = os.path.normpath(path)
    if os.path.isabs(path) or p.startswith("..") or p == "." or "/../" in f"/{path}/":
        raise VolumeError(f"invalid path {path!r}: must be relative and may not contain '..'")
    return p


def _read_tree(root: str) -> dict[str, tuple[bytes, int]]:
    out: dict[str, tuple[bytes, int]] = {}
    for dirpath, _dirs, files in os.walk(root):
        for f in files:
            p = os.path.join(dirpath, f)
            st = os.lstat(p)
            with open(p, "rb") as fh:
                out[os.path.relpath(p, root)] = (fh.read(), stat.S_IMODE(st.st_mode))
    return out


def write_atomic(target: str, payload: dict[str, tuple[bytes, int]], gid: int | None = None) -> bool:
    """Make `target` show exactly `payload`; returns whether anything changed."""
    os.makedirs(target, exist_ok=True)
    data_link = os.path.join(target, "..data")
    old = os.readlink(data_link) if os.path.islink(data_link) else None
    want = {_safe_rel(k): (v, m | (0o440 if gid is not None else 0)) for k, (v, m) in payload.items()}
    if old is not None:
        try:
            if _read_tree(os.path.join(target, old)) == want:
                return False
        except OSError:
            pass
    ts = time.strftime("..%Y_%m_%d_%H_%M_%S.", time.gmtime()) + _secrets.token_hex(5)
    new_dir = os.path.join(target, ts)
    os.mkdir(new_dir, 0o755)
    for rel, (content, mode) in want.items():
        p = os.path.join(new_dir, rel)
        os.makedirs(os.path.dirname(p), 0o755, exist_ok=True)
        with open(p, "wb") as f:
            f.write(content)
        os.chmod(p, mode)
        if gid is not None:
            os.chown(p, -1, gid)
    if gid is not None:
        os.chown(new_dir, -1, gid)
    tmp_link = os.path.join(target, "..data_tmp")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(tmp_link)
    os.symlink(ts, tmp_link)
    os.rename(tmp_link, data_link)  # the atomic switch
    top = {rel.split("/", 1)[0] for rel in want}
    for name in top:
        link = os.path.join(target, name)
        if not os.path.lexists(link):
            os.symlink(os.path.join("..data", name), link)
    for name in os.listdir(target):
        p = os.path.join(target, name)
        if name.startswith(".."):
            if name not in ("..data", ts) and os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p, ignore_errors=True)
            continue
        if name not in top and os.path.islink(p):
            os.unlink(p)
    return True


# ------------------------------------------------------------------ payloads


def _mode(item: dict[str, Any], default: int) -> int:
    m = item.get("mode")
    return int(m) if m is not None else default


def _keyed_payload(data: dict[str, bytes], items: list[dict[str, Any]] | None, default_mode: int, optional: bool,
                   what: str) -> dict[str, tuple[bytes, int]]:
    if not items:
        return {k: (v, default_mode) for k, v in data.items()}
    out = {}
    for it in items:
        key = it.get("key", "")
        if key not in data:
            if optional:
                continue
            raise VolumeError(f"{what} references non-existent {'config' if what == 'configmap' else 'secret'} key: {key}")
        out[it.get("path") or key] = (data[key], _mode(it, default_mode))
    return out


def configmap_data(cm: dict[str, Any]) -> dict[str, bytes]:
    out = {k: str(v).encode() for k, v in (cm.get("data") or {}).items()}
    for k, v in (cm.get("binaryData") or {}).items():
        out[k] = base64.b64decode(v)
    return out


def secret_data(s: dict[str, Any]) -> dict[str, bytes]:
    out = {k: base64.b64decode(v) for k, v in (s.get("data") or {}).items()}
    for k, v in (s.get("stringData") or {}).items():
        out[k] = str(v).encode()
    return out


def downward_payload(pod: dict[str, Any], items: list[dict[str, Any]], default_mode: int,
                     allocatable: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
    out = {}
    ips = [p.get("ip") for p in (pod.get("status") or {}).get("podIPs") or [] if p.get("ip")]
    hips = [p.get("ip") for p in (pod.get("status") or {}).get("hostIPs") or [] if p.get("ip")]
    for it in items or []:
        try:
            if it.get("fieldRef"):
                fp = it["fieldRef"].get("fieldPath", "")
                md = pod.get("metadata") or {}
                if fp == "metadata.labels":
                    val = format_map(md.get("labels"))
                elif fp == "metadata.annotations":
                    val = format_map(md.get("annotations"))
                else:
                    val = field_value(pod, fp, ips, hips)
            elif it.get("resourceFieldRef"):
                ref = it["resourceFieldRef"]
                cname = ref.get("containerName", "")
                c = next((c for c in (pod.get("spec") or {}).get("containers") or [] if c.get("name") == cname), None)
                if c is None:
                    raise VolumeError(f"container {cname} not found")
                val = resource_value(ref, c, allocatable)
            else:
                continue
        except EnvError as e:
            raise VolumeError(str(e)) from e
        out[it.get("path", "")] = (val.encode(), _mode(it, default_mode))
    return out


# ------------------------------------------------------------------ host path checks


def check_host_path(path: str, typ: str) -> None:
    """hostPath `type` semantics, creating what the *OrCreate types ask for."""
    if typ in ("", None):
        return
    if typ == "DirectoryOrCreate":
        if not os.path.exists(path):
            os.makedirs(path, 0o755, exist_ok=True)
            return
        typ = "Directory"
    if typ == "FileOrCreate":
        if not os.path.exists(path):
            os.makedirs(os.path.dirname(path) or "/", 0o755, exist_ok=True)
            fd = os.open(path, os.O_CREAT | os.O_WRONLY, 0o644)
            os.close(fd)
            return
        typ = "File"
    checks = {
        "Directory": (stat.S_ISDIR, "is not a directory"),
        "File": (stat.S_ISREG, "is not a file"),
        "Socket": (stat.S_ISSOCK, "is not a socket file"),
        "CharDevice": (stat.S_ISCHR, "is not a character device"),
        "BlockDevice": (stat.S_ISBLK, "is not a block device"),
    }
    if typ not in checks:
        raise VolumeError(f"hostPath type check failed: unknown type {typ}")
    fn, msg = checks[typ]
    try:
        mode = os.stat(path).st_mode
    except OSError:
        raise VolumeError(f"hostPath type check failed: {path} {msg}") from None
    if not fn(mode):
        raise VolumeError(f"hostPath type check failed: {path} {msg}")


# ------------------------------------------------------------------ the manager


def _fs_group(pod: dict[str, Any]) -> int | None:
    g = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroup")
    return int(g) if g is not None else None


def _ensure_local_path_dir(path: str) -> None:
    """A local-path volume's directory, made on first mount with k3s's 0777 (umask aside)."""
    if not os.path.isabs(path) or ".." in path.split("/"):
        raise VolumeError(f"local-path volume path {path!r} is not a clean absolute path")
    if not os.path.isdir(path):
        os.makedirs(path, 0o777, exist_ok=True)
        os.chmod(path, 0o777)


def set_volume_ownership(path: str, gid: int, readonly: bool, on_root_mismatch: bool) -> None:
    """Upstream SetVolumeOwnership for fsGroup: group ``gid`` on everything, group read (and
    write unless read-only) with setgid directories; with OnRootMismatch a root already right
    is taken as the whole tree being right. Symlinks are not followed."""
    want = stat.S_IRGRP | (0 if readonly else stat.S_IWGRP)
    st = os.lstat(path)
    if on_root_mismatch and st.st_gid == gid and st.st_mode & stat.S_ISGID and st.st_mode & want == want:
        return

    def fix(p: str, is_dir: bool) -> None:
        st = os.lstat(p)
        if stat.S_ISLNK(st.st_mode):
            return
        if st.st_gid != gid:
            os.lchown(p, -1, gid)
        mode = stat.S_IMODE(st.st_mode) | want
        if is_dir:
            mode |= stat.S_IXGRP | stat.S_ISGID
        elif st.st_mode & stat.S_IXUSR:
            mode |= stat.S_IXGRP
        if mode != stat.S_IMODE(st.st_mode):
            os.chmod(p, mode)

    fix(path, True)
    for root, dirs, files in os.walk(path):
        for d in dirs:
            fix(os.path.join(root, d), True)
        for f in files:
            fix(os.path.join(root, f), False)


def _pod_memory_limit(pod: dict[str, Any]) -> int:
    total = 0
    for c in (pod.get("spec") or {}).get("containers") or []:
        lim = ((c.get("resources") or {}).get("limits") or {}).get("memory")
        if lim is None:
            return 0
        total += parse_quantity(lim).to_int()
    return total


class VolumeManager:
    def __init__(self, root: str, get_object: Callable[[dict[str, Any], str, str], Awaitable[dict[str, Any] | None]],
                 get_token: TokenGetter, get_pvc: Callable[[str, str], Awaitable[dict[str, Any] | None]],
                 get_pv: Callable[[str], Awaitable[dict[str, Any] | None]], allocatable: Callable[[], dict[str, Any]],
                 api_audience: str = "") -> None:
        self.root = root  # <kubelet dir>/pods
        self.get_object = get_object  # (pod, kind, name) -> object or None
        self.get_token = get_token
        self.get_pvc = get_pvc  # (namespace, name)
        self.get_pv = get_pv
        self.allocatable = allocatable
        self.api_audience = api_audience
        self._tmpfs: set[str] = set()
        self._owned: set[tuple[str, str]] = set()  # (pod uid, volume): fsGroup ownership applied
        self.in_use: dict[str, set[str]] = {}  # pod uid -> unique names of its device-mountable volumes
        self.on_in_use_change: Callable[[], None] | None = None  # lets the node report it without waiting

    def volumes_in_use(self) -> list[str]:
        """node.status.volumesInUse, as upstream's kubelet reports it: the unique names of the
        mounted volumes whose plugin is attachable or device-mountable (for us: ``local``
        PVs, ``kubernetes.io/local-volume/<pv>``); hostPath and the others report nothing."""
        return sorted(set().union(*self.in_use.values())) if self.in_use else []

    def _in_use_changed(self) -> None:
        if self.on_in_use_change is not None:
            self.on_in_use_change()

    def pod_dir(self, uid: str) -> str:
        return os.path.join(self.root, uid)

    def _vol_dir(self, uid: str, plugin: str, name: str) -> str:
        return os.path.join(self.root, uid, "volumes", plugin, name)

    async def setup(self, pod: dict[str, Any]) -> tuple[dict[str, MountedVolume], list[tuple[str, str]]]:
        """Set up (or refresh) every volume. Returns the mounted volumes and (volume name, error) failures."""
        uid = pod["metadata"]["uid"]
        vols = os.path.join(self.root, uid, "volumes")
        if not os.path.isdir(vols):  # (a stat: cheaper than the mkdir that fails on every resync)
            os.makedirs(vols, exist_ok=True)
        out: dict[str, MountedVolume] = {}
        errors: list[tuple[str, str]] = []
        for v in (pod.get("spec") or {}).get("volumes") or []:
            try:
                out[v["name"]] = await self._setup_one(pod, v)
            except VolumeError as e:
                errors.append((v["name"], str(e)))
            except OSError as e:
                errors.append((v["name"], f"{e.strerror or e}: {e.filename or ''}".rstrip(": ")))
        return out, errors

    async def _setup_one(self, pod: dict[str, Any], v: dict[str, Any]) -> MountedVolume:
        uid = pod["metadata"]["uid"]
        name = v["name"]
        gid = _fs_group(pod)
        if "emptyDir" in v:
            d = self._vol_dir(uid, EMPTY_DIR, name)
            ed = v.get("emptyDir") or {}
            new = not os.path.isdir(d)
            os.makedirs(d, exist_ok=True)
            if ed.get("medium") == "Memory" and (new or not self._mounted(d)):
                size = parse_quantity(ed["sizeLimit"]).to_int() if ed.get("sizeLimit") else _pod_memory_limit(pod)
                _mount("tmpfs", d, "tmpfs", 0, f"mode=0777{f',size={size}' if size else ''}")
                self._tmpfs.add(d)
                new = True
            if new:
                os.chmod(d, 0o777)
                if gid is not None:
                    os.chown(d, -1, gid)
                    os.chmod(d, 0o2777)
            return MountedVolume(name, d, kind="emptyDir")
        if "hostPath" in v:
            hp = v["hostPath"]
            check_host_path(hp.get("path", ""), hp.get("type") or "")
            return MountedVolume(name, hp.get("path", ""), kind="hostPath")
        if "configMap" in v:
            src = v["configMap"]
            payload = await self._configmap_payload(pod, src, int(src.get("defaultMode", 0o644)))
            d = await asyncio.to_thread(self._publish, uid, CONFIGMAP, name, payload, gid, False)
            return MountedVolume(name, d, True, "configMap")
        if "secret" in v:
            src = v["secret"]
            payload = await self._secret_payload(pod, src, src.get("secretName", ""), int(src.get("defaultMode", 0o644)))
            d = await asyncio.to_thread(self._publish, uid, SECRET, name, payload, gid)
            return MountedVolume(name, d, True, "secret")
        if "downwardAPI" in v:
            src = v["downwardAPI"]
            payload = downward_payload(pod, src.get("items") or [], int(src.get("defaultMode", 0o644)), self.allocatable())
            d = await asyncio.to_thread(self._publish, uid, DOWNWARD, name, payload, gid)
            return MountedVolume(name, d, True, "downwardAPI")
        if "projected" in v:
            src = v["projected"]
            payload = await self._projected_payload(pod, src)
            d = await asyncio.to_thread(self._publish, uid, PROJECTED, name, payload, gid)
            return MountedVolume(name, d, True, "projected")
        if "persistentVolumeClaim" in v or "ephemeral" in v:
            if "ephemeral" in v:
                claim, ro = f"{pod['metadata']['name']}-{name}", False
            else:
                claim, ro = v["persistentVolumeClaim"].get("claimName", ""), bool(v["persistentVolumeClaim"].get("readOnly"))
            path, unique, own = await self._pvc_path(pod["metadata"].get("namespace") or "default", claim)
            if unique and unique not in self.in_use.get(uid, ()):
                self.in_use.setdefault(uid, set()).add(unique)
                self._in_use_changed()
            if own and gid is not None and (uid, name) not in self._owned:
                policy = ((pod.get("spec") or {}).get("securityContext") or {}).get("fsGroupChangePolicy") or ""
                await asyncio.to_thread(set_volume_ownership, path, gid, ro, policy == "OnRootMismatch")
                self._owned.add((uid, name))
            return MountedVolume(name, path, ro, "persistentVolumeClaim")
        kinds = [k for k in v if k != "name"]
        raise VolumeError(f"volume plugin {kinds[0] if kinds else '?'} is not supported by this kubelet")

    def _publish(self, uid: str, plugin: str, name: str, payload: dict[str, tuple[bytes, int]], gid: int | None,
                 tmpfs: bool = True) -> str:
        """The volume's directory (a tmpfs unless it holds ConfigMap data) showing exactly `payload`. Called on a
        worker thread: a dozen file system calls that the event loop would otherwise wait out."""
        d = self._tmpfs_dir(uid, plugin, name) if tmpfs else self._vol_dir(uid, plugin, name)
        write_atomic(d, payload, gid)
        return d

    def _tmpfs_dir(self, uid: str, plugin: str, name: str) -> str:
        d = self._vol_dir(uid, plugin, name)
        existed = os.path.isdir(d)
        os.makedirs(d, exist_ok=True)
        if not existed or not self._mounted(d):  # a directory made just now is no mount point: no mountinfo read
            # plain flags, as upstream mounts it (locked nosuid/nodev would also stop read-only remounts in user
            # namespaces, which the process fallback runtime does)
            _mount("tmpfs", d, "tmpfs", 0, "mode=0755")
            self._tmpfs.add(d)
        return d

    def _mounted(self, d: str) -> bool:
        """Whether `d` is a mount point; remembered, since every sync asks and mountinfo grows with the pods."""
        if d in self._tmpfs:
            return True
        if os.path.ismount(d) or is_mountpoint(d):  # a tmpfs has its own st_dev: mountinfo only when that says no
            self._tmpfs.add(d)
            return True
        return False

    async def _configmap_payload(self, pod: dict[str, Any], src: dict[str, Any], default_mode: int) -> dict[str, tuple[bytes, int]]:
        name = src.get("name", "")
        cm = await self.get_object(pod, "configmaps", name)
        if cm is None:
            if src.get("optional"):
                return {}
            raise VolumeError(f'configmap "{name}" not found')
        return _keyed_payload(configmap_data(cm), src.get("items"), default_mode, bool(src.get("optional")), "configmap")

    async def _secret_payload(self, pod: dict[str, Any], src: dict[str, Any], name: str,
                              default_mode: int) -> dict[str, tuple[bytes, int]]:
        s = await self.get_object(pod, "secrets", name)
        if s is None:
            if src.get("optional"):
                return {}
            raise VolumeError(f'secret "{name}" not found')
        return _keyed_payload(secret_data(s), src.get("items"), default_mode, bool(src.get("optional")), "secret")

    async def _projected_payload(self, pod: dict[str, Any], src: dict[str, Any]) -> dict[str, tuple[bytes, int]]:
        mode = int(src.get("defaultMode", 0o644))
        out: dict[str, tuple[bytes, int]] = {}
        for s in src.get("sources") or []:
            if s.get("configMap"):
                out.update(await self._configmap_payload(pod, s["configMap"], mode))
            elif s.get("secret"):
                out.update(await self._secret_payload(pod, s["secret"], s["secret"].get("name", ""), mode))
            elif s.get("downwardAPI"):
                out.update(downward_payload(pod, s["downwardAPI"].get("items") or [], mode, self.allocatable()))
            elif s.get("serviceAccountToken"):
                t = s["serviceAccountToken"]
                try:
                    tok = await self.get_token(pod, t.get("audience") or self.api_audience,
                                               int(t.get("expirationSeconds") or TOKEN_PATH_DEFAULT_EXPIRY))
                except Exception as e:  # noqa: BLE001 - reported as the mount failure
                    raise VolumeError(f"failed to fetch token: {e}") from e
                out[t.get("path", "token")] = (tok.encode(), mode)
            elif s.get("clusterTrustBundle"):
                raise VolumeError("clusterTrustBundle projections are not supported by this kubelet")
        return out

    async def _pvc_path(self, ns: str, claim: str) -> tuple[str, str, bool]:
        """The host path of a claim's volume, its volumesInUse name ("" for none) and whether
        fsGroup ownership applies to it (local volumes, as upstream's local plugin; not hostPath)."""
        pvc = await self.get_pvc(ns, claim)
        if pvc is None:
            raise VolumeError(f'persistentvolumeclaim "{claim}" not found')
        phase = (pvc.get("status") or {}).get("phase", "")
        vol = (pvc.get("spec") or {}).get("volumeName", "")
        if phase != "Bound" or not vol:
            raise ClaimNotBound(f"{UNBOUND_PREFIX}{ns}/{claim}: PVC is not bound")
        pv = await self.get_pv(vol)
        if pv is None:
            raise VolumeError(f'persistentvolume "{vol}" not found')
        spec = pv.get("spec") or {}
        local_path = ((pv.get("metadata") or {}).get("annotations") or {}).get(ANN_PROVISIONED_BY) == LOCAL_PATH_PROVISIONER
        if spec.get("hostPath"):
            hp = spec["hostPath"]
            path = str(hp.get("path", ""))
            if local_path:
                _ensure_local_path_dir(path)
            check_host_path(path, hp.get("type") or "")
            return path, "", local_path
        if spec.get("local"):
            path = str(spec["local"].get("path", ""))
            if local_path:
                _ensure_local_path_dir(path)
            if not os.path.exists(path):
                raise VolumeError(f"path {path} does not exist")
            return path, f"{LOCAL_VOLUME_PLUGIN}/{vol}", True
        raise VolumeError(f"persistent volume {vol}: only hostPath and local volumes are supported by this kubelet")

    # ---- container mounts

    def container_mounts(self, pod: dict[str, Any], container: dict[str, Any], volumes: dict[str, MountedVolume],
                         env: dict[str, str]) -> list[Mount]:
        out: list[Mount] = []
        for vm in container.get("volumeMounts") or []:
            mv = volumes.get(vm.get("name", ""))
            if mv is None:
                raise VolumeError(f"cannot find volume \"{vm.get('name')}\" to mount into container \"{container['name']}\"")
            src = mv.path
            sub = vm.get("subPath") or ""
            if vm.get("subPathExpr"):
                sub = expand(vm["subPathExpr"], env.get)
            if sub:
                src = self._subpath(mv, sub)
            prop = {"HostToContainer": "rslave", "Bidirectional": "rshared"}.get(vm.get("mountPropagation") or "", "private")
            out.append(Mount(container_path=vm.get("mountPath", ""), host_path=src,
                             readonly=bool(vm.get("readOnly")) or mv.readonly, propagation=prop))
        return out

    @staticmethod
    def _subpath(mv: MountedVolume, sub: str) -> str:
        rel = _safe_rel(sub)
        base = os.path.realpath(mv.path)
        p = os.path.join(mv.path, rel)
        if not os.path.lexists(p):
            if mv.readonly:
                raise VolumeError(f"subPath {sub} does not exist in volume {mv.name}")
            # as upstream: the new directories take the volume root's mode, so an fsGroup can write
            mode = stat.S_IMODE(os.stat(mv.path).st_mode)
            parts = rel.split("/")
            for i in range(1, len(parts) + 1):
                d = os.path.join(mv.path, *parts[:i])
                if not os.path.lexists(d):
                    os.mkdir(d, mode)
                    os.chmod(d, mode)
                elif not _within(os.path.realpath(d), base):  # a link out: create nothing there
                    raise VolumeError(f"subpath {p!r} not within volume path {mv.path!r}")
        real = os.path.realpath(p)
        if not _within(real, base):
            raise VolumeError(f"subpath {p!r} not within volume path {mv.path!r}")
        return real

    def termination_log(self, uid: str, container: str) -> str:
        """A fresh host file for the container's terminationMessagePath."""
        d = os.path.join(self.root, uid, "containers", container)
        os.makedirs(d, exist_ok=True)
        p = os.path.join(d, _secrets.token_hex(4))
        fd = os.open(p, os.O_CREAT | os.O_WRONLY, 0o666)
        os.close(fd)
        os.chmod(p, 0o666)
        return p

    # ---- teardown

    def teardown(self, uid: str) -> None:
        """Unmount every tmpfs of the pod and remove its directory."""
        d = self.pod_dir(uid)
        if self.in_use.pop(uid, None):
            self._in_use_changed()
        self._owned = {k for k in self._owned if k[0] != uid}
        self._tmpfs = {m for m in self._tmpfs if not m.startswith(d + "/")}
        if not os.path.isdir(d):
            return
        for mp in sorted(_mounts_under(d), key=len, reverse=True):
            with contextlib.suppress(OSError):
                umount(mp)
        if _mounts_under(d):
            raise OSError(f"volumes of pod {uid} are still mounted")
        shutil.rmtree(d, ignore_errors=True)

    def pod_dirs(self) -> list[str]:
        try:
            return os.listdir(self.root)
        except FileNotFoundError:
            return []


def _within(real: str, base: str) -> bool:
    return real == base or real.startswith(base.rstrip("/") + "/")


def _mounts_under(d: str) -> list[str]:
    prefix = d.rstrip("/") + "/"
    out = []
    try:
        with open("/proc/self/mountinfo") as f:
            for line in f:
                mp = line.split()[4].replace("\\040", " ")
                if mp.startswith(prefix):
                    out.append(mp)
    except OSError:
        pass
    return out
