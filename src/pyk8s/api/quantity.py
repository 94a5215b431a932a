"""resource.Quantity: parsing, canonical form, comparison and arithmetic, as upstream.

A quantity is held exactly as an integer number of nano-units (upstream keeps nothing
finer: parsing rounds a finer non-zero value away from zero, so "0.9n" is "1n") plus the
suffix family it was written in (DecimalSI, BinarySI or DecimalExponent), which decides
how it prints. Canonical form never loses precision, never prints a fraction, and uses
the largest suffix possible: "1000m" -> "1", "0.5" -> "500m", "1.5Gi" -> "1536Mi",
"1.1Ki" -> "1126400m" (a binary value that is not whole falls back to decimal).
"""

from __future__ import annotations

from functools import lru_cache, total_ordering
from typing import Any

__all__ = [
    "Quantity",
    "QuantityError",
    "parse_quantity",
    "canonical",
    "FORMAT_ERROR",
    "NUMERIC_ERROR",
    "SUFFIX_ERROR",
    "DECIMAL_SI",
    "BINARY_SI",
    "DECIMAL_EXPONENT",
]

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"

FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
NUMERIC_ERROR = "unable to parse numeric part of quantity"
SUFFIX_ERROR = "unable to parse quantity's suffix"

_NANO = 10**9
_MAX_BINARY = 2**63 - 1  # parsing caps BinarySI values here, silently
_MAX_EXPONENT = 4096  # beyond any real quantity; keeps a hostile "1e999999999" cheap

_DEC_SUFFIX_EXP = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_DEC_EXP_SUFFIX = {v: k for k, v in _DEC_SUFFIX_EXP.items()}
_BIN_SUFFIX_EXP = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_BIN_EXP_SUFFIX = {v // 10: k for k, v in _BIN_SUFFIX_EXP.items()}
_SUFFIX_CHARS = frozenset("eEinumkKMGTP")
_DIGITS = frozenset("0123456789")


class QuantityError(ValueError):
    """A string that is not a quantity; the message is upstream's error text."""


def _interpret_suffix(suffix: str) -> tuple[int, int, str]:
    """(base, exponent, format) for a suffix, as upstream's suffixHandler.interpret."""
    e = _DEC_SUFFIX_EXP.get(suffix)
    if e is not None:
        return 10, e, DECIMAL_SI
    e = _BIN_SUFFIX_EXP.get(suffix)
    if e is not None:
        return 2, e, BINARY_SI
    if len(suffix) > 1 and suffix[0] in "eE":
        digits = suffix[1:]
        body = digits[1:] if digits[0] in "+-" else digits
        if body and all(c in _DIGITS for c in body):
            exp = int(digits)
            if abs(exp) <= _MAX_EXPONENT:
                return 10, exp, DECIMAL_EXPONENT
            raise QuantityError(NUMERIC_ERROR)
    raise QuantityError(SUFFIX_ERROR)


def _scan(s: str) -> tuple[bool, str, str, str]:
    """parseQuantityString: (positive, integer digits, fraction digits, suffix)."""
    n = len(s)
    pos = 0
    positive = True
    if n and s[0] in "+-":
        positive = s[0] == "+"
        pos = 1
    while pos < n and s[pos] == "0":
        pos += 1
    if pos >= n:  # only a sign and/or zeros: upstream reads that as 0
        return positive, "0", "", ""
    start = pos
    while pos < n and s[pos] in _DIGITS:
        pos += 1
    num = s[start:pos] or "0"
    denom = ""
    if pos < n and s[pos] == ".":
        pos += 1
        start = pos
        while pos < n and s[pos] in _DIGITS:
            pos += 1
        denom = s[start:pos]
    suffix_start = pos
    while pos < n and s[pos] in _SUFFIX_CHARS:
        pos += 1
    if pos < n and s[pos] in "+-":
        pos += 1
    while pos < n and s[pos] in _DIGITS:
        pos += 1
    if pos < n:
        raise QuantityError(FORMAT_ERROR)
    return positive, num, denom, s[suffix_start:]


def _div_away(num: int, den: int) -> int:
    """num/den rounded away from zero (inf.RoundUp), for den > 0."""
    q, r = divmod(abs(num), den)
    if r:
        q += 1
    return q if num >= 0 else -q


@total_ordering
class Quantity:
    """An exact quantity: `nanos` (value * 10^9) and the `format` it prints in."""

    __slots__ = ("nanos", "format")

    def __init__(self, nanos: int = 0, format: str = DECIMAL_SI) -> None:
        self.nanos = nanos
        self.format = format

    # -- construction

    @classmethod
    def parse(cls, s: str) -> Quantity:
        return parse_quantity(s)

    @classmethod
    def from_int(cls, value: int, format: str = DECIMAL_SI) -> Quantity:
        return cls(value * _NANO, format)

    @classmethod
    def from_milli(cls, milli: int, format: str = DECIMAL_SI) -> Quantity:
        return cls(milli * 1_000_000, format)

    # -- accessors (upstream's Value/MilliValue: round away from zero)

    def to_int(self) -> int:
        return _div_away(self.nanos, _NANO)

    def to_milli(self) -> int:
        return _div_away(self.nanos, 1_000_000)

    def to_float(self) -> float:
        return self.nanos / _NANO

    value = to_int
    milli_value = to_milli

    def is_zero(self) -> bool:
        return self.nanos == 0

    # -- arithmetic and comparison

    def __add__(self, other: Quantity) -> Quantity:
        # Upstream's Add keeps the receiver's format unless the receiver is zero.
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos + other.nanos, fmt)

    def __sub__(self, other: Quantity) -> Quantity:
        fmt = other.format if self.nanos == 0 else self.format
        return Quantity(self.nanos - other.nanos, fmt)

    def __neg__(self) -> Quantity:
        return Quantity(-self.nanos, self.format)

    def __mul__(self, n: int) -> Quantity:
        return Quantity(self.nanos * n, self.format)

    __rmul__ = __mul__

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.nanos == other.nanos
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.nanos < other.nanos

    def __hash__(self) -> int:
        return hash(self.nanos)

    def cmp(self, other: Quantity) -> int:
        return (self.nanos > other.nanos) - (self.nanos < other.nanos)

    def __bool__(self) -> bool:
        return self.nanos != 0

    # -- canonical string

    def __str__(self) -> str:
        return _canonical_string(self.nanos, self.format)

    def __repr__(self) -> str:
        return f"Quantity({str(self)!r}, {self.format})"

    to_json = __str__


@lru_cache(maxsize=8192)
def _canonical_string(nanos: int, fmt: str) -> str:
    if nanos == 0:
        return "0"
    if fmt == BINARY_SI:
        # Small or fractional binary values print as decimal, to avoid rounding.
        if -1024 * _NANO < nanos < 1024 * _NANO or nanos % _NANO:
            fmt = DECIMAL_SI
        else:
            value = nanos // _NANO
            mag, neg = (-value, True) if value < 0 else (value, False)
            times = 0
            while mag >= 1024 and mag % 1024 == 0 and times < 6:
                mag //= 1024
                times += 1
            return ("-" if neg else "") + str(mag) + _BIN_EXP_SUFFIX.get(times, "")
    # Decimal: strip trailing zeros into the exponent, then lower it to a multiple of 3.
    mag, neg = (-nanos, True) if nanos < 0 else (nanos, False)
    exp = -9
    while mag % 10 == 0:
        mag //= 10
        exp += 1
    r = exp % 3  # Python's % is non-negative: floor to a multiple of 3
    if r:
        mag *= 10**r
        exp -= r
    if fmt == DECIMAL_EXPONENT:
        suffix = "" if exp == 0 else f"e{exp}"
    else:
        # Beyond E (10^18) no SI suffix exists: use an exponent rather than drop it.
        suffix = _DEC_EXP_SUFFIX.get(exp, f"e{exp}")
    return ("-" if neg else "") + str(mag) + suffix


@lru_cache(maxsize=8192)
def _parse(s: str) -> Quantity:
    if not s:
        raise QuantityError(FORMAT_ERROR)
    if s == "0":
        return Quantity(0, DECIMAL_SI)
    positive, num, denom, suffix = _scan(s)
    base, exponent, fmt = _interpret_suffix(suffix)
    digits = int(num + denom)
    if base == 10:
        # value = digits * 10^(exponent - len(denom)); in nanos: shift by 9 more.
        shift = exponent - len(denom) + 9
        nanos = digits * 10**shift if shift >= 0 else _div_away(digits, 10**-shift)
    else:
        # value = digits * 2^exponent / 10^len(denom)
        nanos = _div_away(digits * (1 << exponent) * _NANO, 10 ** len(denom))
        if nanos > _MAX_BINARY * _NANO:
            nanos = _MAX_BINARY * _NANO
        if 0 < nanos < _NANO:
            fmt = DECIMAL_SI
    return Quantity(nanos if positive else -nanos, fmt)


def parse_quantity(v: Any) -> Quantity:
    """resource.ParseQuantity; JSON numbers are accepted as upstream's UnmarshalJSON does.

    Raises QuantityError with upstream's message. The result is shared (cached): treat it
    as immutable.
    """
    if isinstance(v, Quantity):
        return v
    if isinstance(v, bool) or not isinstance(v, (str, int, float)):
        raise QuantityError(FORMAT_ERROR)
    if isinstance(v, str):
        return _parse(v.strip())
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e21:
        return _parse(str(int(v)))
    return _parse(repr(v) if isinstance(v, float) else str(v))


def canonical(v: Any) -> str:
    """The canonical string of a quantity given as string or number ("1000m" -> "1")."""
    return str(parse_quantity(v))
