"""The service proxy: how long programming Services takes, and what the ClusterIP path costs a connection.

1. Programming (in a network namespace of its own): the proxier's first sync of BENCH_NET_SERVICES
   Services x BENCH_NET_ENDPOINTS endpoints (one nft transaction), then one endpoint going away
   and coming back, at that size and at a tenth of it. Upstream's nftables mode is the anchor in
   kind: its sync grows with the change, not with the number of Services. The figure next to each
   of ours is the `nft -f` of the same transaction alone (the part any nftables proxy pays: the
   kernel and the nft tool), so what is left is our own generation and diffing. The Services
   reach the proxier's informer stores directly: the API's watch delivery is measured elsewhere.
2. Data path (tests/e2e/proxy_rig.py: a node namespace with the proxy and a real API server, pods
   on its bridge): a client pod's connection latency and throughput to a server pod through its
   ClusterIP, against the same to the pod IP directly (the ceiling).
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tempfile
import uuid
from typing import Any

from .report import row

N_SERVICES = int(os.environ.get("BENCH_NET_SERVICES", "1000"))
N_ENDPOINTS = int(os.environ.get("BENCH_NET_ENDPOINTS", "10"))
N_CONNECT = int(os.environ.get("BENCH_NET_CONNECTIONS", "400"))
PUSH_MB = int(os.environ.get("BENCH_NET_PUSH_MB", "512"))
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _objects(n: int, eps: int) -> list[tuple[dict[str, Any], dict[str, Any]]]:
    out = []
    for i in range(n):
        name = f"s{i}"
        svc = {"metadata": {"namespace": "bench", "name": name},
               "spec": {"clusterIP": f"10.96.{i // 250}.{i % 250 + 1}", "clusterIPs": [f"10.96.{i // 250}.{i % 250 + 1}"],
                        "type": "NodePort", "ports": [{"name": "http", "port": 80, "protocol": "TCP",
                                                       "nodePort": 30000 + i}]}}
        sl = {"metadata": {"namespace": "bench", "name": f"{name}-x", "labels": {"kubernetes.io/service-name": name}},
              "addressType": "IPv4", "ports": [{"name": "http", "port": 8080, "protocol": "TCP"}],
              "endpoints": [{"addresses": [f"10.{200 + i // 6000}.{i // 24 % 250}.{(i % 24) * 10 + j + 1}"],
                             "nodeName": "n1", "conditions": {"ready": True}} for j in range(eps)]}
        out.append((svc, sl))
    return out


async def _sync_inner(n: int, eps: int) -> dict[str, float]:
    from pyk8s.client import Client
    from pyk8s.proxy import nft
    from pyk8s.proxy.proxier import Proxier, ProxyConfig

    # never contacted: the informer stores are fed here
    p = Proxier(Client("https://127.0.0.1:9", None), ProxyConfig(node_name="n1", table="pyk8s-bench",
                                                                 cluster_cidrs=["10.244.0.0/16"]))
    p.add_handlers()
    objs = _objects(n, eps)
    for svc, sl in objs:
        p.services._apply("ADDED", svc)
        p.slices._apply("ADDED", sl)
    await p.sync()
    res = {"full": p.last_sync_seconds, "full_nft": p.last_nft_seconds, "full_commands": p.last_sync_commands}
    changes, changes_nft = [], []
    _, sl = objs[n // 2]
    for _ in range(10):
        for eps_now in (sl["endpoints"][:-1], sl["endpoints"]):
            p.slices._apply("MODIFIED", dict(sl, endpoints=eps_now))
            await p.sync()
            changes.append(p.last_sync_seconds)
            changes_nft.append(p.last_nft_seconds)
    res.update(change=statistics.median(changes), change_nft=statistics.median(changes_nft),
               change_commands=p.last_sync_commands)
    await nft.delete_table("ip", "pyk8s-bench")
    return res


def _in_netns(n: int, eps: int) -> dict[str, float]:
    ns = f"proxy-bench-{uuid.uuid4().hex[:6]}"
    subprocess.run(["ip", "netns", "add", ns], check=True)
    try:
        r = subprocess.run(["nsenter", f"--net=/run/netns/{ns}", sys.executable, "-m", "bench.network", "--sync",
                            str(n), str(eps)], capture_output=True, text=True, cwd=REPO, check=True,
                           env=dict(os.environ, PYTHONPATH=os.path.join(REPO, "src")))
        return dict(json.loads(r.stdout.strip().splitlines()[-1]))
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False)


def programming() -> None:
    big = _in_netns(N_SERVICES, N_ENDPOINTS)
    small = _in_netns(max(1, N_SERVICES // 10), N_ENDPOINTS)
    print(f"  -- {N_SERVICES} Services x {N_ENDPOINTS} endpoints: {big['full_commands']:.0f} nft commands; "
          f"one endpoint change: {big['change_commands']:.0f}")
    row(f"first sync, {N_SERVICES} x {N_ENDPOINTS}", big["full"] * 1000, "ms", big["full_nft"] * 1000,
        "its nft -f alone", higher_is_better=False)
    row(f"one endpoint change at {N_SERVICES} Services", big["change"] * 1000, "ms", big["change_nft"] * 1000,
        "its nft -f alone", higher_is_better=False)
    row(f"one endpoint change at {N_SERVICES // 10} Services", small["change"] * 1000, "ms",
        small["change_nft"] * 1000, "its nft -f alone", higher_is_better=False)
    row("first sync / one change (grows with the change)", big["full"] / big["change"], "x")


def datapath() -> None:
    from kubernetes import client
    from tests.e2e.proxy_rig import PROBE, ProxyRig, wait_for

    rig = ProxyRig(tempfile.mkdtemp(prefix="pyk8s-bench-net-"))
    try:
        rig.setup()
        server_ip = rig.add_pod("server")
        rig.add_pod("client", serve=False)
        rig.start_server()
        rig.start_proxy()
        assert rig.cluster is not None
        api = rig.cluster.api_client()
        svc = client.CoreV1Api(api).create_namespaced_service("default", {
            "metadata": {"name": "bench"},
            "spec": {"ports": [{"name": "echo", "port": 80, "targetPort": 8080},
                               {"name": "sink", "port": 81, "targetPort": 8081}]}})
        client.DiscoveryV1Api(api).create_namespaced_endpoint_slice("default", {
            "metadata": {"name": "bench-1", "labels": {"kubernetes.io/service-name": "bench"}}, "addressType": "IPv4",
            "ports": [{"name": "echo", "port": 8080, "protocol": "TCP"}, {"name": "sink", "port": 8081, "protocol": "TCP"}],
            "endpoints": [{"addresses": [server_ip], "nodeName": rig.node_name, "conditions": {"ready": True}}]})
        cip = svc.spec.cluster_ip
        wait_for(lambda: rig.connect("client", "tcp", cip, 80) == [f"server {rig.pods['client'][1]}"],
                 what="the ClusterIP")

        def probe(*args: str) -> Any:
            out = subprocess.run(rig.nsexec(rig.pods["client"][0], sys.executable, PROBE, *args),
                                 capture_output=True, text=True, check=True).stdout
            return json.loads(out)

        direct = statistics.median(probe("rate", server_ip, "8080", str(N_CONNECT)))
        via = statistics.median(probe("rate", cip, "80", str(N_CONNECT)))
        row("connection latency via ClusterIP (median)", via * 1e6, "us", direct * 1e6, "pod IP directly",
            higher_is_better=False)
        direct_mb = probe("push", server_ip, "8081", str(PUSH_MB))
        via_mb = probe("push", cip, "81", str(PUSH_MB))
        row("throughput via ClusterIP, one connection", via_mb, "MiB/s", direct_mb, "pod IP directly")
    finally:
        rig.teardown()


def main() -> None:
    import shutil

    sys.path.insert(0, REPO)
    missing = [b for b in ("ip", "nft", "nsenter", "conntrack") if shutil.which(b) is None]
    if os.geteuid() != 0 or missing:
        print(f"  skipped: needs root and {', '.join(missing) or 'network namespaces'}")
        return
    programming()
    datapath()


if __name__ == "__main__":
    if sys.argv[1:2] == ["--sync"]:
        print(json.dumps(asyncio.run(_sync_inner(int(sys.argv[2]), int(sys.argv[3])))))
    else:
        main()
