"""NetworkPolicy enforcement by `pyk8s netpol` on two nodes of network namespaces (netpol_rig.py).

Real API server, real Pod and NetworkPolicy objects, one controller in each node's namespace
(as user system:pyk8s:network-policy) programming real nftables, real TCP/UDP probes between pod namespaces on every ordered pair of
the upstream e2e grid (namespaces x, y, z; pods a, b, c). The cases follow upstream's
test/e2e/network/netpol/network_policy.go.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.cluster import REPO, Cluster, client_kubeconfig, scratch_dir

from .netpol_matrix import ALL, NAMESPACES, PODS, converge, expect
from .netpol_rig import NODES, Rig, pod_manifest, requirements

pytestmark = [pytest.mark.e2e, pytest.mark.xdist_group("netpol-rig"), pytest.mark.timeout(180)]


@pytest.fixture(scope="module")
def env() -> Iterator[tuple[Rig, Cluster, Any]]:
    requirements()
    rig = Rig()
    cluster: Cluster | None = None
    try:
        rig.build()
        # the server listens on the host end of node0's link; node1 reaches it through the host
        cluster = Cluster(scratch_dir("pyk8s-netpol-"),
                          ["--bind-address", rig.host_ip[0], "--tls-san", rig.host_ip[0]]).start()
        for n in range(len(NODES)):
            rig.node(n, "ip", "route", "add", f"{rig.host_ip[0]}/32", "via", rig.host_ip[n], check=n != 0)
        from kubernetes import client as k

        api = cluster.api_client()
        core = k.CoreV1Api(api)
        for n in NAMESPACES:
            core.create_namespace({"metadata": {"name": n, "labels": {"ns": n}}})
        for n in NAMESPACES:
            _wait_default_service_account(core, n)
            for p in PODS:
                core.create_namespaced_pod(n, pod_manifest(n, p, NODES[rig.node_of[f"{n}/{p}"]]))
                ip = rig.ips[f"{n}/{p}"]
                core.patch_namespaced_pod_status(p, n, {"status": {"phase": "Running", "podIP": ip,
                                                                   "podIPs": [{"ip": ip}]}})
        # each node's controller with the identity the server's own node uses (a node's credentials may
        # list only its own pods, as v1.33's Node authorizer rules)
        rig.start_controllers([client_kubeconfig(cluster, "system:pyk8s:network-policy", [], f"netpol-{node}")
                               for node in NODES])
        rig.wait_controllers()
        yield rig, cluster, api
    finally:
        if cluster is not None:
            cluster.stop()
            shutil.rmtree(cluster.data_dir, ignore_errors=True)
        rig.close()


def _wait_default_service_account(core: Any, ns: str) -> None:
    """Pods are admitted once the serviceaccount controller made the namespace's default account."""
    deadline = time.monotonic() + 20
    while not core.list_namespaced_service_account(ns, field_selector="metadata.name=default").items:
        assert time.monotonic() < deadline, f"no default service account in {ns}"
        time.sleep(0.05)


@contextlib.contextmanager
def policies(api: Any, *items: tuple[str, dict[str, Any]]) -> Iterator[None]:
    """Create the policies; on the way out delete them, and check that deleting restores all traffic."""
    from kubernetes import client as k

    net = k.NetworkingV1Api(api)
    for ns, spec in items:
        net.create_namespaced_network_policy(ns, {"metadata": {"name": spec.pop("name")}, "spec": spec})
    try:
        yield
    finally:
        for ns in NAMESPACES:
            net.delete_collection_namespaced_network_policy(ns)


def _allow_all(rig: Rig) -> None:
    converge(rig.probe_all, 80, "TCP", expect(lambda a, b: True))


def _check(rig: Rig, cluster: Cluster, port: int, proto: str, allowed: Any) -> None:
    try:
        converge(rig.probe_all, port, proto, expect(allowed))
    except AssertionError as e:
        raise AssertionError(f"{e}\n--- node0 table:\n{rig.ruleset(0)}\n--- node1 table:\n{rig.ruleset(1)}\n"
                             f"--- controllers:\n{''.join(rig.controller_log[-20:])}") from None


def ns_of(p: str) -> str:
    return p.split("/")[0]


def test_no_policy_allows_everything(env: Any) -> None:
    rig, cluster, api = env
    _allow_all(rig)


def test_default_deny_ingress(env: Any) -> None:
    """upstream: 'should support a 'default-deny-ingress' policy'; the node's own traffic still reaches x."""
    rig, cluster, api = env
    with policies(api, ("x", {"name": "deny", "podSelector": {}, "policyTypes": ["Ingress"]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x")
        _check(rig, cluster, 81, "UDP", lambda a, b: ns_of(b) != "x")
        # kubelet probes come from the node: allowed, as upstream CNIs allow them
        for p in ("x/a", "x/b"):
            rig.node(rig.node_of[p], "python3", "-c", f"import socket; socket.create_connection(('{rig.ips[p]}', 80), 2)")
    _allow_all(rig)


def test_allow_from_same_namespace(env: Any) -> None:
    rig, cluster, api = env
    with policies(api, ("x", {"name": "same-ns", "podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x" or ns_of(a) == "x")
    _allow_all(rig)


def test_namespace_selector_and_combined_peer(env: Any) -> None:
    """x/a takes traffic from namespace y (any pod) and from z/b only (podSelector AND namespaceSelector
    in one peer); a pod labelled pod=b in x does not qualify (the peer names namespace z)."""
    rig, cluster, api = env
    spec = {"name": "ns-sel", "podSelector": {"matchLabels": {"pod": "a"}},
            "ingress": [{"from": [{"namespaceSelector": {"matchLabels": {"ns": "y"}}},
                                  {"namespaceSelector": {"matchExpressions": [
                                      {"key": "kubernetes.io/metadata.name", "operator": "In", "values": ["z"]}]},
                                   "podSelector": {"matchLabels": {"pod": "b"}}}]}]}
    with policies(api, ("x", spec)):
        _check(rig, cluster, 80, "TCP", lambda a, b: b != "x/a" or ns_of(a) == "y" or a == "z/b")


def test_pod_selector_only_names_the_policy_namespace(env: Any) -> None:
    rig, cluster, api = env
    with policies(api, ("x", {"name": "from-b", "podSelector": {"matchLabels": {"pod": "a"}},
                              "ingress": [{"from": [{"podSelector": {"matchLabels": {"pod": "b"}}}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: b != "x/a" or a == "x/b")
    _allow_all(rig)


def test_ip_block_with_except(env: Any) -> None:
    rig, cluster, api = env
    spec = {"name": "cidr", "podSelector": {"matchLabels": {"pod": "a"}},
            "ingress": [{"from": [{"ipBlock": {"cidr": "10.204.0.0/16", "except": [f"{rig.ips['y/b']}/32"]}}]}]}
    with policies(api, ("x", spec)):
        _check(rig, cluster, 80, "TCP", lambda a, b: b != "x/a" or a != "y/b")


def test_named_port_and_end_port(env: Any) -> None:
    """Named ports resolve on the destination pod per protocol; endPort opens the range."""
    rig, cluster, api = env
    with policies(api,
                  ("x", {"name": "named", "podSelector": {"matchLabels": {"pod": "a"}},
                         "ingress": [{"ports": [{"port": "serve-81-tcp"}, {"port": "serve-81-udp", "protocol": "UDP"}]}]}),
                  ("y", {"name": "range", "podSelector": {"matchLabels": {"pod": "a"}},
                         "ingress": [{"ports": [{"port": 79, "endPort": 80}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: b != "x/a")
        _check(rig, cluster, 81, "TCP", lambda a, b: b != "y/a")
        _check(rig, cluster, 81, "UDP", lambda a, b: b != "y/a")
    _allow_all(rig)


def test_egress_deny_with_dns_exception(env: Any) -> None:
    """x/a may send only UDP 53; replies to connections others open to x/a still flow (established)."""
    rig, cluster, api = env
    with policies(api, ("x", {"name": "egress", "podSelector": {"matchLabels": {"pod": "a"}},
                              "policyTypes": ["Egress"], "egress": [{"ports": [{"port": 53, "protocol": "UDP"}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: a != "x/a" or a == b)
        _check(rig, cluster, 53, "UDP", lambda a, b: True)
        _check(rig, cluster, 81, "UDP", lambda a, b: a != "x/a" or a == b)
    _allow_all(rig)


def test_policy_types_default_isolates_ingress_with_egress_rules(env: Any) -> None:
    """No policyTypes and only egress rules: Ingress and Egress, so x/b takes no connection at all."""
    rig, cluster, api = env
    with policies(api, ("x", {"name": "eg-only", "podSelector": {"matchLabels": {"pod": "b"}},
                              "egress": [{"to": [{"podSelector": {}}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: (b != "x/b" or a == b)
               and (a != "x/b" or ns_of(b) == "x"))
    _allow_all(rig)


def test_relabelling_pods_and_namespaces_moves_access(env: Any) -> None:
    """An attacker's pod cannot keep access after losing its label; a namespace gains access by label."""
    rig, cluster, api = env
    from kubernetes import client as k

    core = k.CoreV1Api(api)
    spec = {"name": "team", "podSelector": {}, "ingress": [{"from": [
        {"namespaceSelector": {"matchLabels": {"team": "blue"}}, "podSelector": {"matchLabels": {"pod": "c"}}}]}]}
    with policies(api, ("x", spec)):
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x")
        core.patch_namespace("z", {"metadata": {"labels": {"team": "blue"}}})
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x" or a == "z/c")
        core.patch_namespaced_pod("c", "z", {"metadata": {"labels": {"pod": "cc"}}})
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x")
    core.patch_namespaced_pod("c", "z", {"metadata": {"labels": {"pod": "c"}}})
    core.patch_namespace("z", {"metadata": {"labels": {"team": None}}})
    _allow_all(rig)


def test_a_pod_reaches_itself_through_its_service(env: Any) -> None:
    """Upstream: a pod cannot block access to itself. Through a Service, kube-proxy's DNAT and hairpin
    masquerade put its own packets on the forward path (from and to its address): still allowed;
    another pod through the same Service is not."""
    rig, cluster, api = env
    n, svc, me = rig.node_of["x/a"], "10.96.77.77", rig.ips["x/a"]
    table = f"netpol-{rig.tag}-svc"  # a kube-proxy stand-in, in the node's own namespace
    script = (f"add table ip {table}\n"
              f"add chain ip {table} pre {{ type nat hook prerouting priority -100; }}\n"
              f"add rule ip {table} pre ip daddr {svc} tcp dport 80 dnat to {me}:80\n"
              f"add chain ip {table} post {{ type nat hook postrouting priority 100; }}\n"
              f"add rule ip {table} post ip saddr {me} ip daddr {me} masquerade\n")
    subprocess.run(["nsenter", f"--net=/run/netns/{rig.node_ns[n]}", "nft", "-f", "-"], input=script, text=True,
                   check=True)
    try:
        assert rig.probe_addr("x/a", svc, 80) and rig.probe_addr("x/c", svc, 80)
        with policies(api, ("x", {"name": "deny-all", "podSelector": {}, "policyTypes": ["Ingress", "Egress"]})):
            _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x" and ns_of(a) != "x")
            assert rig.probe_addr("x/a", svc, 80)
            assert not rig.probe_addr("x/c", svc, 80)
    finally:
        rig.node(n, "nft", "delete", "table", "ip", table, check=False)
    _allow_all(rig)


def test_table_is_changed_incrementally(env: Any) -> None:
    """A pod IP change touches set elements only: the controller keeps one transaction per sync
    and its table still holds exactly one set per rule."""
    rig, cluster, api = env
    with policies(api, ("x", {"name": "inc", "podSelector": {}, "ingress": [{"from": [{"podSelector": {}}]}]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x" or ns_of(a) == "x")
        listing = rig.ruleset()
        assert listing.count("set pol-") == 1 and rig.ips["x/c"] in listing
    assert set(ALL) == set(rig.ips)
    _allow_all(rig)
    assert "set pol-" not in rig.ruleset() and os.path.exists(f"/run/netns/{rig.node_ns[0]}")


@pytest.mark.parametrize("user,groups,verb,resource,allowed", [
    ("system:node:n1", ["system:nodes"], "watch", "networkpolicies.networking.k8s.io", "no"),
    ("system:node:n1", ["system:nodes"], "list", "pods", "no"),
    ("system:pyk8s:network-policy", [], "list", "pods", "yes"),
    ("system:pyk8s:network-policy", [], "watch", "namespaces", "yes"),
    ("system:pyk8s:network-policy", [], "watch", "networkpolicies.networking.k8s.io", "yes"),
    ("system:pyk8s:network-policy", [], "create", "networkpolicies.networking.k8s.io", "no"),
    ("system:pyk8s:network-policy", [], "delete", "pods", "no"),
    ("system:pyk8s:network-policy", [], "get", "secrets", "no"),
    ("system:serviceaccount:x:default", ["system:serviceaccounts"], "list", "networkpolicies.networking.k8s.io", "no"),
])
def test_controller_identities_read_only_what_they_need(env: Any, user: str, groups: list[str], verb: str,
                                                        resource: str, allowed: str) -> None:
    """The controllers' user may read policies, pods and namespaces cluster-wide and write nothing;
    nodes get nothing more from it (v1.33's Node authorizer lets a kubelet list only its own pods)."""
    rig, cluster, api = env
    args = ["auth", "can-i", verb, resource, "-A", "--as", user, *(f"--as-group={g}" for g in groups)]
    r = cluster.kubectl(*args, check=False)
    # `no - <reason>` where an authorizer gives one (the Node authorizer, now on by default, does)
    assert r.stdout.strip().split(" - ")[0] == allowed, (args, r.stdout, r.stderr)


def test_stopping_keeps_the_table_and_cleanup_removes_it(env: Any) -> None:
    """Last in this module. A stopped controller leaves its pods isolated (they keep running);
    `pyk8s netpol --cleanup` removes the table."""
    rig, cluster, api = env
    with policies(api, ("x", {"name": "deny", "podSelector": {}, "policyTypes": ["Ingress"]})):
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x")
        for c in rig.controllers:
            c.terminate()
            assert c.wait(10) == 0
        _check(rig, cluster, 80, "TCP", lambda a, b: ns_of(b) != "x")
        for ns in rig.node_ns:
            r = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", sys.executable, "-m", "pyk8s.cli", "netpol",
                                "--cleanup", "--table", rig.table], capture_output=True, text=True, cwd=str(REPO))
            assert r.returncode == 0, r.stderr
        assert "ingress-pods" not in rig.ruleset(0) + rig.ruleset(1)
        _allow_all(rig)
