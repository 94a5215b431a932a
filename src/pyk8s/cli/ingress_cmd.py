"""`pyk8s ingress`: the built-in Ingress controller on its own, against any API server
(`pyk8s server` and `pyk8s agent` run the same controller for their node; docs/ingress.md)."""

from __future__ import annotations

import argparse
import sys
from typing import Any


def add_flags(p: Any) -> None:
    """The data-path flags every command that runs the controller takes."""
    p.add_argument("--ingress-http-port", type=int, default=80, metavar="PORT",
                   help="the Ingress controller's HTTP port (default 80; 0 picks a free one)")
    p.add_argument("--ingress-https-port", type=int, default=443, metavar="PORT",
                   help="the Ingress controller's HTTPS port (default 443; 0 picks a free one)")
    p.add_argument("--ingress-bind-address", default="0.0.0.0", metavar="ADDR",
                   help="address the Ingress controller listens on (default 0.0.0.0)")


def config_from_args(args: Any, publish: list[str]) -> Any:
    from ..ingress.controller import IngressConfig

    return IngressConfig(bind_address=args.ingress_bind_address, http_port=args.ingress_http_port,
                         https_port=args.ingress_https_port, publish_addresses=publish)


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "ingress",
        help="run the Ingress controller (IngressClass pyk8s) against an API server",
        description="Serve networking.k8s.io/v1 Ingresses of the IngressClasses whose controller is "
        "pyk8s.io/ingress on this machine's HTTP and HTTPS ports, proxying to the ready endpoints "
        "of their Services, and fill in their status.loadBalancer with --publish-address.",
    )
    p.add_argument("--kubeconfig", required=True,
                   help="kubeconfig of the identity to act as (least privilege: user system:pyk8s-ingress, "
                        "which the server's bootstrap RBAC binds to ClusterRole system:pyk8s-ingress)")
    add_flags(p)
    p.add_argument("--publish-address", action="append", default=[], metavar="IP",
                   help="address written to the Ingresses' status.loadBalancer.ingress (repeatable; "
                        "default: this machine's node address, the default route's source)")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v")


async def start(kubeconfig: str, args: Any, publish: list[str], who: str) -> Any:
    """The controller acting as the kubeconfig's identity, serving; None (said on stderr) when it
    cannot start."""
    from ..client import Client
    from ..ingress.controller import IngressController

    client = Client.from_kubeconfig(kubeconfig, user_agent="pyk8s-ingress")
    ctrl = IngressController(client, config_from_args(args, publish))
    ctrl.owns_client = True
    try:
        await ctrl.start()
    except Exception as e:  # noqa: BLE001 - a port in use, an unreachable API: said, not a traceback
        print(f"{who}: cannot start the Ingress controller: {e}", file=sys.stderr)
        await ctrl.stop()
        return None
    print(f"{who}: Ingress controller running (http port {ctrl.server.http_port}, https port "
          f"{ctrl.server.https_port})", flush=True)
    return ctrl


async def _main(args: Any) -> int:
    from ..kubelet.node import default_node_ip

    ctrl = await start(args.kubeconfig, args, args.publish_address or [default_node_ip()], "pyk8s ingress")
    if ctrl is None:
        return 1
    from .signals import until_terminated

    await until_terminated()
    await ctrl.stop()
    return 0


def run(args: argparse.Namespace) -> int:
    from .main import _run

    return _run(_main(args), args.v)  # as `pyk8s server`: uvloop where installed
