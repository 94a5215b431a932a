"""Two API servers, each with its controller manager and scheduler: one of each leads (issue 7).

Both `pyk8s server` processes run kube-controller-manager and kube-scheduler, which elect a
leader on their Leases in kube-system (15 s lease, 2 s retry, as upstream's defaults). Exactly
one of each acts; when the leader's server is killed -9, the other takes over within the lease
duration, and a ReplicaSet scaled during the failover ends with exactly its replicas: no
duplicate pods. The pods run on simulated nodes (pyk8s.sim) whose client knows both servers.
"""

from __future__ import annotations

import asyncio
import re
import threading
import time
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.etcd_helper import EtcdCluster
from tests.ha_helper import HAControlPlane, wait_for

pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("etcd-ha"), pytest.mark.slow]

LEASE_DURATION = 15.0
RETRY = 2.0
RS = "/apis/apps/v1/namespaces/default/replicasets"


def leaders(c: Cluster, name: str) -> int:
    return sum(1 for line in c.output if re.search(rf"\b{name}: became leader as ", line))


def holder(c: Cluster, name: str) -> str:
    r = raw_request(c, "GET", f"/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/{name}")
    return r.json()["spec"].get("holderIdentity", "") if r.status == 200 else ""


def rs_pods(c: Cluster) -> list[dict[str, Any]]:
    items = raw_request(c, "GET", "/api/v1/namespaces/default/pods?labelSelector=app%3Dfailover").json()["items"]
    return [p for p in items if not p["metadata"].get("deletionTimestamp")]


class SimNodes:
    """Simulated nodes on their own event loop in a thread, talking to both API servers."""

    def __init__(self, urls: list[str], kubeconfig: str, n: int) -> None:
        self.urls, self.kubeconfig, self.n = urls, kubeconfig, n
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.sim: Any = None
        self.client: Any = None

    def _run(self, coro: Any, timeout: float = 60) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def start(self) -> SimNodes:
        from pyk8s.client import Client
        from pyk8s.client.kubeconfig import load_kubeconfig
        from pyk8s.sim import Simulator

        self.thread.start()

        async def go() -> None:
            self.client = Client(self.urls, load_kubeconfig(self.kubeconfig).ssl_client_context())
            self.sim = Simulator(self.client, self.n, name_prefix="ha-sim-", delete_nodes_on_stop=False,
                                 creating_seconds=0.1)
            await self.sim.start()
            await self.sim.wait_nodes_registered(30)

        self._run(go())
        return self

    def stop(self) -> None:
        async def go() -> None:
            if self.sim is not None:
                await self.sim.stop()
            if self.client is not None:
                await self.client.close()

        try:
            self._run(go(), 30)
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self.thread.join(10)


def test_one_leader_of_each_and_failover_without_duplicate_pods(tmp_path):
    with EtcdCluster(tmp_path / "etcd", 1) as etcd, \
            HAControlPlane(tmp_path / "ha", etcd.endpoint, 2, extra_args=["--v", "1"]) as ha:
        a, b = ha.servers
        for name in ("kube-controller-manager", "kube-scheduler"):
            wait_for(lambda n=name: holder(a, n), 20, f"a {name} leader")
        sims = SimNodes([a.url, b.url], a.kubeconfig, 3).start()
        try:
            time.sleep(RETRY * 1.5)  # a second leader, were there one, would have said so by now
            for name in ("kube-controller-manager", "kube-scheduler"):
                assert leaders(a, name) + leaders(b, name) == 1, (name, leaders(a, name), leaders(b, name))
            leader = a if leaders(a, "kube-controller-manager") else b
            other = b if leader is a else a
            r = raw_request(other, "POST", RS, body={
                "metadata": {"name": "failover"},
                "spec": {"replicas": 4, "selector": {"matchLabels": {"app": "failover"}},
                         "template": {"metadata": {"labels": {"app": "failover"}},
                                      "spec": {"containers": [{"name": "c", "image": "busybox"}]}}}})
            assert r.status == 201, r.body
            wait_for(lambda: len([p for p in rs_pods(other) if p["status"].get("phase") == "Running"]) == 4, 30,
                     "4 pods Running on the simulated nodes")

            old_holders = {n: holder(other, n) for n in ("kube-controller-manager", "kube-scheduler")}
            leader.kill9()
            t0 = time.monotonic()
            # scale while nobody leads: the new leader must make exactly the missing pods
            scale = raw_request(other, "PATCH", f"{RS}/failover/scale", body={"spec": {"replicas": 7}},
                                headers={"Content-Type": "application/merge-patch+json"})
            assert scale.status == 200, scale.body
            for name in ("kube-controller-manager", "kube-scheduler"):
                wait_for(lambda n=name: holder(other, n) not in ("", old_holders[n]), LEASE_DURATION + 2 * RETRY + 3,
                         f"the surviving server's {name} to take over")
                # the Lease shows the new holder before its server's log line reaches our reader
                wait_for(lambda n=name: leaders(other, n) >= 1, 5, f"the surviving server to log its {name} election")
                assert leaders(other, name) == 1
            took = time.monotonic() - t0
            assert took <= LEASE_DURATION + 2 * RETRY + 3
            wait_for(lambda: len([p for p in rs_pods(other) if p["status"].get("phase") == "Running"]) == 7, 30,
                     "7 pods Running after the failover")
            time.sleep(RETRY)  # a duplicate create would show up by now
            pods = rs_pods(other)
            assert len(pods) == 7, [p["metadata"]["name"] for p in pods]
            rs = raw_request(other, "GET", f"{RS}/failover").json()
            assert rs["status"].get("replicas") == 7
        finally:
            sims.stop()
