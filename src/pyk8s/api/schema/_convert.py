"""Schema conversion for the OpenAPI documents.

The shipped v1.33 definitions are JSON-Schema flavoured (`#/$defs/` refs, nullable types
as lists, extra enums on apiVersion/kind). OpenAPI v2 wants `#/definitions/` refs with
siblings allowed; OpenAPI v3 (as kube-apiserver publishes it) wraps a ref that carries a
description in `allOf: [{$ref}]`, which is what makes `kubectl explain` print both the
field's and the type's description. Custom resources get their CRD schema plus
apiVersion/kind/metadata, named like upstream (`com.example.v1.Widget`).
"""

from __future__ import annotations

import copy
import functools
from typing import Any

from pyk8s.api.definitions import definitions

__all__ = [
    "V2_REF",
    "V3_REF",
    "builtin_schema",
    "crd_definitions",
    "crd_definition_name",
    "closure",
    "refs_in",
]

V2_REF = "#/definitions/"
V3_REF = "#/components/schemas/"

_QUANTITY = "io.k8s.apimachinery.pkg.api.resource.Quantity"
_INT_OR_STRING = "io.k8s.apimachinery.pkg.util.intstr.IntOrString"
_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"
_LIST_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ListMeta"

_QUANTITY_DESC = (
    "Quantity is a fixed-point representation of a number. It provides convenient marshaling/unmarshaling in "
    "JSON and YAML, in addition to String() and AsInt64() accessors.\n\nThe serialization format is:\n\n``` "
    "<quantity>        ::= <signedNumber><suffix>\n\n\t(Note that <suffix> may be empty, from the \"\" case in "
    "<decimalSI>.)\n\n<digit>           ::= 0 | 1 | ... | 9 <digits>          ::= <digit> | <digit><digits> "
    "<number>          ::= <digits> | <digits>.<digits> | <digits>. | .<digits> <sign>            ::= \"+\" | "
    "\"-\" <signedNumber>    ::= <number> | <sign><number> <suffix>          ::= <binarySI> | <decimalExponent> | "
    "<decimalSI> <binarySI>        ::= Ki | Mi | Gi | Ti | Pi | Ei\n\n\t(International System of units; See: "
    "http://physics.nist.gov/cuu/Units/binary.html)\n\n<decimalSI>       ::= m | \"\" | k | M | G | T | P | E\n\n"
    "\t(Note that 1024 = 1Ki but 1000 = 1k; I didn't choose the capitalization.)\n\n<decimalExponent> ::= \"e\" "
    "<signedNumber> | \"E\" <signedNumber> ```\n\nNo matter which of the three exponent forms is used, no quantity "
    "may represent a number greater than 2^63-1 in magnitude, nor may it have more than 3 decimal places. Numbers "
    "larger or more precise will be capped or rounded up. (E.g.: 0.1m will rounded up to 1m.) This may be extended "
    "in the future if we require larger or smaller quantities.\n\nWhen a Quantity is parsed from a string, it will "
    "remember the type of suffix it had, and will use the same type again when it is serialized.\n\nBefore "
    "serializing, Quantity will be put in \"canonical form\". This means that Exponent/suffix will be adjusted up "
    "or down (with a corresponding increase or decrease in Mantissa) such that:\n\n- No precision is lost - No "
    "fractional digits will be emitted - The exponent (or suffix) is as large as possible.\n\nThe sign will be "
    "omitted unless the number is negative.\n\nExamples:\n\n- 1.5 will be serialized as \"1500m\" - 1.5Gi will be "
    "serialized as \"1536Mi\"\n\nNote that the quantity will NEVER be internally represented by a floating point "
    "number. That is the whole point of this exercise.\n\nNon-canonical values will still parse as long as they "
    "are well formed, but will be re-emitted in their canonical form. (So always use canonical form, or don't "
    "diff.)\n\nThis format is intended to make it difficult to use these numbers without writing some sort of "
    "special handling code in the hopes that that will cause implementors to also use a fixed point "
    "implementation."
)
_INT_OR_STRING_DESC = (
    "IntOrString is a type that can hold an int32 or a string.  When used in JSON or YAML marshalling and "
    "unmarshalling, it produces or consumes the inner type.  This allows you to have, for example, a JSON field "
    "that can accept a name or number."
)
_API_VERSION_DESC = (
    "APIVersion defines the versioned schema of this representation of an object. Servers should convert "
    "recognized schemas to the latest internal value, and may reject unrecognized values. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_KIND_DESC = (
    "Kind is a string value representing the REST resource this object represents. Servers may infer this from "
    "the endpoint the client submits requests to. Cannot be updated. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)
_METADATA_DESC = (
    "Standard object's metadata. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata"
)

_SPECIAL = {
    _QUANTITY: (
        {"description": _QUANTITY_DESC, "type": "string"},
        {"description": _QUANTITY_DESC, "oneOf": [{"type": "string"}, {"type": "number"}]},
    ),
    _INT_OR_STRING: (
        {"description": _INT_OR_STRING_DESC, "format": "int-or-string", "type": "string"},
        {
            "description": _INT_OR_STRING_DESC,
            "format": "int-or-string",
            "oneOf": [{"type": "integer"}, {"type": "string"}],
        },
    ),
}


def _convert(s: Any, v3: bool, prefix: str) -> Any:
    """One JSON-Schema-flavoured schema to OpenAPI form (refs renamed, nullables collapsed)."""
    if not isinstance(s, dict):
        return s
    out: dict[str, Any] = {}
    ref = None
    for k, v in s.items():
        if k == "$ref":
            ref = prefix + v.rsplit("/", 1)[-1]
        elif k == "type":
            t = [x for x in v if x != "null"] if isinstance(v, list) else [v]
            if t:
                out["type"] = t[0]
        elif k == "properties":
            out[k] = {pk: _convert(pv, v3, prefix) for pk, pv in v.items()}
        elif k in ("items", "additionalProperties", "not"):
            out[k] = _convert(v, v3, prefix)
        elif k in ("allOf", "anyOf", "oneOf"):
            out[k] = [_convert(x, v3, prefix) for x in v]
        else:
            out[k] = v
    if ref is None:
        return out
    if not out:
        return {"$ref": ref}
    if v3:
        # OpenAPI 3.0 ignores siblings of $ref: upstream wraps the ref to keep the description
        return {"allOf": [{"$ref": ref}], **out}
    out["$ref"] = ref
    return out


@functools.cache
def _builtin(name: str, v3: bool) -> dict[str, Any]:
    special = _SPECIAL.get(name)
    if special:
        return special[1 if v3 else 0]
    d = definitions()[name]
    out = _convert(d, v3, V3_REF if v3 else V2_REF)
    if "x-kubernetes-group-version-kind" in d:
        # the shipped copy pins apiVersion/kind with an enum; upstream's does not
        for p in ("apiVersion", "kind"):
            prop = out.get("properties", {}).get(p)
            if isinstance(prop, dict) and "enum" in prop:
                out["properties"][p] = {k: v for k, v in prop.items() if k != "enum"}
    return out


def builtin_schema(name: str, v3: bool) -> dict[str, Any]:
    """The OpenAPI form of a built-in definition (shared, do not mutate)."""
    return _builtin(name, v3)


def refs_in(s: Any, out: set[str]) -> None:
    """Collect the definition names a converted schema refers to."""
    if isinstance(s, dict):
        for k, v in s.items():
            if k == "$ref" and isinstance(v, str):
                out.add(v.rsplit("/", 1)[-1])
            else:
                refs_in(v, out)
    elif isinstance(s, list):
        for x in s:
            refs_in(x, out)


def closure(names: set[str], extra: dict[str, dict[str, Any]], v3: bool) -> dict[str, dict[str, Any]]:
    """All schemas reachable from names; `extra` holds non-built-in (custom resource) schemas."""
    defs = definitions()
    result: dict[str, dict[str, Any]] = {}
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in result:
            continue
        if name in extra:
            schema = extra[name]
        elif name in defs or name in _SPECIAL:
            schema = _builtin(name, v3)
        else:
            continue
        result[name] = schema
        found: set[str] = set()
        refs_in(schema, found)
        todo.extend(found - result.keys())
    return result


# --- custom resources ----------------------------------------------------------------------


def crd_definition_name(group: str, version: str, kind: str) -> str:
    """Upstream's name for a custom resource schema: the group reversed, `com.example.v1.Widget`."""
    return ".".join([*reversed(group.split(".")), version, kind])


def _served_schema(crd: dict[str, Any], version: str) -> dict[str, Any] | None:
    spec = crd.get("spec") or {}
    for v in spec.get("versions") or []:
        if v.get("name") == version:
            s = (v.get("schema") or {}).get("openAPIV3Schema")
            if s is not None:
                return s
    s = (spec.get("validation") or {}).get("openAPIV3Schema")  # pre-v1 single schema
    return s


def _to_v2(s: Any) -> Any:
    """ToStructuralOpenAPIV2: drop what v2 clients (kubectl) cannot cope with."""
    if not isinstance(s, dict):
        return s
    out = {k: v for k, v in s.items() if k not in ("allOf", "anyOf", "oneOf", "not")}
    if out.get("nullable"):
        for k in ("type", "nullable", "items", "properties"):
            out.pop(k, None)
    if out.get("x-kubernetes-preserve-unknown-fields"):
        out.pop("items", None)
        out.pop("properties", None)
    if "items" in out:
        out["items"] = _to_v2(out["items"])
    elif out.get("type") == "array":
        out.pop("type")
    if isinstance(out.get("additionalProperties"), dict):
        out["additionalProperties"] = _to_v2(out["additionalProperties"])
    if isinstance(out.get("properties"), dict):
        props = out["properties"]
        out["properties"] = {k: _to_v2(v) for k, v in props.items()}
        nullable = {k for k, v in props.items() if isinstance(v, dict) and v.get("nullable")}
        if nullable and isinstance(out.get("required"), list):
            out["required"] = [r for r in out["required"] if r not in nullable]
            if not out["required"]:
                del out["required"]
    return out


def _meta_ref(v3: bool, description: str, target: str) -> dict[str, Any]:
    if v3:
        return {"allOf": [{"$ref": V3_REF + target}], "description": description}
    return {"$ref": V2_REF + target, "description": description}


def _add_type_meta(s: dict[str, Any], v3: bool) -> None:
    props = s.setdefault("properties", {})
    props["apiVersion"] = {"description": _API_VERSION_DESC, "type": "string"}
    props["kind"] = {"description": _KIND_DESC, "type": "string"}
    props["metadata"] = _meta_ref(v3, _METADATA_DESC, _OBJECT_META)


_EMBEDDED_API_VERSION_DESC = (
    "apiVersion defines the versioned schema of this representation of an object. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#resources"
)
_EMBEDDED_KIND_DESC = (
    "kind is a string value representing the type of this object. In CamelCase. More info: "
    "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds"
)


def _embedded(s: Any, v3: bool) -> Any:
    """Give x-kubernetes-embedded-resource objects their apiVersion/kind/metadata (addEmbeddedProperties)."""
    if not isinstance(s, dict):
        return s
    if isinstance(s.get("properties"), dict):
        s["properties"] = {k: _embedded(v, v3) for k, v in s["properties"].items()}
    for k in ("items", "additionalProperties"):
        if isinstance(s.get(k), dict):
            s[k] = _embedded(s[k], v3)
    if not v3 and s.get("x-kubernetes-preserve-unknown-fields"):
        return s  # v2 clients would then refuse the unknown fields
    if s.get("x-kubernetes-embedded-resource"):
        props = s.setdefault("properties", {})
        props["apiVersion"] = {"description": _EMBEDDED_API_VERSION_DESC, "type": "string"}
        props["kind"] = {"description": _EMBEDDED_KIND_DESC, "type": "string"}
        props["metadata"] = _meta_ref(v3, _METADATA_DESC, _OBJECT_META)
        required = list(s.get("required") or [])
        for r in ("kind", "apiVersion"):
            if r not in required:
                required.append(r)
        s["required"] = required
    return s


def crd_definitions(crd: dict[str, Any], version: str, v3: bool) -> dict[str, dict[str, Any]]:
    """The schema and list schema of one served version of a CRD, keyed by upstream's names."""
    spec = crd.get("spec") or {}
    group = spec.get("group", "")
    names = spec.get("names") or {}
    kind = names.get("kind", "")
    list_kind = names.get("listKind") or f"{kind}List"
    plural = names.get("plural", "")
    name = crd_definition_name(group, version, kind)
    list_name = crd_definition_name(group, version, list_kind)
    source = copy.deepcopy(_served_schema(crd, version))
    preserve = bool((source or {}).get("x-kubernetes-preserve-unknown-fields") or spec.get("preserveUnknownFields"))
    if source is None or (not v3 and preserve):
        # upstream publishes a bare object then: kubectl would reject fields it does not know
        schema: dict[str, Any] = {"type": "object"}
    else:
        schema = _embedded(_to_v2(source) if not v3 else source, v3)
        _add_type_meta(schema, v3)
    schema["x-kubernetes-group-version-kind"] = [{"group": group, "kind": kind, "version": version}]
    item_ref = {"$ref": (V3_REF if v3 else V2_REF) + name}
    list_schema = {
        "description": f"{list_kind} is a list of {kind}",
        "properties": {
            "apiVersion": {"description": _API_VERSION_DESC, "type": "string"},
            "items": {
                "description": f"List of {plural}. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md",
                "items": item_ref,
                "type": "array",
            },
            "kind": {"description": _KIND_DESC, "type": "string"},
            "metadata": _meta_ref(
                v3,
                "Standard list metadata. More info: "
                "https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#types-kinds",
                _LIST_META,
            ),
        },
        "required": ["items"],
        "type": "object",
        "x-kubernetes-group-version-kind": [{"group": group, "kind": list_kind, "version": version}],
    }
    return {name: schema, list_name: list_schema}
