"""A list's or watch's field selector in its authorization attributes, as upstream's request info.

Upstream names a list or watch whose fieldSelector requires `metadata.name=X` by that name
(so RBAC's resourceNames and the Node authorizer judge it as one object), and since
AuthorizeWithSelectors hands authorizers the selector itself.
"""

from __future__ import annotations

from ..api.fields import FieldSelectorParseError
from ..api.fields import parse as parse_field_selector
from .authz import RequestAttributes

__all__ = ["with_field_selector", "required_value"]


def _valid_path_segment(name: str) -> bool:
    # upstream's path.IsValidPathSegmentName
    return name not in (".", "..") and "/" not in name and "%" not in name


def required_value(raw: str, field: str) -> str | None:
    """The value a raw field selector requires `field` to equal; None when it does not parse
    (the list itself answers that 400) or does not require one."""
    if not raw:
        return None
    try:
        return parse_field_selector(raw).requires_exact_match(field)
    except FieldSelectorParseError:
        return None


def with_field_selector(attrs: RequestAttributes, raw: str) -> None:
    attrs.field_selector = raw
    name = None if attrs.name else required_value(raw, "metadata.name")
    if name and _valid_path_segment(name):
        attrs.name = name
