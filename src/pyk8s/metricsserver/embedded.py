"""The metrics server `pyk8s server` runs (the component named `metrics-server`).

It comes up in the background once the API server is up, as metrics-server's pod would: its
identity (ServiceAccount kube-system/metrics-server and upstream's RBAC) is written first, as
the API server's addon writer; then it reads the API and scrapes kubelets as that
ServiceAccount (a client certificate for its user, from the cluster CA), serves on the
advertise address with a serving certificate from the cluster CA for
`metrics-server.kube-system.svc`, and publishes Service, EndpointSlice and APIService
`v1beta1.metrics.k8s.io` (addon.py) so the aggregator proxies metrics.k8s.io to it.

By default it is its own `pyk8s metrics-server` process (MetricsServerProcess), as upstream's
runs in its own pod: scraping thousands of simulated kubelets every 15 s is seconds of CPU a
round, which must not come out of the API's loop. `--in-process-metrics-server` runs it on the
server's loop instead (EmbeddedMetricsServer).
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
import ssl
import tempfile
from collections.abc import Callable
from typing import Any

from ..pki import issue_client_cert, issue_serving_cert
from . import addon
from .server import MetricsServer, MetricsServerOptions

__all__ = ["EmbeddedMetricsServer", "MetricsServerProcess", "kubelet_client_context", "start"]

log = logging.getLogger("pyk8s.metrics-server")


def kubelet_client_context(cert_pem: bytes, key_pem: bytes) -> ssl.SSLContext:
    """TLS to kubelets with our client certificate. Kubelets serve self-signed certificates here (as
    upstream's without serving-cert bootstrap), so theirs is not verified: metrics-server's
    `--kubelet-insecure-tls`, which every single-binary distribution sets."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    with tempfile.TemporaryDirectory(prefix="pyk8s-metrics-client-") as d:
        crt, key = os.path.join(d, "tls.crt"), os.path.join(d, "tls.key")
        fd = os.open(key, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(key_pem)
        with open(crt, "wb") as f:
            f.write(cert_pem)
        ctx.load_cert_chain(crt, key)
    return ctx


async def _register(writer: Any, address: str, port: int, ca_pem: bytes) -> bool:
    """The Service, EndpointSlice and APIService v1beta1.metrics.k8s.io for a server at address:port."""
    if ipaddress.ip_address(address).is_loopback:  # EndpointSlices refuse loopback addresses
        log.warning("metrics server listens on %s port %d: not registered as v1beta1.metrics.k8s.io", address, port)
        return False
    try:
        await addon.ensure(writer, addon.service_objects(address, port, ca_pem))
    except Exception:
        log.exception("metrics server not registered")
        return False
    return True


class EmbeddedMetricsServer:
    def __init__(self, server: Any, args: Any, component_client: Callable[..., Any]) -> None:
        self.server = server
        self.address = server.advertise_address
        self.writer = component_client(server, "system:apiserver", ["system:masters"], "kube-apiserver/pyk8s")
        reader = component_client(server, addon.SERVICE_ACCOUNT_USER, addon.SERVICE_ACCOUNT_GROUPS,
                                  "metrics-server/pyk8s")
        cert, key = issue_client_cert(server.pki, addon.SERVICE_ACCOUNT_USER, addon.SERVICE_ACCOUNT_GROUPS)
        serving_cert, serving_key = _serving_cert(server)
        resolution = float(getattr(args, "metric_resolution", 15.0) or 15.0)
        opts = MetricsServerOptions(bind_address=self.address, secure_port=0, metric_resolution=resolution)
        self.metrics = MetricsServer(reader, opts, serving_cert, serving_key, kubelet_client_context(cert, key))
        self.ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metrics-server")

    async def _run(self) -> None:
        try:
            await addon.ensure(self.writer, addon.identity_objects())  # RBAC first: the reader needs it
            await self.metrics.start()
        except OSError as e:
            log.error("metrics server not started: cannot listen on %s: %s", self.address, e)
            return
        except Exception:
            log.exception("metrics server not started")
            return
        if await _register(self.writer, self.address, self.metrics.port, self.server.pki.ca_pem):
            self.ready.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self.metrics.stop()
        await self.metrics.client.close()
        await self.writer.close()


def _serving_cert(server: Any) -> tuple[bytes, bytes]:
    svc = f"{addon.NAME}.{addon.NAMESPACE}.svc"
    return issue_serving_cert(server.pki, svc, [svc, f"{svc}.cluster.local", server.advertise_address])


def _free_port(address: str) -> int:
    import socket

    with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:
        s.bind((address, 0))
        return int(s.getsockname()[1])


class MetricsServerProcess:
    """`pyk8s metrics-server` as a supervised child of the server, on a port chosen here (kept
    across its restarts, so the EndpointSlice stays true)."""

    def __init__(self, server: Any, args: Any, component_client: Callable[..., Any]) -> None:
        import sys

        from ..client.kubeconfig import write_kubeconfig
        from ..datadir import ensure_private_dir, write_atomic
        from ..supervisor import ChildProcess

        self.server = server
        self.address = server.advertise_address
        # first: an advertised address this host does not have (a load balancer's, as HA set-ups give)
        # cannot be listened on; OSError then, and the server runs on without the metrics API
        self.port = _free_port(self.address)
        self.writer = component_client(server, "system:apiserver", ["system:masters"], "kube-apiserver/pyk8s")
        data_dir = os.path.abspath(server.config.data_dir)
        conf = os.path.join(data_dir, "metrics-server.conf")
        cert, key = issue_client_cert(server.pki, addon.SERVICE_ACCOUNT_USER, addon.SERVICE_ACCOUNT_GROUPS)
        write_kubeconfig(conf, server.url, server.pki.ca_cert_path.read_bytes(), cert, key,
                         user=addon.SERVICE_ACCOUNT_USER)
        tls_dir = os.path.join(data_dir, "metrics-server")
        ensure_private_dir(tls_dir)
        serving_cert, serving_key = _serving_cert(server)
        crt, key_path = os.path.join(tls_dir, "tls.crt"), os.path.join(tls_dir, "tls.key")
        write_atomic(key_path, serving_key, 0o600)
        write_atomic(crt, serving_cert, 0o644)
        resolution = float(getattr(args, "metric_resolution", 15.0) or 15.0)
        argv = [sys.executable, "-m", "pyk8s.cli", "metrics-server", "--kubeconfig", conf,
                "--bind-address", self.address, "--secure-port", str(self.port), "--tls-cert-file", crt,
                "--tls-private-key-file", key_path, "--metric-resolution", f"{resolution}s",
                "--kubelet-insecure-tls", "--v", str(getattr(args, "v", 0) or 0)]
        self.child = ChildProcess("metrics-server", argv, b"pyk8s metrics-server: serving",
                                  identity=["metrics-server", "--kubeconfig", conf])
        self.ready = asyncio.Event()
        self._task = asyncio.get_running_loop().create_task(self._run(), name="metrics-server")

    async def _run(self) -> None:
        try:
            await addon.ensure(self.writer, addon.identity_objects())  # RBAC before the child reads
        except Exception:
            log.exception("metrics server not started")
            return
        self.child.start()
        await self.child.ready.wait()
        if await _register(self.writer, self.address, self.port, self.server.pki.ca_pem):
            self.ready.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self.child.stop()
        await self.writer.close()


def start(server: Any, args: Any, component_client: Callable[..., Any]) -> Any:
    """What `pyk8s server` runs for the component `metrics-server`; None when it cannot listen on the
    server's advertised address (the server runs on without the metrics API, and says so)."""
    if getattr(args, "in_process_metrics_server", False):
        return EmbeddedMetricsServer(server, args, component_client)
    try:
        return MetricsServerProcess(server, args, component_client)
    except OSError as e:
        log.error("metrics server not started: cannot listen on %s: %s", server.advertise_address, e)
        return None
