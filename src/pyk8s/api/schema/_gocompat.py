"""Go-compatible parsing and formatting used to reproduce upstream error texts.

Upstream decode errors come straight from Go's standard library (time.Parse, base64,
strconv) and from apimachinery's Quantity parser; clients and tests match on these
texts, so the few we need are reimplemented here with their exact wording.
"""

from __future__ import annotations

import json
import math
from decimal import Decimal

__all__ = [
    "go_quote",
    "go_float",
    "go_number_literal",
    "parse_rfc3339_error",
    "base64_error",
    "quantity_error",
    "QUANTITY_FORMAT_ERROR",
    "QUANTITY_SUFFIX_ERROR",
]

QUANTITY_FORMAT_ERROR = (
    "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
)
QUANTITY_SUFFIX_ERROR = "unable to parse quantity's suffix"


def go_quote(s: str) -> str:
    """strconv.Quote, close enough: JSON string escaping keeps non-ASCII printable."""
    return json.dumps(s, ensure_ascii=False)


def go_float(f: float) -> str:
    """fmt's %v for a float64 (strconv %g, shortest): %e form when exp < -4 or exp >= 6."""
    if math.isnan(f):
        return "NaN"
    if math.isinf(f):
        return "+Inf" if f > 0 else "-Inf"
    if f == 0:
        return "-0" if math.copysign(1.0, f) < 0 else "0"
    sign, digits, exp = Decimal(repr(f)).as_tuple()
    ds = "".join(map(str, digits)).rstrip("0") or "0"
    nd = len(ds)
    dp = len(digits) + int(exp)  # position of the decimal point relative to ds
    x = dp - 1
    neg = "-" if sign else ""
    if x < -4 or x >= 6:
        mant = ds[0] + ("." + ds[1:] if nd > 1 else "")
        return f"{neg}{mant}e{'-' if x < 0 else '+'}{abs(x):02d}"
    if dp <= 0:
        return f"{neg}0.{'0' * -dp}{ds}"
    if dp >= nd:
        return f"{neg}{ds}{'0' * (dp - nd)}"
    return f"{neg}{ds[:dp]}.{ds[dp:]}"


def go_number_literal(v: int | float) -> str:
    """The JSON literal Go would have seen for a number (best effort after parsing)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    return repr(v) if math.isfinite(v) else str(v)


# --- time.Parse(time.RFC3339, ...) errors -----------------------------------------

_RFC3339 = "2006-01-02T15:04:05Z07:00"
_RFC3339_MICRO = "2006-01-02T15:04:05.000000Z07:00"


def _days_in(month: int, year: int) -> int:
    if month == 2:
        leap = year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)
        return 29 if leap else 28
    return 30 if month in (4, 6, 9, 11) else 31


def _getnum(s: str, fixed: bool) -> tuple[int, str] | None:
    if not s or not s[0].isdigit() or not s[0].isascii():
        return None
    if len(s) < 2 or not (s[1].isdigit() and s[1].isascii()):
        if fixed:
            return None
        return int(s[0]), s[1:]
    return int(s[:2]), s[2:]


def parse_rfc3339_error(value: str, micro: bool = False) -> str | None:
    """None when Go's time.Parse(RFC3339[Micro], value) succeeds, else its error text."""
    layout = _RFC3339_MICRO if micro else _RFC3339
    v = value

    def bad(elem: str, rest: str) -> str:
        return f"parsing time {go_quote(value)} as {go_quote(layout)}: cannot parse {go_quote(rest)} as {go_quote(elem)}"

    def rng(what: str) -> str:
        return f"parsing time {go_quote(value)}: {what} out of range"

    # year "2006"
    if len(v) < 4 or not v[:4].isdigit() or not v[:4].isascii():
        return bad("2006", v)
    year, v = int(v[:4]), v[4:]
    steps: list[tuple[str, str]] = [("-", "01"), ("-", "02"), ("T", "15"), (":", "04"), (":", "05")]
    vals: dict[str, int] = {}
    for lit, elem in steps:
        if not v.startswith(lit):
            return bad(lit, v)
        v = v[len(lit):]
        got = _getnum(v, fixed=(elem != "15"))
        if got is None:
            return bad(elem, v)
        n, v = got
        vals[elem] = n
        if elem == "01" and not 1 <= n <= 12:
            return rng("month")
        if elem == "15" and not 0 <= n < 24:
            return rng("hour")
        if elem == "04" and not 0 <= n < 60:
            return rng("minute")
        if elem == "05" and not 0 <= n < 60:
            return rng("second")
    if micro:
        if not v.startswith("."):
            return bad(".000000", v)
        frac = v[1:7]
        if len(frac) < 6 or not frac.isdigit():
            return bad(".000000", v)
        v = v[7:]
    elif len(v) >= 2 and v[0] in ".," and v[1].isdigit():
        # Go accepts fractional seconds after "05" even when the layout has none
        n = 1
        while n < len(v) and v[n].isdigit():
            n += 1
        v = v[n:]
    # "Z07:00"
    if v.startswith("Z"):
        v = v[1:]
    else:
        if len(v) < 6 or v[3] != ":" or v[0] not in "+-":
            return bad("Z07:00", v)
        hh, mm = _getnum(v[1:3], True), _getnum(v[4:6], True)
        if hh is None or mm is None:
            return bad("Z07:00", v)
        if hh[0] > 24:
            return rng("time zone offset hour")
        if mm[0] > 60:
            return rng("time zone offset minute")
        v = v[6:]
    if v:
        return f"parsing time {go_quote(value)}: extra text: {go_quote(v)}"
    if not 1 <= vals["02"] <= _days_in(vals["01"], year):
        return rng("day")
    return None


# --- encoding/base64 StdEncoding errors ---------------------------------------------

_B64 = frozenset(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def base64_error(s: str) -> str | None:
    """None when base64.StdEncoding accepts s, else Go's CorruptInputError text."""
    src = s.encode()
    n = len(src)
    si = 0

    def err(off: int) -> str:
        return f"illegal base64 data at input byte {off}"

    while True:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return err(si - j)
            c = src[si]
            si += 1
            if c in _B64:
                j += 1
                continue
            if c in (10, 13):
                continue
            if c != 61:  # '='
                return err(si - 1)
            if j in (0, 1):
                return err(si - 1)
            if j == 2:
                while si < n and src[si] in (10, 13):
                    si += 1
                if si == n:
                    return err(n)
                if src[si] != 61:
                    return err(si - 1)
                si += 1
            while si < n and src[si] in (10, 13):
                si += 1
            if si < n:
                return err(si)
            return None


# --- resource.ParseQuantity errors -----------------------------------------------------

_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DEC_SUFFIXES = frozenset(["n", "u", "m", "", "k", "M", "G", "T", "P", "E"])
_BIN_SUFFIXES = frozenset(["Ki", "Mi", "Gi", "Ti", "Pi", "Ei"])


def quantity_error(s: str) -> str | None:
    """None when resource.ParseQuantity(s) succeeds, else its error text."""
    if not s:
        return QUANTITY_FORMAT_ERROR
    if s == "0":
        return None
    end = len(s)
    pos = 0
    if s[0] in "+-":
        pos = 1
    while pos < end and s[pos] == "0":
        pos += 1
    if pos >= end:
        return None
    i = pos
    while i < end and s[i].isdigit() and s[i].isascii():
        i += 1
    if i >= end:
        return None
    pos = i
    if s[pos] == ".":
        pos += 1
        i = pos
        while i < end and s[i].isdigit() and s[i].isascii():
            i += 1
        if i >= end:
            return None
        pos = i
    suffix_start = pos
    i = pos
    while i < end and s[i] in _SUFFIX_CHARS:
        i += 1
    if i < end:
        pos = i
        if s[pos] in "+-":
            pos += 1
        i = pos
        while i < end:
            if not (s[i].isdigit() and s[i].isascii()):
                return QUANTITY_FORMAT_ERROR
            i += 1
    suffix = s[suffix_start:]
    if suffix not in _DEC_SUFFIXES and suffix not in _BIN_SUFFIXES:
        if not (len(suffix) > 1 and suffix[0] in "eE" and _is_go_int(suffix[1:])):
            return QUANTITY_SUFFIX_ERROR
    # numeric overflow (ErrNumeric) needs more than 18 digits: not worth modelling
    return None


def _is_go_int(s: str) -> bool:
    body = s[1:] if s[:1] in ("+", "-") else s
    return bool(body) and body.isdigit() and body.isascii() and -(2**63) <= int(s) < 2**63
