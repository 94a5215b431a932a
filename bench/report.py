"""Printing figures next to their anchors."""

from __future__ import annotations

import os
from typing import Any


def row(what: str, value: float, unit: str, anchor: float | None = None, anchor_what: str = "",
        higher_is_better: bool = True) -> None:
    if anchor:
        ratio = value / anchor if higher_is_better else anchor / value if value else float("inf")
        print(f"  {what:<44} {value:>12,.1f} {unit:<8} anchor {anchor:>12,.1f} ({anchor_what})  ratio {ratio:5.2f}x")
    else:
        print(f"  {what:<44} {value:>12,.1f} {unit}")


def percentile(values: list[float], p: float) -> float:
    if not values:
        return float("nan")
    s = sorted(values)
    k = min(len(s) - 1, max(0, int(round(p / 100.0 * (len(s) - 1)))))
    return s[k]


def api_worker_pids(server_pid: int) -> list[int]:
    """The server's --api-workers processes (its children started with --api-worker), from /proc."""
    return _children(server_pid, lambda argv: b"--api-worker" in argv)


def scheduler_pids(server_pid: int) -> list[int]:
    """The scheduler process `pyk8s server` starts (unless --in-process-scheduler), from /proc."""
    return _children(server_pid, lambda argv: b"scheduler" in argv and b"--kubeconfig" in argv)


def controller_manager_pids(server_pid: int) -> list[int]:
    """The controller-manager process `pyk8s server --controller-manager-process` starts, from /proc."""
    return _children(server_pid, lambda argv: b"controller-manager" in argv and b"--kubeconfig" in argv)


def _children(server_pid: int, match: Any) -> list[int]:
    out = []
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
                if ppid != server_pid:
                    continue
                with open(f"/proc/{d}/cmdline", "rb") as f:
                    argv = f.read().split(b"\0")
            except (OSError, ValueError, IndexError):
                continue
            if match(argv):
                out.append(int(d))
    return sorted(out)


async def warm_up(pool: Any, n: int) -> None:
    """Open n connections of a client pool (client/http1.py) before a measured phase: n reads at once."""
    import asyncio

    await asyncio.gather(*(pool.request("GET", "/version", None, None, 60) for _ in range(n)))


def process_tree(pid: int) -> list[int]:
    """pid and all its descendants (a `pyk8s server` and the processes it started), from /proc."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        todo.extend(_children(p, lambda argv: True))
    return sorted(out)


def processes_matching(pattern: str, exclude: set[int] | None = None) -> list[int]:
    """Processes on this machine whose command line (arguments joined by spaces) matches the regex
    `pattern`: a foreign control plane's kube-apiserver, etcd, ... (a kind node's processes are
    visible here too). Processes in `exclude` are left out (the bench itself and its kubectl)."""
    import re

    rx = re.compile(pattern)
    out = []
    for d in os.listdir("/proc"):
        if not d.isdigit() or (exclude and int(d) in exclude):
            continue
        try:
            with open(f"/proc/{d}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace").strip()
        except OSError:
            continue
        if cmd and rx.search(cmd):
            out.append(int(d))
    return sorted(out)


def rss_kib(pid: int) -> int | None:
    """VmRSS of a process in KiB (None once it is gone)."""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next((int(line.split()[1]) for line in f if line.startswith("VmRSS")), 0)
    except (OSError, ValueError, IndexError):
        return None


def process_name(pid: int) -> str:
    """A short name: the program, and for `pyk8s` its subcommand (server, scheduler, ...)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            argv = [a.decode(errors="replace") for a in f.read().split(b"\0") if a]
    except OSError:
        return str(pid)
    if not argv:
        return str(pid)
    if "pyk8s.cli" in argv[:-1]:  # python -m pyk8s.cli <command> ..., as the server starts its parts
        sub = argv[argv.index("pyk8s.cli") + 1]
        return f"pyk8s {sub}" + (" (api worker)" if "--api-worker" in argv else "")
    return os.path.basename(argv[0])
