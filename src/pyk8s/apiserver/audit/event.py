"""audit.k8s.io/v1 Event parts, built as upstream's audit package fills them (request.go, format.go)."""

from __future__ import annotations

import ipaddress
import itertools
import json
import os
import time
from typing import Any

__all__ = ["new_audit_id", "micro_time", "source_ips", "user_info", "request_verb", "legacy_line",
           "MAX_USER_AGENT"]

MAX_USER_AGENT = 1024  # upstream truncates longer User-Agents and appends "...TRUNCATED"
_METHOD_VERBS = {"POST": "create", "PUT": "update", "PATCH": "patch", "DELETE": "delete", "GET": "get",
                 "HEAD": "get"}


class _AuditIds:
    """Audit IDs are version 4 UUIDs whose first 74 random bits are drawn once per process and
    whose last 48 count up from a random start. IDs only need to be unique (clients may choose
    their own with the Audit-ID header), and every answer carries one: this costs a fifth of a
    fully random UUID's formatting (bench/get_throughput.py)."""

    prefix = ""
    next_n: Any = None

    @classmethod
    def reseed(cls) -> None:
        n = int.from_bytes(os.urandom(16), "big")
        n = (n & ~(0xF000 << 64) & ~(0xC << 60)) | (0x4000 << 64) | (0x8 << 60)  # version 4, RFC 4122 variant
        h = f"{n:032x}"
        cls.prefix = f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-"
        cls.next_n = itertools.count(int(h[20:], 16)).__next__  # (atomic under the GIL)


_AuditIds.reseed()
os.register_at_fork(after_in_child=_AuditIds.reseed)  # a forked child must not repeat the parent's IDs


def new_audit_id() -> str:
    """A version 4 UUID string, unique in this process (and, by its random part, beyond it)."""
    return f"{_AuditIds.prefix}{_AuditIds.next_n() & 0xFFFFFFFFFFFF:012x}"


class _Second:
    """The formatted second of the last timestamp: events come many to a second."""

    sec = -1
    text = ""


def micro_time(ns: int) -> str:
    """metav1.MicroTime: RFC 3339 with microseconds, in UTC."""
    sec, rest = divmod(ns, 1_000_000_000)
    if sec != _Second.sec:
        _Second.sec, _Second.text = sec, time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec))
    return f"{_Second.text}.{rest // 1000:06d}Z"


_IPS: dict[str, str | None] = {}  # parsed addresses: a server sees few peers


def _ip(s: str) -> str | None:
    hit = _IPS.get(s, "")
    if hit != "":
        return hit
    try:
        ip = ipaddress.ip_address(s.strip())
        out: str | None = str(getattr(ip, "ipv4_mapped", None) or ip)  # Go prints IPv4-mapped as IPv4
    except ValueError:
        out = None
    if len(_IPS) > 4096:
        _IPS.clear()
    _IPS[s] = out
    return out


def source_ips(headers: Any, remote: str | None) -> list[str]:
    """Upstream's utilnet.SourceIPs: X-Forwarded-For's addresses, X-Real-Ip when new, then the
    connection's address unless it is already the last one."""
    ips: list[str] = []
    fwd = headers.get("X-Forwarded-For")
    if fwd:
        ips = [ip for ip in map(_ip, fwd.split(",")) if ip is not None]
    real = headers.get("X-Real-Ip")
    if real:
        ip = _ip(real)
        if ip is not None and ip not in ips:
            ips.append(ip)
    if remote:
        ip = _ip(remote)
        if ip is not None and (not ips or ips[-1] != ip):
            ips.append(ip)
    return ips


_USERS: dict[int, tuple[Any, dict[str, Any]]] = {}  # by identity: the certificate cache hands out one object


def user_info(user: Any) -> dict[str, Any]:
    """authentication.k8s.io/v1 UserInfo with upstream's omitempty fields; {} before authentication.
    Shared between events: callers must not change it."""
    if user is None:
        return {}
    hit = _USERS.get(id(user))
    if hit is not None and hit[0] is user:
        return hit[1]
    wire: dict[str, Any] = user.to_wire()
    if len(_USERS) > 4096:
        _USERS.clear()
    _USERS[id(user)] = (user, wire)  # the reference keeps the id from being reused
    return wire


def request_verb(method: str, name: str, is_resource: bool, legacy_watch: bool, watch_param: str | None) -> str:
    """The verb upstream's RequestInfo gives a request (what audit rules and events name)."""
    if not is_resource:
        return method.lower()
    verb = _METHOD_VERBS.get(method, method.lower())
    if verb == "get" and not name:
        verb = "watch" if legacy_watch or (watch_param or "").lower() in ("1", "true") else "list"
    elif verb == "delete" and not name:
        verb = "deletecollection"
    return verb


def _go_q(s: str) -> str:
    """Go's %q for the text the legacy format quotes (JSON's escaping agrees for printable text)."""
    return json.dumps(s, ensure_ascii=False)


def legacy_line(ev: dict[str, Any], received_ns: int) -> str:
    """--audit-log-format=legacy: upstream's EventString, one line per event."""
    user = ev.get("user") or {}
    username, groups = "<none>", "<none>"
    if user.get("username"):
        username = user["username"]
        if user.get("groups"):
            groups = ",".join(_go_q(g) for g in user["groups"])
    asuser, asgroups = "<self>", "<lookup>"
    imp = ev.get("impersonatedUser")
    if imp is not None:
        asuser = imp.get("username", "")
        if imp.get("groups") is not None:
            asgroups = ",".join(_go_q(g) for g in imp["groups"])
    ref = ev.get("objectRef") or {}
    namespace = ref.get("namespace") or "<none>"
    status = ev.get("responseStatus")
    response = str(status.get("code", 0)) if status is not None else "<deferred>"
    ips = ev.get("sourceIPs") or []
    ip = ips[0] if ips else "<unknown>"
    sec, rest = divmod(received_ns, 1_000_000_000)
    frac = f"{rest:09d}".rstrip("0")  # Go's RFC3339Nano drops trailing zeros
    ts = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(sec)) + (f".{frac}" if frac else "") + "Z"
    return (f"{ts} AUDIT: id={_go_q(ev['auditID'])} stage={_go_q(ev['stage'])} ip={_go_q(ip)} "
            f"method={_go_q(ev.get('verb', ''))} user={_go_q(username)} groups={_go_q(groups)} "
            f"as={_go_q(asuser)} asgroups={_go_q(asgroups)} user-agent={_go_q(ev.get('userAgent', ''))} "
            f"namespace={_go_q(namespace)} uri={_go_q(ev.get('requestURI', ''))} response=\"{response}\"")
