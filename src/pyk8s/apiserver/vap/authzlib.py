"""The CEL `authorizer` variable (Kubernetes' authz library) backed by the server's authorizer.

`authorizer.group('apps').resource('deployments').namespace('ns').name('n').check('create').allowed()`,
`authorizer.path('/healthz').check('get')`, `authorizer.serviceAccount('ns', 'sa')...`, and
`authorizer.requestResource` (the request's own resource). A decision has `allowed()`,
`reason()`, `errored()` and `error()`. Checks are answered by the same authorizer the server's
requests go through, for the requesting user.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from celpy import celtypes

from ..authn import UserInfo
from ..authz import RequestAttributes

__all__ = ["FUNCTIONS", "make_authorizer"]


@dataclass(frozen=True)
class _Authz:
    authorize: Callable[[UserInfo, RequestAttributes], tuple[bool, str]]
    user: UserInfo


@dataclass(frozen=True)
class _Check:
    """A path or resource check being built (upstream's pathCheck / resourceCheck)."""

    authz: _Authz
    path: str = ""
    group: str = ""
    resource: str = ""
    subresource: str = ""
    namespace: str = ""
    name: str = ""
    is_path: bool = False


@dataclass(frozen=True)
class _Decision:
    allowed: bool
    reason: str
    error: str = ""


class _AuthorizerMap(celtypes.MapType):
    """The `authorizer` value: a map (so `authorizer.requestResource` selects) holding the user's checker."""

    authz: _Authz


def make_authorizer(authorize: Callable[[UserInfo, RequestAttributes], tuple[bool, str]] | None, user: UserInfo,
                    request_resource: dict[str, str]) -> Any:
    if authorize is None:
        return None
    a = _Authz(authorize, user)
    m = _AuthorizerMap()
    m.authz = a
    rr = request_resource
    own = _Check(a, group=rr["group"], resource=rr["resource"], subresource=rr["subresource"],
                 namespace=rr["namespace"], name=rr["name"])
    m[celtypes.StringType("requestResource")] = own  # type: ignore[assignment]  # an opaque CEL value
    return m


def _authz(x: Any) -> _Authz:
    if isinstance(x, _AuthorizerMap):
        return x.authz
    raise TypeError("no such overload")


def _check_of(x: Any) -> _Check:
    if isinstance(x, _Check):
        return x
    if isinstance(x, _AuthorizerMap):
        return _Check(x.authz)
    raise TypeError("no such overload")


def _service_account(a: Any, ns: Any, name: Any) -> _AuthorizerMap:
    base = _authz(a)
    user = UserInfo(name=f"system:serviceaccount:{ns}:{name}",
                    groups=["system:serviceaccounts", f"system:serviceaccounts:{ns}"])
    m = _AuthorizerMap()
    m.authz = _Authz(base.authorize, user)
    return m


def _do_check(c: Any, verb: Any) -> _Decision:
    chk = _check_of(c)
    if chk.is_path:
        attrs = RequestAttributes(verb=str(verb), resource_request=False, path=chk.path)
    else:
        attrs = RequestAttributes(verb=str(verb), api_group=chk.group, resource=chk.resource,
                                  subresource=chk.subresource, namespace=chk.namespace, name=chk.name)
    try:
        ok, reason = chk.authz.authorize(chk.authz.user, attrs)
    except Exception as e:  # an authorizer failure is the decision's error, as upstream's errored()
        return _Decision(False, "", str(e))
    return _Decision(bool(ok), reason or "")


def _decision(d: Any) -> _Decision:
    if isinstance(d, _Decision):
        return d
    raise TypeError("no such overload")


FUNCTIONS: dict[str, Callable[..., Any]] = {
    "path": lambda a, p: _Check(_authz(a), path=str(p), is_path=True),
    "group": lambda a, g: replace(_check_of(a), group=str(g)),
    "resource": lambda c, r: replace(_check_of(c), resource=str(r)),
    "subresource": lambda c, s: replace(_check_of(c), subresource=str(s)),
    "namespace": lambda c, n: replace(_check_of(c), namespace=str(n)),
    "name": lambda c, n: replace(_check_of(c), name=str(n)),
    "serviceAccount": _service_account,
    "check": _do_check,
    "allowed": lambda d: celtypes.BoolType(_decision(d).allowed),
    "reason": lambda d: celtypes.StringType(_decision(d).reason),
    "errored": lambda d: celtypes.BoolType(bool(_decision(d).error)),
    "error": lambda d: celtypes.StringType(_decision(d).error),
}
