"""Structural schemas of CustomResourceDefinitions: pruning, defaulting, validation.

Mirrors apiextensions-apiserver (pkg/apiserver/schema/...) and kube-openapi's validator,
including their error texts, on the CRD's openAPIV3Schema as plain JSON. The order a
write goes through upstream, and so the order callers should use:

    unknown = prune(schema, obj)            # decode: unknown fields dropped (paths for Warn/Strict)
    prune_nulls(schema, obj)                # non-nullable nulls without default dropped
    apply_defaults(schema, obj)             # defaulting
    errs = validate_structural(schema, obj) # validation (schema, embedded resources, list types)
"""

from __future__ import annotations

import copy
import json
import re
from typing import Any

from pyk8s.api.errors import FieldError

from ._invariants import ROOT, check_invariants
from ._validate import OpenAPIValidator, go_sharp_value

__all__ = [
    "prune",
    "pruned_paths",
    "prune_nulls",
    "apply_defaults",
    "validate_structural",
    "is_structural",
    "structural_errors",
    "embedded_meta_unknown_fields",
    "go_sharp_value",
]

Schema = dict[str, Any]
_META_FIELDS = frozenset(("apiVersion", "kind", "metadata"))


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _additional(s: Schema) -> tuple[bool, Schema | None]:
    """(present, schema): `additionalProperties: false|true` is present without a schema."""
    ap = s.get("additionalProperties")
    if ap is None:
        return False, None
    return True, ap if isinstance(ap, dict) else None


# --- pruning ---------------------------------------------------------------------------


def _prune(x: Any, s: Schema | None, path: str, out: list[str], mutate: bool, embedded: bool = False) -> None:
    if s is not None and s.get("x-kubernetes-preserve-unknown-fields"):
        _skip_prune(x, s, path, out, mutate, embedded)
        return
    if isinstance(x, dict):
        if s is None:
            out.extend(_join(path, k) for k in x)
            if mutate:
                x.clear()
            return
        embedded = embedded or bool(s.get("x-kubernetes-embedded-resource"))
        props = s.get("properties") or {}
        has_ap, ap = _additional(s)
        for k in list(x):
            if embedded and k in _META_FIELDS:
                continue
            if k in props:
                _prune(x[k], props[k], _join(path, k), out, mutate)
            elif has_ap:
                _prune(x[k], ap, _join(path, k), out, mutate)
            else:
                if k not in _META_FIELDS or path:
                    out.append(_join(path, k))
                if mutate:
                    del x[k]
    elif isinstance(x, list):
        items = s.get("items") if s is not None else None
        for i, v in enumerate(x):
            _prune(v, items, f"{path}[{i}]", out, mutate)


def _skip_prune(x: Any, s: Schema, path: str, out: list[str], mutate: bool, embedded: bool) -> None:
    if isinstance(x, dict):
        embedded = embedded or bool(s.get("x-kubernetes-embedded-resource"))
        props = s.get("properties") or {}
        has_ap, ap = _additional(s)
        for k, v in x.items():
            if embedded and k in _META_FIELDS:
                continue
            if k in props:
                _prune(v, props[k], _join(path, k), out, mutate)
            elif has_ap:
                _prune(v, ap, _join(path, k), out, mutate)
    elif isinstance(x, list):
        # upstream prunes (not skip-prunes) the items of a preserved array
        for i, v in enumerate(x):
            _prune(v, s.get("items"), f"{path}[{i}]", out, mutate)


def pruned_paths(schema: Schema | None, obj: Any, root: bool = True) -> list[str]:
    """Sorted paths of the fields pruning would drop, without modifying obj.

    At the resource root apiVersion, kind and metadata are never pruned (as upstream).
    """
    out: list[str] = []
    _prune(obj, schema if schema is not None else ({} if root else None), "", out, False, embedded=root)
    out.sort()
    return out


def prune(schema: Schema | None, obj: Any, root: bool = True) -> list[str]:
    """Remove what upstream drops when decoding a custom resource; return the dropped paths.

    At the root this includes unknown ObjectMeta fields (`metadata.foo`), then the fields
    the schema does not declare (sorted), then unknown metadata fields of embedded
    resources: the list upstream reports as `unknown field "..."` under Warn/Strict.
    """
    from .strict import object_meta_unknown_fields

    out: list[str] = []
    if root and isinstance(obj, dict) and isinstance(obj.get("metadata"), dict):
        out.extend(object_meta_unknown_fields(obj["metadata"], drop=True))
    dropped: list[str] = []
    _prune(obj, schema if schema is not None else ({} if root else None), "", dropped, True, embedded=root)
    dropped.sort()
    out.extend(dropped)
    out.extend(embedded_meta_unknown_fields(schema, obj, drop=True))
    return out


def embedded_meta_unknown_fields(schema: Schema | None, obj: Any, drop: bool = False) -> list[str]:
    """Unknown ObjectMeta fields inside x-kubernetes-embedded-resource values (sorted)."""
    from .strict import object_meta_unknown_fields

    out: list[str] = []

    def walk(x: Any, s: Schema | None, path: str) -> None:
        if s is None:
            return
        if isinstance(x, dict):
            if s.get("x-kubernetes-embedded-resource") and isinstance(x.get("metadata"), dict):
                out.extend(object_meta_unknown_fields(x["metadata"], _join(path, "metadata"), drop))
            props = s.get("properties") or {}
            has_ap, ap = _additional(s)
            for k, v in x.items():
                if k in props:
                    walk(v, props[k], _join(path, k))
                elif has_ap:
                    walk(v, ap, _join(path, k))
        elif isinstance(x, list):
            for i, v in enumerate(x):
                walk(v, s.get("items"), f"{path}[{i}]")

    walk(obj, schema, "")
    out.sort()
    return out


# --- nulls and defaults -------------------------------------------------------------------


def _field_schema(k: str, s: Schema | None) -> Schema | None:
    if s is None:
        return None
    props = s.get("properties") or {}
    if k in props:
        return props[k]
    ap = s.get("additionalProperties")
    return ap if isinstance(ap, dict) else None


def prune_nulls(schema: Schema | None, obj: Any) -> None:
    """Drop nulls of non-nullable fields that have no default (PruneNonNullableNullsWithoutDefaults)."""
    if isinstance(obj, dict):
        for k in list(obj):
            fs = _field_schema(k, schema)
            v = obj[k]
            if v is None and fs is not None and not fs.get("nullable") and "default" not in fs:
                del obj[k]
            else:
                prune_nulls(fs, v)
    elif isinstance(obj, list):
        items = schema.get("items") if schema is not None else None
        for v in obj:
            prune_nulls(items, v)


def _non_nullable_null(x: Any, s: Schema | None) -> bool:
    return x is None and s is not None and not s.get("nullable")


def apply_defaults(schema: Schema | None, obj: Any) -> None:
    """Structural defaulting: fill absent (or non-nullable null) fields from `default`."""
    if schema is None:
        return
    if isinstance(obj, dict):
        props = schema.get("properties") or {}
        for k, prop in props.items():
            if prop.get("default") is None:
                continue
            if k not in obj or _non_nullable_null(obj[k], prop):
                obj[k] = copy.deepcopy(prop["default"])
        ap = schema.get("additionalProperties")
        for k in list(obj):
            if k in props:
                apply_defaults(props[k], obj[k])
            elif isinstance(ap, dict):
                if _non_nullable_null(obj[k], ap) and ap.get("default") is not None:
                    obj[k] = copy.deepcopy(ap["default"])
                apply_defaults(ap, obj[k])
    elif isinstance(obj, list):
        items = schema.get("items")
        if not isinstance(items, dict):
            return
        for i, v in enumerate(obj):
            if _non_nullable_null(v, items) and items.get("default") is not None:
                obj[i] = copy.deepcopy(items["default"])
            apply_defaults(items, obj[i])


# --- validation ---------------------------------------------------------------------------


def validate_structural(schema: Schema | None, obj: Any, path: str = "") -> list[FieldError]:
    """Validate obj against a CRD structural schema, with upstream's field errors.

    Runs what the custom resource strategy runs: the OpenAPI schema (kube-openapi
    semantics and messages), the x-kubernetes-embedded-resource checks, and the
    uniqueness of x-kubernetes-list-type set/map lists. path prefixes the error paths
    (empty for a whole object, as upstream: `spec.replicas: Invalid value: ...`).
    """
    if not schema:
        return []
    errs = OpenAPIValidator(path).run(schema, obj)
    errs.extend(_validate_embedded(path, obj, schema))
    errs.extend(_validate_list_types(path, obj, schema))
    return errs


def _child(path: str, name: str) -> str:
    return f"{path}.{name}" if path else name


def _index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def _key(path: str, k: str) -> str:
    return f"{path}[{k}]"


_DNS1035 = re.compile(r"[a-z]([-a-z0-9]*[a-z0-9])?")
_DNS1035_MSG = (
    "a lowercase RFC 1035 label must consist of lower case alphanumeric characters or '-', start with an "
    "alphabetic character, and end with an alphanumeric character (e.g. 'my-name',  or 'abc-123', regex used "
    "for validation is '[a-z]([-a-z0-9]*[a-z0-9])?')"
)


def _validate_embedded(path: str, x: Any, s: Schema | None) -> list[FieldError]:
    if s is None:
        return []
    errs: list[FieldError] = []
    if isinstance(x, dict):
        if s.get("x-kubernetes-embedded-resource"):
            errs.extend(_embedded_resource(path, x))
        props = s.get("properties") or {}
        ap = s.get("additionalProperties")
        for k, v in x.items():
            if k in props:
                errs.extend(_validate_embedded(_child(path, k), v, props[k]))
            elif isinstance(ap, dict):
                errs.extend(_validate_embedded(_key(path, k), v, ap))
    elif isinstance(x, list):
        items = s.get("items")
        for i, v in enumerate(x):
            errs.extend(_validate_embedded(_index(path, i), v, items if isinstance(items, dict) else None))
    return errs


def _embedded_resource(path: str, x: dict[str, Any]) -> list[FieldError]:
    errs: list[FieldError] = []
    if "apiVersion" not in x:
        errs.append(FieldError(_child(path, "apiVersion"), "Required", detail="must not be empty"))
    if "kind" not in x:
        errs.append(FieldError(_child(path, "kind"), "Required", detail="must not be empty"))
    av = x.get("apiVersion")
    if "apiVersion" in x:
        p = _child(path, "apiVersion")
        if not isinstance(av, str):
            errs.append(FieldError(p, "Invalid", av, "must be a string"))
        elif not av:
            errs.append(FieldError(p, "Invalid", av, "must not be empty"))
        elif av.count("/") > 1:
            errs.append(FieldError(p, "Invalid", av, f"unexpected GroupVersion string: {av}"))
    if "kind" in x:
        p = _child(path, "kind")
        kind = x.get("kind")
        if not isinstance(kind, str):
            errs.append(FieldError(p, "Invalid", kind, "must be a string"))
        elif not kind:
            errs.append(FieldError(p, "Invalid", kind, "must not be empty"))
        else:
            msgs = []
            if len(kind) > 63:
                msgs.append("must be no more than 63 characters")
            if not _DNS1035.fullmatch(kind.lower()):
                msgs.append(_DNS1035_MSG)
            if msgs:
                errs.append(
                    FieldError(p, "Invalid", kind, "may have mixed case, but should otherwise match: " + ",".join(msgs))
                )
    return errs


def _validate_list_types(path: str, x: Any, s: Schema | None) -> list[FieldError]:
    if s is None:
        return []
    errs: list[FieldError] = []
    if isinstance(x, dict):
        ap = s.get("additionalProperties")
        props = s.get("properties") or {}
        if isinstance(ap, dict):
            for k, v in x.items():
                errs.extend(_validate_list_types(_key(path, k), v, ap))
        for k, v in x.items():
            if k in props:
                errs.extend(_validate_list_types(_child(path, k), v, props[k]))
    elif isinstance(x, list):
        lt = s.get("x-kubernetes-list-type")
        if lt == "set":
            for i in _non_unique(x):
                errs.append(_duplicate(_index(path, i), x[i]))
        elif lt == "map":
            errs.extend(_list_map_errors(path, s, x))
        items = s.get("items")
        if isinstance(items, dict):
            for i, v in enumerate(x):
                errs.extend(_validate_list_types(_index(path, i), v, items))
    return errs


def _canon(v: Any) -> Any:
    """A hashable identity for a JSON value; 1 and 1.0 equal (as Go's int64/float64 do not)."""
    if isinstance(v, (dict, list)):
        return ("c", json.dumps(v, sort_keys=True, separators=(",", ":")))
    if isinstance(v, bool):
        return ("b", v)
    return (type(v).__name__, v)


def _non_unique(items: list[Any]) -> list[int]:
    """Indices of the second appearance of each repeated value (upstream reports only those)."""
    seen: dict[Any, int] = {}
    out: list[int] = []
    for i, v in enumerate(items):
        key = _canon(v)
        n = seen.get(key, 0)
        if n == 1:
            out.append(i)
        seen[key] = n + 1
    return out


def _duplicate(path: str, value: Any) -> FieldError:
    # upstream prints compound values with Go's %#v; detail carries that rendering
    if isinstance(value, (dict, list)) or value is None:
        return FieldError(path, "Duplicate", value, go_sharp_value(value), omit_value=True)
    return FieldError(path, "Duplicate", value)


_UNSPECIFIED = object()


def _list_map_errors(path: str, s: Schema, items: list[Any]) -> list[FieldError]:
    for i, v in enumerate(items):
        if v is not None and not isinstance(v, dict):
            return [FieldError(_index(path, i), "Invalid", v, "must be an object for an array of list-type map")]
    if len(items) <= 1:
        return []
    keys_fields = s.get("x-kubernetes-list-map-keys") or []
    keys: list[Any] = []
    for v in items:
        if len(keys_fields) == 1:
            kf = keys_fields[0]
            keys.append(v[kf] if isinstance(v, dict) and kf in v else _UNSPECIFIED)
        else:
            keys.append({kf: v[kf] for kf in keys_fields if isinstance(v, dict) and kf in v})
    canon = [("u",) if k is _UNSPECIFIED else _canon(k) for k in keys]
    seen: dict[Any, int] = {}
    errs: list[FieldError] = []
    for i, c in enumerate(canon):
        n = seen.get(c, 0)
        if n == 1:
            k = keys[i]
            if len(keys_fields) == 1:
                k = {} if k is _UNSPECIFIED else {keys_fields[0]: k}
            errs.append(_duplicate(_index(path, i), k))
        seen[c] = n + 1
    return errs


# --- structural-ness (CRD validation) ---------------------------------------------------------


def structural_errors(schema: Schema, path: str = "") -> list[FieldError]:
    """Why a CRD schema is not structural (ValidateStructural plus the common API checks)."""
    errs: list[FieldError] = []
    check_invariants(schema, ROOT, path, errs)
    errs.sort(key=str)
    return errs


def is_structural(schema: Schema, path: str = "") -> list[str]:
    """Violations as `path: message` strings, sorted like upstream; empty when structural."""
    return [str(e) for e in structural_errors(schema, path)]
