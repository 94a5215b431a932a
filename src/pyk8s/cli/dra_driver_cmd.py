"""`pyk8s dra-driver gpu`: our GPU DRA driver, gpu.pyk8s.io (docs/dra.md)."""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("dra-driver", help="run a Dynamic Resource Allocation driver for the kubelet (gpu)",
                       description="DRA drivers speaking the kubelet's plugin registration v1 and dra v1beta1 gRPC.")
    psub = p.add_subparsers(dest="driver", metavar="DRIVER")
    g = psub.add_parser(
        "gpu", help="gpu.pyk8s.io: NVIDIA GPUs (NVML) or simulated ones, whole or as 4Gi memory shares",
        description="Publish this node's GPUs as a ResourceSlice of driver gpu.pyk8s.io (whole GPUs and memory "
                    "shares of --share-memory, kept apart by counter sets), create the gpu.pyk8s.io and "
                    "gpu-share.pyk8s.io DeviceClasses when missing, register with the kubelet and prepare allocated "
                    "claims as CDI specs (NVIDIA_VISIBLE_DEVICES, PYK8S_GPU_MEMORY, device nodes on a real GPU).")
    g.add_argument("--fake-gpus", default=os.environ.get("PYK8S_FAKE_GPUS") or None, metavar="COUNTxMEMORY",
                   help="simulated GPUs instead of NVML's, e.g. 2x16Gi (default $PYK8S_FAKE_GPUS)")
    g.add_argument("--node-name", default=None, help="this node (default $NODE_NAME, else the host name)")
    g.add_argument("--kubelet-root-dir", default="/var/lib/kubelet",
                   help="the kubelet's --root-dir: plugins_registry/ and plugins/ are under it (default /var/lib/kubelet)")
    g.add_argument("--cdi-dir", default="/var/run/cdi", help="where CDI specs are written (default /var/run/cdi)")
    g.add_argument("--share-memory", default="4Gi", help="the memory of one share device (default 4Gi; 0: none)")
    g.add_argument("--kubeconfig", default=None,
                   help="API credentials (default $KUBECONFIG, else the pod's service account)")
    g.add_argument("--v", type=int, default=0, help="log verbosity")


async def _gpu(args: argparse.Namespace) -> int:
    from ..api.quantity import parse_quantity
    from ..dra.gpu_driver import GPUDriver
    from ..gpu.discovery import default_node_name, discover
    from .device_plugin_cmd import _client

    node = args.node_name or default_node_name()
    try:
        gpus = discover(args.fake_gpus, node=node)
        share = parse_quantity(args.share_memory).to_int()
        client = _client(args)
    except (ValueError, FileNotFoundError) as e:
        print(f"pyk8s dra-driver gpu: {e}", file=sys.stderr)
        return 2
    if client is None:
        print("pyk8s dra-driver gpu: needs API credentials (--kubeconfig, or a service account)", file=sys.stderr)
        return 2
    driver = GPUDriver(client, node, gpus, args.kubelet_root_dir, args.cdi_dir, share)
    try:
        await driver.publish()
        try:
            await driver.start()
        except OSError as e:
            print(f"pyk8s dra-driver gpu: {e}", file=sys.stderr)
            return 1
        print(f"pyk8s dra-driver gpu: node {node}, {len(gpus)} GPU(s); registration at {driver.registry_socket}",
              flush=True)
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        await stop.wait()
    finally:
        await driver.stop()
        await client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    if args.driver != "gpu":
        print("usage: pyk8s dra-driver gpu [--fake-gpus 2x16Gi] ...", file=sys.stderr)
        return 2
    from .. import klog

    klog.setup(args.v)
    return asyncio.run(_gpu(args))
