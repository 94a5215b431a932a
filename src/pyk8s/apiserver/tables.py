"""Server-side printing: meta.k8s.io Table and PartialObjectMetadata representations."""

from __future__ import annotations

import time
from typing import Any

from ..api.resources import Resource
from .negotiation import Output

__all__ = ["table_for", "partial"]


def partial(obj: dict[str, Any], version: str = "v1") -> dict[str, Any]:
    return {"kind": "PartialObjectMetadata", "apiVersion": f"meta.k8s.io/{version}", "metadata": obj.get("metadata", {})}


def _printer_for(res: Resource) -> Any:
    from ..api import printers

    if res.crd is not None:
        return printers.crd_printer(_crd_columns(res))
    if res.deprecated_replacement and (res.group, res.kind) not in printers.PRINTERS:
        # old workload versions print as the apps/v1 kind they are stored as
        return printers.printer_for(res.storage_group if res.storage_group is not None else res.group, res.kind)
    return printers.printer_for(res.group, res.kind)


def _crd_columns(res: Resource) -> list[dict[str, Any]]:
    crd = res.crd or {}
    for v in (crd.get("spec") or {}).get("versions") or []:
        if v.get("name") == res.version:
            return v.get("additionalPrinterColumns") or []
    return []


def table_for(
    objs: list[dict[str, Any]],
    res: Resource,
    out: Output,
    list_meta: dict[str, Any] | None,
    include_object: str | None = "Metadata",
    headers: bool = True,
) -> dict[str, Any]:
    from ..api import printers

    printer = _printer_for(res)
    return printers.build_table(printer, objs, time.time(), include_object or "Metadata", list_meta or {},
                                no_headers=not headers, api_version=f"meta.k8s.io/{out.version or 'v1'}")
