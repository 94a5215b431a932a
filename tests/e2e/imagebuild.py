"""Builds small images offline for the e2e tests: a busybox rootfs from Debian's busybox-static."""

from __future__ import annotations

import os
import shutil
import subprocess

BUSYBOX = "/bin/busybox"


def build_busybox_rootfs(dest: str) -> str:
    """A busybox root filesystem: /bin/busybox plus one symlink per applet, and passwd/group files."""
    bindir = os.path.join(dest, "bin")
    os.makedirs(bindir, exist_ok=True)
    shutil.copy2(BUSYBOX, os.path.join(bindir, "busybox"))
    applets = subprocess.run([BUSYBOX, "--list"], capture_output=True, text=True, check=True).stdout.split()
    for a in applets:
        if a != "busybox" and not os.path.lexists(os.path.join(bindir, a)):
            os.symlink("busybox", os.path.join(bindir, a))
    for d in ("etc", "proc", "sys", "dev", "root", "home/app", "var/log"):
        os.makedirs(os.path.join(dest, d), exist_ok=True)
    os.makedirs(os.path.join(dest, "tmp"), exist_ok=True)
    os.chmod(os.path.join(dest, "tmp"), 0o1777)
    with open(os.path.join(dest, "etc", "passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000:app:/home/app:/bin/sh\n"
                "nobody:x:65534:65534:nobody:/nonexistent:/bin/false\n")
    with open(os.path.join(dest, "etc", "group"), "w") as f:
        f.write("root:x:0:\napp:x:1000:\nextra:x:2000:app\nnogroup:x:65534:\n")
    os.chown(os.path.join(dest, "home/app"), 1000, 1000)
    from pyk8s.kubelet.images.build import NSSWITCH, glibc_resolver_files

    for name, host in glibc_resolver_files():  # names resolve in the pods, as in `pyk8s image build busybox`
        os.makedirs(os.path.join(dest, os.path.dirname(name)), exist_ok=True)
        shutil.copy2(host, os.path.join(dest, name))
    with open(os.path.join(dest, "etc", "nsswitch.conf"), "w") as f:
        f.write(NSSWITCH)
    return dest


def import_busybox(store, tmpdir: str, ref: str = "busybox:e2e"):
    """Build the busybox rootfs under `tmpdir` and import it into `store` as `ref`."""
    from pyk8s.kubelet.images.archive import import_rootfs

    root = build_busybox_rootfs(os.path.join(tmpdir, "busybox-rootfs"))
    return import_rootfs(store, root, ref, cmd=["sh"])
