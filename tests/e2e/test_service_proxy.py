"""The service proxy (`pyk8s proxy`, nftables) with real packets: pods in network namespaces behind a
node namespace running the proxy against a real API server (tests/e2e/proxy_rig.py).

Services are selectorless with hand-made EndpointSlices (real Kubernetes objects: upstream's
proxy reads only EndpointSlices), so each test sets exactly the endpoints and conditions it needs.
"""

from __future__ import annotations

import collections
import contextlib
import subprocess
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.proxy_rig import PROBE, ProxyRig, requirements, wait_for

pytestmark = pytest.mark.xdist_group("service-proxy")


@pytest.fixture(scope="module")
def rig(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ProxyRig]:
    requirements()
    r = ProxyRig(str(tmp_path_factory.mktemp("proxy")))
    try:
        r.setup()
        for name in ("a", "b", "c", "client"):
            r.add_pod(name)
        r.start_server()
        r.start_proxy()
        yield r
    finally:
        r.teardown()


@pytest.fixture(scope="module")
def api(rig: ProxyRig) -> Any:
    from kubernetes import client

    assert rig.cluster is not None
    c = rig.cluster.api_client()
    return client.CoreV1Api(c), client.DiscoveryV1Api(c)


def endpoint(rig: ProxyRig, pod: str, ready: bool = True, serving: bool | None = None, terminating: bool = False,
             node: str | None = None) -> dict[str, Any]:
    cond: dict[str, Any] = {"ready": ready, "terminating": terminating}
    if serving is not None:
        cond["serving"] = serving
    return {"addresses": [rig.pods[pod][1]], "nodeName": node or rig.node_name, "conditions": cond}


def make_service(api: Any, name: str, ports: list[dict[str, Any]], **spec: Any) -> dict[str, Any]:
    core, _ = api
    svc = core.create_namespaced_service("default", {"metadata": {"name": name}, "spec": {"ports": ports, **spec}})
    return svc.to_dict()


def put_slice(api: Any, svc: str, endpoints: list[dict[str, Any]], ports: list[dict[str, Any]] | None = None,
              name: str | None = None) -> None:
    _, disc = api
    name = name or f"{svc}-1"
    body = {"metadata": {"name": name, "labels": {"kubernetes.io/service-name": svc}}, "addressType": "IPv4",
            "ports": ports or [{"name": "", "port": 8080, "protocol": "TCP"}], "endpoints": endpoints}
    try:
        old = disc.read_namespaced_endpoint_slice(name, "default")
        body["metadata"]["resourceVersion"] = old.metadata.resource_version
        disc.replace_namespaced_endpoint_slice(name, "default", body)
    except Exception as e:  # noqa: BLE001
        if getattr(e, "status", None) != 404:
            raise
        disc.create_namespaced_endpoint_slice("default", body)


def names(answers: list[str]) -> list[str]:
    return [a.split()[0] for a in answers]


def test_cluster_ip_spreads_connections_over_ready_endpoints(rig: ProxyRig, api: Any) -> None:
    """A ClusterIP sends each new connection to one of the ready endpoints at random (numgen)."""
    svc = make_service(api, "spread", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "spread", [endpoint(rig, "a"), endpoint(rig, "b"), endpoint(rig, "c", ready=False)])
    wait_for(lambda: rig.connect("client", "tcp", ip, 80) != ["refused"], what="rules for spread")
    got = collections.Counter(names(rig.connect("client", "tcp", ip, 80, 60)))
    assert set(got) == {"a", "b"}, got  # never the unready one
    assert min(got.values()) >= 10, got


def test_udp_through_cluster_ip(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "udp", [{"port": 53, "targetPort": 8080, "protocol": "UDP"}])
    put_slice(api, "udp", [endpoint(rig, "a")], ports=[{"name": "", "port": 8080, "protocol": "UDP"}])
    ip = svc["spec"]["cluster_ip"]
    wait_for(lambda: rig.connect("client", "udp", ip, 53) == ["a"], what="UDP through the ClusterIP")


def test_service_without_endpoints_is_rejected_not_blackholed(rig: ProxyRig, api: Any) -> None:
    """As upstream: ICMP port unreachable, so a client fails at once instead of timing out; and a
    ClusterIP answers only on its Service's ports."""
    svc = make_service(api, "empty", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    wait_for(lambda: rig.connect("client", "tcp", ip, 80) == ["refused"], 30, what="reject for empty")
    # each probe connect gives up after 1 s and says "timeout": "refused" is the reject, not a blackhole
    # a blackhole times out every probe; on a loaded machine one probe's 1 s can run out first
    got = rig.connect("client", "tcp", ip, 80, 3)
    assert got.count("refused") >= 2 and set(got) <= {"refused", "timeout"}, got
    # another Service's ClusterIP on a port it does not serve
    other = make_service(api, "oneport", [{"port": 80, "targetPort": 8080}])
    put_slice(api, "oneport", [endpoint(rig, "a")])
    oip = other["spec"]["cluster_ip"]
    wait_for(lambda: names(rig.connect("client", "tcp", oip, 80)) == ["a"], what="oneport")
    wait_for(lambda: rig.connect("client", "tcp", oip, 81) == ["refused"], 30, what="oneport's port 81 rejected")
    # and from the node itself (the output hook)
    r = subprocess.run(rig.nsexec(rig.node_ns, sys.executable, PROBE, "connect", "tcp", ip, "80", "1"),
                       capture_output=True, text=True, check=True)
    assert "refused" in r.stdout


def test_readiness_flip_takes_effect_within_a_second(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "flip", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "flip", [endpoint(rig, "a"), endpoint(rig, "b")])
    wait_for(lambda: set(names(rig.connect("client", "tcp", ip, 80, 20))) == {"a", "b"}, what="both endpoints")
    start = time.monotonic()
    put_slice(api, "flip", [endpoint(rig, "a"), endpoint(rig, "b", ready=False)])
    wait_for(lambda: set(names(rig.connect("client", "tcp", ip, 80, 10))) == {"a"}, interval=0.01,
             what="b removed")
    assert time.monotonic() - start < 1.0
    put_slice(api, "flip", [endpoint(rig, "a"), endpoint(rig, "b")])
    wait_for(lambda: "b" in names(rig.connect("client", "tcp", ip, 80, 20)), what="b back")


def test_serving_terminating_endpoints_used_only_when_no_ready_one_is_left(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "drain", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "drain", [endpoint(rig, "a"), endpoint(rig, "b", ready=False, serving=True, terminating=True)])
    wait_for(lambda: names(rig.connect("client", "tcp", ip, 80)) == ["a"], what="drain rules")
    assert set(names(rig.connect("client", "tcp", ip, 80, 20))) == {"a"}
    put_slice(api, "drain", [endpoint(rig, "a", ready=False, serving=False, terminating=True),
                             endpoint(rig, "b", ready=False, serving=True, terminating=True)])
    wait_for(lambda: set(names(rig.connect("client", "tcp", ip, 80, 10))) == {"b"}, what="b serving while terminating")


def test_session_affinity_client_ip_sticks(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "sticky", [{"port": 80, "targetPort": 8080}], sessionAffinity="ClientIP",
                       sessionAffinityConfig={"clientIP": {"timeoutSeconds": 60}})
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "sticky", [endpoint(rig, "a"), endpoint(rig, "b"), endpoint(rig, "c")])
    first = wait_for(lambda: [n for n in names(rig.connect("client", "tcp", ip, 80)) if n in "abc"],
                     what="sticky rules")
    assert set(names(rig.connect("client", "tcp", ip, 80, 30))) == set(first)
    # the kernel's set holds the client with the Service's timeout
    listing = rig.nft("list", "sets", "ip")
    assert "timeout 1m" in listing and rig.pods["client"][1] in listing


def test_hairpin_pod_reaches_itself_through_its_service(rig: ProxyRig, api: Any) -> None:
    """The endpoint sees the node's bridge address (masqueraded), or its reply would bypass the NAT."""
    svc = make_service(api, "hairpin", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "hairpin", [endpoint(rig, "a")])
    got = wait_for(lambda: [x for x in rig.connect("a", "tcp", ip, 80) if x.startswith("a ")], what="hairpin")
    assert got == [f"a {rig.bridge_ip}"]
    # another pod is not masqueraded: the endpoint sees the client pod's own address
    assert rig.connect("client", "tcp", ip, 80) == [f"a {rig.pods['client'][1]}"]


def test_named_target_port_resolves_per_endpoint(rig: ProxyRig, api: Any) -> None:
    """Pods that name their port differently land in different slices with different numbers."""
    svc = make_service(api, "named", [{"name": "web", "port": 80, "targetPort": "http"}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "named", [endpoint(rig, "a")], ports=[{"name": "web", "port": 8080, "protocol": "TCP"}],
              name="named-x")
    put_slice(api, "named", [endpoint(rig, "b")], ports=[{"name": "web", "port": 9999, "protocol": "TCP"}],
              name="named-y")
    # both slices programmed (they are written one after the other): a answers on its 8080, and b's slice says
    # 9999, where b listens on nothing, so b's share is refused: the port came from each endpoint's own slice
    got = wait_for(lambda: (lambda c: c if {"a", "refused"} <= set(c) else None)(
        collections.Counter(names(rig.connect("client", "tcp", ip, 80, 30)))), 30, what="named, both slices")
    # never b: b's share went to 9999 (b's slice), not 8080; a probe that gave up after its 1 s
    # ("timeout") is the loaded machine's, not a port
    assert set(got) <= {"a", "refused", "timeout"}, got


def test_nodeport_from_outside_the_node(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "np", [{"port": 80, "targetPort": 8080}], type="NodePort")
    port = svc["spec"]["ports"][0]["node_port"]
    put_slice(api, "np", [endpoint(rig, "b")])
    got = wait_for(lambda: [x for x in rig.connect(None, "tcp", rig.node_ip, port) if x.startswith("b ")],
                   what="NodePort from the host")
    assert got == [f"b {rig.bridge_ip}"]  # NodePort traffic is masqueraded (externalTrafficPolicy Cluster)
    # and from a pod to the node's address
    assert names(rig.connect("client", "tcp", rig.node_ip, port)) == ["b"]


def test_nodeport_addresses_limit_where_node_ports_answer(rig: ProxyRig, api: Any) -> None:
    """Every local address by default; with --nodeport-addresses only those in the CIDRs."""
    svc = make_service(api, "npaddr", [{"port": 80, "targetPort": 8080}], type="NodePort")
    port = svc["spec"]["ports"][0]["node_port"]
    put_slice(api, "npaddr", [endpoint(rig, "a")])
    wait_for(lambda: names(rig.connect("client", "tcp", rig.bridge_ip, port)) == ["a"], what="NodePort on the bridge")
    rig.stop_proxy()
    rig.start_proxy("--nodeport-addresses", f"{rig.node_ip}/32")
    try:
        wait_for(lambda: rig.connect("client", "tcp", rig.bridge_ip, port) == ["refused"], what="not on the bridge")
        assert names(rig.connect("client", "tcp", rig.node_ip, port)) == ["a"]
    finally:
        rig.stop_proxy()
        rig.start_proxy()


def test_two_services_on_one_external_ip_and_port_do_not_stop_the_proxy(rig: ProxyRig, api: Any) -> None:
    """nft takes one verdict per map key: the older Service keeps the address and port, the newer
    waits for it, and every other Service keeps being synced (a duplicate key would fail each
    transaction)."""
    core, _ = api
    make_service(api, "ext1", [{"port": 8090, "targetPort": 8080}], externalIPs=[rig.node_ip])
    put_slice(api, "ext1", [endpoint(rig, "a")])
    wait_for(lambda: names(rig.connect(None, "tcp", rig.node_ip, 8090)) == ["a"], what="ext1")
    make_service(api, "ext2", [{"port": 8090, "targetPort": 8080}], externalIPs=[rig.node_ip])
    put_slice(api, "ext2", [endpoint(rig, "b")])
    after = make_service(api, "ext3", [{"port": 80, "targetPort": 8080}])
    put_slice(api, "ext3", [endpoint(rig, "c")])
    wait_for(lambda: names(rig.connect("client", "tcp", after["spec"]["cluster_ip"], 80)) == ["c"],
             what="a later Service still synced")
    assert set(names(rig.connect(None, "tcp", rig.node_ip, 8090, 10))) == {"a"}
    core.delete_namespaced_service("ext1", "default")
    wait_for(lambda: names(rig.connect(None, "tcp", rig.node_ip, 8090)) == ["b"], what="ext2 takes the port")


def test_external_traffic_policy_local_keeps_client_address_and_local_endpoints(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "local", [{"port": 80, "targetPort": 8080}], type="NodePort",
                       externalTrafficPolicy="Local")
    port = svc["spec"]["ports"][0]["node_port"]
    put_slice(api, "local", [endpoint(rig, "a"), endpoint(rig, "b", node="elsewhere")])
    wait_for(lambda: names(rig.connect(None, "tcp", rig.node_ip, port)) == ["a"], what="eTP Local")
    assert set(rig.connect(None, "tcp", rig.node_ip, port, 20)) == {f"a {rig.host_ip}"}


def test_internal_traffic_policy_local_uses_this_nodes_endpoints(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "itp", [{"port": 80, "targetPort": 8080}], internalTrafficPolicy="Local")
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "itp", [endpoint(rig, "c"), endpoint(rig, "a", node="elsewhere"),
                           endpoint(rig, "b", node="elsewhere")])
    wait_for(lambda: names(rig.connect("client", "tcp", ip, 80)) == ["c"], what="iTP Local")
    assert set(names(rig.connect("client", "tcp", ip, 80, 20))) == {"c"}


def test_udp_flows_to_a_removed_endpoint_are_cleared(rig: ProxyRig, api: Any) -> None:
    """A UDP 'connection' (same source port) would stick to its endpoint in conntrack; the proxy
    deletes those entries when the endpoint goes."""
    svc = make_service(api, "udpct", [{"port": 53, "targetPort": 8080, "protocol": "UDP"}])
    ip = svc["spec"]["cluster_ip"]
    udp = [{"name": "", "port": 8080, "protocol": "UDP"}]
    put_slice(api, "udpct", [endpoint(rig, "a")], ports=udp)
    src = f"""
import socket, sys
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("0.0.0.0", 40053)); s.settimeout(1.0)
s.sendto(b"?", ("{ip}", 53))
try: print(s.recvfrom(100)[0].decode())
except OSError: print("timeout")
"""
    def ask() -> str:
        return subprocess.run(rig.nsexec(rig.pods["client"][0], sys.executable, "-c", src), capture_output=True,
                              text=True, check=True).stdout.strip()
    wait_for(lambda: ask() == "a", what="udp to a")
    put_slice(api, "udpct", [endpoint(rig, "b")], ports=udp)  # a is still alive and would keep answering
    wait_for(lambda: ask() == "b", timeout=3, what="the flow to move to b")


def test_restart_keeps_established_connections(rig: ProxyRig, api: Any) -> None:
    svc = make_service(api, "keep", [{"port": 80, "targetPort": 8080}])
    ip = svc["spec"]["cluster_ip"]
    put_slice(api, "keep", [endpoint(rig, "a")])
    wait_for(lambda: names(rig.connect("client", "tcp", ip, 80)) == ["a"], what="keep")
    hold = subprocess.Popen(rig.nsexec(rig.pods["client"][0], sys.executable, PROBE, "hold", ip, "80"),
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert hold.stdin is not None and hold.stdout is not None
    try:
        assert hold.stdout.readline().split()[0] == "a"
        rig.stop_proxy()
        rig.start_proxy()
        # the restarted proxy rewrote the table in one transaction; the connection goes on
        wait_for(lambda: names(rig.connect("client", "tcp", ip, 80)) == ["a"], what="rules after restart")
        hold.stdin.write("still there\n")
        hold.stdin.flush()
        assert hold.stdout.readline().strip() == "a still there"
    finally:
        hold.kill()
        hold.wait()


def test_load_balancer_gets_the_node_addresses_and_is_served_there(rig: ProxyRig, api: Any) -> None:
    """The built-in load balancer (servicelb, in the server) writes status.loadBalancer.ingress; the
    node's proxy serves the Service's own port on that address. A second LoadBalancer on the same
    port stays pending, as k3s's does (one node address cannot serve both)."""
    core, _ = api
    make_service(api, "lb", [{"port": 8081, "targetPort": 8080}], type="LoadBalancer")
    put_slice(api, "lb", [endpoint(rig, "c")])
    status = wait_for(lambda: core.read_namespaced_service_status("lb", "default").status.load_balancer.ingress,
                      what="LoadBalancer ingress")
    assert [(i.ip, i.ip_mode) for i in status] == [(rig.node_ip, "VIP")]
    # the one writer of the cluster holds its Lease (several servers elect it)
    from kubernetes import client as k8s

    assert rig.cluster is not None
    lease = k8s.CoordinationV1Api(rig.cluster.api_client()).read_namespaced_lease("pyk8s-servicelb", "kube-system")
    assert lease.spec.holder_identity
    got = wait_for(lambda: [x for x in rig.connect(None, "tcp", rig.node_ip, 8081) if x.startswith("c ")],
                   what="the LoadBalancer port on the node address")
    assert got == [f"c {rig.bridge_ip}"]
    out = rig.cluster.kubectl("get", "svc", "lb", "--no-headers")  # type: ignore[union-attr]
    assert rig.node_ip in out.stdout
    make_service(api, "lb2", [{"port": 8081, "targetPort": 8080}], type="LoadBalancer")
    make_service(api, "lb3", [{"port": 8082, "targetPort": 8080}], type="LoadBalancer")
    wait_for(lambda: core.read_namespaced_service_status("lb3", "default").status.load_balancer.ingress,
             what="lb3 ingress")
    assert not core.read_namespaced_service_status("lb2", "default").status.load_balancer.ingress
    # the port frees up: the pending one gets it
    core.delete_namespaced_service("lb", "default")
    wait_for(lambda: core.read_namespaced_service_status("lb2", "default").status.load_balancer.ingress,
             what="lb2 ingress after lb went")


def test_cleanup_removes_the_table(rig: ProxyRig) -> None:
    assert "pyk8s-proxy" in rig.nft("list", "tables")
    rig.stop_proxy()
    subprocess.run(rig.nsexec(rig.node_ns, sys.executable, "-m", "pyk8s.cli", "proxy", "--cleanup"), check=True,
                   capture_output=True)
    assert "pyk8s-proxy" not in rig.nft("list", "tables")
    rig.start_proxy()  # later tests (if any) get their proxy back


def test_a_node_runs_the_proxy_and_takes_its_table_along_when_it_stops(rig: ProxyRig, api: Any) -> None:
    """`pyk8s agent` runs the proxy for its node (here with the kube-proxy identity of
    --proxy-kubeconfig, as under the Node authorizer a node's own cannot list EndpointSlices);
    stopping the node removes the table."""
    import os
    import signal

    from tests.cluster import REPO

    rig.stop_proxy()
    svc = make_service(api, "agentnp", [{"port": 80, "targetPort": 8080}], type="NodePort")
    put_slice(api, "agentnp", [endpoint(rig, "a")])
    port = svc["spec"]["ports"][0]["node_port"]
    assert rig.cluster is not None
    agent = subprocess.Popen(
        rig.nsexec(rig.node_ns, sys.executable, "-m", "pyk8s.cli", "agent", "--kubeconfig", rig.cluster.kubeconfig,
                   "--node-name", rig.node_name, "--data-dir", os.path.join(rig.base, "agent"), "--runtime", "process",
                   "--runc-root", os.path.join(rig.base, "runc"),
                   "--proxy-kubeconfig", rig.kubeconfig),  # its proxy as system:kube-proxy
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO))
    try:
        wait_for(lambda: names(rig.connect(None, "tcp", rig.node_ip, port)) == ["a"], timeout=30,
                 what="NodePort through the agent's proxy")
        agent.send_signal(signal.SIGTERM)
        agent.wait(30)
        assert "pyk8s-proxy" not in rig.nft("list", "tables")
    finally:
        if agent.poll() is None:
            agent.kill()
            agent.wait()


def test_the_server_runs_the_proxy_for_its_own_node(tmp_path: Any) -> None:
    """`pyk8s server` with its built-in kubelet programs its node's table (as system:kube-proxy) and
    removes it when it stops; `--disable proxy` leaves the node without one. Each server runs in a
    network namespace of its own, so the host's tables are never touched."""
    import os
    import uuid

    from tests.cluster import Cluster, kubectl_binaries

    runc_roots: list[str] = []

    def run_server(name: str, *extra: str) -> tuple[str, Cluster]:
        ns = f"proxy-srv{name}-{uuid.uuid4().hex[:6]}"
        subprocess.run(["ip", "netns", "add", ns], check=True)
        subprocess.run(["nsenter", f"--net=/run/netns/{ns}", "ip", "link", "set", "lo", "up"], check=True)
        tag = uuid.uuid4().hex[:8]
        runc_roots.append(f"/run/pyk8s/e2e-{tag}")
        c = Cluster(str(tmp_path / name), extra_args=[*extra],
                    env={"PYK8S_AGENT_CNI_BRIDGE": f"pk{tag}", "PYK8S_AGENT_RUNC_ROOT": f"/run/pyk8s/e2e-{tag}"})
        real = subprocess.Popen

        def popen(cmd: list[str], *a: Any, **kw: Any) -> subprocess.Popen[str]:
            cmd = [x for x in cmd if x != "--disable-agent"]
            return real(["nsenter", f"--net=/run/netns/{ns}", *cmd], *a, **kw)

        subprocess.Popen = popen  # type: ignore[assignment,misc]
        try:
            c.start(60)
        finally:
            subprocess.Popen = real  # type: ignore[misc]
        return ns, c

    def nft(ns: str, *args: str) -> str:
        return subprocess.run(["nsenter", f"--net=/run/netns/{ns}", "nft", *args], capture_output=True, text=True).stdout

    kubectl = list(kubectl_binaries().values())[-1]
    ns, c = run_server("a")
    off_ns, off = "", None
    try:
        subprocess.run(["nsenter", f"--net=/run/netns/{ns}", kubectl, "--kubeconfig", c.kubeconfig, "create", "service",
                        "clusterip", "web", "--tcp=80:8080"], check=True, capture_output=True,
                       env=dict(os.environ, HOME=str(tmp_path)))
        # web has no endpoints: its ClusterIP port is rejected
        wait_for(lambda: "tcp . 80 : goto reject-chain" in nft(ns, "list", "map", "ip", "pyk8s-proxy",
                                                               "no-endpoint-services"), timeout=30, what="web's reject")
        assert "10.96.0.1" in nft(ns, "list", "set", "ip", "pyk8s-proxy", "cluster-ips")  # the kubernetes Service
        off_ns, off = run_server("b", "--disable", "proxy")
        c.stop()
        assert "pyk8s-proxy" not in nft(ns, "list", "tables"), "".join(c.output[-25:])
        assert "pyk8s-proxy" not in nft(off_ns, "list", "tables")
    finally:
        for cl, n in ((c, ns), (off, off_ns)):
            if cl is not None:
                cl.stop()
                subprocess.run(["ip", "netns", "del", n], check=False)
        for root in runc_roots:  # the kubelets ran no pod: their runc roots are empty
            with contextlib.suppress(OSError):
                os.rmdir(root)


def test_ipv6_table_is_accepted_by_the_kernel(rig: ProxyRig) -> None:
    """The ip6 table of a dual-stack node (every feature at once), checked by the kernel (`nft -c`:
    a dry run of the whole transaction) in the node's namespace."""
    from pyk8s.proxy.nftables_rules import TableConfig, fragment, full_sync
    from pyk8s.proxy.serviceport import service_ports

    svc = {"metadata": {"namespace": "default", "name": "dual"},
           "spec": {"type": "LoadBalancer", "clusterIP": "10.96.0.50", "clusterIPs": ["10.96.0.50", "fd00:96::50"],
                    "ipFamilies": ["IPv4", "IPv6"], "externalTrafficPolicy": "Local", "sessionAffinity": "ClientIP",
                    "externalIPs": ["fd00:1::1"],
                    "ports": [{"name": "h", "port": 80, "protocol": "TCP", "nodePort": 30080},
                              {"name": "d", "port": 53, "protocol": "UDP", "nodePort": 30053}]},
           "status": {"loadBalancer": {"ingress": [{"ip": "fd00:2::1"}]}}}
    sl = {"metadata": {"namespace": "default", "name": "dual-6", "labels": {"kubernetes.io/service-name": "dual"}},
          "addressType": "IPv6", "ports": [{"name": "h", "port": 8080, "protocol": "TCP"},
                                           {"name": "d", "port": 5353, "protocol": "UDP"}],
          "endpoints": [{"addresses": ["fd00:244::2"], "nodeName": rig.node_name, "conditions": {"ready": True}},
                        {"addresses": ["fd00:244::3"], "nodeName": "other", "conditions": {"ready": True}}]}
    cfg = TableConfig(family="ip6", name=f"pyk8s-check-{rig.id}", cluster_cidr="fd00:244::/56",
                      nodeport_cidrs=("fd00:1::/64",))
    ports = service_ports(svc, [sl], 6, rig.node_name)
    assert ports and ports[0].cluster_ip == "fd00:96::50"
    text = "\n".join(full_sync(cfg, [fragment(cfg, ports)], set(), set())) + "\n"
    r = subprocess.run(rig.nsexec(rig.node_ns, "nft", "-c", "-f", "-"), input=text, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
