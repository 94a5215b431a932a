"""A bounded memo for pure checks of short strings that repeat across requests
(image names, quantities, ...): a plain dict, emptied when full, so memory stays bounded."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import TypeVar

__all__ = ["memo_str"]

T = TypeVar("T")


def memo_str(maxsize: int = 4096, key_max: int = 256) -> Callable[[Callable[[str], T]], Callable[[str], T]]:
    """Memoise fn(s); strings longer than key_max are computed afresh rather than kept."""

    def wrap(fn: Callable[[str], T]) -> Callable[[str], T]:
        memo: dict[str, T] = {}

        @functools.wraps(fn)
        def cached(s: str) -> T:
            try:
                return memo[s]
            except KeyError:
                pass
            out = fn(s)
            if len(s) <= key_max:
                if len(memo) >= maxsize:
                    memo.clear()
                memo[s] = out
            return out

        return cached

    return wrap
