"""RFC 7386 JSON Merge Patch (application/merge-patch+json), as kube-apiserver applies it.

The apiserver uses evanphx/json-patch's MergePatch; this follows it where it is more
specific than the RFC: nulls inside objects newly added by the patch are pruned (also in
objects nested inside arrays), while nulls that are array elements are kept; a member whose
current value is null is treated as absent. A patch that is `null` or a scalar is 400
"Invalid JSON Patch"; a patch that is an array replaces the whole document (and the
caller's decoding then rejects it, as upstream does).

Also the patch creators kubectl uses: `create_merge_patch` (two-way) and
`create_three_way_json_merge_patch` (what `kubectl apply` sends for kinds it has no
strategic schema for, i.e. custom resources).
"""

from __future__ import annotations

import json
from typing import Any

from ._common import bad_request, deepcopy_json

__all__ = [
    "apply_merge_patch",
    "create_merge_patch",
    "create_three_way_json_merge_patch",
    "MergePatchConflictError",
    "PreconditionFailedError",
]

INVALID_JSON_PATCH = "Invalid JSON Patch"


def _prune_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _prune_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        # Nulls that are array elements stay; objects inside arrays are pruned.
        return [_prune_nulls(x) if x is not None else None for x in v]
    return v


def _merge_value(cur: Any, patch: Any) -> Any:
    if not isinstance(cur, dict):
        return _prune_nulls(patch)
    if not isinstance(patch, dict):
        return deepcopy_json(patch)  # not pruned: the library returns it untouched
    _merge_docs(cur, patch)
    return cur


def _merge_docs(doc: dict[str, Any], patch: dict[str, Any]) -> None:
    for k, v in patch.items():
        if v is None:
            doc.pop(k, None)
            continue
        cur = doc.get(k)
        if cur is None:
            doc[k] = _prune_nulls(v)
        else:
            doc[k] = _merge_value(cur, v)


def apply_merge_patch(obj: Any, patch: Any, *, in_place: bool = False) -> Any:
    """Apply a JSON merge patch to `obj` and return the result (inputs untouched).

    `patch` is decoded JSON or its text. Raises 400 "Invalid JSON Patch" for a patch that
    is not an object or an array. `in_place`: `obj` is the caller's own copy, to merge into
    rather than copy again (the API server's patch path; the patch is still never aliased)."""
    if isinstance(patch, (bytes, bytearray, str)):
        try:
            patch = json.loads(patch)
        except ValueError:
            raise bad_request(INVALID_JSON_PATCH) from None
    if isinstance(patch, list):
        return _prune_nulls(patch)
    if not isinstance(patch, dict):
        raise bad_request(INVALID_JSON_PATCH)
    if not isinstance(obj, dict):
        return _prune_nulls(patch)
    doc = obj if in_place else deepcopy_json(obj)
    _merge_docs(doc, patch)
    return doc


# ---------------------------------------------------------------------------------------------
# Patch creation (client side, as kubectl does it)


def _same_json_type(a: Any, b: Any) -> bool:
    # Go decodes every JSON number as float64, so ints and floats are one type here.
    def t(v: Any) -> str:
        if v is None:
            return "null"
        if isinstance(v, bool):
            return "bool"
        if isinstance(v, (int, float)):
            return "number"
        if isinstance(v, str):
            return "string"
        if isinstance(v, dict):
            return "object"
        return "array"

    return t(a) == t(b)


def _get_diff(a: dict[str, Any], b: dict[str, Any]) -> dict[str, Any]:
    into: dict[str, Any] = {}
    for key, bv in b.items():
        if key not in a:
            into[key] = deepcopy_json(bv)
            continue
        av = a[key]
        if not _same_json_type(av, bv):
            into[key] = deepcopy_json(bv)
            continue
        if isinstance(av, dict):
            sub = _get_diff(av, bv)
            if sub:
                into[key] = sub
        elif av != bv or (isinstance(av, list) and not _deep_equal(av, bv)):
            into[key] = deepcopy_json(bv)
    for key in a:
        if key not in b:
            into[key] = None
    return into


def _deep_equal(a: Any, b: Any) -> bool:
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_deep_equal(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_deep_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    return a == b


def create_merge_patch(original: Any, modified: Any) -> Any:
    """A JSON merge patch that turns `original` into `modified` (evanphx CreateMergePatch)."""
    if isinstance(original, list) and isinstance(modified, list):
        if len(original) != len(modified):
            raise ValueError("Invalid JSON Document")
        return [create_merge_patch(o, m) for o, m in zip(original, modified, strict=True)]
    if isinstance(original, list) or isinstance(modified, list):
        raise ValueError("Mismatched JSON Documents")
    if not isinstance(original, dict) or not isinstance(modified, dict):
        raise ValueError("Invalid JSON Document")
    return _get_diff(original, modified)


class MergePatchConflictError(ValueError):
    """kubectl's mergepatch.ErrConflict."""


class PreconditionFailedError(ValueError):
    """kubectl's mergepatch.ErrPreconditionFailed (e.g. apiVersion, kind or name changed)."""


def _keep_or_delete_null(m: dict[str, Any], keep_null: bool) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, val in m.items():
        if val is None:
            if keep_null:
                out[key] = None
            continue
        if isinstance(val, dict):
            if not val:
                # An explicitly set empty map is a value, not an empty patch.
                if not keep_null:
                    out[key] = val
                continue
            sub = _keep_or_delete_null(val, keep_null)
            if sub:
                out[key] = sub
        elif not keep_null:
            out[key] = val
    return out


def _has_conflicts(left: Any, right: Any) -> bool:
    if isinstance(left, dict):
        if not isinstance(right, dict):
            return True
        for k, lv in left.items():
            if k in right and _has_conflicts(lv, right[k]):
                return True
        return False
    if isinstance(left, list):
        if not isinstance(right, list) or len(left) != len(right):
            return True
        return any(_has_conflicts(x, y) for x, y in zip(left, right, strict=True))
    return not _deep_equal(left, right)


def create_three_way_json_merge_patch(original: dict[str, Any] | None, modified: dict[str, Any] | None,
                                      current: dict[str, Any] | None,
                                      check_preconditions: bool = True) -> dict[str, Any]:
    """The patch `kubectl apply` sends (as application/merge-patch+json) for kinds without a
    strategic-merge schema: additions and changes from current to modified, plus deletions
    of what was in the last-applied `original` and is gone from `modified`."""
    original = original or {}
    modified = modified or {}
    current = current or {}
    add_and_change = _keep_or_delete_null(create_merge_patch(current, modified), keep_null=False)
    deletions = _keep_or_delete_null(create_merge_patch(original, modified), keep_null=True)
    if _has_conflicts(add_and_change, deletions):
        raise MergePatchConflictError(f"patch {add_and_change} conflicts with changes made from original to current")
    patch = apply_merge_patch(deletions, add_and_change) if add_and_change else deletions
    if check_preconditions:
        for key in ("apiVersion", "kind"):
            if key in patch:
                raise PreconditionFailedError(f"precondition failed for: {patch}")
        md = patch.get("metadata")
        if isinstance(md, dict) and "name" in md:
            raise PreconditionFailedError(f"precondition failed for: {patch}")
    return patch
