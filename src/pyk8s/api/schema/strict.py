"""Strict decoding of built-in kinds, as kube-apiserver's JSON decoder does it.

Upstream decodes request bodies into Go structs with sigs.k8s.io/json. Two kinds of
error come out of that, and both are reproduced here from the v1.33 OpenAPI schemas:

* strict errors (fieldValidation=Strict/Warn): `unknown field "spec.containers[0].foo"`,
  one per field the Go structs do not have;
* decode errors: a value of the wrong JSON type, e.g.
  `json: cannot unmarshal string into Go struct field ContainerPort.spec.containers.ports.containerPort of type int32`,
  plus the texts of the custom unmarshalers (Quantity, Time, IntOrString, []byte).

Schemas are compiled once per group/version/kind into small node graphs and cached,
because these checks run on every write.
"""

from __future__ import annotations

import functools
import re
import threading
from typing import Any

from pyk8s.api.definitions import definition_for_gvk, definitions

from ..validation._memo import KnownValid, content_key, memo_str
from ._gocompat import _days_in, base64_error, go_number_literal, parse_rfc3339_error, quantity_error

__all__ = [
    "unknown_fields",
    "drop_unknown_fields",
    "type_errors",
    "check_fields",
    "decode_error",
    "unknown_fields_structural",
    "strict_decoding_message",
    "cannot_handle_message",
    "object_meta_unknown_fields",
    "object_meta_type_error",
]

# node kinds
ANY, STRUCT, MAP, ARRAY, STRING, INT, FLOAT, BOOL, BYTES, QUANTITY, INTORSTR, TIME, MICROTIME = range(13)

_META = "io.k8s.apimachinery.pkg.apis.meta.v1."
# definitions with custom Go unmarshalers: decoded by hand, never walked field by field
_SPECIAL = {
    "io.k8s.apimachinery.pkg.api.resource.Quantity": QUANTITY,
    "io.k8s.apimachinery.pkg.util.intstr.IntOrString": INTORSTR,
    _META + "Time": TIME,
    _META + "MicroTime": MICROTIME,
    _META + "FieldsV1": ANY,
    _META + "Patch": ANY,
    "io.k8s.apimachinery.pkg.runtime.RawExtension": ANY,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSON": ANY,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrArray": ANY,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrBool": ANY,
    "io.k8s.apiextensions-apiserver.pkg.apis.apiextensions.v1.JSONSchemaPropsOrStringArray": ANY,
}
_SPECIAL_GOTYPE = {
    QUANTITY: "resource.Quantity",
    INTORSTR: "intstr.IntOrString",
    TIME: "v1.Time",
    MICROTIME: "v1.MicroTime",
    ANY: "interface {}",
}
# the JSON strict decoder stops collecting after this many (sigs.k8s.io/json)
_MAX_STRICT_ERRORS = 100


class _Node:
    __slots__ = ("kind", "props", "elem", "gotype", "goname", "walk", "bits")

    def __init__(self, kind: int, gotype: str = "", goname: str = "") -> None:
        self.kind = kind
        self.props: dict[str, _Node] = {}
        self.elem: _Node | None = None
        self.gotype = gotype
        self.goname = goname  # struct name without package, as Go's errors print it
        self.walk = True  # False when nothing below can hold an unknown field
        self.bits = 64


def _scalar_type(schema: dict[str, Any]) -> str:
    t = schema.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t or ""


class _Compiler:
    def __init__(self) -> None:
        self.defs = definitions()
        self.by_name: dict[str, _Node] = {}

    def ref(self, name: str) -> _Node:
        node = self.by_name.get(name)
        if node is not None:
            return node
        special = _SPECIAL.get(name)
        if special is not None:
            node = _Node(special, _SPECIAL_GOTYPE.get(special, "string"))
            node.walk = False
            self.by_name[name] = node
            return node
        schema = self.defs.get(name, {})
        parts = name.rsplit(".", 2)
        goname = parts[-1]
        gotype = f"{parts[-2]}.{goname}" if len(parts) >= 2 else goname
        if "properties" in schema or (_scalar_type(schema) == "object" and "additionalProperties" not in schema):
            # a Go struct (possibly empty): registered before compiling fields, for cycles
            node = _Node(STRUCT, gotype, goname)
            self.by_name[name] = node
            for pname, psch in schema.get("properties", {}).items():
                node.props[pname] = self.compile(psch)
            return node
        node = self.compile(schema)
        self.by_name[name] = node
        return node

    def compile(self, schema: dict[str, Any]) -> _Node:
        ref = schema.get("$ref")
        if ref:
            return self.ref(ref.rsplit("/", 1)[-1])
        if schema.get("x-kubernetes-preserve-unknown-fields"):
            return _leaf(ANY)
        t = _scalar_type(schema)
        if t == "object":
            ap = schema.get("additionalProperties")
            if "properties" in schema:
                node = _Node(STRUCT, "struct", "")
                for pname, psch in schema["properties"].items():
                    node.props[pname] = self.compile(psch)
                return node
            if isinstance(ap, dict):
                elem = self.compile(ap)
                node = _Node(MAP, "map[string]" + elem.gotype)
                node.elem = elem
                return node
            return _leaf(ANY)
        if t == "array":
            elem = self.compile(schema.get("items") or {})
            node = _Node(ARRAY, "[]" + elem.gotype)
            node.elem = elem
            return node
        if t == "string":
            return _leaf(BYTES, "[]uint8") if schema.get("format") == "byte" else _leaf(STRING, "string")
        if t == "integer":
            node = _leaf(INT, "int32" if schema.get("format") == "int32" else "int64")
            node.bits = 32 if schema.get("format") == "int32" else 64
            return node
        if t == "number":
            return _leaf(FLOAT, "float32" if schema.get("format") == "float" else "float64")
        if t == "boolean":
            return _leaf(BOOL, "bool")
        return _leaf(ANY)


def _leaf(kind: int, gotype: str = "interface {}") -> _Node:
    node = _Node(kind, gotype)
    node.walk = False
    return node


def _settle_walk(root: _Node) -> None:
    """Mark containers that cannot contain a struct, so unknown-field walks skip them."""
    state: dict[int, bool] = {}

    def visit(n: _Node) -> bool:
        key = id(n)
        if key in state:
            return state[key]
        if n.kind == STRUCT:
            state[key] = True  # structs always need walking (and this breaks cycles)
            for child in n.props.values():
                visit(child)
            return True
        if n.kind in (MAP, ARRAY) and n.elem is not None:
            state[key] = True
            n.walk = visit(n.elem)
            state[key] = n.walk
            return n.walk
        state[key] = False
        return False

    visit(root)


_lock = threading.Lock()
_compiler: _Compiler | None = None
_cache: dict[tuple[str, str, str], _Node | None] = {}


def _root(group: str, version: str, kind: str) -> _Node | None:
    key = (group, version, kind)
    try:
        return _cache[key]
    except KeyError:
        pass
    global _compiler
    with _lock:
        if key in _cache:
            return _cache[key]
        if _compiler is None:
            _compiler = _Compiler()
        name = definition_for_gvk(group, version, kind)
        node = _compiler.ref(name) if name else None
        if node is not None:
            _settle_walk(node)
        _cache[key] = node
        return node


_meta: _Node | None = None


def _meta_node() -> _Node:
    global _meta, _compiler
    if _meta is None:
        with _lock:
            if _compiler is None:
                _compiler = _Compiler()
            node = _compiler.ref(_META + "ObjectMeta")
            _settle_walk(node)
            _meta = node
    return _meta


# --- unknown fields -----------------------------------------------------------------


def _unknown(node: _Node, val: Any, path: str, out: list[str], drop: bool = False) -> None:
    kind = node.kind
    if kind == STRUCT:
        if type(val) is not dict:
            return
        props = node.props
        gone: list[str] = []
        for key, v in val.items():
            child = props.get(key)
            if child is None:
                if len(out) < _MAX_STRICT_ERRORS:
                    out.append(f"{path}.{key}" if path else key)
                if drop:
                    gone.append(key)
            elif child.walk and v is not None:
                _unknown(child, v, f"{path}.{key}" if path else key, out, drop)
        for key in gone:
            del val[key]
    elif kind == ARRAY:
        if type(val) is list:
            elem = node.elem
            for i, v in enumerate(val):
                if v is not None:
                    _unknown(elem, v, f"{path}[{i}]", out, drop)  # type: ignore[arg-type]
    elif kind == MAP:
        if type(val) is dict:
            elem = node.elem
            for key, v in val.items():
                if v is not None:
                    _unknown(elem, v, f"{path}.{key}" if path else key, out, drop)  # type: ignore[arg-type]


def unknown_fields(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """Paths of the fields the Go types of group/version/kind do not have, in document order.

    Paths are upstream's: `spec.containers[0].ports[0].containnerPort`, `metadata.foo`,
    `foo` at the top. Kinds without a built-in schema report nothing.
    """
    node = _root(group, version, kind)
    if node is None:
        return []
    out: list[str] = []
    _unknown(node, obj, "", out)
    return out


def drop_unknown_fields(group: str, version: str, kind: str, obj: Any) -> None:
    """Remove the fields the Go types of group/version/kind do not have, as decoding into them does
    (a walk, not the reported paths: keys may be empty or hold dots)."""
    node = _root(group, version, kind)
    if node is not None:
        _unknown(node, obj, "", [], drop=True)


def object_meta_type_error(kind: str, version: str, meta: Any) -> str | None:
    """The decode error of a custom resource's metadata, as for built-in kinds (None if it decodes);
    nulls in it become what Go decodes them to, as for built-in kinds."""
    node = _meta_node()
    w = _TypeWalk()
    w.stack.append("metadata")
    w.check(node, meta, "ObjectMeta")
    errs = _wrapped_type_errors(w, kind, version)
    return errs[0] if errs else None


def object_meta_unknown_fields(meta: Any, prefix: str = "metadata", drop: bool = False) -> list[str]:
    """Unknown fields of an ObjectMeta value, prefixed like upstream (`metadata.foo`).

    With drop=True they are also removed, as decoding into ObjectMeta does.
    """
    out: list[str] = []
    _unknown(_meta_node(), meta, prefix, out, drop)
    return out


def strict_decoding_message(kind: str, version: str, paths: list[str], target_kind: str | None = None) -> str:
    """The 400 message for unknown fields under fieldValidation=Strict."""
    errs = ", ".join(f'unknown field "{p}"' for p in paths)
    return cannot_handle_message(kind, version, f"strict decoding error: {errs}", target_kind)


def cannot_handle_message(kind: str, version: str, err: str, target_kind: str | None = None) -> str:
    """Upstream's transformDecodeError wrapping of a decode error."""
    return f'{kind} in version "{version}" cannot be handled as a {target_kind or kind}: {err}'


# --- type errors ----------------------------------------------------------------------


def _desc(v: Any) -> str:
    """How Go's decoder names a JSON value it could not store."""
    if v is True or v is False:
        return "bool"
    if isinstance(v, (int, float)):
        return "number"
    if isinstance(v, str):
        return "string"
    if isinstance(v, list):
        return "array"
    return "object"


class _TypeWalk:
    """Go's decode of obj into its types: type errors, and (when paths are passed) the unknown
    fields on the way, as _unknown finds them. Paths are None where nothing below can be unknown."""

    __slots__ = ("saved", "fatal", "stack", "unknown", "nulls")

    def __init__(self) -> None:
        self.saved: list[str] = []  # Go's saveError: decoding goes on, the first one wins
        self.fatal: str | None = None  # an unmarshaler's error: decoding stops there
        self.stack: list[str] = []
        self.unknown: list[str] = []
        self.nulls = False  # whether a null was decoded away (the object was changed)

    def type_err(self, value: str, gotype: str, sname: str) -> str:
        if self.stack:
            return (
                f"json: cannot unmarshal {value} into Go struct field {sname}.{'.'.join(self.stack)} of type {gotype}"
            )
        return f"json: cannot unmarshal {value} into Go value of type {gotype}"

    def check(self, node: _Node, v: Any, sname: str, path: str | None = None) -> None:
        if v is None or self.fatal is not None:
            return
        kind = node.kind
        if kind == STRUCT:
            if type(v) is dict:
                props = node.props
                stack = self.stack
                nulls: list[str] | None = None
                for key, fv in v.items():
                    child = props.get(key)
                    if child is None:
                        if path is not None and len(self.unknown) < _MAX_STRICT_ERRORS:
                            self.unknown.append(f"{path}.{key}" if path else key)
                        continue
                    if fv is None:
                        # as Go decodes null into a field: a nil pointer, slice or map, or a zero
                        # struct: the field is absent either way
                        if nulls is None:
                            nulls = []
                        nulls.append(key)
                        continue
                    # _scalar_fits inlined: most fields are well-typed strings, bools and ints
                    ck = child.kind
                    if ck == STRING:
                        if type(fv) is str:
                            continue
                    elif ck == BOOL:
                        if fv is True or fv is False:
                            continue
                    elif ck == INT and type(fv) is int and -(1 << (child.bits - 1)) <= fv < 1 << (child.bits - 1):
                        continue
                    stack.append(key)
                    if path is not None and child.walk:
                        self.check(child, fv, node.goname, f"{path}.{key}" if path else key)
                    else:
                        self.check(child, fv, node.goname)
                    stack.pop()
                    if self.fatal is not None:
                        return
                if nulls is not None:
                    self.nulls = True
                    for key in nulls:
                        del v[key]
            else:
                self.saved.append(self.type_err(_desc(v), node.gotype, sname))
        elif kind == ARRAY:
            if type(v) is list:
                elem = node.elem
                if None in v:
                    self._zero_nulls(elem, v, range(len(v)))  # type: ignore[arg-type]
                if path is not None and elem.walk:  # type: ignore[union-attr]
                    for i, item in enumerate(v):
                        self.check(elem, item, sname, f"{path}[{i}]")  # type: ignore[arg-type]
                    return
                for item in v:
                    if not _scalar_fits(elem, item):  # type: ignore[arg-type]
                        self.check(elem, item, sname)  # type: ignore[arg-type]
            else:
                self.saved.append(self.type_err(_desc(v), node.gotype, sname))
        elif kind == MAP:
            if type(v) is dict:
                elem = node.elem
                if None in v.values():
                    self._zero_nulls(elem, v, list(v))  # type: ignore[arg-type]
                if path is not None and elem.walk:  # type: ignore[union-attr]
                    for key, item in v.items():
                        self.check(elem, item, sname, f"{path}.{key}" if path else key)  # type: ignore[arg-type]
                    return
                for item in v.values():
                    if not _scalar_fits(elem, item):  # type: ignore[arg-type]
                        self.check(elem, item, sname)  # type: ignore[arg-type]
            else:
                self.saved.append(self.type_err(_desc(v), node.gotype, sname))
        elif kind == STRING:
            if type(v) is not str:
                self.saved.append(self.type_err(_desc(v), "string", sname))
        elif kind == INT:
            err = _int_err(v, node.bits)
            if err:
                self.saved.append(self.type_err(err, node.gotype, sname))
        elif kind == FLOAT:
            if v is True or v is False or not isinstance(v, (int, float)):
                self.saved.append(self.type_err(_desc(v), node.gotype, sname))
        elif kind == BOOL:
            if v is not True and v is not False:
                self.saved.append(self.type_err(_desc(v), "bool", sname))
        elif kind == BYTES:
            if type(v) is str:
                err = base64_error(v)
                if err:
                    self.saved.append(err)
            else:
                self.saved.append(self.type_err(_desc(v), "[]uint8", sname))
        elif kind == QUANTITY:
            if isinstance(v, str):
                err = _quantity_error(v.strip())
            elif isinstance(v, (int, float)) and v is not True and v is not False:
                err = quantity_error(go_number_literal(v))
            else:
                err = quantity_error("x")  # bool, array or object: never a quantity
            if err:
                self.fatal = err
        elif kind == INTORSTR:
            if type(v) is not str:
                err = _int_err(v, 32)
                if err:
                    self.fatal = self.type_err(err, "int32", sname)
        elif kind in (TIME, MICROTIME):
            if type(v) is str:
                err = _time_error(v, kind == MICROTIME)
                if err:
                    self.fatal = err
            else:
                self.fatal = self.type_err(_desc(v), "string", sname)


    def _zero_nulls(self, elem: _Node, container: Any, keys: Any) -> None:
        """A null element of a slice or map decodes, in Go, as its element type's zero value."""
        zero = _ZERO.get(elem.kind, _NO_ZERO)
        if zero is _NO_ZERO:
            return  # a nil map, slice or pointer: null stays null
        for k in keys:
            if container[k] is None:
                container[k] = {} if zero is dict else zero
                self.nulls = True


# Go's zero values of the element types a null list or map element decodes into
_NO_ZERO = object()
_ZERO: dict[int, Any] = {STRUCT: dict, STRING: "", INT: 0, FLOAT: 0, BOOL: False, QUANTITY: "0", INTORSTR: 0}


@functools.lru_cache(maxsize=16384)
def _time_error(v: str, micro: bool) -> str | None:
    """parse_rfc3339_error, memoised: most timestamps of an object (transition times, managedFields
    times) are the same on every write of it. A time in the form servers and clients write
    (2006-01-02T15:04:05[.frac]Z) is settled by one match and range checks: a Lease renewal's
    renewTime is new on every write, and the full parser took ~20 us of it."""
    m = _PLAIN_TIME.fullmatch(v)
    if m is not None:
        year, month, day, hour, minute, sec, frac = m.groups()
        mo = int(month)
        # what the full parser accepts on this path: exactly six fraction digits for MicroTime
        if ((len(frac) == 7 if micro else True) and 1 <= mo <= 12 and int(hour) < 24 and int(minute) < 60
                and int(sec) < 60 and 1 <= int(day) <= _days_in(mo, int(year))):
            return None
    return parse_rfc3339_error(v, micro=micro)  # anything else, and every error text


_PLAIN_TIME = re.compile(r"([0-9]{4})-([0-9]{2})-([0-9]{2})T([0-9]{2}):([0-9]{2}):([0-9]{2})(|\.[0-9]+)Z", re.ASCII)


def _scalar_fits(node: _Node, v: Any) -> bool:
    """True for a string, bool or in-range int where the schema wants one: check() would find
    nothing there, so walks skip the call (most leaves of an object are these)."""
    kind = node.kind
    if kind == STRING:
        return type(v) is str
    if kind == BOOL:
        return v is True or v is False
    if kind == INT and type(v) is int:
        lim = 1 << (node.bits - 1)
        return -lim <= v < lim
    return False


# quantity texts repeat across requests (100m, 64Mi, ...)
_quantity_error = memo_str(key_max=64)(quantity_error)


def _int_err(v: Any, bits: int) -> str | None:
    """Go's literalStore into an intN: None when it fits, else the error's value text."""
    if v is True or v is False:
        return "bool"
    if type(v) is int:
        lim = 1 << (bits - 1)
        if -lim <= v < lim:
            return None
        return f"number {v}"
    if isinstance(v, float):
        return f"number {go_number_literal(v)}"  # ParseInt refuses any fraction or exponent
    if isinstance(v, int):
        return None
    return _desc(v)


def _type_walk(group: str, version: str, kind: str, obj: Any) -> _TypeWalk | None:
    node = _root(group, version, kind)
    if node is None:
        return None
    w = _TypeWalk()
    w.check(node, obj, node.goname)
    return w


def decode_error(group: str, version: str, kind: str, obj: Any) -> str | None:
    """The error text upstream's decoder reports for obj, unwrapped; None if it decodes.

    Go keeps decoding after a plain type mismatch and reports the first one, but an
    unmarshaler's error (Quantity, Time, IntOrString) aborts at once and wins.
    """
    w = _type_walk(group, version, kind, obj)
    if w is None:
        return None
    if w.fatal is not None:
        return w.fatal
    return w.saved[0] if w.saved else None


def check_fields(group: str, version: str, kind: str, obj: Any) -> tuple[list[str], list[str]]:
    """type_errors and unknown_fields in one walk of obj. The unknown fields are complete only
    when there are no type errors (a decode that fails reports those, not unknown fields)."""
    node = _root(group, version, kind)
    if node is None:
        return [], []
    w = _TypeWalk()
    # Objects of one template share their spec: one the walk found nothing in adds nothing to
    # the walk of the rest (errors and unknown fields are the rest's alone), so it is skipped.
    spec = obj.get("spec") if type(obj) is dict else None
    key = None
    if type(spec) is dict and spec:
        ck = content_key(spec, 16384)
        if ck is not None:
            key = f"{group}/{version}/{kind}\0".encode() + ck
            if key in _CLEAN_SPECS:
                rest = {k: v for k, v in obj.items() if k != "spec"}
                w.check(node, rest, node.goname, "")
                if w.nulls:  # the fields the walk decoded away went from the copy only
                    for k in [k for k in obj if k != "spec" and k not in rest]:
                        del obj[k]
                return _wrapped_type_errors(w, kind, version), w.unknown
    w.check(node, obj, node.goname, "")
    if key is not None and not w.saved and w.fatal is None and not w.unknown and not w.nulls:
        _CLEAN_SPECS.add(key)
    return _wrapped_type_errors(w, kind, version), w.unknown


_CLEAN_SPECS = KnownValid()


def type_errors(group: str, version: str, kind: str, obj: Any) -> list[str]:
    """Upstream-like decode errors for values of the wrong JSON type, wrapped as the API
    server returns them (`Pod in version "v1" cannot be handled as a Pod: json: ...`).

    The first entry is the one upstream reports; the rest, in document order, are the
    other mismatches found (upstream reports only one).
    """
    w = _type_walk(group, version, kind, obj)
    if w is None:
        return []
    return _wrapped_type_errors(w, kind, version)


def _wrapped_type_errors(w: _TypeWalk, kind: str, version: str) -> list[str]:
    errs = list(w.saved)
    if w.fatal is not None:
        errs.insert(0, w.fatal)
    return [cannot_handle_message(kind, version, e) for e in errs]


# --- custom resources -------------------------------------------------------------------


def unknown_fields_structural(schema: dict[str, Any] | None, obj: Any) -> list[str]:
    """Unknown fields of a custom resource, as its strict decoding reports them.

    Order follows upstream: unknown ObjectMeta fields first, then the fields pruning
    would drop (sorted), then unknown metadata fields of embedded resources. obj is
    not modified.
    """
    from .structural import embedded_meta_unknown_fields, pruned_paths

    out: list[str] = []
    if isinstance(obj, dict):
        meta = obj.get("metadata")
        if isinstance(meta, dict):
            out.extend(object_meta_unknown_fields(meta))
    out.extend(pruned_paths(schema, obj, root=True))
    out.extend(embedded_meta_unknown_fields(schema, obj))
    return out
