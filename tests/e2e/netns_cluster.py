"""A real control plane on the host plus N real nodes, each in a network namespace of its own.

The layout is the one of a small cluster of machines on one link:

    host:  bridge pkn<tag>  172.A.B.1/24  <- pyk8s server (--bind-address/--advertise-address)
    node i: netns pkn<tag>-<i>, eth0 = 172.A.B.(10+i)/24 on that bridge, default route via .1,
            `pyk8s agent` (kubelet + whatever the agent runs for its node) started with nsenter --net

Each node has its own kubelet port 10250, CNI bridge, nftables and routes, so modules using
this harness do not collide with each other, with the host-network kubelet tests (group
`runc`) or with a `make run` on the same machine; give each module its own xdist_group all
the same (runc start-up is CPU heavy). The server allocates each node a /24 of a /16 pod
network chosen at random; the host gets a route to every node's pod CIDR, so tests on the
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
import random
import shutil
import subprocess
import sys
import uuid
from typing import Any

from tests.cluster import REPO, Cluster
from tests.conftest import require, require_binary
from tests.e2e.kubelet_harness import IMAGE, Agent, Env, import_images, requirements


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


def _free_subnet() -> ipaddress.IPv4Network:
    """A 172.16/12 /24 that no address or route on the host uses yet."""
    used = subprocess.run(["ip", "-4", "route", "show", "table", "all"], capture_output=True, text=True).stdout
    used += subprocess.run(["ip", "-4", "addr"], capture_output=True, text=True).stdout
    for _ in range(100):
        net = ipaddress.ip_network(f"172.{random.randint(20, 31)}.{random.randint(0, 255)}.0/24")
        if str(net.network_address)[:-1] not in used:
            return net
    raise RuntimeError("no free 172.x.y.0/24 for the node link")


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
        self.link = _free_subnet()
        hosts = list(self.link.hosts())
        self.host_ip = str(hosts[0])
        self.bridge_host = f"pkn{self.tag}"
        self.net = f"10.{random.randint(60, 250)}"
        self.cluster_cidr = f"{self.net}.0.0/16"
        self.cluster = Cluster(os.path.join(base, "server"), extra_args=[
            "--bind-address", self.host_ip, "--advertise-address", self.host_ip,
            "--cluster-cidr", self.cluster_cidr, *(server_args or [])])
        self.netns: list[str] = []
        self.node_ips: list[str] = []
        self.node_names: list[str] = []
        self.agents: list[NetnsAgent] = []
        for i in range(nodes):
            ns = f"pkn{self.tag}-{i}"
            ip = str(hosts[9 + i])
            name = f"nn-{self.tag}-{i}"
            self.netns.append(ns)
            self.node_ips.append(ip)
            self.node_names.append(name)
            self.agents.append(NetnsAgent(self.cluster, os.path.join(base, f"node{i}"), name, ns, ip,
                                          f"/run/pyk8s/nn-{self.tag}-{i}", agent_args))
        # Env's single-node helpers (wait_pod's log tail, node_ready, log_files) look at node 0
        self.agent = self.agents[0] if self.agents else None  # type: ignore[assignment]
        self.node = self.node_names[0] if self.node_names else ""
        self.data = self.agents[0].data_dir if self.agents else ""
        self.bridge = "pyk8s0"
        self.runc_root = self.agents[0].runc_root if self.agents else ""
        self._routes: list[str] = []

    # ---- bring-up

    def _link_up(self) -> None:
        _ip("link", "add", self.bridge_host, "type", "bridge")
        _ip("addr", "add", f"{self.host_ip}/{self.link.prefixlen}", "dev", self.bridge_host)
        _ip("link", "set", self.bridge_host, "up")
        for i, (ns, ip) in enumerate(zip(self.netns, self.node_ips, strict=True)):
            host_end, node_end = f"pkn{self.tag}h{i}", f"pkn{self.tag}n{i}"
            _ip("netns", "add", ns)
            _ip("link", "add", host_end, "type", "veth", "peer", "name", node_end)
            _ip("link", "set", node_end, "netns", ns)
            _ip("link", "set", host_end, "master", self.bridge_host, "up")
            _ip("link", "set", node_end, "name", "eth0", netns=ns)
            _ip("addr", "add", f"{ip}/{self.link.prefixlen}", "dev", "eth0", netns=ns)
            _ip("link", "set", "eth0", "up", netns=ns)
            _ip("link", "set", "lo", "up", netns=ns)
            _ip("route", "add", "default", "via", self.host_ip, netns=ns)
            self.node_exec(i, "sysctl", "-qw", "net.ipv4.ip_forward=1")

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
            for i, ns in enumerate(self.netns):
                _ip("link", "del", f"pkn{self.tag}h{i}", check=False)
                _ip("netns", "del", ns, check=False)
            _ip("link", "del", self.bridge_host, check=False)

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
