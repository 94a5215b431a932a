"""`pyk8s device-plugin gpu`: the GPU device plugin (whole GPUs and gpushare's GPU-memory shares)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import ssl
import sys
from typing import Any

__all__ = ["add_parser", "run"]

log = logging.getLogger("pyk8s.gpu")

SA_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("device-plugin", help="run a device plugin for the kubelet (gpu)",
                       description="Device plugins speaking the kubelet's v1beta1 gRPC API.")
    psub = p.add_subparsers(dest="plugin", metavar="PLUGIN")
    g = psub.add_parser(
        "gpu", help="NVIDIA GPUs (NVML) or simulated ones: nvidia.com/gpu, aliyun.com/gpu-mem, aliyun.com/gpu-count",
        description="Offer this node's GPUs to the kubelet: whole GPUs (nvidia.com/gpu), GPU memory shares in GiB "
                    "(aliyun.com/gpu-mem, as Alibaba's gpushare, placed by the scheduler's GPUShare plugin) and the "
                    "GPU count (aliyun.com/gpu-count). GPUs come from NVML; --fake-gpus declares simulated ones. "
                    "Runs as seed 000's gpushare DaemonSet (docs/gpu-sharing.md).")
    g.add_argument("--fake-gpus", default=os.environ.get("PYK8S_FAKE_GPUS") or None, metavar="COUNTxMEMORY",
                   help="simulated GPUs instead of NVML's, e.g. 2x16Gi (default $PYK8S_FAKE_GPUS)")
    g.add_argument("--node-name", default=None, help="this node (default $NODE_NAME, from the downward API, "
                                                    "else the host name)")
    g.add_argument("--device-plugin-path", default="/var/lib/kubelet/device-plugins",
                   help="the kubelet's device-plugins directory (default /var/lib/kubelet/device-plugins)")
    g.add_argument("--kubeconfig", default=None,
                   help="for gpu-mem (reads this node's pods, marks shares assigned): default $KUBECONFIG, else the "
                        "pod's service account; without either only whole GPUs are offered")
    g.add_argument("--memory-unit", default="GiB", choices=["GiB"], help="gpu-mem unit (gpushare's flag; GiB only)")
    g.add_argument("--v", type=int, default=0, help="log verbosity (2: every allocation)")
    g.add_argument("-logtostderr", "--logtostderr", action="store_true", help="accepted for gpushare's command line")


def _client(args: argparse.Namespace) -> Any:
    from ..client import Client

    path = args.kubeconfig or os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    if path:
        if not os.path.exists(path):
            raise FileNotFoundError(f"kubeconfig {path} not found")
        return Client.from_kubeconfig(path, user_agent="pyk8s-gpu-device-plugin")
    host, port = os.environ.get("KUBERNETES_SERVICE_HOST"), os.environ.get("KUBERNETES_SERVICE_PORT")
    token_file = os.path.join(SA_DIR, "token")
    if host and port and os.path.exists(token_file):
        with open(token_file) as f:
            token = f.read().strip()
        ctx = ssl.create_default_context(cafile=os.path.join(SA_DIR, "ca.crt"))
        server = f"https://[{host}]:{port}" if ":" in host else f"https://{host}:{port}"
        return Client(server, ctx, token, user_agent="pyk8s-gpu-device-plugin")
    return None


async def _gpu(args: argparse.Namespace) -> int:
    from ..gpu.discovery import default_node_name, discover
    from ..gpu.plugin import GPUPlugin

    node = args.node_name or default_node_name()
    try:
        gpus = discover(args.fake_gpus, node=node)
    except ValueError as e:
        print(f"pyk8s device-plugin gpu: {e}", file=sys.stderr)
        return 2
    try:
        client = _client(args)
    except FileNotFoundError as e:
        print(f"pyk8s device-plugin gpu: {e}", file=sys.stderr)
        return 2
    if client is None:
        log.warning("no kubeconfig and no service account: offering whole GPUs only (aliyun.com/gpu-mem needs the API)")
    if not gpus:
        log.warning("no GPUs found (NVML has no devices or no driver); registering empty resources")
    os.makedirs(args.device_plugin_path, mode=0o700, exist_ok=True)
    plugin = GPUPlugin(gpus, node, args.device_plugin_path, client)
    print(f"pyk8s device-plugin gpu: node {node}, {len(gpus)} GPU(s) "
          f"{', '.join(f'{g.index}:{g.uuid}:{g.memory_bytes >> 30}GiB' for g in gpus)}; kubelet at "
          f"{os.path.join(args.device_plugin_path, 'kubelet.sock')}", flush=True)
    task = asyncio.ensure_future(plugin.run())
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        pass
    finally:
        if client is not None:
            await client.close()
    return 0


def run(args: argparse.Namespace) -> int:
    if args.plugin != "gpu":
        print("usage: pyk8s device-plugin gpu [--fake-gpus 2x16Gi] ...", file=sys.stderr)
        return 2
    from .. import klog

    klog.setup(args.v)
    return asyncio.run(_gpu(args))
