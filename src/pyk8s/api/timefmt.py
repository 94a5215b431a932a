"""Timestamps as the API writes them, and ages as kubectl tables show them.

metav1.Time serialises as RFC3339 in UTC with whole seconds ("2026-01-02T03:04:05Z");
metav1.MicroTime adds exactly six fractional digits. Times are carried here as float
seconds since the epoch. `human_duration` and `short_human_duration` reproduce
apimachinery's util/duration helpers, digit for digit (they drive every AGE column).
"""

from __future__ import annotations

import calendar
import re
import time
from functools import lru_cache

__all__ = [
    "format_time",
    "format_micro_time",
    "parse_time",
    "parse_time_or_none",
    "now_rfc3339",
    "now_micro",
    "human_duration",
    "short_human_duration",
    "age",
    "ZERO_TIME",
    "TimeParseError",
]

# What Go prints for a zero metav1.Time in RFC3339 (the default table's "Created At").
ZERO_TIME = "0001-01-01T00:00:00Z"


class TimeParseError(ValueError):
    """The string is not an RFC3339 timestamp; the message follows Go's time.Parse."""


def format_time(t: float) -> str:
    """RFC3339 with whole seconds in UTC, as metav1.Time marshals (fraction truncated)."""
    return _format_second(int(t // 1))


@lru_cache(maxsize=4096)
def _format_second(sec: int) -> str:
    # Timestamps repeat a lot (every object written in the same second), so cache them.
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(sec))


def format_micro_time(t: float) -> str:
    """RFC3339 with exactly six fractional digits, as metav1.MicroTime marshals."""
    sec = int(t // 1)
    micros = int(round((t - sec) * 1_000_000))
    if micros >= 1_000_000:  # float rounding pushed us into the next second
        sec += 1
        micros -= 1_000_000
    return f"{_format_second(sec)[:-1]}.{micros:06d}Z"


def now_rfc3339() -> str:
    return format_time(time.time())


def now_micro() -> str:
    return format_micro_time(time.time())


_RFC3339 = re.compile(
    r"^(\d{4})-(\d{2})-(\d{2})[Tt](\d{2}):(\d{2}):(\d{2})(\.\d+)?(?:([Zz])|([+-])(\d{2}):(\d{2}))$"
)


@lru_cache(maxsize=65536)
def parse_time(s: str) -> float:
    """Seconds since the epoch for an RFC3339 timestamp (fractions and offsets allowed)."""
    m = _RFC3339.match(s)
    if m is None:
        raise TimeParseError(f'parsing time "{s}" as "2006-01-02T15:04:05Z07:00": cannot parse "{s}"')
    year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 60):
        raise TimeParseError(f'parsing time "{s}": value out of range')
    t = float(calendar.timegm((year, month, day, hour, minute, second, 0, 0, 0)))
    frac = m.group(7)
    if frac:
        t += float("0" + frac)
    if m.group(9):
        offset = int(m.group(10)) * 3600 + int(m.group(11)) * 60
        t -= offset if m.group(9) == "+" else -offset
    return t


def parse_time_or_none(s: object) -> float | None:
    """Like parse_time, but None for absent, empty, "null" or malformed values (Go's zero time)."""
    if not s or not isinstance(s, str) or s == "null":
        return None
    try:
        return parse_time(s)
    except TimeParseError:
        return None


def human_duration(seconds: float) -> str:
    """duration.HumanDuration: ~2-3 significant figures ("23s", "3m7s", "5h27m", "2d3h", "3y120d")."""
    secs = int(seconds)  # Go's int(d.Seconds()) truncates toward zero
    # Up to 2 seconds in the future is treated as "now" (clock skew between machines).
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 120:
        return f"{secs}s"
    minutes = secs // 60
    if minutes < 10:
        s = secs % 60
        return f"{minutes}m" if s == 0 else f"{minutes}m{s}s"
    if minutes < 180:
        return f"{minutes}m"
    hours = secs // 3600
    if hours < 8:
        m = minutes % 60
        return f"{hours}h" if m == 0 else f"{hours}h{m}m"
    if hours < 48:
        return f"{hours}h"
    if hours < 24 * 8:
        h = hours % 24
        return f"{hours // 24}d" if h == 0 else f"{hours // 24}d{h}h"
    if hours < 24 * 365 * 2:
        return f"{hours // 24}d"
    if hours < 24 * 365 * 8:
        dy = (hours // 24) % 365
        return f"{hours // 24 // 365}y" if dy == 0 else f"{hours // 24 // 365}y{dy}d"
    return f"{hours // 24 // 365}y"


def short_human_duration(seconds: float) -> str:
    """duration.ShortHumanDuration: one unit only ("59s", "3m", "5h", "12d", "2y")."""
    secs = int(seconds)
    if secs < -1:
        return "<invalid>"
    if secs < 0:
        return "0s"
    if secs < 60:
        return f"{secs}s"
    minutes = int(seconds / 60)
    if minutes < 60:
        return f"{minutes}m"
    hours = int(seconds / 3600)
    if hours < 24:
        return f"{hours}h"
    if hours < 24 * 365:
        return f"{hours // 24}d"
    return f"{int(seconds / 3600 / 24 / 365)}y"


def age(timestamp: object, now: float) -> str:
    """translateTimestampSince: the human age of an RFC3339 timestamp, "<unknown>" when unset."""
    t = parse_time_or_none(timestamp)
    if t is None:
        return "<unknown>"
    return human_duration(now - t)
