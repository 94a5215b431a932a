"""User impersonation: upstream's WithImpersonation filter (kubectl --as, --as-group, --as-uid).

A request carrying `Impersonate-User` (and optionally `Impersonate-Group`, repeatable,
`Impersonate-Uid`, `Impersonate-Extra-<key>`) runs as the user it names, once the
authenticated user has been allowed the `impersonate` verb on each part:

    Impersonate-User: jane                   users "jane"                      (group "")
    Impersonate-User: system:serviceaccount:ns:sa
                                             serviceaccounts "sa" in ns        (group "")
    Impersonate-Group: devs                  groups "devs"                     (group "")
    Impersonate-Uid: 1234                    uids "1234"                       (authentication.k8s.io)
    Impersonate-Extra-scopes: view           userextras/scopes "view"          (authentication.k8s.io)

The first part refused answers 403 in upstream's words, for the authenticated user. Groups,
uid or extras without a user are a 400. Like upstream, the impersonated user gets
`system:authenticated` unless it is `system:anonymous` (which gets `system:unauthenticated`)
or the groups asked already say which; a service account without asked-for groups gets
`system:serviceaccounts` and `system:serviceaccounts:<namespace>`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote

from ..api import errors as E
from ..api.validation.names import is_dns1123_label, is_dns1123_subdomain
from .authn import (
    ALL_AUTHENTICATED,
    ALL_UNAUTHENTICATED,
    ANONYMOUS,
    SERVICE_ACCOUNT_USERNAME_PREFIX,
    SERVICE_ACCOUNTS_GROUP,
    UserInfo,
    service_account_username,
)
from .authz import RequestAttributes, forbidden_error

__all__ = ["IMPERSONATOR_KEY", "requested", "impersonate", "split_service_account_username"]

USER_HEADER = "Impersonate-User"
GROUP_HEADER = "Impersonate-Group"
UID_HEADER = "Impersonate-Uid"
EXTRA_HEADER_PREFIX = "impersonate-extra-"
_PREFIX = "impersonate-"
AUTHN_GROUP = "authentication.k8s.io"
AUTHN_VERSION = f"{AUTHN_GROUP}/v1"
# where the authenticated (impersonating) user is kept on the request, for the audit log
IMPERSONATOR_KEY = "pyk8s.impersonator"


@dataclass(frozen=True)
class _Part:
    """One thing asked to impersonate (upstream builds a v1.ObjectReference per part)."""

    kind: str  # User, ServiceAccount, Group, UserExtra, UID
    name: str
    namespace: str = ""
    api_version: str = ""
    field_path: str = ""  # the extra's key

    def go_string(self) -> str:
        # fmt's %v of the ObjectReference, which upstream's 400 message prints:
        # {Kind Namespace Name UID APIVersion ResourceVersion FieldPath}
        return "{" + " ".join((self.kind, self.namespace, self.name, "", self.api_version, "", self.field_path)) + "}"


def requested(headers: Any) -> bool:
    """Whether the request carries any Impersonate-* header. Runs on every request, so it only
    looks at the header names' first letters (about 1 us for kubectl's eight headers)."""
    for k in headers:
        if k[:1] in "Ii" and k[:12].lower() == _PREFIX:
            return True
    return False


def split_service_account_username(username: str) -> tuple[str, str] | None:
    """(namespace, name) of `system:serviceaccount:<ns>:<name>`, else None (upstream's SplitUsername)."""
    if not username.startswith(SERVICE_ACCOUNT_USERNAME_PREFIX):
        return None
    parts = username[len(SERVICE_ACCOUNT_USERNAME_PREFIX):].split(":")
    if len(parts) != 2:
        return None
    namespace, name = parts
    if is_dns1123_label(namespace) or is_dns1123_subdomain(name):
        return None
    return namespace, name


def _unescape_extra_key(encoded: str) -> str:
    """Go's url.PathUnescape, keeping the key as sent when it is malformed, as upstream does."""
    i = encoded.find("%")
    while i >= 0:
        if len(encoded) < i + 3 or not all(c in "0123456789abcdefABCDEF" for c in encoded[i + 1:i + 3]):
            return encoded
        i = encoded.find("%", i + 3)
    return unquote(encoded, errors="replace")


def _parts(headers: Any) -> list[_Part]:
    """The impersonation asked for, in upstream's order: user, groups, extras, uid."""
    parts: list[_Part] = []
    user = headers.get(USER_HEADER, "")
    if user:
        sa = split_service_account_username(user)
        parts.append(_Part("ServiceAccount", sa[1], sa[0]) if sa else _Part("User", user))
    groups = headers.getall(GROUP_HEADER, ())
    parts.extend(_Part("Group", g) for g in groups)
    has_extra = False
    for k, v in headers.items():
        if k.lower().startswith(EXTRA_HEADER_PREFIX):
            has_extra = True
            key = _unescape_extra_key(k[len(EXTRA_HEADER_PREFIX):].lower())
            parts.append(_Part("UserExtra", v, api_version=AUTHN_VERSION, field_path=key))
    uid = headers.get(UID_HEADER, "")
    if uid:
        parts.append(_Part("UID", uid, api_version=AUTHN_VERSION))
    if (groups or has_extra or uid) and not user:
        raise E.new_bad_request(f"requested [{' '.join(p.go_string() for p in parts)}] without impersonating a user")
    return parts


def _attributes(part: _Part) -> RequestAttributes:
    """What the authenticated user must be allowed for one part: verb impersonate on it."""
    if part.kind == "ServiceAccount":
        return RequestAttributes(verb="impersonate", resource="serviceaccounts", name=part.name,
                                 namespace=part.namespace, api_version="v1")
    if part.kind == "User":
        return RequestAttributes(verb="impersonate", resource="users", name=part.name, api_version="v1")
    if part.kind == "Group":
        return RequestAttributes(verb="impersonate", resource="groups", name=part.name, api_version="v1")
    if part.kind == "UserExtra":
        return RequestAttributes(verb="impersonate", api_group=AUTHN_GROUP, resource="userextras",
                                 subresource=part.field_path, name=part.name, api_version="v1")
    return RequestAttributes(verb="impersonate", api_group=AUTHN_GROUP, resource="uids", name=part.name,
                             api_version="v1")


def _with_implicit_group(username: str, groups: list[str]) -> list[str]:
    if username == ANONYMOUS:
        return groups if ALL_UNAUTHENTICATED in groups else [*groups, ALL_UNAUTHENTICATED]
    if ALL_AUTHENTICATED in groups or ALL_UNAUTHENTICATED in groups:
        return groups
    return [*groups, ALL_AUTHENTICATED]


def impersonate(requestor: UserInfo, headers: Any, authorizer: Any) -> UserInfo | None:
    """The user the request runs as, or None when it asks for no impersonation.

    Raises the 400 for groups/uid/extras without a user and the 403 for the first part the
    requestor may not impersonate."""
    parts = _parts(headers)
    if not parts:
        return None
    groups_asked = any(p.kind == "Group" for p in parts)
    username, uid = "", ""
    groups: list[str] = []
    extra: dict[str, list[str]] = {}
    for p in parts:
        attrs = _attributes(p)
        allowed, reason = authorizer.authorize(requestor, attrs)
        if not allowed:
            raise forbidden_error(requestor, attrs, reason)
        if p.kind == "ServiceAccount":
            username = service_account_username(p.namespace, p.name)
            if not groups_asked:
                groups = [SERVICE_ACCOUNTS_GROUP, f"{SERVICE_ACCOUNTS_GROUP}:{p.namespace}"]
        elif p.kind == "User":
            username = p.name
        elif p.kind == "Group":
            groups.append(p.name)
        elif p.kind == "UserExtra":
            extra.setdefault(p.field_path, []).append(p.name)
        else:
            uid = p.name
    return UserInfo(username, uid, _with_implicit_group(username, groups), extra)

