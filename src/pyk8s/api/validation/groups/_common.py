"""Helpers shared by the non-core group validators.

Go-literal rendering of bad values (upstream prints non-string values with `%#v`),
int-or-percent checks (apps' ValidatePositiveIntOrPercent and friends), label selector
conversion, and the webhook client config checks admissionregistration and CRD
conversion share (apiserver's util/webhook).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, TypeGuard
from urllib.parse import urlsplit

from ...errors import FieldError
from ...labels import Selector, SelectorParseError, selector_from_label_selector
from ..field import GoValue, child, go_quote, go_string_map, go_string_slice, invalid, required
from ..meta import validate_nonnegative
from ..names import is_dns1123_label, is_dns1123_subdomain, is_valid_percent, is_valid_port_num, regex_error

__all__ = [
    "is_int", "as_dict", "as_list", "spec_of", "dedupe_errors", "semantic_equal", "label_selector", "selector_or_none",
    "go_int_or_string", "go_struct", "go_generic", "go_null_or",
    "validate_positive_int_or_percent", "is_not_more_than_100_percent", "int_or_percent_value",
    "validate_dns1123_label", "validate_domain_prefixed_path", "parse_ip", "validate_webhook_url", "validate_webhook_service", "go_strings",
]


def is_int(v: Any) -> TypeGuard[int]:
    return isinstance(v, int) and not isinstance(v, bool)


def as_dict(v: Any) -> dict[str, Any]:
    return v if isinstance(v, dict) else {}


def as_list(v: Any) -> list[Any]:
    return v if isinstance(v, list) else []


def spec_of(obj: dict[str, Any], key: str = "spec") -> dict[str, Any]:
    s = obj.get(key)
    return s if isinstance(s, dict) else {}


def dedupe_errors(errs: list[FieldError]) -> list[FieldError]:
    """Upstream strategies often run the create validator and the update validator, which
    both validate the spec; the aggregate message shows each error once."""
    seen: set[str] = set()
    out = []
    for e in errs:
        s = str(e)
        if s not in seen:
            seen.add(s)
            out.append(e)
    return out


def _normalized(v: Any) -> Any:
    """Semantic.DeepEqual treats nil and empty collections alike; wire dicts omit either."""
    if isinstance(v, dict):
        out = {k: _normalized(x) for k, x in v.items()}
        return {k: x for k, x in out.items() if x is not None and x != {} and x != []}
    if isinstance(v, list):
        return [_normalized(x) for x in v]
    return v


def semantic_equal(a: Any, b: Any) -> bool:
    return _normalized(a) == _normalized(b)


def label_selector(sel: Any) -> Selector | None:
    """metav1.LabelSelectorAsSelector; None when the selector cannot be converted."""
    try:
        return selector_from_label_selector(sel if isinstance(sel, dict) else None)
    except SelectorParseError:
        return None


def selector_or_none(sel: Any) -> GoValue:
    """A *metav1.LabelSelector as ErrorBody prints it: `null` when nil, else the struct."""
    from ..field import go_label_selector

    return GoValue("null") if sel is None else go_label_selector(sel)


# ---- Go literal rendering --------------------------------------------------------------


def go_int_or_string(v: Any) -> GoValue:
    """`%#v` of an intstr.IntOrString (its String() has a pointer receiver, so not used)."""
    if isinstance(v, str):
        return GoValue(f"intstr.IntOrString{{Type:1, IntVal:0, StrVal:{go_quote(v)}}}")
    n = v if is_int(v) else 0
    return GoValue(f"intstr.IntOrString{{Type:0, IntVal:{n}, StrVal:\"\"}}")


def go_null_or(v: Any, render: Callable[[Any], str]) -> str:
    return "nil" if v is None else render(v)


def go_struct(type_name: str, fields: list[tuple[str, str]]) -> GoValue:
    """`%#v` of a struct from already rendered field values, in declaration order."""
    return GoValue(type_name + "{" + ", ".join(f"{k}:{v}" for k, v in fields) + "}")


def go_generic(v: Any, type_name: str = "") -> str:
    """An approximation of `%#v` for nested API structs we do not model field by field
    (pod templates, CRD versions): exported field names, Go-quoted strings, nil pointers."""
    if v is None:
        return "nil"
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return go_quote(v)
    if isinstance(v, (int, float)):
        return str(v)
    if isinstance(v, list):
        return (type_name or "[]interface {}") + "{" + ", ".join(go_generic(x) for x in v) + "}"
    if isinstance(v, dict):
        if v and all(isinstance(x, str) for x in v.values()) and not type_name:
            return go_string_map(v).text
        parts = [f"{k[:1].upper()}{k[1:]}:{go_generic(x)}" for k, x in v.items()]
        return type_name + "{" + ", ".join(parts) + "}"
    return str(v)


# ---- int or percent (pkg/apis/apps/validation) -----------------------------------------


def _percent_value(v: Any) -> int | None:
    if isinstance(v, str) and not is_valid_percent(v):
        return int(v[:-1])
    return None


def int_or_percent_value(v: Any) -> int:
    """getIntOrPercentValue: the number of a percent, the int, or Atoi of another string (0 on error)."""
    p = _percent_value(v)
    if p is not None:
        return p
    if is_int(v):
        return v
    if isinstance(v, str):
        try:
            return int(v)
        except ValueError:
            return 0
    return 0


def validate_positive_int_or_percent(v: Any, path: str) -> list[FieldError]:
    if isinstance(v, str):
        return [invalid(path, go_int_or_string(v), m) for m in is_valid_percent(v)]
    if is_int(v):
        return validate_nonnegative(v, path)
    if v is None:
        return []
    return [invalid(path, GoValue(go_generic(v)), "must be an integer or percentage (e.g '5%%')")]


def is_not_more_than_100_percent(v: Any, path: str) -> list[FieldError]:
    p = _percent_value(v)
    if p is None or p <= 100:
        return []
    return [invalid(path, go_int_or_string(v), "must not be greater than 100%")]


# ---- names and webhooks ----------------------------------------------------------------


def parse_ip(value: str) -> Any:
    """netutils.ParseIPSloppy (None when not an IP)."""
    from ..names import _parse_ip_sloppy

    return _parse_ip_sloppy(value)


def validate_dns1123_label(value: str, path: str) -> list[FieldError]:
    """core's ValidateDNS1123Label: one Invalid per message."""
    return [invalid(path, value, m) for m in is_dns1123_label(value)]


_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_http_path_re = re.compile(_HTTP_PATH_FMT)


def validate_domain_prefixed_path(path: str, value: str) -> list[FieldError]:
    """apimachinery's IsDomainPrefixedPath (IngressClass controller, Job managedBy)."""
    if not value:
        return [required(path)]
    segs = value.split("/", 1)
    if len(segs) != 2 or not segs[0] or not segs[1]:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    errs = [invalid(path, segs[0], m) for m in is_dns1123_subdomain(segs[0])]
    if not _http_path_re.fullmatch(segs[1]):
        errs.append(invalid(path, segs[1], regex_error("Invalid path", _HTTP_PATH_FMT)))
    return errs


_URL_FORM = "; desired format: https://host[/path]"


def validate_webhook_url(path: str, url: str, force_https: bool) -> list[FieldError]:
    """apiserver util/webhook ValidateWebhookURL."""
    try:
        u = urlsplit(url)
        u.port  # noqa: B018 - raises on a bad port, as url.Parse does
    except ValueError as e:
        return [required(path, f"url must be a valid URL: {e}{_URL_FORM}")]
    errs: list[FieldError] = []
    if force_https and u.scheme != "https":
        errs.append(invalid(path, u.scheme, "'https' is the only allowed URL scheme" + _URL_FORM))
    host = u.netloc.rpartition("@")[2]
    if not host:
        errs.append(invalid(path, host, "host must be specified" + _URL_FORM))
    if "@" in u.netloc:
        errs.append(invalid(path, u.netloc.rpartition("@")[0], "user information is not permitted in the URL"))
    if u.fragment:
        errs.append(invalid(path, u.fragment, "fragments are not permitted in the URL"))
    if u.query:
        errs.append(invalid(path, u.query, "query parameters are not permitted in the URL"))
    return errs


def validate_webhook_service(path: str, namespace: str, name: str, url_path: str | None, port: Any) -> list[FieldError]:
    """apiserver util/webhook ValidateWebhookService."""
    errs: list[FieldError] = []
    if not name:
        errs.append(required(child(path, "name"), "service name is required"))
    if not namespace:
        errs.append(required(child(path, "namespace"), "service namespace is required"))
    if port is not None:
        msgs = is_valid_port_num(port)
        if msgs:
            errs.append(invalid(child(path, "port"), port, "port is not valid: " + ", ".join(msgs)))
    if url_path is None or url_path in ("", "/"):
        return errs
    p = child(path, "path")
    if url_path == "//":
        return errs + [invalid(p, url_path, "segment[0] may not be empty")]
    if not url_path.startswith("/"):
        errs.append(invalid(p, url_path, "must start with a '/'"))
    check = url_path[1:]
    if check.endswith("/"):
        check = check[:-1]
    for i, step in enumerate(check.split("/")):
        if not step:
            errs.append(invalid(p, url_path, f"segment[{i}] may not be empty"))
            continue
        errs += [invalid(p, url_path, f"segment[{i}]: {m}") for m in is_dns1123_subdomain(step)]
    return errs


def go_strings(items: Any) -> str:
    """`%#v` of a []string field (nil when absent)."""
    return go_string_slice(items if isinstance(items, list) else None).text
