"""Upstream's texts for bodies the server cannot turn into the object a request needs.

- (A create/update body whose kind cannot be read is worded in codec.unrecognized.)
- A strategic merge patch whose result holds a value of the wrong shape (a string where a
  map is) is a 422, as upstream's `applyPatchToObject` reports what its unstructured
  converter said: ` "" is invalid: patch: Invalid value: "map[...]": cannot restore map
  from string`, the patch printed as Go's `%+v` prints a map.
"""

from __future__ import annotations

import re
from typing import Any

from ..api import errors as E
from ..api.schema._gocompat import go_float

__all__ = ["strategic_patch_invalid", "go_sprint"]

# what strict.py reports for a value of the wrong JSON type (Go's json decoder's words)
_TYPE_ERR = re.compile(r"json: cannot unmarshal (\w+) into Go (?:struct field \S+|value) of type (\S+)")


def go_sprint(v: Any) -> str:
    """A decoded JSON value as Go's fmt `%+v` prints it (maps with sorted keys, strings bare)."""
    if isinstance(v, dict):
        return "map[" + " ".join(f"{k}:{go_sprint(v[k])}" for k in sorted(v)) + "]"
    if isinstance(v, list):
        return "[" + " ".join(go_sprint(x) for x in v) + "]"
    if v is None:
        return "<nil>"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, float):
        return go_float(v)
    return str(v)


def _go_kind(desc: str) -> str:
    """The reflect.Kind of what a JSON value of this kind decodes to in an unstructured map."""
    return {"object": "map", "array": "slice", "number": "int64"}.get(desc, desc)


def strategic_patch_invalid(type_error: str, patch: Any) -> E.StatusError | None:
    """The 422 upstream gives when the patched map cannot be converted into the typed object,
    for the shapes its converter names (a map or a list given another kind of value); None
    where the converter's words are not known here (the caller keeps its decode error)."""
    m = _TYPE_ERR.search(type_error)
    if m is None:
        return None
    desc, gotype = m.groups()
    if gotype.startswith("map["):
        detail = f"cannot restore map from {_go_kind(desc)}"
    elif gotype.startswith("[]") and not (gotype == "[]byte" and desc == "string"):
        detail = f"cannot restore slice from {_go_kind(desc)}"
    else:
        return None
    return E.new_invalid("", "", [E.FieldError("patch", "Invalid", go_sprint(patch), detail)])
