"""APIService availability and the aggregated servers' discovery, as upstream's
available-conditions controllers and discovery manager.

Every API process runs the checks (its discovery documents merge what the backends serve);
only the main server writes `status.conditions` (Available with upstream's reasons:
`Local`, `Passed`, `ServiceNotFound`, `ServicePortError`, `MissingEndpoints`,
`FailedDiscoveryCheck`). A round runs every RESYNC seconds and as soon as an APIService, or
the Service or EndpointSlices behind one, changes. The discovery check is upstream's:
GET `/apis/<group>/<version>` on a resolved endpoint, with the front-proxy certificate
and the aggregator's own identity; any 2xx passes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from typing import Any

import aiohttp
import orjson

from ..api import errors as E
from ..api.timefmt import now_rfc3339
from .aggregator import APIServiceRef, EndpointError, identity_headers
from .rest import RequestContext
from .upgrade_splice import hostport

__all__ = ["AvailabilityController", "RESYNC"]

log = logging.getLogger("pyk8s.aggregator")

RESYNC = 30.0  # seconds between rounds when nothing changes
CHECK_TIMEOUT = aiohttp.ClientTimeout(total=5.0)


class _BadStatus(Exception):
    pass


class _AggregatorUser:
    """Who the discovery check says it is, as upstream's: system:masters always has access."""

    name = "system:kube-aggregator"
    uid = ""
    groups = ["system:masters"]
    extra: dict[str, list[str]] = {}


class AvailabilityController:
    def __init__(self, server: Any, write_status: bool) -> None:
        self.server = server
        self.aggregator = server.aggregator
        self.write_status = write_status
        self.wake = asyncio.Event()
        self.task: asyncio.Task[None] | None = None
        self._published = False  # the requestheader ConfigMap (front_proxy.py), main server only
        # (group, version) -> (APIResourceList, fetched at); kept while a backend fails (Stale)
        self.documents: dict[tuple[str, str], dict[str, Any]] = {}
        self.fresh: set[tuple[str, str]] = set()
        self.generation = 0

    def start(self) -> None:
        for group, res in (("apiregistration.k8s.io", "apiservices"), ("", "services"),
                           ("discovery.k8s.io", "endpointslices")):
            c = self.aggregator._cache(group, "v1", res)
            if c is not None:
                c.listeners.append(self._on_event if res != "apiservices" else self._on_api_service)
        self.task = asyncio.create_task(self._run(), name="apiservice-availability")

    def _on_api_service(self, ce: Any) -> None:
        self.wake.set()

    def _on_event(self, ce: Any) -> None:
        md = ce.obj.get("metadata") or {}
        name = (md.get("labels") or {}).get("kubernetes.io/service-name") or md.get("name")
        for o in self.aggregator.api_services():
            svc = (o.get("spec") or {}).get("service") or {}
            if svc.get("namespace") == md.get("namespace") and svc.get("name") == name:
                self.wake.set()
                return

    async def _run(self) -> None:
        try:
            while True:
                self.wake.clear()
                try:
                    if self.write_status and not self._published:
                        await self._publish_authentication()
                    await self.sync_all()
                except asyncio.CancelledError:
                    raise
                except Exception:  # a round that failed is retried on the next one
                    log.exception("APIService availability round failed")
                with contextlib.suppress(TimeoutError):
                    # the first rounds come quickly: bootstrap may not have made kube-system yet
                    await asyncio.wait_for(self.wake.wait(), RESYNC if self._published else 1.0)
        finally:
            await self.aggregator.close()

    async def _publish_authentication(self) -> None:
        """kube-system/extension-apiserver-authentication, rewritten at every start as upstream's."""
        from .front_proxy import CONFIGMAP_NAME, CONFIGMAP_NAMESPACE, authentication_configmap

        s = self.server
        res = s.registry.get("", "v1", "configmaps")
        want = authentication_configmap(s.pki.ca_pem, self.aggregator.front)
        ctx = RequestContext(field_manager="kube-apiserver")
        try:
            cur = await s.rest.get_current(res, CONFIGMAP_NAMESPACE, CONFIGMAP_NAME)
            if cur is None:
                await s.rest.create(res, CONFIGMAP_NAMESPACE, want, ctx)
            elif cur.get("data") != want["data"]:
                def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
                    assert c is not None
                    c["data"] = want["data"]
                    return c

                await s.rest.update(res, CONFIGMAP_NAMESPACE, CONFIGMAP_NAME, mutate, ctx, retry_on_conflict=True)
        except E.StatusError as e:  # kube-system not there yet: the next round
            log.debug("extension-apiserver-authentication: %s", e.message)
            return
        self._published = True

    async def sync_all(self) -> None:
        remote_now: set[tuple[str, str]] = set()
        checks = []
        for obj in self.aggregator.api_services():
            spec = obj.get("spec") or {}
            if not spec.get("service"):
                if self.write_status:
                    await self._set(obj, "True", "Local", "Local APIServices are always available")
                continue
            ref = APIServiceRef(obj)
            remote_now.add((ref.group, ref.version))
            checks.append(self._check(obj, ref))
        await asyncio.gather(*checks)
        gone = [gv for gv in self.documents if gv not in remote_now]
        for gv in gone:
            del self.documents[gv]
            self.fresh.discard(gv)
        if gone:
            self.generation += 1

    async def _check(self, obj: dict[str, Any], ref: APIServiceRef) -> None:
        gv = (ref.group, ref.version)
        try:
            host, port = self.aggregator.endpoint(ref)
        except EndpointError as e:
            self._stale(gv)
            if self.write_status:
                await self._set(obj, "False", e.reason, e.message)
            return
        url = f"https://{hostport(host, port)}/apis/{ref.group}/{ref.version}"
        try:
            # as upstream's check: the serving certificate is not verified here ("if someone owns the
            # network and messes with your status that's not so bad"); proxied requests verify it
            async with self.aggregator.session().get(
                    url, ssl=self.aggregator.check_context(),
                    headers=[("Accept", "application/json"), *identity_headers(_AggregatorUser)],
                    timeout=CHECK_TIMEOUT) as r:
                body = await r.read()
                if not 200 <= r.status < 300:
                    raise _BadStatus(f"bad status from {url}: {r.status}")
            doc = orjson.loads(body)
            if not isinstance(doc, dict):
                raise _BadStatus(f"{url}: not an APIResourceList")
        except _BadStatus as e:
            await self._failed(obj, gv, url, str(e))
            return
        except (TimeoutError, aiohttp.ClientError, OSError, ValueError) as e:
            await self._failed(obj, gv, url, f'Get "{url}": {e or type(e).__name__}')  # as Go's client error reads
            return
        if self.documents.get(gv) != doc or gv not in self.fresh:
            self.documents[gv] = doc
            self.fresh.add(gv)
            self.generation += 1
        if self.write_status:
            await self._set(obj, "True", "Passed", "all checks passed")

    async def _failed(self, obj: dict[str, Any], gv: tuple[str, str], url: str, why: str) -> None:
        self._stale(gv)
        if self.write_status:
            await self._set(obj, "False", "FailedDiscoveryCheck", f"failing or missing response from {url}: {why}")

    def _stale(self, gv: tuple[str, str]) -> None:
        if gv in self.fresh:
            self.fresh.discard(gv)
            self.generation += 1

    async def _set(self, obj: dict[str, Any], status: str, reason: str, message: str) -> None:
        conds = (obj.get("status") or {}).get("conditions") or []
        cur = next((c for c in conds if c.get("type") == "Available"), None)
        if cur is not None and (cur.get("status"), cur.get("reason"), cur.get("message")) == (status, reason, message):
            return
        s = self.server
        res = s.registry.get("apiregistration.k8s.io", "v1", "apiservices")

        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            assert c is not None
            st = c.setdefault("status", {})
            old = next((x for x in st.get("conditions") or [] if x.get("type") == "Available"), None)
            ltt = old.get("lastTransitionTime") if old is not None and old.get("status") == status else now_rfc3339()
            new = {"type": "Available", "status": status, "lastTransitionTime": ltt, "reason": reason,
                   "message": message}
            st["conditions"] = [x for x in st.get("conditions") or [] if x.get("type") != "Available"] + [new]
            return c

        try:
            await s.rest.update(res, None, obj["metadata"]["name"], mutate,
                                RequestContext(field_manager="kube-apiserver"), subresource="status",
                                retry_on_conflict=True)
        except E.StatusError as e:
            if e.code != 404:  # deleted meanwhile: nothing to say
                log.warning("APIService %s status: %s", obj["metadata"]["name"], e.message)
        log.debug("APIService %s Available=%s %s at %.0f", obj["metadata"]["name"], status, reason, time.time())
