"""`pyk8s proxy`: the service proxy (kube-proxy, nftables mode) for one node."""

from __future__ import annotations

import argparse
import ipaddress
import socket
import sys
from typing import Any

from .controller_manager_cmd import go_duration


def _cidrs(text: str) -> list[str]:
    out = []
    for part in [p.strip() for p in text.split(",") if p.strip()]:
        try:
            out.append(str(ipaddress.ip_network(part, strict=False)))
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid CIDR {part!r}") from None
    return out


def _table_name(text: str) -> str:
    import re

    if not re.fullmatch(r"[A-Za-z][A-Za-z0-9_.-]{0,63}", text):
        raise argparse.ArgumentTypeError(f"invalid nftables table name {text!r} (letters, digits, _ . -; "
                                         "at most 64 characters, starting with a letter)")
    return text


def _duration(text: str) -> float:
    return 0.0 if text.strip() in ("0", "0s") else go_duration(text)


def _bind_address(text: str) -> str:
    import argparse

    from ..metrics.serve import parse_bind_address

    try:
        port = parse_bind_address(text, 10249)[1]
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r}: not IP:PORT")
    return text


def add_flags(p: Any, local_default: str = "none", default: list[str] | None = None) -> None:
    """The flags `pyk8s proxy` shares with upstream kube-proxy (and `pyk8s agent` passes on)."""
    p.add_argument("--cluster-cidr", type=_cidrs, default=list(default or []), metavar="CIDRS",
                   help="pod network(s), comma separated (one per family): traffic to a ClusterIP from outside "
                        f"them is masqueraded (default {local_default})")
    p.add_argument("--nodeport-addresses", type=_cidrs, default=[], metavar="CIDRS",
                   help="serve NodePorts only on local addresses in these CIDRs (default: every local address)")
    p.add_argument("--min-sync-period", type=_duration, default=0.1, metavar="DURATION",
                   help="least time between two syncs of the rules; events in between are applied together "
                        "(default 100ms, so that a readiness change takes effect well within a second)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("proxy", help="run the service proxy for a node (as kube-proxy, nftables mode)",
                       description="Watch Services and EndpointSlices through the API and program the node's "
                                   "nftables: ClusterIP, NodePort and LoadBalancer traffic to the endpoints.")
    p.add_argument("--kubeconfig", default=None, help="kubeconfig of the identity to act as (system:kube-proxy)")
    p.add_argument("--hostname-override", default=None, help="this node's name (default: the hostname, lowercased)")
    p.add_argument("--proxy-mode", choices=["nftables"], default="nftables",
                   help="how Services are implemented: only nftables here (no iptables or IPVS mode)")
    add_flags(p)
    p.add_argument("--nftables-table", type=_table_name, default="pyk8s-proxy", metavar="NAME",
                   help="name of the nftables table(s), ip and ip6 (default pyk8s-proxy)")
    p.add_argument("--metrics-bind-address", default="127.0.0.1:10249", metavar="IP:PORT", type=_bind_address,
                   help="serve /metrics and /healthz over plain HTTP here, as upstream (default 127.0.0.1:10249; "
                        "empty or port 0: not served)")
    p.add_argument("--cleanup", action="store_true", help="remove the proxy's nftables tables and exit")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v")


async def _main(args: Any) -> int:
    from ..client import Client
    from ..proxy import nft
    from ..proxy.proxier import Proxier, ProxyConfig, fetch_node, node_families

    if args.cleanup:
        for fam in ("ip", "ip6"):
            await nft.delete_table(fam, args.nftables_table)
        return 0
    if not args.kubeconfig:
        print("pyk8s proxy: --kubeconfig is required", file=sys.stderr)
        return 2
    if not nft.available():
        print("pyk8s proxy: the nft tool is not installed (Debian package nftables)", file=sys.stderr)
        return 1
    node_name = (args.hostname_override or socket.gethostname()).lower()
    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="kube-proxy/pyk8s")
    except (OSError, ValueError) as e:
        print(f"pyk8s proxy: {e}", file=sys.stderr)
        return 1
    node = await fetch_node(client, node_name)
    proxier = Proxier(client, ProxyConfig(node_name=node_name, table=args.nftables_table,
                                          cluster_cidrs=args.cluster_cidr, nodeport_cidrs=args.nodeport_addresses,
                                          min_sync_period=args.min_sync_period, families=node_families(node)))
    try:
        await proxier.start()
    except TimeoutError:
        # the informers retry for ever (a 403 is the usual cause: an identity without system:node-proxier)
        print("pyk8s proxy: could not list Services and EndpointSlices within 60s (is the identity bound to "
              "system:node-proxier?)", file=sys.stderr)
        await proxier.stop()
        await client.close()
        return 1
    metrics_server = await _serve_metrics(args, client, proxier)
    print(f"pyk8s proxy: running for node {node_name}", flush=True)
    from .signals import until_terminated

    await until_terminated()
    if metrics_server is not None:
        await metrics_server.stop()
    # as upstream: stopping leaves the rules (a restart must not drop connections); --cleanup removes them
    await proxier.stop()
    await client.close()
    return 0


async def _serve_metrics(args: Any, client: Any, proxier: Any) -> Any:
    """kube-proxy's --metrics-bind-address: kubeproxy_*, rest_client_* and process_* (docs/metrics.md)."""
    return await serve_metrics(args.metrics_bind_address, client, proxier, "pyk8s proxy: --metrics-bind-address")


async def serve_metrics(bind: str, client: Any, proxier: Any, what: str) -> Any:
    """The proxier's families (and its own client's rest_client_*, when it has one) on plain HTTP at
    `bind`; None when `bind` is empty or port 0, or the port is taken (the rules are still programmed)."""
    from ..metrics.component import ComponentMetrics
    from ..metrics.serve import PlainMetricsServer, parse_bind_address

    if not bind:
        return None
    host, port = parse_bind_address(bind, 10249)
    if not port:
        return None
    metrics = ComponentMetrics()
    metrics.add("proxy", proxier.metrics)
    if client is not None:
        client.metrics = metrics.rest_client
    srv = PlainMetricsServer(metrics.registry, host, port)
    try:
        await srv.start()
    except OSError as e:  # another kube-proxy holds the port
        print(f"{what} {bind}: {e}", file=sys.stderr, flush=True)
        return None
    return srv


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v, use_uvloop=False)
