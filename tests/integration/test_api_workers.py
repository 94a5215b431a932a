"""`pyk8s server --api-workers 2`: two worker processes answer on the port, the main one keeps the store.

The suites marked BOTH_DATASTORES also run whole on this mode ("sqlite-workers"); this module
pins what is particular to it: requests reach both workers, every answer reads the writes
acknowledged before it whichever process served them, a killed worker comes back, and the
workers go when the main server is killed.
"""

from __future__ import annotations

import os
import signal
import time

import pytest

from tests.cluster import Cluster, raw_request
from tests.ha_helper import wait_for

CM = "/api/v1/namespaces/default/configmaps"


def _workers(c: Cluster) -> list[int]:
    assert c.proc is not None
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            with open(f"/proc/{d}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{d}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if ppid == c.proc.pid and b"--api-worker" in argv:
            out.append(int(d))
    return out


def _cpu(pid: int) -> float:
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@pytest.fixture
def cluster(tmp_path):
    c = Cluster(str(tmp_path / "data"), ["--api-workers", "2"]).start()
    yield c
    c.stop()


def _two_workers(c: Cluster) -> list[int]:
    return wait_for(lambda: len(_workers(c)) == 2 and _workers(c), 20, "two API workers")


def test_workers_serve_and_reads_follow_writes(cluster):
    c = cluster
    workers = _two_workers(c)
    before = [_cpu(w) for w in workers]
    # each request on a new connection: the kernel spreads them over both processes, so a read
    # is often served by the other process than the write before it, and must still see it
    for i in range(150):
        r = raw_request(c, "POST", CM, body={"metadata": {"name": f"c{i}"}, "data": {"i": str(i)}})
        assert r.status == 201, r.body
        rv = r.json()["metadata"]["resourceVersion"]
        got = raw_request(c, "GET", f"{CM}/c{i}")
        assert got.status == 200 and got.json()["metadata"]["resourceVersion"] == rv
        if i % 10 == 0:
            names = {o["metadata"]["name"] for o in raw_request(c, "GET", CM).json()["items"]}
            assert f"c{i}" in names
    used = [_cpu(w) - b for w, b in zip(workers, before, strict=True)]
    assert min(used) > 0.2, f"a worker served (almost) none of the requests: CPU seconds {used}"
    # refusals come back in Kubernetes form from either process
    for _ in range(6):
        r = raw_request(c, "POST", CM, body={"metadata": {"name": "c1"}})
        assert r.status == 409 and r.json()["reason"] == "AlreadyExists"
        assert r.json()["message"] == 'configmaps "c1" already exists'
        stale = raw_request(c, "PUT", f"{CM}/c2", body={"metadata": {"name": "c2", "resourceVersion": "1"}})
        assert stale.status == 409 and "the object has been modified" in stale.json()["message"]


def test_killed_worker_is_restarted_and_loses_nothing(cluster):
    c = cluster
    worker = _two_workers(c)[0]
    acked = []
    for i in range(40):
        r = raw_request(c, "POST", CM, body={"metadata": {"name": f"k{i}"}})
        assert r.status == 201
        acked.append(f"k{i}")
    os.kill(worker, signal.SIGKILL)
    wait_for(lambda: len(_workers(c)) == 2 and worker not in _workers(c), 30, "a new API worker")
    deadline = time.monotonic() + 20
    while True:  # connections the kernel still handed to the dead worker fail until it is gone
        try:
            names = {o["metadata"]["name"] for o in raw_request(c, "GET", CM, timeout=5).json()["items"]}
            break
        except OSError:
            assert time.monotonic() < deadline
            time.sleep(0.2)
    assert set(acked) <= names
    for i in range(20):
        assert raw_request(c, "POST", CM, body={"metadata": {"name": f"after{i}"}}).status == 201


def test_workers_go_with_the_main_server(cluster):
    c = cluster
    workers = _two_workers(c)
    c.kill9()

    def gone(pid: int) -> bool:
        try:
            with open(f"/proc/{pid}/stat") as f:
                return f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            return True

    wait_for(lambda: all(gone(w) for w in workers), 15, "the workers to exit")
