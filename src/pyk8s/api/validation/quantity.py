"""resource.Quantity: parsing, comparison and the canonical string form, as upstream's
k8s.io/apimachinery/pkg/api/resource.

The API server never returns a quantity as the client wrote it: it is parsed, rounded up
to nano precision, and re-serialized in canonical form (`1000m` -> `1`, `0.5` -> `500m`,
`1024Mi` -> `1Gi`). Values are exact Fractions, so there is no float drift.

Quantities are immutable values: parsing a string and its canonical form are memoised
(every pod create parses the same few request strings several times; the Fraction
arithmetic was ~40% of defaulting and validation before the memo).
"""

from __future__ import annotations

import math
import re
from fractions import Fraction
from typing import Any

__all__ = ["Quantity", "parse_quantity", "canonical_quantity", "QUANTITY_FORMAT_ERROR", "MAX_MILLI_VALUE"]

QUANTITY_FORMAT_ERROR = "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
_NUMERIC_ERROR = "unable to parse numeric part of quantity"
_SUFFIX_ERROR = "unable to parse quantity's suffix"

_SPLIT = re.compile(r"([+-]?[0-9.]*)(.*)", re.S)
_DEC_SUFFIX = {"n": -9, "u": -6, "m": -3, "": 0, "k": 3, "M": 6, "G": 9, "T": 12, "P": 15, "E": 18}
_BIN_SUFFIX = {"Ki": 10, "Mi": 20, "Gi": 30, "Ti": 40, "Pi": 50, "Ei": 60}
_DEC_BY_EXP = {v: k for k, v in _DEC_SUFFIX.items()}
_BIN_BY_EXP = {v: k for k, v in _BIN_SUFFIX.items()}
_NANO = Fraction(1, 10**9)
MAX_MILLI_VALUE = (2**63 - 1) // 1000

DECIMAL_SI = "DecimalSI"
BINARY_SI = "BinarySI"
DECIMAL_EXPONENT = "DecimalExponent"


def _round_up_nano(v: Fraction) -> Fraction:
    """Round the magnitude up to a multiple of 1n, as ParseQuantity does (never to zero)."""
    scaled = v / _NANO
    if scaled.denominator == 1:
        return v
    mag = math.ceil(abs(scaled))
    return Fraction(mag if v > 0 else -mag) * _NANO


class Quantity:
    """An exact quantity with the format (suffix family) it was written in."""

    __slots__ = ("value", "format", "_canonical")

    def __init__(self, value: Fraction | int, fmt: str = DECIMAL_SI) -> None:
        self.value = value if type(value) is Fraction else Fraction(value)
        self.format = fmt
        self._canonical: str | None = None

    # comparisons are by value only, as Quantity.Cmp
    def cmp(self, other: Quantity | int) -> int:
        ov = other.value if isinstance(other, Quantity) else Fraction(other)
        v = self.value
        # cross-multiplied (denominators are positive): Fraction's own comparisons are slow
        d = v.numerator * ov.denominator - ov.numerator * v.denominator
        return (d > 0) - (d < 0)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Quantity):
            return self.value == other.value
        if isinstance(other, (int, Fraction)):
            return self.value == other
        return NotImplemented

    def __lt__(self, other: Quantity) -> bool:
        return self.value < other.value

    def __le__(self, other: Quantity) -> bool:
        return self.value <= other.value

    def __hash__(self) -> int:
        return hash(self.value)

    def __add__(self, other: Quantity) -> Quantity:
        return Quantity(self.value + other.value, self.format)

    def is_zero(self) -> bool:
        return self.value == 0

    def int_value(self) -> int:
        """Value(): rounded up (away from zero) to an integer."""
        return math.ceil(self.value) if self.value >= 0 else -math.ceil(-self.value)

    def milli_value(self) -> int:
        v = self.value * 1000
        return math.ceil(v) if v >= 0 else -math.ceil(-v)

    def round_up(self, scale: int) -> Quantity:
        """RoundUp(scale): e.g. scale -3 rounds the magnitude up to whole milli units."""
        v = self.value
        if scale <= 0 and (v.numerator * 10 ** -scale) % v.denominator == 0:
            return self  # already at that precision: integer arithmetic, no Fraction division
        unit = Fraction(10) ** scale
        scaled = self.value / unit
        if scaled.denominator == 1:
            return self  # already at that precision (quantities are immutable)
        mag = math.ceil(abs(scaled))
        return Quantity(Fraction(mag if self.value > 0 else -mag) * unit, self.format)

    def __str__(self) -> str:
        return self.canonical()

    def __repr__(self) -> str:
        return f"Quantity({self.canonical()!r})"

    def canonical(self) -> str:
        """CanonicalizeBytes: the form the API server serializes."""
        c = self._canonical
        if c is None:
            c = self._canonical = self._canonicalize()
        return c

    def _canonicalize(self) -> str:
        v = self.value
        if v == 0:
            return "0"
        fmt = self.format
        if fmt == BINARY_SI:
            if -1024 < v < 1024 or v.denominator != 1:
                fmt = DECIMAL_SI  # avoid rounding: show small or fractional values in decimal
        if fmt == BINARY_SI:
            n, exp = int(v), 0
            while n % 1024 == 0 and exp < 60:
                n //= 1024
                exp += 10
            suffix = _BIN_BY_EXP.get(exp)
            if suffix is None:
                return str(int(v))
            return f"{n}{suffix}"
        # decimal: mantissa * 10**exp with the mantissa free of trailing zeros ...
        exp = 0
        while v.denominator != 1:
            v *= 10
            exp -= 1
        n = int(v)
        while n % 10 == 0:
            n //= 10
            exp += 1
        # ... and the exponent lowered to a multiple of 3
        r = exp % 3
        if r:
            n *= 10**r
            exp -= r
        if fmt == DECIMAL_EXPONENT:
            return f"{n}e{exp}" if exp else str(n)
        suffix = _DEC_BY_EXP.get(exp)
        if suffix is None:
            # beyond E or below n: upstream has no suffix; show the plain integer when possible
            return f"{n}e{exp}"
        return f"{n}{suffix}"


_PARSED: dict[str, Quantity] = {}
_PARSED_MAX = 4096


def parse_quantity(raw: Any) -> Quantity:
    """ParseQuantity; raises ValueError with upstream's message on malformed input.

    JSON numbers are accepted the way Quantity.UnmarshalJSON accepts them (unquoted).
    Strings are memoised (the result is shared: treat it as immutable).
    """
    if type(raw) is str:
        q = _PARSED.get(raw)
        if q is None:
            q = _parse(raw)
            if len(_PARSED) >= _PARSED_MAX:
                _PARSED.clear()
            _PARSED[raw] = q
        return q
    return _parse(raw)


def _parse(raw: Any) -> Quantity:
    if isinstance(raw, Quantity):
        return raw
    if isinstance(raw, bool) or raw is None:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    if isinstance(raw, int):
        s = str(raw)
    elif isinstance(raw, float):
        s = repr(raw) if not raw.is_integer() else str(int(raw))
    elif isinstance(raw, str):
        s = raw.strip()
    else:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    if not s:
        raise ValueError(QUANTITY_FORMAT_ERROR)
    m = _SPLIT.fullmatch(s)
    assert m is not None
    num, suffix = m.group(1), m.group(2)
    sign = 1
    if num[:1] in "+-" and num:
        sign = -1 if num[0] == "-" else 1
        num = num[1:]
    if not num or num == "." or num.count(".") > 1:
        raise ValueError(QUANTITY_FORMAT_ERROR if not num else _NUMERIC_ERROR)
    whole, _, frac = num.partition(".")
    try:
        value = Fraction(int(whole or "0")) + (Fraction(int(frac), 10 ** len(frac)) if frac else 0)
    except ValueError:
        raise ValueError(_NUMERIC_ERROR) from None
    fmt = DECIMAL_SI
    if suffix in _DEC_SUFFIX:
        value *= Fraction(10) ** _DEC_SUFFIX[suffix]
    elif suffix in _BIN_SUFFIX:
        value *= 2 ** _BIN_SUFFIX[suffix]
        fmt = BINARY_SI
    elif suffix[:1] in ("e", "E") and re.fullmatch(r"[eE][-+]?[0-9]+", suffix):
        value *= Fraction(10) ** int(suffix[1:])
        fmt = DECIMAL_EXPONENT
    else:
        if not re.fullmatch(r"[eEinumkKMGTP]*[-+]?[0-9]*", suffix):
            raise ValueError(QUANTITY_FORMAT_ERROR)
        raise ValueError(_SUFFIX_ERROR)
    value = _round_up_nano(sign * value)
    if fmt == BINARY_SI and 0 < value < 1:
        fmt = DECIMAL_SI
    return Quantity(value, fmt)


def canonical_quantity(raw: Any, round_milli: bool = False) -> str:
    """The canonical string for a wire value; round_milli as SetDefaults_ResourceList."""
    q = parse_quantity(raw)
    if round_milli:
        q = q.round_up(-3)
    return q.canonical()
