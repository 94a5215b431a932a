"""`--enable-bootstrap-token-auth`: bearer tokens `<id>.<secret>` backed by kube-system bootstrap-token Secrets.

As upstream's bootstrap token authenticator (plugin/pkg/auth/authenticator/token/bootstrap): the token
authenticates as `system:bootstrap:<id>` in `system:bootstrappers` plus the Secret's auth-extra-groups when
the Secret exists, is not being deleted, has the bootstrap type, the same id and secret, has not expired and
allows `usage-bootstrap-authentication`. Every refusal is "not my token" (the request then gets 401 like any
unknown bearer token); the reason is only logged, so that a caller cannot probe which tokens exist.
"""

from __future__ import annotations

import datetime as dt
import hmac
import logging
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from .. import bootstraptoken as bt
from .authn import UserInfo

log = logging.getLogger("pyk8s.apiserver")

SecretGetter = Callable[[str, str], Mapping[str, Any] | None]


class BootstrapTokenAuthenticator:
    def __init__(self, get_secret: SecretGetter, clock: Callable[[], dt.datetime] = lambda: dt.datetime.now(dt.UTC)):
        self._get_secret = get_secret
        self._clock = clock

    def authenticate_token(self, token: str, audiences: Sequence[str] | None = None) -> UserInfo | None:
        parsed = bt.parse_token(token)
        if parsed is None:
            return None
        tid, tsecret = parsed
        name = bt.SECRET_PREFIX + tid
        secret = self._get_secret(bt.NAMESPACE, name)
        why = "not found" if secret is None else self._refusal(secret, tid, tsecret)
        if why is not None or secret is None:
            log.info("Bootstrap secret %s/%s %s", bt.NAMESPACE, name, why)
            return None
        return UserInfo(bt.USER_PREFIX + tid, groups=bt.groups(secret))

    def _refusal(self, secret: Mapping[str, Any], tid: str, tsecret: str) -> str | None:
        """Why the Secret does not authenticate this token (None: it does)."""
        if (secret.get("metadata") or {}).get("deletionTimestamp"):
            return "is deleted and awaiting removal"
        if secret.get("type") != bt.SECRET_TYPE:
            return f"has invalid type, expected {bt.SECRET_TYPE}"
        if not hmac.compare_digest(bt.secret_data(secret, bt.TOKEN_SECRET_KEY).encode(), tsecret.encode()):
            return f"has invalid value for key {bt.TOKEN_SECRET_KEY}"
        if bt.secret_data(secret, bt.TOKEN_ID_KEY) != tid:
            return f"has invalid value for key {bt.TOKEN_ID_KEY}"
        if bt.time_remaining(secret, self._clock())[1]:
            return "has expired"
        if bt.secret_data(secret, bt.USAGE_AUTHENTICATION) != "true":
            return f"not marked {bt.USAGE_AUTHENTICATION}=true"
        try:
            bt.groups(secret)
        except ValueError as e:
            return f"has invalid value for key {bt.EXTRA_GROUPS_KEY}: {e}"
        return None
