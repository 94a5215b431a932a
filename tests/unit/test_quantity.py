"""resource.Quantity parsing and canonical form.

Transcript pins (upstream-observed.md):
- L795-801 (`kubectl describe node node2`): capacity `cpu: 4`, `memory: 16Gi`, `pods: 110`.
- L885-886 (pod update diff): `{i: ... {value: 64}, s: "64"}` and `{value: 1}, s: "1"` --
  integer CPU quantities keep their plain decimal form.
"""

from __future__ import annotations

import pytest

from pyk8s.api.quantity import (
    BINARY_SI,
    DECIMAL_EXPONENT,
    DECIMAL_SI,
    FORMAT_ERROR,
    NUMERIC_ERROR,
    SUFFIX_ERROR,
    Quantity,
    QuantityError,
    canonical,
    parse_quantity,
)


@pytest.mark.parametrize(
    "text, canon, fmt",
    [
        ("4", "4", DECIMAL_SI),  # L795
        ("16Gi", "16Gi", BINARY_SI),  # L796
        ("110", "110", DECIMAL_SI),  # L797
        ("64", "64", DECIMAL_SI),  # L885
        ("0", "0", DECIMAL_SI),
        ("1000m", "1", DECIMAL_SI),
        ("0.5", "500m", DECIMAL_SI),
        ("1.5", "1500m", DECIMAL_SI),
        ("100m", "100m", DECIMAL_SI),
        ("1536Mi", "1536Mi", BINARY_SI),
        ("1.5Gi", "1536Mi", BINARY_SI),
        ("1024Ki", "1Mi", BINARY_SI),
        ("1.1Ki", "1126400m", BINARY_SI),  # not whole: printed as decimal
        ("0.5Ki", "512", BINARY_SI),  # below 1024: printed as decimal
        ("-1Ki", "-1Ki", BINARY_SI),
        ("1k", "1k", DECIMAL_SI),
        ("1000", "1k", DECIMAL_SI),
        ("1000000000", "1G", DECIMAL_SI),
        ("1e3", "1e3", DECIMAL_EXPONENT),
        ("1000e0", "1e3", DECIMAL_EXPONENT),
        ("12e6", "12e6", DECIMAL_EXPONENT),
        ("1E", "1E", DECIMAL_SI),  # E alone is exa
        ("0.9n", "1n", DECIMAL_SI),  # finer than nano rounds away from zero
        ("0.0000000001", "1n", DECIMAL_SI),
        ("1.23456789", "1234567890n", DECIMAL_SI),
        ("8Ei", "9223372036854775807", BINARY_SI),  # binary is capped at 2^63-1
        ("+5", "5", DECIMAL_SI),
        ("-", "0", DECIMAL_SI),  # upstream's scanner reads a bare sign as zero
        (".", "0", DECIMAL_SI),
        ("1000E", "1e21", DECIMAL_SI),  # no SI suffix above E
    ],
)
def test_canonical(text: str, canon: str, fmt: str) -> None:
    q = parse_quantity(text)
    assert str(q) == canon
    assert q.format == fmt
    assert canonical(text) == canon


@pytest.mark.parametrize(
    "text, message",
    [
        ("", FORMAT_ERROR),
        ("abc", FORMAT_ERROR),
        ("1.2.3", FORMAT_ERROR),
        ("1KiB", FORMAT_ERROR),
        ("1K", SUFFIX_ERROR),
        ("1Mi2", SUFFIX_ERROR),
        ("1e", SUFFIX_ERROR),
        ("1e99999", NUMERIC_ERROR),
    ],
)
def test_errors(text: str, message: str) -> None:
    with pytest.raises(QuantityError) as ei:
        parse_quantity(text)
    assert str(ei.value) == message
    assert (
        FORMAT_ERROR
        == "quantities must match the regular expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'"
    )


@pytest.mark.parametrize(
    "value, canon",
    [(1, "1"), (0.5, "500m"), (1.0, "1"), (2048, "2048"), (1e-7, "100e-9")],
)
def test_json_numbers(value: float, canon: str) -> None:
    assert str(parse_quantity(value)) == canon


@pytest.mark.parametrize(
    "text, milli, whole",
    [
        ("1", 1000, 1),
        ("100m", 100, 1),
        ("1.5", 1500, 2),
        ("1Ki", 1024000, 1024),
        ("1n", 1, 1),
        ("-1.5", -1500, -2),
        ("0", 0, 0),
    ],
)
def test_accessors_round_away_from_zero(text: str, milli: int, whole: int) -> None:
    q = parse_quantity(text)
    assert q.to_milli() == milli
    assert q.to_int() == whole


def test_arithmetic_and_comparison() -> None:
    a, b = parse_quantity("1"), parse_quantity("500m")
    assert str(a + b) == "1500m"
    assert str(a - b) == "500m"
    assert parse_quantity("1Gi") + parse_quantity("1Gi") == parse_quantity("2Gi")
    assert str(parse_quantity("1Gi") + parse_quantity("1Gi")) == "2Gi"
    # a zero receiver takes the other operand's format
    assert (Quantity() + parse_quantity("1Ki")).format == BINARY_SI
    assert parse_quantity("1k") == parse_quantity("1000")
    assert parse_quantity("999m") < parse_quantity("1")
    assert sorted([parse_quantity("2"), parse_quantity("1Ki"), parse_quantity("10m")]) == [
        parse_quantity("10m"),
        parse_quantity("2"),
        parse_quantity("1Ki"),
    ]
    assert parse_quantity("1").cmp(parse_quantity("2")) == -1
    assert str(Quantity.from_milli(250)) == "250m"
    assert str(Quantity.from_int(3, BINARY_SI)) == "3"
    assert str(-parse_quantity("2Gi")) == "-2Gi"
