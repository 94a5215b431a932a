"""`pyk8s dns`: the cluster DNS server (our CoreDNS) against any API server, and the DNS flags
of `pyk8s server`, which runs the same server itself (docs/dns.md)."""

from __future__ import annotations

import sys
from typing import Any


def _common_flags(p: Any) -> None:
    p.add_argument("--cluster-domain", default="cluster.local",
                   help="the cluster's DNS domain (default cluster.local)")
    p.add_argument("--cluster-dns", default=None, metavar="IPS",
                   help="the cluster DNS Service's address(es), comma separated (default the tenth address of "
                        "the service range, 10.96.0.10)")


def add_server_flags(p: Any) -> None:
    """`pyk8s server`: where its DNS server listens; its local kubelet gets the same domain and address."""
    _common_flags(p)
    p.add_argument("--dns-bind-address", default=None, metavar="IP",
                   help="address the cluster DNS server listens on (default the advertise address, which pods "
                        "reach; kube-system/kube-dns's EndpointSlice names it)")
    p.add_argument("--dns-port", type=int, default=0, metavar="PORT",
                   help="UDP and TCP port of the cluster DNS server (default 0: any free port; the service "
                        "proxy maps the kube-dns Service's port 53 to it)")


def _upstream(text: str) -> tuple[str, int]:
    """IP, IP:PORT or [IPv6]:PORT."""
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        return host, int(rest[1:]) if rest.startswith(":") else 53
    if text.count(":") == 1:
        host, port = text.split(":")
        return host, int(port)
    return text, 53


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "dns",
        help="run the cluster DNS server (as CoreDNS with its kubernetes plugin)",
        description="Answer <svc>.<ns>.svc.<domain>, headless, SRV, pod, ExternalName and PTR records from "
        "Services and EndpointSlices watched through the API, and forward other names to the node's "
        "resolvers. The kubeconfig's identity needs list/watch on services, endpointslices and namespaces "
        "(ClusterRole system:coredns).",
    )
    p.add_argument("--kubeconfig", required=True, help="kubeconfig of the identity to read the API as")
    p.add_argument("--bind-address", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    p.add_argument("--port", type=int, default=53, help="UDP and TCP port (default 53; 0 picks a free one)")
    _common_flags(p)
    p.add_argument("--upstream", action="append", default=[], metavar="IP[:PORT]",
                   help="resolver for names outside the cluster domain (repeatable; default the nameservers "
                        "of --resolv-conf)")
    p.add_argument("--resolv-conf", default="/etc/resolv.conf", help="where the node's resolvers are listed")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v")


async def _main(args: Any) -> int:
    from ..client import Client
    from ..dns.addon import cluster_dns_ips
    from ..dns.runner import ClusterDNS, DNSOptions

    try:
        client = Client.from_kubeconfig(args.kubeconfig, user_agent="coredns/pyk8s")
        opts = DNSOptions(bind_address=args.bind_address, port=args.port, cluster_domain=args.cluster_domain,
                          dns_ips=cluster_dns_ips(args.cluster_dns, None), resolv_conf=args.resolv_conf,
                          upstreams=[_upstream(u) for u in args.upstream] or None)
    except (OSError, ValueError) as e:
        print(f"pyk8s dns: {e}", file=sys.stderr)
        return 1
    cdns = ClusterDNS(client, opts, owns_client=True)
    try:
        await cdns.start()
    except OSError as e:
        print(f"pyk8s dns: cannot listen on {args.bind_address}:{args.port}: {e}", file=sys.stderr)
        await cdns.stop()
        return 1
    print(f"pyk8s dns: listening on {args.bind_address} port {cdns.port} (UDP and TCP)", flush=True)
    from .signals import until_terminated

    await until_terminated()
    await cdns.stop()
    return 0


def run(args: Any) -> int:
    from .main import _run

    return _run(_main(args), args.v)
