"""Small helpers for defaulting wire-form dicts."""

from __future__ import annotations

from typing import Any

__all__ = ["obj_dict", "spec_dict", "semantic_equal"]


def obj_dict(parent: dict[str, Any], key: str) -> dict[str, Any]:
    """parent[key] as a dict, created when missing (what defaulting a pointer-to-struct does)."""
    v = parent.get(key)
    if not isinstance(v, dict):
        v = {}
        parent[key] = v
    return v


def spec_dict(obj: dict[str, Any]) -> dict[str, Any]:
    return obj_dict(obj, "spec")


def _normalized(v: Any) -> Any:
    if isinstance(v, dict):
        out = {k: _normalized(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not None and x != {} and x != []}
    if isinstance(v, list):
        return [_normalized(x) for x in v]
    return v


def semantic_equal(a: Any, b: Any) -> bool:
    """Semantic.DeepEqual on wire dicts: absent, null and empty collections are alike."""
    return _normalized(a) == _normalized(b)
