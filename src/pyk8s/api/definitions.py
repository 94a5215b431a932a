"""The v1.33 OpenAPI definitions shipped by the kubernetes-validate package.

One loader for every consumer (OpenAPI serving, strict decoding, strategic merge patch,
server-side apply, explain). Definitions are JSON-Schema flavoured: `$ref` is
`#/$defs/<name>` and nullable types are lists such as ["string", "null"].

The shipped copy lacks upstream's enums: kube-openapi gives every field of an `+enum` type
an `enum` list and appends "Possible enum values: ..." to its description, which
`kubectl explain` prints. `openapi_enums.json` beside this module (scripts/gen_openapi_enums.py) puts
them back.
"""

from __future__ import annotations

import functools
import os
from typing import Any

import orjson

__all__ = ["definitions", "definition_for_gvk", "resolve_ref", "SCHEMA_VERSION"]

SCHEMA_VERSION = "v1.33.0"


def _schema_dir() -> str:
    import kubernetes_validate

    return os.path.join(
        os.path.dirname(kubernetes_validate.__file__), "kubernetes-json-schema", f"{SCHEMA_VERSION}-local"
    )


def _load_shipped_definitions() -> dict[str, dict[str, Any]]:
    """kubernetes-validate's v1.33 definitions as shipped (a fresh copy)."""
    with open(os.path.join(_schema_dir(), "_definitions.json"), "rb") as f:
        defs: dict[str, dict[str, Any]] = orjson.loads(f.read())["$defs"]
    return defs


def _add_enums(defs: dict[str, dict[str, Any]]) -> None:
    """Overlay upstream's enum lists and "Possible enum values" texts (openapi_enums.json)."""
    with open(os.path.join(os.path.dirname(__file__), "openapi_enums.json"), "rb") as f:
        enums: dict[str, dict[str, dict[str, Any]]] = orjson.loads(f.read())
    for name, fields in enums.items():
        props = (defs.get(name) or {}).get("properties") or {}
        for field, e in fields.items():
            p = props.get(field)
            if p is None:
                continue
            if "enum" in e:
                base = p.get("description", "")
                # as kube-openapi: the enum block is a paragraph of its own after the field's doc
                p["description"] = f"{base}\n\n{e['doc']}" if base else e["doc"]
                p["enum"] = e["enum"]
            for sub in ("items", "additionalProperties"):
                if sub in e and isinstance(p.get(sub), dict):
                    p[sub]["enum"] = e[sub]["enum"]


@functools.cache
def definitions() -> dict[str, dict[str, Any]]:
    """All definitions by their upstream name, e.g. `io.k8s.api.core.v1.Pod`."""
    defs = _load_shipped_definitions()
    _add_enums(defs)
    # the removed extensions/v1beta1 and apps/v1beta1/v1beta2 workloads we still serve for old manifests
    from .deprecated_definitions import deprecated_workload_definitions

    defs.update(deprecated_workload_definitions(defs))
    return defs


@functools.cache
def _gvk_index() -> dict[tuple[str, str, str], str]:
    idx: dict[tuple[str, str, str], str] = {}
    for name, d in definitions().items():
        for gvk in d.get("x-kubernetes-group-version-kind", ()):
            key = (gvk.get("group", ""), gvk["version"], gvk["kind"])
            # Prefer the definition in the group's own package over meta/v1 re-exports
            # (DeleteOptions, WatchEvent and Status are listed under every group).
            if key not in idx or "apimachinery" in idx[key]:
                idx[key] = name
    return idx


def definition_for_gvk(group: str, version: str, kind: str) -> str | None:
    """The definition name for a group/version/kind, or None if it has no built-in schema."""
    return _gvk_index().get((group, version, kind))


def resolve_ref(schema: dict[str, Any]) -> dict[str, Any]:
    """Follow a `$ref` (one level) to its definition; return the schema itself otherwise."""
    ref = schema.get("$ref")
    if ref:
        return definitions()[ref.rsplit("/", 1)[-1]]
    return schema
