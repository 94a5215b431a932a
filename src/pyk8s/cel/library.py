"""Kubernetes' CEL libraries on cel-python: lists, regex, url, ip/cidr, strings ext, format,
optional values and authz (k8s.io/apiserver/pkg/cel/library and cel-go's ext.Strings).

cel-python resolves `x.f(a)` as the function `f(x, a)`, so every name here dispatches on the
type of its first argument and answers `no such overload` for anything else. Functions whose
result grows with their input charge the running evaluation's cost (see `cost.charge`) so a
rule cannot build huge strings or lists for free. Regular expressions use RE2 (linear time).
"""

from __future__ import annotations

import ipaddress
import json
import urllib.parse
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any

import re2
from celpy import celtypes
from celpy.evaluation import CELEvalError

from ..api.validation import names as N
from . import quantity
from .cost import charge

__all__ = ["FUNCTIONS", "Authorizer", "AuthzCheck", "Optional", "FORMAT", "STRINGS", "OPTIONAL", "to_cel"]


def _overload() -> CELEvalError:
    return CELEvalError("no such overload", TypeError, None)


def _is_str(v: Any) -> bool:
    return isinstance(v, str)


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _sized(v: Any) -> Any:
    """Charge what a result costs to build: a tenth of a unit per character or element."""
    if isinstance(v, (str, bytes, list, tuple, dict)):
        charge(len(v) // 10)
    return v


# ---- namespaces (`format.x()`, `strings.quote()`, `optional.of()`) -----------------------
class _Namespace:
    __slots__ = ("name",)

    def __init__(self, name: str) -> None:
        self.name = name

    def __repr__(self) -> str:
        return self.name


FORMAT = _Namespace("format")
STRINGS = _Namespace("strings")
OPTIONAL = _Namespace("optional")


# ---- optional values ----------------------------------------------------------------------
class Optional:
    """cel-go's optional type: `optional.of(x)`, `optional.none()`, `.hasValue()`, `.value()`,
    `.orValue(d)`. (cel-python's parser has no `?.`/`[?` syntax.)"""

    __slots__ = ("v", "present")

    def __init__(self, v: Any = None, present: bool = False) -> None:
        self.v, self.present = v, present

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Optional) and (self.present, self.v) == (other.present, other.v)

    def __hash__(self) -> int:
        return hash((self.present, self.v))

    def __repr__(self) -> str:
        return f"optional.of({self.v!r})" if self.present else "optional.none()"


def _zero(v: Any) -> bool:
    if isinstance(v, bool):
        return not v
    return v in (0, 0.0, "", b"") or (isinstance(v, (list, dict)) and not v) or v is None


def _of(ns: Any, v: Any = None) -> Optional:
    if ns is not OPTIONAL:
        raise _overload()
    return Optional(v, True)


def _none(ns: Any) -> Optional:
    if ns is not OPTIONAL:
        raise _overload()
    return Optional()


def _of_non_zero(ns: Any, v: Any) -> Optional:
    if ns is not OPTIONAL:
        raise _overload()
    return Optional() if _zero(v) else Optional(v, True)


def _has_value(o: Any) -> celtypes.BoolType:
    if not isinstance(o, Optional):
        raise _overload()
    return celtypes.BoolType(o.present)


def _value(o: Any) -> Any:
    if isinstance(o, Optional):
        if not o.present:
            raise CELEvalError("optional.none() dereference", ValueError, None)
        return o.v
    raise _overload()


def _or_value(o: Any, d: Any) -> Any:
    if not isinstance(o, Optional):
        raise _overload()
    return o.v if o.present else d


# ---- lists --------------------------------------------------------------------------------
def _list(v: Any) -> list[Any]:
    if isinstance(v, list):
        return v
    raise _overload()


def _is_sorted(v: Any) -> celtypes.BoolType:
    lst = _list(v)
    charge(len(lst))
    try:
        return celtypes.BoolType(all(not (b < a) for a, b in zip(lst, lst[1:], strict=False)))
    except TypeError:
        raise _overload() from None


def _sum(v: Any) -> Any:
    lst = _list(v)
    charge(len(lst))
    if not lst:
        return celtypes.IntType(0)
    total = lst[0]
    try:
        for x in lst[1:]:
            total = total + x
    except TypeError:
        raise _overload() from None
    return total


def _extreme(pick: Callable[..., Any]) -> Callable[..., Any]:
    def f(v: Any, *rest: Any) -> Any:
        items = [v, *rest] if rest or not isinstance(v, list) else _list(v)
        if not items:
            raise CELEvalError(f"{pick.__name__} called on empty list", ValueError, None)
        charge(len(items))
        try:
            return pick(items)
        except TypeError:
            raise _overload() from None
    return f


def _index_of(v: Any, x: Any, *start: Any) -> celtypes.IntType:
    if _is_str(v) and _is_str(x):
        return _str_index_of(v, x, *start)
    lst = _list(v)
    charge(len(lst))
    for i, e in enumerate(lst):
        if e == x:
            return celtypes.IntType(i)
    return celtypes.IntType(-1)


def _last_index_of(v: Any, x: Any, *end: Any) -> celtypes.IntType:
    if _is_str(v) and _is_str(x):
        charge(len(v) // 10)
        if end:
            return celtypes.IntType(v.rfind(x, 0, int(end[0]) + len(x)))
        return celtypes.IntType(v.rfind(x))
    lst = _list(v)
    charge(len(lst))
    for i in range(len(lst) - 1, -1, -1):
        if lst[i] == x:
            return celtypes.IntType(i)
    return celtypes.IntType(-1)


# ---- regex (RE2: linear time whatever the pattern) ----------------------------------------
def _compile_re(pattern: Any) -> Any:
    if not _is_str(pattern):
        raise _overload()
    try:
        return re2.compile(pattern)
    except re2.error as e:
        raise CELEvalError(f"invalid regex: {e}", ValueError, None) from None


def _find(s: Any, pattern: Any) -> celtypes.StringType:
    if not _is_str(s):
        raise _overload()
    charge(len(s) // 10)
    m = _compile_re(pattern).search(s)
    return celtypes.StringType(m.group(0) if m else "")


def _find_all(s: Any, pattern: Any, *limit: Any) -> celtypes.ListType:
    if not _is_str(s):
        raise _overload()
    charge(len(s) // 10)
    n = int(limit[0]) if limit else -1
    out: list[Any] = []
    if n == 0:
        return celtypes.ListType(out)
    for m in _compile_re(pattern).finditer(s):
        out.append(celtypes.StringType(m.group(0)))
        if 0 < n <= len(out):
            break
    return celtypes.ListType(_sized(out))


# ---- strings ext --------------------------------------------------------------------------
def _str(v: Any) -> str:
    if _is_str(v):
        return v
    raise _overload()


def _char_at(s: Any, i: Any) -> celtypes.StringType:
    s = _str(s)
    if not 0 <= int(i) <= len(s):
        raise CELEvalError(f"index out of range: {i}", IndexError, None)
    return celtypes.StringType(s[int(i):int(i) + 1])


def _str_index_of(s: str, sub: str, *start: Any) -> celtypes.IntType:
    charge(len(s) // 10)
    st = int(start[0]) if start else 0
    if not 0 <= st <= len(s):
        raise CELEvalError(f"index out of range: {st}", IndexError, None)
    return celtypes.IntType(s.find(sub, st))


def _lower_ascii(s: Any) -> celtypes.StringType:
    s = _str(s)
    return celtypes.StringType(_sized("".join(c.lower() if c.isascii() else c for c in s)))


def _upper_ascii(s: Any) -> celtypes.StringType:
    s = _str(s)
    return celtypes.StringType(_sized("".join(c.upper() if c.isascii() else c for c in s)))


def _replace(s: Any, old: Any, new: Any, *n: Any) -> celtypes.StringType:
    s, old, new = _str(s), _str(old), _str(new)
    count = int(n[0]) if n else -1
    # the result can be as long as len(s) * len(new): charge before building it
    charge((len(s) + 1) * max(len(new), 1) // 10 if old == "" or len(new) > len(old) else len(s) // 10)
    return celtypes.StringType(_sized(s.replace(old, new, count)))


def _split(s: Any, sep: Any, *n: Any) -> celtypes.ListType:
    s, sep = _str(s), _str(sep)
    count = int(n[0]) if n else -1
    if count == 0:
        return celtypes.ListType([])
    if sep == "":
        parts = list(s) if count < 0 else [*list(s[:count - 1]), s[count - 1:]] if count <= len(s) else list(s)
    else:
        parts = s.split(sep, count - 1 if count > 0 else -1)
    charge(len(parts))
    return celtypes.ListType([celtypes.StringType(p) for p in _sized(parts)])


def _substring(s: Any, start: Any, *end: Any) -> celtypes.StringType:
    s = _str(s)
    a = int(start)
    b = int(end[0]) if end else len(s)
    if not 0 <= a <= len(s) or not 0 <= b <= len(s):
        raise CELEvalError(f"index out of range: {a if not 0 <= a <= len(s) else b}", IndexError, None)
    if b < a:
        raise CELEvalError(f"invalid substring range. start: {a}, end: {b}", IndexError, None)
    return celtypes.StringType(s[a:b])


def _trim(s: Any) -> celtypes.StringType:
    return celtypes.StringType(_str(s).strip())


def _join(lst: Any, *sep: Any) -> celtypes.StringType:
    items = _list(lst)
    j = _str(sep[0]) if sep else ""
    if not all(_is_str(x) for x in items):
        raise _overload()
    charge(len(items) + (sum(len(x) for x in items) + len(j) * len(items)) // 10)
    return celtypes.StringType(j.join(items))


def _quote(ns: Any, s: Any) -> celtypes.StringType:
    if ns is not STRINGS:
        raise _overload()
    return celtypes.StringType(_sized(json.dumps(_str(s), ensure_ascii=False)))


def _reverse(s: Any) -> Any:
    if _is_str(s):
        return celtypes.StringType(_sized(s[::-1]))
    return celtypes.ListType(_sized(list(reversed(_list(s)))))


# ---- url ----------------------------------------------------------------------------------
class URL:
    __slots__ = ("u",)

    def __init__(self, u: urllib.parse.SplitResult) -> None:
        self.u = u

    def __eq__(self, other: object) -> bool:
        return isinstance(other, URL) and self.u == other.u

    def __hash__(self) -> int:
        return hash(self.u)

    def __str__(self) -> str:
        return urllib.parse.urlunsplit(self.u)


def _parse_url(s: str) -> URL | None:
    # as Go's url.ParseRequestURI: an absolute URL or an absolute path
    if not s or any(ord(c) < 0x20 or c == "\x7f" for c in s):
        return None
    try:
        u = urllib.parse.urlsplit(s)
        _ = u.port
    except ValueError:
        return None
    if not u.scheme and not s.startswith("/"):
        return None
    if u.scheme and not (u.netloc or u.path.startswith("/") or u.path):
        return None
    return URL(u)


def _url(s: Any) -> URL:
    u = _parse_url(_str(s))
    if u is None:
        raise CELEvalError(f"URL parse error during conversion from string: parse \"{s}\": invalid URI for request",
                           ValueError, None)
    return u


def _u(v: Any) -> urllib.parse.SplitResult:
    if isinstance(v, URL):
        return v.u
    raise _overload()


def _get_hostname(v: Any) -> str:
    host = _u(v).netloc.rpartition("@")[2]
    if host.startswith("["):
        return host[1:host.find("]")]
    return host.rsplit(":", 1)[0] if ":" in host else host


def _get_port(v: Any) -> str:
    host = _u(v).netloc.rpartition("@")[2]
    tail = host[host.find("]") + 1:] if host.startswith("[") else host
    return tail.rsplit(":", 1)[1] if ":" in tail else ""


def _get_query(v: Any) -> celtypes.MapType:
    q = urllib.parse.parse_qs(_u(v).query, keep_blank_values=True)
    return celtypes.MapType({celtypes.StringType(k): celtypes.ListType([celtypes.StringType(x) for x in vs])
                             for k, vs in q.items()})


# ---- ip / cidr ----------------------------------------------------------------------------
class IP:
    __slots__ = ("a",)

    def __init__(self, a: ipaddress.IPv4Address | ipaddress.IPv6Address) -> None:
        self.a = a

    def __eq__(self, other: object) -> bool:
        return isinstance(other, IP) and self.a == other.a

    def __hash__(self) -> int:
        return hash(self.a)

    def __str__(self) -> str:
        return str(self.a)


class CIDR:
    __slots__ = ("ip", "prefix")

    def __init__(self, ip: ipaddress.IPv4Address | ipaddress.IPv6Address, prefix: int) -> None:
        self.ip, self.prefix = ip, prefix

    @property
    def net(self) -> ipaddress.IPv4Network | ipaddress.IPv6Network:
        return ipaddress.ip_network(f"{self.ip}/{self.prefix}", strict=False)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, CIDR) and (self.ip, self.prefix) == (other.ip, other.prefix)

    def __hash__(self) -> int:
        return hash((self.ip, self.prefix))

    def __str__(self) -> str:
        return f"{self.ip}/{self.prefix}"


def _parse_ip(s: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    # as netip.ParseAddr: no zones, no leading zeros; IPv4-mapped IPv6 refused by the library
    if "%" in s:
        return None
    try:
        a = ipaddress.ip_address(s)
    except ValueError:
        return None
    if isinstance(a, ipaddress.IPv6Address) and a.ipv4_mapped is not None:
        return None
    return a


def _ip(s: Any) -> IP:
    if isinstance(s, CIDR):
        return IP(s.ip)
    a = _parse_ip(_str(s))
    if a is None:
        if "%" in s:
            raise CELEvalError("IP address with zone value is not allowed", ValueError, None)
        raise CELEvalError(f"IP Address \"{s}\" parse error during conversion from string: ParseAddr(\"{s}\"): "
                           "unable to parse IP", ValueError, None)
    return IP(a)


def _parse_cidr(s: str) -> CIDR | None:
    ip, sep, bits = s.partition("/")
    a = _parse_ip(ip)
    if a is None or not sep or not bits.isdigit() or (len(bits) > 1 and bits[0] == "0"):
        return None
    if int(bits) > a.max_prefixlen:
        return None
    return CIDR(a, int(bits))


def _cidr(s: Any) -> CIDR:
    c = _parse_cidr(_str(s))
    if c is None:
        raise CELEvalError(f"network address \"{s}\" parse error during conversion from string: "
                           f"netip.ParsePrefix(\"{s}\"): bad prefix", ValueError, None)
    return c


def _addr(v: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    if isinstance(v, IP):
        return v.a
    raise _overload()


def _contains_ip(c: Any, ip: Any) -> celtypes.BoolType:
    if not isinstance(c, CIDR):
        raise _overload()
    a = _ip(ip).a if _is_str(ip) else _addr(ip)
    return celtypes.BoolType(a.version == c.ip.version and a in c.net)


def _contains_cidr(c: Any, other: Any) -> celtypes.BoolType:
    if not isinstance(c, CIDR):
        raise _overload()
    o = _cidr(other) if _is_str(other) else other
    if not isinstance(o, CIDR):
        raise _overload()
    return celtypes.BoolType(o.ip.version == c.ip.version and o.prefix >= c.prefix and o.ip in c.net)


def _masked(c: Any) -> CIDR:
    if not isinstance(c, CIDR):
        raise _overload()
    return CIDR(c.net.network_address, c.prefix)


def _prefix_length(c: Any) -> celtypes.IntType:
    if not isinstance(c, CIDR):
        raise _overload()
    return celtypes.IntType(c.prefix)


def _family(v: Any) -> celtypes.IntType:
    return celtypes.IntType(_addr(v).version)


def _ip_pred(test: Callable[[Any], bool]) -> Callable[[Any], celtypes.BoolType]:
    return lambda v: celtypes.BoolType(test(_addr(v)))


def _global_unicast(a: Any) -> bool:
    # Go's IsGlobalUnicast: not unspecified/loopback/multicast/link-local, not broadcast
    return not (a.is_unspecified or a.is_loopback or a.is_multicast or a.is_link_local
                or (a.version == 4 and a == ipaddress.IPv4Address("255.255.255.255")))


def _link_local_multicast(a: Any) -> bool:
    if a.version == 4:
        return a in ipaddress.ip_network("224.0.0.0/24")
    return a.is_multicast and (a.packed[1] & 0x0F) == 2


# ---- format -------------------------------------------------------------------------------
@dataclass(frozen=True)
class Format:
    name: str
    check: Callable[[str], list[str]] = field(compare=False)


def _uuid(s: str) -> list[str]:
    return [] if re2.fullmatch(r"[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}", s) \
        else ["does not match the UUID format"]


def _byte(s: str) -> list[str]:
    import base64
    try:
        base64.b64decode(s, validate=True)
    except ValueError:
        return ["invalid base64"]
    return []


def _date(s: str) -> list[str]:
    import datetime
    try:
        datetime.date.fromisoformat(s)
    except ValueError:
        return ["invalid date"]
    return [] if len(s) == 10 else ["invalid date"]


def _datetime(s: str) -> list[str]:
    import datetime
    try:
        datetime.datetime.fromisoformat(s.replace("Z", "+00:00"))
    except ValueError:
        return ["invalid datetime"]
    return []


def _label_value(s: str) -> list[str]:
    return N.is_label_value(s)


_FORMATS: dict[str, Callable[[str], list[str]]] = {
    "dns1123Label": N.is_dns1123_label,
    "dns1123Subdomain": N.is_dns1123_subdomain,
    "dns1035Label": N.is_dns1035_label,
    "qualifiedName": N.is_qualified_name,
    "dns1123LabelPrefix": lambda s: N.is_dns1123_label(s.rstrip("-") or s),
    "dns1123SubdomainPrefix": lambda s: N.is_dns1123_subdomain(s.rstrip("-") or s),
    "dns1035LabelPrefix": lambda s: N.is_dns1035_label(s.rstrip("-") or s),
    "labelValue": _label_value,
    "uri": lambda s: [] if _parse_url(s) is not None else ["invalid URI"],
    "uuid": _uuid,
    "byte": _byte,
    "date": _date,
    "datetime": _datetime,
}


def _format_fn(name: str) -> Callable[[Any], Format]:
    def f(ns: Any) -> Format:
        if ns is not FORMAT:
            raise _overload()
        return Format(name, _FORMATS[name])
    return f


def _named(ns: Any, name: Any) -> Optional:
    if ns is not FORMAT:
        raise _overload()
    fn = _FORMATS.get(_str(name))
    return Optional(Format(name, fn), True) if fn else Optional()


def _validate(fmt: Any, s: Any) -> Optional:
    if not isinstance(fmt, Format):
        raise _overload()
    charge(len(_str(s)) // 10)
    errs = fmt.check(s)
    return Optional(celtypes.ListType([celtypes.StringType(e) for e in errs]), True) if errs else Optional()


# ---- authz --------------------------------------------------------------------------------
@dataclass(frozen=True)
class AuthzCheck:
    """The attributes one `authorizer....check(verb)` asks about."""
    verb: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    path: str = ""
    user: str = ""  # set for `authorizer.serviceAccount(ns, name)` checks


class Authorizer:
    """`authorizer` in an expression: `decide(check) -> (allowed, reason, error)` is the
    caller's (admission binds it to the RBAC authorizer for the request's user)."""

    def __init__(self, decide: Callable[[AuthzCheck], tuple[bool, str, str]], user: str = "") -> None:
        self.decide, self.user = decide, user


@dataclass(frozen=True)
class _Request:
    authz: Authorizer = field(compare=False)
    attrs: AuthzCheck


@dataclass(frozen=True)
class _Decision:
    allowed: bool
    reason: str
    error: str


def _req(v: Any) -> _Request:
    if isinstance(v, Authorizer):
        return _Request(v, AuthzCheck(user=v.user))
    if isinstance(v, _Request):
        return v
    raise _overload()


def _setter(attr: str) -> Callable[[Any, Any], _Request]:
    def f(v: Any, value: Any) -> _Request:
        if attr == "name" and isinstance(v, Format):  # not an authz call
            raise _overload()
        r = _req(v)
        return _Request(r.authz, replace(r.attrs, **{attr: _str(value)}))
    return f


def _service_account(v: Any, ns: Any, name: Any) -> Authorizer:
    if not isinstance(v, Authorizer):
        raise _overload()
    return Authorizer(v.decide, f"system:serviceaccount:{_str(ns)}:{_str(name)}")


def _check(v: Any, verb: Any) -> _Decision:
    r = _req(v)
    charge(350)  # an authorizer call is expensive; upstream charges it as such
    try:
        allowed, reason, err = r.authz.decide(replace(r.attrs, verb=_str(verb)))
    except Exception as e:  # an authorizer failure is a decision with an error, not a crash
        return _Decision(False, "", str(e))
    return _Decision(allowed, reason, err)


def _decision(v: Any) -> _Decision:
    if isinstance(v, _Decision):
        return v
    raise _overload()


# ---- conversion ---------------------------------------------------------------------------
def to_cel(v: Any) -> Any:
    """A JSON value (from an object) as CEL sees it."""
    if isinstance(v, bool):
        return celtypes.BoolType(v)
    if isinstance(v, int):
        return celtypes.IntType(v)
    if isinstance(v, float):
        return celtypes.DoubleType(v)
    if isinstance(v, str):
        return celtypes.StringType(v)
    if isinstance(v, dict):
        return celtypes.MapType({celtypes.StringType(k): to_cel(x) for k, x in v.items()})
    if isinstance(v, list):
        return celtypes.ListType([to_cel(x) for x in v])
    return v  # None, and values already in CEL form


FUNCTIONS: dict[str, Any] = {
    **quantity.FUNCTIONS,
    # lists
    "isSorted": _is_sorted, "sum": _sum, "max": _extreme(max), "indexOf": _index_of,
    "lastIndexOf": _last_index_of,
    # regex
    "find": _find, "findAll": _find_all,
    # strings ext
    "charAt": _char_at, "lowerAscii": _lower_ascii, "upperAscii": _upper_ascii, "replace": _replace,
    "split": _split, "substring": _substring, "trim": _trim, "join": _join, "quote": _quote,
    "reverse": _reverse,
    # url
    "url": _url, "isURL": lambda s: celtypes.BoolType(_parse_url(_str(s)) is not None),
    "getScheme": lambda u: celtypes.StringType(_u(u).scheme),
    "getHost": lambda u: celtypes.StringType(_u(u).netloc.rpartition("@")[2]),
    "getHostname": lambda u: celtypes.StringType(_get_hostname(u)),
    "getPort": lambda u: celtypes.StringType(_get_port(u)),
    "getEscapedPath": lambda u: celtypes.StringType(urllib.parse.quote(urllib.parse.unquote(_u(u).path), safe="/:@!$&'()*+,;=-._~")),
    "getQuery": _get_query,
    # ip / cidr
    "ip": _ip, "isIP": lambda s: celtypes.BoolType(_parse_ip(_str(s)) is not None),
    "cidr": _cidr, "isCIDR": lambda s: celtypes.BoolType(_parse_cidr(_str(s)) is not None),
    "family": _family,
    "isUnspecified": _ip_pred(lambda a: a.is_unspecified),
    "isLoopback": _ip_pred(lambda a: a.is_loopback),
    "isLinkLocalMulticast": _ip_pred(_link_local_multicast),
    "isLinkLocalUnicast": _ip_pred(lambda a: a.is_link_local),
    "isGlobalUnicast": _ip_pred(_global_unicast),
    "isCanonical": lambda s: celtypes.BoolType(_parse_ip(_str(s)) is not None and str(_parse_ip(s)) == s),
    "containsIP": _contains_ip, "containsCIDR": _contains_cidr, "masked": _masked,
    "prefixLength": _prefix_length,
    # format
    **{n: _format_fn(n) for n in _FORMATS}, "named": _named, "validate": _validate,
    # optional
    "of": _of, "none": _none, "ofNonZeroValue": _of_non_zero, "hasValue": _has_value,
    "value": _value, "orValue": _or_value,
    # authz
    "group": _setter("group"), "resource": _setter("resource"), "subresource": _setter("subresource"),
    "namespace": _setter("namespace"), "name": _setter("name"), "path": _setter("path"),
    "serviceAccount": _service_account, "check": _check,
    "allowed": lambda d: celtypes.BoolType(_decision(d).allowed),
    "reason": lambda d: celtypes.StringType(_decision(d).reason),
    "errored": lambda d: celtypes.BoolType(bool(_decision(d).error)),
    "error": lambda d: celtypes.StringType(_decision(d).error),
}
