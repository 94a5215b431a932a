"""Helpers for the kubectl compatibility suites: one kubectl version, its own discovery cache, and nodes
shaped like the observed upstream transcript's (../shared/reference/upstream-observed.md)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from typing import Any

from tests.cluster import Cluster, kubectl_binaries, scratch_dir
from tests.shared_reference import MANIFESTS as SHARED_MANIFESTS

VERSIONS = list(kubectl_binaries()) or ["none"]
# the expensive scenarios run on the oldest, a middle and the newest kubectl
SOME_VERSIONS = [v for v in VERSIONS if v in ("1.27", "1.30", "1.33")] or VERSIONS[-1:]

MANIFESTS = str(SHARED_MANIFESTS)


class Kubectl:
    """One kubectl binary against one cluster, with a HOME (so a discovery cache) of its own."""

    def __init__(self, cluster: Cluster, version: str) -> None:
        bins = kubectl_binaries()
        if version not in bins:
            cluster.kubectl("version")  # fails (or skips) with a clear reason
        self.binary = bins[version]
        self.version = version
        self.minor = int(version.split(".")[1])
        self.cluster = cluster
        self.home = scratch_dir(f"kubectl-{version}-")
        self.ns = "v" + version.replace(".", "-")

    def run(self, *args: str, input: str | None = None, check: bool = True, env: dict[str, str] | None = None,
            timeout: float = 60.0) -> subprocess.CompletedProcess[str]:
        e = dict(os.environ, KUBECONFIG=self.cluster.kubeconfig, HOME=self.home, **(env or {}))
        e.pop("KUBECTL_EXTERNAL_DIFF", None)
        r = subprocess.run([self.binary, *args], input=input, capture_output=True, text=True, env=e, timeout=timeout)
        if check and r.returncode != 0:
            raise AssertionError(f"kubectl {self.version} {' '.join(args)} failed ({r.returncode}):\n"
                                 f"{r.stdout}\n{r.stderr}")
        return r

    def out(self, *args: str, **kw: Any) -> str:
        return self.run(*args, **kw).stdout

    def json(self, *args: str) -> Any:
        return json.loads(self.out(*args, "-o", "json"))


def table(text: str) -> list[list[str]]:
    """Rows of kubectl's table output split on runs of 2+ spaces (cells may hold single spaces)."""
    return [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if line.strip()]


def node(i: int) -> dict[str, Any]:
    """node<i> as the transcript's set-up describes it: Ready, 4 cpu / 16Gi, node1 tainted master."""
    name = f"node{i}"
    n: dict[str, Any] = {
        "apiVersion": "v1", "kind": "Node",
        "metadata": {"name": name, "labels": {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux"}},
        "spec": {},
        "status": {
            "capacity": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "allocatable": {"cpu": "4", "memory": "16Gi", "pods": "110"},
            "addresses": [{"type": "InternalIP", "address": f"192.0.2.{i}"}, {"type": "Hostname", "address": name}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady",
                            "message": "kubelet is posting ready status",
                            "lastHeartbeatTime": "2026-11-22T02:00:00Z",
                            "lastTransitionTime": "2026-11-22T02:00:00Z"}],
            "nodeInfo": {"machineID": "", "systemUUID": "", "bootID": "", "kernelVersion": "6.1.0",
                         "osImage": "Debian GNU/Linux 12", "containerRuntimeVersion": "containerd://1.7.0",
                         "kubeletVersion": "v1.32.0", "kubeProxyVersion": "", "operatingSystem": "linux",
                         "architecture": "amd64"},
        },
    }
    if i == 1:
        n["spec"]["taints"] = [{"key": "node-role.kubernetes.io/master", "effect": "NoSchedule"}]
    return n


def ensure_nodes(k: Kubectl) -> None:
    have = set(k.out("get", "nodes", "-o", "name").split())
    docs = [json.dumps(node(i)) for i in range(1, 5) if f"node/node{i}" not in have]
    if docs:
        k.run("create", "-f", "-", input="\n".join(docs))


def ensure_ns(k: Kubectl, ns: str | None = None) -> str:
    ns = ns or k.ns
    r = k.run("create", "ns", ns, check=False)
    assert r.returncode == 0 or "AlreadyExists" in r.stderr, r.stderr
    return ns
