"""kube-openapi's schema validator, as apiextensions runs it on custom resources.

Validators run in upstream's order (type, allOf/anyOf/oneOf/not, string, format, number,
array, enum, object) and their errors become field errors the way apiextensions'
kubeOpenAPIResultToFieldErrors converts them, so messages read like upstream's:

    spec.replicas: Invalid value: "string": spec.replicas in body must be of type integer: "string"
"""

from __future__ import annotations

import json
import math
import re
from functools import lru_cache
from typing import Any

from pyk8s.api.errors import FieldError

from ._formats import format_checker
from ._gocompat import go_float, go_quote

__all__ = ["OpenAPIValidator", "go_sharp_value"]

# raw error codes
_TYPE, _REQUIRED, _ENUM, _TOOLONG, _MAXITEMS, _MAXPROPS, _OTHER, _COMPOSITE = range(8)


class _Err:
    __slots__ = ("code", "name", "value", "msg", "extra")

    def __init__(self, code: int, name: str, value: Any = None, msg: str = "", extra: Any = None) -> None:
        self.code = code
        self.name = name
        self.value = value
        self.msg = msg
        self.extra = extra


@lru_cache(maxsize=1024)
def _regex(pattern: str) -> re.Pattern[str] | None:
    try:
        return re.compile(pattern)
    except re.error:
        return None


def _types(s: dict[str, Any]) -> list[str]:
    if s.get("x-kubernetes-int-or-string"):
        return ["integer", "string"]
    t = s.get("type")
    if isinstance(t, list):
        return [x for x in t if isinstance(x, str)]
    return [t] if t else []


def _kind(v: Any) -> tuple[str, str]:
    """(Go reflect kind, JSON schema type) of a decoded JSON value."""
    if v is True or v is False:
        return "bool", "boolean"
    if isinstance(v, int):
        return "int", "integer"
    if isinstance(v, float):
        return "float", "number"
    if isinstance(v, str):
        return "string", "string"
    if isinstance(v, list):
        return "slice", "array"
    return "map", "object"


def _num(v: Any) -> str:
    """%v of a number as kube-openapi formats bounds (int64 or float64)."""
    if isinstance(v, int) and not isinstance(v, bool):
        return str(v)
    return go_float(float(v))


def _json_equal(a: Any, b: Any) -> bool:
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    if isinstance(a, (dict, list)) or isinstance(b, (dict, list)):
        return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    return type(a) is type(b) and a == b


class OpenAPIValidator:
    """Validates one value against one CRD schema; `prefix` prefixes field paths."""

    IN = "body"

    def __init__(self, prefix: str = "") -> None:
        self.prefix = prefix

    def run(self, schema: dict[str, Any], data: Any) -> list[FieldError]:
        return [self._field_error(e) for e in self.validate(schema, data, "")]

    # -- conversion (apiextensions kubeOpenAPIResultToFieldErrors) --

    def _path(self, name: str) -> str:
        if name and name != ".":
            name = name[1:] if name.startswith(".") else name
            return f"{self.prefix}.{name}" if self.prefix else name
        return self.prefix or "<nil>"

    def _field_error(self, e: _Err) -> FieldError:
        if e.code == _COMPOSITE:
            return FieldError(self.prefix or "<nil>", "Invalid", "", e.msg)
        path = self._path(e.name)
        value = "" if e.value is None else e.value
        if e.code == _REQUIRED:
            return FieldError(path, "Required")
        if e.code == _ENUM:
            vals = [v if isinstance(v, str) else json.dumps(v, separators=(",", ":")) for v in e.extra]
            return FieldError(path, "NotSupported", e.value, valid_values=vals)
        if e.code == _TOOLONG:
            unit = "byte" if e.extra == 1 else "bytes"
            return FieldError(path, "TooLong", value, f"may not be more than {e.extra} {unit}")
        if e.code in (_MAXITEMS, _MAXPROPS):
            noun = "item" if e.extra == 1 else "items"
            return FieldError(path, "TooMany", e.value, f"must have at most {e.extra} {noun}", limit=e.extra)
        if e.code == _TYPE:
            return FieldError(path, "TypeInvalid", value, e.msg)
        return FieldError(path, "Invalid", value, e.msg)

    # -- validators --

    def _type_err(self, path: str, type_name: str, value: str) -> _Err:
        return _Err(_TYPE, path, value, f"{path} in {self.IN} must be of type {type_name}: {go_quote(value)}")

    def validate(self, s: dict[str, Any], data: Any, path: str) -> list[_Err]:
        errs: list[_Err] = []
        if not isinstance(s, dict):
            return errs
        types = _types(s)
        raw_fmt = s.get("format") or ""
        # apiextensions drops formats it does not support (int32, double, ...) before validating
        fmt = raw_fmt if isinstance(raw_fmt, str) and format_checker(raw_fmt) else ""
        if data is None:
            if types and "null" not in types and not s.get("nullable"):
                errs.append(self._type_err(path, ",".join(types), "null"))
            if s.get("enum"):
                errs.append(self._enum_err(path, None, s["enum"]))
            return errs
        kind, sch = _kind(data)
        if types or fmt:
            e = self._check_type(types, fmt, kind, sch, data, path)
            if e is not None:
                errs.append(e)
        errs.extend(self._schema_props(s, data, path))
        if kind == "string":
            e = self._check_string(s, data, path)
            if e is not None:
                errs.append(e)
            if fmt and not format_checker(fmt)(data):  # type: ignore[misc]
                errs.append(_Err(_TYPE, path, data, f"{path} in {self.IN} must be of type {raw_fmt}: {go_quote(data)}"))
        elif kind in ("int", "float"):
            errs.extend(self._check_number(s, data, path))
        elif kind == "slice":
            errs.extend(self._check_slice(s, data, path))
        enum = s.get("enum")
        if enum and not any(_json_equal(data, v) for v in enum):
            errs.append(self._enum_err(path, data, enum))
        if kind == "map":
            errs.extend(self._check_object(s, data, path))
        return errs

    def _enum_err(self, path: str, data: Any, enum: list[Any]) -> _Err:
        shown = "[" + " ".join(str(v) for v in enum) + "]"
        return _Err(_ENUM, path, data, f"{path} in {self.IN} should be one of {shown}", list(enum))

    def _check_type(self, types: list[str], fmt: str, kind: str, sch: str, data: Any, path: str) -> _Err | None:
        data_fmt = {"int": "int64", "float": "float64"}.get(kind, "")
        float_int = sch == "number" and math.isfinite(data) and float(data).is_integer() and "integer" in types
        int_float = sch == "integer" and "number" in types
        if kind not in ("string", "slice") and fmt and not (sch in types or data_fmt == fmt or float_int or int_float):
            return self._type_err(path, fmt, data_fmt)
        if not ("number" in types or "integer" in types) and fmt and kind in ("string", "slice"):
            return None
        if not (sch in types or float_int or int_float):
            return self._type_err(path, ",".join(types), sch)
        return None

    def _check_string(self, s: dict[str, Any], data: str, path: str) -> _Err | None:
        mx, mn, pattern = s.get("maxLength"), s.get("minLength"), s.get("pattern")
        n = len(data)
        if isinstance(mx, int) and n > mx:
            return _Err(_TOOLONG, path, data, f"{path} in {self.IN} should be at most {mx} chars long", mx)
        if isinstance(mn, int) and n < mn:
            return _Err(_OTHER, path, data, f"{path} in {self.IN} should be at least {mn} chars long")
        if isinstance(pattern, str) and pattern:
            rx = _regex(pattern)
            if rx is not None and not rx.search(data):
                return _Err(_OTHER, path, data, f"{path} in {self.IN} should match '{pattern}'")
        return None

    def _check_number(self, s: dict[str, Any], data: int | float, path: str) -> list[_Err]:
        out: list[_Err] = []
        is_int = isinstance(data, int)
        mult = s.get("multipleOf")
        if isinstance(mult, (int, float)) and not isinstance(mult, bool) and mult != 0:
            if is_int and float(mult).is_integer():
                factor = int(mult)
                ok = factor > 0 and data % factor == 0 or factor < 0 and data % -factor == 0
                shown = str(factor)
            else:
                q = (1 / mult * data) if mult < 1 else data / mult
                ok = math.isfinite(q) and float(q).is_integer()
                shown = go_float(float(mult))
            if not ok:
                out.append(_Err(_OTHER, path, data, f"{path} in {self.IN} should be a multiple of {shown}"))
        for key, excl_key, cmp_word in (("minimum", "exclusiveMinimum", "greater"),
                                        ("maximum", "exclusiveMaximum", "less")):
            bound = s.get(key)
            if not isinstance(bound, (int, float)) or isinstance(bound, bool):
                continue
            excl = bool(s.get(excl_key))
            b: int | float = int(bound) if is_int else float(bound)
            if cmp_word == "greater":
                bad = data <= b if excl else data < b
            else:
                bad = data >= b if excl else data > b
            if bad:
                rel = f"{cmp_word} than" if excl else f"{cmp_word} than or equal to"
                out.append(_Err(_OTHER, path, data, f"{path} in {self.IN} should be {rel} {_num(b)}"))
        return out

    def _check_slice(self, s: dict[str, Any], data: list[Any], path: str) -> list[_Err]:
        out: list[_Err] = []
        items = s.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(data):
                out.extend(self.validate(items, v, f"{path}[{i}]"))
        elif isinstance(items, list):
            for i, sub in enumerate(items[: len(data)]):
                out.extend(self.validate(sub, data[i], f"{path}[{i}]"))
        size = len(data)
        mn, mx = s.get("minItems"), s.get("maxItems")
        if isinstance(mn, int) and size < mn:
            out.append(_Err(_OTHER, path, size, f"{path} in {self.IN} should have at least {mn} items"))
        if isinstance(mx, int) and size > mx:
            out.append(_Err(_MAXITEMS, path, size, f"{path} in {self.IN} should have at most {mx} items", mx))
        if s.get("uniqueItems"):
            for i in range(size):
                if any(_json_equal(data[i], data[j]) for j in range(i)):
                    out.append(_Err(_OTHER, path, None, f"{path} in {self.IN} shouldn't contain duplicates"))
                    break
        return out

    def _check_object(self, s: dict[str, Any], data: dict[str, Any], path: str) -> list[_Err]:
        n = len(data)
        mn, mx = s.get("minProperties"), s.get("maxProperties")
        if isinstance(mn, int) and n < mn:
            return [_Err(_OTHER, path, n, f"{path} in {self.IN} should have at least {mn} properties")]
        if isinstance(mx, int) and n > mx:
            return [_Err(_MAXPROPS, path, n, f"{path} in {self.IN} should have at most {mx} properties", mx)]
        out: list[_Err] = []
        props = s.get("properties") or {}
        ap = s.get("additionalProperties")
        if ap is False:
            for k in data:
                if k not in props:
                    out.append(_Err(_OTHER, path, k, f"{path}.{k} in {self.IN} is a forbidden property"))
        elif isinstance(ap, dict):
            for k, v in data.items():
                if k not in props:
                    out.extend(self.validate(ap, v, f"{path}.{k}"))
        for name, psch in props.items():
            if name in data:
                out.extend(self.validate(psch, data[name], f"{path}.{name}" if path else name))
        for name in s.get("required") or []:
            if name not in data:
                out.append(_Err(_REQUIRED, f"{path}.{name}", None, f"{path}.{name} in {self.IN} is required"))
        return out

    def _schema_props(self, s: dict[str, Any], data: Any, path: str) -> list[_Err]:
        out: list[_Err] = []
        qp = go_quote(path)
        any_of = s.get("anyOf")
        if isinstance(any_of, list) and any_of:
            best: list[_Err] | None = None
            for sub in any_of:
                r = self.validate(sub, data, path)
                if not r:
                    best = None
                    break
                if best is None or len(r) < len(best):
                    best = r
            else:
                out.append(_Err(_COMPOSITE, path, msg=f"{qp} must validate at least one schema (anyOf)"))
            if best:
                out.extend(best)
        one_of = s.get("oneOf")
        if isinstance(one_of, list) and one_of:
            valid = 0
            best = None
            for sub in one_of:
                r = self.validate(sub, data, path)
                if not r:
                    valid += 1
                    best = None
                elif valid == 0 and (best is None or len(r) < len(best)):
                    best = r
            if valid != 1:
                more = "Found none valid" if valid == 0 else f"Found {valid} valid alternatives"
                out.append(_Err(_COMPOSITE, path, msg=f"{qp} must validate one and only one schema (oneOf). {more}"))
                if best:
                    out.extend(best)
        all_of = s.get("allOf")
        if isinstance(all_of, list) and all_of:
            valid = 0
            for sub in all_of:
                r = self.validate(sub, data, path)
                valid += not r
                out.extend(r)
            if valid != len(all_of):
                more = ". None validated" if valid == 0 else ""
                out.append(_Err(_COMPOSITE, path, msg=f"{qp} must validate all the schemas (allOf){more}"))
        not_s = s.get("not")
        if isinstance(not_s, dict) and not self.validate(not_s, data, path):
            out.append(_Err(_COMPOSITE, path, msg=f"{qp} must not validate the schema (not)"))
        return out


def go_sharp_value(v: Any) -> str:
    """Go's %#v of a decoded JSON value (map[string]interface {}{...} and friends)."""
    if v is None:
        return "interface {}(nil)"
    if v is True or v is False:
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        return go_float(v)
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_elem(x) for x in v) + "}"
    items = ", ".join(f"{go_quote(k)}:{_elem(v[k])}" for k in sorted(v))
    return "map[string]interface {}{" + items + "}"


def _elem(v: Any) -> str:
    # inside an interface{} container Go prints nil as plain "interface {}(nil)" too
    return go_sharp_value(v)
