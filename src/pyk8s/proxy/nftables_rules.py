"""The nftables rules of the service proxy, as upstream kube-proxy's nftables mode lays them out.

One table per family (`ip pyk8s-proxy`, `ip6 pyk8s-proxy`). Fixed base chains hook into NAT and
filter; Services are reached through verdict maps keyed by destination, so a packet costs one map
lookup however many Services there are:

- `services`: `ip daddr . meta l4proto . th dport vmap @service-ips` (ClusterIPs to a
  `service-*` chain, external and LoadBalancer IPs to an `external-*` chain), then NodePorts on
  local addresses through `@service-nodeports`.
- `service-<hash>-ns/name/proto/port`: masquerade what comes from outside the cluster CIDR, pick
  an endpoint (ClientIP affinity first, then `numgen random`) and goto its `endpoint-*` chain.
- `endpoint-<hash>-ns/name/proto/port__ip/port`: masquerade hairpin traffic (an endpoint reaching
  itself), refresh the affinity set, DNAT.
- `external-*`: NodePort/LoadBalancer traffic: masquerade and go to the service chain, or with
  externalTrafficPolicy Local keep the client address and use this node's endpoints only.
- Filter chains reject new connections to Services without endpoints (`@no-endpoint-services`,
  `@no-endpoint-nodeports`: ICMP port unreachable, as upstream) and to ClusterIP ports that no
  Service serves.

Every Service is a `Fragment` (its chains, affinity sets and map elements), so a sync rebuilds and
diffs only the Services that changed and sends one `nft -f` transaction for them.
"""

from __future__ import annotations

import base64
import hashlib
from dataclasses import dataclass, field

from .serviceport import Endpoint, ServicePort

__all__ = ["Fragment", "TableConfig", "base_table", "fragment", "diff", "full_sync", "MAPS"]

MASQ_BIT = "0x00004000"  # upstream's masquerade mark bit


@dataclass(frozen=True)
class TableConfig:
    family: str = "ip"  # ip or ip6
    name: str = "pyk8s-proxy"
    cluster_cidr: str = ""  # traffic from outside it to a ClusterIP is masqueraded
    nodeport_cidrs: tuple[str, ...] = ()  # () : NodePorts on every local address

    @property
    def addr(self) -> str:
        return "ip6" if self.family == "ip6" else "ip"

    @property
    def addr_type(self) -> str:
        return "ipv6_addr" if self.family == "ip6" else "ipv4_addr"

    @property
    def loopback(self) -> str:
        return "::1" if self.family == "ip6" else "127.0.0.0/8"


# maps and sets of the base table, with their element types
MAPS = ("service-ips", "service-nodeports", "no-endpoint-services", "no-endpoint-nodeports", "cluster-ips")


@dataclass
class Fragment:
    """One Service's share of the table."""

    chains: dict[str, list[str]] = field(default_factory=dict)
    sets: dict[str, int] = field(default_factory=dict)  # affinity set -> timeout seconds
    elements: dict[str, dict[str, str]] = field(default_factory=dict)  # map/set -> key -> verdict ("" for sets)


def _hash(text: str) -> str:
    # as upstream: a short hash keeps names unique after truncation, the readable part is for people
    return base64.b32encode(hashlib.sha256(text.encode()).digest())[:8].decode()


def _name(prefix: str, ident: str) -> str:
    # nft names take no ':' (IPv6 endpoints): dots instead; the hash keeps names unique
    return f"{prefix}-{_hash(ident)}-{ident.replace(':', '.')}"[:200]


def service_chain(sp: ServicePort) -> str:
    return _name("service", sp.id)


def external_chain(sp: ServicePort) -> str:
    return _name("external", sp.id)


def local_chain(sp: ServicePort) -> str:
    return _name("local", sp.id)


def endpoint_chain(sp: ServicePort, ep: Endpoint) -> str:
    return _name("endpoint", f"{sp.id}__{ep.ip}/{ep.port}")


def affinity_set(sp: ServicePort, ep: Endpoint) -> str:
    # the timeout is part of the name: a changed timeout is a new set, and the rules naming it change
    return _name("affinity", f"{sp.id}__{ep.ip}/{ep.port}/{sp.affinity_timeout}s")


def base_table(cfg: TableConfig) -> tuple[list[str], list[str]]:
    """Commands that declare the fixed part of the table (idempotent: `add` of what exists is a
    no-op), and those that fill its fixed chains (after a `flush table`)."""
    t = f"{cfg.family} {cfg.name}"
    a, typ = cfg.addr, cfg.addr_type
    lines = [
        f"add table {t} {{ comment \"rules for pyk8s Services (the service proxy)\" ; }}",
        f"add chain {t} nat-prerouting {{ type nat hook prerouting priority dstnat ; }}",
        f"add chain {t} nat-output {{ type nat hook output priority -100 ; }}",
        f"add chain {t} nat-postrouting {{ type nat hook postrouting priority srcnat ; }}",
        f"add chain {t} filter-input {{ type filter hook input priority -110 ; }}",
        f"add chain {t} filter-forward {{ type filter hook forward priority -110 ; }}",
        f"add chain {t} filter-output {{ type filter hook output priority -110 ; }}",
        f"add chain {t} filter-output-post-dnat {{ type filter hook output priority -90 ; }}",
        f"add map {t} service-ips {{ type {typ} . inet_proto . inet_service : verdict ; }}",
        f"add map {t} service-nodeports {{ type inet_proto . inet_service : verdict ; }}",
        f"add map {t} no-endpoint-services {{ type {typ} . inet_proto . inet_service : verdict ; }}",
        f"add map {t} no-endpoint-nodeports {{ type inet_proto . inet_service : verdict ; }}",
        f"add set {t} cluster-ips {{ type {typ} ; }}",
    ]
    for ch in ("services", "masquerading", "mark-for-masquerade", "service-endpoints-check",
               "nodeport-endpoints-check", "cluster-ips-check", "reject-chain"):
        lines.append(f"add chain {t} {ch}")
    if cfg.nodeport_cidrs:
        lines.append(f"add set {t} nodeport-ips {{ type {typ} ; flags interval ; }}")
    # the fixed chains' rules are rewritten whole at every full sync (flush table first)
    local_dst = (f"{a} daddr @nodeport-ips" if cfg.nodeport_cidrs
                 else f"fib daddr type local {a} daddr != {cfg.loopback}")
    rules = {
        "nat-prerouting": ["jump services"],
        "nat-output": ["jump services"],
        "nat-postrouting": ["jump masquerading"],
        "filter-input": ["ct state new jump nodeport-endpoints-check", "ct state new jump service-endpoints-check"],
        "filter-forward": ["ct state new jump service-endpoints-check", "ct state new jump cluster-ips-check"],
        "filter-output": ["ct state new jump service-endpoints-check",
                          "ct state new jump nodeport-endpoints-check"],
        "filter-output-post-dnat": ["ct state new jump cluster-ips-check"],
        "services": [f"{a} daddr . meta l4proto . th dport vmap @service-ips",
                     f"{local_dst} meta l4proto . th dport vmap @service-nodeports"],
        "masquerading": [f"meta mark & {MASQ_BIT} == 0 return",
                         f"meta mark set meta mark xor {MASQ_BIT}",
                         "masquerade fully-random"],
        "mark-for-masquerade": [f"meta mark set meta mark or {MASQ_BIT}"],
        "service-endpoints-check": [f"{a} daddr . meta l4proto . th dport vmap @no-endpoint-services"],
        "nodeport-endpoints-check": [f"{local_dst} meta l4proto . th dport vmap @no-endpoint-nodeports"],
        # as upstream: a ClusterIP answers only on its Service's ports
        "cluster-ips-check": [f"{a} daddr @cluster-ips reject comment \"no such port on this ClusterIP\""],
        "reject-chain": ["reject"],
    }
    fill = [f"add rule {t} {ch} {r}" for ch, rs in rules.items() for r in rs]
    if cfg.nodeport_cidrs:
        fill.append(f"add element {t} nodeport-ips {{ {', '.join(cfg.nodeport_cidrs)} }}")
    return lines, fill


def _dnat_target(ep: Endpoint) -> str:
    return f"[{ep.ip}]:{ep.port}" if ":" in ep.ip else f"{ep.ip}:{ep.port}"


def _pick(sp: ServicePort, eps: list[Endpoint], a: str) -> list[str]:
    """Rules that send a packet to one of `eps` (affinity first, then an even random pick)."""
    rules = []
    if sp.affinity_timeout:
        rules += [f"{a} saddr @{affinity_set(sp, e)} goto {endpoint_chain(sp, e)}" for e in eps]
    if len(eps) == 1:
        rules.append(f"goto {endpoint_chain(sp, eps[0])}")
    else:
        arms = ", ".join(f"{i} : goto {endpoint_chain(sp, e)}" for i, e in enumerate(eps))
        rules.append(f"numgen random mod {len(eps)} vmap {{ {arms} }}")
    return rules


def fragment(cfg: TableConfig, ports: list[ServicePort]) -> Fragment:
    """The chains, sets and map elements of one Service (all its ports) in this family's table."""
    a = cfg.addr
    f = Fragment()
    el: dict[str, dict[str, str]] = {m: {} for m in MAPS}
    for sp in ports:
        proto = sp.protocol.lower()
        el["cluster-ips"][sp.cluster_ip] = ""
        usable = sp.cluster_endpoints
        svc_chain = service_chain(sp)
        # endpoint chains for every endpoint either path may use
        eps = {e.key: e for e in [*sp.cluster_endpoints, *(sp.local_endpoints if sp.external_local else [])]}
        for e in eps.values():
            rules = [f"{a} saddr {e.ip} jump mark-for-masquerade"]  # hairpin: reply must come back through us
            if sp.affinity_timeout:
                f.sets[affinity_set(sp, e)] = sp.affinity_timeout
                rules.append(f"update @{affinity_set(sp, e)} {{ {a} saddr }}")
            rules.append(f"meta l4proto {proto} dnat to {_dnat_target(e)}")
            f.chains[endpoint_chain(sp, e)] = rules
        ip_key = f"{sp.cluster_ip} . {proto} . {sp.port}"
        if usable:
            rules = []
            if cfg.cluster_cidr:
                rules.append(f"{a} daddr {sp.cluster_ip} {proto} dport {sp.port} {a} saddr != {cfg.cluster_cidr} "
                             "jump mark-for-masquerade")
            rules += _pick(sp, usable, a)
            f.chains[svc_chain] = rules
            el["service-ips"][ip_key] = f"goto {svc_chain}"
        else:
            # no endpoints at all: reject (ICMP); endpoints elsewhere only (internalTrafficPolicy
            # Local): drop, as upstream
            verdict = "drop" if sp.all_endpoints and any(e.ready for e in sp.all_endpoints) else "goto reject-chain"
            el["no-endpoint-services"][ip_key] = verdict
        if not sp.has_external:
            continue
        ext = external_chain(sp)
        ext_eps = sp.local_endpoints if sp.external_local else usable
        if ext_eps:
            if sp.external_local:
                rules = []
                if cfg.cluster_cidr:
                    rules.append(f"{a} saddr {cfg.cluster_cidr} goto {svc_chain}" if usable else
                                 f"{a} saddr {cfg.cluster_cidr} goto {local_chain(sp)}")
                rules += ["fib saddr type local jump mark-for-masquerade",
                          f"fib saddr type local goto {svc_chain if usable else local_chain(sp)}",
                          f"goto {local_chain(sp)}"]
                f.chains[local_chain(sp)] = _pick(sp, ext_eps, a)
            else:
                rules = ["jump mark-for-masquerade", f"goto {svc_chain}"]
            f.chains[ext] = rules
            for ip in sp.external_ips:
                el["service-ips"][f"{ip} . {proto} . {sp.port}"] = f"goto {ext}"
            if sp.node_port:
                el["service-nodeports"][f"{proto} . {sp.node_port}"] = f"goto {ext}"
        else:
            verdict = "drop" if sp.external_local and usable else "goto reject-chain"
            for ip in sp.external_ips:
                el["no-endpoint-services"][f"{ip} . {proto} . {sp.port}"] = verdict
            if sp.node_port:
                el["no-endpoint-nodeports"][f"{proto} . {sp.node_port}"] = verdict
    f.elements = {m: v for m, v in el.items() if v}
    return f


def _elem(key: str, verdict: str) -> str:
    return f"{key} : {verdict}" if verdict else key


def _set_decl(t: str, name: str, timeout: int, cfg: TableConfig) -> str:
    return f"add set {t} {name} {{ type {cfg.addr_type} ; flags dynamic,timeout ; timeout {timeout}s ; }}"


def diff(cfg: TableConfig, old: Fragment | None, new: Fragment | None) -> tuple[list[str], list[str], list[str]]:
    """Commands turning one Service's `old` fragment into `new`, in three phases that a transaction
    runs in order across all changed Services: (1) create sets and chains and drop stale elements,
    (2) fill chains and add elements, (3) delete what nothing references any more."""
    t = f"{cfg.family} {cfg.name}"
    old = old or Fragment()
    new = new or Fragment()
    first: list[str] = []
    second: list[str] = []
    last: list[str] = []
    for name, timeout in new.sets.items():
        if name not in old.sets:
            first.append(_set_decl(t, name, timeout, cfg))
    for m, els in old.elements.items():
        gone = [k for k, v in els.items() if new.elements.get(m, {}).get(k) != v]
        if gone:
            first.append(f"delete element {t} {m} {{ {', '.join(gone)} }}")
    for name, rules in new.chains.items():
        if old.chains.get(name) == rules:
            continue
        if name in old.chains:
            first.append(f"flush chain {t} {name}")
        else:
            first.append(f"add chain {t} {name}")
        second += [f"add rule {t} {name} {r}" for r in rules]
    for m, els in new.elements.items():
        added = [_elem(k, v) for k, v in els.items() if old.elements.get(m, {}).get(k) != v]
        if added:
            second.append(f"add element {t} {m} {{ {', '.join(added)} }}")
    stale_chains = [c for c in old.chains if c not in new.chains]
    # a stale chain may be referenced by another stale one (service -> endpoint): flush all first
    last += [f"flush chain {t} {c}" for c in stale_chains]
    last += [f"delete chain {t} {c}" for c in stale_chains]
    last += [f"delete set {t} {s}" for s in old.sets if s not in new.sets]
    return first, second, last


def full_sync(cfg: TableConfig, fragments: list[Fragment], existing_chains: set[str],
              existing_sets: set[str]) -> list[str]:
    """The whole table in one transaction (start or restart): flush what is there, write everything,
    delete chains and sets left by an earlier run. The transaction is atomic, so no packet sees a
    half-written table, and established connections keep their conntrack NAT."""
    t = f"{cfg.family} {cfg.name}"
    decls, fill = base_table(cfg)
    out = [decls[0], f"flush table {t}", *decls[1:]]
    out += [f"flush {'set' if m == 'cluster-ips' else 'map'} {t} {m}" for m in MAPS]
    if cfg.nodeport_cidrs:
        out.append(f"flush set {t} nodeport-ips")
    out += fill
    phases: tuple[list[str], list[str], list[str]] = ([], [], [])
    for fr in fragments:
        for acc, cmds in zip(phases, diff(cfg, None, fr), strict=True):
            acc += cmds
    # `add chain`/`add set` of what an earlier run left is a no-op: it is reused, flushed above
    out += phases[0] + phases[1]
    wanted_chains = {c for fr in fragments for c in fr.chains} | set(FIXED_CHAINS)
    wanted_sets = {s for fr in fragments for s in fr.sets} | set(MAPS) | ({"nodeport-ips"} if cfg.nodeport_cidrs else set())
    out += [f"delete chain {t} {c}" for c in sorted(existing_chains - wanted_chains)]
    out += [f"delete set {t} {s}" for s in sorted(existing_sets - wanted_sets)]
    return out


FIXED_CHAINS = ("nat-prerouting", "nat-output", "nat-postrouting", "filter-input", "filter-forward",
                "filter-output", "filter-output-post-dnat", "services", "masquerading", "mark-for-masquerade",
                "service-endpoints-check", "nodeport-endpoints-check", "cluster-ips-check", "reject-chain")
