"""Several nodes on one machine: a host bridge for the server and one network namespace per node.

    host:   <prefix>br  (bridge, .1 of the node network: the API server listens here)
             |-- <prefix>v1 ==veth== eth0 in netns <prefix>-node1 (.11)
             |-- <prefix>v2 ==veth== eth0 in netns <prefix>-node2 (.12)

With links=N the node network is split in N subnets, one bridge each (<prefix>br, <prefix>br1,
...), and the nodes are dealt over them in turn; the host routes between the links, so nodes on
different links reach each other only through a gateway (flannel then uses VXLAN between them).

Every object is named after the prefix, so two clusters (or tests) on one machine never share
one, and destroy() removes exactly what create() made: the namespaces (their ends of the veth
pairs and whatever the nodes made inside go with them), then the host ends and the bridge.
"""

from __future__ import annotations

import contextlib
import ipaddress
import os
import random
import subprocess
from dataclasses import dataclass, field

NETNS_DIR = "/run/netns"
MAX_IFNAME = 15  # IFNAMSIZ - 1


class TopologyError(Exception):
    pass


def _run(*argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    r = subprocess.run(argv, capture_output=True, text=True)
    if check and r.returncode != 0:
        raise TopologyError(f"{' '.join(argv)}: {r.stderr.strip() or r.stdout.strip()}")
    return r


def in_use(net: ipaddress.IPv4Network) -> str:
    """A host address or route that overlaps net ("" when none): a node network must not shadow the host's own."""
    routes = _run("ip", "-4", "-o", "route", "show", "table", "all", check=False).stdout.splitlines()
    addrs = _run("ip", "-4", "-o", "addr", "show", check=False).stdout.splitlines()
    for line in routes + addrs:
        for word in line.split():
            if word[:1].isdigit() and word.count(".") == 3:
                with contextlib.suppress(ValueError):
                    other = ipaddress.ip_network(word, strict=False)
                    if other.prefixlen > 0 and other.overlaps(net):
                        return line.strip()
    return ""


def free_subnet(first_octets: str = "172", second: range = range(20, 32), prefixlen: int = 24) -> str:
    """A random <first>.<second>.x.0/<prefixlen> no host address or route touches (for tests and clusters side
    by side on one machine)."""
    for _ in range(100):
        net = ipaddress.ip_network(f"{first_octets}.{random.choice(second)}.{random.randint(0, 255)}.0/{prefixlen}",
                                   strict=False)
        assert isinstance(net, ipaddress.IPv4Network)
        if not in_use(net):
            return str(net)
    raise TopologyError(f"no free {first_octets}.x.y.0/{prefixlen} network on this machine")


def in_netns(netns: str, *argv: str) -> list[str]:
    """argv run in a node's network namespace (nsenter, not `ip netns exec`, which hides the cgroup mounts)."""
    return ["nsenter", f"--net={os.path.join(NETNS_DIR, netns)}", *argv]


@dataclass
class NodeNet:
    name: str  # the Node's name
    netns: str
    host_veth: str
    ip: str
    bridge: str = ""  # the host bridge of its link
    gateway: str = ""  # the host's address on that link
    prefixlen: int = 24


@dataclass
class Topology:
    prefix: str
    node_network: str = "10.99.0.0/24"
    node_count: int = 3
    links: int = 1
    nodes: list[NodeNet] = field(default_factory=list)

    def __post_init__(self) -> None:
        net = ipaddress.ip_network(self.node_network)
        if self.links < 1 or self.links > self.node_count:
            raise TopologyError(f"links {self.links}: between 1 and the number of nodes ({self.node_count})")
        extra = (self.links - 1).bit_length()
        if net.version != 4 or net.num_addresses >> extra <= 12 + self.node_count:  # nodes take .1<i>
            raise TopologyError(f"node network {self.node_network}: an IPv4 network with room for "
                                f"{self.node_count} nodes on {self.links} links is needed")
        if len(f"{self.prefix}br{self.links}") > MAX_IFNAME or len(f"{self.prefix}v{self.node_count}") > MAX_IFNAME:
            raise TopologyError(f"prefix {self.prefix!r} too long for interface names (at most "
                                f"{MAX_IFNAME - 2 - len(str(self.node_count))} characters)")
        if not self.nodes:
            self.nodes = []
            for i in range(1, self.node_count + 1):
                link = (i - 1) % self.links
                sub = self.subnets[link]
                self.nodes.append(NodeNet(f"{self.prefix}-node{i}", f"{self.prefix}-node{i}", f"{self.prefix}v{i}",
                                          str(sub.network_address + 10 + i), self.bridge_of(link),
                                          str(sub.network_address + 1), sub.prefixlen))

    @property
    def subnets(self) -> list[ipaddress.IPv4Network]:
        net = ipaddress.ip_network(self.node_network)
        assert isinstance(net, ipaddress.IPv4Network)
        return list(net.subnets((self.links - 1).bit_length()))[:self.links]

    def bridge_of(self, link: int) -> str:
        return f"{self.prefix}br" if link == 0 else f"{self.prefix}br{link}"

    @property
    def bridges(self) -> list[str]:
        return [self.bridge_of(i) for i in range(self.links)]

    @property
    def bridge(self) -> str:
        return self.bridge_of(0)

    @property
    def host_ip(self) -> str:
        """The host's address on the first link: where the API server listens."""
        return str(self.subnets[0].network_address + 1)

    def create(self) -> None:
        """Make the bridges and the nodes' namespaces; on failure, remove what was made."""
        self.check()
        try:
            for i, sub in enumerate(self.subnets):
                br = self.bridge_of(i)
                _run("ip", "link", "add", br, "type", "bridge")
                _run("ip", "addr", "add", f"{sub.network_address + 1}/{sub.prefixlen}", "dev", br)
                _run("ip", "link", "set", br, "up")
            for n in self.nodes:
                self._create_node(n)
        except Exception:
            self.destroy()
            raise

    def check(self) -> None:
        """Refuse, before making anything, names another cluster holds and networks the host already uses: a
        clash must not lead to tearing down what is not ours."""
        if taken := self.leftovers():
            raise TopologyError(f"{', '.join(taken)} already exist on this machine: another cluster by the name "
                                f"{self.prefix!r} runs (choose another name, or take that one down)")
        for sub in self.subnets:
            if used := in_use(sub):
                raise TopologyError(f"node network {sub} is in use on this machine ({used}): choose another")

    def _create_node(self, n: NodeNet) -> None:
        _run("ip", "netns", "add", n.netns)
        _run("ip", "link", "add", n.host_veth, "type", "veth", "peer", "name", "eth0", "netns", n.netns)
        _run("ip", "link", "set", n.host_veth, "master", n.bridge, "up")
        for argv in (["ip", "link", "set", "lo", "up"],
                     ["ip", "addr", "add", f"{n.ip}/{n.prefixlen}", "dev", "eth0"],
                     ["ip", "link", "set", "eth0", "up"],
                     ["ip", "route", "add", "default", "via", n.gateway],
                     # the node routes its pods' traffic (sysctls under /proc/sys/net are per namespace)
                     ["sysctl", "-q", "-w", "net.ipv4.ip_forward=1"]):
            _run(*in_netns(n.netns, *argv))

    def destroy(self) -> list[str]:
        """Remove every namespace, link and the bridge (idempotent); what could not be removed, as messages."""
        problems = []
        for n in self.nodes:
            if os.path.exists(os.path.join(NETNS_DIR, n.netns)):
                r = _run("ip", "netns", "del", n.netns, check=False)
                if r.returncode != 0:
                    problems.append(f"netns {n.netns}: {r.stderr.strip()}")
            _run("ip", "link", "del", n.host_veth, check=False)  # gone with its peer, unless the peer never moved
        for br in self.bridges:
            _run("ip", "link", "del", br, check=False)
        for link in [*self.bridges, *(n.host_veth for n in self.nodes)]:
            if _run("ip", "link", "show", "dev", link, check=False).returncode == 0:
                problems.append(f"link {link} still present")
        return problems

    def leftovers(self) -> list[str]:
        """What of this topology exists on the machine (empty after destroy())."""
        out = [f"netns {n.netns}" for n in self.nodes if os.path.exists(os.path.join(NETNS_DIR, n.netns))]
        links = _run("ip", "-o", "link", "show", check=False).stdout
        out += [f"link {name}" for name in (*self.bridges, *(n.host_veth for n in self.nodes))
                if f" {name}:" in links or f" {name}@" in links]
        routes = _run("ip", "-o", "route", "show", check=False).stdout
        out += [f"route {line}" for line in routes.splitlines() if any(f" dev {b} " in line + " " for b in self.bridges)]
        return out
