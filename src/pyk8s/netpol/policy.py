"""NetworkPolicy semantics as pure functions: which pods a policy isolates, and what its rules allow.

The result is a `Ruleset`: nftables sets of addresses and ports per policy rule, one chain per
policy per direction, one chain per combination of policies (pods selected by the same policies
share it), and the pod IP -> chain verdict maps that send a local pod's traffic to its chain.
`nftables.render_*` turns it into nft commands; nothing here touches the system.

Semantics as upstream documents them (networking.k8s.io/v1 NetworkPolicy):
- a pod is isolated for ingress (egress) when some policy of its namespace selects it and has
  Ingress (Egress) in its policyTypes; what reaches it is then the union of those policies' rules;
- policyTypes defaults to Ingress, plus Egress when the policy has egress rules;
- a rule allows traffic matching one of its peers (none: any peer) on one of its ports (none: any
  port of any protocol); a peer is a podSelector (in the policy's namespace), a namespaceSelector
  (every pod of those namespaces), both together (those pods of those namespaces) or an ipBlock
  (a CIDR minus its excepts);
- a named port resolves on the destination pod: its containers' ports of that name and protocol;
- replies of allowed connections, a pod's traffic to itself, and the node's own traffic to its
  pods are always allowed (the base chains and the hooks in nftables.py).
Pods without an IP, hostNetwork pods and terminal pods (their IP may be reused) are left out.
IPv4 only: the pod network is IPv4 (kubelet/runtime/cni.py).
"""

from __future__ import annotations

import hashlib
import ipaddress
import json
import re
import socket
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..api.labels import Selector, SelectorParseError, selector_from_label_selector

__all__ = ["NftSet", "PodInfo", "Ruleset", "compute_ruleset", "effective_policy_types", "pod_info"]

ADDR = "ipv4_addr"
PROTO_PORT = "inet_proto . inet_service"
ADDR_PROTO_PORT = "ipv4_addr . inet_proto . inet_service"
PROTOCOLS = {"TCP": "tcp", "UDP": "udp", "SCTP": "sctp"}
SELF_PAIRS, SELF_PAIRS_TYPE = "self-pairs", "ipv4_addr . ipv4_addr"


@dataclass(frozen=True)
class NftSet:
    name: str
    type: str
    interval: bool
    elements: frozenset[str]


@dataclass
class Ruleset:
    sets: dict[str, NftSet] = field(default_factory=dict)
    chains: dict[str, tuple[str, ...]] = field(default_factory=dict)
    ingress: dict[str, str] = field(default_factory=dict)  # local pod IP -> chain of its ingress policies
    egress: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PodInfo:
    namespace: str
    name: str
    labels: Mapping[str, str]
    ip: str
    node: str
    ports: tuple[tuple[str, str, int], ...]  # (name, protocol, containerPort) of named container ports


def pod_info(pod: Mapping[str, Any]) -> PodInfo | None:
    """What policies need of a pod, or None when it takes no part (no IPv4 address, host network, terminal)."""
    md, spec, status = pod.get("metadata") or {}, pod.get("spec") or {}, pod.get("status") or {}
    if spec.get("hostNetwork") or status.get("phase") in ("Succeeded", "Failed"):
        return None
    ips = [p.get("ip", "") for p in status.get("podIPs") or []] or [status.get("podIP", "")]
    ip = next((c for x in ips if (c := _canonical_v4(x))), "")
    if not ip:
        return None
    ports = []
    for c in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
        for p in c.get("ports") or []:
            number = _port(p.get("containerPort"))
            if p.get("name") and number is not None:
                ports.append((p["name"], p.get("protocol") or "TCP", number))
    return PodInfo(md.get("namespace", ""), md.get("name", ""), md.get("labels") or {}, ip,
                   spec.get("nodeName", ""), tuple(ports))


def _canonical_v4(ip: str) -> str:
    """The address in canonical dotted form, or "" for anything else: nothing from an object reaches
    an nft script unparsed (a status is written by kubelets, not trusted to be well formed)."""
    try:
        return socket.inet_ntop(socket.AF_INET, socket.inet_pton(socket.AF_INET, ip))
    except (OSError, TypeError, ValueError):
        return ""


def _port(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and 0 < v < 65536 else None


def effective_policy_types(spec: Mapping[str, Any]) -> tuple[bool, bool]:
    """(ingress, egress) as upstream defaults policyTypes when it is unset."""
    types = spec.get("policyTypes")
    if not types:
        return True, bool(spec.get("egress"))
    return "Ingress" in types, "Egress" in types


def _selector(ls: Mapping[str, Any] | None) -> Selector | None:
    """An invalid selector selects nothing (validation refuses them; a stored one must not widen access)."""
    try:
        return selector_from_label_selector(ls)
    except (SelectorParseError, ValueError):
        return None


def _matches(sel: Selector | None, labels: Mapping[str, str]) -> bool:
    return sel is not None and sel.matches(labels)


def short_id(*parts: str) -> str:
    return hashlib.sha1("/".join(parts).encode()).hexdigest()[:12]


class _Index:
    def __init__(self, pods: Iterable[PodInfo], namespaces: Mapping[str, Mapping[str, str]]) -> None:
        self.pods = list(pods)
        self.namespaces = namespaces
        self.by_ns: dict[str, list[PodInfo]] = {}
        self.ns_memo: dict[str, list[str]] = {}
        for p in self.pods:
            self.by_ns.setdefault(p.namespace, []).append(p)

    def namespace_labels(self, ns: str) -> Mapping[str, str]:
        # kubernetes.io/metadata.name is set on every namespace upstream; count on it even if absent
        return {**(self.namespaces.get(ns) or {}), "kubernetes.io/metadata.name": ns}

    def selected_namespaces(self, ls: Mapping[str, Any]) -> list[str]:
        """Namespaces (with pods) a selector picks; policies tend to share a few, so once per sync each."""
        key = json.dumps(ls, sort_keys=True)
        names = self.ns_memo.get(key)
        if names is None:
            sel = _selector(ls)
            names = self.ns_memo[key] = [ns for ns in self.by_ns if _matches(sel, self.namespace_labels(ns))]
        return names

    def peer_pods(self, peer: Mapping[str, Any], policy_ns: str) -> list[PodInfo]:
        has_pods = peer.get("podSelector") is not None  # null is absent, as a nil pointer upstream
        pod_sel = _selector(peer["podSelector"]) if has_pods else None
        if peer.get("namespaceSelector") is not None:
            names = self.selected_namespaces(peer["namespaceSelector"])
        else:
            names = [policy_ns]
        out = []
        for ns in names:
            for p in self.by_ns.get(ns, []):
                if not has_pods or _matches(pod_sel, p.labels):
                    out.append(p)
        return out


def _ip_block(block: Mapping[str, Any]) -> list[ipaddress.IPv4Network]:
    try:
        net = ipaddress.ip_network(block.get("cidr", ""), strict=False)
    except ValueError:
        return []
    if net.version != 4:
        return []
    nets = [net]
    for ex in block.get("except") or []:
        try:
            exn = ipaddress.ip_network(ex, strict=False)
        except ValueError:
            continue
        if exn.version != 4:
            continue
        nxt: list[ipaddress.IPv4Network] = []
        for n in nets:
            if exn.supernet_of(n):  # type: ignore[arg-type]
                continue
            if n.supernet_of(exn):  # type: ignore[arg-type]
                nxt.extend(n.address_exclude(exn))  # type: ignore[arg-type]
            else:
                nxt.append(n)
        nets = nxt
    return nets  # type: ignore[return-value]


def _net_elements(nets: Iterable[ipaddress.IPv4Network], ips: Iterable[str]) -> frozenset[str]:
    """Disjoint canonical interval-set elements (nft refuses overlaps): the CIDRs merged, then each pod
    address they do not already cover (distinct addresses never overlap; no per-pod network objects)."""
    blocks = list(ipaddress.collapse_addresses(nets))
    out = {str(n.network_address) if n.prefixlen == 32 else str(n) for n in blocks}
    spans = [(int(n.network_address), int(n.broadcast_address)) for n in blocks]
    for ip in set(ips):
        if spans:
            v = int.from_bytes(socket.inet_aton(ip), "big")
            if any(lo <= v <= hi for lo, hi in spans):
                continue
        out.add(ip)
    return frozenset(out)


def _port_ranges(ranges: Iterable[tuple[str, int, int]]) -> frozenset[str]:
    """Merged disjoint `proto . lo-hi` elements per protocol."""
    by_proto: dict[str, list[tuple[int, int]]] = {}
    for proto, lo, hi in ranges:
        by_proto.setdefault(proto, []).append((lo, hi))
    out = set()
    for proto, rs in by_proto.items():
        rs.sort()
        merged: list[list[int]] = []
        for lo, hi in rs:
            if merged and lo <= merged[-1][1] + 1:
                merged[-1][1] = max(merged[-1][1], hi)
            else:
                merged.append([lo, hi])
        for lo, hi in merged:
            out.add(f"{proto} . {lo}" if lo == hi else f"{proto} . {lo}-{hi}")
    return frozenset(out)


def _rule(ruleset: Ruleset, base: str, comment: str, rule: Mapping[str, Any], ingress: bool, policy_ns: str,
          selected: list[PodInfo], index: _Index) -> list[str]:
    """nft rules (accept on match) for one ingress/egress rule; its sets go into ruleset.sets."""
    peer_key, peer_dir, dest_dir = ("from", "saddr", "daddr") if ingress else ("to", "daddr", "daddr")
    comment = re.sub(r"[^a-z0-9./\[\] -]", "", comment)  # names are DNS labels; nothing else reaches nft
    match_peer = ""
    peers = rule.get(peer_key) or []
    if peers:
        nets: list[ipaddress.IPv4Network] = []
        ips: list[str] = []
        for peer in peers:
            if peer.get("ipBlock") is not None:
                nets.extend(_ip_block(peer["ipBlock"]))
            elif peer.get("podSelector") is not None or peer.get("namespaceSelector") is not None:
                ips.extend(p.ip for p in index.peer_pods(peer, policy_ns))
        name = f"{base}-peers"
        ruleset.sets[name] = NftSet(name, ADDR, True, _net_elements(nets, ips))
        match_peer = f"ip {peer_dir} @{name} "
    ports = rule.get("ports") or []
    if not ports:
        return [f'{match_peer}accept comment "{comment}"']
    numeric: list[tuple[str, int, int]] = []
    named: set[str] = set()
    # the pods whose named ports count: the selected pods for ingress; for egress any destination pod
    destinations = selected if ingress else index.pods
    for p in ports:
        proto_name = p.get("protocol") or "TCP"
        proto = PROTOCOLS.get(proto_name)
        if proto is None:
            continue
        port = p.get("port")
        if port is None:
            numeric.append((proto, 0, 65535))
        elif isinstance(port, int):
            if _port(port) is None:
                continue  # validation refuses it; a stored one must not widen access
            end = _port(p.get("endPort"))
            numeric.append((proto, port, end if end is not None and end >= port else port))
        elif isinstance(port, str):
            for d in destinations:
                for pname, pproto, number in d.ports:
                    if pname == port and pproto == proto_name:
                        named.add(f"{d.ip} . {proto} . {number}")
    out = []
    if numeric:
        name = f"{base}-ports"
        ruleset.sets[name] = NftSet(name, PROTO_PORT, True, _port_ranges(numeric))
        out.append(f'{match_peer}meta l4proto . th dport @{name} accept comment "{comment}"')
    if named or not numeric:
        name = f"{base}-named"
        ruleset.sets[name] = NftSet(name, ADDR_PROTO_PORT, False, frozenset(named))
        out.append(f'{match_peer}ip {dest_dir} . meta l4proto . th dport @{name} accept comment "{comment}"')
    return out


def compute_ruleset(policies: Iterable[Mapping[str, Any]], pods: Iterable[Mapping[str, Any] | PodInfo | None],
                    namespaces: Mapping[str, Mapping[str, str]], node: str) -> Ruleset:
    """The whole desired state for `node` (pods: objects or their pod_info, namespaces: name -> labels)."""
    infos = (p if isinstance(p, PodInfo) or p is None else pod_info(p) for p in pods)
    index = _Index((pi for pi in infos if pi is not None), namespaces)
    rs = Ruleset()
    in_policies: dict[str, list[str]] = {}  # local pod IP -> its ingress policy chains
    eg_policies: dict[str, list[str]] = {}
    for pol in sorted(policies, key=lambda p: (p["metadata"].get("namespace", ""), p["metadata"]["name"])):
        md, spec = pol["metadata"], pol.get("spec") or {}
        ns, pname = md.get("namespace", ""), md["name"]
        sel = _selector(spec.get("podSelector") or {})
        selected = [p for p in index.by_ns.get(ns, []) if _matches(sel, p.labels)]
        local = [p for p in selected if p.node == node]
        if not local:
            continue  # nothing of it runs here; peers elsewhere are enforced on their own nodes
        pid = short_id(ns, pname)
        for direction, on, key, target in (("in", effective_policy_types(spec)[0], "ingress", in_policies),
                                           ("eg", effective_policy_types(spec)[1], "egress", eg_policies)):
            if not on:
                continue
            chain = f"pol-{pid}-{direction}"
            rules: list[str] = []
            for i, rule in enumerate(spec.get(key) or []):
                rules += _rule(rs, f"pol-{pid}-{direction}{i}", f"{ns}/{pname} {key}[{i}]", rule,
                               direction == "in", ns, selected, index)
            rs.chains[chain] = tuple(rules)
            for p in local:
                target.setdefault(p.ip, []).append(chain)
    for target, verdicts, direction in ((in_policies, rs.ingress, "in"), (eg_policies, rs.egress, "eg")):
        for ip, chains in target.items():
            combo = f"pods-{direction}-{short_id(*chains)}"
            if combo not in rs.chains:
                # no policy accepted it: drop (a policy with no rules is a default deny)
                rs.chains[combo] = (*(f"jump {c}" for c in chains), "drop")
            verdicts[ip] = combo
    # "a pod cannot block access to itself": through its own Service (DNAT, then hairpin masquerade
    # after the forward hook) its packets cross forward from and to its own address
    rs.sets[SELF_PAIRS] = NftSet(SELF_PAIRS, SELF_PAIRS_TYPE, False,
                                 frozenset(f"{ip} . {ip}" for ip in {*rs.ingress, *rs.egress}))
    return rs
