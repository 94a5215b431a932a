"""Faults under a highly available control plane, all on loopback (issue 7, "past one machine").

One 3-member etcd and two API servers on it (tests/ha_helper.py), shared by the tests below in
order:

* one etcd member killed under a steady write load: no acknowledged write is lost, every write
  is acknowledged (the store rides out the election);
* two members killed: writes fail within seconds with a 5xx Status naming etcd's error
  (`etcdserver: no leader` / `request timed out`, as kube-apiserver passes them on); reads at
  resourceVersion=0 are still served from the watch cache and consistent reads fail, as
  upstream's; once the members return the service recovers by itself;
* one API server killed -9 under load: the writers on the other see no error, and a watch held
  on the killed one, resumed by the client (pyk8s Client with both URLs) on the other from its
  last resourceVersion, neither misses nor repeats an event (every event counted);
* every etcd member restarted under a running server: it reconnects, and a watch from before
  the restart delivers what was written after it.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.cluster import Cluster, raw_request
from tests.etcd_helper import EtcdCluster
from tests.ha_helper import HAControlPlane, wait_for

pytestmark = [pytest.mark.timeout(120), pytest.mark.xdist_group("etcd-ha")]

NS = "default"
CM = f"/api/v1/namespaces/{NS}/configmaps"


@pytest.fixture(scope="module")
def etcd(tmp_path_factory: pytest.TempPathFactory):
    with EtcdCluster(tmp_path_factory.mktemp("etcd3"), 3) as c:
        yield c


@pytest.fixture(scope="module")
def ha(etcd: EtcdCluster, tmp_path_factory: pytest.TempPathFactory):
    # no controllers or scheduler: the load here is ours alone
    with HAControlPlane(tmp_path_factory.mktemp("ha"), etcd.endpoint, 2,
                        extra_args=["--disable", "scheduler", "--disable", "controller-manager"]) as h:
        yield h


class Writer:
    """Creates ConfigMaps labelled `run=<tag>` one after another until stopped; records outcomes."""

    def __init__(self, c: Cluster, tag: str) -> None:
        self.c, self.tag = c, tag
        self.acked: list[str] = []
        self.failed: list[tuple[str, int, str]] = []
        self._stop = threading.Event()
        self._t = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        i = 0
        while not self._stop.is_set():
            name = f"{self.tag}-{i}"
            i += 1
            try:
                r = raw_request(self.c, "POST", CM, body={"metadata": {"name": name, "labels": {"run": self.tag}}},
                                timeout=30)
            except OSError as e:
                self.failed.append((name, 0, str(e)))
                continue
            if r.status == 201:
                self.acked.append(name)
            else:
                self.failed.append((name, r.status, r.body[:200].decode(errors="replace")))

    def __enter__(self) -> Writer:
        self._t.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._t.join(40)

    def wait_acked(self, n: int, timeout: float = 20) -> None:
        start = len(self.acked)
        wait_for(lambda: len(self.acked) >= start + n, timeout, f"{n} more acknowledged writes")


def names(c: Cluster, tag: str) -> set[str]:
    r = raw_request(c, "GET", f"{CM}?labelSelector=run%3D{tag}")
    assert r.status == 200, r.body
    return {i["metadata"]["name"] for i in r.json()["items"]}


def leader(etcd: EtcdCluster) -> Any:
    for m in etcd.members:
        if not m.running:
            continue
        r = etcd.etcdctl(m, "endpoint", "status", "-w", "json")
        if r.returncode == 0:
            st = json.loads(r.stdout)[0]["Status"]
            if st["leader"] == st["header"]["member_id"]:
                return m
    raise AssertionError("no etcd leader")


def test_one_etcd_member_killed_under_load_loses_no_acknowledged_write(ha: HAControlPlane, etcd: EtcdCluster):
    a, b = ha.servers
    victim = leader(etcd)  # the hardest member to lose: an election follows
    with Writer(a, "one") as wa, Writer(b, "one-b") as wb:
        wa.wait_acked(10)
        victim.kill()
        t0 = time.monotonic()
        wa.wait_acked(20)
        wb.wait_acked(20)
        took = time.monotonic() - t0
    assert wa.failed == [] and wb.failed == [], (wa.failed, wb.failed)
    assert took < 15
    assert set(wa.acked) <= names(b, "one") and set(wb.acked) <= names(a, "one-b")
    etcd.restart(victim)


def test_two_etcd_members_killed_writes_fail_clearly_and_service_recovers(ha: HAControlPlane, etcd: EtcdCluster):
    a, b = ha.servers
    r = raw_request(a, "POST", CM, body={"metadata": {"name": "quorum-before", "labels": {"run": "two"}}})
    assert r.status == 201
    down = [m for m in etcd.members if m is not leader(etcd)][:1] + [leader(etcd)]
    for m in down:
        m.kill()
    t0 = time.monotonic()
    w = raw_request(b, "POST", CM, body={"metadata": {"name": "quorum-lost", "labels": {"run": "two"}}})
    took = time.monotonic() - t0
    assert w.status >= 500, w.body
    st = w.json()
    assert st["kind"] == "Status" and st["status"] == "Failure"
    assert any(m in st["message"] for m in ("etcdserver: no leader", "etcdserver: request timed out")), st
    assert took < 20
    # consistent reads need etcd's current revision: a clear 5xx too
    rc = raw_request(a, "GET", f"{CM}?labelSelector=run%3Dtwo")
    assert rc.status >= 500 and "etcd" in rc.json()["message"], rc.body
    # resourceVersion=0 reads are answered from the watch cache without asking etcd, as upstream
    r0 = raw_request(a, "GET", f"{CM}?resourceVersion=0&labelSelector=run%3Dtwo")
    assert r0.status == 200 and [i["metadata"]["name"] for i in r0.json()["items"]] == ["quorum-before"], r0.body
    g0 = raw_request(a, "GET", f"{CM}/quorum-before?resourceVersion=0")
    assert g0.status == 200 and g0.json()["metadata"]["name"] == "quorum-before", g0.body
    # the members come back: the servers recover without help
    for m in down:
        m.start()
    etcd.wait_healthy(30)

    def writes() -> bool:
        return raw_request(b, "POST", CM, body={"metadata": {"generateName": "quorum-back-",
                                                             "labels": {"run": "two"}}}).status == 201

    wait_for(writes, 30, "writes accepted again")
    assert raw_request(a, "POST", CM, body={"metadata": {"name": "quorum-after", "labels": {"run": "two"}}}).status \
        == 201
    got = names(b, "two")
    assert {"quorum-before", "quorum-after"} <= got and "quorum-lost" not in got


def test_api_server_killed_under_load_the_other_serves_and_a_resumed_watch_is_exact(ha: HAControlPlane):
    from pyk8s.client import Client
    from pyk8s.client.kubeconfig import load_kubeconfig

    a, b = ha.servers
    start_rv = raw_request(b, "GET", CM).json()["metadata"]["resourceVersion"]
    events: list[tuple[str, str, int]] = []
    resumed_on: list[str] = []
    done = threading.Event()

    async def watch() -> None:
        # the watch starts on a (the first URL); when a dies the client resumes it on b
        client = Client([a.url, b.url], load_kubeconfig(a.kubeconfig).ssl_client_context())
        rv = start_rv
        try:
            while not done.is_set():
                try:
                    async for ev in client.watch(("", "v1", "configmaps"), NS, rv, timeout_seconds=2,
                                                 label_selector="run=kill"):
                        md = ev["object"]["metadata"]
                        rv = md["resourceVersion"]
                        if ev["type"] != "BOOKMARK":
                            events.append((ev["type"], md["name"], int(rv)))
                except Exception:  # noqa: BLE001 - the server went away: resume on the next one
                    resumed_on.append(client.server)
                    await asyncio.sleep(0.1)
        finally:
            await client.close()

    t = threading.Thread(target=lambda: asyncio.run(watch()))
    t.start()
    try:
        with Writer(b, "kill") as wb:
            wb.wait_acked(15)
            a.kill9()
            wb.wait_acked(30)
        time.sleep(0.5)
        final = names(b, "kill")
        assert wb.failed == [], wb.failed
        wait_for(lambda: len(events) >= len(final), 15, "every event on the resumed watch")
    finally:
        done.set()
        t.join(15)
    assert resumed_on and resumed_on[0] == b.url
    added = [n for typ, n, _ in events if typ == "ADDED"]
    assert sorted(added) == sorted(final) and len(added) == len(set(added)), "missed or repeated events"
    assert [typ for typ, _, _ in events] == ["ADDED"] * len(events)
    revs = [rv for _, _, rv in events]
    assert revs == sorted(revs) and len(set(revs)) == len(revs)


def test_etcd_restarted_under_a_running_server_watches_resume(ha: HAControlPlane, etcd: EtcdCluster,
                                                               tmp_path: Path):
    b = ha.servers[1]
    rv = raw_request(b, "POST", CM, body={"metadata": {"name": "restart-before", "labels": {"run": "restart"}}}
                     ).json()["metadata"]["resourceVersion"]
    seen: list[dict[str, Any]] = []

    def watch() -> None:  # held open across the restart
        r = raw_request(b, "GET", f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=10&labelSelector=run%3Drestart",
                        timeout=30)
        seen.extend(json.loads(line) for line in r.body.splitlines() if line.strip())

    t = threading.Thread(target=watch)
    t.start()
    time.sleep(0.3)
    for m in etcd.members:
        m.kill()
    for m in etcd.members:
        m.start()
    etcd.wait_healthy(30)
    wait_for(lambda: raw_request(b, "POST", CM, body={"metadata": {"name": "restart-after", "labels": {
        "run": "restart"}}}).status in (201, 409), 30, "writes after the restart")
    # a fresh watch from before the restart sees the write made after it
    w = raw_request(b, "GET", f"{CM}?watch=true&resourceVersion={rv}&timeoutSeconds=1&labelSelector=run%3Drestart")
    assert w.status == 200
    assert [json.loads(x)["object"]["metadata"]["name"] for x in w.body.splitlines() if x.strip()] == ["restart-after"]
    t.join(40)
    # the watch held open across the restart either delivered it, or ended with 410 Gone (upstream's
    # answer when a watch cannot continue), never with a wrong or repeated event
    got = [(e["type"], e["object"]["metadata"].get("name")) for e in seen]
    if got and got[-1][0] == "ERROR":
        assert seen[-1]["object"]["code"] == 410
        got = got[:-1]
    assert got in ([], [("ADDED", "restart-after")]), got
