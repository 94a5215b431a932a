"""The FailedScheduling message, exactly as upstream FitError.Error() (v1.33) writes it.

    0/4 nodes are available: 1 node(s) had untolerated taint {node-role.kubernetes.io/master: },
    3 Insufficient cpu. preemption: 0/4 nodes are available: 1 Preemption is not helpful for
    scheduling, 3 No preemption victims found for incoming pod.

Each reason of each node's status is counted; absent nodes count with the absent status;
the "<count> <reason>" strings are sorted as Go's sort.Strings (byte order, so "10 x" sorts
before "2 x"); the PostFilter (preemption) message is appended after a space.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .framework import Diagnosis

__all__ = ["NO_NODE_AVAILABLE_MSG", "fit_error_message", "truncate_message", "NOTE_LENGTH_LIMIT"]

NO_NODE_AVAILABLE_MSG = "0/{} nodes are available"
NOTE_LENGTH_LIMIT = 1024  # core validation NoteLengthLimit for event notes


def _go_sorted(items: list[str]) -> list[str]:
    return sorted(items, key=lambda s: s.encode())


def fit_error_message(num_all_nodes: int, diagnosis: Diagnosis) -> str:
    msg = NO_NODE_AVAILABLE_MSG.format(num_all_nodes) + ":"
    if diagnosis.pre_filter_msg:
        # PreFilter rejected the pod: every node carries that same status, so it is said once.
        msg += f" {diagnosis.pre_filter_msg}."
    else:
        hist = diagnosis.reasons_histogram()
        parts = _go_sorted([f"{count} {reason}" for reason, count in hist.items()])
        if parts:
            msg += f" {', '.join(parts)}."
    if diagnosis.post_filter_msg:
        msg += f" {diagnosis.post_filter_msg}"
    return msg


def truncate_message(message: str, limit: int = NOTE_LENGTH_LIMIT) -> str:
    """As upstream truncateMessage for event notes."""
    if len(message) <= limit:
        return message
    suffix = " ..."
    return message[: limit - len(suffix)] + suffix
