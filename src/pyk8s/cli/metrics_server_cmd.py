"""Flags of the built-in metrics server (docs/metrics-server.md)."""

from __future__ import annotations

import argparse
import re
from typing import Any

__all__ = ["add_server_flags", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(s: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") in seconds; argparse's error otherwise."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not s or "".join(n + u for n, u in parts) != s:
        raise argparse.ArgumentTypeError(f'time: invalid duration "{s}"')
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f'metric resolution should be a positive duration, got "{s}"')
    return seconds


def add_server_flags(p: Any) -> None:
    p.add_argument("--metric-resolution", type=parse_duration, default=15.0, metavar="DURATION",
                   help="how often the built-in metrics server scrapes every kubelet's /metrics/resource, as "
                        "metrics-server's flag (default 15s)")
    p.add_argument("--in-process-metrics-server", action="store_true",
                   help="run the built-in metrics server on this process's event loop instead of as its own "
                        "`pyk8s metrics-server` process (less memory; its scrapes then share the API's core)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "metrics-server",
        help="run a metrics server (metrics.k8s.io/v1beta1) on its own, as upstream's metrics-server",
        description="Scrape every node's kubelet /metrics/resource and serve NodeMetrics and PodMetrics over "
        "HTTPS as an aggregated API server (docs/metrics-server.md). The kubeconfig's identity needs upstream's "
        "metrics-server RBAC (ClusterRole system:metrics-server, system:auth-delegator, and the "
        "extension-apiserver-authentication-reader Role in kube-system); register it with an APIService "
        "v1beta1.metrics.k8s.io and run `pyk8s server --disable metrics-server`.",
    )
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the identity to read the API and kubelets as")
    p.add_argument("--bind-address", default="0.0.0.0", help="address to serve on (default 0.0.0.0)")
    p.add_argument("--secure-port", type=int, default=4443, help="HTTPS port (default 4443; 0 picks a free one)")
    p.add_argument("--tls-cert-file", default=None, help="serving certificate (PEM); default a self-signed one, "
                   "as metrics-server makes")
    p.add_argument("--tls-private-key-file", default=None, help="the serving certificate's key (PEM)")
    p.add_argument("--metric-resolution", type=parse_duration, default=15.0, metavar="DURATION",
                   help="how often every kubelet is scraped (default 15s)")
    p.add_argument("--kubelet-insecure-tls", action="store_true",
                   help="do not verify kubelets' serving certificates (otherwise verified against "
                        "--kubelet-certificate-authority, default the kubeconfig's CA)")
    p.add_argument("--kubelet-certificate-authority", default=None, metavar="FILE",
                   help="CA bundle for kubelets' serving certificates")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v")


async def _main(args: Any) -> int:
    import asyncio
    import signal
    import socket
    import ssl
    import sys

    from ..client import Client
    from ..client.kubeconfig import KubeconfigError, load_kubeconfig
    from ..metricsserver.server import MetricsServer, MetricsServerOptions
    from ..pki import self_signed_serving_cert

    try:
        kc = load_kubeconfig(args.kubeconfig)
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="metrics-server/pyk8s")
        if bool(args.tls_cert_file) != bool(args.tls_private_key_file):
            raise ValueError("--tls-cert-file and --tls-private-key-file go together")
        if args.tls_cert_file:
            with open(args.tls_cert_file, "rb") as f1, open(args.tls_private_key_file, "rb") as f2:
                cert, key = f1.read(), f2.read()
        else:
            host = socket.gethostname()
            cert, key = self_signed_serving_cert(host, ["localhost", "127.0.0.1", host])
        kubelet = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        kubelet.check_hostname = False  # kubelets are dialled by address
        if args.kubelet_insecure_tls:
            kubelet.verify_mode = ssl.CERT_NONE
        elif args.kubelet_certificate_authority:
            kubelet.load_verify_locations(cafile=args.kubelet_certificate_authority)
        elif kc.ca_pem():
            kubelet.load_verify_locations(cadata=(kc.ca_pem() or b"").decode())
        if kc.has_client_cert:
            kc._load_client_cert(kubelet)
    except (OSError, ValueError, KubeconfigError) as e:
        print(f"pyk8s metrics-server: {e}", file=sys.stderr)
        return 1
    opts = MetricsServerOptions(bind_address=args.bind_address, secure_port=args.secure_port,
                                metric_resolution=args.metric_resolution)
    ms = MetricsServer(client, opts, cert, key, kubelet, kc.token)
    try:
        await ms.start()
    except (OSError, TimeoutError) as e:
        print(f"pyk8s metrics-server: cannot start: {e}", file=sys.stderr)
        await ms.stop()
        await client.close()
        return 1
    print(f"pyk8s metrics-server: serving metrics.k8s.io/v1beta1 on {args.bind_address} port {ms.port}", flush=True)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    await stop.wait()
    await ms.stop()
    await client.close()
    return 0


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v)
