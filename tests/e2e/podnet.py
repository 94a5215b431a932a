"""Pod networks for test kubelets on this machine: one 10.X.0.0/16 per holder, reserved across processes.

Host-network kubelet modules run side by side (each in its own xdist group), and other checkouts'
test runs share the machine too. Each test cluster's kubelet makes a bridge on the host with the
first /24 of its cluster CIDR, so two clusters drawing the same 10.X would route each other's pods
into the wrong bridge. A lock file per second octet (flock, released when its holder closes it or
dies) makes the draw exclusive; a network some other program already routes is skipped as well.
"""

from __future__ import annotations

import contextlib
import fcntl
import ipaddress
import os
import random

from pyk8s.devcluster.topology import in_use

LOCK_DIR = "/run/pyk8s-test-nets"


class PodNet:
    """A reserved 10.X.0.0/16: `prefix` is "10.X"; release() (or process exit) frees it."""

    def __init__(self, prefix: str, fd: int) -> None:
        self.prefix = prefix
        self._fd: int | None = fd

    @property
    def cidr(self) -> str:
        return f"{self.prefix}.0.0/16"

    def release(self) -> None:
        if self._fd is not None:
            with contextlib.suppress(OSError):
                os.close(self._fd)
            self._fd = None


def reserve_pod_net(second: range) -> PodNet:
    """A 10.<second>.0.0/16 that no other test holds and no host route or address touches."""
    os.makedirs(LOCK_DIR, mode=0o700, exist_ok=True)
    candidates = list(second)
    random.shuffle(candidates)
    for x in candidates:
        fd = os.open(os.path.join(LOCK_DIR, f"10.{x}.lock"), os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            continue
        if in_use(ipaddress.IPv4Network(f"10.{x}.0.0/16")):  # a bridge of a run that takes no lock
            os.close(fd)
            continue
        return PodNet(f"10.{x}", fd)
    raise RuntimeError(f"no free 10.x.0.0/16 pod network in 10.{second.start}-{second.stop - 1} on this machine")
