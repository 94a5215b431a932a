"""`pyk8s image build busybox`: a complete busybox image from the host's static busybox, offline.

The tree matches what the official busybox image gives a pod: every applet linked in /bin,
a sticky world-writable /tmp (`kubectl cp` untars there), /etc/passwd and /etc/group with
root and nobody, /root and /home, `Cmd ["sh"]` and a PATH. Every entry is owned by root,
whoever runs the build.

Debian's busybox-static is linked statically against glibc, whose name lookups (getaddrinfo:
`wget http://web.demo.svc.cluster.local`, `ping web`) load the NSS modules at run time: without
them every name fails to resolve. As the official `busybox:glibc` image does, the image carries
the host's libc, libresolv, libnss_files, libnss_dns, the loader and an nsswitch.conf, so names
resolve through /etc/hosts and the pod's resolv.conf (cluster DNS, search paths, ndots).
"""

from __future__ import annotations

import glob
import io
import os
import platform
import re
import subprocess
import tarfile
import tempfile
import time

from .archive import ArchiveError, import_rootfs
from .store import Image, ImageStore

HOST_BUSYBOX = "/bin/busybox"
_VERSION = re.compile(r"BusyBox v(\d+\.\d+)(?:\.\d+)?")
_PASSWD = ("root:x:0:0:root:/root:/bin/sh\n"
           "nobody:x:65534:65534:nobody:/home:/bin/false\n")
_GROUP = "root:x:0:\nnogroup:x:65534:\nnobody:x:65534:\n"


NSSWITCH = "passwd: files\ngroup: files\nhosts: files dns\n"
_NSS_LIBS = ("libc.so.6", "libresolv.so.2", "libnss_files.so.2", "libnss_dns.so.2")


def glibc_resolver_files() -> list[tuple[str, str]]:
    """(path in the image, host file) for glibc's name lookups; empty where the host has no glibc."""
    libdir = f"/lib/{platform.machine()}-linux-gnu"
    libs = [(f"{libdir.lstrip('/')}/{n}", os.path.realpath(os.path.join(libdir, n))) for n in _NSS_LIBS]
    loaders = glob.glob("/lib64/ld-linux*.so.*") + glob.glob(f"{libdir}/ld-linux*.so.*")  # the ELF interpreter path first
    if not loaders or not all(os.path.isfile(h) for _, h in libs):
        return []
    return [*libs, (loaders[0].lstrip("/"), os.path.realpath(loaders[0]))]


def busybox_version(binary: str = HOST_BUSYBOX) -> str:
    """`1.35` for BusyBox v1.35.0: the major.minor the official image's tags use."""
    out = subprocess.run([binary], capture_output=True, text=True, check=False)
    m = _VERSION.search(out.stdout + out.stderr)
    if not m:
        raise ArchiveError(f"{binary} does not say which BusyBox version it is")
    return m.group(1)


def _applets(binary: str) -> list[str]:
    out = subprocess.run([binary, "--list"], capture_output=True, text=True, check=False)
    if out.returncode != 0 or not out.stdout.split():
        raise ArchiveError(f"{binary} --list failed: is it a multi-call busybox (busybox-static)?")
    return sorted(set(out.stdout.split()) - {"busybox"})


def _entry(name: str, kind: bytes, mode: int, mtime: int) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.type, ti.mode, ti.mtime = kind, mode, mtime
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    return ti


def _write_rootfs_tar(path: str, binary: str) -> None:
    now = int(time.time())
    with tarfile.open(path, "w", format=tarfile.PAX_FORMAT) as tf:
        for d, mode in (("bin", 0o755), ("dev", 0o755), ("etc", 0o755), ("home", 0o755), ("proc", 0o555),
                        ("root", 0o700), ("sys", 0o555), ("tmp", 0o1777), ("usr", 0o755), ("usr/sbin", 0o755),
                        ("var", 0o755), ("var/log", 0o755)):
            tf.addfile(_entry(d, tarfile.DIRTYPE, mode, now))
        with open(binary, "rb") as f:
            ti = _entry("bin/busybox", tarfile.REGTYPE, 0o755, now)
            ti.size = os.fstat(f.fileno()).st_size
            tf.addfile(ti, f)
        for a in _applets(binary):
            ti = _entry(f"bin/{a}", tarfile.LNKTYPE, 0o755, now)  # hard links, as the official image has
            ti.linkname = "bin/busybox"
            tf.addfile(ti)
        resolver = glibc_resolver_files()
        for d in sorted({os.path.dirname(p) for p, _ in resolver}):
            parts = d.split("/")
            for i in range(1, len(parts) + 1):
                sub = "/".join(parts[:i])
                if sub not in ("bin", "usr") and sub not in tf.getnames():
                    tf.addfile(_entry(sub, tarfile.DIRTYPE, 0o755, now))
        for name, host in resolver:
            with open(host, "rb") as f:
                ti = _entry(name, tarfile.REGTYPE, 0o755, now)
                ti.size = os.fstat(f.fileno()).st_size
                tf.addfile(ti, f)
        texts = [("etc/passwd", _PASSWD), ("etc/group", _GROUP)] + ([("etc/nsswitch.conf", NSSWITCH)] if resolver else [])
        for name, text in texts:
            data = text.encode()
            ti = _entry(name, tarfile.REGTYPE, 0o644, now)
            ti.size = len(data)
            tf.addfile(ti, io.BytesIO(data))


def build_busybox(store: ImageStore, tags: list[str] | None = None, binary: str = HOST_BUSYBOX) -> Image:
    """Build and tag the image (default `busybox:latest` and `busybox:<version>`); returns it."""
    if not os.path.isfile(binary):
        raise ArchiveError(f"{binary}: no such file (install busybox-static)")
    names = list(tags or ["busybox:latest", f"busybox:{busybox_version(binary)}"])
    with tempfile.TemporaryDirectory(prefix="pyk8s-busybox-") as tmp:
        tar = os.path.join(tmp, "rootfs.tar")
        _write_rootfs_tar(tar, binary)
        img = import_rootfs(store, tar, names[0], cmd=["sh"])
    if len(names) > 1:
        img = store.add_image(img.manifest_digest, names)
    return img
