"""`pyk8s netpol`: enforce NetworkPolicies on one node, alone (`pyk8s agent` and `pyk8s server` run it too)."""

from __future__ import annotations

import socket
import sys
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("netpol", help="enforce NetworkPolicies on this node with nftables",
                       description="Watch NetworkPolicies, Pods and Namespaces through the API and program this "
                                   "node's nftables table so that its pods get only the traffic the policies "
                                   "allow (docs/networkpolicy.md).")
    p.add_argument("--kubeconfig", default=None,
                   help="kubeconfig (required unless --cleanup) of an identity that may list and watch networkpolicies, pods and namespaces")
    p.add_argument("--hostname-override", default=None,
                   help="the node whose pods to isolate (default: the hostname, lowercased)")
    p.add_argument("--table", default="pyk8s-netpol", help="the nftables table (family inet) to own (default "
                   "pyk8s-netpol)")
    p.add_argument("--cleanup", action="store_true", help="remove the table and exit")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v: 0 startup, shutdown, "
                   "warnings; 2 per-object actions; 3 every API request (httplog); 4 debug")


async def _main(args: Any) -> int:
    from ..client import Client
    from ..netpol.controller import NetworkPolicyConfig, NetworkPolicyController
    from ..netpol.nftables import NftError, render_delete, run_nft

    if args.cleanup:
        try:
            await run_nft(render_delete(args.table))
        except (OSError, NftError) as e:
            print(f"pyk8s netpol: {e}", file=sys.stderr)
            return 1
        return 0
    if not args.kubeconfig:
        print("pyk8s netpol: --kubeconfig is required", file=sys.stderr)
        return 2
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="network-policy/pyk8s")
    except (OSError, ValueError) as e:
        print(f"pyk8s netpol: {e}", file=sys.stderr)
        return 1
    node = (args.hostname_override or socket.gethostname()).lower()
    ctl = NetworkPolicyController(client, NetworkPolicyConfig(node_name=node, table=args.table))
    await ctl.start()
    print(f"pyk8s netpol: running for node {node} (table inet {args.table})", flush=True)
    from .signals import until_terminated

    await until_terminated()
    await ctl.stop()
    await client.close()
    return 0


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v, use_uvloop=False)
