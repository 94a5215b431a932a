"""ImageLocality: prefers nodes that already have the pod's images, weighted by image size and by
how widely the image is spread (to avoid piling pods on the few nodes that have it)."""

from __future__ import annotations

import numpy as np

from ..cache import NodeTable
from ..framework import CycleState, Plugin
from ..podinfo import PodInfo
from .helpers import memo_get, memo_put

MB = 1024 * 1024
MIN_THRESHOLD = 23 * MB
MAX_CONTAINER_THRESHOLD = 1000 * MB


def calculate_priority(sum_scores: np.ndarray, num_containers: int) -> np.ndarray:
    max_threshold = MAX_CONTAINER_THRESHOLD * num_containers
    s = np.clip(sum_scores, MIN_THRESHOLD, max(max_threshold, MIN_THRESHOLD))
    den = max_threshold - MIN_THRESHOLD
    if den <= 0:
        return np.zeros(sum_scores.shape, dtype=np.int64)
    return 100 * (s - MIN_THRESHOLD) // den


class ImageLocality(Plugin):
    name = "ImageLocality"

    def score(self, state: CycleState, pod: PodInfo, table: NodeTable, rows: np.ndarray) -> np.ndarray:
        stamp = (table.serial, table.label_gen, table.image_gen)
        full = memo_get(pod.tmpl.memo, "ImageLocality", stamp)
        if full is None:
            sums = np.zeros(table.n, dtype=np.int64)
            total = table.n
            for image in pod.tmpl.images:
                st = table.image_nodes.get(image)
                if st is None:
                    continue
                size, nodes = st
                scaled = int(float(size) * (float(len(nodes)) / float(total)))
                idx = [table.index[x] for x in nodes if x in table.index]
                sums[idx] += scaled
            full = memo_put(pod.tmpl.memo, "ImageLocality", stamp, calculate_priority(sums, len(pod.tmpl.images)))
        return full[rows]  # type: ignore[no-any-return]
