"""Bounded memos for pure checks of values that repeat across requests: short strings (image
names, quantities, ...) and whole subtrees known to be valid (the projected service-account
token volume every pod gets). Plain tables, emptied when full, so memory stays bounded."""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, TypeVar

import orjson

__all__ = ["memo_str", "content_key", "KnownValid"]

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


# Serialisation options under which two different decoded values never share bytes: datetimes,
# subclasses and dataclasses raise instead of being rendered like a plain string or dict.
_EXACT = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_SUBCLASS | orjson.OPT_PASSTHROUGH_DATACLASS


def content_key(v: Any, max_len: int = 4096) -> bytes | None:
    """v's JSON bytes as a memo key, or None when it cannot serve as one: too long, not plain
    JSON data, or holding a null (orjson also writes NaN and infinities as null)."""
    try:
        k = orjson.dumps(v, option=_EXACT)
    except TypeError:  # orjson.JSONEncodeError is one
        return None
    if len(k) > max_len or b"null" in k:
        return None
    return k


class KnownValid:
    """Content keys of values a pure check found no error in; bounded, emptied when full."""

    __slots__ = ("_keys", "_max")

    def __init__(self, maxsize: int = 1024) -> None:
        self._keys: set[bytes] = set()
        self._max = maxsize

    def __contains__(self, key: bytes) -> bool:
        return key in self._keys

    def add(self, key: bytes) -> None:
        if len(self._keys) >= self._max:
            self._keys.clear()
        self._keys.add(key)
