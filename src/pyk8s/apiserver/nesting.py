"""How deeply an object may nest: refused past MAX_DEPTH with the error Go's JSON scanner gives.

Upstream's decoder refuses JSON nested more than 10,000 containers deep ("invalid character
'{' exceeded max nesting depth"). Ours stops lower: orjson, which encodes every object we
store, answer and stream, refuses to encode more than 254 levels, and a watch event or a
Table wraps an object in a few more. Past that an object could be accepted, fail to encode
and break every watch of its resource, so both the decoded request and the object about to
be stored are held to MAX_DEPTH, with upstream's message (the limit differs; docs/bad-input.md).

Cheap on the hot path: an object cannot nest deeper than it has brackets, so only bodies
with more than MAX_DEPTH of them are measured, by encoding the object under padding.
"""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["MAX_DEPTH", "too_deep", "exceeds", "deep_char"]

MAX_DEPTH = 200  # nested objects and arrays, the outermost counted
_ORJSON_MAX = 254  # the deepest orjson encodes
_PADDING = _ORJSON_MAX - MAX_DEPTH


def exceeds(obj: Any, data: bytes | None) -> bool:
    """Whether obj (decoded from, or encoded as, the JSON `data`; None for other sources: YAML
    nests without brackets) nests deeper than MAX_DEPTH."""
    if data is not None and data.count(b"{") + data.count(b"[") <= MAX_DEPTH:
        return False
    wrapped = obj
    for _ in range(_PADDING):
        wrapped = [wrapped]
    try:
        orjson.dumps(wrapped, default=str)
    except orjson.JSONEncodeError as e:
        return "Recursion limit" in str(e)
    return False


def deep_char(obj: Any) -> str:
    """The opening bracket of the first container past MAX_DEPTH ("{" or "["), as Go's error names it."""
    stack: list[tuple[Any, int]] = [(obj, 1)]
    while stack:
        node, depth = stack.pop()
        if depth > MAX_DEPTH:
            return "{" if isinstance(node, dict) else "["
        if isinstance(node, dict):
            stack.extend((v, depth + 1) for v in node.values() if isinstance(v, (dict, list)))
        elif isinstance(node, list):
            stack.extend((v, depth + 1) for v in node if isinstance(v, (dict, list)))
    return "{"


def too_deep(char: str) -> str:
    """Go's scanner error for a container opened past the nesting limit."""
    return f"invalid character '{char}' exceeded max nesting depth"
