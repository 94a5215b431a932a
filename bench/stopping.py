"""How long a busy `pyk8s server` takes to stop on SIGTERM, and whether it loses a write doing so.

The server (scheduler and controllers running, no kubelet) gets BENCH_STOP_WATCHES open watches
and BENCH_STOP_WRITERS writers creating ConfigMaps (bench/busy.py, its own process); after a
second of that it gets SIGTERM, and the time until its process (children included) has exited is
the figure. Then it starts again on the same data dir, and every write that was acknowledged
must be there.

The anchor is upstream's shutdown with its default flags: kube-apiserver stops at once
(--shutdown-delay-duration 0), ends watches at once (--shutdown-watch-termination-grace-period
0) and lets the requests in flight finish, so it needs as long as its slowest request: the
slowest write the load saw, measured in the same run.

Before the graceful stop (shutdown.py), same machine: one process never stopped (killed after
120 s: the watches its clients started again kept aiohttp's shutdown waiting) and with two API
workers 5.5 s, every write in flight dropped unanswered; after: 1.4-1.9 s and 0.7-1.5 s.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import tempfile
import time

from .report import row

N_WRITERS = int(os.environ.get("BENCH_STOP_WRITERS", "50"))
N_WATCHES = int(os.environ.get("BENCH_STOP_WATCHES", "200"))
# the server modes, one run each: 1 is one process answering everything, N > 1 is --api-workers N
MODES = [int(w) for w in os.environ.get("BENCH_API_WORKERS", "1,2").split(",") if w.strip()]


def start_load(kubeconfig: str, out: str, writers: int, watches: int) -> subprocess.Popen[str]:
    """bench/busy.py against a server, returned once it says every watch and writer is going."""
    repo = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    p = subprocess.Popen([sys.executable, "-m", "bench.busy", kubeconfig, out, "--writers", str(writers),
                          "--watches", str(watches)], stdout=subprocess.PIPE, text=True, cwd=repo)
    assert p.stdout is not None
    line = p.stdout.readline()
    if not line.startswith("busy: ready"):
        p.kill()
        raise RuntimeError(f"the load did not start: {line!r}")
    return p


def stop_time(c: object, timeout: float = 120.0) -> float:
    """SIGTERM to a tests.cluster.Cluster's server; seconds until its process has exited."""
    proc = c.proc  # type: ignore[attr-defined]
    t = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return time.monotonic() - t


def main() -> None:
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for workers in MODES:
        run_server(workers)


def run_server(workers: int) -> None:
    from tests.cluster import Cluster

    from .busy import read_acks, read_summary

    print(f"  -- server with --api-workers {workers}, {N_WRITERS} writers, {N_WATCHES} watches")
    d = tempfile.mkdtemp(prefix="pyk8s-bench-stop-")
    out = tempfile.mkdtemp(prefix="pyk8s-bench-stop-load-")
    c = Cluster(d, extra_args=["--api-workers", str(workers)]).start()
    load = start_load(c.kubeconfig, out, N_WRITERS, N_WATCHES)
    time.sleep(1.0)
    took = stop_time(c)
    load.wait(60)
    s = read_summary(out)
    acks = read_acks(out)
    print(f"  watches ended: {s['watch_ends']}; writes answered otherwise than 2xx: {s['codes'] or 'none'}")
    row("stop on SIGTERM, busy server", took, "s", s["latency_max"], "upstream: the slowest request in flight",
        higher_is_better=False)
    c.start()
    names = set(c.kubectl("get", "configmaps", "-o", "name").stdout.split())
    lost = [n for n in acks if f"configmap/{n}" not in names]
    row("acknowledged writes", len(acks), "")
    row("acknowledged writes lost across the stop", len(lost), "")
    c.stop()


if __name__ == "__main__":
    main()
