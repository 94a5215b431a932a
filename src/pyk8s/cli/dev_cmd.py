"""`pyk8s dev cluster`: a server and N agent nodes on this machine, each node in its own network namespace."""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from typing import Any


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dev", help="development helpers: a multi-node cluster on this machine",
                       description="Development helpers.")
    dsub = p.add_subparsers(dest="dev_command", metavar="COMMAND")
    c = dsub.add_parser("cluster", help="a server and N nodes, each node in its own network namespace",
                        description="Bring up an API server on a host bridge and N `pyk8s agent` nodes, each in "
                                    "its own network namespace with its own address, pod CIDR, data dir and runc "
                                    "root, routed to each other by flannel. Runs until Ctrl-C (or `--down` from "
                                    "another shell), then removes every pod, process, namespace, link and route. "
                                    "Needs root, runc and the CNI plugins (docs/multinode.md).")
    c.add_argument("--nodes", type=int, default=3, help="how many agent nodes (default 3)")
    c.add_argument("--data-dir", default="./data/dev", help="server and node state, logs (default ./data/dev)")
    c.add_argument("--name", default="pyk8sdev",
                   help="prefix of every namespace, link and node name (default pyk8sdev; at most 10 characters)")
    c.add_argument("--node-network", default="10.99.0.0/24",
                   help="the nodes' network on the host bridge; the server listens on its .1 (default 10.99.0.0/24)")
    c.add_argument("--cluster-cidr", default="10.42.0.0/16", help="pod network, a /24 per node (default 10.42.0.0/16)")
    c.add_argument("--flannel-backend", choices=["auto", "host-gw", "vxlan"], default="auto",
                   help="how nodes route to each other's pods (default auto: host-gw between nodes on one "
                        "bridge, VXLAN between links)")
    c.add_argument("--links", type=int, default=1,
                   help="spread the nodes over this many bridges (subnets of --node-network) that the host routes "
                        "between, as nodes in different networks: with --flannel-backend auto, nodes on one link "
                        "use host-gw and nodes on different links VXLAN (default 1; more needs the host to "
                        "forward IPv4)")
    c.add_argument("--port", type=int, default=6443,
                   help="the API server's port on the bridge address (default 6443; 0 picks a free one)")
    c.add_argument("--down", action="store_true", help="tear down the cluster a running or killed "
                   "`pyk8s dev cluster` made with this --data-dir, and exit")
    c.add_argument("--v", type=int, default=0, help="log verbosity of the server and agents")


def _progress(msg: str) -> None:
    print(f"pyk8s dev cluster: {msg}", flush=True)


def run(args: argparse.Namespace) -> int:
    if getattr(args, "dev_command", None) != "cluster":
        print("usage: pyk8s dev cluster [--nodes N] [--down]", file=sys.stderr)
        return 2
    from ..devcluster import DevCluster, Options, TopologyError

    if os.geteuid() != 0:
        print("pyk8s dev cluster: needs root (network namespaces, runc)", file=sys.stderr)
        return 1
    data_dir = os.path.abspath(args.data_dir)
    if args.down:
        try:
            dc = DevCluster.from_state(data_dir, _progress)
        except FileNotFoundError:
            print(f"pyk8s dev cluster: no cluster recorded in {data_dir}", file=sys.stderr)
            return 1
        return _report(dc.down())
    if args.nodes < 1:
        print("pyk8s dev cluster: --nodes must be at least 1", file=sys.stderr)
        return 2
    if os.path.exists(os.path.join(data_dir, "devcluster.json")):
        print(f"pyk8s dev cluster: {data_dir} already has a cluster; run with --down first", file=sys.stderr)
        return 1
    try:
        dc = DevCluster(Options(data_dir=data_dir, nodes=args.nodes, prefix=args.name, node_network=args.node_network,
                                cluster_cidr=args.cluster_cidr, flannel_backend=args.flannel_backend,
                                links=args.links, port=args.port,
                                verbosity=args.v), _progress)
    except (TopologyError, ValueError) as e:
        print(f"pyk8s dev cluster: {e}", file=sys.stderr)
        return 2
    stop = threading.Event()
    for sig in (signal.SIGINT, signal.SIGTERM):
        signal.signal(sig, lambda *_: stop.set())
    try:
        dc.up()
    except Exception as e:  # noqa: BLE001 - up() has torn down what it made
        print(f"pyk8s dev cluster: {e}", file=sys.stderr)
        return 1
    print(dc.usage(), flush=True)
    while not stop.wait(1.0):
        if not dc.healthy():
            _progress("a process exited; tearing down (see the logs)")
            break
    _progress("stopping")
    return _report(dc.down())


def _report(problems: list[str]) -> int:
    for p in problems:
        print(f"pyk8s dev cluster: left behind: {p}", file=sys.stderr)
    if not problems:
        _progress("down: no namespace, link or process left")
    return 1 if problems else 0
