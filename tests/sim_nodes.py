"""`pyk8s sim` beside a test cluster: simulated nodes whose kubelets (`--kubelet-port 0`) serve their
pods' declared usage (`sim.pyk8s.io/cpu-usage`, `sim.pyk8s.io/memory-usage`) to the metrics server."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from contextlib import contextmanager

from tests.cluster import Cluster


@contextmanager
def sim_nodes(cluster: Cluster, nodes: int, prefix: str, cpu: str = "8", memory: str = "16Gi") -> Iterator[None]:
    """Nodes named `<prefix>0`, `<prefix>1`, ... for the block's life; removed (`--cleanup`) after it."""
    env = dict(os.environ, KUBECONFIG=cluster.kubeconfig, PYTHONUNBUFFERED="1")
    sim = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", str(nodes), "--name-prefix", prefix,
                            "--kubelet-port", "0", "--cpu", cpu, "--memory", memory, "--cleanup"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
    try:
        yield
    finally:
        sim.terminate()
        try:
            sim.wait(20)
        except subprocess.TimeoutExpired:
            sim.kill()
