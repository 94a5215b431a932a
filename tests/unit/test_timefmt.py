"""RFC3339 timestamps and duration.HumanDuration.

Transcript pins (upstream-observed.md): every AGE cell, e.g. L126 "16s", L250 "6s";
L356 `creationTimestamp: "2026-11-22T02:22:08Z"` (whole-second RFC3339 in UTC).
"""

from __future__ import annotations

import pytest

from pyk8s.api.timefmt import (
    TimeParseError,
    age,
    format_micro_time,
    format_time,
    human_duration,
    parse_time,
    parse_time_or_none,
    short_human_duration,
)

H = 3600
D = 24 * H
Y = 365 * D


@pytest.mark.parametrize(
    "seconds, text",
    [
        (-3, "<invalid>"),
        (-2, "<invalid>"),
        (-1.5, "0s"),  # within clock-skew tolerance
        (-0.5, "0s"),
        (0, "0s"),
        (5.9, "5s"),
        (23, "23s"),
        (119, "119s"),
        (120, "2m"),
        (187, "3m7s"),
        (9 * 60 + 59, "9m59s"),
        (10 * 60 + 30, "10m"),
        (179 * 60, "179m"),
        (3 * H, "3h"),
        (5 * H + 27 * 60, "5h27m"),
        (7 * H + 59 * 60, "7h59m"),
        (8 * H + 30 * 60, "8h"),
        (47 * H, "47h"),
        (2 * D, "2d"),
        (2 * D + 3 * H, "2d3h"),
        (7 * D + 23 * H, "7d23h"),
        (8 * D + 5 * H, "8d"),
        (45 * D, "45d"),
        (729 * D, "729d"),
        (2 * Y, "2y"),
        (3 * Y + 120 * D, "3y120d"),
        (8 * Y + 100 * D, "8y"),
    ],
)
def test_human_duration(seconds: float, text: str) -> None:
    assert human_duration(seconds) == text


@pytest.mark.parametrize(
    "seconds, text",
    [
        (-2, "<invalid>"),
        (-1, "0s"),
        (59, "59s"),
        (60, "1m"),
        (3599, "59m"),
        (3600, "1h"),
        (25 * H, "1d"),
        (400 * D, "1y"),
    ],
)
def test_short_human_duration(seconds: float, text: str) -> None:
    assert short_human_duration(seconds) == text


def test_format_and_parse() -> None:
    t = parse_time("2026-11-22T02:22:08Z")  # L356
    assert format_time(t) == "2026-11-22T02:22:08Z"
    assert format_time(t + 0.999) == "2026-11-22T02:22:08Z"  # truncated, never rounded up
    assert format_micro_time(t + 0.25) == "2026-11-22T02:22:08.250000Z"
    assert format_micro_time(t) == "2026-11-22T02:22:08.000000Z"
    assert parse_time("2026-11-22T02:22:08.123456Z") == pytest.approx(t + 0.123456)
    assert parse_time("2026-11-22T03:22:08+01:00") == t
    assert parse_time("2026-11-22T01:22:08-01:00") == t
    assert (
        parse_time_or_none("") is None
        and parse_time_or_none(None) is None
        and parse_time_or_none("junk") is None
    )
    with pytest.raises(TimeParseError):
        parse_time("2026-11-22 02:22:08")


def test_age() -> None:
    now = parse_time("2026-11-22T02:22:14.4Z")
    assert age("2026-11-22T02:22:08Z", now) == "6s"  # L250 deployment testdemo
    assert age(None, now) == "<unknown>"
