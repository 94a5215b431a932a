"""`pyk8s sim`: simulated nodes (our kwok) against any API server, until Ctrl-C."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import time
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "sim",
        help="simulate nodes that behave like kubelets without running anything (like kwok)",
        description="Register N simulated nodes, renew their Leases, post node status and move the pods "
        "bound to them through a kubelet's lifecycle. Pod annotations: sim.pyk8s.io/run-seconds and "
        "sim.pyk8s.io/exit-code make containers exit, sim.pyk8s.io/ready: \"false\" keeps them unready. "
        "Node annotation sim.pyk8s.io/heartbeat: \"false\" silences a node. Pod annotations "
        "sim.pyk8s.io/cpu-usage and sim.pyk8s.io/memory-usage declare the usage the nodes' /stats/summary and "
        "/metrics/resource report (default: half the pod's requests).",
    )
    p.add_argument("--kubeconfig", default=None,
                   help="kubeconfig of the cluster (default $KUBECONFIG, else ./data/kubeconfig.yaml)")
    p.add_argument("--context", default=None, help="kubeconfig context")
    p.add_argument("--nodes", type=int, default=1, help="how many nodes (default 1)")
    p.add_argument("--name-prefix", default="sim-node-", help="node names are PREFIX<i> (default sim-node-)")
    p.add_argument("--start-index", type=int, default=0, help="first <i> (default 0)")
    p.add_argument("--cpu", default="32", help="cpu capacity per node (default 32)")
    p.add_argument("--memory", default="256Gi", help="memory capacity per node (default 256Gi)")
    p.add_argument("--pods", default="110", help="pod capacity per node (default 110)")
    p.add_argument("--labels", action="append", default=[], help="extra node labels k=v,k2=v2 (repeatable)")
    p.add_argument("--taints", action="append", default=[], help="node taints k=v:Effect,k2:Effect (repeatable)")
    p.add_argument("--lease-period", type=float, default=10.0, help="seconds between Lease renewals (default 10)")
    p.add_argument("--status-period", type=float, default=300.0,
                   help="seconds between node status reports while nothing changed (default 300, the kubelet's "
                        "nodeStatusReportFrequency; the Lease is the heartbeat)")
    p.add_argument("--concurrency", type=int, default=64, help="API writes in flight (default 64)")
    p.add_argument("--creating-seconds", type=float, default=0.5,
                   help="seconds a pod shows ContainerCreating before Running (0 skips that status write; default 0.5)")
    p.add_argument("--delete-delay", default="0-1",
                   help="seconds (MIN-MAX, at most the grace period) before a deleted pod is removed (default 0-1)")
    p.add_argument("--crash-backoff", type=float, default=10.0, help="first CrashLoopBackOff delay (default 10)")
    p.add_argument("--gpus", type=int, default=0,
                   help="simulated GPUs per node (default 0): capacity nvidia.com/gpu, aliyun.com/gpu-mem (GiB) and "
                        "aliyun.com/gpu-count, label gpushare=true; gpu-mem pods get their GPU as gpushare's "
                        "device plugin would give it (docs/gpu-sharing.md)")
    p.add_argument("--gpu-memory", default="16Gi", help="memory of each simulated GPU, whole GiB (default 16Gi)")
    p.add_argument("--no-pods", action="store_true", help="only nodes: leave pods alone")
    p.add_argument("--cleanup", action="store_true", help="delete the nodes and their Leases on exit")
    p.add_argument("--kubelet-port", type=int, default=0, metavar="PORT",
                   help="port (on 0.0.0.0) of the nodes' kubelet API: /stats/summary and /metrics/resource with "
                   "declared usage (pod annotations sim.pyk8s.io/cpu-usage, sim.pyk8s.io/memory-usage), "
                   "authenticated and authorized as a kubelet's; the nodes get loopback InternalIPs (127.10.x.y) "
                   "it tells them apart by, and report the port in status.daemonEndpoints. 0 (default): a free "
                   "port (a real kubelet on this machine holds 10250); -1: none, and 10.10.x.y InternalIPs")
    p.add_argument("--v", type=int, default=0, help="log verbosity, as upstream's -v: 0 startup, shutdown, "
                   "warnings; 2 per-object actions; 3 every API request (httplog); 4 debug")


def _delay_range(text: str) -> tuple[float, float]:
    lo, _, hi = text.partition("-")
    a = float(lo)
    b = float(hi) if hi else a
    return (min(a, b), max(a, b))


def run(args: argparse.Namespace) -> int:
    from .. import klog
    from ..stalls import watched

    klog.setup(args.v)
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    try:
        return asyncio.run(watched(_main(args)))
    except KeyboardInterrupt:
        return 0


async def _main(args: argparse.Namespace) -> int:
    from ..client import Client
    from ..sim import Simulator, parse_labels, parse_taints

    path = args.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0] or "./data/kubeconfig.yaml"
    if not os.path.exists(path):
        print(f"pyk8s sim: kubeconfig {path} not found (use --kubeconfig or $KUBECONFIG)", file=sys.stderr)
        return 1
    try:
        taints = parse_taints(args.taints)
        delete_delay = _delay_range(args.delete_delay)
        if args.gpus < 0:
            raise ValueError(f"--gpus must not be negative, got {args.gpus}")
        if args.gpus:
            from ..sim.gpus import SimGPUs

            SimGPUs(args.gpus, args.gpu_memory)  # validates before anything is registered
    except ValueError as e:
        print(f"pyk8s sim: {e}", file=sys.stderr)
        return 2
    client = Client.from_kubeconfig(path, args.context, user_agent="pyk8s-sim", pool_size=args.concurrency + 8)
    client_ca = None
    if args.kubelet_port >= 0:
        from ..client.kubeconfig import load_kubeconfig

        client_ca = load_kubeconfig(path, args.context).ca_pem()
        if not client_ca:
            print("pyk8s sim: --kubelet-port needs the cluster CA in the kubeconfig (certificate-authority)",
                  file=sys.stderr)
            await client.close()
            return 2
    sim = Simulator(
        client, args.nodes, name_prefix=args.name_prefix, start_index=args.start_index, cpu=args.cpu,
        memory=args.memory, pods=args.pods, labels=parse_labels(args.labels), taints=taints,
        lease_period=args.lease_period, status_period=args.status_period, concurrency=args.concurrency,
        creating_seconds=args.creating_seconds, delete_delay=delete_delay, crash_backoff=args.crash_backoff,
        manage_pods=not args.no_pods, delete_nodes_on_stop=args.cleanup,
        kubelet_port=args.kubelet_port if args.kubelet_port >= 0 else None, client_ca=client_ca, gpus=args.gpus,
        gpu_memory=args.gpu_memory,
    )
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except NotImplementedError:  # pragma: no cover
            pass
    t0 = time.monotonic()
    try:
        await sim.start()
    except ValueError as e:
        print(f"pyk8s sim: {e}", file=sys.stderr)
        await sim.stop()
        await client.close()
        return 2
    except Exception as e:
        print(f"pyk8s sim: cannot reach the API server at {client.server}: {e}", file=sys.stderr)
        await sim.stop()
        await client.close()
        return 1
    print(f"pyk8s sim: {args.nodes} nodes {args.name_prefix}{args.start_index}..."
          f"{args.name_prefix}{args.start_index + args.nodes - 1} against {client.server}", flush=True)
    if sim.kubelet_server is not None:
        print(f"pyk8s sim: kubelet API (stats) on port {sim.kubelet_server.port}", flush=True)
    tty = sys.stdout.isatty()
    last_line, last_print, all_ready_reported = "", 0.0, False
    while not stop.is_set():
        try:
            await asyncio.wait_for(stop.wait(), 1.0)
        except TimeoutError:
            pass
        s = sim.stats()
        line = (f"nodes Ready {s['ready']}/{s['nodes']}  pods running {s['running']}  creating {s['creating']}  "
                f"crashloop {s['backoff']}  exited {s['exited']}  writes {s['writes']} (queued {s['queued_writes']}, "
                f"failed {s['failed_writes']}, {s['write_latency_ms']:.0f} ms each)")
        now = time.monotonic()
        if tty:
            sys.stdout.write("\r\x1b[K" + line)
            sys.stdout.flush()
        elif line != last_line and now - last_print >= 10:
            print(line, flush=True)
            last_line, last_print = line, now
        if not all_ready_reported and s["registered"] >= s["nodes"]:
            all_ready_reported = True
            from .. import gctune

            gctune.freeze()  # the nodes' state lives as long as this process
            msg = f"all {s['nodes']} nodes registered in {now - t0:.1f}s"
            print(("\r\x1b[K" if tty else "") + msg, flush=True)
    if tty:
        print()
    s = sim.stats()
    print(f"pyk8s sim: stopping{' and deleting the nodes' if args.cleanup else ''} after {time.monotonic() - t0:.0f}s; "
          f"writes {s['writes']} (lease renewals {s['lease_renewals']}, node status {s['status_writes']}, "
          f"pod status {s['pod_writes']}, failed {s['failed_writes']})", flush=True)
    await sim.stop()
    await client.close()
    return 0
