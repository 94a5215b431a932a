"""Field paths and FieldError constructors, as upstream's k8s.io/apimachinery/pkg/util/validation/field.

Paths are plain strings rendered the way upstream's field.Path.String() renders them:
`spec.containers[0].ports[1].containerPort`, map keys as `resources.limits[cpu]`.

Upstream prints non-string bad values with Go's fmt verbs (`%v` for numbers, `%s` for
Stringers such as quantities, `%#v` for maps, slices and structs). pyk8s.api.errors renders
Python str values quoted and anything else with str(), so values that upstream prints
unquoted or as Go literals are wrapped in GoValue here.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

from ..errors import FieldError

__all__ = [
    "child", "index", "key",
    "GoValue", "go_quote", "go_string_map", "go_string_slice", "go_label_selector",
    "invalid", "required", "forbidden", "not_supported", "duplicate", "not_found",
    "too_long", "too_many", "internal_error", "dedupe", "readable_diff",
]


def child(path: str, *names: str) -> str:
    """path.Child(names...): `a.b.c`; an empty root yields just the child."""
    if len(names) == 1 and path:  # the common case, on every validated field
        return f"{path}.{names[0]}"
    for n in names:
        path = f"{path}.{n}" if path else n
    return path


def index(path: str, i: int) -> str:
    return f"{path}[{i}]"


def key(path: str, k: str) -> str:
    return f"{path}[{k}]"


class GoValue:
    """A bad value already rendered as upstream prints it (unquoted, or as a Go literal)."""

    __slots__ = ("text",)

    def __init__(self, text: str) -> None:
        self.text = text

    def __str__(self) -> str:
        return self.text

    def __repr__(self) -> str:
        return f"GoValue({self.text!r})"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, GoValue) and other.text == self.text

    def __hash__(self) -> int:
        return hash(self.text)


def go_quote(s: str) -> str:
    """Go's %q for ordinary strings (JSON escaping is the same for printable text)."""
    return json.dumps(s, ensure_ascii=False)


def go_string_map(m: dict[str, Any] | None, typ: str = "map[string]string") -> GoValue:
    """`%#v` of a map[string]string: keys sorted, `"k":"v"` pairs joined by `, `."""
    if m is None:
        return GoValue(f"{typ}(nil)")
    inner = ", ".join(f"{go_quote(str(k))}:{go_quote(str(v))}" for k, v in sorted(m.items()))
    return GoValue(f"{typ}{{{inner}}}")


def go_string_slice(items: Iterable[Any] | None, typ: str = "[]string") -> GoValue:
    """`%#v` of a []string."""
    if items is None:
        return GoValue(f"{typ}(nil)")
    return GoValue(f"{typ}{{" + ", ".join(go_quote(str(x)) for x in items) + "}")


def go_label_selector(sel: dict[str, Any] | None) -> GoValue:
    """`%#v` of a v1.LabelSelector, as printed in `field is immutable` errors on selectors."""
    sel = sel or {}
    ml = sel.get("matchLabels")
    exprs = sel.get("matchExpressions")
    ml_s = go_string_map(ml).text
    if exprs is None:
        ex_s = "[]v1.LabelSelectorRequirement(nil)"
    else:
        parts = []
        for e in exprs:
            vals = go_string_slice(e.get("values")).text
            parts.append(f"v1.LabelSelectorRequirement{{Key:{go_quote(e.get('key', ''))}, "
                         f"Operator:{go_quote(e.get('operator', ''))}, Values:{vals}}}")
        ex_s = "[]v1.LabelSelectorRequirement{" + ", ".join(parts) + "}"
    return GoValue(f"v1.LabelSelector{{MatchLabels:{ml_s}, MatchExpressions:{ex_s}}}")


def invalid(path: str, value: Any, detail: str) -> FieldError:
    return FieldError(path, "Invalid", value, detail)


def required(path: str, detail: str = "") -> FieldError:
    return FieldError(path, "Required", None, detail)


def forbidden(path: str, detail: str) -> FieldError:
    return FieldError(path, "Forbidden", None, detail)


def not_supported(path: str, value: Any, valid: Iterable[str]) -> FieldError:
    return FieldError(path, "NotSupported", value, valid_values=[str(v) for v in valid])


def duplicate(path: str, value: Any) -> FieldError:
    return FieldError(path, "Duplicate", value)


def not_found(path: str, value: Any, detail: str = "") -> FieldError:
    return FieldError(path, "NotFound", value, detail)


def too_long(path: str, limit: int) -> FieldError:
    # upstream: "Too long: may not be more than N bytes" (value not printed)
    return FieldError(path, "TooLong", None, limit=limit)


def too_many(path: str, actual: int, limit: int) -> FieldError:
    return FieldError(path, "TooMany", actual, limit=limit)


def internal_error(path: str, msg: str) -> FieldError:
    return FieldError(path, "InternalError", None, msg)


def dedupe(errs: list[FieldError]) -> list[FieldError]:
    """Drop repeated errors, as upstream's ErrorList.ToAggregate() does for the message."""
    seen: set[str] = set()
    out = []
    for e in errs:
        s = str(e)
        if s in seen:
            continue
        seen.add(s)
        out.append(e)
    return out


def _flatten(v: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(v, dict) and v:
        for k in sorted(v):
            _flatten(v[k], f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(v, list) and v:
        for i, x in enumerate(v):
            _flatten(x, f"{prefix}[{i}]", out)
    elif v not in (None, {}, []):
        out[prefix] = v


def readable_diff(old: Any, new: Any, type_name: str) -> str:
    """A readable stand-in for upstream's cmp.Diff in `... may not change ...` errors.

    Upstream prints a Go struct diff; here each changed leaf is one `-`/`+` line keyed by its
    wire path, wrapped in the type name the way cmp.Diff frames it.
    """
    a: dict[str, Any] = {}
    b: dict[str, Any] = {}
    _flatten(old, "", a)
    _flatten(new, "", b)
    lines = [f"  {type_name}{{"]
    for k in sorted(set(a) | set(b), key=_path_sort_key):
        if a.get(k) == b.get(k):
            continue
        if k in a:
            lines.append(f"-   {k}: {json.dumps(a[k], ensure_ascii=False)},")
        if k in b:
            lines.append(f"+   {k}: {json.dumps(b[k], ensure_ascii=False)},")
    lines.append("  }")
    return "\n".join(lines) + "\n"


def _path_sort_key(p: str) -> list[Any]:
    import re

    return [(0, int(x), "") if x.isdigit() else (1, 0, x) for x in re.split(r"[.\[\]]+", p) if x]
