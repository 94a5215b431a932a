"""Label and field selector predicates for lists and watches (parsing lives in pyk8s.api)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from . import kindhooks

Predicate = Callable[[dict[str, Any]], bool]


def build_predicate(gk: tuple[str, str], label_selector: str, field_selector: str) -> Predicate | None:
    """None when nothing filters; raises 400 StatusError for malformed selectors."""
    lpred: Predicate | None = None
    fpred: Predicate | None = None
    if label_selector:
        from ..api import labels

        sel = labels.parse(label_selector)  # raises a 400 StatusError with upstream's message
        if not sel.empty():

            def _lpred(obj: dict[str, Any], _m=sel.matches) -> bool:
                return _m((obj.get("metadata") or {}).get("labels") or {})

            lpred = _lpred

    if field_selector:
        from ..api import fields

        fsel = fields.validate_field_selector(gk[0], gk[1], fields.parse(field_selector))
        if not fsel.empty():

            def _fpred(obj: dict[str, Any], _m=fsel.matches) -> bool:
                return _m(kindhooks.field_set(gk, obj))

            fpred = _fpred

    if lpred is not None and fpred is not None:
        lp, fp = lpred, fpred
        return lambda o: lp(o) and fp(o)
    return lpred if lpred is not None else fpred
