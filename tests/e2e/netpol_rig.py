"""Two nodes made of network namespaces for the NetworkPolicy tests, with no kubelet.

    host ──veth── node0 netns (bridge br0 10.204.0.1/24) ──veths── pods x/a, x/c, y/b, z/a, z/c
    host ──veth── node1 netns (bridge br0 10.204.1.1/24) ──veths── pods x/b, y/a, y/c, z/b
                  node0 ══ veth 169.254.77.0/30 ══ node1   (routes to each other's pod /24, host-gw)

The API server runs on the host, bound to the host ends of the veths, so each node's policy
controller (`pyk8s netpol`, started inside its node's namespace) reaches it as an agent on
another machine would. Pods are real API objects bound to a node by `spec.nodeName` (no kubelet
runs them) whose `status.podIP` the test sets through the status subresource to the address of
their namespace; each pod namespace runs netpol_probe.py, which serves ports and probes others on
request. Pod-to-pod traffic is never masqueraded, so policies see pod addresses across nodes.
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
import time
from typing import Any

from tests.cluster import REPO
from tests.conftest import require, require_binary

from .netpol_matrix import NAMESPACES, PODS, Probe

PROBE = os.path.join(os.path.dirname(__file__), "netpol_probe.py")
NODES = ("netpol-rig-node0", "netpol-rig-node1")


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
        self.node_ns = [f"netpol-{self.tag}-node{n}" for n in range(len(NODES))]
        self.host_if = [f"npol{self.tag}{n}" for n in range(len(NODES))]
        self.host_ip: list[str] = []
        self.node_ip: list[str] = []
        self.pod_ns: dict[str, str] = {}  # "x/a" -> netns name
        self.ips: dict[str, str] = {}
        self.node_of: dict[str, int] = {}
        self.probers: dict[str, subprocess.Popen[str]] = {}
        self.controllers: list[subprocess.Popen[str]] = []
        self.controller_log: list[str] = []

    # ---- the network ---------------------------------------------------------------------
    def node(self, n: int, *cmd: str, check: bool = True) -> str:
        return sh("nsenter", f"--net=/run/netns/{self.node_ns[n]}", *cmd, check=check)

    def build(self) -> None:
        for n, ns in enumerate(self.node_ns):
            net = _free_host_subnet()
            self.host_ip.append(str(net[1]))
            self.node_ip.append(str(net[2]))
            sh("ip", "netns", "add", ns)
            sh("ip", "link", "add", self.host_if[n], "type", "veth", "peer", "name", "eth0", "netns", ns)
            sh("ip", "addr", "add", f"{self.host_ip[n]}/30", "dev", self.host_if[n])
            sh("ip", "link", "set", self.host_if[n], "up")
            self.node(n, "ip", "addr", "add", f"{self.node_ip[n]}/30", "dev", "eth0")
            for link in ("eth0", "lo"):
                self.node(n, "ip", "link", "set", link, "up")
            self.node(n, "ip", "link", "add", "br0", "type", "bridge")
            self.node(n, "ip", "addr", "add", f"10.204.{n}.1/24", "dev", "br0")
            self.node(n, "ip", "link", "set", "br0", "up")
            # bridged pod<->pod packets meet the forward hook only through br_netfilter (per netns)
            self.node(n, "sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1")
            self.node(n, "sysctl", "-qw", "net.ipv4.ip_forward=1")
        # the node link and host-gw routes between the pod networks
        self.node(0, "ip", "link", "add", "nodes", "type", "veth", "peer", "name", "nodes", "netns", self.node_ns[1])
        for n in range(2):
            self.node(n, "ip", "addr", "add", f"169.254.77.{n + 1}/30", "dev", "nodes")
            self.node(n, "ip", "link", "set", "nodes", "up")
            self.node(n, "ip", "route", "add", f"10.204.{1 - n}.0/24", "via", f"169.254.77.{2 - n}")
        for i, peer in enumerate(f"{n}/{p}" for n in NAMESPACES for p in PODS):
            n = i % 2
            ns = f"netpol-{self.tag}-{peer.replace('/', '')}"
            ip = f"10.204.{n}.{10 + i}"
            sh("ip", "netns", "add", ns)
            self.pod_ns[peer], self.ips[peer], self.node_of[peer] = ns, ip, n
            self.node(n, "ip", "link", "add", f"v{i}", "type", "veth", "peer", "name", "eth0", "netns", ns)
            self.node(n, "ip", "link", "set", f"v{i}", "master", "br0", "up")
            # as the CNI bridge plugin's hairpinMode: a pod's packets may come back out its own port
            self.node(n, "ip", "link", "set", f"v{i}", "type", "bridge_slave", "hairpin", "on")
            pod = ("nsenter", f"--net=/run/netns/{ns}")
            sh(*pod, "ip", "addr", "add", f"{ip}/24", "dev", "eth0")
            sh(*pod, "ip", "link", "set", "eth0", "up")
            sh(*pod, "ip", "link", "set", "lo", "up")
            sh(*pod, "ip", "route", "add", "default", "via", f"10.204.{n}.1")
            p = subprocess.Popen([*pod, sys.executable, PROBE, "80,81", "81,53"], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, text=True)
            assert p.stdout is not None
            if p.stdout.readline().strip() != "ready":
                raise RuntimeError(f"prober in {ns} did not start")
            self.probers[peer] = p

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

    def probe_addr(self, src: str, ip: str, port: int, proto: str = "TCP") -> bool:
        """One probe from pod `src` to any address (a Service's, say)."""
        p = self.probers[src]
        assert p.stdin is not None and p.stdout is not None
        p.stdin.write(json.dumps([[ip, port, proto]]) + "\n")
        p.stdin.flush()
        return bool(json.loads(p.stdout.readline())[0])

    # ---- the policy controllers ------------------------------------------------------------
    def start_controllers(self, kubeconfigs: list[str]) -> None:
        for n, kubeconfig in enumerate(kubeconfigs):
            c = subprocess.Popen(
                ["nsenter", f"--net=/run/netns/{self.node_ns[n]}", sys.executable, "-m", "pyk8s.cli", "netpol",
                 "--kubeconfig", kubeconfig, "--hostname-override", NODES[n], "--table", self.table, "--v", "4"],
                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO))
            self.controllers.append(c)
            threading.Thread(target=self._drain, args=(n, c), daemon=True).start()

    def wait_controllers(self, timeout: float = 60) -> None:
        """Until each controller's first sync is in its node's kernel (its table exists)."""
        deadline = time.monotonic() + timeout
        for n in range(len(self.controllers)):
            while "ingress-pods" not in self.ruleset(n):
                if time.monotonic() > deadline:
                    raise AssertionError(f"node{n}'s controller never synced:\n{''.join(self.controller_log)}")
                time.sleep(0.1)

    def _drain(self, n: int, c: subprocess.Popen[str]) -> None:
        assert c.stdout is not None
        for line in c.stdout:
            self.controller_log.append(f"node{n}: {line}")

    @property
    def table(self) -> str:
        return f"netpol-{self.tag}"

    def ruleset(self, n: int = 0) -> str:
        return self.node(n, "nft", "list", "table", "inet", self.table, check=False)

    def close(self) -> None:
        procs = [*self.probers.values(), *self.controllers]
        for p in procs:
            p.terminate()
        for p in procs:
            try:
                p.wait(5)
            except subprocess.TimeoutExpired:
                p.kill()
        for ns in self.pod_ns.values():
            sh("ip", "netns", "del", ns, check=False)
        for n, ns in enumerate(self.node_ns):
            sh("ip", "link", "del", self.host_if[n], check=False)
            sh("ip", "netns", "del", ns, check=False)  # its table, bridge and node link go with it


def pod_manifest(ns: str, name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"pod": name}},
            "spec": {"nodeName": node, "containers": [{
                "name": "cont", "image": "busybox:e2e",
                "ports": [{"name": "serve-80-tcp", "containerPort": 80},
                          {"name": "serve-81-tcp", "containerPort": 81},
                          {"name": "serve-81-udp", "containerPort": 81, "protocol": "UDP"},
                          {"name": "dns", "containerPort": 53, "protocol": "UDP"}]}]}}
