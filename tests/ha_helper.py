"""Several `pyk8s server` processes on one etcd, as a highly available control plane on loopback.

Every server listens on the same port at its own loopback address (127.0.0.2, 127.0.0.3, ...:
all of 127/8 is local on Linux), because the `kubernetes` Service's endpoints carry one port for
all API servers (as upstream's lease reconciler assumes). Endpoints may not hold loopback
addresses (upstream's validation), so each server advertises a documentation address
(198.51.100.x, TEST-NET-2) standing for the address other machines would reach it on: nothing
connects there in these tests; clients use the loopback URLs. The
second and later servers copy the first one's CA and service-account keys (--copy-pki-from),
so certificates and tokens are valid on all; a static token file is shared too.
"""

from __future__ import annotations

import copy
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .cluster import Cluster

__all__ = ["HAControlPlane", "free_port_on", "as_client_of", "advertised_for", "wait_for", "ADMIN_TOKEN"]

ADMIN_TOKEN = "ha-admin-token-0123456789"


def wait_for(pred: Callable[[], Any], timeout: float, what: str, interval: float = 0.1) -> Any:
    """Poll pred until it returns something truthy; fail naming `what` and the last value."""
    deadline = time.monotonic() + timeout
    last = None
    while time.monotonic() < deadline:
        last = pred()
        if last:
            return last
        time.sleep(interval)
    raise AssertionError(f"timed out waiting for {what}; last: {last!r}")


def free_port_on(addrs: list[str]) -> int:
    """A port free on every given address."""
    for _ in range(50):
        with socket.socket() as s:
            s.bind((addrs[0], 0))
            port = int(s.getsockname()[1])
        ok = True
        for a in addrs[1:]:
            with socket.socket() as t:
                try:
                    t.bind((a, port))
                except OSError:
                    ok = False
                    break
        if ok:
            return port
    raise RuntimeError("no common free port")


def advertised_for(loopback: str) -> str:
    """The TEST-NET-2 address a server bound to 127.0.0.N advertises: 198.51.100.N."""
    return "198.51.100." + loopback.rsplit(".", 1)[1]


def as_client_of(server: Cluster, creds: Cluster) -> Cluster:
    """`server`'s URL with `creds`' kubeconfig (credentials issued by the other server)."""
    c = copy.copy(server)
    c.kubeconfig = creds.kubeconfig
    return c


class HAControlPlane:
    def __init__(self, base: Path, etcd_endpoint: str, n: int = 2, extra_args: list[str] | None = None,
                 first_address: int = 2) -> None:
        self.base = base
        self.addrs = [f"127.0.0.{first_address + i}" for i in range(n)]
        self.advertised = [advertised_for(a) for a in self.addrs]
        self.port = free_port_on(self.addrs)
        base.mkdir(parents=True, exist_ok=True)
        self.token_file = base / "tokens.csv"
        self.token_file.write_text(f'{ADMIN_TOKEN},ha-admin,ha-admin-uid,"system:masters"\n')
        self.etcd_endpoint = etcd_endpoint
        self.extra_args = list(extra_args or [])
        self.servers: list[Cluster] = [self._make(i) for i in range(n)]

    def _make(self, i: int, addr: str | None = None) -> Cluster:
        addr = addr or self.addrs[i]
        args = ["--datastore-endpoint", self.etcd_endpoint, "--bind-address", addr, "--tls-san", addr,
                "--advertise-address", advertised_for(addr),
                "--token-auth-file", str(self.token_file), *self.extra_args]
        if i > 0:
            args += ["--copy-pki-from", os.path.join(self.base, "s0")]
        c = Cluster(str(self.base / f"s{i}"), extra_args=args)
        c.port = self.port
        return c

    def add(self, addr: str) -> Cluster:
        """One more server (not started) at addr, sharing the PKI."""
        c = self._make(len(self.servers), addr)
        self.servers.append(c)
        return c

    def start(self) -> HAControlPlane:
        try:
            self.servers[0].start()
            for s in self.servers[1:]:
                s.start()
        except BaseException:
            self.stop()
            raise
        return self

    def urls(self) -> list[str]:
        return [s.url or f"https://{a}:{self.port}" for s, a in zip(self.servers, self.addrs, strict=False)]

    def stop(self) -> None:
        for s in self.servers:
            try:
                s.stop()
            except Exception:  # noqa: BLE001 - stop the others anyway
                pass

    def __enter__(self) -> HAControlPlane:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
