"""NodeResourcesBalancedAllocation: prefers nodes whose requested fractions of cpu and memory (or
the configured resources) stay close to each other. Best-effort pods are skipped (v1.33)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from ..cache import NodeTable
from ..framework import Code, CycleState, Plugin, Status
from ..podinfo import PodInfo
from . import resource_allocation as ra


class NodeResourcesBalancedAllocation(Plugin):
    name = "NodeResourcesBalancedAllocation"

    def __init__(self, args: Mapping[str, Any], handle: Any) -> None:
        super().__init__(args, handle)
        self.resources = ra.parse_resource_specs((args or {}).get("resources"))

    def pre_score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> Status | None:
        if not any(ra.pod_request_list(pod, self.resources, use_requested=True)):
            return Status(Code.SKIP)  # upstream #129138: best-effort pods would all pile up on one node
        return None

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        if self.resources == ra.DEFAULT_RESOURCES:
            both = ra.cpu_memory(table, rows, pod, use_requested=True)
            if both is not None:  # the default cpu+memory pair, as ra.balanced computes it
                f = np.minimum(both[1] / both[0], 1.0)
                return ((1 - np.abs((f[0] - f[1]) / 2)) * 100).astype(np.int64)  # type: ignore[no-any-return]
        allocs, reqs = ra.gather(table, rows, pod, self.resources, use_requested=True)
        return ra.balanced(allocs, reqs)
