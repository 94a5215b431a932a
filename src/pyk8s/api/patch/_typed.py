"""Operations on wire-form values under a typed schema, as structured-merge-diff's `typed`
package performs them for server-side apply: the field set a value sets, the comparison of
two values, the apply merge, and removing a set of fields.

Values are JSON data; a member that is absent is `MISSING` (distinct from JSON null).
"""

from __future__ import annotations

import functools
from typing import Any

import orjson

from ._common import go_equal, go_json, go_json_plain, go_type_name, go_v
from ._schema import DEDUCED, LIST, MAP, SCALAR, TypeNode
from .fieldpath import PE, FieldSet, _pe_fields_key, _pe_rank, path_string

__all__ = ["MISSING", "TypedError", "to_field_set", "compare", "merge", "remove_items", "ensure_named_fields",
           "item_pe", "added_fields_v1", "changed_fields_v1", "changed_map_fields_v1"]


class _Missing:
    __slots__ = ()

    def __repr__(self) -> str:
        return "MISSING"


MISSING: Any = _Missing()


class TypedError(ValueError):
    """A value that does not fit its schema (smd's ValidationErrors)."""

    def __init__(self, errors: list[tuple[tuple[PE, ...], str]]) -> None:
        self.errors = errors
        super().__init__(self._text())

    def _text(self) -> str:
        rendered = [f"{path_string(p)}: {m}" for p, m in self.errors]
        if len(rendered) == 1:
            return rendered[0]
        return "\n".join(["errors:"] + ["  " + r for r in rendered])


def _kind(t: TypeNode | None, v: Any) -> str:
    """The effective kind of `v` under `t` (deduced types take the value's shape)."""
    if t is not None and t.kind != DEDUCED:
        return t.kind
    if isinstance(v, dict):
        return MAP
    if isinstance(v, list):
        return LIST
    return SCALAR


def _is_atomic(t: TypeNode | None, kind: str) -> bool:
    if t is None or t.kind == DEDUCED:
        # Deduced lists are atomic; deduced maps are granular.
        return kind == LIST
    return t.atomic


def _elem(t: TypeNode | None) -> TypeNode | None:
    if t is None or t.kind == DEDUCED:
        return None
    return t.elem()


def _field_type(t: TypeNode | None, name: str) -> tuple[TypeNode | None, bool]:
    """(type of map member `name`, whether it is a declared struct field)."""
    if t is None or t.kind == DEDUCED:
        return None, False
    if t.has_field(name):
        return t.field(name), True
    return t.elem(), False


def _undeclared(t: TypeNode | None, name: str) -> bool:
    return t is not None and t.kind == MAP and not t.has_field(name) and t.elem() is None


def item_pe(t: TypeNode | None, item: Any) -> PE:
    """The path element of a list item (by keys, by value, or raises for atomic lists)."""
    if t is not None and t.kind == LIST and t.list_type == "map":
        if item is None:
            raise ValueError("associative list with keys may not have a null element")
        if not isinstance(item, dict):
            raise ValueError("associative list with keys may not have non-map elements")
        fields: dict[str, Any] = {}
        plain = True
        for k in t.keys:
            if k in item:
                v = fields[k] = item[k]
            elif k in t.key_defaults:
                v = fields[k] = t.key_defaults[k]
            else:
                raise ValueError(f'associative list with keys has an element that omits key field "{k}" '
                                 "(and doesn't have default value)")
            if plain and type(v) is not str and type(v) is not int:
                plain = False
        if plain:  # the usual keys (name, type, containerPort...): memoised
            return _plain_key_pe(tuple(fields.items()))
        return ("k", go_json(fields, sort_keys=True))
    if isinstance(item, (dict, list)) and item:
        raise ValueError("associative list without keys has an element that's a map type")
    if type(item) is str:
        return _str_value_pe(item)
    return ("v", go_json(item, sort_keys=True))


@functools.lru_cache(maxsize=65536)
def _plain_key_pe(pairs: tuple[tuple[str, str | int], ...]) -> PE:
    """key_pe of key fields whose values are all strings or ints (exact types, so no bool or
    float shares a cache entry with an int). Written without json.dumps: keys that are new
    each time (every pod's kube-api-access-<random> volume) miss the memo."""
    fields = sorted(dict(pairs).items())
    return ("k", "{" + ",".join(go_json_plain(k) + ":" + go_json_plain(v) for k, v in fields) + "}")


@functools.lru_cache(maxsize=65536)
def _str_value_pe(item: str) -> PE:
    return ("v", go_json_plain(item))


def _index_items(t: TypeNode, items: list[Any], strict: bool, path: tuple[PE, ...],
                 errs: list[tuple[tuple[PE, ...], str]]) -> tuple[list[PE], dict[PE, list[Any]]]:
    pes: list[PE] = []
    by_pe: dict[PE, list[Any]] = {}
    for i, item in enumerate(items):
        try:
            pe = item_pe(t, item)
        except ValueError as e:
            errs.append((path, f"element {i}: {e}"))
            continue
        if pe in by_pe:
            if strict:
                errs.append((path, f"duplicate entries for key {_pe_text(pe)}"))
            by_pe[pe].append(item)
        else:
            by_pe[pe] = [item]
            pes.append(pe)
    return pes, by_pe


def _pe_text(pe: PE) -> str:
    from .fieldpath import pe_string

    return pe_string(pe)


def _check_type(t: TypeNode | None, v: Any, path: tuple[PE, ...], errs: list[tuple[tuple[PE, ...], str]]) -> bool:
    """Shape check of a value against a non-deduced type; records an error when it fails."""
    if v is None or t is None or t.kind == DEDUCED:
        return True
    if t.kind == MAP and not isinstance(v, dict):
        errs.append((path, f"expected map, got {_shape(v)}"))
        return False
    if t.kind == LIST and not isinstance(v, list):
        errs.append((path, f"expected list, got {_shape(v)}"))
        return False
    if t.kind == SCALAR:
        st = t.scalar_type
        if st == "numeric" and (isinstance(v, bool) or not isinstance(v, (int, float))):
            errs.append((path, f"expected numeric (int or float), got {go_type_name(v).replace('int64', 'int')}"))
            return False
        if st == "string" and not isinstance(v, str):
            errs.append((path, f"expected string, got &value.valueUnstructured{{Value:{_go_sharp_v(v)}}}"))
            return False
        if st == "boolean" and not isinstance(v, bool):
            errs.append((path, f"expected boolean, got {_shape(v)}"))
            return False
        if isinstance(v, (dict, list)):
            errs.append((path, f"expected any scalar, got {_shape(v)}"))
            return False
    return True


def _shape(v: Any) -> str:
    # smd prints the offending value with %v.
    return go_v(v)


def _go_sharp_v(v: Any) -> str:
    if isinstance(v, str):
        return go_json(v)
    if isinstance(v, dict):
        return "map[string]interface {}{" + ", ".join(f"{go_json(k)}:{_go_sharp_v(x)}" for k, x in sorted(v.items())) + "}"
    if isinstance(v, list):
        return "[]interface {}{" + ", ".join(_go_sharp_v(x) for x in v) + "}"
    return go_v(v)


# ---------------------------------------------------------------------------------------------
# ToFieldSet


def to_field_set(value: dict[str, Any], t: TypeNode, strict: bool = True) -> FieldSet:
    """The set of fields `value` sets. `strict` (for apply configurations) reports fields
    not declared in the schema, duplicate list keys and shape errors; otherwise (live
    objects) such parts are tolerated and treated as free-form."""
    errs: list[tuple[tuple[PE, ...], str]] = []
    out = FieldSet()
    if isinstance(value, dict):
        _fs_map_items(value, t, out, strict, (), errs)
    if errs and strict:
        raise TypedError(errs)
    return out


def _fs_child(v: Any, t: TypeNode | None, parent: FieldSet, pe: PE, declared: bool, strict: bool,
              path: tuple[PE, ...], errs: list[tuple[tuple[PE, ...], str]]) -> None:
    if v is None:
        parent.members.add(pe)
        return
    if strict and not _check_type(t, v, path, errs):
        return
    kind = _kind(t, v)
    if kind == SCALAR or (kind == MAP and not isinstance(v, dict)) or (kind == LIST and not isinstance(v, list)):
        parent.members.add(pe)
        return
    if _is_atomic(t, kind):
        parent.members.add(pe)
        return
    if kind == LIST:
        sub = FieldSet()
        assert t is not None
        pes, by_pe = _index_items(t, v, strict, path, errs)
        elem = _elem(t)
        for ipe in pes:
            items = by_pe[ipe]
            sub.members.add(ipe)
            if len(items) == 1:
                isub = FieldSet()
                _fs_item(items[0], elem, isub, strict, path + (ipe,), errs)
                if not isub.empty():
                    sub.children[ipe] = isub
        if not sub.empty():
            parent.children[pe] = sub
        if not declared:
            parent.members.add(pe)
        return
    # granular map
    if not v:
        parent.members.add(pe)
        return
    sub = FieldSet()
    _fs_map_items(v, t, sub, strict, path, errs)
    if not sub.empty():
        parent.children[pe] = sub
    if not declared:
        parent.members.add(pe)


def _fs_item(item: Any, t: TypeNode | None, out: FieldSet, strict: bool, path: tuple[PE, ...],
             errs: list[tuple[tuple[PE, ...], str]]) -> None:
    if item is None:
        return
    if strict and not _check_type(t, item, path, errs):
        return
    kind = _kind(t, item)
    if kind == MAP and isinstance(item, dict) and not _is_atomic(t, kind):
        _fs_map_items(item, t, out, strict, path, errs)


def _fs_map_items(v: dict[str, Any], t: TypeNode | None, out: FieldSet, strict: bool, path: tuple[PE, ...],
                  errs: list[tuple[tuple[PE, ...], str]]) -> None:
    for key, child in v.items():
        pe = ("f", key)
        if strict and _undeclared(t, key):
            errs.append((path + (pe,), "field not declared in schema"))
            continue
        ft, declared = _field_type(t, key)
        _fs_child(child, ft, out, pe, declared, strict, path + (pe,), errs)


# ---------------------------------------------------------------------------------------------
# Compare


def compare(lhs: dict[str, Any], rhs: dict[str, Any], t: TypeNode) -> tuple[FieldSet, FieldSet, FieldSet]:
    """(added, modified, removed) going from `lhs` to `rhs`. Non-leaf nodes (maps, list
    items, granular lists) that appear or vanish are reported as well, which is where the
    "." entries of Update managers come from."""
    added, modified, removed = FieldSet(), FieldSet(), FieldSet()
    _cmp_map_items(lhs if isinstance(lhs, dict) else {}, rhs if isinstance(rhs, dict) else {}, t,
                   added, modified, removed)
    return added, modified, removed


def _is_empty(v: Any) -> bool:
    return v is MISSING or v is None or (isinstance(v, (dict, list)) and not v)


def _cmp_added(rv: Any, t: TypeNode | None, pe: PE, A: FieldSet) -> None:
    """_cmp_node for a value that is new (lv MISSING): everything goes to `added`. Most of a
    create's comparison against the empty object runs here, without the modified/removed sets."""
    if rv is None:
        A.members.add(pe)
        return
    kind = t.kind if t is not None and t.kind != DEDUCED else (
        MAP if isinstance(rv, dict) else LIST if isinstance(rv, list) else SCALAR)
    if kind == SCALAR or not isinstance(rv, dict if kind == MAP else list) or not rv or _is_atomic(t, kind):
        A.members.add(pe)
        return
    ca = FieldSet()
    if isinstance(rv, dict):  # kind == MAP: the check above made rv the matching container
        if t is None or t.kind == DEDUCED:
            for key, rchild in rv.items():
                _cmp_added(rchild, None, ("f", key), ca)
        else:
            for key, rchild in rv.items():
                _cmp_added(rchild, t.field(key) if t.has_field(key) else t.elem(), ("f", key), ca)
    else:
        assert t is not None
        elem = _elem(t)
        rpes, rmap = _safe_index(t, rv)
        for ipe in rpes:
            items = rmap[ipe]
            if len(items) > 1:
                ca.members.add(ipe)  # duplicated keys compare as one atomic leaf
            else:
                _cmp_added(items[0], elem, ipe, ca)
    if ca.members or ca.children:
        A.children[pe] = ca
    A.members.add(pe)


def _cmp_node(lv: Any, rv: Any, t: TypeNode | None, pe: PE, A: FieldSet, M: FieldSet, R: FieldSet) -> None:
    if lv is MISSING:
        _cmp_added(rv, t, pe, A)
        return
    probe = rv if rv is not MISSING and rv is not None else lv
    kind = _kind(t, probe)
    leaf = kind == SCALAR
    if not leaf:
        want = dict if kind == MAP else list
        ok_l = lv is MISSING or lv is None or isinstance(lv, want)
        ok_r = rv is MISSING or rv is None or isinstance(rv, want)
        if not (ok_l and ok_r):
            leaf = True
        elif _is_atomic(t, kind) or (_is_empty(lv) and _is_empty(rv)):
            leaf = True
    if leaf:
        if lv is MISSING:
            A.members.add(pe)
        elif rv is MISSING:
            R.members.add(pe)
        elif not go_equal(lv, rv):
            M.members.add(pe)
        return
    ca, cm, cr = FieldSet(), FieldSet(), FieldSet()
    if kind == MAP:
        _cmp_map_items(lv if isinstance(lv, dict) else {}, rv if isinstance(rv, dict) else {}, t, ca, cm, cr)
    else:
        _cmp_list_items(lv if isinstance(lv, list) else [], rv if isinstance(rv, list) else [], t, ca, cm, cr)
    # sets built here only ever get non-empty children, so members or children means non-empty
    if ca.members or ca.children:
        A.children[pe] = ca
    if cm.members or cm.children:
        M.children[pe] = cm
    if cr.members or cr.children:
        R.children[pe] = cr
    if lv is MISSING:
        A.members.add(pe)
    elif rv is MISSING:
        R.members.add(pe)


def _same(a: Any, b: Any) -> bool:
    """Strict deep equality (same JSON types all the way down, as go_equal): a subtree that is
    the same on both sides adds nothing to compare's sets, so it need not be walked with types.
    No identity shortcut, so a NaN still differs from itself as in go_equal.

    Callers have checked a == b, so the sides differ at most in number types (1, 1.0, True)
    and NaN: equal orjson encodings (which write each number type apart) without a null
    (what NaN becomes) settle it in C; otherwise the walk does."""
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict or ta is list:
        try:
            encoded = orjson.dumps(a)
            if encoded == orjson.dumps(b) and b"null" not in encoded:
                return True
        except TypeError:  # not JSON orjson writes (ints beyond 64 bits, non-string keys)
            pass
        return _same_walk(a, b)
    return a == b


def _same_walk(a: Any, b: Any) -> bool:
    ta = type(a)
    if ta is not type(b):
        return False
    if ta is dict:
        if len(a) != len(b):
            return False
        for k, x in a.items():
            y = b.get(k, MISSING)
            if y is MISSING or not _same_walk(x, y):
                return False
        return True
    if ta is list:
        if len(a) != len(b):
            return False
        for x, y in zip(a, b, strict=True):
            if not _same_walk(x, y):
                return False
        return True
    return a == b


def _cmp_map_items(lv: dict[str, Any], rv: dict[str, Any], t: TypeNode | None, A: FieldSet, M: FieldSet,
                   R: FieldSet) -> None:
    for key, lchild in lv.items():
        rchild = rv.get(key, MISSING)
        if rchild is not MISSING:
            if lchild == rchild:
                tl = type(lchild)
                if tl is type(rchild) and ((tl is not dict and tl is not list) or _same(lchild, rchild)):
                    continue  # unchanged (as _same, a scalar inline): nothing added, modified or removed
            if not isinstance(lchild, (dict, list)) and not isinstance(rchild, (dict, list)):
                # two scalars or nulls (a heartbeat's timestamps): a leaf under any type
                if not go_equal(lchild, rchild):
                    M.members.add(("f", key))
                continue
        ft, _ = _field_type(t, key)
        _cmp_node(lchild, rchild, ft, ("f", key), A, M, R)
    for key, rchild in rv.items():
        if key not in lv:
            ft, _ = _field_type(t, key)
            _cmp_node(MISSING, rchild, ft, ("f", key), A, M, R)


def _safe_index(t: TypeNode, items: list[Any]) -> tuple[list[PE], dict[PE, list[Any]]]:
    pes: list[PE] = []
    by_pe: dict[PE, list[Any]] = {}
    for item in items:
        try:
            pe = item_pe(t, item)
        except ValueError:
            pe = ("v", go_json(item, sort_keys=True))
        if pe in by_pe:
            by_pe[pe].append(item)
        else:
            by_pe[pe] = [item]
            pes.append(pe)
    return pes, by_pe


def _cmp_list_items(lv: list[Any], rv: list[Any], t: TypeNode | None, A: FieldSet, M: FieldSet,
                    R: FieldSet) -> None:
    assert t is not None
    elem = _elem(t)
    lpes, lmap = _safe_index(t, lv)
    rpes, rmap = _safe_index(t, rv)
    for pe in lpes + [p for p in rpes if p not in lmap]:
        litems = lmap.get(pe)
        ritems = rmap.get(pe)
        if (litems is not None and len(litems) > 1) or (ritems is not None and len(ritems) > 1):
            # Duplicated keys (tolerated in live objects) compare as one atomic leaf.
            if litems is None:
                A.members.add(pe)
            elif ritems is None:
                R.members.add(pe)
            elif not go_equal(litems, ritems):
                M.members.add(pe)
            continue
        if litems and ritems and litems[0] == ritems[0] and _same(litems[0], ritems[0]):
            continue  # unchanged item
        _cmp_node(litems[0] if litems else MISSING, ritems[0] if ritems else MISSING, elem, pe, A, M, R)


# ---------------------------------------------------------------------------------------------
# Compare, written straight as FieldsV1 (creates)
#
# On a create the field manager's set is compare(empty typed object, new)'s added and modified
# fields. These functions give that set's FieldsV1 form in one walk, without building the
# FieldSets and emitting them. They mirror _cmp_added and _cmp_node (keep them in step) and
# emit as FieldSet.to_fields_v1 does: keys in path-element order, "." first on a node that
# is owned itself and has owned children, `{}` for an owned node with none.


def _child_type(t: TypeNode | None, key: str) -> TypeNode | None:
    """_field_type's type alone (TypeNode.field falls back to the element type itself)."""
    if t is None or t.kind == DEDUCED:
        return None
    return t.field(key)


def added_fields_v1(v: Any, t: TypeNode | None) -> dict[str, Any]:
    """FieldsV1 of a value that is new (as _cmp_added): the node and everything below it."""
    if not v or not isinstance(v, (dict, list)):  # scalars, nulls, empty maps and lists: leaves
        return {}
    if t is None or t.kind == DEDUCED:
        # deduced lists are atomic
        return _added_map_fields_v1(v, None) if isinstance(v, dict) else {}
    if t.atomic:
        return {}
    kind = t.kind
    if kind == MAP:
        return _added_map_fields_v1(v, t) if isinstance(v, dict) else {}
    if kind != LIST or not isinstance(v, list):
        return {}
    elem = t.elem()
    pes, by_pe = _safe_index(t, v)
    if len(pes) > 1:
        pes.sort(key=_pe_rank)
    out: dict[str, Any] = {".": {}}
    for pe in pes:
        items = by_pe[pe]
        # duplicated keys compare as one atomic leaf
        out[_pe_fields_key(pe)] = added_fields_v1(items[0], elem) if len(items) == 1 else {}
    return out


def _added_map_fields_v1(v: dict[str, Any], t: TypeNode | None) -> dict[str, Any]:
    """added_fields_v1 of a non-empty map that is granular under `t` (None: deduced)."""
    out: dict[str, Any] = {".": {}}
    field = t.field if t is not None else None
    for key in sorted(v):
        c = v[key]
        # most members are scalars, leaves under any type: no type lookup, no call
        if c and isinstance(c, (dict, list)):
            out["f:" + key] = added_fields_v1(c, field(key) if field is not None else None)
        else:
            out["f:" + key] = {}
    return out


def changed_fields_v1(lv: Any, rv: Any, t: TypeNode | None) -> dict[str, Any] | None:
    """FieldsV1 of what compare adds or modifies at a node present on both sides (as _cmp_node
    with neither side MISSING), None when nothing. What it removes is left out: on a create it
    is never owned by the updater, so the manager's set does not change by removing it."""
    probe = rv if rv is not None else lv
    kind = _kind(t, probe)
    leaf = kind == SCALAR
    if not leaf:
        want = dict if kind == MAP else list
        if not ((lv is None or isinstance(lv, want)) and (rv is None or isinstance(rv, want))):
            leaf = True
        elif _is_atomic(t, kind) or (_is_empty(lv) and _is_empty(rv)):
            leaf = True
    if leaf:
        return None if go_equal(lv, rv) else {}
    if kind == MAP:
        return changed_map_fields_v1(lv if isinstance(lv, dict) else {}, rv if isinstance(rv, dict) else {}, t)
    assert t is not None
    elem = _elem(t)
    lpes, lmap = _safe_index(t, lv if isinstance(lv, list) else [])
    rpes, rmap = _safe_index(t, rv if isinstance(rv, list) else [])
    found: list[tuple[PE, dict[str, Any]]] = []
    for pe in rpes:  # items only on the left are removed
        litems = lmap.get(pe)
        ritems = rmap[pe]
        if (litems is not None and len(litems) > 1) or len(ritems) > 1:
            if litems is None or not go_equal(litems, ritems):
                found.append((pe, {}))
            continue
        if litems is None:
            found.append((pe, added_fields_v1(ritems[0], elem)))
        elif not (litems[0] == ritems[0] and _same(litems[0], ritems[0])):
            sub = changed_fields_v1(litems[0], ritems[0], elem)
            if sub is not None:
                found.append((pe, sub))
    if not found:
        return None
    found.sort(key=lambda e: _pe_rank(e[0]))
    return {_pe_fields_key(pe): sub for pe, sub in found}


def changed_map_fields_v1(lv: dict[str, Any], rv: dict[str, Any], t: TypeNode | None,
                          skip: Any = ()) -> dict[str, Any] | None:
    """changed_fields_v1 of the members of two maps (as _cmp_map_items; compare's root),
    leaving out the keys in `skip`."""
    out: dict[str, dict[str, Any]] = {}
    for key in sorted(rv):  # members only on the left are removed
        if key in skip:
            continue
        rchild = rv[key]
        lchild = lv.get(key, MISSING)
        if lchild is MISSING:
            out["f:" + key] = added_fields_v1(rchild, _child_type(t, key)) if isinstance(rchild, (dict, list)) else {}
        elif not (lchild == rchild and _same(lchild, rchild)):
            sub = changed_fields_v1(lchild, rchild, _child_type(t, key))
            if sub is not None:
                out["f:" + key] = sub
    return out or None


# ---------------------------------------------------------------------------------------------
# Merge (apply): live `lhs` with configuration `rhs`, the configuration wins at leaves


def _strip_nulls(v: Any) -> Any:
    if isinstance(v, dict):
        return {k: _strip_nulls(x) for k, x in v.items() if x is not None}
    if isinstance(v, list):
        return [_strip_nulls(x) for x in v]
    return v


def merge(lhs: Any, rhs: Any, t: TypeNode | None, drop_null: bool = False) -> Any:
    """Merge the configuration `rhs` into the live `lhs`. With `drop_null` (built-in kinds,
    whose typed round trip upstream turns nulls into absent fields) a null in the
    configuration removes the member instead of storing null."""
    if rhs is MISSING:
        return lhs
    if lhs is MISSING:
        return _strip_nulls(rhs) if drop_null else rhs
    probe = rhs if rhs is not None else lhs
    kind = _kind(t, probe)
    if kind == SCALAR or _is_atomic(t, kind):
        return _strip_nulls(rhs) if drop_null else rhs
    want = dict if kind == MAP else list
    if not ((lhs is None or isinstance(lhs, want)) and (rhs is None or isinstance(rhs, want))):
        return _strip_nulls(rhs) if drop_null else rhs
    if _is_empty(lhs) and _is_empty(rhs):
        return rhs
    if kind == MAP:
        lm = lhs if isinstance(lhs, dict) else {}
        rm = rhs if isinstance(rhs, dict) else {}
        out: dict[str, Any] = {}
        for key, lchild in lm.items():
            ft, _ = _field_type(t, key)
            rchild = rm.get(key, MISSING)
            v = merge(lchild, rchild, ft, drop_null)
            if drop_null and v is None and rchild is None:
                continue
            out[key] = v
        for key, rchild in rm.items():
            if key not in lm:
                if drop_null:
                    if rchild is None:
                        continue
                    rchild = _strip_nulls(rchild)
                out[key] = rchild
        return out
    assert t is not None
    return _merge_list(lhs if isinstance(lhs, list) else [], rhs if isinstance(rhs, list) else [], t, drop_null)


def _merge_list(lhs: list[Any], rhs: list[Any], t: TypeNode, drop_null: bool) -> list[Any]:
    """Merge keeping the configuration's order for shared items and the live position of
    live-only items (smd's visitListItems)."""
    elem = _elem(t)
    r_pes, r_map = _safe_index(t, rhs)
    l_pes_all: list[PE] = []
    l_map: dict[PE, list[Any]] = {}
    for item in lhs:
        try:
            pe = item_pe(t, item)
        except ValueError:
            pe = ("v", go_json(item, sort_keys=True))
        l_pes_all.append(pe)
        l_map.setdefault(pe, []).append(item)
    shared = [pe for pe in r_pes if pe in l_map]
    shared_i = 0
    next_shared = shared[0] if shared else None
    merged_r: set[PE] = set()
    out: list[Any] = []
    li = ri = 0

    def lchild(pe: PE) -> Any:
        items = l_map.get(pe)
        return items[0] if items is not None and len(items) == 1 else MISSING

    def advance() -> None:
        nonlocal shared_i, next_shared
        shared_i += 1
        next_shared = shared[shared_i] if shared_i < len(shared) else None

    while li < len(l_pes_all) or ri < len(r_pes):
        if li < len(l_pes_all) and ri < len(r_pes):
            pe = l_pes_all[li]
            if pe == r_pes[ri]:
                merged_r.add(pe)
                out.append(merge(lchild(pe), r_map[pe][0], elem, drop_null))
                li += 1
                ri += 1
                advance()
                continue
            if pe in r_map and next_shared is not None and next_shared != pe:
                li += 1
                continue
        if li < len(l_pes_all):
            pe = l_pes_all[li]
            if pe not in r_map:
                out.append(lhs[li])
                li += 1
                continue
            if pe in merged_r:
                li += 1
                continue
        if ri < len(r_pes):
            pe = r_pes[ri]
            merged_r.add(pe)
            out.append(merge(lchild(pe), r_map[pe][0], elem, drop_null))
            ri += 1
            if next_shared is not None and next_shared == pe:
                advance()
    return out


# ---------------------------------------------------------------------------------------------
# RemoveItems


def remove_items(value: Any, fs: FieldSet, t: TypeNode | None) -> Any:
    """`value` without the members of `fs` (a removed member takes its subtree). A map or
    list emptied this way becomes None, as upstream's walker leaves it nil."""
    kind = _kind(t, value)
    if kind == SCALAR:
        return value
    if kind == LIST:
        if not isinstance(value, list) or not value:
            return None
        if _is_atomic(t, kind):
            return value
        assert t is not None
        elem = _elem(t)
        items: list[Any] = []
        for item in value:
            try:
                pe = item_pe(t, item)
            except ValueError:
                items.append(item)
                continue
            if pe in fs.members:
                continue
            sub = fs.children.get(pe)
            if sub is not None and not sub.empty():
                item = remove_items(item, sub, elem)
            items.append(item)
        return items or None
    if not isinstance(value, dict) or not value:
        return None
    if _is_atomic(t, kind):
        return value
    out: dict[str, Any] = {}
    for key, child in value.items():
        pe = ("f", key)
        if pe in fs.members:
            continue
        sub = fs.children.get(pe)
        if sub is not None and not sub.empty() and child is not None:
            ft, _ = _field_type(t, key)
            child = remove_items(child, sub, ft)
            if child is None:
                # Emptied by the removal: upstream leaves it nil, which the typed object
                # serialises as absent.
                continue
        out[key] = child
    return out or None


def ensure_named_fields(fs: FieldSet, t: TypeNode | None) -> FieldSet:
    """A copy of `fs` where struct fields that have owned descendants are members too
    (smd's EnsureNamedFieldsAreMembers), so removing them removes the whole field."""
    out = FieldSet()
    out.members = set(fs.members)
    for pe, child in fs.children.items():
        if child.empty():
            continue
        if pe[0] == "f":
            if t is not None and t.kind == MAP and t.has_field(pe[1]):
                out.members.add(pe)
            ft, _ = _field_type(t, pe[1])
        else:
            ft = _elem(t)
        out.children[pe] = ensure_named_fields(child, ft)
    return out
