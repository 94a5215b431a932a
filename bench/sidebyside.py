"""Side by side: anchors.md §7's phases against any cluster, pyk8s or upstream, by kubeconfig.

    python -m bench.sidebyside                                   # a pyk8s server of its own vs §7's upstream
    python -m bench.sidebyside --kubeconfig ~/.kube/kind --label upstream \\
        --process-match 'kube-apiserver|kube-scheduler|kube-controller-manager|etcd' \\
        --kubeconfig @pyk8s --label pyk8s --rounds 3 --json out.json

Each target (a kubeconfig, or `@pyk8s`: a `pyk8s server` this bench starts, and stops, each round)
gets the same client code, in turn within each round so a shared machine's load moves them alike:
start to /readyz and to the `default` ServiceAccount (only for a server the bench starts), RSS
fresh and idle CPU, POST of 1,000 pods with 1 keep-alive client and with 8 (pods/s and
control-plane CPU seconds) while a WATCH counts the 8 clients' creates, `kubectl get pods` of
1,000 pods as a table and `-o json` (the real kubectl), deleting a namespace with 1,000 pods until
it is gone, 1,000 pods bound on 100 fake nodes (the cluster's own scheduler binds them), a
Deployment of 1,000 until all are bound (its controllers and scheduler), and RSS and CPU per
control-plane process. What a run creates in a cluster and how it is cleaned up:
bench/sidebyside_phases.py. CPU and RSS come from /proc: a pyk8s server's process tree, the pids
of --pids-of, or the processes --process-match finds on this machine (a kind cluster's are
visible from the host); for a control plane elsewhere they are "not measured".

The table gives each target's figure (the median over rounds, with the range), its ratio to the
first target, and at full size (--scale 1) anchors.md §7's upstream range with the ratio of each
self-started pyk8s to it.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import secrets
import shutil
import signal
import socket
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if REPO not in sys.path:
    sys.path.insert(0, REPO)

from bench.sidebyside_phases import ControlPlane, Refused, Run, Sizes  # noqa: E402

SELF = "@pyk8s"
PHASES = ["start", "resources", "create", "watch", "get", "delete", "bind", "deployment"]
NOT_STARTED = "not measured: not started by the bench"

# (key, what, unit, lower is better); {pods} and {nodes} are the run's sizes
ROWS: list[tuple[str, str, str, bool]] = [
    ("start_readyz", "start -> /readyz", "s", True),
    ("start_sa", "start -> `default` ServiceAccount", "s", True),
    ("rss_fresh", "RSS of the control plane, fresh", "MiB", True),
    ("idle_cpu", "idle CPU", "% core", True),
    ("create1_rate", "POST {pods} pods, 1 keep-alive client", "pods/s", False),
    ("create1_cpu", "  same, control-plane CPU", "CPU-s", True),
    ("create8_rate", "POST {pods} pods, 8 clients", "pods/s", False),
    ("create8_cpu", "  same, control-plane CPU", "CPU-s", True),
    ("get_table", "kubectl get pods, {pods} pods, table", "s", True),
    ("get_json", "kubectl get pods -o json", "s", True),
    ("watch", "WATCH receives {pods} creates", "s", True),
    ("delete_ns", "delete a namespace with {pods} pods", "s", True),
    ("bind", "{pods} pods bound on {nodes} nodes", "s", True),
    ("bind_cpu", "  same, control-plane CPU", "CPU-s", True),
    ("deployment", "Deployment of {pods}, all bound", "s", True),
    ("deployment_cpu", "  Deployment phase, control-plane CPU", "CPU-s", True),
    ("rss_after", "RSS after all of the above", "MiB", True),
]

# anchors.md §7: the upstream control plane (v1.32, default flags) on this kind of 2-core machine,
# at full size (1,000 pods, 100 nodes)
UPSTREAM: dict[str, tuple[float, float]] = {
    "start_readyz": (4.8, 7.7), "start_sa": (10.2, 14.2), "rss_fresh": (437, 467), "idle_cpu": (8.4, 8.4),
    "create1_rate": (71, 122), "create1_cpu": (9.4, 11.6), "create8_rate": (119, 325),
    "get_table": (0.33, 0.76), "get_json": (0.94, 3.2), "watch": (3.2, 8.9), "delete_ns": (12.6, 22.9),
    "bind": (18.0, 18.6), "deployment": (49.5, 49.7), "deployment_cpu": (38, 45), "rss_after": (749, 776),
}


@dataclass
class Target:
    label: str
    kubeconfig: str  # SELF: started by the bench
    pids_of: dict[str, int] | None = None
    process_match: str | None = None
    rounds: list[dict[str, Any]] = field(default_factory=list)

    @property
    def started(self) -> bool:
        return self.kubeconfig == SELF


# -- running ---------------------------------------------------------------------------------------


def run_id(base: str | None, n: int, total: int) -> str:
    if base is None:
        return secrets.token_hex(3)
    return base if total == 1 else f"{base}{n}"


def run_target(t: Target, args: argparse.Namespace, rid: str) -> dict[str, Any]:
    """One round of the phases against t; for @pyk8s the server is started here and stopped after."""
    sizes = Sizes.scaled(args.scale)
    phases = set(args.phases)
    cluster: Any = None
    data_dir = ""
    figures: dict[str, Any] = {}
    try:
        if t.started:
            cluster, data_dir, figures = start_pyk8s(args.pyk8s_args, "start" in phases)
            kubeconfig = cluster.kubeconfig
            plane = ControlPlane.tree(cluster.proc.pid)
        else:
            kubeconfig = t.kubeconfig
            if "start" in phases:
                figures["start_readyz"] = figures["start_sa"] = NOT_STARTED
            plane = (ControlPlane.named(t.pids_of) if t.pids_of else
                     ControlPlane.matching(t.process_match) if t.process_match else ControlPlane.none())
        run = Run(kubeconfig, sizes, plane, phases, rid, kubectl=args.kubectl,
                  idle_seconds=args.idle_seconds if args.idle_seconds is not None else max(0.5, 10 * args.scale),
                  timeout=args.timeout, log=lambda s: print(f"  [{t.label}]{s}", flush=True))
        try:
            figures.update(asyncio.run(_interruptible(run)))
        except asyncio.CancelledError:
            if not _INTERRUPTED.is_set():
                raise
            raise KeyboardInterrupt from None
        except Refused:
            raise
        except Exception as e:  # a phase that failed: recorded, the other targets and rounds go on
            figures.update(run.figures)
            figures["error"] = f"{type(e).__name__}: {e}"
            print(f"  [{t.label}] failed: {figures['error']}", flush=True)
        if _INTERRUPTED.is_set():  # a cancellation some await swallowed: the run still ends as interrupted
            raise KeyboardInterrupt
        return figures
    finally:
        if cluster is not None:
            cluster.stop()
        if data_dir:
            shutil.rmtree(data_dir, ignore_errors=True)


def start_pyk8s(extra: list[str], measure: bool) -> tuple[Any, str, dict[str, Any]]:
    """A `pyk8s server` (as tests/cluster.py starts it, without a kubelet); the seconds from its
    spawn to /readyz answering 200 and to the `default` ServiceAccount existing, polled while it
    starts (it prints its address only once all its components run)."""
    from tests.cluster import Cluster

    d = tempfile.mkdtemp(prefix="bench-sbs-pyk8s-")
    c = Cluster(d, extra_args=extra)
    with socket.socket() as s:  # a port known before the server says it, for /readyz during its start
        s.bind(("127.0.0.1", 0))
        c.port = s.getsockname()[1]
    failed: list[BaseException] = []

    def start() -> None:
        try:
            c.start(120)
        except BaseException as e:
            failed.append(e)

    t0 = time.monotonic()
    starter = threading.Thread(target=start, daemon=True)
    starter.start()
    try:
        figures = asyncio.run(_ready_times(c.kubeconfig, t0, lambda: bool(failed))) if measure else {}
        starter.join(130)
        if failed:
            raise failed[0]
    except BaseException:
        starter.join(130)
        c.stop()
        shutil.rmtree(d, ignore_errors=True)
        raise
    return c, d, figures


async def _ready_times(kubeconfig: str, t0: float, exited: Callable[[], bool]) -> dict[str, float]:
    from pyk8s.client.http1 import ConnectionPool
    from pyk8s.client.kubeconfig import KubeconfigError, load_kubeconfig

    deadline = t0 + 120
    while True:  # the server writes its kubeconfig early in its start
        try:
            kc = load_kubeconfig(kubeconfig)
            break
        except KubeconfigError:
            if exited() or time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.01)
    pool = ConnectionPool(kc.server, kc.ssl_client_context(), {"Accept": "application/json", **kc.auth_headers()}, 1)
    out: dict[str, float] = {}
    try:
        for key, path in (("start_readyz", "/readyz"), ("start_sa", "/api/v1/namespaces/default/serviceaccounts/default")):
            while True:
                try:
                    if (await pool.request("GET", path, None, None, 10))[0] == 200:
                        break
                except (OSError, aiohttp.ClientError, TimeoutError):
                    pass  # not listening yet
                if time.monotonic() > deadline or exited():
                    raise TimeoutError(f"{path} not 200 after {time.monotonic() - t0:.0f} s")
                await asyncio.sleep(0.02)
            out[key] = time.monotonic() - t0
    finally:
        pool.close()
    return out


# -- reporting -------------------------------------------------------------------------------------


def summary(values: list[Any]) -> tuple[float, float, float] | str | None:
    """(median, min, max) of a figure over rounds; a reason when no round measured it."""
    nums = [v for v in values if isinstance(v, (int, float))]
    if nums:
        return statistics.median(nums), min(nums), max(nums)
    reasons = [v for v in values if isinstance(v, str)]
    return reasons[0] if reasons else None


def fmt(v: float) -> str:
    return f"{v:,.0f}" if abs(v) >= 100 else f"{v:.1f}" if abs(v) >= 10 else f"{v:.2f}"


def cell(s: tuple[float, float, float] | str | None, unit: str, ratio: float | None) -> str:
    if s is None:
        return "-"
    if isinstance(s, str):
        return "not measured" if s.startswith("not measured") else "not reached" if s.startswith("not reached") else s
    med, lo, hi = s
    text = f"{fmt(med)} {unit}" + (f" ({fmt(lo)}-{fmt(hi)})" if lo != hi else "")
    return text + (f" x{ratio:.2f}" if ratio is not None else "")


def table(targets: list[Target], sizes: Sizes, scale: float) -> str:
    anchors = scale == 1.0
    started = [t for t in targets if t.started] if anchors else []
    head = ["phase"] + [t.label + (" (started)" if t.started else "") for t in targets]
    if anchors:
        head += ["upstream §7"] + [f"{t.label} / upstream §7" for t in started]
    lines: list[list[str]] = []
    notes: list[str] = []
    for key, what, unit, _lower in ROWS:
        sums = [summary([r.get(key) for r in t.rounds]) for t in targets]
        if all(s is None for s in sums):
            continue
        first = sums[0]
        row = [what.format(pods=f"{sizes.pods:,}", nodes=f"{sizes.nodes:,}")]
        for i, (t, s) in enumerate(zip(targets, sums, strict=True)):
            ratio = None
            if i and isinstance(s, tuple) and isinstance(first, tuple) and first[0]:
                ratio = s[0] / first[0]
            row.append(cell(s, unit, ratio))
            if isinstance(s, str) and not s.startswith("not measured: not started"):
                notes.append(f"{t.label}, {row[0].strip()}: {s}")
        if anchors:
            up = UPSTREAM.get(key)
            row.append("-" if up is None else f"{fmt(up[0])}-{fmt(up[1])} {unit}" if up[0] != up[1] else f"{fmt(up[0])} {unit}")
            for t in started:
                s = summary([r.get(key) for r in t.rounds])
                row.append("-" if up is None or not isinstance(s, tuple) else
                           f"{s[0] / up[1]:.2f}-{s[0] / up[0]:.2f}" if up[0] != up[1] else f"{s[0] / up[0]:.2f}")
        lines.append(row)
    widths = [max(len(r[i]) for r in [head, *lines]) for i in range(len(head))]
    out = ["  " + " | ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)),
           "  " + "-+-".join("-" * w for w in widths)]
    out += ["  " + " | ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in lines]
    if len(targets) > 1:
        out.append(f"  xN: the median's ratio to {targets[0].label}'s (for pods/s higher is better, otherwise lower)")
    if anchors and started:
        out.append("  target / upstream §7: the ratio to the ends of anchors.md §7's upstream range (as §7's own column)")
    elif not anchors:
        out.append(f"  (anchors.md §7's upstream figures are for --scale 1; this run is --scale {scale:g})")
    out += [f"  note: {n}" for n in notes]
    out += [f"  failed: {t.label}, round {i + 1}: {r['error']}" for t in targets for i, r in enumerate(t.rounds)
            if "error" in r]
    return "\n".join(out)


def per_process(targets: list[Target]) -> str:
    out = []
    for t in targets:
        procs = next((r["per_process"] for r in reversed(t.rounds) if r.get("per_process")), None)
        if not procs:
            continue
        out.append(f"  {t.label}: RSS and CPU seconds per control-plane process (last round, CPU since its phases began)")
        for name, d in sorted(procs.items()):
            n = f" x{d['processes']:.0f}" if d["processes"] > 1 else ""
            out.append(f"    {name + n:<40} {d['rss_mib']:8.1f} MiB {d['cpu_s']:8.1f} CPU-s")
    return "\n".join(out)


# -- command line ------------------------------------------------------------------------------------


def parse_args(argv: list[str]) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog="python -m bench.sidebyside", description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--kubeconfig", action="append", default=[], metavar="PATH",
                   help=f"a target cluster (repeat for several; {SELF}: a pyk8s server the bench starts). "
                        f"Default: {SELF} alone")
    p.add_argument("--label", action="append", default=[], help="a name per --kubeconfig, in order")
    p.add_argument("--pids-of", action="append", default=[], metavar="NAME=PID,...",
                   help="the control-plane processes of a foreign target (one per foreign --kubeconfig, in order)")
    p.add_argument("--process-match", action="append", default=[], metavar="REGEX",
                   help="find a foreign target's control-plane processes on this machine by command line "
                        "(one per foreign --kubeconfig, in order)")
    p.add_argument("--rounds", type=int, default=1, help="rounds; the targets take turns in each (default 1)")
    p.add_argument("--phases", default=",".join(PHASES), help=f"comma-separated subset of {','.join(PHASES)}")
    p.add_argument("--scale", type=float, default=1.0, help="pods = 1,000 x scale, nodes = 100 x scale (default 1)")
    p.add_argument("--idle-seconds", type=float, default=None, help="idle CPU window (default 10 x scale, at least 0.5)")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds a phase may wait (default 600)")
    p.add_argument("--kubectl", default=shutil.which("kubectl") or "kubectl", help="the kubectl binary")
    p.add_argument("--pyk8s-args", default="", help=f"extra `pyk8s server` arguments for {SELF}, space-separated")
    p.add_argument("--run-id", default=None,
                   help="the id in the run's names (bench-sbs-<id>); default random, a digit appended per run")
    p.add_argument("--json", default=None, metavar="FILE", help="write every figure to FILE")
    a = p.parse_args(argv)
    a.phases = [x for x in a.phases.split(",") if x]
    bad = [x for x in a.phases if x not in PHASES]
    if bad:
        p.error(f"unknown phases {', '.join(bad)} (known: {', '.join(PHASES)})")
    if a.run_id is not None and not re.fullmatch(r"[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?", a.run_id):
        p.error("--run-id: lower-case letters, digits and '-', at most 32, starting and ending alphanumeric")
    if not 0 < a.scale <= 10 or a.rounds < 1:
        p.error("--scale must be in (0, 10] and --rounds at least 1")
    a.pyk8s_args = a.pyk8s_args.split()  # tests/cluster.py's Cluster adds --disable-agent
    return a


def targets_from(a: argparse.Namespace) -> list[Target]:
    kcs = a.kubeconfig or [SELF]
    if len(a.label) > len(kcs):
        raise SystemExit("more --label than --kubeconfig")
    foreign = [k for k in kcs if k != SELF]
    for what, given in (("--pids-of", a.pids_of), ("--process-match", a.process_match)):
        if len(given) > len(foreign):
            raise SystemExit(f"{what}: more than the {len(foreign)} foreign --kubeconfig")
    out, fi = [], 0
    for i, k in enumerate(kcs):
        label = a.label[i] if i < len(a.label) else ("pyk8s" if k == SELF else os.path.basename(k))
        t = Target(label, k if k == SELF else os.path.abspath(k))
        if k != SELF:
            if not os.path.exists(k):
                raise SystemExit(f"--kubeconfig {k}: no such file")
            if fi < len(a.pids_of):
                t.pids_of = {}
                for part in a.pids_of[fi].split(","):
                    name, _, pid = part.partition("=")
                    if not pid.isdigit():
                        raise SystemExit(f"--pids-of {a.pids_of[fi]!r}: NAME=PID,... expected")
                    t.pids_of[name] = int(pid)
            if fi < len(a.process_match):
                t.process_match = a.process_match[fi]
            fi += 1
        out.append(t)
    return out


# SIGTERM: set, and the running round's task cancelled (its clean-up, a finally, still runs). Not a SIGINT
# sent to ourselves: a SIGINT ignored where we were started (SIG_IGN is inherited) would lose it.
_INTERRUPTED = threading.Event()
_RUNNING: list[Any] = []  # [loop, task] of the round in progress


async def _interruptible(run: Run) -> dict[str, Any]:
    _RUNNING[:] = [asyncio.get_running_loop(), asyncio.current_task()]
    try:
        return await run.execute()
    finally:
        _RUNNING.clear()


def _interrupt(signum: int, frame: Any) -> None:
    _INTERRUPTED.set()
    if not _RUNNING:
        raise KeyboardInterrupt  # starting or stopping a server, or printing: plain Python, stopped here
    loop, task = _RUNNING
    loop.call_soon_threadsafe(task.cancel)


def main(argv: list[str] | None = None) -> int:
    """`python -m bench sidebyside` (the make bench list) calls this with no arguments: the defaults."""
    a = parse_args(argv or [])
    targets = targets_from(a)
    signal.signal(signal.SIGTERM, _interrupt)
    try:
        import uvloop

        uvloop.install()
    except ImportError:  # pragma: no cover
        pass
    sizes = Sizes.scaled(a.scale)
    load_start = os.getloadavg()
    print(f"  side by side: {', '.join(t.label for t in targets)}; {sizes.pods:,} pods, {sizes.nodes:,} nodes, "
          f"{a.rounds} round(s), {os.cpu_count()} cores; load average at start {load_start[0]:.1f} "
          f"{load_start[1]:.1f} {load_start[2]:.1f}", flush=True)
    total = a.rounds * len(targets)
    failed = False
    for rnd in range(a.rounds):
        for i, t in enumerate(targets):
            rid = run_id(a.run_id, rnd * len(targets) + i, total)
            print(f"  round {rnd + 1}, {t.label} (bench-sbs-{rid}):", flush=True)
            try:
                figures = run_target(t, a, rid)
            except Refused as e:
                print(f"sidebyside: {t.label}: {e}", file=sys.stderr)
                return 2
            except KeyboardInterrupt:
                print(f"sidebyside: interrupted during {t.label}'s round {rnd + 1} (what it created is removed)",
                      file=sys.stderr)
                return 130
            figures["load"] = os.getloadavg()[0]
            failed = failed or "error" in figures
            t.rounds.append(figures)
    load_end = os.getloadavg()
    print()
    print(table(targets, sizes, a.scale))
    procs = per_process(targets)
    if procs:
        print(procs)
    print(f"  load average at start {load_start[0]:.1f}, at end {load_end[0]:.1f} ({os.cpu_count()} cores)")
    if a.json:
        doc = {"sizes": {"pods": sizes.pods, "nodes": sizes.nodes}, "scale": a.scale, "phases": a.phases,
               "load_average": {"start": load_start, "end": load_end}, "cores": os.cpu_count(),
               "upstream_anchors": UPSTREAM if a.scale == 1.0 else {},
               "targets": [{"label": t.label, "kubeconfig": t.kubeconfig, "started_by_bench": t.started,
                            "rounds": t.rounds} for t in targets]}
        with open(a.json, "w") as f:
            json.dump(doc, f, indent=2)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
