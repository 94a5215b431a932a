"""Duplicate JSON object keys, which upstream's strict decoder reports (sigs.k8s.io/json).

orjson, like Go's plain decoder, keeps the last of a repeated key silently. Upstream's strict
decoding names each one: `duplicate field "data.a"` (a 400 under fieldValidation=Strict,
a warning under Warn). Finding them takes a second parse, which the hot path avoids: a
compact body (kubectl's and client-go's) re-encodes to the same length unless a key was
dropped (orjson writes what it read no longer than it was; only a number in exponent form
can grow), so only bodies whose re-encoding differs in length are parsed again.
"""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["duplicate_fields"]


class _Dups(dict):  # type: ignore[type-arg]
    """An object that repeated keys: the keys, in order."""

    dups: list[str]


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) == len(pairs):
        return d
    out = _Dups(d)
    seen: set[str] = set()
    out.dups = []
    for k, _ in pairs:
        if k in seen and k not in out.dups:
            out.dups.append(k)
        seen.add(k)
    return out


_DECODER = json.JSONDecoder(object_pairs_hook=_pairs)


def duplicate_fields(body: bytes, obj: Any) -> list[str]:
    """Paths of the repeated keys of a JSON body (decoded as obj by orjson), in document order."""
    if len(orjson.dumps(obj)) == len(body):
        return []
    try:
        tree = _DECODER.decode(body.decode("utf-8"))
    except (ValueError, RecursionError):
        return []  # orjson read it; what it kept stands
    out: list[str] = []
    _walk(tree, "", out)
    return out


def _walk(v: Any, path: str, out: list[str]) -> None:
    stack: list[tuple[Any, str]] = [(v, path)]
    while stack:
        node, p = stack.pop()
        if isinstance(node, dict):
            if isinstance(node, _Dups):
                out.extend(f"{p}.{k}" if p else k for k in node.dups)
            stack.extend((child, f"{p}.{k}" if p else k) for k, child in reversed(node.items()))
        elif isinstance(node, list):
            stack.extend((child, f"{p}[{i}]") for i, child in reversed(list(enumerate(node))))
