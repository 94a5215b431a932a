"""Query parameters as upstream converts them into ListOptions, DeleteOptions and friends.

Upstream decodes url.Values into its option structs with the runtime's conversions: a bool
is true unless the first value is "0" or "false" (any case), an integer goes through
strconv.ParseInt, a resourceVersion through strconv.ParseUint. Their error texts are what
clients see, in a 400 (upstream answers a resourceVersion out of range with its own 500;
a 4xx is the right answer to bad input, so ours is 400).
"""

from __future__ import annotations

from ..api import errors as E

__all__ = ["parse_bool", "parse_int64", "parse_resource_version", "validate_field_manager", "options_invalid"]

_INT64_MIN, _INT64_MAX = -(1 << 63), (1 << 63) - 1
_UINT64_MAX = (1 << 64) - 1
FIELD_MANAGER_MAX_LENGTH = 128  # upstream's FieldManagerMaxLength


def parse_bool(v: str | None) -> bool:
    """Upstream's Convert_Slice_string_To_bool: absent is false, "0" and "false" are false, all else true."""
    return v is not None and v != "0" and v.lower() != "false"


def _go_quote(v: str) -> str:
    import json

    return json.dumps(v, ensure_ascii=False)


def _digits(v: str) -> bool:
    return v.isascii() and v.isdigit()


def parse_int64(v: str) -> int:
    """strconv.ParseInt(v, 10, 64), its errors as a 400."""
    body = v[1:] if v[:1] in ("+", "-") else v
    if not _digits(body):
        raise E.new_bad_request(f"strconv.ParseInt: parsing {_go_quote(v)}: invalid syntax")
    n = int(v)
    if not _INT64_MIN <= n <= _INT64_MAX:
        raise E.new_bad_request(f"strconv.ParseInt: parsing {_go_quote(v)}: value out of range")
    return n


def parse_resource_version(v: str) -> int:
    """A resourceVersion as upstream's APIObjectVersioner parses it ("" and "0" are 0)."""
    if v in ("", "0"):
        return 0
    if not _digits(v):
        err = "invalid syntax"
    elif int(v) > _UINT64_MAX:
        err = "value out of range"
    else:
        return int(v)
    q = _go_quote(v)
    raise E.new_bad_request(f"resourceVersion: Invalid value: {q}: strconv.ParseUint: parsing {q}: {err}")


def validate_field_manager(manager: str, options_kind: str) -> None:
    """Upstream's ValidateFieldManager on Create/Update/PatchOptions: at most 128 bytes, printable."""
    errs: list[E.FieldError] = []
    if len(manager.encode()) > FIELD_MANAGER_MAX_LENGTH:
        errs.append(E.FieldError("fieldManager", "TooLong", limit=FIELD_MANAGER_MAX_LENGTH))
    pos = 0  # Go ranges over a string by byte offset
    for ch in manager:
        if not ch.isprintable() and ch != " ":
            errs.append(E.FieldError("fieldManager", "Invalid", manager,
                                     f"invalid character {_go_rune(ch)} (at position {pos})"))
        pos += len(ch.encode())
    if errs:
        raise options_invalid(options_kind, errs)


def options_invalid(options_kind: str, errs: list[E.FieldError]) -> E.StatusError:
    """422 for invalid request options, as upstream's NewInvalid on meta.k8s.io's option kinds."""
    err = E.new_invalid(options_kind, "", errs, "meta.k8s.io")
    err.message = f"{options_kind}.meta.k8s.io" + err.message[len(options_kind):]
    return err


def _go_rune(ch: str) -> str:
    """Go's %#U: U+0007 '\\a' style; non-printable runes print without the quoted form."""
    return f"U+{ord(ch):04X}"
