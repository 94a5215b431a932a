"""Strict decoding: unknown and mistyped fields, per the request's fieldValidation directive."""

from __future__ import annotations

from typing import Any

from ..api import errors as E
from ..api.resources import Resource
from ..api.schema import strict

__all__ = ["check"]


def _unknown_structural(obj: dict[str, Any], res: Resource) -> list[str]:
    schema = _crd_schema(res)
    if schema is None:
        return []
    return strict.unknown_fields_structural(schema, obj)


def _crd_schema(res: Resource) -> dict[str, Any] | None:
    for v in ((res.crd or {}).get("spec") or {}).get("versions") or []:
        if v.get("name") == res.version:
            return (v.get("schema") or {}).get("openAPIV3Schema")
    return None


def _drop_path(obj: Any, path: str) -> None:
    """Remove one unknown field, given its upstream-style path (a.b[0].c)."""
    import re

    parts: list[Any] = []
    for m in re.finditer(r"([^.\[\]]+)|\[(\d+)\]", path):
        parts.append(int(m.group(2)) if m.group(2) is not None else m.group(1))
    if not parts:  # the empty key at the top ("")
        if isinstance(obj, dict):
            obj.pop(path, None)
        return
    cur = obj
    for p in parts[:-1]:
        try:
            cur = cur[p]
        except (KeyError, IndexError, TypeError):
            return
    if isinstance(cur, dict) and isinstance(parts[-1], str):
        cur.pop(parts[-1], None)


def check(obj: dict[str, Any], res: Resource, ctx: Any) -> None:
    mode = ctx.field_validation or "Strict"
    if res.crd is not None:
        # metadata is an ObjectMeta for custom resources too: a number for a name is refused, not
        # stored (it broke every later list of the resource)
        err = strict.object_meta_type_error(res.kind, res.version, obj.get("metadata"))
        if err:
            raise E.new_bad_request(err)
        unknown = _unknown_structural(obj, res)
    else:
        # one walk finds both; the unknown fields count only when the types are right
        type_errs, unknown = strict.check_fields(res.group, res.version, res.kind, obj)
        if type_errs:  # (already in upstream's "<Kind> in version ... cannot be handled as" form)
            raise E.new_bad_request(type_errs[0])
    if not unknown:
        return
    if mode == "Strict":
        if len(unknown) == 1:
            detail = f'strict decoding error: unknown field "{unknown[0]}"'
        else:
            detail = "strict decoding error: " + ", ".join(f'unknown field "{u}"' for u in unknown)
        raise E.new_bad_request(f'{res.kind} in version "{res.version}" cannot be handled as a {res.kind}: {detail}')
    if mode == "Warn":
        ctx.warnings.extend(f'unknown field "{u}"' for u in unknown)
    if res.crd is None:
        strict.drop_unknown_fields(res.group, res.version, res.kind, obj)
        return
    for u in unknown:
        _drop_path(obj, u)
