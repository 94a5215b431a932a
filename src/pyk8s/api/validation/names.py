"""Name and value formats with upstream's exact messages.

Mirrors k8s.io/apimachinery/pkg/util/validation (IsDNS1123Label, IsQualifiedName, ...),
its api/validate/content package (label keys and values) and api/validation's name
functions. Each `is_*` returns a list of messages (empty when valid); callers wrap
them into FieldErrors at the right path, as upstream does.
"""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable
from typing import Any, TypeVar

__all__ = [
    "NameFn",
    "max_len_error", "regex_error", "empty_error", "inclusive_range_error",
    "is_dns1123_label", "is_dns1123_subdomain", "is_dns1123_subdomain_with_underscore", "is_dns1035_label",
    "is_wildcard_dns1123_subdomain", "is_qualified_name", "is_label_value", "is_prefixed_label_key",
    "is_config_map_key", "is_env_var_name", "is_relaxed_env_var_name", "is_c_identifier",
    "is_valid_port_num", "is_valid_port_name", "is_valid_user_id", "is_valid_group_id",
    "is_http_header_name", "is_valid_percent", "is_valid_ip", "is_valid_cidr", "is_valid_ipv4", "is_valid_ipv6",
    "is_fully_qualified_name", "is_fully_qualified_domain_name", "is_domain_prefixed_path",
    "name_is_dns_subdomain", "name_is_dns_label", "name_is_dns1035_label", "validate_namespace_name",
    "validate_path_segment_name", "mask_trailing_dash",
    "DNS1123_LABEL_MAX", "DNS1123_SUBDOMAIN_MAX", "LABEL_VALUE_MAX",
]

NameFn = Callable[[str, bool], list[str]]
_F = TypeVar("_F", bound=Callable[..., list[str]])


# Checks are pure functions of short strings that repeat across requests (names, label
# keys, ...), so each remembers its answers; a bounded table, emptied when full.
_MEMO_MAX = 2048  # entries per check
_MEMO_KEY_MAX = 256  # longer values are checked afresh rather than kept


def _text(fn: _F) -> _F:
    """Make a string check total: decoded JSON may hold a non-string where a string belongs
    (strict decoding normally rejects it first); check its text instead of failing.
    Answers are memoised; callers get a fresh list they may extend."""
    memo: dict[Any, tuple[str, ...]] = {}

    @functools.wraps(fn)
    def wrapper(value: Any, *args: Any) -> list[str]:
        if not isinstance(value, str):
            value = "" if value is None else str(value)
        k = (value, *args) if args else value
        hit = memo.get(k)
        if hit is not None:
            return list(hit) if hit else []
        msgs = fn(value, *args)
        if len(value) <= _MEMO_KEY_MAX:
            if len(memo) >= _MEMO_MAX:
                memo.clear()
            memo[k] = tuple(msgs)
        return msgs

    return wrapper  # type: ignore[return-value]

DNS1123_LABEL_MAX = 63
DNS1123_SUBDOMAIN_MAX = 253
DNS1035_LABEL_MAX = 63
LABEL_KEY_NAME_MAX = 63
LABEL_VALUE_MAX = 63


def max_len_error(n: int) -> str:
    return f"must be no more than {n} characters"


def regex_error(msg: str, fmt: str, *examples: str) -> str:
    """Upstream's RegexError, including its `',  or '` double spaces between examples."""
    if not examples:
        return f"{msg} (regex used for validation is '{fmt}')"
    msg += " (e.g. "
    for i, ex in enumerate(examples):
        if i > 0:
            msg += " or "
        msg += f"'{ex}', "
    return msg + f"regex used for validation is '{fmt}')"


def empty_error() -> str:
    return "must be non-empty"


def inclusive_range_error(lo: int, hi: int) -> str:
    return f"must be between {lo} and {hi}, inclusive"


def _full(fmt: str) -> re.Pattern[str]:
    # Go's regexp `^...$` has no trailing-newline leniency: use fullmatch.
    return re.compile(fmt)


_DNS1123_LABEL_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?"
_DNS1123_LABEL_MSG = ("a lowercase RFC 1123 label must consist of lower case alphanumeric characters or '-', "
                      "and must start and end with an alphanumeric character")
_DNS1123_SUBDOMAIN_FMT = _DNS1123_LABEL_FMT + "(\\." + _DNS1123_LABEL_FMT + ")*"
_DNS1123_SUBDOMAIN_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                          "'-' or '.', and must start and end with an alphanumeric character")
_DNS1123_LABEL_US_FMT = "_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
_DNS1123_SUBDOMAIN_US_FMT = _DNS1123_LABEL_US_FMT + "(\\." + _DNS1123_LABEL_US_FMT + ")*"
_DNS1123_SUBDOMAIN_US_MSG = ("a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, "
                             "'_', '-' or '.', and must start and end with an alphanumeric character")
_DNS1035_LABEL_FMT = "[a-z]([-a-z0-9]*[a-z0-9])?"
_DNS1035_LABEL_MSG = ("a DNS-1035 label must consist of lower case alphanumeric characters or '-', "
                      "start with an alphabetic character, and end with an alphanumeric character")
_WILDCARD_FMT = "\\*\\." + _DNS1123_SUBDOMAIN_FMT
_WILDCARD_MSG = ("a wildcard DNS-1123 subdomain must start with '*.', followed by a valid DNS subdomain, "
                 "which must consist of lower case alphanumeric characters, '-' or '.' and end with an "
                 "alphanumeric character")

_dns1123_label_re = _full(_DNS1123_LABEL_FMT)
_dns1123_subdomain_re = _full(_DNS1123_SUBDOMAIN_FMT)
_dns1123_subdomain_us_re = _full(_DNS1123_SUBDOMAIN_US_FMT)
_dns1035_label_re = _full(_DNS1035_LABEL_FMT)
_wildcard_re = _full(_WILDCARD_FMT)


@_text
def is_dns1123_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_LABEL_MAX:
        errs.append(max_len_error(DNS1123_LABEL_MAX))
    if not _dns1123_label_re.fullmatch(value):
        if _dns1123_subdomain_re.fullmatch(value):
            # a valid subdomain but not a label: since length was checked, it must be the dots
            errs.append("must not contain dots")
        else:
            errs.append(regex_error(_DNS1123_LABEL_MSG, _DNS1123_LABEL_FMT, "my-name", "123-abc"))
    return errs


@_text
def is_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _dns1123_subdomain_re.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_MSG, _DNS1123_SUBDOMAIN_FMT, "example.com"))
    return errs


@_text
def is_dns1123_subdomain_with_underscore(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _dns1123_subdomain_us_re.fullmatch(value):
        errs.append(regex_error(_DNS1123_SUBDOMAIN_US_MSG, _DNS1123_SUBDOMAIN_US_FMT, "example.com"))
    return errs


@_text
def is_dns1035_label(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1035_LABEL_MAX:
        errs.append(max_len_error(DNS1035_LABEL_MAX))
    if not _dns1035_label_re.fullmatch(value):
        errs.append(regex_error(_DNS1035_LABEL_MSG, _DNS1035_LABEL_FMT, "my-name", "abc-123"))
    return errs


@_text
def is_wildcard_dns1123_subdomain(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _wildcard_re.fullmatch(value):
        errs.append(regex_error(_WILDCARD_MSG, _WILDCARD_FMT, "*.example.com"))
    return errs


_LABEL_KEY_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_LABEL_KEY_MSG = ("must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                  "with an alphanumeric character")
_label_key_re = _full(_LABEL_KEY_FMT)
_LABEL_VALUE_FMT = "(" + _LABEL_KEY_FMT + ")?"
_LABEL_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
                    "or '.', and must start and end with an alphanumeric character")
_label_value_re = _full(_LABEL_VALUE_FMT)


@_text
def is_qualified_name(value: str) -> list[str]:
    """A label key / qualified name: optional DNS-subdomain prefix, '/', then a name part."""
    errs: list[str] = []
    parts = value.split("/")
    if len(parts) == 1:
        name = parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            errs.append("prefix part " + empty_error())
        else:
            errs.extend("prefix part " + m for m in is_dns1123_subdomain(prefix))
    else:
        return ["a valid label key " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc")
                + " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"]
    if not name:
        errs.append("name part " + empty_error())
    elif len(name) > LABEL_KEY_NAME_MAX:
        errs.append("name part " + max_len_error(LABEL_KEY_NAME_MAX))
    if not _label_key_re.fullmatch(name):
        errs.append("name part " + regex_error(_LABEL_KEY_MSG, _LABEL_KEY_FMT, "MyName", "my.name", "123-abc"))
    return errs


@_text
def is_prefixed_label_key(value: str) -> list[str]:
    errs = is_qualified_name(value)
    if errs:
        return errs
    if len(value.split("/")) != 2:
        return ["must include a prefix (e.g. 'example.com/key')"]
    return []


@_text
def is_label_value(value: str) -> list[str]:
    errs = []
    if len(value) > LABEL_VALUE_MAX:
        errs.append(max_len_error(LABEL_VALUE_MAX))
    if not _label_value_re.fullmatch(value):
        errs.append(regex_error(_LABEL_VALUE_MSG, _LABEL_VALUE_FMT, "MyValue", "my_value", "12345"))
    return errs


def _has_chdir_prefix(value: str) -> list[str]:
    if value == ".":
        return ["must not be '.'"]
    if value == "..":
        return ["must not be '..'"]
    if value.startswith(".."):
        return ["must not start with '..'"]
    return []


_CONFIG_KEY_FMT = "[-._a-zA-Z0-9]+"
_CONFIG_KEY_MSG = "a valid config key must consist of alphanumeric characters, '-', '_' or '.'"
_config_key_re = _full(_CONFIG_KEY_FMT)


@_text
def is_config_map_key(value: str) -> list[str]:
    errs = []
    if len(value) > DNS1123_SUBDOMAIN_MAX:
        errs.append(max_len_error(DNS1123_SUBDOMAIN_MAX))
    if not _config_key_re.fullmatch(value):
        errs.append(regex_error(_CONFIG_KEY_MSG, _CONFIG_KEY_FMT, "key.name", "KEY_NAME", "key-name"))
    return errs + _has_chdir_prefix(value)


_ENV_FMT = "[-._a-zA-Z][-._a-zA-Z0-9]*"
_ENV_MSG = ("a valid environment variable name must consist of alphabetic characters, digits, '_', '-', "
            "or '.', and must not start with a digit")
_env_re = _full(_ENV_FMT)
_RELAXED_ENV_MSG = "a valid environment variable name must consist only of printable ASCII characters other than '='"


@_text
def is_env_var_name(value: str) -> list[str]:
    errs = []
    if not _env_re.fullmatch(value):
        errs.append(regex_error(_ENV_MSG, _ENV_FMT, "my.env-name", "MY_ENV.NAME", "MyEnvName1"))
    return errs + _has_chdir_prefix(value)


@_text
def is_relaxed_env_var_name(value: str) -> list[str]:
    """The RelaxedEnvironmentVariableValidation rule (beta, on by default since 1.32)."""
    errs = []
    if not value:
        errs.append("environment variable name " + empty_error())
    for ch in value:
        if ord(ch) > 127 or not ch.isprintable() or ch == "=":
            errs.append(_RELAXED_ENV_MSG)
            break
    return errs


_C_ID_FMT = "[A-Za-z_][A-Za-z0-9_]*"
_C_ID_MSG = "a valid C identifier must start with alphabetic character or '_', followed by a string of alphanumeric characters or '_'"
_c_id_re = _full(_C_ID_FMT)


@_text
def is_c_identifier(value: str) -> list[str]:
    if not _c_id_re.fullmatch(value):
        return [regex_error(_C_ID_MSG, _C_ID_FMT, "my_name", "MY_NAME", "MyName")]
    return []


def is_valid_port_num(port: int) -> list[str]:
    if isinstance(port, int) and not isinstance(port, bool) and 1 <= port <= 65535:
        return []
    return [inclusive_range_error(1, 65535)]


_port_name_charset = _full("[-a-z0-9]+")
_port_name_letter = re.compile("[a-z]")


@_text
def is_valid_port_name(port: str) -> list[str]:
    errs = []
    if len(port) > 15:
        errs.append(max_len_error(15))
    if not _port_name_charset.fullmatch(port):
        errs.append("must contain only alpha-numeric characters (a-z, 0-9), and hyphens (-)")
    if not _port_name_letter.search(port):
        errs.append("must contain at least one letter (a-z)")
    if "--" in port:
        errs.append("must not contain consecutive hyphens")
    if port and (port[0] == "-" or port[-1] == "-"):
        errs.append("must not begin or end with a hyphen")
    return errs


def is_valid_user_id(uid: int) -> list[str]:
    ok = isinstance(uid, int) and not isinstance(uid, bool) and 0 <= uid <= 0xFFFFFFFF
    return [] if ok else [inclusive_range_error(0, 0xFFFFFFFF)]


def is_valid_group_id(gid: int) -> list[str]:
    ok = isinstance(gid, int) and not isinstance(gid, bool) and 0 <= gid <= 0xFFFFFFFF
    return [] if ok else [inclusive_range_error(0, 0xFFFFFFFF)]


_HEADER_FMT = "[-A-Za-z0-9]+"
_header_re = _full(_HEADER_FMT)


@_text
def is_http_header_name(value: str) -> list[str]:
    if not _header_re.fullmatch(value):
        return [regex_error("a valid HTTP header must consist of alphanumeric characters or '-'", _HEADER_FMT,
                            "X-Header-Name")]
    return []


_PERCENT_FMT = "[0-9]+%"
_percent_re = _full(_PERCENT_FMT)


@_text
def is_valid_percent(value: str) -> list[str]:
    if not _percent_re.fullmatch(value):
        return [regex_error("a valid percent string must be a numeric string followed by an ending '%'",
                            _PERCENT_FMT, "1%", "93%")]
    return []


def _parse_ip_sloppy(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """netutils.ParseIPSloppy: like Go's net.ParseIP but accepting leading zeros in IPv4 octets."""
    if not isinstance(value, str) or not value or "%" in value:
        return None
    if ":" not in value:
        parts = value.split(".")
        if len(parts) != 4 or not all(p.isdigit() and p.isascii() and int(p) <= 255 for p in parts):
            return None
        return ipaddress.IPv4Address(".".join(str(int(p)) for p in parts))
    try:
        return ipaddress.IPv6Address(value)
    except ValueError:
        return None


@_text
def is_valid_ip(value: str) -> list[str]:
    if _parse_ip_sloppy(value) is None:
        return ["must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"]
    return []


@_text
def is_valid_ipv4(value: str) -> list[str]:
    ip = _parse_ip_sloppy(value)
    if ip is None or not (ip.version == 4 or (ip.version == 6 and ip.ipv4_mapped is not None)):
        return ["must be a valid IPv4 address"]
    return []


@_text
def is_valid_ipv6(value: str) -> list[str]:
    ip = _parse_ip_sloppy(value)
    if ip is None or ip.version == 4 or ip.ipv4_mapped is not None:
        return ["must be a valid IPv6 address"]
    return []


@_text
def is_valid_cidr(value: str) -> list[str]:
    msg = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
    if not isinstance(value, str) or "/" not in value:
        return [msg]
    ip_s, _, bits = value.partition("/")
    ip = _parse_ip_sloppy(ip_s)
    if ip is None or not bits.isdigit() or int(bits) > (32 if ip.version == 4 else 128):
        return [msg]
    return []


@_text
def is_fully_qualified_name(value: str) -> list[str]:
    """Messages for IsFullyQualifiedName (callers decide Required vs Invalid)."""
    errs = is_dns1123_subdomain(value)
    if errs:
        return [",".join(errs)]
    if len(value.split(".")) < 3:
        return ["should be a domain with at least three segments separated by dots"]
    return []


@_text
def is_fully_qualified_domain_name(value: str) -> list[str]:
    name = value[:-1] if value.endswith(".") else value
    errs = is_dns1123_subdomain(name)
    if errs:
        return [",".join(errs)]
    if len(name.split(".")) < 2:
        return ["should be a domain with at least two segments separated by dots"]
    for label in name.split("."):
        errs = is_dns1123_label(label)
        if errs:
            return [",".join(errs)]
    return []


_HTTP_PATH_FMT = "[A-Za-z0-9/\\-._~%!$&'()*+,;=:]+"
_http_path_re = _full(_HTTP_PATH_FMT)


@_text
def is_domain_prefixed_path(value: str) -> list[str]:
    segs = value.split("/", 1)
    if len(segs) != 2 or not segs[0] or not segs[1]:
        return ['must be a domain-prefixed path (such as "acme.io/foo")']
    errs = is_dns1123_subdomain(segs[0])
    if not _http_path_re.fullmatch(segs[1]):
        errs.append(regex_error("Invalid path", _HTTP_PATH_FMT))
    return errs


def mask_trailing_dash(name: str) -> str:
    """Upstream's maskTrailingDash for generateName prefixes (it really drops two characters)."""
    if name.endswith("-"):
        return name[:-2] + "a" if len(name) >= 2 else "a"
    return name


@_text
def name_is_dns_subdomain(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_subdomain(mask_trailing_dash(name) if prefix else name)


@_text
def name_is_dns_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1123_label(mask_trailing_dash(name) if prefix else name)


@_text
def name_is_dns1035_label(name: str, prefix: bool = False) -> list[str]:
    return is_dns1035_label(mask_trailing_dash(name) if prefix else name)


validate_namespace_name = name_is_dns_label


@_text
def validate_path_segment_name(name: str, prefix: bool = False) -> list[str]:
    """apimachinery's path.ValidatePathSegmentName: names must be usable as a URL path segment."""
    if not prefix:
        for bad in (".", ".."):
            if name == bad:
                return [f"may not be '{bad}'"]
    return [f"may not contain '{c}'" for c in ("/", "%") if c in name]
