"""The metrics server `pyk8s server` runs on its own loop (the component named `metrics-server`).

It comes up in the background once the API server is up, as metrics-server's pod would: its
identity (ServiceAccount kube-system/metrics-server and upstream's RBAC) is written first, as
the API server's addon writer; then it reads the API and scrapes kubelets as that
ServiceAccount (a client certificate for its user, from the cluster CA), serves on the
advertise address at a free port with a serving certificate from the cluster CA for
`metrics-server.kube-system.svc`, and publishes Service, EndpointSlice and APIService
`v1beta1.metrics.k8s.io` (addon.py) so the aggregator proxies metrics.k8s.io to it.
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

__all__ = ["EmbeddedMetricsServer", "kubelet_client_context"]

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


class EmbeddedMetricsServer:
    def __init__(self, server: Any, args: Any, component_client: Callable[..., Any]) -> None:
        self.server = server
        self.address = server.advertise_address
        self.writer = component_client(server, "system:apiserver", ["system:masters"], "kube-apiserver/pyk8s")
        reader = component_client(server, addon.SERVICE_ACCOUNT_USER, addon.SERVICE_ACCOUNT_GROUPS,
                                  "metrics-server/pyk8s")
        cert, key = issue_client_cert(server.pki, addon.SERVICE_ACCOUNT_USER, addon.SERVICE_ACCOUNT_GROUPS)
        svc = f"{addon.NAME}.{addon.NAMESPACE}.svc"
        serving_cert, serving_key = issue_serving_cert(server.pki, svc, [svc, f"{svc}.cluster.local", self.address])
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
        if ipaddress.ip_address(self.address).is_loopback:
            # EndpointSlices refuse loopback addresses
            log.warning("metrics server listens on %s port %d: not registered as v1beta1.metrics.k8s.io",
                        self.address, self.metrics.port)
            return
        try:
            await addon.ensure(self.writer, addon.service_objects(self.address, self.metrics.port,
                                                                  self.server.pki.ca_pem))
        except Exception:
            log.exception("metrics server not registered")
            return
        self.ready.set()

    async def stop(self) -> None:
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError, Exception):
            await self._task
        await self.metrics.stop()
        await self.metrics.client.close()
        await self.writer.close()
