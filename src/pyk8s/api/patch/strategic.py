"""Strategic merge patch (application/strategic-merge-patch+json), schema-driven.

The patch metadata (patchStrategy merge / replace / retainKeys, patchMergeKey) comes from the
v1.33 definition of the object's kind: `x-kubernetes-patch-strategy` and
`x-kubernetes-patch-merge-key` on each property, following $ref through properties, items and
additionalProperties. Semantics follow apimachinery's strategicpatch (as of v1.33+):

  * maps merge recursively; `null` deletes a field;
  * lists with strategy `merge` and a merge key merge item by item (maps matched by key);
    lists of scalars with strategy `merge` are unions (e.g. metadata.finalizers);
    all other lists are replaced;
  * directives: `$patch: replace` (map or list), `$patch: delete` (map: empties it; list
    item: deletes the items with that key), `$patch: merge` is rejected as upstream does,
    `$retainKeys` (clears keys not listed), `$setElementOrder/<field>` (final order),
    `$deleteFromPrimitiveList/<field>` (removes scalars from a merged list);
  * values new to the object have nulls and directive-carrying maps dropped.

Custom resources have no strategic schema: kube-apiserver answers such a request with 415
UnsupportedMediaType before looking at the body. `apply_strategic_merge_patch` does the same
unless `allow_unknown=True`, which applies the patch with no metadata (maps merge, lists are
replaced, directives still honoured: JSON-merge-patch semantics).

Errors map as upstream's `interpretStrategicMergePatchError`: malformed directives are 400
BadRequest with mergepatch's message; lists of lists and retainKeys mismatches are 422 with
the generic message; any other failure surfaces as a 500 with the raw message.

The module also computes the patches `kubectl apply` sends (`create_three_way_merge_patch`,
`kubectl_apply_patch`) so tests can replay kubectl.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from pyk8s.api.errors import StatusError

from ._common import (
    GENERIC_422_MESSAGE,
    PatchStatusError,
    bad_request,
    deepcopy_json,
    go_equal,
    go_json,
    go_type_name,
    go_v,
    json_type,
    raw_error,
)
from ._schema import EMPTY_PATCH_META, PatchMeta, patch_meta_for_gvk, patch_meta_for_schema
from .merge_patch import MergePatchConflictError, PreconditionFailedError, create_three_way_json_merge_patch

__all__ = [
    "apply_strategic_merge_patch",
    "create_two_way_merge_patch",
    "create_three_way_merge_patch",
    "kubectl_apply_patch",
    "kubectl_modified_configuration",
    "strategic_merge_patch_unsupported",
    "has_strategic_schema",
    "StrategicMergePatchError",
    "LAST_APPLIED_ANNOTATION",
    "CR_ACCEPTED_PATCH_TYPES",
]

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"

DIRECTIVE = "$patch"
DELETE = "delete"
REPLACE = "replace"
MERGE = "merge"
RETAIN_KEYS_STRATEGY = "retainKeys"
RETAIN_KEYS = "$retainKeys"
DELETE_PREFIX = "$deleteFromPrimitiveList"
ORDER_PREFIX = "$setElementOrder"

# mergepatch's error values
ERR_BAD_JSON_DOC = "invalid JSON document"
ERR_NO_LIST_OF_LISTS = "lists of lists are not supported"
ERR_BAD_PRIMITIVE_LIST = "invalid patch format of primitive list"
ERR_BAD_RETAIN_KEYS = "invalid patch format of retainKeys"
ERR_BAD_ORDER_LIST = "invalid patch format of setElementOrder list"
ERR_RETAIN_KEYS_MISMATCH = "patch content doesn't match retainKeys list"
ERR_UNSUPPORTED_FORMAT = "strategic merge patch format is not supported"

_BAD_REQUEST_ERRORS = {ERR_BAD_JSON_DOC, ERR_BAD_PRIMITIVE_LIST, ERR_BAD_RETAIN_KEYS, ERR_BAD_ORDER_LIST,
                       ERR_UNSUPPORTED_FORMAT}
_UNPROCESSABLE_ERRORS = {ERR_NO_LIST_OF_LISTS, ERR_RETAIN_KEYS_MISMATCH}

CR_ACCEPTED_PATCH_TYPES = ("application/json-patch+json", "application/merge-patch+json",
                           "application/apply-patch+yaml")


class StrategicMergePatchError(ValueError):
    """A strategic merge patch failure; `status_error()` renders it as the apiserver does."""

    def status_error(self) -> StatusError:
        msg = str(self)
        if msg in _BAD_REQUEST_ERRORS:
            return bad_request(msg)
        if msg in _UNPROCESSABLE_ERRORS:
            return PatchStatusError(422, "Invalid", GENERIC_422_MESSAGE, {}, keep_empty_details=True)
        return raw_error(msg)


def _err(msg: str) -> StrategicMergePatchError:
    return StrategicMergePatchError(msg)


def _no_merge_key(m: Any, key: str) -> StrategicMergePatchError:
    return _err(f"map: {go_v(m)} does not contain declared merge key: {key}")


def _bad_arg_type(expected: Any, actual: Any) -> StrategicMergePatchError:
    return _err(f"expected a {go_type_name(expected)}, but received a {go_type_name(actual)}")


def _bad_patch_type(t: Any, m: Any) -> StrategicMergePatchError:
    return _err(f"unknown patch type: {go_v(t)} in map: {go_v(m)}")


def strategic_merge_patch_unsupported() -> StatusError:
    """415 the apiserver returns for a strategic merge patch on a custom resource."""
    return StatusError(
        415, "UnsupportedMediaType",
        "the body of the request was in an unknown format - accepted media types include: "
        + ", ".join(CR_ACCEPTED_PATCH_TYPES))


def has_strategic_schema(group: str, version: str, kind: str) -> bool:
    return patch_meta_for_gvk(group, version, kind) is not None


@dataclass(frozen=True)
class _Opts:
    merge_parallel_list: bool
    ignore_unmatched_nulls: bool


_SERVER = _Opts(merge_parallel_list=True, ignore_unmatched_nulls=True)
_CLIENT = _Opts(merge_parallel_list=False, ignore_unmatched_nulls=False)


def _strategy(strategies: tuple[str, ...]) -> tuple[bool, str]:
    """(has retainKeys, the other strategy) as extractRetainKeysPatchStrategy."""
    if not strategies:
        return False, ""
    if len(strategies) == 1:
        if strategies[0] == RETAIN_KEYS_STRATEGY:
            return True, ""
        return False, strategies[0]
    if len(strategies) == 2:
        if strategies[0] == RETAIN_KEYS_STRATEGY:
            return True, strategies[1]
        if strategies[1] == RETAIN_KEYS_STRATEGY:
            return True, strategies[0]
    raise _err(f"unexpected patch strategy: {go_v(list(strategies))}")


# ---------------------------------------------------------------------------------------------
# Applying a patch


def _discard_nulls(v: Any) -> None:
    if isinstance(v, dict):
        for k in [k for k, x in v.items() if x is None]:
            del v[k]
        for x in v.values():
            _discard_nulls(x)
    elif isinstance(v, list):
        for x in v:
            _discard_nulls(x)


def _remove_directives(v: Any, strip_all: bool = True) -> tuple[Any, bool]:
    """Strip directives from a value new to the object: maps carrying `$patch` vanish. On
    the server (`strip_all`) the other directive keys are dropped too, as the typed round
    trip upstream does would drop them; when merging two patches they must survive."""
    if isinstance(v, dict):
        if DIRECTIVE in v:
            return None, False
        for k in list(v):
            if strip_all and (k == RETAIN_KEYS or k.startswith(ORDER_PREFIX) or k.startswith(DELETE_PREFIX)):
                del v[k]
                continue
            nv, keep = _remove_directives(v[k], strip_all)
            if keep:
                v[k] = nv
            else:
                del v[k]
        return v, True
    if isinstance(v, list):
        out = []
        for x in v:
            nv, keep = _remove_directives(x, strip_all)
            if keep:
                out.append(nv)
        return out, True
    return v, True


def _extract_key(s: str, prefix: str) -> str:
    parts = s.split("/", 1)
    if len(parts) <= 1 or parts[0] != prefix:
        if prefix == DELETE_PREFIX:
            raise _err(ERR_BAD_PRIMITIVE_LIST)
        if prefix == ORDER_PREFIX:
            raise _err(ERR_BAD_ORDER_LIST)
        raise _err(f'fail to find unknown prefix "{prefix}" in {s}')
    return parts[1]


def _apply_retain_keys(original: dict[str, Any], patch: dict[str, Any], opts: _Opts) -> None:
    if RETAIN_KEYS not in patch:
        return
    retain = patch.pop(RETAIN_KEYS)
    if not opts.merge_parallel_list:
        # Merging two patches (client side): carry the directive over.
        if RETAIN_KEYS in original:
            if not go_equal(original[RETAIN_KEYS], retain):
                raise _err(f"{go_v(original[RETAIN_KEYS])} and {go_v(retain)} are not deep equal: "
                           "this may happen when calculating the 3-way diff patch")
        else:
            original[RETAIN_KEYS] = retain
        return
    if not isinstance(retain, list):
        raise _err(ERR_BAD_RETAIN_KEYS)
    keep = {_hashable(v) for v in retain}
    for k, v in patch.items():
        if v is None or k.startswith(DELETE_PREFIX) or k.startswith(ORDER_PREFIX):
            continue
        if _hashable(k) not in keep:
            raise _err(ERR_BAD_RETAIN_KEYS)
    for k in list(original):
        if _hashable(k) not in keep:
            del original[k]


def _hashable(v: Any) -> Any:
    t = json_type(v)
    if t in ("m", "l"):
        return (t, go_json(v))
    return (t, v)


def _merge_map(original: dict[str, Any] | None, patch: dict[str, Any], meta: PatchMeta,
               opts: _Opts) -> dict[str, Any]:
    if DIRECTIVE in patch:
        directive = patch[DIRECTIVE]
        if directive == REPLACE:
            del patch[DIRECTIVE]
            return patch
        if directive == DELETE:
            return {}
        raise _bad_patch_type(directive, patch)
    if original is None:
        original = {}
    _apply_retain_keys(original, patch, opts)
    _merge_ordered_lists(original, patch, meta, opts)

    for k in list(patch):
        if k not in patch:
            continue
        pv = patch[k]
        is_delete_list = False
        if k.startswith(DELETE_PREFIX):
            if not opts.merge_parallel_list:
                original[k] = pv
                continue
            k = _extract_key(k, DELETE_PREFIX)
            is_delete_list = True

        if pv is None:
            original.pop(k, None)
            if opts.ignore_unmatched_nulls:
                continue

        if k not in original:
            if not is_delete_list:
                if opts.ignore_unmatched_nulls:
                    _discard_nulls(pv)
                nv, keep = _remove_directives(pv, opts.merge_parallel_list)
                if keep:
                    original[k] = nv
            continue

        ov = original[k]
        if json_type(ov) != json_type(pv):
            if not is_delete_list:
                if opts.ignore_unmatched_nulls:
                    _discard_nulls(pv)
                nv, keep = _remove_directives(pv, opts.merge_parallel_list)
                if keep:
                    original[k] = nv
                else:
                    del original[k]
            continue

        if isinstance(ov, dict):
            sub, strategies, _ = meta.lookup(k)
            _, strategy = _strategy(strategies)
            original[k] = pv if strategy == REPLACE else _merge_map(ov, pv, sub, opts)
        elif isinstance(ov, list):
            sub, strategies, merge_key = meta.lookup(k)
            _, strategy = _strategy(strategies)
            if strategy == MERGE or is_delete_list:
                original[k] = _merge_slice(ov, pv, sub.items(), merge_key, opts, is_delete_list)
            else:
                original[k] = pv
        else:
            nv, keep = _remove_directives(pv, opts.merge_parallel_list)
            if keep:
                original[k] = nv
            else:
                del original[k]
    return original


def _elem_kind(*lists: list[Any]) -> str:
    """sliceElementType: the single JSON type of all elements."""
    prev: str | None = None
    for lst in lists:
        for v in lst:
            t = json_type(v)
            if prev is None:
                prev = t
                if t == "l":
                    raise _err(ERR_NO_LIST_OF_LISTS)
            elif prev != t:
                raise _err(f"list element types are not identical: {go_v(list(lists))}")
    if prev is None:
        raise _err("no elements in any of the given slices")
    return prev


def _merge_value_of(item: Any, merge_key: str, kind: str) -> Any:
    if kind == "m":
        return item.get(merge_key) if isinstance(item, dict) else None
    return item


def _index(lst: list[Any], val: Any, merge_key: str, kind: str) -> int:
    want = _merge_value_of(val, merge_key, kind)
    for i, v in enumerate(lst):
        if go_equal(_merge_value_of(v, merge_key, kind), want):
            return i
    return -1


def _find_by_key(lst: list[Any], key: str, value: Any) -> int:
    for i, v in enumerate(lst):
        if not isinstance(v, dict):
            raise _err(f"value for key {i} is not a map.")
        if key in v and go_equal(v[key], value):
            return i
    return -1


def _validate_merge_keys(merge_key: str, *lists: list[Any]) -> None:
    for lst in lists:
        for item in lst:
            if not isinstance(item, dict):
                raise _bad_arg_type({}, item)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)


def _go_stable_sort(items: list[Any], less: Any) -> None:
    """Go's sort.SliceStable (insertion sort in blocks of 20, then SymMerge). Reproduced so
    that comparators that are not strict weak orders order items exactly as upstream."""
    n = len(items)

    def insertion(a: int, b: int) -> None:
        for i in range(a + 1, b):
            j = i
            while j > a and less(items[j], items[j - 1]):
                items[j], items[j - 1] = items[j - 1], items[j]
                j -= 1

    def swap_range(a: int, b: int, m: int) -> None:
        for i in range(m):
            items[a + i], items[b + i] = items[b + i], items[a + i]

    def rotate(a: int, m: int, b: int) -> None:
        i, j = m - a, b - m
        while i != j:
            if i > j:
                swap_range(m - i, m, j)
                i -= j
            else:
                swap_range(m - i, m + j - i, i)
                j -= i
        swap_range(m - i, m, i)

    def sym_merge(a: int, m: int, b: int) -> None:
        if m - a == 1:
            i, j = m, b
            while i < j:
                h = (i + j) // 2
                if less(items[h], items[a]):
                    i = h + 1
                else:
                    j = h
            for k in range(a, i - 1):
                items[k], items[k + 1] = items[k + 1], items[k]
            return
        if b - m == 1:
            i, j = a, m
            while i < j:
                h = (i + j) // 2
                if not less(items[m], items[h]):
                    i = h + 1
                else:
                    j = h
            for k in range(m, i, -1):
                items[k], items[k - 1] = items[k - 1], items[k]
            return
        mid = (a + b) // 2
        nn = mid + m
        if m > mid:
            start, r = nn - b, mid
        else:
            start, r = a, m
        p = nn - 1
        while start < r:
            c = (start + r) // 2
            if not less(items[p - c], items[c]):
                start = c + 1
            else:
                r = c
        end = nn - start
        if start < m and m < end:
            rotate(start, m, end)
        if a < start and start < mid:
            sym_merge(a, start, mid)
        if mid < end and end < b:
            sym_merge(mid, end, b)

    block = 20
    a, b = 0, block
    while b <= n:
        insertion(a, b)
        a, b = b, b + block
    insertion(a, n)
    while block < n:
        a, b = 0, 2 * block
        while b <= n:
            sym_merge(a, a + block, b)
            a, b = b, b + 2 * block
        m = a + block
        if m < n:
            sym_merge(a, m, n)
        block *= 2


def _normalize_slice_order(to_sort: list[Any], order: list[Any], merge_key: str, kind: str) -> list[Any]:
    to_delete: list[Any] = []
    if kind == "m":
        _validate_merge_keys(merge_key, to_sort, order)
        keep: list[Any] = []
        for v in to_sort:
            if v.get(DIRECTIVE) == DELETE:
                to_delete.append(v)
            else:
                keep.append(v)
        to_sort = keep
    items = list(to_sort)

    def less(x: Any, y: Any) -> bool:
        ix = _index(order, x, merge_key, kind)
        if ix >= 0:
            iy = _index(order, y, merge_key, kind)
            if iy >= 0:
                return ix < iy
        return True

    _go_stable_sort(items, less)
    return items + to_delete


def _merge_sorted(left: list[Any], right: list[Any], server_order: list[Any], merge_key: str,
                  kind: str) -> list[Any]:
    out: list[Any] = []
    i = j = 0
    while i < len(left) or j < len(right):
        if i >= len(left):
            out.append(right[j])
            j += 1
        elif j >= len(right):
            out.append(left[i])
            i += 1
        else:
            li = _index(server_order, left[i], merge_key, kind)
            ri = _index(server_order, right[j], merge_key, kind)
            if li >= 0 and ri >= 0 and li < ri:
                out.append(left[i])
                i += 1
            else:
                out.append(right[j])
                j += 1
    return out


def _normalize_element_order(patch_items: list[Any], server_only: list[Any], patch_order: list[Any],
                             server_order: list[Any], merge_key: str, kind: str) -> list[Any]:
    patch_items = _normalize_slice_order(patch_items, patch_order, merge_key, kind)
    server_only = _normalize_slice_order(server_only, server_order, merge_key, kind)
    return _merge_sorted(server_only, patch_items, server_order, merge_key, kind)


def _partition_primitives(merged: list[Any], by: list[Any]) -> tuple[list[Any], list[Any]]:
    in_patch = {_hashable(v) for v in by}
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for v in merged:
        (patch_items if _hashable(v) in in_patch else server_only).append(v)
    return patch_items, server_only


def _partition_maps(merged: list[Any], by: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    patch_items: list[Any] = []
    server_only: list[Any] = []
    for v in merged:
        if not isinstance(v, dict):
            raise _bad_arg_type({}, v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        if _find_by_key(by, merge_key, v[merge_key]) >= 0:
            patch_items.append(v)
        else:
            server_only.append(v)
    return patch_items, server_only


def _dedupe_scalars(s: list[Any]) -> list[Any]:
    # Go's in-place algorithm: a duplicate is overwritten by the current last element.
    s = list(s)
    length = len(s) - 1
    i = 0
    while i < length:
        j = i + 1
        while j <= length:
            if go_equal(s[i], s[j]):
                s[j] = s[length]
                s = s[:length]
                length -= 1
                j -= 1
            j += 1
        i += 1
    return s


def _merge_slice(original: list[Any], patch: list[Any], meta: PatchMeta, merge_key: str, opts: _Opts,
                 is_delete_list: bool) -> list[Any]:
    if not original and not patch:
        return original
    kind = _elem_kind(original, patch)
    if kind != "m":
        if opts.merge_parallel_list and is_delete_list:
            drop = {_hashable(v) for v in patch}
            return [v for v in original if _hashable(v) not in drop]
        merged = _dedupe_scalars(original + patch)
    else:
        if not merge_key:
            raise _err(f"cannot merge lists without merge key for {meta.name}")
        original, patch = _merge_special_elements(original, patch, merge_key)
        merged = _merge_without_special(original, patch, merge_key, meta, opts)
    if not merge_key:
        patch_items, server_only = _partition_primitives(merged, patch)
    else:
        patch_items, server_only = _partition_maps(merged, patch, merge_key)
    return _normalize_element_order(patch_items, server_only, patch, original, merge_key, kind)


def _merge_special_elements(original: list[Any], patch: list[Any], merge_key: str) -> tuple[list[Any], list[Any]]:
    plain: list[Any] = []
    replace = False
    for v in patch:
        if DIRECTIVE not in v:
            plain.append(v)
            continue
        directive = v[DIRECTIVE]
        if directive == DELETE:
            if merge_key not in v:
                raise _no_merge_key(v, merge_key)
            value = v[merge_key]
            while True:
                idx = _find_by_key(original, merge_key, value)
                if idx < 0:
                    break
                original = original[:idx] + original[idx + 1:]
        elif directive == REPLACE:
            replace = True
        elif directive == MERGE:
            raise _err("merging lists cannot yet be specified in the patch")
        else:
            raise _bad_patch_type(directive, v)
    if replace:
        return plain, []
    return original, plain


def _merge_without_special(original: list[Any], patch: list[Any], merge_key: str, meta: PatchMeta,
                           opts: _Opts) -> list[Any]:
    original = list(original)
    for v in patch:
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
        idx = _find_by_key(original, merge_key, v[merge_key])
        if idx >= 0:
            original[idx] = _merge_map(original[idx], v, meta, opts)
        else:
            if opts.ignore_unmatched_nulls:
                _discard_nulls(v)
                v, _ = _remove_directives(v)
            original.append(v)
    return original


def _validate_order_list(patch_list: Any, order_list: Any, merge_key: str) -> None:
    if not isinstance(order_list, list) or not isinstance(patch_list, list):
        raise _err(ERR_BAD_ORDER_LIST)
    if not order_list or not patch_list:
        return
    if merge_key:
        non_delete = []
        for v in patch_list:
            if not isinstance(v, dict):
                raise _bad_arg_type({}, v)
            if v.get(DIRECTIVE) != DELETE:
                non_delete.append(v)
    else:
        non_delete = patch_list
    pi = si = 0
    while pi < len(non_delete) and si < len(order_list):
        item = non_delete[pi]
        if isinstance(item, dict) and DIRECTIVE in item:
            pi += 1
            continue
        if merge_key:
            if not isinstance(item, dict):
                raise _bad_arg_type({}, item)
            o = order_list[si]
            if not isinstance(o, dict):
                raise _bad_arg_type({}, o)
            if merge_key not in item:
                raise _no_merge_key(item, merge_key)
            if merge_key not in o:
                raise _no_merge_key(o, merge_key)
            equal = go_equal(item[merge_key], o[merge_key])
        else:
            equal = go_equal(item, order_list[si])
        if equal:
            pi += 1
        si += 1
    if pi < len(non_delete) and si >= len(order_list):
        raise _err(f"the order in patch list:\n{go_v(patch_list)}\n doesn't match {ORDER_PREFIX} "
                   f"list:\n{go_v(order_list)}")


def _merge_ordered_lists(original: dict[str, Any], patch: dict[str, Any], meta: PatchMeta, opts: _Opts) -> None:
    """Process `$setElementOrder/<field>` with its list (mergePatchIntoOriginal)."""
    for key in [k for k in patch if k.startswith(ORDER_PREFIX)]:
        order = patch.pop(key)
        if not opts.merge_parallel_list:
            if key in original:
                if not go_equal(original[key], order):
                    raise _err(ERR_BAD_ORDER_LIST)
            else:
                original[key] = order
        if not isinstance(order, list):
            raise _bad_arg_type([], order)
        field = _extract_key(key, ORDER_PREFIX)
        found_original = field in original
        found_patch = field in patch
        original_value = original.get(field)
        patch_value = patch.get(field)
        if found_original and not isinstance(original_value, list):
            raise _bad_arg_type([], original_value)
        if found_patch and not isinstance(patch_value, list):
            raise _bad_arg_type([], patch_value)
        original_list: list[Any] = original_value if isinstance(original_value, list) else []
        patch_list: list[Any] = patch_value if isinstance(patch_value, list) else []
        sub, strategies, merge_key = meta.lookup(field)
        _, strategy = _strategy(strategies)
        _validate_order_list(patch_list, order, merge_key)
        merged: list[Any]
        if found_original and not found_patch:
            merged = original_list
        elif not found_original and found_patch:
            merged, _ = _remove_directives(patch_list, opts.merge_parallel_list)
        elif found_original and found_patch:
            if strategy == MERGE:
                merged = _merge_slice(original_list, patch_list, sub.items(), merge_key, opts, False)
            else:
                merged = patch_list
        else:
            continue
        if not merge_key:
            patch_items, server_only = _partition_primitives(merged, order)
        else:
            patch_items, server_only = _partition_maps(merged, order, merge_key)
        kind = _elem_kind(original_list, patch_list)
        original[field] = _normalize_element_order(patch_items, server_only, order, original_list, merge_key, kind)
        patch.pop(field, None)


def _meta_for(group: str, version: str, kind: str, schema: dict[str, Any] | None,
              allow_unknown: bool) -> PatchMeta:
    if schema is not None:
        return patch_meta_for_schema(schema)
    meta = patch_meta_for_gvk(group, version, kind)
    if meta is None:
        if not allow_unknown:
            raise strategic_merge_patch_unsupported()
        return EMPTY_PATCH_META
    return meta


def apply_strategic_merge_patch(obj: dict[str, Any], patch: Any, group: str, version: str, kind: str, *,
                                schema: dict[str, Any] | None = None,
                                allow_unknown: bool = False, in_place: bool = False) -> dict[str, Any]:
    """Apply a strategic merge patch to a wire-form object of group/version/kind.

    Returns a new dict (inputs are not mutated). `patch` is the decoded JSON object or its
    text. `schema` overrides the built-in definition lookup; `allow_unknown` applies the patch
    with JSON-merge semantics to kinds without a schema instead of refusing with 415.
    `in_place`: `obj` is the caller's own copy, to change rather than copy again."""
    meta = _meta_for(group, version, kind, schema, allow_unknown)
    if isinstance(patch, (bytes, bytearray, str)):
        import json

        try:
            patch = json.loads(patch)
        except ValueError as e:
            raise bad_request(str(e)) from None
    if patch is None:
        patch = {}  # Go decodes `null` into an empty map: a no-op patch
    if not isinstance(patch, dict):
        raise bad_request(f"json: cannot unmarshal {_json_word(patch)} into Go value of type map[string]interface {{}}")
    try:
        doc = (obj if in_place else deepcopy_json(obj)) if obj is not None else {}
        return _merge_map(doc, deepcopy_json(patch), meta, _SERVER)
    except StrategicMergePatchError as e:
        raise e.status_error() from e


def _json_word(v: Any) -> str:
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if v is None:
        return "null"
    return "number"


# ---------------------------------------------------------------------------------------------
# Creating patches (kubectl's side)


@dataclass(frozen=True)
class _DiffOpts:
    set_element_order: bool = False
    ignore_changes_and_additions: bool = False
    ignore_deletions: bool = False
    build_retain_keys: bool = False


def _sort_scalars(s: list[Any]) -> list[Any]:
    # Sorted by their %v text, as upstream does.
    return sorted(s, key=go_v)


def _diff_maps(original: dict[str, Any], modified: dict[str, Any], meta: PatchMeta, o: _DiffOpts) -> dict[str, Any]:
    patch: dict[str, Any] = {}
    retain: list[Any] = []
    for key, mv in modified.items():
        if o.build_retain_keys and mv is not None:
            retain.append(key)
        if key not in original:
            if not o.ignore_changes_and_additions:
                patch[key] = deepcopy_json(mv)
            continue
        ov = original[key]
        if key == DIRECTIVE:
            if not isinstance(ov, str) or not isinstance(mv, str):
                raise _err(f"invalid value for special key: {DIRECTIVE}")
            if ov != mv:
                patch[DIRECTIVE] = mv
            continue
        if json_type(ov) != json_type(mv):
            if not o.ignore_changes_and_additions:
                patch[key] = deepcopy_json(mv)
            continue
        if isinstance(ov, dict):
            sub, strategies, _ = meta.lookup(key)
            retain_keys, strategy = _strategy(strategies)
            sub_opts = _DiffOpts(o.set_element_order, o.ignore_changes_and_additions, o.ignore_deletions,
                                 retain_keys)
            if strategy == REPLACE:
                if not o.ignore_changes_and_additions:
                    patch[key] = deepcopy_json(mv)
            else:
                pv = _diff_maps(ov, mv, sub, sub_opts)
                if pv:
                    patch[key] = pv
        elif isinstance(ov, list):
            sub, strategies, merge_key = meta.lookup(key)
            retain_keys, strategy = _strategy(strategies)
            if strategy == MERGE:
                sub_opts = _DiffOpts(o.set_element_order, o.ignore_changes_and_additions, o.ignore_deletions,
                                     retain_keys)
                add, delete, order = _diff_lists(ov, mv, sub.items(), merge_key, sub_opts)
                if add:
                    patch[key] = add
                if delete:
                    patch[f"{DELETE_PREFIX}/{key}"] = delete
                if order:
                    patch[f"{ORDER_PREFIX}/{key}"] = order
            elif not o.ignore_changes_and_additions and not go_equal(ov, mv):
                patch[key] = deepcopy_json(mv)
        elif not o.ignore_changes_and_additions and not go_equal(ov, mv):
            patch[key] = deepcopy_json(mv)
    if not o.ignore_deletions:
        for key in original:
            if key not in modified:
                patch[key] = None
    if retain and (patch or any(v is not None and k not in modified for k, v in original.items())):
        patch[RETAIN_KEYS] = _sort_scalars(retain)
    return patch


def _diff_lists(original: list[Any], modified: list[Any], meta: PatchMeta, merge_key: str,
                o: _DiffOpts) -> tuple[list[Any], list[Any], list[Any]]:
    if not original:
        if not modified or o.ignore_changes_and_additions:
            return [], [], []
        return deepcopy_json(modified), [], []
    kind = _elem_kind(original, modified)
    if kind == "m":
        patch_list, delete_list = _diff_lists_of_maps(original, modified, meta, merge_key, o)
        patch_list = _normalize_slice_order(patch_list, modified, merge_key, kind)
        order_same = len(original) == len(modified) and all(
            _merge_key_equal(a, b, merge_key) for a, b in zip(original, modified, strict=True))
        patch_list = patch_list + delete_list
        order: list[Any] = []
        if o.set_element_order and ((not o.ignore_changes_and_additions and (patch_list or not order_same))
                                    or (not o.ignore_deletions and patch_list)):
            order = [{merge_key: v[merge_key]} for v in modified]
        return patch_list, [], order
    if kind == "l":
        raise _err(ERR_NO_LIST_OF_LISTS)
    add, delete = _diff_lists_of_scalars(original, modified, o)
    add = _normalize_slice_order(add, modified, merge_key, kind)
    order = []
    if o.set_element_order and ((not o.ignore_deletions and delete) or
                                (not o.ignore_changes_and_additions and not go_equal(original, modified))):
        order = deepcopy_json(modified)
    return add, delete, order


def _merge_key_equal(a: Any, b: Any, merge_key: str) -> bool:
    if not merge_key:
        return go_equal(a, b)
    if not isinstance(a, dict) or not isinstance(b, dict):
        raise _bad_arg_type({}, a if not isinstance(a, dict) else b)
    if merge_key not in a:
        raise _no_merge_key(a, merge_key)
    if merge_key not in b:
        raise _no_merge_key(b, merge_key)
    return go_equal(a[merge_key], b[merge_key])


def _diff_lists_of_scalars(original: list[Any], modified: list[Any], o: _DiffOpts) -> tuple[list[Any], list[Any]]:
    orig = _sort_scalars(list(original))
    mod = _sort_scalars(list(modified))
    i = j = 0
    add: list[Any] = []
    delete: list[Any] = []
    while i < len(orig) or j < len(mod):
        if i < len(orig) and j < len(mod):
            os_, ms = go_v(orig[i]), go_v(mod[j])
            if os_ == ms:
                i += 1
                j += 1
            elif os_ > ms:
                if not o.ignore_changes_and_additions:
                    add.append(mod[j])
                j += 1
            else:
                if not o.ignore_deletions:
                    delete.append(orig[i])
                i += 1
        elif j < len(mod):
            if not o.ignore_changes_and_additions:
                add.append(mod[j])
            j += 1
        else:
            if not o.ignore_deletions:
                delete.append(orig[i])
            i += 1
    return add, _dedupe_scalars(delete)


def _sort_maps_by_key(items: list[Any], merge_key: str) -> list[Any]:
    for v in items:
        if not isinstance(v, dict):
            raise _bad_arg_type({}, v)
        if merge_key not in v:
            raise _no_merge_key(v, merge_key)
    return sorted(items, key=lambda v: go_v(v[merge_key]))


def _diff_lists_of_maps(original: list[Any], modified: list[Any], meta: PatchMeta, merge_key: str,
                        o: _DiffOpts) -> tuple[list[Any], list[Any]]:
    orig = _sort_maps_by_key(original, merge_key)
    mod = _sort_maps_by_key(modified, merge_key)
    patch: list[Any] = []
    delete: list[Any] = []
    i = j = 0
    while i < len(orig) or j < len(mod):
        if i < len(orig) and j < len(mod):
            os_, ms = go_v(orig[i][merge_key]), go_v(mod[j][merge_key])
            if os_ == ms:
                pv = _diff_maps(orig[i], mod[j], meta, o)
                if pv:
                    pv[merge_key] = mod[j][merge_key]
                    patch.append(pv)
                i += 1
                j += 1
                continue
            if os_ > ms:
                if not o.ignore_changes_and_additions:
                    patch.append(deepcopy_json(mod[j]))
                j += 1
                continue
            if not o.ignore_deletions:
                delete.append({merge_key: orig[i][merge_key], DIRECTIVE: DELETE})
            i += 1
        elif j < len(mod):
            if not o.ignore_changes_and_additions:
                patch.append(deepcopy_json(mod[j]))
            j += 1
        else:
            if not o.ignore_deletions:
                delete.append({merge_key: orig[i][merge_key], DIRECTIVE: DELETE})
            i += 1
    return patch, delete


def _client_meta(group: str, version: str, kind: str, schema: dict[str, Any] | None) -> PatchMeta:
    if schema is not None:
        return patch_meta_for_schema(schema)
    meta = patch_meta_for_gvk(group, version, kind)
    if meta is None:
        raise StrategicMergePatchError(f"no strategic merge patch schema for {group}/{version}, Kind={kind}")
    return meta


def create_two_way_merge_patch(original: dict[str, Any], modified: dict[str, Any], group: str, version: str,
                               kind: str, *, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """A strategic merge patch turning `original` into `modified` (CreateTwoWayMergePatch)."""
    meta = _client_meta(group, version, kind, schema)
    return _diff_maps(original or {}, modified or {}, meta, _DiffOpts(set_element_order=True))


def create_three_way_merge_patch(original: dict[str, Any] | None, modified: dict[str, Any] | None,
                                 current: dict[str, Any] | None, group: str, version: str, kind: str, *,
                                 schema: dict[str, Any] | None = None, overwrite: bool = True) -> dict[str, Any]:
    """The strategic merge patch `kubectl apply` computes (CreateThreeWayMergePatch).

    `original` is the last-applied configuration, `modified` the new configuration (with its
    own last-applied annotation, as kubectl sends it) and `current` the live object. The
    patch carries changes and additions from current to modified, and deletions of fields
    that were in original and are gone from modified. With overwrite=False a conflict with
    changes made by others raises StrategicMergePatchError."""
    meta = _client_meta(group, version, kind, schema)
    original = original or {}
    modified = modified or {}
    current = current or {}
    delta = _diff_maps(current, modified, meta, _DiffOpts(set_element_order=True, ignore_deletions=True))
    deletions = _diff_maps(original, modified, meta,
                           _DiffOpts(set_element_order=True, ignore_changes_and_additions=True))
    patch = _merge_map(deletions, delta, meta, _CLIENT)
    if not overwrite:
        changed = _diff_maps(original, current, meta, _DiffOpts())
        if _maps_conflict(patch, changed, meta):
            raise StrategicMergePatchError("patch conflicts with changes made from original to current")
    return patch


def _maps_conflict(left: Any, right: Any, meta: PatchMeta, strategy: str = "", merge_key: str = "") -> bool:
    if isinstance(left, dict):
        if not isinstance(right, dict):
            return True
        lm, rm = left.get(DIRECTIVE, _NO), right.get(DIRECTIVE, _NO)
        if lm is not _NO or rm is not _NO:
            if (lm is _NO) != (rm is _NO) or lm != rm:
                return True
        if strategy == REPLACE:
            return False
        for k, lv in left.items():
            if k in (DIRECTIVE, RETAIN_KEYS) or k not in right:
                continue
            sub, strategies, mk = meta.lookup(k)
            _, st = _strategy(strategies)
            node = sub.items() if isinstance(lv, list) else sub
            if _maps_conflict(lv, right[k], node, st, mk):
                return True
        return False
    if isinstance(left, list):
        if not isinstance(right, list):
            return True
        if not left and not right:
            return False
        kind = _elem_kind(left, right)
        if strategy == MERGE:
            if kind != "m":
                return False
            lmap = {go_v(v.get(merge_key)): v for v in left}
            rmap = {go_v(v.get(merge_key)): v for v in right}
            return any(_maps_conflict(v, rmap[k], meta) for k, v in lmap.items() if k in rmap)
        if len(left) != len(right):
            return True
        if kind != "m":
            left, right = _sort_scalars(_dedupe_scalars(left)), _sort_scalars(_dedupe_scalars(right))
        return any(_maps_conflict(a, b, meta) for a, b in zip(left, right, strict=True))
    return not go_equal(left, right)


_NO = object()


def kubectl_modified_configuration(config: dict[str, Any]) -> dict[str, Any]:
    """The `modified` document kubectl apply works from: the config with the
    last-applied-configuration annotation set to the config itself (GetModifiedConfiguration)."""
    obj = deepcopy_json(config)
    md = obj.setdefault("metadata", {})
    annotations = md.get("annotations")
    if not isinstance(annotations, dict):
        annotations = {}
    annotations.pop(LAST_APPLIED_ANNOTATION, None)
    md["annotations"] = annotations
    text = go_json(obj) + "\n"
    annotations[LAST_APPLIED_ANNOTATION] = text
    return obj


def kubectl_apply_patch(config: dict[str, Any], current: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """The (patch, content type) client-side `kubectl apply` sends to update `current` to
    `config`: a three-way strategic merge patch for built-in kinds, a three-way JSON merge
    patch for kinds without a schema."""
    modified = kubectl_modified_configuration(config)
    annotations = (current.get("metadata") or {}).get("annotations") or {}
    original_text = annotations.get(LAST_APPLIED_ANNOTATION)
    import json

    original = json.loads(original_text) if original_text else {}
    api_version = str(config.get("apiVersion") or current.get("apiVersion") or "")
    group, _, version = api_version.rpartition("/")
    kind = str(config.get("kind") or current.get("kind") or "")
    if has_strategic_schema(group, version, kind):
        patch = create_three_way_merge_patch(original, modified, current, group, version, kind)
        return patch, "application/strategic-merge-patch+json"
    try:
        patch = create_three_way_json_merge_patch(original, modified, current)
    except (MergePatchConflictError, PreconditionFailedError) as e:
        raise StrategicMergePatchError(str(e)) from e
    return patch, "application/merge-patch+json"
