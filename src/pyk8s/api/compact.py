"""Smaller cached objects (watch cache, informers): equal strings and managedFields' empty sets shared.

The watch cache holds every object as dicts, several times its JSON (a pod of 3.6 KB of JSON
took 24.5 KB). orjson already shares dict keys; the values repeat across objects too
(namespaces, node names, images, "True", condition types, timestamps of one second), and the
`{}` leaves of managedFields' fieldsV1 are a third of a pod's dicts. compact() rewrites an
object in place with equal values, so every holder sees the same content: strings are interned,
and each empty dict under a fieldsV1 becomes one shared empty dict (field sets are only ever
read: apply decodes them into its own sets). On a replayed 200-node, 1,000-pod run
(bench/cache_memory.py) a current pod went from 24.5 KB to ~15.7 KB, a node from 13.1 KB to
~7.7 KB. The watch cache compacts an object once, when it is still current FRESH_SECONDS
after its write (and on load), so a burst of writes to one object costs one pass; informers
created with compact=True (the scheduler's, the controller-manager's) do the same.
"""

from __future__ import annotations

import sys
from collections.abc import Iterable
from typing import Any

__all__ = ["compact"]

# Longer strings rarely repeat (messages, certificates, JSON in annotations): not worth a lookup.
MAX_INTERNED = 64

_EMPTY: dict[str, Any] = {}
_intern = sys.intern


def compact(obj: dict[str, Any]) -> None:
    """Rewrite obj in place with shared equal values (see the module docstring)."""
    _dict(obj)
    md = obj.get("metadata")
    if type(md) is dict:
        mf = md.get("managedFields")
        if type(mf) is list:
            for entry in mf:
                if type(entry) is dict:
                    fv = entry.get("fieldsV1")
                    if type(fv) is dict:
                        _fields(fv)


def _dict(d: dict[str, Any]) -> None:
    _walk(d, d.items())


def _walk(container: Any, pairs: Iterable[tuple[Any, Any]]) -> None:
    """Intern the short strings among container's values (pairs: its keys or indexes and values)."""
    for k, v in pairs:
        t = type(v)
        if t is str:
            if len(v) <= MAX_INTERNED:
                container[k] = _intern(v)
        elif t is dict:
            _walk(v, v.items())
        elif t is list:
            _walk(v, enumerate(v))


def _fields(fv: dict[str, Any]) -> None:
    for k, v in fv.items():
        if type(v) is dict:
            if v:
                _fields(v)
            else:
                fv[k] = _EMPTY
