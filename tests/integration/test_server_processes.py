"""`pyk8s server`'s processes: no child outlives it, and a busy server stops fast and loses nothing.

The load is bench/busy.py (its own process): ConfigMap writers and open watches, every
acknowledged write recorded. Servers run without a kubelet; the scheduler runs as its own
process (the default) and, with --api-workers 2, two API worker processes.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import ssl
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlsplit

import pytest
from bench.busy import read_acks, read_summary
from bench.report import api_worker_pids, scheduler_pids
from bench.stopping import start_load, stop_time

from pyk8s.client.kubeconfig import load_kubeconfig
from tests.cluster import Cluster, raw_request

# one worker runs the module: its tests share one server, and some build on what earlier ones made
pytestmark = pytest.mark.xdist_group("server-processes")


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
    old = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "scheduler", "--kubeconfig", conf, "--v", "0",
                            "--secure-port", "0"],
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
        # but not one to answer by killing) is refused by the database's lock and leaves it running
        b = Cluster(c.data_dir)
        with pytest.raises(RuntimeError, match=r"state\.db is in use by another process \(pid \d+\)"):
            b.start()
        b.stop()
        assert _alive(sched)
        assert raw_request(c, "GET", "/readyz").status == 200
    finally:
        if old.poll() is None:
            old.kill()
            old.wait()
        c.stop()


def _tls(c: Cluster) -> ssl.SSLSocket:
    u = urlsplit(c.url)
    ctx = load_kubeconfig(c.kubeconfig).ssl_client_context()
    assert ctx is not None and u.hostname
    return ctx.wrap_socket(socket.create_connection((u.hostname, u.port), timeout=30), server_hostname=u.hostname)


def _held_open(c: Cluster) -> list[ssl.SSLSocket]:
    """What a client could hold to keep a stopping server waiting: idle keep-alive connections
    (one request answered each) and half a request head."""
    held = []
    for _ in range(3):
        s = _tls(c)
        s.sendall(b"GET /version HTTP/1.1\r\nHost: x\r\n\r\n")
        assert s.recv(65536).startswith(b"HTTP/1.1 200")
        held.append(s)
    s = _tls(c)
    s.sendall(b"POST /api/v1/namespaces/default/configmaps HTTP/1.1\r\nHost: x\r\nContent-Le")
    held.append(s)
    return held


@pytest.mark.parametrize("extra", [[], ["--api-workers", "2"]], ids=["one-process", "api-workers"])
def test_sigterm_stops_a_busy_server_fast_and_loses_no_acknowledged_write(tmp_path: Path, extra: list[str]) -> None:
    """SIGTERM to a server with 200 watches and 50 writers: it stops within a few seconds (the
    figure is bench/stopping.py's; the bound here is generous for a loaded machine), every watch
    sees its stream end cleanly and the watch each watcher then starts again (as informers do)
    is refused, not kept open, every write in flight is answered (acknowledged, or 429 to be
    retried: none left in doubt by a dropped connection), no child is left, the SQLite WAL is
    checkpointed, and after a restart every acknowledged write is there as acknowledged.
    Before: the watches started again kept the server 60 s and more in aiohttp's shutdown."""
    c = Cluster(str(tmp_path / "data"), extra_args=extra).start()
    out = str(tmp_path / "load")
    load = start_load(c.kubeconfig, out, writers=50, watches=200)
    held: list[ssl.SSLSocket] = []
    try:
        kids = _children(c.proc.pid)  # type: ignore[union-attr]
        held = _held_open(c)
        time.sleep(1.0)
        took = stop_time(c, timeout=30)
        assert took < 10, f"a busy server took {took:.1f} s to stop"
        assert c.proc.returncode == 0  # type: ignore[union-attr]
        assert not _wait_gone(kids, 5.0)
        assert load.wait(60) == 0
    finally:
        for s in held:
            s.close()
        if load.poll() is None:
            load.kill()
    summary = read_summary(out)
    ends = summary["watch_ends"]
    assert ends["clean"] == 200 and "broken" not in ends, ends  # each watcher's next watch: refused or closed
    assert ends.get("refused", 0) + ends.get("closed", 0) == 200, ends
    assert set(summary["codes"]) <= {"429"}, summary["codes"]  # never "dropped"
    wal = os.path.join(c.data_dir, "state.db-wal")
    assert not os.path.exists(wal) or os.path.getsize(wal) == 0
    acks = read_acks(out)
    assert len(acks) > 50
    c.start()
    try:
        r = raw_request(c, "GET", "/api/v1/namespaces/default/configmaps")
        assert r.status == 200
        stored = {o["metadata"]["name"]: o["metadata"]["resourceVersion"] for o in json.loads(r.body)["items"]}
        lost = {n: rv for n, rv in acks.items() if stored.get(n) != rv}
        assert not lost, f"{len(lost)} acknowledged writes lost across the stop, e.g. {list(lost.items())[:3]}"
    finally:
        c.stop()
