"""The service proxy's loop (upstream's nftables Proxier): watch Services and EndpointSlices, keep
one nftables table per family in step with them.

Informer events only mark a Service dirty and wake the loop; a sync rebuilds the fragments
(nftables_rules.Fragment) of the dirty Services from the informer caches, diffs them against
what was programmed, and sends one `nft -f` transaction. Its cost grows with what changed, not
with the number of Services (bench/network.py measures both). Syncs are coalesced: the first
change after a quiet spell is applied at once, later ones at most every `min_sync_period`.
The first sync (and any after a failed one) rewrites the whole table in one transaction, reusing
what an earlier run left there, so a restart drops no established connection.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from ..api.errors import StatusError
from ..client import Client
from ..client.informer import InformerFactory
from ..client.tasks import cancel
from . import conntrack, nft
from .metrics import ProxyMetrics
from .nftables_rules import Fragment, TableConfig, diff, fragment, full_sync
from .serviceport import SERVICE_NAME_LABEL, ServicePort, service_ports

log = logging.getLogger("pyk8s.proxy")

__all__ = ["Proxier", "ProxyConfig", "node_families"]

SERVICES = ("", "v1", "services")
ENDPOINT_SLICES = ("discovery.k8s.io", "v1", "endpointslices")
NODES = ("", "v1", "nodes")


@dataclass
class ProxyConfig:
    node_name: str
    table: str = "pyk8s-proxy"
    cluster_cidrs: list[str] = field(default_factory=list)  # v4 and/or v6, as --cluster-cidr
    nodeport_cidrs: list[str] = field(default_factory=list)
    min_sync_period: float = 0.1  # seconds; see docs/networking.md for why not upstream's 1s
    families: list[int] = field(default_factory=lambda: [4])


def _table_config(cfg: ProxyConfig, family: int) -> TableConfig:
    def of(cidrs: list[str]) -> list[str]:
        return [c for c in cidrs if ipaddress.ip_network(c, strict=False).version == family]

    cluster = of(cfg.cluster_cidrs)
    return TableConfig(family="ip6" if family == 6 else "ip", name=cfg.table,
                       cluster_cidr=cluster[0] if cluster else "", nodeport_cidrs=tuple(of(cfg.nodeport_cidrs)))


def node_families(node: dict[str, Any] | None) -> list[int]:
    """IPv4 always; IPv6 too where the Node has an IPv6 address (dual-stack)."""
    fams = [4]
    for a in ((node or {}).get("status") or {}).get("addresses") or ():
        try:
            if ipaddress.ip_address(a.get("address", "")).version == 6:
                fams.append(6)
                break
        except ValueError:
            continue
    return fams


class Proxier:
    def __init__(self, client: Client, config: ProxyConfig) -> None:
        self.client = client
        self.config = config
        self.tables = {f: _table_config(config, f) for f in config.families}
        self.factory = InformerFactory(client)
        self.services = self.factory.informer(SERVICES)
        self.slices = self.factory.informer(ENDPOINT_SLICES)
        self.slices.add_index("service", _slice_service)
        self._fragments: dict[int, dict[str, Fragment]] = {f: {} for f in config.families}
        self._ports: dict[int, dict[str, list[ServicePort]]] = {f: {} for f in config.families}
        # one Service per map key (two Services may name the same external IP and port): who holds
        # each, and who waits for it
        self._owners: dict[int, dict[tuple[str, str], str]] = {f: {} for f in config.families}
        self._waiting: dict[int, dict[tuple[str, str], set[str]]] = {f: {} for f in config.families}
        self._dirty: set[str] = set()
        self._full = True
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None
        self.syncs = 0  # syncs applied, for tests and benchmarks
        self.last_sync_seconds = 0.0
        self.last_sync_commands = 0
        self.last_nft_seconds = 0.0  # the `nft -f` share of the last sync
        self.synced = asyncio.Event()  # set after each sync; cleared when new work arrives
        self.metrics = ProxyMetrics()  # kubeproxy_* (proxy/metrics.py)

    # ---- events --------------------------------------------------------------------------
    def _mark(self, key: str) -> None:
        self._dirty.add(key)
        self.synced.clear()
        self._wake.set()

    def _on_service(self, *objs: dict[str, Any]) -> None:
        self._mark(_key(objs[-1]))

    def _on_slice(self, *objs: dict[str, Any]) -> None:
        for o in objs:  # an update may move a slice between Services
            for key in _slice_service(o):
                self._mark(key)
        for key in _slice_service(objs[-1]):  # the newest version's trigger time
            self.metrics.slice_changed(key, objs[-1])

    # ---- lifecycle -----------------------------------------------------------------------
    def add_handlers(self) -> None:
        """Follow the informers' events (start() does this; a benchmark feeding the stores does too)."""
        for inf, fn in ((self.services, self._on_service), (self.slices, self._on_slice)):
            inf.add_handlers(fn, fn, fn)

    async def start(self, wait: float | None = 60.0) -> None:
        """Start watching; the first sync follows the informers' first lists. `wait`: seconds to wait
        for those lists (TimeoutError after them; the informers keep trying), None: do not wait."""
        self.add_handlers()
        self.factory.start()
        self._task = asyncio.create_task(self._loop(), name="proxy-sync")
        if wait is not None:
            await self.factory.wait_synced(wait)

    async def stop(self, cleanup: bool = False) -> None:
        await cancel(self._task)
        self._task = None
        await self.factory.stop()
        if cleanup:
            for t in self.tables.values():
                await nft.delete_table(t.family, t.name)

    async def wait_synced(self, timeout: float = 10.0) -> None:
        await asyncio.wait_for(self.synced.wait(), timeout)

    async def _loop(self) -> None:
        # no sync from half-filled caches: the first one would delete what the rest re-adds
        await self.factory.wait_synced(None)
        backoff = 0.0
        last = 0.0
        while True:
            if not self._full and not self._dirty:
                await self._wake.wait()
            self._wake.clear()
            # coalesce: at most one sync per min_sync_period (a burst of events becomes one transaction)
            wait = last + max(self.config.min_sync_period, backoff) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            last = time.monotonic()
            try:
                await self.sync()
                backoff = 0.0
            except asyncio.CancelledError:
                raise
            except Exception as e:  # noqa: BLE001 - one failed transaction must not end the proxy
                log.error("proxy sync failed (rewriting the whole table next): %s", e)
                self._full = True
                backoff = min(max(backoff * 2, 0.5), 30.0)

    # ---- sync ----------------------------------------------------------------------------
    def _build(self, family: int, key: str) -> tuple[list[ServicePort], Fragment | None]:
        svc = self.services.get(key)
        if svc is None:
            return [], None
        ports = service_ports(svc, self.slices.by_index("service", key), family, self.config.node_name)
        return ports, (fragment(self.tables[family], ports) if ports else None)

    def _age(self, key: str) -> tuple[str, str]:
        svc = self.services.get(key) or {}
        return (svc.get("metadata") or {}).get("creationTimestamp") or "", key

    def _claim(self, family: int, built: dict[str, tuple[list[ServicePort], Fragment | None]], full: bool) -> None:
        """Leave out of each new fragment the map keys another Service holds (the older one keeps a
        key, as nft takes one verdict per key and a duplicate would fail the whole transaction); a
        Service that lost out is synced again once the key is free."""
        owners, waiting = self._owners[family], self._waiting[family]
        if full:
            owners.clear()
            waiting.clear()
        released = set()
        for k in built:
            old = self._fragments[family].get(k)
            for m, els in (old.elements.items() if old and not full else ()):
                for key in els:
                    if owners.get((m, key)) == k:
                        del owners[(m, key)]
                        released.add((m, key))
        for k, (_, fr) in built.items():
            for m, els in (fr.elements.items() if fr else ()):
                for key in list(els):
                    holder = owners.setdefault((m, key), k)
                    if holder != k:
                        del els[key]
                        waiting.setdefault((m, key), set()).add(k)
                        log.warning("service %s: %s %s is taken by service %s", k, m, key, holder)
        for mk in released - set(owners):
            self._dirty |= waiting.pop(mk, set()) - set(built)

    async def sync(self) -> None:
        start = time.perf_counter()
        full = self._full
        dirty, self._dirty = self._dirty, set()
        if full:
            dirty = {_key(s) for s in self.services.list()} | set(self._fragments[self.config.families[0]])
        commands: list[str] = []
        new_state: dict[int, dict[str, tuple[list[ServicePort], Fragment | None]]] = {}
        for family, tcfg in self.tables.items():
            built = {k: self._build(family, k) for k in sorted(dirty, key=self._age)}
            self._claim(family, built, full)
            new_state[family] = built
            if full:
                existing = await nft.read_table(tcfg.family, tcfg.name)
                chains, sets = existing or (set(), set())
                frags = [f for _, f in built.values() if f is not None]
                commands += full_sync(tcfg, frags, chains, sets)
                continue
            phases: tuple[list[str], list[str], list[str]] = ([], [], [])
            for k, (_, fr) in built.items():
                for acc, cmds in zip(phases, diff(tcfg, self._fragments[family].get(k), fr), strict=True):
                    acc += cmds
            commands += phases[0] + phases[1] + phases[2]
        t_nft = time.perf_counter()
        try:
            await nft.apply(commands)
            self.last_nft_seconds = time.perf_counter() - t_nft
        except Exception:
            self._dirty |= dirty  # nothing of it took effect
            raise
        self._full = False
        cleanups = []
        for family, built in new_state.items():
            for k, (ports, fr) in built.items():
                old_ports = self._ports[family].get(k, [])
                cleanups += _udp_cleanups(old_ports, ports)
                if fr is None:
                    self._fragments[family].pop(k, None)
                    self._ports[family].pop(k, None)
                else:
                    self._fragments[family][k] = fr
                    self._ports[family][k] = ports
        if cleanups and conntrack.available():
            await asyncio.gather(*cleanups)
        self.syncs += 1
        self.last_sync_seconds = time.perf_counter() - start
        self.metrics.synced(dirty, self.last_sync_seconds)
        self.last_sync_commands = len(commands)
        log.debug("proxy sync: %d services, %d commands, %.1f ms%s", len(dirty), len(commands),
                  self.last_sync_seconds * 1000, " (full)" if full else "")
        if self._dirty:
            self._wake.set()  # Services that waited for a key this sync freed
        else:
            self.synced.set()


def _key(obj: dict[str, Any]) -> str:
    md = obj.get("metadata") or {}
    return f"{md.get('namespace', '')}/{md.get('name', '')}"


def _slice_service(sl: dict[str, Any]) -> list[str]:
    md = sl.get("metadata") or {}
    name = (md.get("labels") or {}).get(SERVICE_NAME_LABEL)
    return [f"{md.get('namespace', '')}/{name}"] if name else []


def _udp_cleanups(old: list[ServicePort], new: list[ServicePort]) -> list[Any]:
    """conntrack deletions owed after a UDP Service port lost endpoints or got its first ones."""
    out: list[Any] = []
    by_id = {sp.id: sp for sp in new}
    for sp in old:
        if sp.protocol != "UDP":
            continue
        now = by_id.get(sp.id)
        keep = {e.ip for e in (now.cluster_endpoints + now.local_endpoints)} if now else set()
        for ep in {e.ip for e in sp.cluster_endpoints + sp.local_endpoints} - keep:
            for ip in [sp.cluster_ip, *sp.external_ips]:
                out.append(conntrack.clear_udp_endpoint(ip, sp.port, ep))
            if sp.node_port:
                out.append(conntrack.clear_udp_endpoint("", sp.node_port, ep))
    old_ids = {sp.id: sp for sp in old}
    for sp in new:
        was = old_ids.get(sp.id)
        if sp.protocol == "UDP" and sp.cluster_endpoints and (was is None or not was.cluster_endpoints):
            out.append(conntrack.clear_udp_service(sp.cluster_ip, sp.port))
    return out


async def fetch_node(client: Client, name: str) -> dict[str, Any] | None:
    """The proxy's Node (its addresses say whether it is dual-stack), or None where it cannot be read."""
    try:
        return await client.get(NODES, name)
    except (StatusError, OSError, TimeoutError, aiohttp.ClientError) as e:
        log.warning("cannot read node %s (IPv4 only, no podCIDR): %s", name, e)
        return None
