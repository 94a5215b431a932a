"""`pyk8s server` runs the scheduler as its own `pyk8s scheduler` process (as upstream deploys
kube-scheduler): started with the server under its own identity, restarted if it dies, stopped
with the server (lease released), gone with the server even after kill -9; and
--in-process-scheduler keeps it on the server's loop."""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from typing import Any

from tests.cluster import Cluster
from tests.integration.test_scheduler import bound, create, get, node, pod, wait_for


def children(pid: int) -> list[tuple[int, str]]:
    """(pid, command line) of a process's children."""
    out = []
    for t in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{t}/children") as f:
                kids = [int(x) for x in f.read().split()]
        except OSError:
            continue
        for k in kids:
            try:
                with open(f"/proc/{k}/cmdline", "rb") as f:
                    out.append((k, f.read().replace(b"\0", b" ").decode()))
            except OSError:
                pass
    return out


def scheduler_pid(c: Cluster) -> int | None:
    assert c.proc is not None
    return next((p for p, cmd in children(c.proc.pid) if " scheduler --kubeconfig" in cmd), None)


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


@contextlib.contextmanager
def server(tmp_path: Any, *args: str) -> Iterator[Cluster]:
    c = Cluster(str(tmp_path / "data"), list(args)).start()
    try:
        yield c
    finally:
        c.stop()


def test_scheduler_runs_as_its_own_process(tmp_path):
    with server(tmp_path) as c:
        _own_process(c)


def _own_process(c: Cluster) -> None:
    pid = wait_for(lambda: scheduler_pid(c), what="a scheduler child")
    conf = os.path.join(c.data_dir, "scheduler.conf")
    with open(f"/proc/{pid}/cmdline", "rb") as f:
        assert conf.encode() in f.read()
    assert os.stat(conf).st_mode & 0o077 == 0  # a client key inside: owner only
    # it acts as system:kube-scheduler (the lease holder is its identity, the binder is RBAC-checked)
    create(c, node("n1"), pod("p1"))
    assert bound(c, "p1") == "n1"
    lease = get(c, "lease", "-n", "kube-system", "kube-scheduler")
    assert lease["spec"]["holderIdentity"]
    ev = [e for e in get(c, "events")["items"] if e["reason"] == "Scheduled"]
    assert ev and ev[0]["source"].get("component", ev[0].get("reportingComponent")) == "default-scheduler"

    # killed: the server starts another, which takes over (the lease: a graceful exit released it)
    os.kill(pid, 15)
    pid2 = wait_for(lambda: (p := scheduler_pid(c)) not in (None, pid) and p, what="a restarted scheduler")
    create(c, pod("p2"))
    assert bound(c, "p2", timeout=30) == "n1"

    # the server stops it first, and it gives up its lease on the way out
    assert "scheduler exited with 0; restarting" in "".join(c.output)
    before = len(c.output)
    c.stop()
    assert not alive(pid2)
    assert "restarting" not in "".join(c.output[before:])


def gone_after_kill9(c: Cluster, pid: int) -> None:
    """The server is killed with SIGKILL: its child `pid` goes too (PR_SET_PDEATHSIG), within 15 s."""
    c.kill9()
    deadline = time.monotonic() + 15
    while alive(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not alive(pid)


def test_scheduler_dies_with_a_killed_server(tmp_path):
    with server(tmp_path) as c:
        gone_after_kill9(c, wait_for(lambda: scheduler_pid(c), what="a scheduler child"))


def test_in_process_scheduler(tmp_path):
    with server(tmp_path, "--in-process-scheduler") as c:
        create(c, node("n1"), pod("p1"))
        assert bound(c, "p1") == "n1"
        assert scheduler_pid(c) is None
        assert not os.path.exists(os.path.join(c.data_dir, "scheduler.conf"))
