"""`pyk8s controller-manager`: run kube-controller-manager as its own process against any API server.

Several of them may run against one server: with --leader-elect (the default) only the holder of
the kube-system/kube-controller-manager Lease runs controllers, and, as upstream, a manager that
loses the Lease exits (status 1) so that its supervisor starts it afresh as a follower.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
from typing import Any

from .scheduler_cmd import add_secure_serving_flags, argparse_bool, start_secure_serving


def go_duration(text: str) -> float:
    """A Go duration flag value ("15s", "1m30s", "500ms") in seconds."""
    import argparse

    from ..api.protobuf import parse_go_duration

    try:
        seconds = parse_go_duration(text) / 1e9
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive: {text!r}")
    return seconds


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "controller-manager",
        help="run the controllers against an API server (as kube-controller-manager)",
        description="Run the core control loops (replicaset, deployment, job, garbage collector, ...) "
        "as API clients, under leader election on a Lease.",
    )
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the identity to act as")
    p.add_argument("--controllers", default="*",
                   help="controllers to run: '*' all enabled by default, 'foo' enables foo, '-foo' disables "
                        "foo (upstream names or their aliases, comma separated; default '*'); "
                        "'local-path-provisioner', not upstream's, runs only when named")
    p.add_argument("--leader-elect", default=True, action=argparse_bool(), nargs="?", const=True,
                   help="take the leader Lease before running controllers (default true)")
    p.add_argument("--leader-elect-lease-duration", type=go_duration, default=15.0, metavar="DURATION",
                   help="how long followers wait after the last renewal before taking over (default 15s)")
    p.add_argument("--leader-elect-renew-deadline", type=go_duration, default=10.0, metavar="DURATION",
                   help="how long the leader keeps trying to renew before it stops leading (default 10s)")
    p.add_argument("--leader-elect-retry-period", type=go_duration, default=2.0, metavar="DURATION",
                   help="how long clients wait between tries to acquire or renew (default 2s)")
    p.add_argument("--leader-elect-resource-name", default="kube-controller-manager",
                   help="name of the Lease (default kube-controller-manager)")
    p.add_argument("--leader-elect-resource-namespace", default="kube-system",
                   help="namespace of the Lease (default kube-system)")
    p.add_argument("--root-ca-file", default=None,
                   help="CA bundle published as kube-root-ca.crt in every namespace (default: the kubeconfig's CA)")
    p.add_argument("--cluster-signing-cert-file", default=None, metavar="FILE",
                   help="PEM CA certificate the csrsigning controller issues kubernetes.io/* certificates with")
    p.add_argument("--cluster-signing-key-file", default=None, metavar="FILE",
                   help="PEM private key of --cluster-signing-cert-file (without both, CSRs are not signed)")
    p.add_argument("--cluster-signing-duration", type=go_duration, default=365 * 24 * 3600.0, metavar="DURATION",
                   help="the longest lifetime of a signed certificate; a CSR's expirationSeconds may ask "
                        "for less (default 8760h0m0s)")
    p.add_argument("--allocate-node-cidrs", default=False, action=argparse_bool(), nargs="?", const=True,
                   help="give each Node a pod CIDR from --cluster-cidr (node-ipam-controller; default false)")
    p.add_argument("--cluster-cidr", default="", help="the pods' network, e.g. 10.244.0.0/16")
    p.add_argument("--node-cidr-mask-size", type=int, default=0,
                   help="prefix length of each Node's pod CIDR (default 24 for IPv4, 64 for IPv6)")
    add_secure_serving_flags(p, 10257)
    p.add_argument("--v", type=int, default=0, help="log verbosity (0-4)")
    from ..controllers.podautoscaler import options as hpa_flags

    hpa_flags.add_flags(p)


def _root_ca(args: Any) -> bytes:
    if args.root_ca_file:
        with open(args.root_ca_file, "rb") as f:
            return f.read()
    # as upstream: without --root-ca-file, the CA the kubeconfig trusts
    from ..client.kubeconfig import load_kubeconfig

    return load_kubeconfig(args.kubeconfig).ca_pem() or b""


def validate(args: Any) -> str | None:
    """Upstream's checks of the signing files and leader election flags."""
    if bool(getattr(args, "cluster_signing_cert_file", None)) != bool(getattr(args, "cluster_signing_key_file", None)):
        return "cannot specify --cluster-signing-cert-file without --cluster-signing-key-file or the other way around"
    if getattr(args, "allocate_node_cidrs", False):
        from ..controllers.nodeipam import CIDRSet, default_mask_size

        if not args.cluster_cidr:
            return "--cluster-cidr is required when --allocate-node-cidrs is true"
        try:
            CIDRSet(args.cluster_cidr, args.node_cidr_mask_size or default_mask_size(args.cluster_cidr))
        except ValueError as e:
            return f"--cluster-cidr {args.cluster_cidr}: {e}"
    if not args.leader_elect:
        return None
    if args.leader_elect_lease_duration <= args.leader_elect_renew_deadline:
        return "leaseDuration must be greater than renewDeadline"
    if args.leader_elect_renew_deadline <= 1.2 * args.leader_elect_retry_period:
        return "renewDeadline must be greater than retryPeriod*JitterFactor"
    return None


async def _main(args: Any) -> int:
    from ..client import Client
    from ..controllers.manager import ControllerManager, select_controllers
    from ..controllers.podautoscaler import options as hpa_flags

    try:
        names = select_controllers(args.controllers.split(","))
        problem = validate(args)
        if problem:
            raise ValueError(problem)
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="kube-controller-manager/pyk8s")
        root_ca = _root_ca(args)
        if args.cluster_signing_cert_file:  # as upstream, unreadable signing files stop the start
            from ..controllers.csrsigning import load_signing_ca

            load_signing_ca(args.cluster_signing_cert_file, args.cluster_signing_key_file)
    except (OSError, ValueError) as e:
        print(f"pyk8s controller-manager: {e}", file=sys.stderr)
        return 1
    options = {"leader_election": {"name": args.leader_elect_resource_name,
                                   "namespace": args.leader_elect_resource_namespace,
                                   "lease_duration": args.leader_elect_lease_duration,
                                   "renew_deadline": args.leader_elect_renew_deadline,
                                   "retry_period": args.leader_elect_retry_period},
               "cluster_signing_cert_file": args.cluster_signing_cert_file,
               "cluster_signing_key_file": args.cluster_signing_key_file,
               "cluster_signing_duration": args.cluster_signing_duration,
               "allocate_node_cidrs": args.allocate_node_cidrs, "cluster_cidr": args.cluster_cidr,
               "node_cidr_mask_size": args.node_cidr_mask_size, **hpa_flags.from_args(args)}
    cm = ControllerManager(client, names, leader_elect=args.leader_elect, root_ca=root_ca, options=options,
                           exit_on_lost_leadership=True)
    from ..metrics.component import ComponentMetrics

    metrics = ComponentMetrics()
    cm.enable_metrics(metrics)
    secure = await start_secure_serving(args, client, metrics.registry, "kube-controller-manager")
    await cm.start()
    from .. import gctune

    gctune.freeze()
    lease = f"{args.leader_elect_resource_namespace}/{args.leader_elect_resource_name}"
    print(f"pyk8s controller-manager: running as {cm.identity}"
          + (f" (leader election on Lease {lease})" if args.leader_elect else ""), flush=True)
    stop = asyncio.Event()
    with contextlib.suppress(NotImplementedError):  # pragma: no cover (no signal handlers on this platform)
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    stopping = asyncio.ensure_future(stop.wait())
    ended = asyncio.ensure_future(cm.wait())
    await asyncio.wait({stopping, ended}, return_when=asyncio.FIRST_COMPLETED)
    stopping.cancel()
    lost = ended.done() and cm.lost_leadership
    if secure is not None:
        await secure.stop()
    await cm.stop()
    if lost:
        print(f"pyk8s controller-manager: leaderelection lost ({cm.identity})", file=sys.stderr, flush=True)
        return 1
    return 0


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v)
