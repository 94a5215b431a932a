"""The policy controller's nftables table: rendering a `Ruleset` in full or as a diff, and running nft.

One table of our own (`inet pyk8s-netpol` by default) with two base chains on the forward hook,
where a pod's traffic to another pod, to another node or to the outside passes (pods on one
Linux bridge reach this hook through br_netfilter, as with upstream's bridge-based CNIs; the
node's own traffic to its pods never passes forward, so it is always allowed, as upstream asks):

    egress  (priority -1): replies and a pod to itself accepted; else `ip saddr vmap @egress-pods`
    ingress (priority  0): replies and a pod to itself accepted; else `ip daddr vmap @ingress-pods`

The maps send a local isolated pod's packets to the chain of its policies; a matching rule
accepts (ending that base chain only, so an egress accept still meets the ingress check), and
the combination chain ends in drop. A sync is one `nft -f` transaction: the first one replaces
the whole table atomically, later ones change only the sets, chains and map elements that
differ from what was applied last.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Sequence

from .policy import SELF_PAIRS, NftSet, Ruleset

__all__ = ["NftError", "render_delete", "render_diff", "render_full", "run_nft"]

INGRESS_MAP, EGRESS_MAP = "ingress-pods", "egress-pods"


class NftError(Exception):
    pass


def _set_decl(family_table: str, s: NftSet) -> list[str]:
    flags = " flags interval;" if s.interval else ""
    out = [f"add set {family_table} {s.name} {{ type {s.type};{flags} }}"]
    out += _elements("add", family_table, s.name, s.elements)
    return out


def _elements(verb: str, family_table: str, name: str, elements: Iterable[str]) -> list[str]:
    els = sorted(elements)
    # a few thousand elements per command keeps each netlink message small
    return [f"{verb} element {family_table} {name} {{ {', '.join(els[i:i + 2000])} }}"
            for i in range(0, len(els), 2000)]


def _chain_rules(family_table: str, name: str, rules: Sequence[str]) -> list[str]:
    return [f"add rule {family_table} {name} {r}" for r in rules]


def _map_elements(verb: str, family_table: str, name: str, entries: dict[str, str]) -> list[str]:
    if verb == "delete":
        return _elements("delete", family_table, name, entries)
    return _elements("add", family_table, name, (f"{ip} : jump {c}" for ip, c in entries.items()))


def render_full(table: str, rs: Ruleset) -> str:
    """Replace the table with `rs` in one transaction (add first so the delete never fails)."""
    ft = f"inet {table}"
    out = [f"add table {ft}", f"delete table {ft}", f"add table {ft}"]
    for s in rs.sets.values():
        out += _set_decl(ft, s)
    for name in rs.chains:
        out.append(f"add chain {ft} {name}")
    for name, rules in rs.chains.items():
        out += _chain_rules(ft, name, rules)
    for m in (INGRESS_MAP, EGRESS_MAP):
        out.append(f"add map {ft} {m} {{ type ipv4_addr : verdict; }}")
    out += _map_elements("add", ft, INGRESS_MAP, rs.ingress)
    out += _map_elements("add", ft, EGRESS_MAP, rs.egress)
    out += [f"add chain {ft} egress {{ type filter hook forward priority -1; policy accept; }}",
            f"add rule {ft} egress ct state established,related accept",
            f"add rule {ft} egress ip saddr . ip daddr @{SELF_PAIRS} accept",
            f"add rule {ft} egress ip saddr vmap @{EGRESS_MAP}",
            f"add chain {ft} ingress {{ type filter hook forward priority 0; policy accept; }}",
            f"add rule {ft} ingress ct state established,related accept",
            f"add rule {ft} ingress ip saddr . ip daddr @{SELF_PAIRS} accept",
            f"add rule {ft} ingress ip daddr vmap @{INGRESS_MAP}"]
    return "\n".join(out) + "\n"


def render_diff(table: str, old: Ruleset, new: Ruleset) -> str:
    """The commands that turn the applied `old` into `new` ("" when nothing changed)."""
    ft = f"inet {table}"
    out: list[str] = []
    for name, s in new.sets.items():
        was = old.sets.get(name)
        if was is None:
            out += _set_decl(ft, s)
        elif was.type != s.type or was.interval != s.interval:
            raise ValueError(f"set {name} changed type")  # names encode the kind: cannot happen
        else:
            out += _elements("delete", ft, name, was.elements - s.elements)
            out += _elements("add", ft, name, s.elements - was.elements)
    for name in new.chains:
        if name not in old.chains:
            out.append(f"add chain {ft} {name}")
    for name, rules in new.chains.items():
        if old.chains.get(name) != rules:
            if name in old.chains:
                out.append(f"flush chain {ft} {name}")
            out += _chain_rules(ft, name, rules)
    for m, was_map, now_map in ((INGRESS_MAP, old.ingress, new.ingress), (EGRESS_MAP, old.egress, new.egress)):
        gone = {ip: c for ip, c in was_map.items() if now_map.get(ip) != c}
        came = {ip: c for ip, c in now_map.items() if was_map.get(ip) != c}
        out += _map_elements("delete", ft, m, gone)
        out += _map_elements("add", ft, m, came)
    removed = [n for n in old.chains if n not in new.chains]
    out += [f"flush chain {ft} {n}" for n in removed]  # rules jumping to each other go first
    out += [f"delete chain {ft} {n}" for n in removed]
    out += [f"delete set {ft} {n}" for n in old.sets if n not in new.sets]
    return "\n".join(out) + "\n" if out else ""


def render_delete(table: str) -> str:
    return f"add table inet {table}\ndelete table inet {table}\n"


async def run_nft(script: str, nft: Sequence[str] = ("nft",)) -> None:
    proc = await asyncio.create_subprocess_exec(*nft, "-f", "-", stdin=asyncio.subprocess.PIPE,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await proc.communicate(script.encode())
    if proc.returncode != 0:
        raise NftError(err.decode(errors="replace").strip() or f"nft exited {proc.returncode}")
