"""Container init for the process fallback runtime, run inside `unshare --user --map-root-user --mount --pid --fork`.

Standard library only. Mounts the overlay rootfs, the pod's files and volumes, a fresh
/proc, then chroots and execs the container's command. No cgroups, no seccomp, no
capabilities: this is the fallback, not a sandbox.
"""

from __future__ import annotations

import ctypes
import json
import os
import sys

MS_RDONLY, MS_BIND, MS_REMOUNT, MS_REC = 0x1, 0x1000, 0x20, 0x4000
_libc = ctypes.CDLL(None, use_errno=True)


def _mount(src: str, dst: str, fstype: str | None, flags: int, data: str | None = None) -> None:
    if _libc.mount(src.encode(), dst.encode(), fstype.encode() if fstype else None, flags,
                   data.encode() if data else None) != 0:
        e = ctypes.get_errno()
        raise OSError(e, f"mount {src} on {dst}: {os.strerror(e)}")


def _target(root: str, dest: str, is_dir: bool) -> str:
    t = os.path.join(root, dest.lstrip("/"))
    if is_dir:
        os.makedirs(t, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(t), exist_ok=True)
        if not os.path.exists(t):
            open(t, "a").close()
    return t


def main() -> None:
    with open(sys.argv[1]) as f:
        spec = json.load(f)
    root = spec["rootfs"]
    _mount("overlay", root, "overlay", 0, spec["overlay"])
    for b in spec["binds"]:
        t = _target(root, b["destination"], os.path.isdir(b["source"]))
        _mount(b["source"], t, None, MS_BIND | MS_REC)
        if b.get("readonly"):
            _mount("none", t, None, MS_BIND | MS_REMOUNT | MS_RDONLY)
    _mount("proc", _target(root, "/proc", True), "proc", 0)
    os.chroot(root)
    os.chdir(spec.get("cwd") or "/")
    env = dict(kv.split("=", 1) for kv in spec["env"])
    prog = spec["args"][0]
    if "/" not in prog:  # resolve in the chroot by hand: os.execvpe would import modules the image lacks
        for d in env.get("PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin").split(":"):
            if d and os.access(os.path.join(d, prog), os.X_OK):
                prog = os.path.join(d, prog)
                break
    try:
        os.execve(prog, spec["args"], env)
    except OSError as e:
        print(f"exec {spec['args'][0]}: {e}", file=sys.stderr)
        sys.exit(127)


if __name__ == "__main__":
    main()
