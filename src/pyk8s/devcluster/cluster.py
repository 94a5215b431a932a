"""`pyk8s dev cluster`: a server on the host and N `pyk8s agent` nodes, each in its own network namespace.

The server listens on the host bridge's address only; each agent runs under `nsenter --net` in
its node's namespace with its own InternalIP, data dir, runc root and CNI bridge, and routes
to the other nodes' pods with flannel (pyk8s.flannel). What was made is written to
<data-dir>/devcluster.json before anything starts, so `down()` (a later `--down`, Ctrl-C, or a
failed start) removes all of it: pods, processes, namespaces, links and routes.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any

from ..datadir import ensure_private_dir
from .cleanup import remove_pods_left
from .credentials import node_credentials
from .topology import NodeNet, Topology, in_netns

STATE_FILE = "devcluster.json"
API_LINE = re.compile(r"API at (https?://\S+)")


@dataclass
class Options:
    data_dir: str
    nodes: int = 3
    prefix: str = "pyk8sdev"
    node_network: str = "10.99.0.0/24"
    cluster_cidr: str = "10.42.0.0/16"  # k3s's; away from the 10.244/16 a host kubelet may use
    flannel_backend: str = "auto"
    links: int = 1  # bridges the nodes are dealt over, routed by the host (see topology.py)
    port: int = 6443
    server_args: list[str] = field(default_factory=list)
    agent_args: list[str] = field(default_factory=list)
    verbosity: int = 0


class Process:
    """A child writing straight to its log file (so it keeps logging, and stops cleanly, should this
    command be killed), followed here for its last lines (errors) and start-up messages."""

    def __init__(self, name: str, argv: list[str], log_path: str) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.lines: list[str] = []
        self._seen = threading.Condition()
        with open(log_path, "ab") as log:
            start = log.tell()
            self.proc = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT,
                                         env=dict(os.environ, PYTHONUNBUFFERED="1"), start_new_session=True)
        threading.Thread(target=self._follow, args=(start,), daemon=True).start()

    def _follow(self, start: int) -> None:
        with open(self.log_path, encoding="utf-8", errors="replace") as f:
            f.seek(start)
            partial = ""
            while True:
                exited = self.proc.poll() is not None
                chunk = f.read()
                if chunk:
                    *lines, partial = (partial + chunk).split("\n")
                    with self._seen:
                        self.lines.extend(line + "\n" for line in lines)
                        del self.lines[:-400]
                        self._seen.notify_all()
                elif exited:
                    break
                else:
                    time.sleep(0.05)
        with self._seen:
            if partial:
                self.lines.append(partial)
            self._seen.notify_all()

    def wait_for(self, pattern: re.Pattern[str], timeout: float) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        checked = 0
        with self._seen:
            while True:
                for line in self.lines[checked:]:
                    if m := pattern.search(line):
                        return m
                checked = len(self.lines)
                if self.proc.poll() is not None:
                    raise RuntimeError(f"{self.name} exited ({self.proc.returncode}):\n{self.tail()}")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise RuntimeError(f"{self.name} did not start in {timeout:.0f}s:\n{self.tail()}")
                self._seen.wait(min(left, 0.5))

    def tail(self, n: int = 30) -> str:
        return "".join(self.lines[-n:])


class DevCluster:
    def __init__(self, opts: Options, progress: Callable[[str], None] = lambda _m: None) -> None:
        self.opts = opts
        self.data_dir = os.path.abspath(opts.data_dir)
        self.progress = progress
        self.topology = Topology(opts.prefix, opts.node_network, opts.nodes, opts.links)
        self.server: Process | None = None
        self.agents: dict[str, Process] = {}
        self.url = ""

    # ---- paths

    @property
    def kubeconfig(self) -> str:
        return os.path.join(self.data_dir, "server", "kubeconfig.yaml")

    def node_dir(self, node: NodeNet) -> str:
        return os.path.join(self.data_dir, "nodes", node.name)

    def runc_root(self, node: NodeNet) -> str:
        return f"/run/pyk8s/{node.name}"

    # ---- up

    def up(self, timeout: float = 120.0, before_agents: Callable[[NodeNet, str], None] | None = None) -> None:
        """Bring everything up; on any failure take down what came up and raise."""
        self.topology.check()  # a clash stops here, before there is anything of ours to take down
        ensure_private_dir(self.data_dir)
        self._write_state()
        try:
            links = ", ".join(f"{b} ({s.network_address + 1}/{s.prefixlen})"
                              for b, s in zip(self.topology.bridges, self.topology.subnets, strict=True))
            self.progress(f"creating bridge {links} and {len(self.topology.nodes)} node namespaces")
            self.topology.create()
            self._start_server(timeout)
            for node in self.topology.nodes:
                os.makedirs(self.node_dir(node), exist_ok=True)
                if before_agents is not None:
                    before_agents(node, self.node_dir(node))
                self._start_agent(node)
                self._write_state()
            for node in self.topology.nodes:
                self.agents[node.name].wait_for(re.compile(r"pyk8s agent: node \S+ running"), timeout)
                self.progress(f"node {node.name} up ({node.ip}, netns {node.netns})")
        except BaseException:
            self.progress("start failed: tearing down")
            self.down()
            raise

    def _start_server(self, timeout: float) -> None:
        o = self.opts
        host = self.topology.host_ip
        # nodes act as themselves, as under kubeadm: the Node authorizer and NodeRestriction confine each to its own
        argv = [sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", os.path.join(self.data_dir, "server"),
                "--bind-address", host, "--advertise-address", host, "--port", str(o.port),
                "--cluster-cidr", o.cluster_cidr, "--disable-agent", "--authorization-mode", "Node,RBAC",
                "--enable-admission-plugins", "NodeRestriction", "--v", str(o.verbosity), *o.server_args]
        self.progress(f"starting the API server on {host}")
        self.server = Process("server", argv, os.path.join(self.data_dir, "server.log"))
        self._write_state()
        self.url = self.server.wait_for(API_LINE, timeout).group(1)
        self.progress(f"API server up at {self.url}")
        self._bind_flannel_role()

    def _bind_flannel_role(self) -> None:
        from ..client import Client
        from ..flannel.daemon import CLUSTER_ROLE
        from .credentials import FLANNEL_USER

        binding: dict[str, Any] = {"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
                                   "metadata": {"name": "flannel"},
                                   "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "flannel"},
                                   "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User",
                                                 "name": FLANNEL_USER}]}

        async def go() -> None:
            client = Client.from_kubeconfig(self.kubeconfig)
            try:
                for plural, obj in (("clusterroles", CLUSTER_ROLE), ("clusterrolebindings", binding)):
                    gvr = ("rbac.authorization.k8s.io", "v1", plural)
                    await client.patch(gvr, "flannel", obj, patch_type="apply", field_manager="pyk8s-dev",
                                       force=True)
            finally:
                await client.close()

        asyncio.run(go())

    def _start_agent(self, node: NodeNet) -> None:
        o = self.opts
        creds = node_credentials(os.path.join(self.data_dir, "server", "pki"), self.url, node.name, node.ip,
                                 os.path.join(self.node_dir(node), "pki"))
        argv = in_netns(node.netns, sys.executable, "-m", "pyk8s.cli", "agent", "--kubeconfig", creds.kubeconfig,
                        "--tls-cert-file", creds.serving_cert, "--tls-private-key-file", creds.serving_key,
                        "--client-ca-file", creds.client_ca, "--flannel-kubeconfig", creds.flannel_kubeconfig,
                        "--network-policy-kubeconfig", creds.network_policy_kubeconfig,
                        "--local-path-kubeconfig", creds.local_path_kubeconfig,
                        "--node-name", node.name, "--node-ip", node.ip, "--data-dir", self.node_dir(node),
                        "--runc-root", self.runc_root(node), "--cni-bridge", "cni0",
                        "--cluster-cidr", o.cluster_cidr, "--flannel-backend", o.flannel_backend,
                        "--v", str(o.verbosity), *o.agent_args)
        self.progress(f"starting node {node.name}")
        self.agents[node.name] = Process(f"node {node.name}", argv, os.path.join(self.data_dir, f"{node.name}.log"))

    # ---- state

    def _write_state(self) -> None:
        state = {"options": asdict(self.opts), "nodes": [asdict(n) for n in self.topology.nodes],
                 "bridges": self.topology.bridges, "url": self.url,
                 "pids": {"server": self.server.proc.pid if self.server else 0,
                          **{k: p.proc.pid for k, p in self.agents.items()}}}
        path = os.path.join(self.data_dir, STATE_FILE)
        with open(path + ".tmp", "w") as f:
            json.dump(state, f, indent=1)
        os.chmod(path + ".tmp", 0o600)
        os.replace(path + ".tmp", path)

    @classmethod
    def from_state(cls, data_dir: str, progress: Callable[[str], None] = lambda _m: None) -> DevCluster:
        with open(os.path.join(data_dir, STATE_FILE)) as f:
            state = json.load(f)
        dc = cls(Options(**state["options"]), progress)
        dc.topology.nodes = [NodeNet(**n) for n in state["nodes"]]
        dc.url = state.get("url", "")
        dc._pids = {k: int(v) for k, v in (state.get("pids") or {}).items() if v}
        return dc

    _pids: dict[str, int] = {}

    # ---- down

    def down(self, pod_timeout: float = 30.0) -> list[str]:
        """Delete the pods (the kubelets' own clean-up), stop every process, remove pods left behind and the
        network. Returns what could not be removed."""
        if self._server_running() and any(self._agent_running(n) for n in self.topology.nodes):
            self.progress("deleting pods")
            with contextlib.suppress(Exception):
                self._delete_pods(pod_timeout)
        self.progress("stopping nodes and server")
        for name in [n.name for n in self.topology.nodes] + ["server"]:
            self._stop(name)
        for node in self.topology.nodes:
            self._force_cleanup(node)
        self.progress("removing namespaces and links")
        problems = self.topology.destroy()
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(self.data_dir, STATE_FILE))
        return problems

    def _server_running(self) -> bool:
        return self._alive("server")

    def _agent_running(self, node: NodeNet) -> bool:
        return self._alive(node.name)

    def _process(self, name: str) -> Process | None:
        return self.server if name == "server" else self.agents.get(name)

    def _alive(self, name: str) -> bool:
        p = self._process(name)
        if p is not None:
            return p.proc.poll() is None
        pid = self._pids.get(name, 0)
        return bool(pid) and _is_ours(pid, self.data_dir)

    def _stop(self, name: str, timeout: float = 20.0) -> None:
        p = self._process(name)
        if p is not None:
            if p.proc.poll() is None:
                p.proc.send_signal(signal.SIGTERM)
                try:
                    p.proc.wait(timeout)
                except subprocess.TimeoutExpired:
                    p.proc.kill()
                    p.proc.wait()
            return
        pid = self._pids.get(name, 0)
        if pid and _is_ours(pid, self.data_dir):  # a pid from the state file: only if it is still our process
            os.kill(pid, signal.SIGTERM)
            deadline = time.monotonic() + timeout
            while _is_ours(pid, self.data_dir) and time.monotonic() < deadline:
                time.sleep(0.1)
            if _is_ours(pid, self.data_dir):
                os.kill(pid, signal.SIGKILL)

    def _delete_pods(self, timeout: float) -> None:
        from ..client import Client

        async def go() -> None:
            client = Client.from_kubeconfig(self.kubeconfig)
            try:
                pods = ("", "v1", "pods")
                for kind in (("apps", "v1", "deployments"), ("apps", "v1", "daemonsets"), ("apps", "v1", "replicasets"),
                             ("apps", "v1", "statefulsets"), ("batch", "v1", "jobs")):
                    for o in (await client.list(kind))["items"]:  # owners first: nothing re-creates the pods
                        md = o["metadata"]
                        with contextlib.suppress(Exception):
                            await client.delete(kind, md["name"], md["namespace"], propagation="Orphan")
                for p in (await client.list(pods))["items"]:
                    md = p["metadata"]
                    with contextlib.suppress(Exception):
                        await client.delete(pods, md["name"], md["namespace"], grace_period=1)
                deadline = time.monotonic() + timeout
                while (await client.list(pods))["items"] and time.monotonic() < deadline:
                    await asyncio.sleep(0.3)
            finally:
                await client.close()

        asyncio.run(go())

    def _force_cleanup(self, node: NodeNet) -> None:
        """Sandboxes and containers a stopped node left (a pod not deleted in time, a killed agent)."""
        remove_pods_left(self.node_dir(node), self.runc_root(node), "cni0")

    def healthy(self) -> bool:
        return all(p.proc.poll() is None for p in [*([self.server] if self.server else []), *self.agents.values()])

    def usage(self) -> str:
        return (f"pyk8s dev cluster: {len(self.topology.nodes)} nodes, API at {self.url}\n"
                f"  export KUBECONFIG={self.kubeconfig}\n"
                f"  kubectl get nodes -o wide\n"
                f"  logs: {self.data_dir}/*.log\n"
                f"  stop: Ctrl-C, or pyk8s dev cluster --down --data-dir {self.data_dir}")


def _is_ours(pid: int, data_dir: str) -> bool:
    """The pid runs pyk8s with our data dir in its command line (a pid from a state file may have been reused)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = f.read().decode(errors="replace").split("\0")
    except OSError:
        return False
    return "pyk8s.cli" in argv and any(a.startswith(data_dir) for a in argv)
