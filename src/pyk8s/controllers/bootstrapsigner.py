"""Bootstrap signer: signs kube-public/cluster-info with every signing bootstrap token, as upstream's.

The ConfigMap's `kubeconfig` (the cluster's server URL and CA, which kubeadm/`pyk8s server` publish)
gets one `jws-kubeconfig-<token id>` entry per kube-system bootstrap token that allows
`usage-bootstrap-signing` and has not expired: a detached HS256 JWS keyed by the token's secret. A node
that holds only a token can then trust the CA it reads anonymously (bootstraptoken.verify_detached).
Entries of tokens that went away or expired are removed.
"""

from __future__ import annotations

import datetime as dt
import logging
from typing import Any

from .. import bootstraptoken as bt
from ..api.errors import StatusError
from .base import GVRS, Controller

__all__ = ["BootstrapSigner"]

log = logging.getLogger("pyk8s.controllers.bootstrapsigner")

KEY = f"{bt.CLUSTER_INFO_NAMESPACE}/{bt.CLUSTER_INFO}"


class BootstrapSigner(Controller):
    name = "bootstrap_signer_queue"
    component = "bootstrap-signer"
    workers = 1

    def setup(self) -> None:
        self.configmaps = self.ctx.informer("configmaps")
        self.secrets = self.ctx.informer("secrets")
        self.configmaps.add_handlers(on_add=self._cm, on_update=lambda old, new: self._cm(new))
        self.secrets.add_handlers(on_add=self._secret, on_update=lambda old, new: self._secret(new),
                                  on_delete=self._secret)

    def _cm(self, cm: dict[str, Any]) -> None:
        meta = cm.get("metadata") or {}
        if meta.get("namespace") == bt.CLUSTER_INFO_NAMESPACE and meta.get("name") == bt.CLUSTER_INFO:
            self.enqueue(KEY)

    def _secret(self, secret: dict[str, Any]) -> None:
        if secret.get("type") == bt.SECRET_TYPE:
            self.enqueue(KEY)

    def signatures(self, content: str) -> tuple[dict[str, str], float | None]:
        """The JWS entries for content, and the seconds until the first signing token expires."""
        now = dt.datetime.now(dt.UTC)
        out: dict[str, str] = {}
        soonest: float | None = None
        for s in self.secrets.list(bt.NAMESPACE):
            if not bt.is_bootstrap_secret(s) or (s.get("metadata") or {}).get("deletionTimestamp"):
                continue
            tid, secret = bt.secret_data(s, bt.TOKEN_ID_KEY), bt.secret_data(s, bt.TOKEN_SECRET_KEY)
            if bt.token_id_from_secret_name(s["metadata"]["name"]) != tid or not secret:
                continue
            if bt.secret_data(s, bt.USAGE_SIGNING) != "true":
                continue
            left, expired = bt.time_remaining(s, now)
            if expired:
                continue
            if left is not None:
                soonest = left if soonest is None else min(soonest, left)
            out[bt.JWS_PREFIX + tid] = bt.detached_signature(content, tid, secret)
        return out, soonest

    async def sync(self, key: str) -> None:
        cm = self.configmaps.get(KEY)
        if cm is None:
            return
        data: dict[str, str] = dict(cm.get("data") or {})
        content = data.get(bt.KUBECONFIG_KEY)
        if content is None:
            return
        sigs, soonest = self.signatures(content)
        if soonest is not None:
            self.enqueue_after(KEY, soonest)  # drop its entry when it expires, before the cleaner runs
        new = {k: v for k, v in data.items() if not k.startswith(bt.JWS_PREFIX)} | sigs
        if new == data:
            return
        try:
            await self.client.update(GVRS["configmaps"], {**cm, "data": new})
        except StatusError as e:
            if e.code == 409:  # changed meanwhile: the informer's event brings it back
                self.enqueue_after(KEY, 0.1)
                return
            if e.code != 404:
                raise
