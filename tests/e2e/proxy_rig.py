"""A one-node network in namespaces for the service proxy tests: real packets through real nftables.

    host ns ── veth (10.239.<o>.1 / .2) ── node ns "proxy-node-<id>" (runs `pyk8s proxy`)
                                            └─ bridge br0 10.244.<o>.1/24 ── pod namespaces (veth each)

The API server runs on the host, bound to the host end of the veth, so the proxy in the node
namespace reaches it as a remote node's proxy would. "Pods" are network namespaces running
tests/e2e/netprobe.py; Services and hand-made EndpointSlices go through the API. Nothing of
the host's own network is touched but the one veth, which goes away with the node namespace.
"""

from __future__ import annotations

import contextlib
import json
import os
import random
import signal
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from typing import Any

from tests.cluster import REPO, Cluster
from tests.conftest import require, require_binary
from tests.e2e.kubelet_harness import Env

PROBE = os.path.join(os.path.dirname(__file__), "netprobe.py")


def requirements() -> None:
    require("root", os.geteuid() == 0)
    for b in ("ip", "nft", "nsenter", "conntrack"):
        require_binary(b)


def sh(*args: str, check: bool = True) -> str:
    r = subprocess.run(list(args), capture_output=True, text=True, timeout=30)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(args)}: {r.stderr.strip()}")
    return r.stdout


def wait_for(cond: Callable[[], Any], timeout: float = 10.0, interval: float = 0.02, what: str = "") -> Any:
    return Env.wait(cond, timeout, what or str(cond), interval)


def _free_octet() -> int:
    used = sh("ip", "-o", "-4", "addr")
    for _ in range(50):
        o = random.randint(2, 250)
        if f"10.239.{o}." not in used:
            return o
    raise RuntimeError("no free 10.239.x.0/24")


class ProxyRig:
    def __init__(self, base: str) -> None:
        self.base = base
        self.id = uuid.uuid4().hex[:6]
        self.octet = _free_octet()
        self.node_ns = f"proxy-node-{self.id}"
        self.host_if = f"pxh{self.id}"
        self.host_ip = f"10.239.{self.octet}.1"
        self.node_ip = f"10.239.{self.octet}.2"
        self.pod_net = f"10.244.{self.octet}"
        self.bridge_ip = f"{self.pod_net}.1"
        self.node_name = f"proxy-node-{self.id}"
        self.pods: dict[str, tuple[str, str]] = {}  # name -> (netns, ip)
        self.procs: list[subprocess.Popen[str]] = []
        self.proxy: subprocess.Popen[str] | None = None
        self.proxy_log: list[str] = []
        self.cluster: Cluster | None = None
        self.kubeconfig = os.path.join(base, "proxy.kubeconfig")

    # ---- network ---------------------------------------------------------------------------
    def nsexec(self, ns: str, *args: str) -> list[str]:
        return ["nsenter", f"--net=/run/netns/{ns}", *args]

    def setup(self) -> ProxyRig:
        ns = self.node_ns
        sh("ip", "netns", "add", ns)
        sh("ip", "link", "add", self.host_if, "type", "veth", "peer", "name", "eth0", "netns", ns)
        sh("ip", "addr", "add", f"{self.host_ip}/24", "dev", self.host_if)
        sh("ip", "link", "set", self.host_if, "up")
        for cmd in (["ip", "addr", "add", f"{self.node_ip}/24", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"],
                    ["ip", "link", "set", "lo", "up"], ["ip", "route", "add", "default", "via", self.host_ip],
                    ["ip", "link", "add", "br0", "type", "bridge"],
                    ["ip", "addr", "add", f"{self.bridge_ip}/24", "dev", "br0"], ["ip", "link", "set", "br0", "up"],
                    ["sysctl", "-qw", "net.ipv4.ip_forward=1"],
                    # as a CNI bridge node: bridged replies between pods pass conntrack (un-DNAT)
                    ["sysctl", "-qw", "net.bridge.bridge-nf-call-iptables=1"]):
            sh(*self.nsexec(ns, *cmd))
        return self

    def add_pod(self, name: str, serve: bool = True) -> str:
        i = len(self.pods) + 10
        pns, ip = f"proxy-{name}-{self.id}", f"{self.pod_net}.{i}"
        sh("ip", "netns", "add", pns)
        sh(*self.nsexec(self.node_ns, "ip", "link", "add", f"vp{i}", "type", "veth", "peer", "name", "eth0",
                        "netns", pns))
        sh(*self.nsexec(self.node_ns, "ip", "link", "set", f"vp{i}", "master", "br0", "up"))
        # as the CNI bridge plugin's hairpinMode: a pod reaching itself through a Service
        sh(*self.nsexec(self.node_ns, "ip", "link", "set", f"vp{i}", "type", "bridge_slave", "hairpin", "on"))
        for cmd in (["ip", "addr", "add", f"{ip}/24", "dev", "eth0"], ["ip", "link", "set", "eth0", "up"],
                    ["ip", "link", "set", "lo", "up"], ["ip", "route", "add", "default", "via", self.bridge_ip]):
            sh(*self.nsexec(pns, *cmd))
        self.pods[name] = (pns, ip)
        if serve:
            p = subprocess.Popen(self.nsexec(pns, sys.executable, PROBE, "serve", name, "8080"),
                                 stdout=subprocess.PIPE, text=True)
            self.procs.append(p)
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        return ip

    def connect(self, from_pod: str | None, proto: str, ip: str, port: int, n: int = 1) -> list[str]:
        """n fresh connections from a pod (None: from the host) to ip:port; what each got."""
        cmd = [sys.executable, PROBE, "connect", proto, ip, str(port), str(n)]
        if from_pod is not None:
            cmd = self.nsexec(self.pods[from_pod][0], *cmd)
        return list(json.loads(subprocess.run(cmd, capture_output=True, text=True, timeout=60, check=True).stdout))

    # ---- API server and proxy --------------------------------------------------------------
    def start_server(self) -> Cluster:
        self.cluster = Cluster(os.path.join(self.base, "server"),
                               extra_args=["--bind-address", self.host_ip, "--tls-san", self.host_ip]).start()
        self._proxy_kubeconfig()
        self._register_node()
        return self.cluster

    def _proxy_kubeconfig(self) -> None:
        from pyk8s.apiserver.certs import ensure_pki
        from pyk8s.client.kubeconfig import write_kubeconfig
        from pyk8s.pki import issue_client_cert

        assert self.cluster is not None
        pki = ensure_pki(self.cluster.data_dir)
        # upstream's kube-proxy identity, bound to system:node-proxier by the bootstrap policy
        cert, key = issue_client_cert(pki, "system:kube-proxy")
        write_kubeconfig(self.kubeconfig, self.cluster.url, pki.ca_pem, cert, key, user="system:kube-proxy")

    def _register_node(self) -> None:
        from kubernetes import client

        assert self.cluster is not None
        core = client.CoreV1Api(self.cluster.api_client())
        core.create_node({"metadata": {"name": self.node_name}})
        core.patch_node_status(self.node_name, {"status": {
            "addresses": [{"type": "InternalIP", "address": self.node_ip}],
            "conditions": [{"type": "Ready", "status": "True", "reason": "KubeletReady", "message": "rig"}]}})

    def start_proxy(self, *extra: str) -> None:
        env = dict(os.environ, PYTHONUNBUFFERED="1", PYTHONPATH=os.path.join(str(REPO), "src"))
        self.proxy = subprocess.Popen(
            self.nsexec(self.node_ns, sys.executable, "-m", "pyk8s.cli", "proxy", "--kubeconfig", self.kubeconfig,
                        "--hostname-override", self.node_name, "--cluster-cidr", "10.244.0.0/16", "--v", "4", *extra),
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=str(REPO))
        log = self.proxy_log

        def drain(p: subprocess.Popen[str]) -> None:
            assert p.stdout is not None
            for line in p.stdout:
                log.append(line)

        threading.Thread(target=drain, args=(self.proxy,), daemon=True).start()
        wait_for(lambda: any("pyk8s proxy: running" in x for x in log) or self.proxy.poll() is not None,  # type: ignore[union-attr]
                 timeout=30, what="the proxy to start")
        if self.proxy.poll() is not None:
            raise RuntimeError("pyk8s proxy exited:\n" + "".join(log))

    def stop_proxy(self) -> None:
        if self.proxy is not None and self.proxy.poll() is None:
            self.proxy.send_signal(signal.SIGTERM)
            try:
                self.proxy.wait(10)
            except subprocess.TimeoutExpired:
                self.proxy.kill()
                self.proxy.wait()
        self.proxy = None

    def nft(self, *args: str, check: bool = True) -> str:
        return sh(*self.nsexec(self.node_ns, "nft", *args), check=check)

    def teardown(self) -> None:
        self.stop_proxy()
        for p in self.procs:
            with contextlib.suppress(Exception):
                p.kill()
                p.wait(5)
        if self.cluster is not None:
            self.cluster.stop()
        for pns, _ in self.pods.values():
            sh("ip", "netns", "del", pns, check=False)
        sh("ip", "netns", "del", self.node_ns, check=False)  # takes its veth, bridge and tables along
        sh("ip", "link", "del", self.host_if, check=False)
