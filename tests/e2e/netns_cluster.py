"""A real control plane on the host plus N real nodes, each in a network namespace of its own.

The layout is the one of a small cluster of machines on one link:

    host:  bridge pkn<tag>br  172.A.B.1/24  <- pyk8s server (--bind-address/--advertise-address)
    node i: netns pkn<tag>-node<i+1>, eth0 = 172.A.B.(11+i)/24 on that bridge, default route via .1,
            `pyk8s agent` (kubelet + whatever the agent runs for its node) started with nsenter --net
            (the bridge, namespaces and veths are `pyk8s dev cluster`'s: pyk8s.devcluster.Topology)

Each node has its own kubelet port 10250, CNI bridge, nftables and routes, so modules using
this harness do not collide with each other, with the host-network kubelet tests (groups
`runc-*`) or with a `make run` on the same machine; give each module its own xdist_group all
the same (runc start-up is CPU heavy). The server allocates each node a /24 of a /16 pod
network reserved for this cluster (tests/e2e/podnet.py); the host gets a route to every node's pod CIDR, so tests on the
host reach pod IPs directly. Routes between nodes are the agents' business, not the harness's.

Usage:

    with NetnsCluster(tmp_path, nodes=3) as nc:
        nc.create(pod_manifest)           # the API, as in kubelet_harness.Env
        nc.wait_running("web")
        nc.node_exec(0, "ping", "-c1", ip) # a command in node 0's network namespace
        nc.pod_exec("web", "wget", "-qO-", "http://...")  # through the API (kubectl exec)

Teardown deletes every pod through the API, stops the agents and the server, then removes
whatever is left: sandboxes, runc roots, network namespaces, links and routes.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import shutil
import subprocess
import sys
import uuid
from typing import Any

from pyk8s.devcluster import Topology, free_subnet
from tests.cluster import REPO, Cluster
from tests.conftest import require, require_binary
from tests.e2e.kubelet_harness import IMAGE, Agent, Env, import_images, requirements
from tests.e2e.podnet import reserve_pod_net


def netns_requirements() -> None:
    requirements()
    require_binary("nsenter")
    require_binary("ip")


def _ip(*args: str, netns: str = "", check: bool = True) -> subprocess.CompletedProcess[str]:
    cmd = ["ip", *(["-n", netns] if netns else []), *args]
    r = subprocess.run(cmd, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)}: {r.stderr.strip()}")
    return r


class NetnsAgent(Agent):
    """`pyk8s agent` run inside a node's network namespace."""

    def __init__(self, cluster: Cluster, data_dir: str, name: str, netns: str, node_ip: str, runc_root: str,
                 extra: list[str] | None = None) -> None:
        super().__init__(cluster, data_dir, name, "pyk8s0", runc_root,
                         ["--node-ip", node_ip, *(extra or [])])
        self.netns = netns
        self.prefix = ["nsenter", f"--net=/run/netns/{netns}"]


class NetnsCluster(Env):
    """A server on the host and `nodes` agents, each in its own network namespace (see the module doc)."""

    def __init__(self, base: str | os.PathLike[str], nodes: int = 1, server_args: list[str] | None = None,
                 agent_args: list[str] | None = None, images: tuple[str, ...] = (IMAGE,)) -> None:
        base = str(base)
        self.tag = uuid.uuid4().hex[:6]
        self.base = base
        self.images = images
        # the network is pyk8s dev cluster's (pyk8s.devcluster.Topology): one bridge, a namespace per node
        self.topology = Topology(f"pkn{self.tag}", free_subnet(), nodes)
        self.link = ipaddress.ip_network(self.topology.node_network)
        self.host_ip = self.topology.host_ip
        self.bridge_host = self.topology.bridge
        self.pod_net = reserve_pod_net(range(60, 100))  # the host routes to it: no other test's bridge may hold it
        self.net = self.pod_net.prefix
        self.cluster_cidr = f"{self.net}.0.0/16"
        self.cluster = Cluster(os.path.join(base, "server"), extra_args=[
            "--bind-address", self.host_ip, "--advertise-address", self.host_ip,
            "--cluster-cidr", self.cluster_cidr, *(server_args or [])])
        self.netns: list[str] = []
        self.node_ips: list[str] = []
        self.node_names: list[str] = []
        self.agents: list[NetnsAgent] = []
        for i, node in enumerate(self.topology.nodes):
            ns, ip = node.netns, node.ip
            name = f"nn-{self.tag}-{i}"
            self.netns.append(ns)
            self.node_ips.append(ip)
            self.node_names.append(name)
            self.agents.append(NetnsAgent(self.cluster, os.path.join(base, f"node{i}"), name, ns, ip,
                                          f"/run/pyk8s/nn-{self.tag}-{i}",
                                          ["--cluster-cidr", self.cluster_cidr, *(agent_args or [])]))
        # Env's single-node helpers (wait_pod's log tail, node_ready, log_files) look at node 0
        self.agent = self.agents[0] if self.agents else None  # type: ignore[assignment]
        self.node = self.node_names[0] if self.node_names else ""
        self.data = self.agents[0].data_dir if self.agents else ""
        self.bridge = "pyk8s0"
        self.runc_root = self.agents[0].runc_root if self.agents else ""
        self._routes: list[str] = []

    # ---- bring-up

    def _link_up(self) -> None:
        self.topology.create()

    def start(self, images: tuple[str, ...] | None = None) -> NetnsCluster:
        netns_requirements()
        try:
            self._link_up()
            for a in self.agents:
                os.makedirs(a.data_dir, exist_ok=True)
                import_images(a.data_dir, images or self.images)
            self.cluster.start()
            for a in self.agents:
                a.start()
            self.wait(lambda: all(self._ready(n) for n in self.node_names), 90, "every node Ready")
            self._host_routes()
        except BaseException:
            self.stop()
            raise
        return self

    def __enter__(self) -> NetnsCluster:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _ready(self, name: str) -> bool:
        n = self.get(f"/api/v1/nodes/{name}")
        return bool(n) and any(c["type"] == "Ready" and c["status"] == "True"
                               for c in (n.get("status") or {}).get("conditions", []))

    def _host_routes(self) -> None:
        """The host (where tests run) reaches every node's pods through that node."""
        for name, ip in zip(self.node_names, self.node_ips, strict=True):
            cidr = self.pod_cidr(name)
            if cidr:
                _ip("route", "replace", cidr, "via", ip)
                self._routes.append(cidr)

    # ---- reading

    def pod_cidr(self, node: str | int) -> str:
        name = self.node_names[node] if isinstance(node, int) else node
        n = self.get(f"/api/v1/nodes/{name}") or {}
        return str((n.get("spec") or {}).get("podCIDR") or "")

    def node_index(self, pod: dict[str, Any]) -> int:
        return self.node_names.index(pod["spec"]["nodeName"])

    # ---- running things

    def node_exec(self, node: int, *cmd: str, check: bool = True, timeout: float = 30,
                  input: str | None = None) -> subprocess.CompletedProcess[str]:
        """A command in node `node`'s network namespace (mounts and cgroups stay the host's)."""
        r = subprocess.run(["nsenter", f"--net=/run/netns/{self.netns[node]}", *cmd], capture_output=True, text=True,
                           timeout=timeout, input=input)
        if check and r.returncode != 0:
            raise AssertionError(f"node {node}: {' '.join(cmd)} failed ({r.returncode}): {r.stdout}{r.stderr}")
        return r

    def pod_exec(self, pod: str, *cmd: str, ns: str = "default", container: str = "", check: bool = True,
                 timeout: float = 30) -> subprocess.CompletedProcess[str]:
        args = ["exec", "-n", ns, pod, *(["-c", container] if container else []), "--", *cmd]
        return self.cluster.kubectl(*args, check=check, timeout=timeout)

    # ---- teardown

    def stop(self) -> None:
        try:
            if self.cluster.proc and self.cluster.proc.poll() is None \
                    and any(a.proc and a.proc.poll() is None for a in self.agents):
                with contextlib.suppress(Exception):
                    self.delete_all_pods()
        finally:
            for a in self.agents:
                with contextlib.suppress(Exception):
                    a.stop()
            self.cluster.stop()
            for i, a in enumerate(self.agents):
                self._cleanup_node(i, a)
            for cidr in self._routes:
                _ip("route", "del", cidr, check=False)
            self.topology.destroy()
            self.pod_net.release()

    def _cleanup_node(self, i: int, a: NetnsAgent) -> None:
        """kubelet_harness.force_cleanup, run inside the node's namespace (CNI DEL must find its bridge)."""
        if not os.path.exists(f"/run/netns/{self.netns[i]}"):  # a file (nsfs bind mount), not a directory
            shutil.rmtree(a.runc_root, ignore_errors=True)
            return
        code = ("import sys; from tests.e2e.kubelet_harness import force_cleanup; "
                "force_cleanup(sys.argv[1], sys.argv[2], sys.argv[3])")
        subprocess.run(["nsenter", f"--net=/run/netns/{self.netns[i]}", sys.executable, "-c", code, a.data_dir,
                        "pyk8s0", a.runc_root], capture_output=True, cwd=str(REPO), timeout=120)


def leftovers(tag: str) -> list[str]:
    """What a NetnsCluster with this tag could leave behind on the host: for teardown tests."""
    out = []
    links = _ip("-o", "link", "show").stdout
    out += [f"link {line.split(':')[1].strip()}" for line in links.splitlines() if f"pkn{tag}" in line]
    nss = _ip("netns", "list").stdout
    out += [f"netns {line.split()[0]}" for line in nss.splitlines() if f"pkn{tag}" in line]
    return out


__all__ = ["NetnsCluster", "NetnsAgent", "leftovers", "netns_requirements", "require"]
