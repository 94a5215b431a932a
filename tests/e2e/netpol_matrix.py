"""Reachability matrices for the NetworkPolicy tests, in the shape of upstream's e2e netpol suite.

Upstream (test/e2e/network/netpol) runs pods a, b, c in namespaces x, y, z, probes every
ordered pair on a port and compares the result with an expected `Reachability` table, printing
both tables and the mismatches ("." reached, "X" blocked) when they differ. Ours does the same;
`probe_all` is given by the rig (network namespaces, or real pods).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

NAMESPACES = ("x", "y", "z")
PODS = ("a", "b", "c")
Peer = str  # "x/a"
ALL: tuple[Peer, ...] = tuple(f"{n}/{p}" for n in NAMESPACES for p in PODS)

Matrix = dict[tuple[Peer, Peer], bool]
Probe = tuple[Peer, Peer, int, str]  # from, to, port, protocol


def expect(allowed: Callable[[Peer, Peer], bool], peers: Iterable[Peer] = ALL) -> Matrix:
    """A pod reaching its own IP never leaves it (loopback): allowed, as upstream's AllowLoopback."""
    ps = list(peers)
    return {(a, b): a == b or allowed(a, b) for a in ps for b in ps}


def table(m: Matrix, peers: Iterable[Peer] = ALL, marks: Callable[[bool], str] = lambda ok: "." if ok else "X") -> str:
    ps = list(peers)
    lines = ["        " + " ".join(f"{p:>4}" for p in ps)]
    for a in ps:
        lines.append(f"{a:>6}  " + " ".join(f"{marks(m[(a, b)]):>4}" for b in ps))
    return "\n".join(lines)


def report(port: int, proto: str, want: Matrix, got: Matrix) -> str:
    wrong = sum(want[k] != got[k] for k in want)
    diff = {k: want[k] == got[k] for k in want}
    return (f"reachability {proto}/{port}: {wrong} of {len(want)} pairs wrong (rows: from, columns: to)\n"
            f"expected:\n{table(want)}\nobserved:\n{table(got)}\n"
            f"mismatches (X):\n{table(diff, marks=lambda same: '.' if same else 'X')}")


def converge(probe_all: Callable[[list[Probe]], dict[Probe, bool]], port: int, proto: str, want: Matrix,
             timeout: float = 20.0) -> None:
    """Probe until the matrix equals `want` (policies take a moment to reach the node), or fail with it."""
    probes = [(a, b, port, proto) for (a, b) in want]
    deadline = time.monotonic() + timeout
    while True:
        res = probe_all(probes)
        got = {(a, b): res[(a, b, port, proto)] for (a, b) in want}
        if got == want:
            return
        if time.monotonic() > deadline:
            raise AssertionError(report(port, proto, want, got))
