"""`pyk8s dashboard`: the web UI on a local port (docs/dashboard.md)."""

from __future__ import annotations

import os
import sys
from typing import Any

__all__ = ["add_parser", "add_server_flags", "run"]


def add_server_flags(p: Any) -> None:
    p.add_argument("--dashboard", action="store_true",
                   help="also serve the web dashboard (`pyk8s dashboard --auth token` as a child process: each "
                        "user signs in with a bearer token; docs/dashboard.md); `--disable dashboard` overrides it")
    p.add_argument("--dashboard-address", default="127.0.0.1", metavar="ADDRESS",
                   help="the dashboard's address (default 127.0.0.1)")
    p.add_argument("--dashboard-port", type=int, default=9090, metavar="PORT",
                   help="the dashboard's port (default 9090; 0 picks a free one)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dashboard",
        help="serve the web dashboard on 127.0.0.1, acting with your kubeconfig's or a pasted token's identity",
        description="A web UI for the cluster (docs/dashboard.md). Every API call goes out with the user's own "
        "credentials, so RBAC decides what each user sees and may do. kubeconfig mode (the default) acts as "
        "the kubeconfig's user, like `kubectl proxy`, and prints a URL with an access secret made at start; token "
        "mode shows a sign-in page where a bearer token is pasted.",
    )
    p.add_argument("--kubeconfig", default=None,
                   help="kubeconfig of the cluster (default $KUBECONFIG, else ~/.kube/config)")
    p.add_argument("--context", default=None, help="the kubeconfig context to use (default its current one)")
    p.add_argument("--address", default="127.0.0.1",
                   help="address to serve on (default 127.0.0.1; the page answers only Host headers naming "
                        "127.0.0.1, localhost, [::1] or this address)")
    p.add_argument("--port", type=int, default=9090, help="port to serve on (default 9090; 0 picks a free one)")
    p.add_argument("--auth", choices=["kubeconfig", "token"], default="kubeconfig",
                   help="kubeconfig: act as the kubeconfig's user (default); token: each user signs in with a "
                        "bearer token, and only the kubeconfig's (or --server's) address and CA are used")
    p.add_argument("--server", default=None,
                   help="token mode without a kubeconfig: the API server's URL (with --certificate-authority)")
    p.add_argument("--certificate-authority", default=None, metavar="FILE",
                   help="token mode with --server: the CA bundle the API server's certificate is checked against")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v")


def _kubeconfig_path(args: Any) -> str:
    env = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return str(args.kubeconfig or env or os.path.expanduser("~/.kube/config"))


def _upstream(args: Any) -> Any:
    from ..client.kubeconfig import load_kubeconfig
    from ..dashboard.upstream import Upstream, for_tokens, from_kubeconfig

    if args.auth == "token" and args.server:
        return for_tokens(args.server, args.certificate_authority)
    path = _kubeconfig_path(args)
    if args.auth == "kubeconfig":
        return from_kubeconfig(path, args.context)
    kc = load_kubeconfig(path, args.context)  # the cluster's address and CA only: never its user
    up: Upstream = for_tokens(kc.server, kc.ca_file, kc.insecure)
    if kc.ca_data and up.ssl_context is not None:
        up.ssl_context.load_verify_locations(cadata=kc.ca_data.decode("ascii"))
    return up


async def _main(args: Any) -> int:
    from ..client.kubeconfig import KubeconfigError
    from ..dashboard.server import DashboardConfig, DashboardServer
    from .signals import until_terminated

    if args.server and args.auth != "token":
        print("pyk8s dashboard: --server goes with --auth token", file=sys.stderr)
        return 2
    try:
        upstream = _upstream(args)
    except (OSError, ValueError, KubeconfigError) as e:
        print(f"pyk8s dashboard: {e}", file=sys.stderr)
        return 1
    dash = DashboardServer(DashboardConfig(args.address, args.port, args.auth), upstream)
    try:
        await dash.start()
    except OSError as e:
        print(f"pyk8s dashboard: cannot listen on {args.address} port {args.port}: {e}", file=sys.stderr)
        await dash.stop()
        return 1
    print(f"pyk8s dashboard: serving at {dash.url}", flush=True)
    try:
        await until_terminated()
    finally:
        await dash.stop()
    return 0


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v)
