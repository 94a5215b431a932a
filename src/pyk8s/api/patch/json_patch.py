"""RFC 6902 JSON Patch (application/json-patch+json), with kube-apiserver's semantics.

kube-apiserver applies JSON patches with gopkg.in/evanphx/json-patch.v4, and this module
follows that library where it differs from the RFC:
  * `replace` of a missing object member adds it (only array indices are checked);
  * negative array indices count from the end (`-1` is the last element, and `add` at
    `-1` appends);
  * `test` of an absent member against `null` succeeds; scalars compare by type and value;
  * `replace` (and `test`) accept the whole-document path "".
Errors are reported as the apiserver does: a patch that does not decode is 400 BadRequest
with the decoder's message; a patch that fails to apply (missing path, failed `test`,
unknown op) is 422 Invalid with the generic "the server rejected our request due to an
error in our request" and an empty details object (upstream discards the library's text).
More than 10000 operations is 413 RequestEntityTooLarge.
"""

from __future__ import annotations

import json
import re
from typing import Any

from pyk8s.api.errors import new_request_entity_too_large

from ._common import bad_request, deepcopy_json, go_equal, unprocessable

__all__ = ["apply_json_patch", "decode_json_patch", "escape_pointer_token", "MAX_JSON_PATCH_OPERATIONS"]

MAX_JSON_PATCH_OPERATIONS = 10000

_TOKEN_RE = re.compile(r"~[01]")


def escape_pointer_token(token: str) -> str:
    """Escape one reference token for use in a JSON pointer (`~` -> `~0`, `/` -> `~1`)."""
    return token.replace("~", "~0").replace("/", "~1")


def _unescape(token: str) -> str:
    # One left-to-right pass, so "~01" decodes to "~1" as RFC 6901 requires.
    return _TOKEN_RE.sub(lambda m: "/" if m.group() == "~1" else "~", token)


class _ApplyError(Exception):
    """Internal: the patch decoded but could not be applied."""


def _go_kind_word(v: Any) -> str:
    if isinstance(v, dict):
        return "object"
    if isinstance(v, list):
        return "array"
    if isinstance(v, str):
        return "string"
    if isinstance(v, bool):
        return "bool"
    if v is None:
        return "null"
    return "number"


def decode_json_patch(patch: Any) -> list[dict[str, Any]]:
    """Validate the outer shape of a JSON patch as jsonpatch.DecodePatch does.

    Accepts already-parsed JSON, or bytes/str to parse. Raises 400 BadRequest."""
    if isinstance(patch, (bytes, bytearray, str)):
        try:
            patch = json.loads(patch)
        except ValueError as e:
            raise bad_request(f"invalid character in JSON patch: {e}") from None
    if patch is None:
        # Go unmarshals `null` into a nil slice without error: an empty patch.
        return []
    if not isinstance(patch, list):
        raise bad_request(f"json: cannot unmarshal {_go_kind_word(patch)} into Go value of type jsonpatch.Patch")
    for op in patch:
        if op is not None and not isinstance(op, dict):
            raise bad_request(
                f"json: cannot unmarshal {_go_kind_word(op)} into Go value of type jsonpatch.Operation")
    return [op if op is not None else {} for op in patch]


def _atoi(key: str) -> int:
    # strconv.Atoi: optional sign, decimal digits only.
    if not re.fullmatch(r"[+-]?[0-9]+", key):
        raise _ApplyError(f'strconv.Atoi: parsing "{key}": invalid syntax')
    return int(key)


def _find_container(doc: Any, path: str) -> tuple[Any, str]:
    """Locate the parent container of `path` and the (unescaped) last token.

    Mirrors the library: the text before the first "/" is ignored, intermediate values must
    be objects or arrays, and a null intermediate counts as missing."""
    split = path.split("/")
    if len(split) < 2:
        raise _ApplyError(f'doc is missing path: "{path}"')
    cur = doc
    for part in split[1:-1]:
        nxt = _get(cur, _unescape(part))
        if nxt is _MISSING or nxt is None or not isinstance(nxt, (dict, list)):
            raise _ApplyError(f'doc is missing path: "{path}"')
        cur = nxt
    return cur, _unescape(split[-1])


class _Missing:
    pass


_MISSING: Any = _Missing()


def _get(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        return container.get(key, _MISSING)
    idx = _atoi(key)
    n = len(container)
    if idx < 0:
        if idx < -n:
            raise _ApplyError(f"Unable to access invalid index: {idx}")
        idx += n
    if idx >= n:
        raise _ApplyError(f"Unable to access invalid index: {idx}")
    return container[idx]


def _add(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    if key == "-":
        container.append(value)
        return
    idx = _atoi(key)
    size = len(container) + 1
    if idx >= size:
        raise _ApplyError(f"Unable to access invalid index: {idx}")
    if idx < 0:
        if idx < -size:
            raise _ApplyError(f"Unable to access invalid index: {idx}")
        idx += size
    container.insert(idx, value)


def _remove(container: Any, key: str) -> Any:
    if isinstance(container, dict):
        if key not in container:
            raise _ApplyError(f"Unable to remove nonexistent key: {key}")
        return container.pop(key)
    idx = _atoi(key)
    n = len(container)
    if idx >= n:
        raise _ApplyError(f"Unable to access invalid index: {idx}")
    if idx < 0:
        if idx < -n:
            raise _ApplyError(f"Unable to access invalid index: {idx}")
        idx += n
    return container.pop(idx)


def _set(container: Any, key: str, value: Any) -> None:
    if isinstance(container, dict):
        container[key] = value
        return
    idx = _atoi(key)
    n = len(container)
    if idx < 0:
        if idx < -n:
            raise _ApplyError(f"Unable to access invalid index: {idx}")
        idx += n
    container[idx] = value


def _str_field(op: dict[str, Any], name: str) -> str:
    v = op.get(name)
    if v is None:
        raise _ApplyError(f"operation missing {name} field")
    if not isinstance(v, str):
        raise _ApplyError(f"json: cannot unmarshal into Go value of type string ({name})")
    return v


def _apply_one(doc: Any, op: dict[str, Any]) -> Any:
    kind = op.get("op")
    if not isinstance(kind, str):
        kind = "unknown"
    if kind == "add":
        path = _str_field(op, "path")
        con, key = _find_container(doc, path)
        _add(con, key, deepcopy_json(op.get("value")))
    elif kind == "remove":
        path = _str_field(op, "path")
        con, key = _find_container(doc, path)
        _remove(con, key)
    elif kind == "replace":
        path = _str_field(op, "path")
        if path == "":
            value = op.get("value")
            if not isinstance(value, (dict, list)):
                raise _ApplyError("replace operation value must be object or array")
            return deepcopy_json(value)
        con, key = _find_container(doc, path)
        _get(con, key)  # only array indices are checked, as upstream does
        _set(con, key, deepcopy_json(op.get("value")))
    elif kind == "move":
        frm = _str_field(op, "from")
        con, key = _find_container(doc, frm)
        _get(con, key)
        val = _remove(con, key)
        path = _str_field(op, "path")
        con, key = _find_container(doc, path)
        _add(con, key, val)
    elif kind == "copy":
        frm = _str_field(op, "from")
        con, key = _find_container(doc, frm)
        val = _get(con, key)
        if val is _MISSING:
            raise _ApplyError(f"copy operation does not apply: doc is missing from path: {frm}")
        path = _str_field(op, "path")
        con, key = _find_container(doc, path)
        _add(con, key, deepcopy_json(val))
    elif kind == "test":
        path = _str_field(op, "path")
        expected = op.get("value")
        if path == "":
            if not go_equal(doc, expected):
                raise _ApplyError(f"testing value {path} failed")
            return doc
        con, key = _find_container(doc, path)
        val = _get(con, key)
        if val is _MISSING or val is None:
            # An absent member and an explicit null both read as "no value".
            if expected is None:
                return doc
            raise _ApplyError(f"testing value {path} failed")
        if expected is None or not go_equal(val, expected):
            raise _ApplyError(f"testing value {path} failed")
    else:
        raise _ApplyError(f"Unexpected kind: {kind}")
    return doc


def apply_json_patch(obj: Any, patch_ops: Any) -> Any:
    """Apply a JSON patch to a wire-form object and return the result (input untouched).

    `patch_ops` is the decoded patch (a list of operation objects) or its JSON text.
    The result is normally a dict; a `replace` of the root may yield a list, which the
    caller's decoding rejects as upstream does."""
    ops = decode_json_patch(patch_ops)
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise new_request_entity_too_large(
            f"The allowed maximum operations in a JSON patch is {MAX_JSON_PATCH_OPERATIONS}, got {len(ops)}")
    doc = deepcopy_json(obj)
    try:
        for op in ops:
            doc = _apply_one(doc, op)
    except (_ApplyError, IndexError) as e:
        err = unprocessable()
        err.__cause__ = e
        raise err from e
    return doc
