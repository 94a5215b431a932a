"""`pyk8s scheduler`: run kube-scheduler as its own process against any API server."""

from __future__ import annotations

import asyncio
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "scheduler",
        help="run the scheduler against an API server (as kube-scheduler)",
        description="Watch pods and nodes through the API and bind pending pods to nodes, "
        "with the default v1.33 profile or the profiles of a KubeSchedulerConfiguration.",
    )
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the identity to act as")
    p.add_argument("--config", default=None, help="KubeSchedulerConfiguration file (YAML or JSON)")
    p.add_argument("--leader-elect", default=True, action=argparse_bool(), nargs="?", const=True,
                   help="take the kube-system/kube-scheduler Lease before scheduling (default true)")
    p.add_argument("--parallel-binds", type=int, default=128, help="bindings in flight at most (default 128)")
    add_secure_serving_flags(p, 10259)
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v: 0 startup, shutdown, "
                   "warnings; 2 per-object actions; 3 every API request (httplog); 4 debug")


def add_secure_serving_flags(p: Any, port: int) -> None:
    """upstream's --secure-port / --bind-address: /metrics over HTTPS with delegated authn/authz (docs/metrics.md)."""
    p.add_argument("--secure-port", type=int, default=port, metavar="PORT",
                   help=f"serve /metrics and /healthz over HTTPS on this port, authenticated with TokenReview or "
                        f"a client certificate and authorized with SubjectAccessReview (default {port}; 0: not served)")
    p.add_argument("--bind-address", default="0.0.0.0", metavar="IP",
                   help="the address --secure-port listens on (default 0.0.0.0)")


async def start_secure_serving(args: Any, client: Any, registry: Any, component: str) -> Any:
    """The component's secure port, or None with --secure-port 0."""
    if not args.secure_port:
        return None
    from ..client.kubeconfig import load_kubeconfig
    from ..metrics.serve import SecureMetricsServer

    srv = SecureMetricsServer(client, registry, args.secure_port, args.bind_address,
                              ca_pem=load_kubeconfig(args.kubeconfig).ca_pem(), component=component)
    try:
        await srv.start()
    except OSError as e:  # the port taken (another instance on this machine): the component still runs
        print(f"pyk8s {args.command}: WARNING: --secure-port {args.secure_port} not served: {e}", file=sys.stderr,
              flush=True)
        return None
    return srv


def argparse_bool() -> Any:
    """--flag, --flag=true, --flag=false, as Go's boolean flags (strconv.ParseBool's spellings)."""
    import argparse

    class BoolAction(argparse.Action):
        def __call__(self, parser: Any, namespace: Any, values: Any, option_string: str | None = None) -> None:
            if isinstance(values, str):
                v = values.strip().lower()
                if v not in ("true", "false", "1", "0", "t", "f"):
                    parser.error(f"{option_string}: invalid boolean value {values!r}")
                values = v in ("true", "1", "t")
            setattr(namespace, self.dest, bool(values))

    return BoolAction


def load_config(path: str | None) -> dict[str, Any] | None:
    if not path:
        return None
    import yaml

    with open(path) as f:
        cfg = yaml.safe_load(f)
    if not isinstance(cfg, dict):
        raise ValueError(f"{path}: not a KubeSchedulerConfiguration")
    return cfg


async def _main(args: Any) -> int:
    from ..client import Client
    from ..scheduler.runner import SchedulerRunner

    try:
        config = load_config(args.config)
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="kube-scheduler/pyk8s")
        runner = SchedulerRunner(client, config, leader_elect=args.leader_elect, parallel_binds=args.parallel_binds)
    except (OSError, ValueError) as e:
        print(f"pyk8s scheduler: {e}", file=sys.stderr)
        return 1
    from ..metrics.component import ComponentMetrics

    metrics = ComponentMetrics()
    runner.enable_metrics(metrics)
    secure = await start_secure_serving(args, client, metrics.registry, "kube-scheduler")
    await runner.start()
    from .. import gctune

    gctune.freeze()
    print("pyk8s scheduler: running", flush=True)
    from .signals import until_terminated

    await until_terminated()
    if secure is not None:
        await secure.stop()
    await runner.stop()
    return 0


def run(args: Any) -> int:
    from .. import klog
    from ..profiling import profile_from_env
    from ..stalls import watched

    klog.setup(args.v)
    profile_from_env(".scheduler")
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    try:
        return asyncio.run(watched(_main(args)))
    except KeyboardInterrupt:
        return 0
