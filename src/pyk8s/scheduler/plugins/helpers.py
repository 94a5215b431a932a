"""Arithmetic helpers shared by score plugins, with Go's integer and rounding semantics."""

from __future__ import annotations

from typing import Any

import numpy as np

from ..framework import MAX_NODE_SCORE

__all__ = ["default_normalize_score", "go_div", "go_round", "memo_get", "memo_put"]


def go_div(a: np.ndarray, b: np.ndarray | int) -> np.ndarray:
    """int64 division truncating toward zero, as Go's '/' (numpy's // floors)."""
    q = np.abs(a) // np.abs(b)
    return np.where((np.sign(a) * np.sign(b)) < 0, -q, q)


def go_round(x: np.ndarray) -> np.ndarray:
    """math.Round: half away from zero."""
    r = np.floor(np.abs(x))
    r = r + ((np.abs(x) - r) >= 0.5)
    return np.where(x < 0, -r, r).astype(np.int64)


def default_normalize_score(scores: np.ndarray, reverse: bool, max_priority: int = MAX_NODE_SCORE) -> np.ndarray:
    """Upstream helper.DefaultNormalizeScore: scale to [0, max] by the highest score, optionally reversed."""
    max_count = int(scores.max()) if scores.size else 0
    max_count = max(max_count, 0)
    if max_count == 0:
        if reverse:
            return np.full(scores.shape, max_priority, dtype=np.int64)
        return scores
    out = go_div(max_priority * scores, max_count)
    return max_priority - out if reverse else out


def memo_get(memo: dict[Any, Any], key: str, stamp: tuple[Any, ...]) -> Any:
    """A per-template memo entry if it was computed for the same table state ``stamp``."""
    hit = memo.get(key)
    if hit is not None and hit[0] == stamp:
        return hit[1]
    return None


def memo_put(memo: dict[Any, Any], key: str, stamp: tuple[Any, ...], value: Any) -> Any:
    memo[key] = (stamp, value)
    return value
