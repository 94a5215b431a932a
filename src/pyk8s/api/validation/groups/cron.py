"""Cron schedule parsing, as github.com/robfig/cron/v3's ParseStandard (what CronJob uses).

Standard five fields (minute hour day-of-month month day-of-week), names for months and
weekdays, `*`/`?`, ranges, steps and lists; the `@yearly`..`@hourly` descriptors and
`@every <duration>`; an optional `TZ=`/`CRON_TZ=` prefix. Errors carry the library's
exact text, since CronJob validation shows them verbatim. `parse_schedule` returns the
field bit sets so the CronJob controller can compute next run times.
"""

from __future__ import annotations

import re
import zoneinfo
from dataclasses import dataclass

__all__ = ["CronSchedule", "CronError", "parse_standard", "load_location", "parse_go_duration"]


class CronError(ValueError):
    pass


@dataclass(frozen=True)
class _Bounds:
    min: int
    max: int
    names: dict[str, int] | None = None


_MINUTES = _Bounds(0, 59)
_HOURS = _Bounds(0, 23)
_DOM = _Bounds(1, 31)
_MONTHS = _Bounds(1, 12, {m: i + 1 for i, m in enumerate(
    ["jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec"])})
_DOW = _Bounds(0, 6, {d: i for i, d in enumerate(["sun", "mon", "tue", "wed", "thu", "fri", "sat"])})

STAR_BIT = 1 << 63


@dataclass(frozen=True)
class CronSchedule:
    """Bit sets per field (bit n set = value n allowed; STAR_BIT marks a `*`), or an interval."""

    minute: int = 0
    hour: int = 0
    dom: int = 0
    month: int = 0
    dow: int = 0
    location: str = ""  # "" = the controller's local zone
    every_seconds: float | None = None


_DESCRIPTORS = {
    "@yearly": ("0", "0", "1", "1", "*"),
    "@annually": ("0", "0", "1", "1", "*"),
    "@monthly": ("0", "0", "1", "*", "*"),
    "@weekly": ("0", "0", "*", "*", "0"),
    "@daily": ("0", "0", "*", "*", "*"),
    "@midnight": ("0", "0", "*", "*", "*"),
    "@hourly": ("0", "*", "*", "*", "*"),
}


def _go_atoi_error(expr: str) -> str:
    # strconv.Atoi's error text
    if re.fullmatch(r"[+-]?[0-9]+", expr):
        return f'strconv.Atoi: parsing "{expr}": value out of range'
    return f'strconv.Atoi: parsing "{expr}": invalid syntax'


def _must_parse_int(expr: str) -> int:
    if not re.fullmatch(r"[+-]?[0-9]+", expr) or not -(2**63) <= int(expr) < 2**63:
        raise CronError(f"failed to parse int from {expr}: {_go_atoi_error(expr)}")
    n = int(expr)
    if n < 0:
        raise CronError(f"negative number ({n}) not allowed: {expr}")
    return n


def _parse_int_or_name(expr: str, names: dict[str, int] | None) -> int:
    if names is not None and expr.lower() in names:
        return names[expr.lower()]
    return _must_parse_int(expr)


def _get_range(expr: str, r: _Bounds) -> int:
    range_and_step = expr.split("/")
    low_and_high = range_and_step[0].split("-")
    single_digit = len(low_and_high) == 1
    extra = 0
    if low_and_high[0] in ("*", "?"):
        start, end, extra = r.min, r.max, STAR_BIT
    else:
        start = _parse_int_or_name(low_and_high[0], r.names)
        if len(low_and_high) == 1:
            end = start
        elif len(low_and_high) == 2:
            end = _parse_int_or_name(low_and_high[1], r.names)
        else:
            raise CronError(f"too many hyphens: {expr}")
    if len(range_and_step) == 1:
        step = 1
    elif len(range_and_step) == 2:
        step = _must_parse_int(range_and_step[1])
        if single_digit:  # "N/step" means "N-max/step"
            end = r.max
        if step > 1:
            extra = 0
    else:
        raise CronError(f"too many slashes: {expr}")
    if start < r.min:
        raise CronError(f"beginning of range ({start}) below minimum ({r.min}): {expr}")
    if end > r.max:
        raise CronError(f"end of range ({end}) above maximum ({r.max}): {expr}")
    if start > end:
        raise CronError(f"beginning of range ({start}) beyond end of range ({end}): {expr}")
    if step == 0:
        raise CronError(f"step of range should be a positive number: {expr}")
    bits = 0
    for v in range(start, end + 1, step):
        bits |= 1 << v
    return bits | extra


def _get_field(field: str, r: _Bounds) -> int:
    bits = 0
    for expr in (p for p in field.split(",") if p):
        bits |= _get_range(expr, r)
    return bits


_DURATION_UNITS = {"ns": 1, "us": 1_000, "µs": 1_000, "μs": 1_000, "ms": 1_000_000,
                   "s": 1_000_000_000, "m": 60_000_000_000, "h": 3_600_000_000_000}


def parse_go_duration(s: str) -> float:
    """time.ParseDuration, returning seconds; raises CronError with Go's message."""
    orig = s
    quoted = '"' + orig + '"'
    neg = False
    if s and s[0] in "+-":
        neg = s[0] == "-"
        s = s[1:]
    if s == "0":
        return 0.0
    if not s:
        raise CronError(f"time: invalid duration {quoted}")
    total = 0.0
    while s:
        m = re.match(r"([0-9]*)(\.([0-9]*))?", s)
        assert m is not None
        int_part, frac = m.group(1), m.group(3)
        if not int_part and not frac:
            raise CronError(f"time: invalid duration {quoted}")
        s = s[m.end():]
        u = re.match(r"[^0-9.]*", s)
        assert u is not None
        unit = u.group(0)
        s = s[u.end():]
        if not unit:
            raise CronError(f"time: missing unit in duration {quoted}")
        if unit not in _DURATION_UNITS:
            raise CronError(f'time: unknown unit "{unit}" in duration {quoted}')
        value = float(f"{int_part or '0'}.{frac or '0'}") * _DURATION_UNITS[unit]
        total += value
        if total > 2**63 - 1:
            raise CronError(f"time: invalid duration {quoted}")
    return (-total if neg else total) / 1e9


def load_location(name: str) -> str:
    """time.LoadLocation: "" and "UTC" are UTC; raises CronError("unknown time zone X")."""
    if name in ("", "UTC"):
        return "UTC"
    if name == "Local":
        return "Local"
    if ".." in name or name.startswith(("/", "\\")):
        raise CronError("time: invalid location name")
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        raise CronError(f"unknown time zone {name}") from None
    return name


def parse_standard(spec: str) -> CronSchedule:
    """cron.ParseStandard; raises CronError with the library's message."""
    if not spec:
        raise CronError("empty spec string")
    loc = ""
    if spec.startswith("TZ=") or spec.startswith("CRON_TZ="):
        i, eq = spec.find(" "), spec.find("=")
        # upstream slices spec[eq+1:i] even when there is no space (a panic); report a bad location
        name = spec[eq + 1:i] if i > eq else spec[eq + 1:]
        try:
            loc = load_location(name)
        except CronError as e:
            raise CronError(f"provided bad location {name}: {e}") from None
        spec = spec[i:].strip() if i > eq else ""
    if spec.startswith("@"):
        return _parse_descriptor(spec, loc)
    fields = spec.split()
    if len(fields) != 5:
        raise CronError(f"expected exactly 5 fields, found {len(fields)}: [{' '.join(fields)}]")
    return CronSchedule(
        minute=_get_field(fields[0], _MINUTES),
        hour=_get_field(fields[1], _HOURS),
        dom=_get_field(fields[2], _DOM),
        month=_get_field(fields[3], _MONTHS),
        dow=_get_field(fields[4], _DOW),
        location=loc,
    )


def _parse_descriptor(descriptor: str, loc: str) -> CronSchedule:
    fields = _DESCRIPTORS.get(descriptor)
    if fields is not None:
        return CronSchedule(
            minute=_get_field(fields[0], _MINUTES), hour=_get_field(fields[1], _HOURS),
            dom=_get_field(fields[2], _DOM), month=_get_field(fields[3], _MONTHS),
            dow=_get_field(fields[4], _DOW), location=loc,
        )
    every = "@every "
    if descriptor.startswith(every):
        try:
            seconds = parse_go_duration(descriptor[len(every):])
        except CronError as e:
            raise CronError(f"failed to parse duration {descriptor}: {e}") from None
        return CronSchedule(location=loc, every_seconds=seconds)
    raise CronError(f"unrecognized descriptor: {descriptor}")
