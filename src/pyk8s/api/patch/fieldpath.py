"""Field sets as server-side apply tracks them (structured-merge-diff's fieldpath), and
their FieldsV1 wire form.

A path element (PE) is a tuple:
  ("f", name)        a struct field or map key          FieldsV1 `f:<name>`
  ("k", key_json)    a map-list item by its key fields   FieldsV1 `k:{"name":"c"}`
  ("v", value_json)  a set-list item by its value        FieldsV1 `v:"a"`
  ("i", index)       a list item by position             FieldsV1 `i:0`
Key and value JSON is canonical (Go encoding, sorted keys), so equal items hash equally.

A FieldSet holds `members` (paths that are themselves owned) and `children` (sub-sets by
PE). A PE can be both, which FieldsV1 writes as a child object holding ".": {}.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Iterator
from typing import Any

from ._common import go_json, go_q

__all__ = ["FieldSet", "PE", "pe_string", "path_string", "key_pe", "value_pe", "field_pe", "FieldsV1Error"]

PE = tuple[str, Any]


class FieldsV1Error(ValueError):
    pass


def field_pe(name: str) -> PE:
    return ("f", name)


def key_pe(fields: dict[str, Any]) -> PE:
    return ("k", go_json(fields, sort_keys=True))


def value_pe(value: Any) -> PE:
    return ("v", go_json(value, sort_keys=True))


# -- ordering (smd PathElement.Compare / value.Compare) ------------------------------------

def _value_rank(v: Any) -> tuple[Any, ...]:
    if isinstance(v, bool):
        return (2, v)
    if isinstance(v, (int, float)):
        return (0, float(v))
    if isinstance(v, str):
        return (1, v)
    if isinstance(v, list):
        return (3, tuple(_value_rank(x) for x in v))
    if isinstance(v, dict):
        return (4, tuple((k, _value_rank(v[k])) for k in sorted(v)))
    return (5,)


@functools.lru_cache(maxsize=65536)
def _pe_rank(pe: PE) -> tuple[Any, ...]:
    kind, data = pe
    if kind == "f":
        return (0, data)
    if kind == "k":
        fields = json.loads(data)
        return (1, tuple((name, _value_rank(fields[name])) for name in sorted(fields)))
    if kind == "v":
        return (2, _value_rank(json.loads(data)))
    return (3, data)


def _sorted(pes: Any) -> list[PE]:
    return sorted(pes, key=_pe_rank)


# -- rendering -------------------------------------------------------------------------------

def _to_string(v: Any) -> str:
    """smd value.ToString, used in path strings."""
    if v is None:
        return "null"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, (int, float)):
        return go_json(v)
    if isinstance(v, str):
        return go_q(v)
    if isinstance(v, list):
        return "[" + ",".join(_to_string(x) for x in v) + "]"
    if isinstance(v, dict):
        return "{" + ",".join(f"{k}={_to_string(v[k])}" for k in sorted(v)) + "}"
    return str(v)


def pe_string(pe: PE) -> str:
    kind, data = pe
    if kind == "f":
        return "." + data
    if kind == "k":
        fields = json.loads(data)
        return "[" + ",".join(f"{k}={_to_string(fields[k])}" for k in sorted(fields)) + "]"
    if kind == "v":
        return "[=" + _to_string(json.loads(data)) + "]"
    return f"[{data}]"


def path_string(path: tuple[PE, ...]) -> str:
    return "".join(pe_string(pe) for pe in path)


@functools.lru_cache(maxsize=65536)
def _pe_fields_key(pe: PE) -> str:
    kind, data = pe
    if kind == "f":
        return "f:" + data
    if kind == "k":
        return "k:" + data
    if kind == "v":
        return "v:" + data
    return f"i:{data}"


@functools.lru_cache(maxsize=16384)
def _parse_fields_key(key: str) -> PE:
    """A FieldsV1 key's PE (memoised: managedFields of every write repeat the same keys)."""
    if len(key) < 2 or key[1] != ":":
        raise FieldsV1Error(f"parsing JSON: unknown path element key: {key!r}")
    tag, rest = key[0], key[2:]
    if tag == "f":
        return ("f", rest)
    try:
        if tag == "k":
            fields = json.loads(rest)
            if not isinstance(fields, dict):
                raise FieldsV1Error(f"key must be an object: {rest}")
            return ("k", go_json(fields, sort_keys=True))
        if tag == "v":
            return ("v", go_json(json.loads(rest), sort_keys=True))
        if tag == "i":
            return ("i", int(rest))
    except (ValueError, TypeError) as e:
        raise FieldsV1Error(f"parsing JSON: {e}") from None
    raise FieldsV1Error(f"parsing JSON: unknown path element key: {key!r}")


class FieldSet:
    __slots__ = ("members", "children")

    def __init__(self) -> None:
        self.members: set[PE] = set()
        self.children: dict[PE, FieldSet] = {}

    # -- construction --------------------------------------------------------------------
    @classmethod
    def from_paths(cls, paths: Any) -> FieldSet:
        s = cls()
        for p in paths:
            s.insert(tuple(p))
        return s

    def insert(self, path: tuple[PE, ...]) -> None:
        node = self
        for pe in path[:-1]:
            child = node.children.get(pe)
            if child is None:
                child = node.children[pe] = FieldSet()
            node = child
        if path:
            node.members.add(path[-1])

    def child(self, pe: PE) -> FieldSet:
        """The sub-set under `pe`, created if needed (for builders)."""
        c = self.children.get(pe)
        if c is None:
            c = self.children[pe] = FieldSet()
        return c

    def copy(self) -> FieldSet:
        s = FieldSet()
        s.members = set(self.members)
        s.children = {pe: c.copy() for pe, c in self.children.items()}
        return s

    # -- queries -------------------------------------------------------------------------
    def empty(self) -> bool:
        if self.members:
            return False
        children = self.children
        if not children:
            return True
        for c in children.values():
            if not c.empty():
                return False
        return True

    def __bool__(self) -> bool:
        return not self.empty()

    def has(self, path: tuple[PE, ...]) -> bool:
        node: FieldSet | None = self
        for pe in path[:-1]:
            node = node.children.get(pe) if node is not None else None
            if node is None:
                return False
        return bool(path) and node is not None and path[-1] in node.members

    def with_prefix(self, pe: PE) -> FieldSet | None:
        return self.children.get(pe)

    def iter_paths(self, prefix: tuple[PE, ...] = ()) -> Iterator[tuple[PE, ...]]:
        """Paths in smd's Iterate order: this level's members, then each child's paths."""
        for pe in _sorted(self.members):
            yield prefix + (pe,)
        for pe in _sorted(self.children):
            yield from self.children[pe].iter_paths(prefix + (pe,))

    def __len__(self) -> int:
        return len(self.members) + sum(len(c) for c in self.children.values())

    def __eq__(self, other: object) -> bool:
        """The same paths (empty sub-sets count for nothing). Sub-sets shared by both sides,
        as the algebra below leaves them, are not walked."""
        if not isinstance(other, FieldSet):
            return NotImplemented
        if other is self:
            return True
        if self.members != other.members:
            return False
        oc_all = other.children
        for pe, c in self.children.items():
            oc = oc_all.get(pe)
            if oc is None:
                if not c.empty():
                    return False
            elif not c == oc:
                return False
        for pe, oc in oc_all.items():
            if pe not in self.children and not oc.empty():
                return False
        return True

    __hash__ = None  # type: ignore[assignment]

    def _pruned(self) -> FieldSet:
        s = FieldSet()
        s.members = set(self.members)
        for pe, c in self.children.items():
            if not c.empty():
                s.children[pe] = c._pruned()
        return s

    def __repr__(self) -> str:
        return "FieldSet(" + ", ".join(path_string(p) for p in self.iter_paths()) + ")"

    # -- algebra ---------------------------------------------------------------------------
    # Results share unchanged sub-sets with their operands instead of copying them, and are
    # an operand itself when they hold the same paths: sets are values once built (only the
    # builders that create a set fill it). Copying was a third of the managedFields cost of a
    # create, and a manager's set that a write leaves alone keeps its identity, so its
    # FieldsV1 need not be written again (see decode_fields_v1).
    def union(self, other: FieldSet) -> FieldSet:
        if other is self:
            return self
        s = FieldSet()
        s.members = self.members | other.members
        is_self = len(s.members) == len(self.members)
        is_other = len(s.members) == len(other.members)
        oc_all = other.children
        for pe, c in self.children.items():
            oc = oc_all.get(pe)
            if oc is None:
                s.children[pe] = c
                is_other = False
            else:
                u = s.children[pe] = c.union(oc)
                is_self = is_self and u is c
                is_other = is_other and u is oc
        for pe, oc in oc_all.items():
            if pe not in self.children:
                s.children[pe] = oc
                is_self = False
        return self if is_self else other if is_other else s

    def difference(self, other: FieldSet) -> FieldSet:
        """Paths of self that are not paths of other (children compared path by path)."""
        s = FieldSet()
        s.members = self.members - other.members
        same = len(s.members) == len(self.members)
        for pe, c in self.children.items():
            oc = other.children.get(pe)
            if oc is None:
                if not c.empty():
                    s.children[pe] = c
                continue
            d = c.difference(oc)
            same = same and d is c
            if not d.empty():
                s.children[pe] = d
        return self if same else s

    def intersection(self, other: FieldSet) -> FieldSet:
        s = FieldSet()
        s.members = self.members & other.members
        for pe, c in self.children.items():
            oc = other.children.get(pe)
            if oc is not None:
                i = c.intersection(oc)
                if not i.empty():
                    s.children[pe] = i
        return s

    def recursive_difference(self, other: FieldSet) -> FieldSet:
        """Drop every path that has a member of `other` as prefix (or equals one)."""
        s = FieldSet()
        s.members = self.members - other.members
        same = len(s.members) == len(self.members)
        for pe, c in self.children.items():
            if pe in other.members:
                same = same and c.empty()
                continue
            oc = other.children.get(pe)
            if oc is None:
                if not c.empty():
                    s.children[pe] = c
                continue
            d = c.recursive_difference(oc)
            same = same and d is c
            if not d.empty():
                s.children[pe] = d
        return self if same else s

    # -- FieldsV1 ------------------------------------------------------------------------
    def to_fields_v1(self) -> dict[str, Any]:
        return self._emit(False)

    def _emit(self, own: bool) -> dict[str, Any]:
        out: dict[str, Any] = {}
        if own:
            out["."] = {}
        members = self.members
        children = self.children
        if not children:
            for pe in _sorted(members):
                out[_pe_fields_key(pe)] = {}
            return out
        # each child emitted once; one that emits nothing (no "." of its own) is empty
        emitted: dict[PE, dict[str, Any]] = {}
        for pe, c in children.items():
            own_c = pe in members
            sub = c._emit(own_c)
            if len(sub) > own_c:
                emitted[pe] = sub
        pes = members.union(emitted) if emitted else members
        for pe in _sorted(pes):
            out[_pe_fields_key(pe)] = emitted.get(pe) or {}
        return out

    @classmethod
    def from_fields_v1(cls, fields: Any) -> FieldSet:
        return cls.decode_fields_v1(fields)[0]

    @classmethod
    def decode_fields_v1(cls, fields: Any) -> tuple[FieldSet, bool]:
        """from_fields_v1, and whether `fields` is exactly what to_fields_v1 writes for the
        set, key order included (then a caller whose set comes through unchanged can keep
        the FieldsV1 it read instead of writing it again)."""
        if fields is None:
            return cls(), False
        if not isinstance(fields, dict):
            raise FieldsV1Error("FieldsV1 must be a JSON object")
        return cls._decode(fields, True)

    @classmethod
    def _decode(cls, fields: dict[str, Any], root: bool) -> tuple[FieldSet, bool]:
        s = cls()
        # as written: "." first and only in a child that has more, keys canonical and in
        # strictly increasing path element order (equal ranks would be written in set order)
        canonical = True
        last: tuple[Any, ...] | None = None
        first = True
        for key, val in fields.items():
            if key == ".":
                if canonical and not (first and not root and len(fields) > 1 and val == {}):
                    canonical = False
                first = False
                continue
            first = False
            pe = _parse_fields_key(key)
            if not isinstance(val, dict):
                raise FieldsV1Error(f"expected an object for {key!r}")
            if canonical:
                rank = _pe_rank(pe)
                if _pe_fields_key(pe) != key or (last is not None and not last < rank):
                    canonical = False
                last = rank
            if not val:
                s.members.add(pe)
                continue
            if "." in val:
                s.members.add(pe)
            sub, sub_canonical = cls._decode(val, False)
            canonical = canonical and sub_canonical
            if sub.members or sub.children:  # built here: children are never empty
                s.children[pe] = sub
        return s, canonical
