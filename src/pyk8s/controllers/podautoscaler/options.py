"""kube-controller-manager's --horizontal-pod-autoscaler-* flags, shared by `pyk8s controller-manager`
and `pyk8s server` (which hands them to its controller manager)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["add_flags", "argv_from_args", "from_args"]

# (flag, default, help); durations as Go durations, the tolerance a fraction
_DURATIONS = (
    ("sync-period", "15s", "the period for syncing the number of pods in horizontal pod autoscaler"),
    ("cpu-initialization-period", "5m0s", "the period after pod start when CPU samples might be skipped"),
    ("initial-readiness-delay", "30s", "the period after pod start during which readiness changes are treated "
     "as initial readiness"),
    ("downscale-stabilization", "5m0s", "the period for which autoscaler will look backwards and not scale "
     "down below any recommendation it made during that period"),
)


def _duration(text: str) -> float:
    from ...api.protobuf import parse_go_duration

    try:
        seconds = parse_go_duration(text) / 1e9
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if seconds < 0:
        raise argparse.ArgumentTypeError(f"duration must not be negative: {text!r}")
    return seconds


def _tolerance(text: str) -> float:
    try:
        v = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid tolerance {text!r}") from None
    if not 0 <= v < 1:
        raise argparse.ArgumentTypeError(f"tolerance must be in [0, 1): {text!r}")
    return v


def _period(text: str) -> float:
    seconds = _duration(text)
    if seconds <= 0:
        raise argparse.ArgumentTypeError(f"duration must be positive: {text!r}")
    return seconds


def add_flags(p: argparse.ArgumentParser) -> None:
    for name, default, text in _DURATIONS:
        kind = _period if name == "sync-period" else _duration
        p.add_argument(f"--horizontal-pod-autoscaler-{name}", type=kind, default=kind(default),
                       metavar="DURATION", help=f"{text} (default {default})")
    p.add_argument("--horizontal-pod-autoscaler-tolerance", type=_tolerance, default=0.1, metavar="FLOAT",
                   help="the minimum change (from 1.0) in the desired-to-actual metrics ratio for the horizontal "
                        "pod autoscaler to consider scaling (default 0.1)")


def from_args(args: Any) -> dict[str, float]:
    """The controller manager's options (keys as the flags, underscored)."""
    keys = [f"horizontal_pod_autoscaler_{n.replace('-', '_')}" for n, _, _ in _DURATIONS]
    keys.append("horizontal_pod_autoscaler_tolerance")
    return {k: getattr(args, k) for k in keys if getattr(args, k, None) is not None}


def argv_from_args(args: Any) -> tuple[str, ...]:
    """The same settings as flags for a `pyk8s controller-manager` child."""
    out: list[str] = []
    for k, v in from_args(args).items():
        out += [f"--{k.replace('_', '-')}", f"{v}s" if not k.endswith("tolerance") else str(v)]
    return tuple(out)
