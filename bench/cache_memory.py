"""Bytes per object in the API server's watch cache, measured on a replay of a real run's store.

Runs a real `pyk8s server` with BENCH_MEM_NODES simulated nodes (`pyk8s sim`) and BENCH_MEM_PODS
pods created bound to them, waits until they are Running, and prints the server's and its
scheduler's RSS. Then it replays the run's SQLite log (every revision, in order) into watch caches
in this process under tracemalloc, serialising every event once as a watcher does, and prints per
resource what the cache holds: bytes per current object and per history event, by structure.
The history here keeps every event of the run (it is shorter than the cache's 75 s window).
"""

from __future__ import annotations

import asyncio
import gc
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
import time
import tracemalloc
from typing import Any

from pyk8s.storage import DELETE, PUT, Event, KeyValue

from .report import row

N_NODES = int(os.environ.get("BENCH_MEM_NODES", "200"))
N_PODS = int(os.environ.get("BENCH_MEM_PODS", "1000"))
NS = "mem-bench"
PREFIX = "mem-node-"
WATCHCACHE = "watchcache.py"


async def _load(kubeconfig: str, sim_pid: int) -> None:
    """N_NODES Ready, then N_PODS pods bound round-robin and Running."""
    from pyk8s.client import Client

    from .sim import _namespace, _pod, _ready

    c = Client.from_kubeconfig(kubeconfig, pool_size=40, timeout=120)
    try:
        deadline = time.monotonic() + 300
        while time.monotonic() < deadline:
            nodes = await c.list(("", "v1", "nodes"))
            if sum(1 for n in nodes["items"] if _ready(n)) >= N_NODES:
                break
            await asyncio.sleep(0.5)
        await _namespace(c, NS)
        it = iter(range(N_PODS))

        async def creator() -> None:
            for i in it:
                await c.create(("", "v1", "pods"), _pod(i, f"{PREFIX}{i % N_NODES}", NS))

        await asyncio.gather(*(creator() for _ in range(32)))
        while time.monotonic() < deadline:
            pods = await c.list(("", "v1", "pods"), NS)
            if sum(1 for p in pods["items"] if (p.get("status") or {}).get("phase") == "Running") >= N_PODS:
                break
            await asyncio.sleep(0.5)
    finally:
        await c.close()


def _rss_mib(pid: int) -> float:
    from .sim import _proc_kib

    return _proc_kib(pid, "VmRSS") / 1024


def run_cluster(d: str) -> tuple[str, dict[str, float]]:
    """Run the load; returns a copy of the store's database and the processes' RSS (MiB)."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    from tests.cluster import Cluster

    from .report import scheduler_pids

    c = Cluster(d).start(60)
    sim = subprocess.Popen([sys.executable, "-m", "pyk8s.cli", "sim", "--nodes", str(N_NODES), "--name-prefix",
                            PREFIX], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           env=dict(os.environ, KUBECONFIG=c.kubeconfig))
    try:
        asyncio.run(_load(c.kubeconfig, sim.pid))
        assert c.proc is not None
        rss = {"server": _rss_mib(c.proc.pid), "scheduler": sum(_rss_mib(p) for p in scheduler_pids(c.proc.pid))}
        db = os.path.join(d, "copy.db")
        src = sqlite3.connect(os.path.join(d, "state.db"))
        dst = sqlite3.connect(db)
        src.backup(dst)
        src.close()
        dst.close()
    finally:
        sim.terminate()
        sim.wait(30)
        c.stop()
    return db, rss


def _traced_by_line(snap: tracemalloc.Snapshot) -> dict[int, int]:
    out: dict[int, int] = {}
    for st in snap.statistics("lineno"):
        fr = st.traceback[0]
        if fr.filename.endswith(WATCHCACHE):
            out[fr.lineno] = out.get(fr.lineno, 0) + st.size
    return out


def _settle(caches: Any) -> None:
    """The history as it is FRESH_SECONDS after the last event (every event packed, where events are packed)."""
    for c in caches:
        if hasattr(c, "pack_older"):
            c.pack_older(float("inf"))


def _forget(c: Any) -> None:
    """Only the current objects: no history, no snapshots."""
    c.history.clear()
    for extra in ("_fresh", "_latest"):  # what newer caches keep beside the history
        if hasattr(c, extra):
            getattr(c, extra).clear()
    c.snapshots.clear()


def _event(last: dict[str, KeyValue], rev: int, key: str, created: int, deleted: int, value: bytes | None) -> Event:
    """A row of the log as the embedded store's event: its value and the previous one, each a
    fresh bytes object (allocated while traced), as the store's write and its read of the
    previous row give them."""
    prev = last.pop(key, None)
    if prev is not None:
        prev = KeyValue(key, _copy(prev.value), prev.create_revision, prev.mod_revision)
    if deleted:
        return Event(DELETE, KeyValue(key, prev.value if prev else b"{}", created, rev), rev, prev)
    kv = last[key] = KeyValue(key, _copy(value or b"{}"), created, rev)
    return Event(PUT, kv, rev, prev)


def _copy(b: bytes) -> bytes:
    return memoryview(b).tobytes()


def replay(db: str) -> None:
    """Every revision of the log into watch caches; bytes per object and per history event."""
    from pyk8s.apiserver.watchcache import CacheSet, ResourceCache

    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT rev, key, created, deleted, value FROM kv ORDER BY rev").fetchall()
    conn.close()
    caches: dict[str, ResourceCache] = {}
    tracemalloc.start()
    last: dict[str, KeyValue] = {}
    for rev, key, created, deleted, value in rows:
        p = CacheSet.prefix_of(key)
        c = caches.get(p)
        if c is None:
            c = caches[p] = ResourceCache(p)
        c.apply(_event(last, rev, key, created, deleted, value)).json_chunk()  # as the first JSON watcher does
    del last, rows
    _settle(caches.values())
    gc.collect()
    full = tracemalloc.take_snapshot()
    total_full = tracemalloc.get_traced_memory()[0]
    sizes = {}
    for p, c in caches.items():
        sizes[p] = (len(c.objects), len(c.history))
    for c in caches.values():
        _forget(c)
    gc.collect()
    cur = tracemalloc.take_snapshot()
    total_cur = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    a, b = _traced_by_line(full), _traced_by_line(cur)
    print(f"  (replayed {sum(h for _, h in sizes.values()):,} events; per line of {WATCHCACHE}, bytes still held:)")
    for line in sorted(a, key=lambda k: -a[k])[:8]:
        print(f"    line {line:>4}: {a[line]:>14,} with history  {b.get(line, 0):>14,} current only")
    row("watch cache, current objects", total_cur / 2**20, "MiB")
    row("watch cache, history (events held)", (total_full - total_cur) / 2**20, "MiB")
    for p in ("/registry/pods/", "/registry/nodes/", "/registry/leases/"):
        if p in caches:
            n, h = sizes[p]
            print(f"  {p}: {n:,} objects, {h:,} history events")
    # per object of one resource: replay it alone
    for p in ("/registry/pods/", "/registry/nodes/", "/registry/leases/"):
        _one(db, p)


def _one(db: str, prefix: str) -> None:
    from pyk8s.apiserver.watchcache import ResourceCache

    conn = sqlite3.connect(db)
    rows = conn.execute("SELECT rev, key, created, deleted, value FROM kv WHERE key >= ? AND key < ? ORDER BY rev",
                        (prefix, prefix[:-1] + "0")).fetchall()
    conn.close()
    if not rows:
        return
    enc = sum(len(r[4] or b"") for r in rows) / len(rows)
    gc.collect()
    tracemalloc.start()
    c = ResourceCache(prefix)
    last: dict[str, KeyValue] = {}
    for rev, key, created, deleted, value in rows:
        c.apply(_event(last, rev, key, created, deleted, value)).json_chunk()
    del last, rows  # the store keeps no values: what the cache still holds counts
    _settle([c])
    gc.collect()
    full = tracemalloc.get_traced_memory()[0]
    n, h = len(c.objects), len(c.history)
    _forget(c)
    gc.collect()
    cur = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    name = prefix.split("/")[2]
    print(f"  -- {name}: {n:,} objects, {h:,} events, stored value {enc:,.0f} B on average")
    row(f"{name}: bytes per current object", cur / max(n, 1), "B")
    row(f"{name}: bytes per history event", (full - cur) / max(h, 1), "B")


def main() -> None:
    if os.environ.get("BENCH_MEM_DB"):  # replay a kept copy only (BENCH_MEM_KEEP=<path> keeps one)
        replay(os.environ["BENCH_MEM_DB"])
        return
    d = tempfile.mkdtemp(prefix="pyk8s-bench-mem-")
    load0 = os.getloadavg()[0]
    try:
        db, rss = run_cluster(d)
        print(f"  ({N_NODES:,} simulated nodes, {N_PODS:,} pods Running; load average {load0:.1f} before, "
              f"{os.getloadavg()[0]:.1f} after)")
        row("server RSS", rss["server"], "MiB")
        row("scheduler process RSS", rss["scheduler"], "MiB")
        if os.environ.get("BENCH_MEM_KEEP"):
            shutil.copy(db, os.environ["BENCH_MEM_KEEP"])
        replay(db)
    finally:
        shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    main()
