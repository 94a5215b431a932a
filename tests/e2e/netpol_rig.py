"""A node made of network namespaces for the NetworkPolicy tests, with no kubelet.

    host ──veth── node netns (bridge br0, 10.204.0.1/24, br_netfilter on) ──veths── 9 pod netns

The API server runs on the host, bound to the host end of the veth, so the policy controller
(`pyk8s netpol`, started inside the node namespace) reaches it as an agent on another machine
would. Pods are real API objects bound to the node by `spec.nodeName` (no kubelet runs it) whose
`status.podIP` the test sets through the status subresource to the address of their namespace;
each pod namespace runs netpol_probe.py, which serves ports and probes others on request.
Everything it creates carries a per-run tag and is removed in `close()`, also after a failure.
"""

from __future__ import annotations

import ipaddress
import json
import os
import random
import subprocess
import sys
import threading
from typing import Any

from tests.cluster import REPO
from tests.conftest import require, require_binary

from .netpol_matrix import NAMESPACES, PODS, Probe

PROBE = os.path.join(os.path.dirname(__file__), "netpol_probe.py")
NODE = "netpol-rig-node"
POD_NET = "10.204.0"


def requirements() -> None:
    require("root", os.geteuid() == 0)
    for b in ("ip", "nft", "nsenter"):
        require_binary(b)


def sh(*cmd: str, check: bool = True) -> str:
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r.stdout


def _free_host_subnet() -> ipaddress.IPv4Network:
    """A /30 for the host<->node veth that no route of the host uses yet (other tests run beside us)."""
    used = [ipaddress.ip_network(r.get("dst"), strict=False) for r in json.loads(sh("ip", "-j", "-4", "route") or "[]")
            if r.get("dst", "default") != "default"]
    for _ in range(200):
        net = ipaddress.ip_network(f"10.203.{random.randrange(256)}.{4 * random.randrange(64)}/30")
        if not any(net.overlaps(u) for u in used):
            return net
    raise RuntimeError("no free /30 in 10.203.0.0/16")


class Rig:
    def __init__(self) -> None:
        self.tag = f"{os.getpid() % 10000:04d}{random.randrange(100):02d}"
        self.node_ns = f"netpol-{self.tag}-node"
        self.host_if = f"npol{self.tag}"
        net = _free_host_subnet()
        self.host_ip, self.node_ip = str(net[1]), str(net[2])
        self.pod_ns: dict[str, str] = {}  # "x/a" -> netns name
        self.ips: dict[str, str] = {}
        self.probers: dict[str, subprocess.Popen[str]] = {}
        self.locks: dict[str, threading.Lock] = {}
        self.controller: subprocess.Popen[str] | None = None
        self.controller_log: list[str] = []

    # ---- the network ---------------------------------------------------------------------
    def node(self, *cmd: str, check: bool = True) -> str:
        return sh("nsenter", f"--net=/run/netns/{self.node_ns}", *cmd, check=check)

    def build(self) -> None:
        sh("ip", "netns", "add", self.node_ns)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", "eth0", "netns", self.node_ns)
        sh("ip", "addr", "add", f"{self.host_ip}/30", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        self.node("ip", "addr", "add", f"{self.node_ip}/30", "dev", "eth0")
        self.node("ip", "link", "set", "eth0", "up")
        self.node("ip", "link", "set", "lo", "up")
        self.node("ip", "link", "add", "br0", "type", "bridge")
        self.node("ip", "addr", "add", f"{POD_NET}.1/24", "dev", "br0")
        self.node("ip", "link", "set", "br0", "up")
        # bridged pod<->pod packets meet the forward hook only through br_netfilter (per netns)
        self.node("sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
        self.node("sysctl", "-qw", "net.ipv4.ip_forward=1")
        for i, peer in enumerate(f"{n}/{p}" for n in NAMESPACES for p in PODS):
            ns = f"netpol-{self.tag}-{peer.replace('/', '')}"
            ip = f"{POD_NET}.{10 + i}"
            sh("ip", "netns", "add", ns)
            self.pod_ns[peer], self.ips[peer] = ns, ip
            self.node("ip", "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.node("ip", "link", "set", f"v{i}", "master", "br0", "up")
            pod = ("nsenter", f"--net=/run/netns/{ns}")
            sh(*pod, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh(*pod, "ip", "link", "set", "eth0", "up")
            sh(*pod, "ip", "link", "set", "lo", "up")
            sh(*pod, "ip", "route", "add", "default", "via", f"{POD_NET}.1")
            p = subprocess.Popen([*pod, sys.executable, PROBE, "80,81", "81,53"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"prober in {ns} did not start")
            self.probers[peer], self.locks[peer] = p, threading.Lock()

    def probe_all(self, probes: list[Probe]) -> dict[Probe, bool]:
        """Every probe at once: each source namespace's prober gets its list, all run in parallel."""
        by_src: dict[str, list[Probe]] = {}
        for pr in probes:
            by_src.setdefault(pr[0], []).append(pr)
        out: dict[Probe, bool] = {}
        for src, prs in by_src.items():
            p = self.probers[src]
            assert p.stdin is not None
            p.stdin.write(json.dumps([[self.ips[b], port, proto] for _, b, port, proto in prs]) + "\n")
            p.stdin.flush()
        for src, prs in by_src.items():
            p = self.probers[src]
            assert p.stdout is not None
            out.update(zip(prs, json.loads(p.stdout.readline()), strict=True))
        return out

    # ---- the policy controller -------------------------------------------------------------
    def start_controller(self, kubeconfig: str) -> None:
        self.controller = subprocess.Popen(
            ["nsenter", f"--net=/run/netns/{self.node_ns}", sys.executable, "-m", "pyk8s.cli", "netpol",
             "--kubeconfig", kubeconfig, "--hostname-override", NODE, "--table", self.table, "--v", "4"],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.controller is not None and self.controller.stdout is not None
        for line in self.controller.stdout:
            self.controller_log.append(line)

    @property
    def table(self) -> str:
        return f"netpol-{self.tag}"

    def ruleset(self) -> str:
        return self.node("nft", "list", "table", "inet", self.table, check=False)

    def close(self) -> None:
        for p in [*self.probers.values(), *([self.controller] if self.controller else [])]:
            p.terminate()
        for p in [*self.probers.values(), *([self.controller] if self.controller else [])]:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in self.pod_ns.values():
            sh("ip", "netns", "del", ns, check=False)
        sh("ip", "link", "del", self.host_if, check=False)
        sh("ip", "netns", "del", self.node_ns, check=False)  # its table and bridge go with it


def pod_manifest(ns: str, name: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"pod": name}},
            "spec": {"nodeName": NODE, "containers": [{
                "name": "cont", "image": "busybox:e2e",
                "ports": [{"name": "serve-80-tcp", "containerPort": 80},
                          {"name": "serve-81-tcp", "containerPort": 81},
                          {"name": "serve-81-udp", "containerPort": 81, "protocol": "UDP"},
                          {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}
