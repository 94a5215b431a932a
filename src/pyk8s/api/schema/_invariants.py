"""Structural-ness checks of CRD schemas (apiextensions ValidateStructural and friends).

Paths and messages follow upstream: `properties[spec].type: Required value: must not be
empty for specified object fields`.
"""

from __future__ import annotations

import re
from typing import Any

from pyk8s.api.errors import FieldError

__all__ = ["check_invariants", "ROOT"]

Schema = dict[str, Any]


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _key(path: str, k: str) -> str:
    return f"{path}[{k}]"


ROOT, _ITEM, _FIELD = 0, 1, 2
_NESTED_FORBIDDEN = [
    ("type", "must be empty to be structural"),
    ("additionalProperties", "must be undefined to be structural"),
    ("default", "must be undefined to be structural"),
    ("title", "must be empty to be structural"),
    ("description", "must be empty to be structural"),
    ("nullable", "must be false to be structural"),
    ("externalDocs", "must be undefined to be structural"),
    ("x-kubernetes-preserve-unknown-fields", "must be false to be structural"),
    ("x-kubernetes-embedded-resource", "must be false to be structural"),
    ("x-kubernetes-int-or-string", "must be false to be structural"),
    ("x-kubernetes-list-map-keys", "must be empty to be structural"),
    ("x-kubernetes-list-type", "must be undefined to be structural"),
    ("x-kubernetes-map-type", "must be undefined to be structural"),
    ("x-kubernetes-validations", "must be empty to be structural"),
]
_INT_OR_STRING_ANYOF = [{"type": "integer"}, {"type": "string"}]


def check_invariants(s: Schema | None, lvl: int, path: str, errs: list[FieldError]) -> None:
    if not isinstance(s, dict):
        return
    t = s.get("type") or ""
    for key, msg in (
        ("$ref", "$ref is not supported"),
        ("definitions", "definitions are not supported"),
        ("dependencies", "dependencies are not supported"),
        ("patternProperties", "patternProperties is not supported"),
    ):
        if key in s:
            errs.append(FieldError(_child(path, key), "Forbidden", detail=msg))
    if s.get("uniqueItems") is True:
        errs.append(
            FieldError(
                _child(path, "uniqueItems"),
                "Forbidden",
                detail="uniqueItems cannot be set to true since the runtime complexity becomes quadratic",
            )
        )
    if t == "array" and s.get("items") is None:
        errs.append(FieldError(_child(path, "items"), "Required", detail="must be specified"))
    items = s.get("items")
    if isinstance(items, list):
        errs.append(FieldError(_child(path, "items"), "Forbidden", detail="items must be a schema object and not an array"))
    else:
        check_invariants(items, _ITEM, _child(path, "items"), errs)
    props = s.get("properties") or {}
    for k, v in props.items():
        check_invariants(v, _FIELD, _key(_child(path, "properties"), k), errs)
    if "additionalProperties" in s:
        if props and s["additionalProperties"] is not True:  # as upstream: `true` beside properties is allowed
            errs.append(
                FieldError(
                    _child(path, "additionalProperties"),
                    "Forbidden",
                    detail="additionalProperties and properties are mutual exclusive",
                )
            )
        if lvl == ROOT:
            errs.append(FieldError(_child(path, "additionalProperties"), "Forbidden", detail="must not be used at the root"))
        if isinstance(s["additionalProperties"], dict):
            check_invariants(s["additionalProperties"], _FIELD, _child(path, "additionalProperties"), errs)
    ios = bool(s.get("x-kubernetes-int-or-string"))
    puf = bool(s.get("x-kubernetes-preserve-unknown-fields"))
    emb = bool(s.get("x-kubernetes-embedded-resource"))
    if ios and puf:
        errs.append(
            FieldError(_child(path, "x-kubernetes-preserve-unknown-fields"), "Invalid", True,
                       "must be false if x-kubernetes-int-or-string is true")
        )
    if ios and emb:
        errs.append(
            FieldError(_child(path, "x-kubernetes-embedded-resource"), "Invalid", True,
                       "must be false if x-kubernetes-int-or-string is true")
        )
    _value_validation(s, lvl, path, errs, skip_any_of=s.get("anyOf") == _INT_OR_STRING_ANYOF,
                      skip_first_all_of_any_of=_all_of_int_or_string(s))
    if emb and t != "object":
        if not t:
            errs.append(FieldError(_child(path, "type"), "Required",
                                   detail="must be object if x-kubernetes-embedded-resource is true"))
        else:
            errs.append(FieldError(_child(path, "type"), "Invalid", t,
                                   "must be object if x-kubernetes-embedded-resource is true"))
    elif not t and not ios and not puf:
        msg = {
            ROOT: "must not be empty at the root",
            _ITEM: "must not be empty for specified array items",
            _FIELD: "must not be empty for specified object fields",
        }[lvl]
        errs.append(FieldError(_child(path, "type"), "Required", detail=msg))
    if emb and "additionalProperties" in s:
        errs.append(FieldError(_child(path, "additionalProperties"), "Forbidden",
                               detail="must not be used if x-kubernetes-embedded-resource is set"))
    if lvl == ROOT and t and t != "object":
        errs.append(FieldError(_child(path, "type"), "Invalid", t, "must be object at the root"))
    check_meta = lvl == ROOT or emb
    for name in ("kind", "apiVersion"):
        if name in props and check_meta and (props[name] or {}).get("type") != "string":
            errs.append(FieldError(_child(_key(_child(path, "properties"), name), "type"), "Invalid",
                                   (props[name] or {}).get("type", ""), "must be string"))
    if "metadata" in props:
        _metadata_invariants(props["metadata"] or {}, check_meta, lvl, _key(_child(path, "properties"), "metadata"), errs)
    if emb and not puf and not props:
        errs.append(FieldError(_child(path, "properties"), "Required",
                               detail="must not be empty if x-kubernetes-embedded-resource is true without "
                                      "x-kubernetes-preserve-unknown-fields"))
    lt = s.get("x-kubernetes-list-type")
    if lt is not None:
        if t != "array":
            errs.append(FieldError(_child(path, "x-kubernetes-list-type"), "Invalid", lt, "must only be used on type=array"))
        elif lt not in ("atomic", "set", "map"):
            errs.append(FieldError(_child(path, "x-kubernetes-list-type"), "NotSupported", lt,
                                   valid_values=["atomic", "set", "map"]))
        elif lt == "map" and not s.get("x-kubernetes-list-map-keys"):
            errs.append(FieldError(_child(path, "x-kubernetes-list-map-keys"), "Required",
                                   detail="must not be empty if x-kubernetes-list-type is map"))


def _all_of_int_or_string(s: Schema) -> bool:
    all_of = s.get("allOf") or []
    return bool(all_of) and isinstance(all_of[0], dict) and all_of[0].get("anyOf") == _INT_OR_STRING_ANYOF


def _metadata_invariants(s: Schema, check: bool, lvl: int, path: str, errs: list[FieldError]) -> None:
    if check and s.get("type") != "object":
        errs.append(FieldError(_child(path, "type"), "Invalid", s.get("type", ""), "must be object"))
    if lvl == ROOT:
        rest = {k: v for k, v in s.items() if k not in ("type", "default")}
        props = rest.get("properties")
        if isinstance(props, dict) and set(props) <= {"name", "generateName"}:
            rest.pop("properties")
        if rest:
            errs.append(FieldError(path, "Forbidden", detail="must not specify anything other than name and "
                                                             "generateName, but metadata is implicitly specified"))


def _value_validation(s: Schema, lvl: int, path: str, errs: list[FieldError], skip_any_of: bool = False,
                      skip_first_all_of_any_of: bool = False) -> None:
    if not skip_any_of:
        for i, sub in enumerate(s.get("anyOf") or []):
            _nested(sub, lvl, _index(_child(path, "anyOf"), i), errs)
    for i, sub in enumerate(s.get("allOf") or []):
        _nested(sub, lvl, _index(_child(path, "allOf"), i), errs, skip_any_of=skip_first_all_of_any_of and i == 0)
    for i, sub in enumerate(s.get("oneOf") or []):
        _nested(sub, lvl, _index(_child(path, "oneOf"), i), errs)
    if isinstance(s.get("not"), dict):
        _nested(s["not"], lvl, _child(path, "not"), errs)
    pattern = s.get("pattern")
    if isinstance(pattern, str) and pattern:
        try:
            re.compile(pattern)
        except re.error as e:
            errs.append(FieldError(_child(path, "pattern"), "Invalid", pattern,
                                   f"must be a valid regular expression, but isn't: {e}"))


def _nested(v: Any, lvl: int, path: str, errs: list[FieldError], skip_any_of: bool = False) -> None:
    if not isinstance(v, dict):
        return
    _value_validation(v, lvl, path, errs, skip_any_of=skip_any_of)
    if isinstance(v.get("items"), dict):
        _nested(v["items"], lvl, _child(path, "items"), errs)
    for k, sub in (v.get("properties") or {}).items():
        _nested(sub, _FIELD, _key(_child(path, "properties"), k), errs)
    for key, msg in _NESTED_FORBIDDEN:
        val = v.get(key)
        # any default (even false or 0) counts; other keys only when set to something
        if (key == "default" and key in v and val is not None) or (
            key != "default" and val is not None and val is not False and val not in ("", [], {})
        ):
            errs.append(FieldError(_child(path, key), "Forbidden", detail=msg))
    if "metadata" in (v.get("properties") or {}):
        errs.append(FieldError(_key(_child(path, "properties"), "metadata"), "Forbidden",
                               detail="must not be specified in a nested context"))
