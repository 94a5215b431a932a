"""Token cleaner: deletes expired bootstrap-token Secrets, as upstream's tokencleaner.

Each kube-system Secret of type bootstrap.kubernetes.io/token is checked when it appears or changes;
one past its `expiration` is deleted (with a UID precondition, so a re-created token of the same name
survives), one not yet expired is checked again when it expires.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from .. import bootstraptoken as bt
from ..api.errors import StatusError
from .base import GVRS, Controller, split_key

__all__ = ["TokenCleaner"]

log = logging.getLogger("pyk8s.controllers.tokencleaner")


class TokenCleaner(Controller):
    name = "token_cleaner"
    component = "token-cleaner"

    def setup(self) -> None:
        self.secrets = self.ctx.informer("secrets")
        self.secrets.add_handlers(on_add=self._maybe_enqueue, on_update=lambda old, new: self._maybe_enqueue(new))

    def _maybe_enqueue(self, secret: dict[str, Any]) -> None:
        if secret.get("type") == bt.SECRET_TYPE and (secret.get("metadata") or {}).get("namespace") == bt.NAMESPACE:
            self.enqueue(secret)

    async def sync(self, key: str) -> None:
        secret = self.secrets.get(key)
        if secret is None or secret.get("type") != bt.SECRET_TYPE:
            return
        left, expired = bt.time_remaining(secret, dt.datetime.now(dt.UTC))
        if not expired:
            if left is not None:
                self.enqueue_after(key, left)
            return
        ns, name = split_key(key)
        log.info("tokencleaner: deleting expired bootstrap token secret %s", key)
        try:
            await self.client.delete(GVRS["secrets"], name, ns,
                                     preconditions={"uid": str(secret["metadata"].get("uid") or "")})
        except StatusError as e:
            if e.code not in (404, 409):  # gone already, or a new Secret of that name
                raise
