"""Total accessors for decoded JSON: a validator must report bad input, never crash on it.

Strict decoding normally rejects mistyped fields before validation; these keep the
validators safe when they are called directly (controllers, tests) on odd input.
"""

from __future__ import annotations

from typing import Any

__all__ = ["as_dict", "as_list", "as_str", "as_int", "is_int"]


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def as_str(v: Any) -> str:
    """A string field's value ("" when unset)."""
    return v if isinstance(v, str) else ("" if v is None else str(v))


def is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def as_int(v: Any) -> int:
    """An integer field's value, 0 when it is not an integer."""
    return v if is_int(v) else 0
