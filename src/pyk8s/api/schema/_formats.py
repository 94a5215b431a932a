"""String formats CRD validation checks (the go-openapi/strfmt set apiextensions keeps).

apiextensions strips every other format from CRD schemas before validating
(StripUnsupportedFormatsPostProcess), so int32, int64, double ... are never checked.
"""

from __future__ import annotations

import base64
import binascii
import ipaddress
import re
from collections.abc import Callable
from datetime import date

__all__ = ["format_checker"]


def _date(s: str) -> bool:
    m = re.fullmatch(r"(\d{4})-(\d{2})-(\d{2})", s)
    if not m:
        return False
    try:
        date(int(m[1]), int(m[2]), int(m[3]))
    except ValueError:
        return False
    return True


_DT = re.compile(r"(\d{4}-\d{2}-\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,]\d+)?)?([Zz]|[+-]\d{2}:?\d{2})?")


def _datetime(s: str) -> bool:
    m = _DT.fullmatch(s)
    if not m or not _date(m[1]):
        return False
    return int(m[2]) < 24 and int(m[3]) < 60 and (m[4] is None or int(m[4]) < 60)


_HOSTNAME = re.compile(r"[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?(\.[a-zA-Z0-9]([-a-zA-Z0-9]{0,61}[a-zA-Z0-9])?)*")


def _hostname(s: str) -> bool:
    return len(s) <= 255 and bool(_HOSTNAME.fullmatch(s))


def _ipv4(s: str) -> bool:
    try:
        ipaddress.IPv4Address(s)
    except ValueError:
        return False
    return True


def _ipv6(s: str) -> bool:
    # Go's net.ParseIP accepts IPv4 too; strfmt's ipv6 checks for a colon
    try:
        ipaddress.ip_address(s)
    except ValueError:
        return False
    return ":" in s


def _cidr(s: str) -> bool:
    try:
        ipaddress.ip_network(s, strict=False)
    except ValueError:
        return False
    return "/" in s


_MAC = re.compile(
    r"([0-9A-Fa-f]{2}[:-]){5}[0-9A-Fa-f]{2}|([0-9A-Fa-f]{2}[:-]){7}[0-9A-Fa-f]{2}"
    r"|([0-9A-Fa-f]{4}\.){2}[0-9A-Fa-f]{4}|([0-9A-Fa-f]{4}\.){3}[0-9A-Fa-f]{4}"
)
_UUID = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_UUID3 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?3[0-9a-f]{3}-?[0-9a-f]{4}-?[0-9a-f]{12}")
_UUID4 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?4[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
_UUID5 = re.compile(r"(?i)[0-9a-f]{8}-?[0-9a-f]{4}-?5[0-9a-f]{3}-?[89ab][0-9a-f]{3}-?[0-9a-f]{12}")
_EMAIL = re.compile(r"[^@\s<>]+@[^@\s<>]+")
_SSN = re.compile(r"\d{3}[- ]?\d{2}[- ]?\d{4}")
_HEXCOLOR = re.compile(r"#?([0-9a-fA-F]{3}|[0-9a-fA-F]{6})")
_RGB = re.compile(r"rgb\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*\)")
_DURATION = re.compile(
    r"[+-]?((\d+(\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h))+|0"
    r"|\d+\s*(ns|us|ms|s|m|h|d|w|nano|nanos|micro|micros|milli|millis|second|seconds|minute|minutes"
    r"|hour|hours|day|days|week|weeks|nanosecond|nanoseconds|microsecond|microseconds|millisecond|milliseconds)"
)
_CREDITCARD = re.compile(
    r"(?:4[0-9]{12}(?:[0-9]{3})?|5[1-5][0-9]{14}|6(?:011|5[0-9][0-9])[0-9]{12}|3[47][0-9]{13}"
    r"|3(?:0[0-5]|[68][0-9])[0-9]{11}|(?:2131|1800|35\d{3})\d{11})"
)


def _byte(s: str) -> bool:
    try:
        base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _uri(s: str) -> bool:
    # Go's url.ParseRequestURI: an absolute URI or an absolute path, no fragment
    if not s or "#" in s or " " in s:
        return False
    if s.startswith("/"):
        return True
    return bool(re.match(r"[A-Za-z][A-Za-z0-9+.-]*:", s))


def _isbn10(s: str) -> bool:
    d = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{9}[\dX]", d):
        return False
    total = sum((10 - i) * (10 if c == "X" else int(c)) for i, c in enumerate(d))
    return total % 11 == 0


def _isbn13(s: str) -> bool:
    d = re.sub(r"[\s-]", "", s)
    if not re.fullmatch(r"\d{13}", d):
        return False
    total = sum(int(c) * (1 if i % 2 == 0 else 3) for i, c in enumerate(d))
    return total % 10 == 0


def _rgb(s: str) -> bool:
    m = _RGB.fullmatch(s)
    return m is not None and all(int(x) <= 255 for x in m.groups())


def _full(rx: re.Pattern[str]) -> Callable[[str], bool]:
    return lambda s: bool(rx.fullmatch(s))


_CHECKERS: dict[str, Callable[[str], bool]] = {
    "bsonobjectid": lambda s: bool(re.fullmatch(r"[0-9a-fA-F]{24}", s)),
    "uri": _uri,
    "email": _full(_EMAIL),
    "hostname": _hostname,
    "ipv4": _ipv4,
    "ipv6": _ipv6,
    "cidr": _cidr,
    "mac": _full(_MAC),
    "uuid": _full(_UUID),
    "uuid3": _full(_UUID3),
    "uuid4": _full(_UUID4),
    "uuid5": _full(_UUID5),
    "isbn": lambda s: _isbn10(s) or _isbn13(s),
    "isbn10": _isbn10,
    "isbn13": _isbn13,
    "creditcard": lambda s: bool(_CREDITCARD.fullmatch(re.sub(r"\D", "", s))),
    "ssn": _full(_SSN),
    "hexcolor": _full(_HEXCOLOR),
    "rgbcolor": _rgb,
    "byte": _byte,
    "password": lambda s: True,
    "date": _date,
    "duration": _full(_DURATION),
    "datetime": _datetime,
}


def format_checker(fmt: str) -> Callable[[str], bool] | None:
    """The checker for a CRD schema format, or None when apiextensions ignores it."""
    return _CHECKERS.get(fmt.replace("-", ""))
