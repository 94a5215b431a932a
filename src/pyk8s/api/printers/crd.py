"""The default table (Name, Created At) and custom resources' additionalPrinterColumns."""

from __future__ import annotations

from typing import Any

from ..timefmt import ZERO_TIME, format_time, human_duration, parse_time
from .base import Column, TablePrinter, col, doc, name_col
from .jsonpath import JSONPath, JSONPathError, print_value

__all__ = ["DEFAULT", "crd_printer", "cell_for_json_value"]

_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


def _created_at(obj: dict) -> str:
    ts = (obj.get("metadata") or {}).get("creationTimestamp")
    if not ts:
        return ZERO_TIME
    try:
        return format_time(parse_time(ts))  # normalised to UTC, whole seconds
    except ValueError:
        return ZERO_TIME


# rest.NewDefaultTableConvertor: kinds without a printer (Role, LimitRange, CRDs, ...).
DEFAULT = TablePrinter(
    (name_col(), Column("Created At", "date", "", (_META, "creationTimestamp"))),
    lambda obj, now: [(obj.get("metadata") or {}).get("name", ""), _created_at(obj)],
)


def cell_for_json_value(col_type: str, value: Any, now: float) -> Any:
    """cellForJSONValue: a typed cell, None when the value does not fit the column type."""
    if value is None:
        return None
    if col_type == "integer":
        if isinstance(value, bool):
            return None
        if isinstance(value, int):
            return value
        if isinstance(value, float):
            return int(value)
        return None
    if col_type == "number":
        if isinstance(value, bool):
            return None
        if isinstance(value, (int, float)):
            return float(value)
        return None
    if col_type == "boolean":
        return value if isinstance(value, bool) else None
    if col_type == "string":
        return value if isinstance(value, str) else None
    if col_type == "date":
        if not isinstance(value, str):
            return None
        if value in ("", "null"):
            return "<unknown>"
        try:
            return human_duration(now - parse_time(value))
        except ValueError:
            return "<invalid>"
    return None


def crd_printer(additional_printer_columns: list[dict[str, Any]] | None) -> TablePrinter:
    """The table of a custom resource version.

    With no columns the CRD serves Name plus an Age date column (.metadata.creationTimestamp);
    otherwise Name followed by exactly the declared columns. Raises JSONPathError for a
    column whose jsonPath cannot be parsed (the CRD handler reports that as an error).
    """
    cols = list(additional_printer_columns or ())
    if not cols:
        cols = [
            {
                "name": "Age",
                "type": "date",
                "description": doc(_META, "creationTimestamp"),
                "jsonPath": ".metadata.creationTimestamp",
            }
        ]
    specs: list[Column] = [name_col()]
    evaluators: list[tuple[JSONPath, str]] = []
    for c in cols:
        path_text = c.get("jsonPath", "")
        try:
            path = JSONPath(path_text)
        except JSONPathError:
            raise JSONPathError(f"unrecognized column definition {path_text!r}") from None
        desc = c.get("description") or f"Custom resource definition column (in JSONPath format): {path_text}"
        specs.append(
            col(
                c.get("name", ""),
                c.get("type", "string"),
                desc,
                int(c.get("priority") or 0),
                c.get("format", ""),
            )
        )
        evaluators.append((path, c.get("type", "string")))
    frozen = tuple(evaluators)

    def row(obj: dict, now: float) -> list:
        cells: list[Any] = [(obj.get("metadata") or {}).get("name", "")]
        for path, ctype in frozen:
            results = path.find(obj)
            if not results:
                cells.append(None)
                continue
            value = results[0]  # only simple paths: the first result is the cell
            if ctype == "string":
                cells.append(None if value is None else print_value(value))
            else:
                cells.append(cell_for_json_value(ctype, value, now))
        return cells

    return TablePrinter(tuple(specs), row)
