"""`pyk8s gpu inspect [-d] [NODE]`: shared GPU memory per node and GPU, as `kubectl inspect gpushare`."""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from typing import Any

__all__ = ["add_parser", "run"]


def add_parser(sub: Any) -> None:
    p = sub.add_parser("gpu", help="inspect shared GPUs (gpushare's aliyun.com/gpu-mem)",
                       description="GPU tools. `inspect` shows, per node and GPU, the GPU memory (GiB) allocated "
                                   "to pods and the total, read through the API with your kubeconfig.")
    gsub = p.add_subparsers(dest="gpu_command", metavar="COMMAND")
    i = gsub.add_parser("inspect", help="allocated/total GPU memory per node and GPU (like kubectl inspect gpushare)")
    i.add_argument("node", nargs="?", default=None, help="only this node")
    i.add_argument("-d", "--details", action="store_true", help="which pods hold which share of which GPU")
    i.add_argument("--kubeconfig", default=None,
                   help="kubeconfig of the cluster (default $KUBECONFIG, else ~/.kube/config)")
    i.add_argument("--context", default=None, help="kubeconfig context")


def _kubeconfig(arg: str | None) -> str:
    if arg:
        return arg
    env = os.environ.get("KUBECONFIG", "").split(os.pathsep)[0]
    return env or os.path.expanduser("~/.kube/config")


async def _inspect(args: argparse.Namespace) -> int:
    from ..api.errors import StatusError
    from ..client import Client
    from ..gpu.inspect import collect, render, render_details

    path = _kubeconfig(args.kubeconfig)
    if not os.path.exists(path):
        print(f"pyk8s gpu inspect: kubeconfig {path} not found (use --kubeconfig or $KUBECONFIG)", file=sys.stderr)
        return 1
    client = Client.from_kubeconfig(path, args.context, user_agent="pyk8s-gpu-inspect")
    try:
        if args.node:
            nodes = [await client.get(("", "v1", "nodes"), args.node)]
            pods = (await client.list(("", "v1", "pods"), field_selector=f"spec.nodeName={args.node}"))["items"]
        else:
            nodes = (await client.list(("", "v1", "nodes")))["items"]
            pods = (await client.list(("", "v1", "pods")))["items"]
    except StatusError as e:
        print(f"Error from server ({e.reason}): {e.message}", file=sys.stderr)
        return 1
    finally:
        await client.close()
    gpus = collect(nodes, pods)
    sys.stdout.write(render_details(gpus) if args.details else render(gpus))
    return 0


def run(args: argparse.Namespace) -> int:
    if args.gpu_command != "inspect":
        print("usage: pyk8s gpu inspect [-d] [NODE]", file=sys.stderr)
        return 2
    return asyncio.run(_inspect(args))
