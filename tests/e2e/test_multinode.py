"""Several nodes on one machine (`pyk8s dev cluster`'s DevCluster): each node a `pyk8s agent` in its own
network namespace, real runc busybox pods, flannel routes between the nodes' pod CIDRs.

Every object the cluster makes is named after a per-module random prefix, and the host's network
is touched only by the bridge and veths of that prefix (the nodes' routes, nft/iptables rules and
CNI bridges live in their own namespaces), so it runs beside other tests and clusters.
"""

from __future__ import annotations

import contextlib
import ipaddress
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from pyk8s.devcluster import DevCluster, NodeNet, Options, free_subnet, in_netns
from tests.conftest import require
from tests.e2e.kubelet_harness import CRI_LINE, IMAGE, Env, import_images, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("multinode"), pytest.mark.timeout(240)]

FLANNEL_PROTO = "211"


wait = Env.wait


class Multi:
    def __init__(self, base: str, backend: str = "auto", nodes: int = 3, links: int = 1) -> None:
        tag = uuid.uuid4().hex[:4]
        self.cluster_cidr = free_subnet("10", range(160, 200), 16)
        self.dc = DevCluster(Options(data_dir=base, nodes=nodes, prefix=f"nd{tag}", node_network=free_subnet(),
                                     cluster_cidr=self.cluster_cidr, flannel_backend=backend, links=links,
                                     port=0))
        self.api: Any = None

    def up(self) -> Multi:
        from kubernetes import client, config

        self.dc.up(before_agents=lambda _n, d: import_images(d))
        self.api = client.CoreV1Api(config.new_client_from_config(config_file=self.dc.kubeconfig))
        for n in self.nodes:
            wait(lambda n=n: self.node_ready(n.name), 60, f"node {n.name} Ready")
        return self

    @property
    def nodes(self) -> list[NodeNet]:
        return self.dc.topology.nodes

    def node(self, name: str) -> dict[str, Any] | None:
        from kubernetes.client.rest import ApiException

        try:
            return self.api.api_client.sanitize_for_serialization(self.api.read_node(name))  # type: ignore[no-any-return]
        except ApiException as e:
            if e.status == 404:
                return None
            raise

    def node_ready(self, name: str) -> bool:
        n = self.node(name) or {}
        return any(c["type"] == "Ready" and c["status"] == "True" for c in (n.get("status") or {}).get("conditions", []))

    def routes(self, node: NodeNet) -> dict[str, dict[str, Any]]:
        out = subprocess.run(in_netns(node.netns, "ip", "-j", "route", "show", "proto", FLANNEL_PROTO),
                             capture_output=True, text=True, check=True).stdout
        return {r["dst"]: r for r in json.loads(out or "[]")}

    def run_pod(self, name: str, node: NodeNet, script: str, restart: str = "Always") -> dict[str, Any]:
        self.api.create_namespaced_pod("default", {
            "apiVersion": "v1", "kind": "Pod", "metadata": {"name": name},
            "spec": {"nodeName": node.name, "restartPolicy": restart, "terminationGracePeriodSeconds": 1,
                     "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                     "command": ["sh", "-c", script]}]}})
        phase = ("Running",) if restart == "Always" else ("Succeeded", "Failed")
        return wait(lambda: self._pod_in(name, phase), 60, f"pod {name} {phase}")  # type: ignore[no-any-return]

    def _pod_in(self, name: str, phases: tuple[str, ...]) -> dict[str, Any] | None:
        p = self.api.api_client.sanitize_for_serialization(self.api.read_namespaced_pod(name, "default"))
        return p if (p.get("status") or {}).get("phase") in phases else None

    def log(self, pod: dict[str, Any], node: NodeNet) -> list[str]:
        md = pod["metadata"]
        d = os.path.join(self.dc.node_dir(node), "logs", f"default_{md['name']}_{md['uid']}", "c")
        with open(os.path.join(d, "0.log")) as f:
            return [m.group(3) for line in f.read().splitlines() if (m := CRI_LINE.match(line))]


# busybox httpd answers /cgi-bin/ip with the address the connection came from
ECHO_SOURCE = ("mkdir -p /www/cgi-bin && printf '#!/bin/sh\\necho Content-Type: text/plain\\necho\\necho $REMOTE_ADDR\\n' "
               "> /www/cgi-bin/ip && chmod +x /www/cgi-bin/ip && exec httpd -f -p 8080 -h /www")


def fetch(url: str) -> str:
    # (busybox-static's wget crashes with -T here; a refused connection fails fast anyway)
    return f"until wget -q -O /tmp/o {url}; do sleep 0.2; done; cat /tmp/o"


def remote_addr(cgi: list[str]) -> list[str]:
    """busybox httpd listens on IPv6 and gives REMOTE_ADDR as [::ffff:a.b.c.d]."""
    return [line.strip("[]").removeprefix("::ffff:") for line in cgi]


@pytest.fixture(scope="module")
def multi(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Multi]:
    requirements()
    m = Multi(str(tmp_path_factory.mktemp("multinode")))
    try:
        yield m.up()
    finally:
        m.dc.down(pod_timeout=10)


def test_each_node_gets_its_own_pod_cidr_and_routes_to_the_others(multi: Multi) -> None:
    cidrs = {n.name: (multi.node(n.name) or {})["spec"]["podCIDR"] for n in multi.nodes}
    nets = [ipaddress.ip_network(c) for c in cidrs.values()]
    assert len(set(nets)) == len(multi.nodes), cidrs
    assert all(n.prefixlen == 24 and n.subnet_of(ipaddress.ip_network(multi.cluster_cidr)) for n in nets), cidrs
    for me in multi.nodes:
        ann = (multi.node(me.name) or {})["metadata"]["annotations"]
        assert ann["flannel.alpha.coreos.com/public-ip"] == me.ip
        want = {cidrs[o.name]: o.ip for o in multi.nodes if o is not me}
        # host-gw: the nodes share the bridge, so each peer's subnet goes straight via its address
        routes = wait(lambda me=me, want=want: r if set(r := multi.routes(me)) == set(want) else None, 20,
                      f"routes on {me.name}")
        assert {dst: r.get("gateway") for dst, r in routes.items()} == want
        assert all(r["dev"] == "eth0" for r in routes.values())


def test_pod_to_pod_across_nodes_keeps_the_source_ip(multi: Multi) -> None:
    n1, n2, n3 = multi.nodes
    server = multi.run_pod("echo-source", n1, ECHO_SOURCE)
    ip = server["status"]["podIP"]
    for name, node in (("client-2", n2), ("client-3", n3)):
        client = multi.run_pod(name, node, fetch(f"http://{ip}:8080/cgi-bin/ip"), restart="Never")
        assert client["status"]["phase"] == "Succeeded", client["status"]
        # the server pod saw the client pod's own address: not masqueraded on the way between nodes
        assert remote_addr(multi.log(client, node)) == [client["status"]["podIP"]]


def test_traffic_leaving_the_cluster_cidr_is_still_masqueraded(multi: Multi) -> None:
    """A pod reaching the host (outside the pod network) shows up as its node's address, as with flannel."""
    n2 = multi.nodes[1]
    seen: list[str] = []
    srv = socket.socket()
    srv.bind((multi.dc.topology.host_ip, 0))
    srv.listen(1)
    srv.settimeout(60)

    def accept() -> None:
        with contextlib.suppress(OSError):
            conn, addr = srv.accept()
            seen.append(addr[0])
            conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\nok")
            conn.close()

    t = threading.Thread(target=accept, daemon=True)
    t.start()
    try:
        pod = multi.run_pod("to-host", n2, fetch(f"http://{multi.dc.topology.host_ip}:{srv.getsockname()[1]}/"),
                            restart="Never")
        t.join(5)
        assert pod["status"]["phase"] == "Succeeded"
        assert seen == [n2.ip], (seen, pod["status"]["podIP"])
    finally:
        srv.close()


def test_nodes_act_as_themselves_and_cannot_reroute_another_node(multi: Multi) -> None:
    """Each agent holds its own system:node:<name> certificate (the Node authorizer and NodeRestriction apply): it
    may annotate its own Node but not point another node's pod traffic somewhere else; kubectl logs reaches a pod
    through its node's own kubelet port."""
    n1, n2 = multi.nodes[0], multi.nodes[1]
    kubeconfig = os.path.join(multi.dc.node_dir(n1), "pki", "kubelet.conf")
    assert os.stat(kubeconfig).st_mode & 0o077 == 0

    def kubectl(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["kubectl", "--kubeconfig", kubeconfig, *args], capture_output=True, text=True)

    assert kubectl("auth", "whoami", "-o", "jsonpath={.status.userInfo.username}").stdout == f"system:node:{n1.name}"
    hijack = kubectl("annotate", "--overwrite", "node", n2.name, f"flannel.alpha.coreos.com/public-ip={n1.ip}")
    assert hijack.returncode != 0 and "Forbidden" in hijack.stderr, hijack
    assert (multi.node(n2.name) or {})["metadata"]["annotations"]["flannel.alpha.coreos.com/public-ip"] == n2.ip
    assert kubectl("annotate", "--overwrite", "node", n1.name, "example.com/own=yes").returncode == 0
    pod = multi.run_pod("says-hello", n2, "echo hello from $(hostname); sleep 3600")
    logs = wait(lambda: subprocess.run(["kubectl", "--kubeconfig", multi.dc.kubeconfig, "logs", "says-hello"],
                                       capture_output=True, text=True).stdout, 20, "kubectl logs")
    assert logs == f"hello from {pod['metadata']['name']}\n"


def test_a_node_removes_its_deleted_local_path_volumes_with_its_own_identity(multi: Multi) -> None:
    """A dev-cluster node's agent acts as system:node:<name> (it may not watch PVs) and cleans its local-path
    volumes with local-path.conf (system:pyk8s:local-path-cleaner): a default-class claim used by a pod on the
    third node, both deleted, leaves neither the PV nor its directory on that node."""
    n = multi.nodes[2]
    conf = os.path.join(multi.dc.node_dir(n), "pki", "local-path.conf")
    assert os.stat(conf).st_mode & 0o077 == 0
    root = (multi.node(n.name) or {})["metadata"]["annotations"]["storage.pyk8s.io/local-path-root"]
    assert root == os.path.join(os.path.abspath(multi.dc.node_dir(n)), "storage")
    multi.api.create_namespaced_persistent_volume_claim("default", {
        "metadata": {"name": "lp"}, "spec": {"accessModes": ["ReadWriteOnce"],
                                             "resources": {"requests": {"storage": "16Mi"}}}})
    multi.api.create_namespaced_pod("default", {
        "apiVersion": "v1", "kind": "Pod", "metadata": {"name": "lp-writer"},
        "spec": {"nodeSelector": {"kubernetes.io/hostname": n.name}, "terminationGracePeriodSeconds": 1,
                 "volumes": [{"name": "d", "persistentVolumeClaim": {"claimName": "lp"}}],
                 "containers": [{"name": "c", "image": IMAGE, "imagePullPolicy": "IfNotPresent",
                                 "command": ["sh", "-c", "echo x > /data/f; sleep 3600"],
                                 "volumeMounts": [{"name": "d", "mountPath": "/data"}]}]}})
    pod = wait(lambda: multi._pod_in("lp-writer", ("Running",)), 60, "lp-writer Running")
    assert pod["spec"]["nodeName"] == n.name
    pv = multi.api.read_namespaced_persistent_volume_claim("lp", "default").spec.volume_name
    path = os.path.join(root, f"{pv}_default_lp")
    wait(lambda: os.path.exists(os.path.join(path, "f")), 20, "data written")
    multi.api.delete_namespaced_pod("lp-writer", "default", grace_period_seconds=0)
    multi.api.delete_namespaced_persistent_volume_claim("lp", "default")
    wait(lambda: pv not in {v.metadata.name for v in multi.api.list_persistent_volume().items}, 60, "PV gone")
    assert not os.path.lexists(path)


def test_a_second_cluster_by_the_same_name_is_refused_and_takes_nothing_down(multi: Multi, tmp_path: Any) -> None:
    from pyk8s.devcluster import TopologyError

    clash = DevCluster(Options(data_dir=str(tmp_path), nodes=3, prefix=multi.dc.opts.prefix,
                               node_network=free_subnet(), port=0))
    with pytest.raises(TopologyError, match="already exist"):
        clash.up()
    busy = DevCluster(Options(data_dir=str(tmp_path), nodes=1, prefix=f"nd{uuid.uuid4().hex[:4]}",
                              node_network=multi.dc.opts.node_network, port=0))
    with pytest.raises(TopologyError, match="in use on this machine"):
        busy.up()
    assert len(multi.dc.topology.leftovers()) >= 1 + 2 * len(multi.nodes)  # bridge, veths, namespaces: all there
    assert all(multi.node_ready(n.name) for n in multi.nodes)


def test_a_deleted_node_loses_its_routes_everywhere(multi: Multi) -> None:
    n1, n2, n3 = multi.nodes
    cidr3 = (multi.node(n3.name) or {})["spec"]["podCIDR"]
    assert cidr3 in multi.routes(n1) and cidr3 in multi.routes(n2)
    multi.dc._stop(n3.name)  # the node goes away: its kubelet first, then its Node
    multi.api.delete_node(n3.name)
    for n in (n1, n2):
        wait(lambda n=n: cidr3 not in multi.routes(n), 20, f"route to {cidr3} gone on {n.name}")
    assert set(multi.routes(n1)) == {(multi.node(n2.name) or {})["spec"]["podCIDR"]}


def test_teardown_leaves_no_namespace_link_route_or_process(multi: Multi) -> None:
    dc = multi.dc
    pids = [p.proc.pid for p in [dc.server, *dc.agents.values()] if p is not None]
    assert dc.down(pod_timeout=10) == []
    assert dc.topology.leftovers() == []
    assert not [n for n in os.listdir("/run/netns") if n.startswith(dc.opts.prefix)]
    assert all(not os.path.exists(f"/proc/{pid}") or _zombie(pid) for pid in pids)
    assert not any(os.path.exists(dc.runc_root(n)) for n in dc.topology.nodes)
    host_routes = subprocess.run(["ip", "route"], capture_output=True, text=True).stdout
    assert multi.cluster_cidr.split(".0.0/")[0] + "." not in host_routes


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ")[1].startswith("Z")
    except OSError:
        return True


def test_vxlan_backend_carries_pod_traffic_through_flannel_1(tmp_path: Any) -> None:
    """--flannel-backend vxlan: each node has flannel.1 (VNI 1, UDP 8472, MTU 1450), routes through it, FDB entries
    sending each peer's VTEP MAC to its address; pods get MTU 1450; the source IP still survives."""
    requirements()
    m = Multi(str(tmp_path), backend="vxlan", nodes=2)
    try:
        m.up()
        n1, n2 = m.nodes
        server = m.run_pod("echo-source", n1, ECHO_SOURCE)
        client = m.run_pod("client", n2, fetch(f"http://{server['status']['podIP']}:8080/cgi-bin/ip") +
                           "; cat /sys/class/net/eth0/mtu", restart="Never")
        assert client["status"]["phase"] == "Succeeded"
        addr, mtu = m.log(client, n2)
        assert remote_addr([addr]) == [client["status"]["podIP"]] and mtu == "1450"
        for me, peer in ((n1, n2), (n2, n1)):
            peer_cidr = (m.node(peer.name) or {})["spec"]["podCIDR"]
            route = m.routes(me)[peer_cidr]
            assert route["dev"] == "flannel.1" and route["gateway"] == peer_cidr.split("/")[0]
            link = json.loads(subprocess.run(in_netns(me.netns, "ip", "-j", "-d", "link", "show", "flannel.1"),
                                             capture_output=True, text=True, check=True).stdout)[0]
            vx = link["linkinfo"]["info_data"]
            assert (link["mtu"], vx["id"], vx["port"], vx["local"]) == (1450, 1, 8472, me.ip)
            peer_mac = json.loads((m.node(peer.name) or {})["metadata"]["annotations"][
                "flannel.alpha.coreos.com/backend-data"])["VtepMAC"]
            fdb = subprocess.run(in_netns(me.netns, "bridge", "fdb", "show", "dev", "flannel.1"),
                                 capture_output=True, text=True, check=True).stdout
            assert f"{peer_mac} dst {peer.ip} self permanent" in fdb
    finally:
        assert m.dc.down(pod_timeout=10) == []
        assert m.dc.topology.leftovers() == []


def test_auto_backend_uses_host_gw_on_a_shared_link_and_vxlan_across_links(tmp_path: Any) -> None:
    """Nodes 1 and 3 share a bridge, node 2 is on another one that the host routes to: 1<->3 get direct routes,
    2<->1 and 2<->3 go through flannel.1; pods talk both ways with their own addresses."""
    requirements()
    with open("/proc/sys/net/ipv4/ip_forward") as f:
        require("the host forwards IPv4 between its links (net.ipv4.ip_forward=1)", f.read().strip() == "1")
    m = Multi(str(tmp_path), backend="auto", nodes=3, links=2)
    try:
        m.up()
        n1, n2, n3 = m.nodes
        assert n1.bridge == n3.bridge != n2.bridge
        cidr = {n.name: (m.node(n.name) or {})["spec"]["podCIDR"] for n in m.nodes}
        r1 = wait(lambda: r if len(r := m.routes(n1)) == 2 else None, 20, "routes on node1")
        assert (r1[cidr[n3.name]]["gateway"], r1[cidr[n3.name]]["dev"]) == (n3.ip, "eth0")
        assert (r1[cidr[n2.name]]["gateway"], r1[cidr[n2.name]]["dev"]) == (cidr[n2.name].split("/")[0], "flannel.1")
        r2 = wait(lambda: r if len(r := m.routes(n2)) == 2 else None, 20, "routes on node2")
        assert {r["dev"] for r in r2.values()} == {"flannel.1"}
        server = m.run_pod("echo-source", n1, ECHO_SOURCE)
        for name, node in (("via-vxlan", n2), ("via-host-gw", n3)):
            client = m.run_pod(name, node, fetch(f"http://{server['status']['podIP']}:8080/cgi-bin/ip"), restart="Never")
            assert client["status"]["phase"] == "Succeeded"
            assert remote_addr(m.log(client, node)) == [client["status"]["podIP"]]
    finally:
        assert m.dc.down(pod_timeout=10) == []
        assert m.dc.topology.leftovers() == []


def _start_cli(base: str, prefix: str, net: str) -> tuple[subprocess.Popen[str], list[str]]:
    argv = [sys.executable, "-m", "pyk8s.cli", "dev", "cluster", "--nodes", "2", "--data-dir", base, "--name", prefix,
            "--node-network", net, "--cluster-cidr", free_subnet("10", range(160, 200), 16), "--port", "0"]
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                            env=dict(os.environ, PYTHONUNBUFFERED="1"))
    lines: list[str] = []
    assert proc.stdout is not None
    for line in proc.stdout:
        lines.append(line)
        if "export KUBECONFIG=" in line:
            break
    else:
        raise AssertionError("pyk8s dev cluster did not come up:\n" + "".join(lines))
    return proc, lines


@pytest.mark.parametrize("stop", ["ctrl-c", "killed-then-down"])
def test_dev_cluster_command_up_kubectl_and_teardown(tmp_path: Any, stop: str) -> None:
    """`pyk8s dev cluster` prints progress and how to use it; kubectl sees its nodes; Ctrl-C, or `--down` after the
    command itself was killed (its server and agents still running), removes everything."""
    from pyk8s.devcluster import Topology

    requirements()
    prefix, net = f"nd{uuid.uuid4().hex[:4]}", free_subnet()
    base = str(tmp_path / "dev")
    proc, lines = _start_cli(base, prefix, net)
    try:
        out = "".join(lines)
        assert f"creating bridge {prefix}br" in out and f"node {prefix}-node2 up" in out
        kubeconfig = next(x for x in lines if "export KUBECONFIG=" in x).split("=", 1)[1].strip()
        def names() -> list[str] | None:
            r = subprocess.run(["kubectl", "get", "nodes", "-o", "name"], capture_output=True, text=True,
                               env=dict(os.environ, KUBECONFIG=kubeconfig))
            return r.stdout.split() if r.returncode == 0 and len(r.stdout.split()) == 2 else None

        nodes = wait(names, 30, "kubectl get nodes")
        assert sorted(nodes) == [f"node/{prefix}-node1", f"node/{prefix}-node2"]
        if stop == "ctrl-c":
            proc.send_signal(signal.SIGINT)
            rest, _ = proc.communicate(timeout=60)
            assert proc.returncode == 0, rest
        else:
            proc.kill()
            proc.wait()
            down = subprocess.run([sys.executable, "-m", "pyk8s.cli", "dev", "cluster", "--down", "--data-dir", base],
                                  capture_output=True, text=True, timeout=60)
            assert down.returncode == 0, down.stdout + down.stderr
            rest = down.stdout
            # the server outlived its parent with its log intact, and stopped cleanly on SIGTERM (not SIGKILL'd
            # after a timeout: it once logged into a pipe to the killed command, and its shutdown died there)
            with open(os.path.join(base, "server.log")) as f:
                assert "pyk8s: shutting down" in f.read()
        assert "down: no namespace, link or process left" in rest
        assert Topology(prefix, net, 2).leftovers() == []
        assert not os.path.exists(os.path.join(base, "devcluster.json"))
        assert not [p for p in os.listdir("/proc") if p.isdigit() and _cmdline_has(p, base)]
    finally:
        if proc.poll() is None:
            proc.kill()
        if os.path.exists(os.path.join(base, "devcluster.json")):
            subprocess.run([sys.executable, "-m", "pyk8s.cli", "dev", "cluster", "--down", "--data-dir", base],
                           capture_output=True, timeout=60)


def _cmdline_has(pid: str, text: str) -> bool:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return text.encode() in f.read()
    except OSError:
        return False

