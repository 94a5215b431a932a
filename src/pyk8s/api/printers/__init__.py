"""Server-side tables (meta.k8s.io/v1 Table), as kube-apiserver builds them for kubectl get.

`PRINTERS[(group, kind)]` holds each built-in kind's TablePrinter (columns as upstream's
pkg/printers/internalversion); kinds without one get `DEFAULT` (Name, Created At), and
custom resources get `crd_printer(additionalPrinterColumns)`. `build_table` turns objects
into the Table a list, get or watch event returns.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from ..errors import new_bad_request
from . import apps, auth, autoscaling, batch, cluster, core, networking, resource, storage
from .base import Column, TablePrinter
from .crd import DEFAULT, crd_printer
from .jsonpath import JSONPath, JSONPathError

__all__ = [
    "PRINTERS",
    "DEFAULT",
    "TablePrinter",
    "Column",
    "printer_for",
    "build_table",
    "crd_printer",
    "JSONPath",
    "JSONPathError",
    "INCLUDE_OBJECT_VALUES",
]

GroupKind = tuple[str, str]

PRINTERS: dict[GroupKind, TablePrinter] = {}
for _mod in (core, apps, batch, networking, storage, auth, autoscaling, cluster, resource):
    PRINTERS.update(_mod.PRINTERS)

INCLUDE_OBJECT_VALUES = ("None", "Metadata", "Object")


def printer_for(group: str, kind: str) -> TablePrinter:
    """The kind's printer, or the default Name/Created At table."""
    return PRINTERS.get((group, kind), DEFAULT)


def build_table(
    printer: TablePrinter,
    objs: Iterable[dict[str, Any]],
    now: float | None = None,
    include_object: str = "Metadata",
    list_meta: Mapping[str, Any] | None = None,
    no_headers: bool = False,
    api_version: str = "meta.k8s.io/v1",
) -> dict[str, Any]:
    """A meta.k8s.io Table of `objs`.

    include_object: "Metadata" (default, also ""), "Object" or "None" -- each row's object
    is then a PartialObjectMetadata, the object itself (already in the requested version),
    or null. list_meta supplies resourceVersion / continue / remainingItemCount (for a
    single object, pass its resourceVersion). no_headers drops columnDefinitions. The
    PartialObjectMetadata shares the object's metadata dict (no copy: tables are built for
    every list and watch event); callers must not mutate it afterwards.
    """
    if now is None:
        now = time.time()
    mode = include_object or "Metadata"
    if mode not in INCLUDE_OBJECT_VALUES:
        raise new_bad_request(f'unrecognized includeObject value: "{include_object}"')
    items = list(objs)
    if printer.sort_key is not None and len(items) > 1:
        items.sort(key=printer.sort_key)
    cells_of = printer.row
    conditions_of = printer.conditions
    rows = []
    for obj in items:
        row: dict[str, Any] = {"cells": cells_of(obj, now)}
        if conditions_of is not None:
            conds = conditions_of(obj)
            if conds:
                row["conditions"] = conds
        if mode == "Metadata":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": api_version,
                "metadata": obj.get("metadata") or {},
            }
        elif mode == "Object":
            row["object"] = obj
        else:
            row["object"] = None
        rows.append(row)
    metadata: dict[str, Any] = {}
    if list_meta:
        for k in ("resourceVersion", "continue", "remainingItemCount"):
            v = list_meta.get(k)
            if v not in (None, ""):
                metadata[k] = v
    table: dict[str, Any] = {"kind": "Table", "apiVersion": api_version, "metadata": metadata}
    # Both fields are serialised even when empty (no omitempty upstream): null headers
    # under noHeaders, and null rows from the default convertor when nothing matched.
    table["columnDefinitions"] = None if no_headers else printer.columns
    table["rows"] = None if (not rows and printer is DEFAULT) else rows
    return table
