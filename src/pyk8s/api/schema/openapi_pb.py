"""/openapi/v2 in its protobuf form (application/com.github.proto-openapi.spec.v2@v1.0+protobuf).

kubectl 1.27 and 1.28 ask for this form before `replace` and accept no other. The wire
format is gnostic's openapi.v2.Document; we encode the swagger dict directly with the
protocol's field numbers (a small hand-written protobuf writer: the document is built
once per registry generation and cached by the caller).
"""

from __future__ import annotations

import struct
from typing import Any

import orjson

__all__ = ["document_bytes"]


def _varint(n: int) -> bytes:
    if n < 0:
        n &= (1 << 64) - 1
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _ld(num: int, payload: bytes) -> bytes:
    return _varint((num << 3) | 2) + _varint(len(payload)) + payload


def _str(num: int, v: str) -> bytes:
    return _ld(num, v.encode())


def _bool(num: int, v: bool) -> bytes:
    return _varint(num << 3) + (b"\x01" if v else b"\x00")


def _int(num: int, v: int) -> bytes:
    return _varint(num << 3) + _varint(int(v))


def _double(num: int, v: float) -> bytes:
    return _varint((num << 3) | 1) + struct.pack("<d", float(v))


def _any(num: int, v: Any) -> bytes:
    # gnostic's Any: field 2 holds the value as YAML text (JSON is YAML)
    return _ld(num, _str(2, orjson.dumps(v).decode()))


def _extensions(num: int, d: dict[str, Any]) -> bytes:
    out = b""
    for k, v in d.items():
        if k.startswith("x-"):
            out += _ld(num, _str(1, k) + _any(2, v))
    return out


# Schema fields: json key -> (field number, kind)
_SCHEMA_SCALARS = {
    "$ref": (1, "s"), "format": (2, "s"), "title": (3, "s"), "description": (4, "s"),
    "multipleOf": (6, "d"), "maximum": (7, "d"), "exclusiveMaximum": (8, "b"), "minimum": (9, "d"),
    "exclusiveMinimum": (10, "b"), "maxLength": (11, "i"), "minLength": (12, "i"), "pattern": (13, "s"),
    "maxItems": (14, "i"), "minItems": (15, "i"), "uniqueItems": (16, "b"), "maxProperties": (17, "i"),
    "minProperties": (18, "i"), "discriminator": (26, "s"), "readOnly": (27, "b"),
}


def _scalar(num: int, kind: str, v: Any) -> bytes:
    if kind == "s":
        return _str(num, str(v))
    if kind == "b":
        return _bool(num, bool(v))
    if kind == "i":
        return _int(num, int(v))
    return _double(num, float(v))


def schema(s: dict[str, Any]) -> bytes:
    out = b""
    for k, v in s.items():
        if k in _SCHEMA_SCALARS:
            num, kind = _SCHEMA_SCALARS[k]
            out += _scalar(num, kind, v)
        elif k == "default":
            out += _any(5, v)
        elif k == "example":
            out += _any(30, v)
        elif k == "required":
            for r in v:
                out += _str(19, r)
        elif k == "enum":
            for e in v:
                out += _any(20, e)
        elif k == "additionalProperties":
            inner = _bool(2, v) if isinstance(v, bool) else _ld(1, schema(v))
            out += _ld(21, inner)
        elif k == "type":
            types = v if isinstance(v, list) else [v]
            out += _ld(22, b"".join(_str(1, t) for t in types))
        elif k == "items":
            items = v if isinstance(v, list) else [v]
            out += _ld(23, b"".join(_ld(1, schema(i)) for i in items))
        elif k == "allOf":
            for sub in v:
                out += _ld(24, schema(sub))
        elif k == "properties":
            out += _ld(25, b"".join(_ld(1, _str(1, name) + _ld(2, schema(p))) for name, p in v.items()))
    return out + _extensions(31, s)


# Non-body parameter sub-schemas: query, path and header differ only in field numbering
_QUERY = {"required": (1, "b"), "in": (2, "s"), "description": (3, "s"), "name": (4, "s"),
          "allowEmptyValue": (5, "b"), "type": (6, "s"), "format": (7, "s"), "collectionFormat": (9, "s"),
          "uniqueItems": (20, "b")}
_PATH = {"required": (1, "b"), "in": (2, "s"), "description": (3, "s"), "name": (4, "s"), "type": (5, "s"),
         "format": (6, "s"), "collectionFormat": (8, "s"), "uniqueItems": (19, "b")}
_SUBSCHEMA = {"query": (3, _QUERY, 23), "path": (4, _PATH, 22), "header": (1, _PATH, 22)}


def parameter(p: dict[str, Any]) -> bytes:
    if "$ref" in p:
        return _ld(2, _str(1, p["$ref"]) + (_str(2, p["description"]) if p.get("description") else b""))
    if p.get("in") == "body":
        body = b""
        if p.get("description"):
            body += _str(1, p["description"])
        body += _str(2, p.get("name", "body")) + _str(3, "body")
        if p.get("required"):
            body += _bool(4, True)
        if "schema" in p:
            body += _ld(5, schema(p["schema"]))
        body += _extensions(6, p)
        return _ld(1, _ld(1, body))
    where = p.get("in", "query")
    slot, table, ext = _SUBSCHEMA.get(where, _SUBSCHEMA["query"])
    sub = b"".join(_scalar(table[k][0], table[k][1], v) for k, v in p.items() if k in table)
    sub += _extensions(ext, p)
    return _ld(1, _ld(2, _ld(slot, sub)))


def responses(rs: dict[str, Any]) -> bytes:
    out = b""
    for code, r in rs.items():
        if code.startswith("x-"):
            continue
        if "$ref" in r:
            val = _ld(2, _str(1, r["$ref"]))
        else:
            resp = _str(1, r.get("description", ""))
            if "schema" in r:
                resp += _ld(2, _ld(1, schema(r["schema"])))
            resp += _extensions(5, r)
            val = _ld(1, resp)
        out += _ld(1, _str(1, code) + _ld(2, val))
    return out + _extensions(2, rs)


_OPS = {"get": 2, "put": 3, "post": 4, "delete": 5, "options": 6, "head": 7, "patch": 8}


def operation(op: dict[str, Any]) -> bytes:
    out = b""
    for t in op.get("tags") or []:
        out += _str(1, t)
    for k, num in (("summary", 2), ("description", 3), ("operationId", 5)):
        if op.get(k):
            out += _str(num, op[k])
    for v in op.get("produces") or []:
        out += _str(6, v)
    for v in op.get("consumes") or []:
        out += _str(7, v)
    for p in op.get("parameters") or []:
        out += _ld(8, parameter(p))
    if "responses" in op:
        out += _ld(9, responses(op["responses"]))
    for v in op.get("schemes") or []:
        out += _str(10, v)
    if op.get("deprecated"):
        out += _bool(11, True)
    return out + _extensions(13, op)


def path_item(item: dict[str, Any]) -> bytes:
    out = b""
    if "$ref" in item:
        out += _str(1, item["$ref"])
    for name, num in _OPS.items():
        if name in item:
            out += _ld(num, operation(item[name]))
    for p in item.get("parameters") or []:
        out += _ld(9, parameter(p))
    return out + _extensions(10, item)


def document_bytes(doc: dict[str, Any]) -> bytes:
    out = _str(1, doc.get("swagger", "2.0"))
    info = doc.get("info") or {}
    out += _ld(2, _str(1, info.get("title", "")) + _str(2, info.get("version", "")))
    paths = b"".join(_ld(2, _str(1, p) + _ld(2, path_item(item))) for p, item in (doc.get("paths") or {}).items())
    out += _ld(8, paths)
    defs = b"".join(_ld(1, _str(1, n) + _ld(2, schema(s))) for n, s in (doc.get("definitions") or {}).items())
    out += _ld(9, defs)
    return out + _extensions(16, doc)
