"""Schema views used by the patch code, built lazily from the v1.33 OpenAPI definitions
(or from a CRD's openAPIV3Schema) and cached, so hot paths pay the walk once per type.

Two views:
  * `PatchMeta` - what strategic merge patch needs: for a field, its patch strategies, its
    merge key and the schema of its value / list element.
  * `TypeNode` - what server-side apply needs (structured-merge-diff's model): scalar,
    map (struct fields and/or an element type, granular or atomic), list (atomic, set, or
    map with keys) and "deduced" (free-form, shaped by the value itself).
"""

from __future__ import annotations

import functools
import threading
from typing import Any

from pyk8s.api.definitions import definition_for_gvk, definitions

__all__ = [
    "PatchMeta",
    "EMPTY_PATCH_META",
    "patch_meta_for_gvk",
    "patch_meta_for_schema",
    "TypeNode",
    "SCALAR",
    "MAP",
    "LIST",
    "DEDUCED",
    "type_for_gvk",
    "type_for_schema",
    "deduced_root",
    "definition_name_for_gvk",
]

_lock = threading.Lock()


def _ref_name(schema: dict[str, Any]) -> str | None:
    ref = schema.get("$ref")
    if isinstance(ref, str):
        return ref.rsplit("/", 1)[-1]
    all_of = schema.get("allOf")
    if isinstance(all_of, list) and len(all_of) == 1 and isinstance(all_of[0], dict):
        return _ref_name(all_of[0])
    return None


def _resolve(schema: Any) -> tuple[dict[str, Any], str | None]:
    """Follow $ref (and a single-element allOf) to the definition; return it and its name."""
    if not isinstance(schema, dict):
        return {}, None
    name = _ref_name(schema)
    if name is not None:
        target = definitions().get(name)
        if target is not None:
            return target, name
    return schema, None


def definition_name_for_gvk(group: str, version: str, kind: str) -> str | None:
    return definition_for_gvk(group, version, kind)


# ---------------------------------------------------------------------------------------------
# Strategic merge patch metadata


class PatchMeta:
    """Patch metadata of one schema node (a struct, a map or a list element)."""

    __slots__ = ("schema", "name", "_fields", "_items")

    def __init__(self, schema: dict[str, Any] | None, name: str = "") -> None:
        self.schema = schema or {}
        self.name = name
        self._fields: dict[str, tuple[PatchMeta, tuple[str, ...], str]] = {}
        self._items: PatchMeta | None = None

    def lookup(self, key: str) -> tuple[PatchMeta, tuple[str, ...], str]:
        """(schema of the field's value, patch strategies, patch merge key) for `key`."""
        hit = self._fields.get(key)
        if hit is not None:
            return hit
        props = self.schema.get("properties")
        if isinstance(props, dict) and key in props and isinstance(props[key], dict):
            prop = props[key]
            raw = prop.get("x-kubernetes-patch-strategy") or ""
            strategies = tuple(s for s in raw.split(",") if s) if isinstance(raw, str) else ()
            merge_key = prop.get("x-kubernetes-patch-merge-key") or ""
            if not strategies or not merge_key:
                target, _ = _resolve(prop)
                if not strategies:
                    raw = target.get("x-kubernetes-patch-strategy") or ""
                    strategies = tuple(s for s in raw.split(",") if s) if isinstance(raw, str) else ()
                if not merge_key:
                    merge_key = target.get("x-kubernetes-patch-merge-key") or ""
            hit = (_meta_node(prop, key), strategies, merge_key if isinstance(merge_key, str) else "")
        else:
            ap = self.schema.get("additionalProperties")
            if isinstance(ap, dict):
                hit = (_meta_node(ap, key), (), "")
            else:
                hit = (EMPTY_PATCH_META, (), "")
        self._fields[key] = hit
        return hit

    def items(self) -> PatchMeta:
        """The element schema when this node describes a list value."""
        if self._items is None:
            items = self.schema.get("items")
            self._items = _meta_node(items, self.name) if isinstance(items, dict) else EMPTY_PATCH_META
        return self._items


EMPTY_PATCH_META = PatchMeta({}, "")

_META_BY_DEF: dict[str, PatchMeta] = {}


def _meta_node(schema: dict[str, Any], name: str) -> PatchMeta:
    target, defname = _resolve(schema)
    if defname is not None:
        node = _META_BY_DEF.get(defname)
        if node is None:
            with _lock:
                node = _META_BY_DEF.setdefault(defname, PatchMeta(target, defname))
        return node
    return PatchMeta(target, name)


@functools.lru_cache(maxsize=1024)
def patch_meta_for_gvk(group: str, version: str, kind: str) -> PatchMeta | None:
    name = definition_for_gvk(group, version, kind)
    if name is None:
        return None
    return _meta_node({"$ref": f"#/$defs/{name}"}, name)


def patch_meta_for_schema(schema: dict[str, Any]) -> PatchMeta:
    return PatchMeta(schema, "schema")


# ---------------------------------------------------------------------------------------------
# Typed schema for server-side apply

SCALAR = "scalar"
MAP = "map"
LIST = "list"
DEDUCED = "deduced"

# Key fields of associative lists that upstream's OpenAPI gives a default for (the
# kubernetes-validate copy drops `default`), so an item may omit them.
_KEY_DEFAULTS: dict[tuple[str, str], Any] = {
    ("io.k8s.api.core.v1.ContainerPort", "protocol"): "TCP",
    ("io.k8s.api.core.v1.ServicePort", "protocol"): "TCP",
}

# Struct-valued fields that Go serialises even when empty (value, not pointer, types), so
# they exist in a freshly created empty object. Used to shape that empty object the way
# upstream's typed `New()` does (it decides where "." appears in Update managers' sets).
_VALUE_FIELDS: dict[str, tuple[str, ...]] = {
    "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta": ("creationTimestamp",),
    "io.k8s.api.apps.v1.DeploymentSpec": ("strategy", "template"),
    "io.k8s.api.apps.v1.StatefulSetSpec": ("updateStrategy", "template"),
    "io.k8s.api.apps.v1.DaemonSetSpec": ("updateStrategy", "template"),
    "io.k8s.api.apps.v1.ReplicaSetSpec": ("template",),
    "io.k8s.api.core.v1.PodTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.core.v1.PodTemplate": ("template",),
    "io.k8s.api.batch.v1.JobSpec": ("template",),
    "io.k8s.api.batch.v1.JobTemplateSpec": ("metadata", "spec"),
    "io.k8s.api.batch.v1.CronJobSpec": ("jobTemplate",),
    "io.k8s.api.core.v1.Event": ("involvedObject", "source", "firstTimestamp", "lastTimestamp", "eventTime"),
}


class TypeNode:
    """One node of the typed schema. Built lazily: fields and elements resolve on demand."""

    __slots__ = ("kind", "atomic", "list_type", "keys", "key_defaults", "defname", "scalar_type",
                 "_schema", "_fields", "_elem", "_elem_built", "_field_schemas", "_extra")

    def __init__(self, kind: str, schema: dict[str, Any] | None = None, defname: str | None = None,
                 scalar_type: str = "untyped") -> None:
        self.kind = kind
        self.scalar_type = scalar_type  # for scalars: string | numeric | boolean | untyped
        self.atomic = False
        self.list_type = "atomic"  # for lists: atomic | set | map
        self.keys: tuple[str, ...] = ()
        self.key_defaults: dict[str, Any] = {}
        self.defname = defname
        self._schema = schema or {}
        self._fields: dict[str, TypeNode] = {}
        self._field_schemas: dict[str, dict[str, Any]] = {}
        self._elem: TypeNode | None = None
        self._elem_built = False
        self._extra: dict[str, TypeNode] = {}

    # -- maps / structs ------------------------------------------------------------------
    def has_field(self, name: str) -> bool:
        return name in self._field_schemas or name in self._extra

    def field(self, name: str) -> TypeNode | None:
        """Type of a declared field, else the element type, else None (undeclared)."""
        node = self._fields.get(name)
        if node is not None:
            return node
        if name in self._extra:
            return self._extra[name]
        sch = self._field_schemas.get(name)
        if sch is not None:
            node = build_type(sch)
            self._fields[name] = node
            return node
        return self.elem()

    def elem(self) -> TypeNode | None:
        if not self._elem_built:
            self._elem = self._build_elem()
            self._elem_built = True
        return self._elem

    def _build_elem(self) -> TypeNode | None:
        s = self._schema
        if self.kind == LIST:
            items = s.get("items")
            return build_type(items) if isinstance(items, dict) else _DEDUCED
        if self.kind != MAP:
            return None
        ap = s.get("additionalProperties")
        if isinstance(ap, dict):
            return build_type(ap)
        if ap is True or s.get("x-kubernetes-preserve-unknown-fields") is True:
            return _DEDUCED
        if ap is None and not s.get("properties"):
            # An object with neither properties nor additionalProperties is free-form.
            return _DEDUCED
        return None

    def field_names(self) -> list[str]:
        return list(self._field_schemas)

    def field_schema(self, name: str) -> dict[str, Any] | None:
        return self._field_schemas.get(name)

    def with_overrides(self, overrides: dict[str, TypeNode]) -> TypeNode:
        """A copy of this map node whose named fields are replaced (used to give custom
        resources the built-in metadata schema)."""
        node = TypeNode(self.kind, self._schema, self.defname)
        node.atomic = self.atomic
        node._field_schemas = dict(self._field_schemas)
        node._extra = dict(overrides)
        for k in overrides:
            node._field_schemas.setdefault(k, {})
        return node


_DEDUCED = TypeNode(DEDUCED)
_SCALAR = TypeNode(SCALAR)
_SCALARS = {
    "string": TypeNode(SCALAR, scalar_type="string"),
    "integer": TypeNode(SCALAR, scalar_type="numeric"),
    "number": TypeNode(SCALAR, scalar_type="numeric"),
    "boolean": TypeNode(SCALAR, scalar_type="boolean"),
}

_TYPE_BY_DEF: dict[str, TypeNode] = {}


def _type_of(s: dict[str, Any]) -> str | None:
    t = s.get("type")
    if isinstance(t, list):
        t = next((x for x in t if x != "null"), None)
    return t if isinstance(t, str) else None


def _list_relationship(s: dict[str, Any]) -> tuple[str, tuple[str, ...]]:
    lt = s.get("x-kubernetes-list-type")
    if lt == "atomic":
        return "atomic", ()
    if lt == "set":
        return "set", ()
    if lt == "map":
        keys = s.get("x-kubernetes-list-map-keys") or []
        return "map", tuple(k for k in keys if isinstance(k, str))
    ps = s.get("x-kubernetes-patch-strategy")
    if isinstance(ps, str) and "merge" in ps.split(","):
        mk = s.get("x-kubernetes-patch-merge-key")
        if isinstance(mk, str) and mk:
            return "map", (mk,)
        return "set", ()
    return "atomic", ()


def build_type(schema: dict[str, Any]) -> TypeNode:
    target, defname = _resolve(schema)
    # Extensions written next to a $ref (on the property) refine the referenced type.
    local_ext = {k: v for k, v in schema.items()
                 if isinstance(k, str) and k.startswith("x-kubernetes-") and k not in (
                     "x-kubernetes-patch-strategy", "x-kubernetes-patch-merge-key")} if defname else {}
    if defname is not None and not local_ext:
        node = _TYPE_BY_DEF.get(defname)
        if node is None:
            node = _build_uncached({**target}, defname)
            with _lock:
                node = _TYPE_BY_DEF.setdefault(defname, node)
        return node
    merged = {**target, **local_ext} if defname else target
    return _build_uncached(merged, defname)


def _build_uncached(s: dict[str, Any], defname: str | None) -> TypeNode:
    if s.get("x-kubernetes-int-or-string") or "oneOf" in s or "anyOf" in s:
        return _SCALAR
    t = _type_of(s)
    if t == "array" or (t is None and "items" in s):
        node = TypeNode(LIST, s, defname)
        node.list_type, node.keys = _list_relationship(s)
        node.atomic = node.list_type == "atomic"
        if node.list_type == "map":
            items = s.get("items")
            item_schema, item_def = _resolve(items) if isinstance(items, dict) else ({}, None)
            props = item_schema.get("properties") or {}
            for k in node.keys:
                p = props.get(k)
                if isinstance(p, dict) and "default" in p:
                    node.key_defaults[k] = p["default"]
                elif item_def and (item_def, k) in _KEY_DEFAULTS:
                    node.key_defaults[k] = _KEY_DEFAULTS[(item_def, k)]
        return node
    if t == "object" or "properties" in s or "additionalProperties" in s:
        node = TypeNode(MAP, s, defname)
        props = s.get("properties")
        if isinstance(props, dict):
            node._field_schemas = {k: v for k, v in props.items() if isinstance(v, dict)}
        node.atomic = s.get("x-kubernetes-map-type") == "atomic"
        return node
    if t is None:
        return _DEDUCED
    return _SCALARS.get(t, _SCALAR)


def deduced_root() -> TypeNode:
    return _DEDUCED


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@functools.lru_cache(maxsize=1024)
def type_for_gvk(group: str, version: str, kind: str) -> TypeNode | None:
    name = definition_for_gvk(group, version, kind)
    if name is None:
        return None
    return build_type({"$ref": f"#/$defs/{name}"})


def type_for_schema(schema: dict[str, Any] | None) -> TypeNode:
    """Typed root for a custom resource: its CRD schema (or free-form without one), with
    the built-in ObjectMeta under metadata and string apiVersion/kind."""
    meta = build_type({"$ref": f"#/$defs/{_OBJECT_META}"})
    overrides = {"metadata": meta, "apiVersion": _SCALAR, "kind": _SCALAR}
    if schema:
        root = build_type(schema)
        if root.kind == MAP:
            return root.with_overrides(overrides)
    base = TypeNode(MAP, {"type": "object", "x-kubernetes-preserve-unknown-fields": True})
    return base.with_overrides(overrides)


def zero_object(root: TypeNode, api_version: str, kind: str) -> dict[str, Any]:
    """The typed empty object upstream's `New()` yields, as wire JSON."""
    obj: dict[str, Any] = {}
    if api_version:
        obj["apiVersion"] = api_version
    if kind:
        obj["kind"] = kind
    obj["metadata"] = {"creationTimestamp": None}
    if root.kind != MAP or root.defname is None:
        return obj
    for name in ("spec", "status"):
        sch = root.field_schema(name)
        if sch is not None:
            child = root.field(name)
            if child is not None and child.kind == MAP and child.defname is not None:
                obj[name] = _zero_struct(child, 0)
    return obj


def _zero_struct(node: TypeNode, depth: int) -> dict[str, Any]:
    out: dict[str, Any] = {}
    if depth > 6 or node.defname is None:
        return out
    required = node._schema.get("required") or []
    value_fields = _VALUE_FIELDS.get(node.defname, ())
    for name in list(required) + [f for f in value_fields if f not in required]:
        sch = node.field_schema(name)
        if sch is None:
            continue
        child = node.field(name)
        if child is not None and child.kind == MAP and child.defname is not None and (
                name in value_fields or not _is_pointerish(node.defname, name)):
            out[name] = _zero_struct(child, depth + 1)
        else:
            out[name] = None
    return out


def _is_pointerish(defname: str, field: str) -> bool:
    # Required struct fields that Go models as pointers serialise as null when unset.
    return (defname, field) in {
        ("io.k8s.api.apps.v1.DeploymentSpec", "selector"),
        ("io.k8s.api.apps.v1.StatefulSetSpec", "selector"),
        ("io.k8s.api.apps.v1.DaemonSetSpec", "selector"),
        ("io.k8s.api.apps.v1.ReplicaSetSpec", "selector"),
    }
