"""NetworkPolicy end to end: real runc pods on a node in its own network namespace (netns_cluster.py),
enforced by the network policy controller that `pyk8s agent` runs, probed pair by pair on the
upstream e2e grid (namespaces x, y, z; pods a, b, c; busybox httpd on ports 80, 81 and 53).

Each source pod probes all nine pods at once with one `kubectl exec` (busybox nc, 1 s connect timeout),
as upstream's e2e probes with agnhost from every pod; the matrix is printed on a mismatch.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import client_kubeconfig
from tests.e2e.netns_cluster import NetnsCluster, leftovers

from .netpol_matrix import ALL, NAMESPACES, PODS, Probe, converge, expect

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("netpol-e2e"), pytest.mark.timeout(400)]

SERVE = ("mkdir -p /www && echo ok > /www/index.html && httpd -p 80 -h /www && httpd -p 81 -h /www "
         "&& httpd -p 53 -h /www && echo serving && exec sleep 100000")


def _pod(ns: str, name: str, node: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": name, "namespace": ns, "labels": {"pod": name}},
            "spec": {"nodeName": node, "terminationGracePeriodSeconds": 0,
                     "containers": [{"name": "cont", "image": "busybox:e2e", "command": ["sh", "-c", SERVE],
                                     "ports": [{"name": "serve-80-tcp", "containerPort": 80},
                                               {"name": "serve-81-tcp", "containerPort": 81},
                                               {"name": "dns-tcp", "containerPort": 53}]}]}}


class Grid:
    def __init__(self, nc: NetnsCluster) -> None:
        self.nc = nc
        self.ips: dict[str, str] = {}

    def setup(self) -> None:
        for n in NAMESPACES:
            self.nc.api("POST", "/api/v1/namespaces",
                        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n, "labels": {"ns": n}}})
        for n in NAMESPACES:
            self.nc.wait(lambda n=n: self.nc.get(f"/api/v1/namespaces/{n}/serviceaccounts/default"), 30,
                         f"default service account in {n}")
            for p in PODS:
                self.nc.create(_pod(n, p, self.nc.node_names[0]))
        for n in NAMESPACES:
            for p in PODS:
                self.ips[f"{n}/{p}"] = self.nc.wait_running(p, 120, ns=n)["status"]["podIP"]

    def _probe_from(self, src: str, probes: list[Probe]) -> list[bool]:
        ns, pod = src.split("/")
        # busybox nc: -w bounds the connect; the blank line makes httpd answer and close
        script = " ".join(f"(echo | nc -w 1 {self.ips[b]} {port} >/dev/null 2>&1 && echo {i}:1 || echo {i}:0) &"
                          for i, (_, b, port, _) in enumerate(probes)) + " wait"
        out = self.nc.pod_exec(pod, "sh", "-c", script, ns=ns, timeout=30).stdout
        got = dict(line.split(":") for line in out.split())
        return [got.get(str(i)) == "1" for i in range(len(probes))]

    def probe_all(self, probes: list[Probe]) -> dict[Probe, bool]:
        by_src: dict[str, list[Probe]] = {}
        for pr in probes:
            by_src.setdefault(pr[0], []).append(pr)
        with concurrent.futures.ThreadPoolExecutor(len(by_src)) as ex:
            futs = {src: ex.submit(self._probe_from, src, prs) for src, prs in by_src.items()}
        out: dict[Probe, bool] = {}
        for src, prs in by_src.items():
            out.update(zip(prs, futs[src].result(), strict=True))
        return out


@pytest.fixture(scope="module")
def grid(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Grid]:
    nc = NetnsCluster(tmp_path_factory.mktemp("netpol-e2e"), nodes=1)
    tag = nc.tag
    with nc:
        # the agent enforces as system:pyk8s:network-policy, the identity made for it, through
        # --network-policy-kubeconfig (restarted to take it: its pods and its table stay meanwhile)
        conf = client_kubeconfig(nc.cluster, "system:pyk8s:network-policy", [], "netpol")
        agent = nc.agents[0]
        agent.stop()
        agent.extra += ["--network-policy-kubeconfig", conf]
        agent.start()
        g = Grid(nc)
        g.setup()
        yield g
    assert leftovers(tag) == []


@contextlib.contextmanager
def policies(nc: NetnsCluster, *items: tuple[str, dict[str, Any]]) -> Iterator[None]:
    for ns, spec in items:
        name = spec.pop("name")
        nc.api("POST", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies",
               {"apiVersion": "networking.k8s.io/v1", "kind": "NetworkPolicy",
                "metadata": {"name": name, "namespace": ns}, "spec": spec})
    try:
        yield
    finally:
        for ns in NAMESPACES:
            nc.api("DELETE", f"/apis/networking.k8s.io/v1/namespaces/{ns}/networkpolicies")


def check(g: Grid, port: int, allowed: Any) -> None:
    try:
        converge(g.probe_all, port, "TCP", expect(allowed), timeout=15)
    except AssertionError as e:
        table = g.nc.node_exec(0, "nft", "list", "table", "inet", "pyk8s-netpol", check=False).stdout
        raise AssertionError(f"{e}\n--- node table:\n{table}") from None


def ns_of(p: str) -> str:
    return p.split("/")[0]


def test_matrix(grid: Grid) -> None:
    """The upstream e2e cases one after another on one grid; deleting each policy restores traffic."""
    g, nc = grid, grid.nc
    check(g, 80, lambda a, b: True)
    with policies(nc, ("x", {"name": "deny", "podSelector": {}, "policyTypes": ["Ingress"]})):
        check(g, 80, lambda a, b: ns_of(b) != "x")
        # kubelet-style traffic from the node itself still reaches the isolated pods
        nc.node_exec(0, "curl", "-sS", "-m", "5", "-o", "/dev/null", f"http://{g.ips['x/a']}:80/")
    check(g, 80, lambda a, b: True)
    with policies(nc, ("x", {"name": "same-ns", "podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})):
        check(g, 80, lambda a, b: ns_of(b) != "x" or ns_of(a) == "x")
    with policies(nc, ("x", {"name": "combined", "podSelector": {"matchLabels": {"pod": "a"}}, "ingress": [{"from": [
            {"namespaceSelector": {"matchLabels": {"ns": "y"}}},
            {"namespaceSelector": {"matchLabels": {"ns": "z"}}, "podSelector": {"matchLabels": {"pod": "b"}}}]}]})):
        check(g, 80, lambda a, b: b != "x/a" or ns_of(a) == "y" or a == "z/b")
    with policies(nc, ("x", {"name": "cidr", "podSelector": {"matchLabels": {"pod": "a"}}, "ingress": [{"from": [
            {"ipBlock": {"cidr": f"{g.ips['y/b']}/8", "except": [f"{g.ips['y/b']}/32"]}}]}]})):
        check(g, 80, lambda a, b: b != "x/a" or a != "y/b")
    with policies(nc, ("x", {"name": "named", "podSelector": {"matchLabels": {"pod": "a"}},
                             "ingress": [{"ports": [{"port": "serve-81-tcp"}]}]}),
                  ("y", {"name": "range", "podSelector": {"matchLabels": {"pod": "a"}},
                         "ingress": [{"ports": [{"port": 79, "endPort": 80}]}]})):
        check(g, 80, lambda a, b: b != "x/a")
        check(g, 81, lambda a, b: b != "y/a")
    with policies(nc, ("x", {"name": "egress", "podSelector": {"matchLabels": {"pod": "a"}},
                             "policyTypes": ["Egress"],
                             "egress": [{"ports": [{"port": 53, "protocol": "UDP"}, {"port": 53}]}]})):
        check(g, 80, lambda a, b: a != "x/a")
        check(g, 53, lambda a, b: True)
    check(g, 80, lambda a, b: True)
    assert set(g.ips) == set(ALL) and json.dumps(g.ips)
