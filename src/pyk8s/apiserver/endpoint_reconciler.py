"""The `kubernetes` Service's endpoints when several API servers share one store.

Two upstream mechanisms, as kube-apiserver v1.33 runs them:

* **Lease endpoint reconciler** (`--endpoint-reconciler-type=lease`, upstream's default,
  pkg/controlplane/reconcilers/lease.go). Every API server keeps a "master lease" under
  `/registry/masterleases/<advertise-ip>` (an Endpoints value naming its IP) and renews it every
  reconcile interval (upstream: 10 s) for a TTL (upstream: 15 s). It then sets
  `default/kubernetes` Endpoints (and the EndpointSlice, as upstream's endpoints adapter does)
  to one subset holding every live lease's IP, with *its own* port. A server that dies stops
  renewing and its IP leaves the endpoints one TTL later; a server that shuts down cleanly
  removes its lease and its IP at once. Like upstream, it never writes an empty address list.

  On etcd each lease key is put on an etcd lease of the TTL, as upstream's (EtcdStore.put_with_ttl),
  so etcd deletes it. Stores without TTLs (SQLite) get the expiry time in an annotation instead,
  and readers ignore and delete expired leases: the same observable behaviour, relying on the
  API servers' clocks.

  Ports: upstream assumes every API server listens on the same port (a second one with another
  port would rewrite the subset's port on every round). So do we: several servers on one host
  need distinct advertise addresses (e.g. 127.0.0.2, 127.0.0.3 with `--bind-address`), not
  distinct ports; a server that finds another port in the Endpoints logs a warning when it
  takes it over.

* **API server identity** (KEP-1965, pkg/controlplane/apiserver/server.go): a Lease
  `kube-system/kube-apiserver-<hash>` labelled `apiserver.kubernetes.io/identity=kube-apiserver`,
  held by `<name>_<uuid>`, renewed every 10 s with a duration of one hour; expired identity
  leases are garbage-collected (upstream's apiserverleasegc, hourly). Upstream hashes the
  hostname alone, assuming one API server per host; we hash hostname, advertise address and
  port, so several servers on one host keep distinct identities.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import logging
import socket
import time
import uuid
from typing import Any

import orjson

from ..api import errors as E
from ..api.timefmt import now_micro, parse_time
from ..client.tasks import cancel as _cancel
from ..storage import StoreError
from ..storage.interface import ConflictError, KeyExistsError, KeyNotFoundError
from .rest import RequestContext

log = logging.getLogger("pyk8s.apiserver.endpoints")

__all__ = ["LeaseEndpointReconciler", "IdentityLease", "identity_lease_name", "MASTER_LEASES"]

MASTER_LEASES = "/registry/masterleases/"
EXPIRES = "pyk8s.io/master-lease-expires"  # unix seconds; stands in for etcd's key TTL
SERVICE = "kubernetes"
NAMESPACE = "default"
IDENTITY_LABEL = "apiserver.kubernetes.io/identity"
IDENTITY_DURATION = 3600  # upstream IdentityLeaseDurationSeconds
IDENTITY_RENEW = 10.0  # upstream IdentityLeaseRenewIntervalPeriod
IDENTITY_GC = 3600.0  # upstream IdentityLeaseGCPeriod


class LeaseEndpointReconciler:
    """Keeps this server's master lease and `default/kubernetes` Endpoints/EndpointSlice right."""

    def __init__(self, server: Any, ttl: float = 15.0, interval: float = 10.0) -> None:
        self.server = server
        self.ttl = ttl
        self.interval = interval
        self._task: asyncio.Task[None] | None = None

    @property
    def ip(self) -> str:
        return str(self.server.advertise_address)

    @property
    def ports(self) -> list[dict[str, Any]]:
        return [{"name": "https", "port": int(self.server.port), "protocol": "TCP"}]

    # ---- master leases -----------------------------------------------------------------
    async def update_lease(self) -> None:
        """Create or refresh this server's lease (a changed value on every renewal, as upstream
        bumps the generation so that the TTL is rewritten)."""
        store = self.server.store
        key = MASTER_LEASES + self.ip
        for _ in range(5):
            kv = await store.get(key)
            gen = 1
            if kv is not None:
                try:
                    gen = int((orjson.loads(kv.value).get("metadata") or {}).get("generation") or 0) + 1
                except ValueError:
                    gen = 1
            md: dict[str, Any] = {"name": self.ip, "generation": gen}
            put_with_ttl = getattr(store, "put_with_ttl", None)
            if put_with_ttl is None:  # no TTLs in this store: readers compare the expiry with their clock
                md["annotations"] = {EXPIRES: f"{time.time() + self.ttl:.3f}"}
            value = orjson.dumps({"kind": "Endpoints", "apiVersion": "v1", "metadata": md,
                                  "subsets": [{"addresses": [{"ip": self.ip}]}]})
            if put_with_ttl is not None:  # etcd: the key goes when its lease runs out, as upstream's
                await put_with_ttl(key, value, self.ttl)
                return
            try:
                if kv is None:
                    await store.create(key, value)
                else:
                    await store.update(key, value, kv.mod_revision)
                return
            except (KeyExistsError, ConflictError, KeyNotFoundError):
                continue  # raced with our own previous attempt or a GC: read again

    async def remove_lease(self) -> None:
        try:
            await self.server.store.delete(MASTER_LEASES + self.ip)
        except KeyNotFoundError:
            pass

    async def list_leases(self) -> list[str]:
        """IPs of unexpired master leases; expired ones are deleted (etcd would have dropped them)."""
        store = self.server.store
        res = await store.range(MASTER_LEASES)
        now = time.time()
        ips: list[str] = []
        for kv in res.kvs:
            try:
                obj = orjson.loads(kv.value)
                # no expiry in the value: the store's own TTL removes the key (etcd)
                expires = float(((obj.get("metadata") or {}).get("annotations") or {}).get(EXPIRES) or "inf")
                ip = obj["subsets"][0]["addresses"][0]["ip"]
            except (ValueError, KeyError, IndexError, TypeError):
                expires, ip = 0.0, ""
            if expires > now and ip:
                ips.append(ip)
                continue
            try:
                await store.delete(kv.key, kv.mod_revision)
                log.info("master lease %s expired; removed", kv.key[len(MASTER_LEASES):])
            except StoreError:
                pass  # renewed or removed meanwhile
        return sorted(set(ips))

    # ---- endpoints ---------------------------------------------------------------------
    async def reconcile(self, include_self: bool = True) -> None:
        if include_self:
            await self.update_lease()
        ips = await self.list_leases()
        if include_self and self.ip not in ips:
            ips = sorted({*ips, self.ip})
        if not ips:
            # as upstream: never erase every endpoint of the kubernetes Service
            log.warning("no API server addresses are listed in storage; leaving the kubernetes endpoints alone")
            return
        await self._write_endpoints(ips)
        await self._write_slice(ips)

    async def _write_endpoints(self, ips: list[str]) -> None:
        server = self.server
        res = server.registry.get("", "v1", "endpoints")
        want_subsets = [{"addresses": [{"ip": ip} for ip in ips], "ports": self.ports}]
        cur = await server.rest.get_current(res, NAMESPACE, SERVICE)
        if cur is not None and _endpoints_correct(cur, ips, self.ports):
            return
        if cur is not None:
            old_ports = [p.get("port") for s in cur.get("subsets") or [] for p in s.get("ports") or []]
            if old_ports and old_ports != [server.port]:
                log.warning("kubernetes endpoints listed port(s) %s; this API server serves %d: every API server "
                            "should listen on the same port", old_ports, server.port)
        ctx = RequestContext(field_manager="kube-apiserver")

        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            c = c or {"apiVersion": "v1", "kind": "Endpoints",
                      "metadata": {"name": SERVICE, "namespace": NAMESPACE}}
            c.setdefault("metadata", {}).setdefault("labels", {})["endpointslice.kubernetes.io/skip-mirror"] = "true"
            c["subsets"] = want_subsets
            return c

        await server.rest.update(res, NAMESPACE, SERVICE, mutate, ctx, allow_create=True, retry_on_conflict=True)

    async def _write_slice(self, ips: list[str]) -> None:
        server = self.server
        res = server.registry.get("discovery.k8s.io", "v1", "endpointslices")
        endpoints = [{"addresses": [ip], "conditions": {"ready": True}} for ip in ips]
        cur = await server.rest.get_current(res, NAMESPACE, SERVICE)
        if cur is not None and cur.get("endpoints") == endpoints and cur.get("ports") == self.ports:
            return
        ctx = RequestContext(field_manager="kube-apiserver")

        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            c = c or {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice", "addressType": "IPv4",
                      "metadata": {"name": SERVICE, "namespace": NAMESPACE}}
            c.setdefault("metadata", {}).setdefault("labels", {})["kubernetes.io/service-name"] = SERVICE
            c["endpoints"] = endpoints
            c["ports"] = self.ports
            return c

        await server.rest.update(res, NAMESPACE, SERVICE, mutate, ctx, allow_create=True, retry_on_conflict=True)

    # ---- lifecycle ---------------------------------------------------------------------
    async def start(self) -> None:
        try:
            await self.reconcile()
        except (StoreError, E.StatusError) as e:
            log.error("reconciling the kubernetes endpoints: %s", e)
        self._task = asyncio.create_task(self._loop(), name="endpoint-reconciler")

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.reconcile()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - the store may be away for a while; try again next round
                log.error("reconciling the kubernetes endpoints: %s", e)

    async def stop(self) -> None:
        """Stop renewing, and (as upstream's RemoveEndpoints on shutdown) take this server out now."""
        await _cancel(self._task)
        self._task = None
        try:
            await asyncio.wait_for(self._remove(), 5.0)
        except (TimeoutError, StoreError, E.StatusError) as e:
            log.warning("removing this API server from the kubernetes endpoints: %s", e)

    async def _remove(self) -> None:
        await self.remove_lease()
        await self.reconcile(include_self=False)


def _endpoints_correct(ep: dict[str, Any], ips: list[str], ports: list[dict[str, Any]]) -> bool:
    subsets = ep.get("subsets") or []
    if len(subsets) != 1:
        return False
    got = sorted(a.get("ip") for a in subsets[0].get("addresses") or [])
    if got != ips or subsets[0].get("notReadyAddresses"):
        return False
    return [(p.get("name"), p.get("port"), p.get("protocol")) for p in subsets[0].get("ports") or []] == \
        [(p["name"], p["port"], p["protocol"]) for p in ports]


# ---- API server identity --------------------------------------------------------------------
def identity_lease_name(hostname: str, advertise: str, port: int) -> str:
    h = hashlib.sha256(f"{hostname}|{advertise}|{port}".encode()).digest()
    return "kube-apiserver-" + base64.b32encode(h[:16]).decode().rstrip("=").lower()


class IdentityLease:
    def __init__(self, server: Any, renew: float = IDENTITY_RENEW) -> None:
        self.server = server
        self.renew = renew
        self.hostname = socket.gethostname().lower()
        self.name = identity_lease_name(self.hostname, server.advertise_address, server.port)
        self.holder = f"{self.name}_{uuid.uuid4()}"
        self._task: asyncio.Task[None] | None = None
        self._last_gc = 0.0

    async def heartbeat(self) -> None:
        server = self.server
        res = server.registry.get("coordination.k8s.io", "v1", "leases")
        ctx = RequestContext(field_manager="kube-apiserver")
        labels = {IDENTITY_LABEL: "kube-apiserver", "kubernetes.io/hostname": self.hostname}

        def mutate(c: dict[str, Any] | None) -> dict[str, Any]:
            c = c or {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
                      "metadata": {"name": self.name, "namespace": "kube-system"}}
            c.setdefault("metadata", {}).setdefault("labels", {}).update(labels)
            spec = c.setdefault("spec", {})
            spec.update(holderIdentity=self.holder, leaseDurationSeconds=IDENTITY_DURATION, renewTime=now_micro())
            return c

        await server.rest.update(res, "kube-system", self.name, mutate, ctx, allow_create=True,
                                 retry_on_conflict=True)

    async def collect_garbage(self) -> None:
        """Delete identity leases of API servers gone for longer than their lease duration."""
        server = self.server
        res = server.registry.get("coordination.k8s.io", "v1", "leases")
        cache = await server.rest.cache_for(res)
        now = time.time()
        for obj in cache.list("kube-system"):
            md = obj.get("metadata") or {}
            if md.get("namespace") != "kube-system" or (md.get("labels") or {}).get(IDENTITY_LABEL) != "kube-apiserver":
                continue
            spec = obj.get("spec") or {}
            try:
                renewed = parse_time(spec.get("renewTime"))
            except (TypeError, ValueError):
                continue
            if renewed + float(spec.get("leaseDurationSeconds") or IDENTITY_DURATION) < now:
                try:
                    await server.rest.delete(res, "kube-system", md["name"],
                                             {"preconditions": {"resourceVersion": md.get("resourceVersion")}},
                                             RequestContext(field_manager="kube-apiserver"))
                except E.StatusError:
                    pass

    async def start(self) -> None:
        self._task = asyncio.create_task(self._loop(), name="apiserver-identity")

    async def _loop(self) -> None:
        while True:
            try:
                await self.heartbeat()
                if time.monotonic() - self._last_gc > IDENTITY_GC or not self._last_gc:
                    self._last_gc = time.monotonic()
                    await self.collect_garbage()
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - next round
                log.error("API server identity lease %s: %s", self.name, e)
            await asyncio.sleep(self.renew)

    async def stop(self) -> None:
        await _cancel(self._task)
        self._task = None

