"""CSR cleaner: garbage collection of CertificateSigningRequests, as upstream's csrcleaner.

Every hour (and once at start) every CSR is checked; it is deleted when it was issued (approved
with a certificate) or denied or failed more than an hour ago, is still pending a day after its
creation, or holds a certificate that has expired.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import datetime as dt
import logging
from typing import Any

from cryptography import x509

from ..api.timefmt import parse_time_or_none
from .base import GVRS, Controller

__all__ = ["CSRCleanerController", "should_clean", "POLLING_INTERVAL"]

log = logging.getLogger("pyk8s.controllers.csrcleaner")

POLLING_INTERVAL = 3600.0
APPROVED_EXPIRATION = 3600.0
DENIED_EXPIRATION = 3600.0
FAILED_EXPIRATION = 3600.0
PENDING_EXPIRATION = 24 * 3600.0


def _older_than(stamp: Any, seconds: float, now: float) -> bool:
    t = parse_time_or_none(stamp) if stamp else None
    return t is not None and now - t > seconds


def _certificate_expired(csr: dict[str, Any], now: float) -> bool:
    raw = (csr.get("status") or {}).get("certificate")
    if not isinstance(raw, str):
        return False
    try:
        cert = x509.load_pem_x509_certificate(base64.b64decode(raw, validate=True))
    except (binascii.Error, ValueError, TypeError):
        return False
    return now > cert.not_valid_after_utc.timestamp()


def should_clean(csr: dict[str, Any], now: float) -> bool:
    """Whether the cleaner deletes this CSR at time `now` (seconds since the epoch)."""
    conds = [c for c in (csr.get("status") or {}).get("conditions") or [] if isinstance(c, dict)]
    issued = bool((csr.get("status") or {}).get("certificate"))
    if not conds:
        return _older_than((csr.get("metadata") or {}).get("creationTimestamp"), PENDING_EXPIRATION, now)
    for c in conds:
        t = c.get("type")
        if t == "Denied" and _older_than(c.get("lastUpdateTime"), DENIED_EXPIRATION, now):
            return True
        if t == "Failed" and _older_than(c.get("lastUpdateTime"), FAILED_EXPIRATION, now):
            return True
        if t == "Approved" and issued:
            if _older_than(c.get("lastUpdateTime"), APPROVED_EXPIRATION, now) or _certificate_expired(csr, now):
                return True
    return False


class CSRCleanerController(Controller):
    name = "csrcleaner"
    component = "csrcleaner-controller"

    def setup(self) -> None:
        self.csrs = self.ctx.informer("certificatesigningrequests")

    async def run(self) -> None:
        while True:
            now = dt.datetime.now(dt.UTC).timestamp()
            for csr in self.csrs.list():
                if should_clean(csr, now):
                    name = csr["metadata"]["name"]
                    try:
                        await self.client.delete_ignore_missing(GVRS["certificatesigningrequests"], name)
                    except Exception as e:  # the next round retries
                        log.warning("csrcleaner: unable to delete CSR %q: %s", name, e)
            await asyncio.sleep(POLLING_INTERVAL)

    async def sync(self, key: str) -> None:  # pragma: no cover (run() polls instead of using the queue)
        return None
