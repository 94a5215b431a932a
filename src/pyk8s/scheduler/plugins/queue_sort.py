"""PrioritySort: higher .spec.priority first, then the earlier queue timestamp (QueueSort)."""

from __future__ import annotations

from typing import Any

from ..framework import Plugin


class PrioritySort(Plugin):
    name = "PrioritySort"

    @staticmethod
    def sort_key(qpi: Any) -> tuple[int, float]:
        return (-qpi.pod_info.priority, qpi.timestamp)
