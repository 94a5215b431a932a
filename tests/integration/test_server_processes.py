"""`pyk8s server`'s processes: no child outlives it, and a busy server stops fast and loses nothing.

The load is bench/busy.py (its own process): ConfigMap writers and open watches, every
acknowledged write recorded. Servers run without a kubelet; the scheduler runs as its own
process (the default) and, with --api-workers 2, two API worker processes.
"""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from bench.report import api_worker_pids, scheduler_pids
from bench.stopping import start_load

from tests.cluster import Cluster


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except OSError:
        return False


def _wait_gone(pids: list[int], timeout: float) -> list[int]:
    """The pids still alive after `timeout` (none, as soon as all are gone)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pids = [p for p in pids if _alive(p)]
        if not pids:
            return []
        time.sleep(0.05)
    return [p for p in pids if _alive(p)]


def _children(server_pid: int) -> list[int]:
    return scheduler_pids(server_pid) + api_worker_pids(server_pid)


def _kill_all(pids: list[int]) -> None:
    for p in pids:
        if _alive(p):
            os.kill(p, signal.SIGKILL)


def test_no_child_outlives_a_server_killed_under_load(tmp_path: Path) -> None:
    """kill -9 of a server with 50 writers and 20 watches on it: within a few seconds none of
    its children (scheduler, API workers) runs any more; three rounds on the same data dir, then
    one kill as soon as its children are spawned, before they are ready."""
    c = Cluster(str(tmp_path / "data"), extra_args=["--api-workers", "2"])
    for round_ in range(3):
        c.start()
        load = start_load(c.kubeconfig, str(tmp_path / f"load{round_}"), writers=50, watches=20)
        try:
            kids = _children(c.proc.pid)  # type: ignore[union-attr]
            assert len(kids) == 3, kids  # the scheduler and two API workers
            time.sleep(0.5)
            c.kill9()
            left = _wait_gone(kids, 5.0)
            _kill_all(left)
            assert not left, f"round {round_}: children alive 5 s after kill -9 of their server: {left}"
        finally:
            load.kill()
            load.wait()
    # during start-up: the children exist, the server has not said it is ready
    proc = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "server", "--data-dir", c.data_dir, "--port", "0",
                             "--disable-agent", "--api-workers", "2"], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    kids = []
    while time.monotonic() < deadline and not kids and proc.poll() is None:
        kids = api_worker_pids(proc.pid)
        time.sleep(0.005)
    proc.kill()
    proc.wait()
    assert kids, "the server never started its API workers"
    left = _wait_gone(kids, 5.0)
    _kill_all(left)
    assert not left, f"children alive 5 s after kill -9 of their starting server: {left}"


def test_a_restarted_server_stops_a_scheduler_left_by_the_one_before(tmp_path: Path) -> None:
    """A scheduler still running from an earlier server on this data dir (its parent gone) is
    stopped before the new server starts its own: never two schedulers side by side. A live
    server's scheduler is left alone."""
    c = Cluster(str(tmp_path / "data")).start()
    c.stop()
    conf = os.path.join(os.path.abspath(c.data_dir), "scheduler.conf")
    # the leftover: the command line the server gives its scheduler, its parent not a server
    old = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "scheduler", "--kubeconfig", conf, "--v", "0"],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(1.0)
        assert old.poll() is None
        c.start()
        assert old.wait(10) == -signal.SIGKILL
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not scheduler_pids(c.proc.pid):  # type: ignore[union-attr]
            time.sleep(0.05)
        [sched] = scheduler_pids(c.proc.pid)  # type: ignore[union-attr]
        # a live server's child is no orphan: a second server on the same data dir (a mistake,
        # but not one to answer by killing) leaves it running
        b = Cluster(c.data_dir).start()
        b.stop()
        assert _alive(sched)
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
        c.stop()
