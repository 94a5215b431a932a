"""Flags of the built-in metrics server (docs/metrics-server.md)."""

from __future__ import annotations

import argparse
import re
from typing import Any

__all__ = ["add_server_flags", "parse_duration"]

_UNITS = {"ns": 1e-9, "us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0, "m": 60.0, "h": 3600.0}


def parse_duration(s: str) -> float:
    """A Go duration ("15s", "1m30s", "500ms") in seconds; argparse's error otherwise."""
    parts = re.findall(r"(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)", s)
    if not s or "".join(n + u for n, u in parts) != s:
        raise argparse.ArgumentTypeError(f'time: invalid duration "{s}"')
    seconds = sum(float(n) * _UNITS[u] for n, u in parts)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f'metric resolution should be a positive duration, got "{s}"')
    return seconds


def add_server_flags(p: Any) -> None:
    p.add_argument("--metric-resolution", type=parse_duration, default=15.0, metavar="DURATION",
                   help="how often the built-in metrics server scrapes every kubelet's /metrics/resource, as "
                        "metrics-server's flag (default 15s)")
