"""A pod's /etc/resolv.conf as upstream's kubelet composes it (pkg/kubelet/network/dns).

dnsPolicy decides the base (the cluster DNS with search paths derived from the pod's
namespace, or the node's own resolv.conf, or nothing), dnsConfig is merged on top, and the
search list is trimmed to the resolver limits (32 domains, 2048 characters).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .runtime.interface import DNSConfig

MAX_NAMESERVERS = 3
MAX_SEARCH_PATHS = 32
MAX_SEARCH_CHARS = 2048
DEFAULT_NDOTS = ["ndots:5"]


@dataclass
class HostResolv:
    servers: list[str] = field(default_factory=list)
    searches: list[str] = field(default_factory=list)
    options: list[str] = field(default_factory=list)


def parse_resolv_conf(text: str) -> HostResolv:
    out = HostResolv()
    for line in text.splitlines():
        line = line.split("#", 1)[0].split(";", 1)[0].strip()
        if not line:
            continue
        parts = line.split()
        key, vals = parts[0], parts[1:]
        if key == "nameserver" and vals:
            out.servers.append(vals[0])
        elif key in ("search", "domain"):
            # the last search/domain line wins, as in glibc
            out.searches = [v.rstrip(".") for v in vals if v != "."]
        elif key == "options":
            out.options = _merge_options(out.options, vals)
    return out


def read_host_resolv(path: str = "/etc/resolv.conf") -> HostResolv:
    try:
        with open(path) as f:
            return parse_resolv_conf(f.read())
    except OSError:
        return HostResolv()


def _dedupe(items: list[str]) -> list[str]:
    seen: set[str] = set()
    out = []
    for i in items:
        if i not in seen:
            seen.add(i)
            out.append(i)
    return out


def _merge_options(base: list[str], extra: list[str]) -> list[str]:
    """Options keyed by name ("ndots:5" -> "ndots"); later ones replace earlier ones in place."""
    order: list[str] = []
    values: dict[str, str] = {}
    for opt in [*base, *extra]:
        name = opt.split(":", 1)[0]
        if name not in values:
            order.append(name)
        values[name] = opt
    return [values[n] for n in order]


def _fit_searches(searches: list[str]) -> tuple[list[str], bool]:
    out: list[str] = []
    total = 0
    for s in searches:
        if len(out) >= MAX_SEARCH_PATHS or total + len(s) + (1 if out else 0) > MAX_SEARCH_CHARS:
            return out, True
        total += len(s) + (1 if out else 0)
        out.append(s)
    return out, False


@dataclass
class DNSResult:
    config: DNSConfig
    warnings: list[tuple[str, str]] = field(default_factory=list)  # (event reason, message)


def pod_dns(pod: dict[str, Any], cluster_dns: list[str], cluster_domain: str, host: HostResolv) -> DNSResult:
    spec = pod.get("spec") or {}
    ns = (pod.get("metadata") or {}).get("namespace") or "default"
    policy = spec.get("dnsPolicy") or "ClusterFirst"
    warnings: list[tuple[str, str]] = []
    if policy == "ClusterFirst" and spec.get("hostNetwork"):
        policy = "Default"  # upstream: host-network pods only use cluster DNS with ClusterFirstWithHostNet
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet") and not cluster_dns:
        warnings.append(("MissingClusterDNS", 'kubelet does not have ClusterDNS IP configured and cannot create Pod '
                                              f'using "{policy}" policy. Falling back to "Default" policy.'))
        policy = "Default"
    if policy in ("ClusterFirst", "ClusterFirstWithHostNet"):
        searches = [f"{ns}.svc.{cluster_domain}", f"svc.{cluster_domain}", cluster_domain] if cluster_domain else []
        cfg = DNSConfig(servers=list(cluster_dns), searches=_dedupe(searches + host.searches),
                        options=list(DEFAULT_NDOTS))
    elif policy == "None":
        cfg = DNSConfig()
    else:  # Default: the node's resolver configuration
        cfg = DNSConfig(servers=list(host.servers), searches=list(host.searches), options=list(host.options))
    extra = spec.get("dnsConfig") or {}
    if extra:
        cfg.servers = _dedupe(cfg.servers + list(extra.get("nameservers") or []))
        cfg.searches = _dedupe(cfg.searches + list(extra.get("searches") or []))
        opts = [o["name"] + (f":{o['value']}" if o.get("value") is not None else "") for o in extra.get("options") or []
                if o.get("name")]
        cfg.options = _merge_options(cfg.options, opts)
    if len(cfg.servers) > MAX_NAMESERVERS:
        warnings.append(("DNSConfigForming", "Nameserver limits were exceeded, some nameservers have been omitted, "
                                             "the applied nameserver line is: " + " ".join(cfg.servers[:MAX_NAMESERVERS])))
        cfg.servers = cfg.servers[:MAX_NAMESERVERS]
    cfg.searches, trimmed = _fit_searches(cfg.searches)
    if trimmed:
        warnings.append(("DNSConfigForming", "Search Line limits were exceeded, some search paths have been omitted, "
                                             "the applied search line is: " + " ".join(cfg.searches)))
    return DNSResult(cfg, warnings)
