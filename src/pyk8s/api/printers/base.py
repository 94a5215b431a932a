"""The table printer type, column definitions, and the cell helpers every group shares.

The server always prints "wide" (upstream's TableConvertor passes Wide: true): every row
carries a cell for every column, and kubectl hides priority-1 columns unless -o wide.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from .. import labels as _labels
from ..quantity import QuantityError, parse_quantity
from ..timefmt import age as _age
from ..timefmt import human_duration, parse_time_or_none

__all__ = [
    "Column",
    "TablePrinter",
    "col",
    "name_col",
    "age_col",
    "doc",
    "age",
    "meta",
    "containers_cells",
    "format_labels",
    "format_label_selector",
    "quantity_str",
    "bool_ptr",
    "list_with_more",
    "int_or_string",
    "human_duration",
    "parse_time_or_none",
]

CellsFn = Callable[[dict, float], list]


@cache
def doc(definition: str, prop: str) -> str:
    """An OpenAPI field description (upstream takes column descriptions from SwaggerDoc)."""
    try:
        from ..definitions import definitions

        d = definitions().get(definition, {})
        text = (d.get("properties", {}).get(prop, {}) or {}).get("description", "")
        # SwaggerDoc is the Go comment alone: without the OpenAPI "Possible enum values" paragraph
        return text.split("\n\nPossible enum values:\n", 1)[0]
    except Exception:  # descriptions are cosmetic: never fail a table over them
        return ""


_OBJECT_META = "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"


@dataclass(frozen=True)
class Column:
    """A TableColumnDefinition; `description` may be a (definition, property) reference."""

    name: str
    type: str = "string"
    format: str = ""
    description: str | tuple[str, str] = ""
    priority: int = 0

    def definition(self) -> dict[str, Any]:
        desc = self.description
        if isinstance(desc, tuple):
            desc = doc(*desc)
        return {
            "name": self.name,
            "type": self.type,
            "format": self.format,
            "description": desc,
            "priority": self.priority,
        }


def col(
    name: str,
    type: str = "string",
    description: str | tuple[str, str] = "",
    priority: int = 0,
    format: str = "",
) -> Column:
    return Column(name, type, format, description, priority)


def name_col() -> Column:
    return Column("Name", "string", "name", (_OBJECT_META, "name"))


def age_col() -> Column:
    return Column("Age", "string", "", (_OBJECT_META, "creationTimestamp"))


CONTAINERS_DESC = "Names of each container in the template."
IMAGES_DESC = "Images referenced by each container in the template."


@dataclass
class TablePrinter:
    """Columns plus a row function giving one cell per column.

    `conditions(obj)` may add TableRowConditions (pods report Completed); `sort_key`
    orders list rows where upstream sorts them (FlowSchemas by matching precedence).
    """

    column_specs: tuple[Column, ...]
    row: CellsFn
    conditions: Callable[[dict], list[dict] | None] | None = None
    sort_key: Callable[[dict], Any] | None = None
    _columns: list[dict[str, Any]] | None = field(default=None, init=False, repr=False)

    @property
    def columns(self) -> list[dict[str, Any]]:
        # Resolved lazily: descriptions come from the OpenAPI definitions.
        if self._columns is None:
            self._columns = [c.definition() for c in self.column_specs]
        return self._columns

    def cells(self, obj: dict, now: float) -> list:
        return self.row(obj, now)


def printer(columns: Iterable[Column], row: CellsFn, **kw: Any) -> TablePrinter:
    return TablePrinter(tuple(columns), row, **kw)


# ---------------------------------------------------------------------------------------
# Cell helpers


def meta(obj: Mapping[str, Any]) -> dict[str, Any]:
    return obj.get("metadata") or {}


def age(obj: Mapping[str, Any], now: float) -> str:
    return _age((obj.get("metadata") or {}).get("creationTimestamp"), now)


def containers_cells(containers: Iterable[Mapping[str, Any]] | None) -> tuple[str, str]:
    """layoutContainerCells: comma-joined names and images."""
    cs = containers or ()
    return ",".join(c.get("name", "") for c in cs), ",".join(c.get("image", "") for c in cs)


def pod_template_containers(obj: Mapping[str, Any]) -> tuple[str, str]:
    tmpl = (obj.get("spec") or {}).get("template") or {}
    return containers_cells((tmpl.get("spec") or {}).get("containers"))


format_labels = _labels.format_labels


def format_label_selector(sel: Mapping[str, Any] | None) -> str:
    return _labels.format_label_selector(sel)


def quantity_str(v: Any) -> str:
    """A quantity in canonical form; a missing quantity is Go's zero value, "0"."""
    if v is None:
        return "0"
    try:
        return str(parse_quantity(v))
    except QuantityError:
        return str(v)


def bool_ptr(v: Any) -> str:
    """printBoolPtr: "True"/"False", "<unset>" for nil."""
    if v is None:
        return "<unset>"
    return "True" if v else "False"


def list_with_more(items: list[str], total: int, limit: int = 3) -> str:
    """listWithMoreString: at most `limit` items, then " + N more...", "<unset>" when empty."""
    ret = ",".join(items[:limit])
    if total > limit:
        return f"{ret} + {total - limit} more..."
    return ret or "<unset>"


def int_or_string(v: Any) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    return str(v)


def condition_status(conditions: Iterable[Mapping[str, Any]] | None, ctype: str) -> str | None:
    """The status of the first condition of a type, None when absent."""
    for c in conditions or ():
        if c.get("type") == ctype:
            return c.get("status")
    return None
