"""Two `pyk8s controller-manager` processes against one server (issue 6, "the controller manager").

Given a server started without its in-process controllers, simulated nodes, and two standalone
managers with short leader election settings: only the holder of the
kube-system/kube-controller-manager Lease acts (a ReplicaSet scaled while both run gets exactly
`replicas` pods, never a duplicate); after `kill -9` of the leader the other one takes the Lease
within the lease duration (plus the polling periods) and acts; and a leader whose Lease is taken
from it exits, as upstream's kube-controller-manager does ("leaderelection lost").
"""

from __future__ import annotations

import asyncio
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from pyk8s.client import Client, Informer
from pyk8s.sim import Simulator
from tests.cluster import REPO, Cluster

pytestmark = pytest.mark.timeout(120)

PODS = ("", "v1", "pods")
LEASES = ("coordination.k8s.io", "v1", "leases")
RSS = ("apps", "v1", "replicasets")
LEASE_DURATION, RENEW_DEADLINE, RETRY_PERIOD = 4.0, 3.0, 1.0
LEADER_FLAGS = [f"--leader-elect-lease-duration={LEASE_DURATION:g}s",
                f"--leader-elect-renew-deadline={RENEW_DEADLINE:g}s",
                f"--leader-elect-retry-period={RETRY_PERIOD:g}s"]


@pytest.fixture
def no_controllers(tmp_path):
    c = Cluster(str(tmp_path / "data"), ["--disable", "controller-manager"])
    c.start()
    yield c
    c.stop()


class Manager:
    """One `pyk8s controller-manager` subprocess; its output is drained in a thread."""

    def __init__(self, kubeconfig: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "pyk8s.cli", "controller-manager", "--kubeconfig", kubeconfig,
             "--controllers=serviceaccount,replicaset-controller,root-ca-cert-publisher", "--secure-port", "0",
             *LEADER_FLAGS],
            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, cwd=str(REPO),
            env=dict(os.environ, PYTHONUNBUFFERED="1"))
        self.lines: list[str] = []
        self.identity = ""
        self._started = threading.Event()
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            m = re.search(r"running as (\S+)", line)
            if m:
                self.identity = m.group(1)
                self._started.set()
        self._started.set()

    async def started(self) -> Manager:
        await asyncio.to_thread(self._started.wait, 30)
        assert self.identity, "".join(self.lines)
        return self

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


async def eventually(fn: Callable[[], Awaitable[Any]], timeout: float, what: str) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        v = await fn()
        if v:
            return v
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {timeout:.0f}s: {what}")
        await asyncio.sleep(0.1)


def replica_set(replicas: int) -> dict[str, Any]:
    return {"apiVersion": "apps/v1", "kind": "ReplicaSet", "metadata": {"name": "ha", "namespace": "default"},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": "ha"}},
                     "template": {"metadata": {"labels": {"app": "ha"}},
                                  "spec": {"containers": [{"name": "app", "image": "registry.k8s.io/pause:3.10"}]}}}}


def test_only_the_leader_acts_and_a_killed_leader_hands_over(no_controllers):
    cluster = no_controllers
    managers: list[Manager] = []

    async def main() -> None:
        client = Client.from_kubeconfig(cluster.kubeconfig)
        sim = Simulator(client, 2, name_prefix="cm-ha-node-", delete_nodes_on_stop=True)
        ever: set[str] = set()  # every pod name ever seen: a duplicate created and deleted again still counts
        pods = Informer(client, PODS, namespace="default", label_selector="app=ha")
        pods.add_handlers(on_add=lambda p: ever.add(p["metadata"]["name"]))
        await sim.start()
        pods.start()
        try:
            await sim.wait_nodes_registered(30)
            await pods.wait_synced(30)

            async def holder() -> str:
                lease = await client.get_or_none(LEASES, "kube-controller-manager", "kube-system")
                return ((lease or {}).get("spec") or {}).get("holderIdentity") or ""

            async def scaled_to(n: int) -> None:
                await asyncio.to_thread(cluster.kubectl, "scale", "rs", "ha", f"--replicas={n}")

                async def settled() -> bool:
                    rs = await client.get(RSS, "ha", "default")
                    return len(pods.list()) == n and (rs.get("status") or {}).get("readyReplicas") == n
                try:
                    await eventually(settled, 30, f"{n} ready pods")
                except AssertionError:
                    rs = await client.get(RSS, "ha", "default")
                    raise AssertionError(f"pods {len(pods.list())} status {rs.get('status')}\n"
                                         + "".join(m.lines[-1] if m.lines else "" for m in managers)) from None
                await asyncio.sleep(0.5)  # a second actor would create its duplicates by now
                assert len(pods.list()) == n and len(ever) == n, (n, sorted(ever))

            # Given two managers, one holds the Lease under an upstream-style identity.
            managers.extend([Manager(cluster.kubeconfig), Manager(cluster.kubeconfig)])
            a, b = [await m.started() for m in managers]
            for m in (a, b):
                assert re.fullmatch(rf"{re.escape(socket.gethostname())}_[0-9a-f-]{{36}}", m.identity), m.identity
            first = await eventually(holder, 30, "a Lease holder")
            assert first in (a.identity, b.identity)
            leader, follower = (a, b) if first == a.identity else (b, a)

            # When a ReplicaSet is created and scaled while both run, then exactly its replicas exist.
            ca = await eventually(lambda: client.get_or_none(("", "v1", "configmaps"), "kube-root-ca.crt", "default"),
                                  30, "the root CA published")
            with open(os.path.join(cluster.data_dir, "pki", "ca.crt")) as f:
                assert ca["data"]["ca.crt"].strip() == f.read().strip()
            await client.create(RSS, replica_set(3), "default")
            await scaled_to(3)
            await scaled_to(6)
            assert await holder() == leader.identity

            # When the leader is killed, the follower takes the Lease within the lease duration
            # (plus one retry period each for the last renewal and for noticing it) and acts.
            leader.proc.send_signal(signal.SIGKILL)
            leader.proc.wait()
            killed = time.monotonic()
            await eventually(lambda: _is(holder, follower.identity), LEASE_DURATION * 3, "a new leader")
            took = time.monotonic() - killed
            assert took <= LEASE_DURATION + 2 * RETRY_PERIOD + 3.0, f"hand-over took {took:.1f}s"
            await scaled_to(9)
            lease = await client.get(LEASES, "kube-controller-manager", "kube-system")
            assert lease["spec"]["leaseTransitions"] >= 1

            # When someone else takes the Lease, the leader stops within its renew deadline and exits.
            lease["spec"].update(holderIdentity="someone-else", renewTime=_micro_now(), leaseDurationSeconds=60)
            await client.update(LEASES, lease)
            code = await asyncio.to_thread(follower.proc.wait, RENEW_DEADLINE + 3 * RETRY_PERIOD + 10)
            assert code == 1, "".join(follower.lines)
            assert "leaderelection lost" in "".join(follower.lines)
            await asyncio.to_thread(cluster.kubectl, "scale", "rs", "ha", "--replicas=10")
            await asyncio.sleep(1.0)  # nobody leads: nobody creates the tenth pod
            assert len(ever) == 9
        finally:
            await pods.stop()
            await sim.stop()
            await client.close()

    try:
        asyncio.run(main())
    finally:
        for m in managers:
            m.stop()


async def _is(get: Callable[[], Awaitable[str]], want: str) -> bool:
    return await get() == want


def _micro_now() -> str:
    from datetime import UTC, datetime

    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
