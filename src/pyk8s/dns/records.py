"""The cluster zone's answers, as CoreDNS's kubernetes plugin gives them (`pods insecure`).

Names follow the Kubernetes DNS specification (kubernetes/dns docs/specification.md):

- `<svc>.<ns>.svc.<zone>`: A/AAAA for a ClusterIP, one per ready endpoint when headless,
  CNAME for an ExternalName;
- `<endpoint>.<svc>.<ns>.svc.<zone>`: an endpoint by its hostname, or by its address with
  dashes when it has none (CoreDNS's endpointHostname);
- `_<port>._<proto>.<svc>.<ns>.svc.<zone>`: SRV (also A/AAAA), `<svc>.<ns>.svc.<zone>` SRV for
  every port;
- `<a-b-c-d>.<ns>.pod.<zone>`: the address in the name, if the namespace exists;
- PTR for ClusterIPs and endpoint addresses; `dns-version.<zone>` TXT; `ns.dns.<zone>` A;
- a missing name is NXDOMAIN, a name without records of the asked type NODATA, both with
  the zone's SOA in the authority section. A question for a type the zone does not serve
  (ANY, MX, ...) is answered as NODATA or NXDOMAIN, never with more records (CoreDNS's
  "fake A lookup").
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import dns.exception
import dns.name
import dns.rcode
import dns.rdata
import dns.rdataclass
import dns.rdatatype
import dns.rdtypes.ANY.CNAME
import dns.rdtypes.ANY.NS
import dns.rdtypes.ANY.PTR
import dns.rdtypes.ANY.SOA
import dns.rdtypes.ANY.TXT
import dns.rdtypes.IN.A
import dns.rdtypes.IN.AAAA
import dns.rdtypes.IN.SRV
import dns.reversename
import dns.rrset

from .catalog import Catalog

__all__ = ["Answer", "ClusterZone", "DNS_SCHEMA_VERSION"]

DNS_SCHEMA_VERSION = "1.1.0"  # the specification's version, served at dns-version.<zone>
IN = dns.rdataclass.IN
T = dns.rdatatype
_REVERSE_ZONES = (dns.name.from_text("in-addr.arpa."), dns.name.from_text("ip6.arpa."))


class _NameError(Exception):
    """NXDOMAIN (CoreDNS's errNoItems / errInvalidRequest / errNsNotExposed)."""


@dataclass(frozen=True)
class _Entry:
    key: str  # the record's own name: SRV target, name of the address in the additional section
    host: str  # an address, or an ExternalName's target
    port: int = -1
    cname: bool = False


@dataclass
class Answer:
    rcode: int = dns.rcode.NOERROR
    answer: list[dns.rrset.RRset] = field(default_factory=list)
    authority: list[dns.rrset.RRset] = field(default_factory=list)
    additional: list[dns.rrset.RRset] = field(default_factory=list)
    # ExternalName targets outside the zone: the server resolves them upstream, as CoreDNS does
    chase: list[dns.name.Name] = field(default_factory=list)


def _strip_underscore(s: str) -> str:
    return s[1:] if s.startswith("_") else s


def _match(want: str, have: str) -> bool:
    return want == "" or want.lower() == have.lower()


def _pod_ip(podname: str) -> str | None:
    """`1-2-3-4` is 1.2.3.4, anything else with dashes is tried as IPv6 (CoreDNS's findPods)."""
    if podname.count("-") == 3 and "--" not in podname:
        text = podname.replace("-", ".")
    else:
        text = podname.replace("-", ":")
    try:
        return str(ipaddress.ip_address(text))
    except ValueError:
        return None


class ClusterZone:
    def __init__(self, catalog: Catalog, zone: str = "cluster.local", ttl: int = 5,
                 dns_ips: list[str] | None = None) -> None:
        self.catalog = catalog
        self.zone_text = zone.strip(".").lower()
        self.zone = dns.name.from_text(self.zone_text + ".")
        self.ttl = ttl
        self.dns_ips = list(dns_ips or [])
        self._ns_name = dns.name.from_text(f"ns.dns.{self.zone_text}.")
        self._version_name = dns.name.from_text(f"dns-version.{self.zone_text}.")

    # ---- entry point ------------------------------------------------------------------
    def answer(self, qname: dns.name.Name, qtype: int) -> Answer | None:
        """The zone's answer, or None for a name it does not hold (the server forwards it)."""
        if qname.is_subdomain(self.zone):
            return self._zone_answer(qname, qtype)
        if qtype == T.PTR and any(qname.is_subdomain(z) for z in _REVERSE_ZONES):
            return self._reverse_answer(qname)
        return None

    def soa(self) -> dns.rrset.RRset:
        # CoreDNS's plugin.SOA: mname ns.dns.<zone>, rname hostmaster.<zone>, the serial is the
        # last change's Unix time; refresh 7200, retry 1800, expire 86400, minimum the TTL
        rd = dns.rdtypes.ANY.SOA.SOA(IN, T.SOA, self._ns_name, dns.name.from_text(f"hostmaster.{self.zone_text}."),
                                     self.catalog.modified & 0xFFFFFFFF, 7200, 1800, 86400, self.ttl)
        return dns.rrset.from_rdata(self.zone, self.ttl, rd)

    # ---- the zone ---------------------------------------------------------------------
    def _zone_answer(self, qname: dns.name.Name, qtype: int) -> Answer:
        out = Answer()
        try:
            if qname == self.zone and qtype in (T.SOA, T.NS):
                if qtype == T.SOA:
                    out.answer.append(self.soa())
                else:
                    out.answer.append(dns.rrset.from_rdata(qname, self.ttl,
                                                           dns.rdtypes.ANY.NS.NS(IN, T.NS, self._ns_name)))
                    out.additional.extend(self._addresses(self._ns_name, self.dns_ips, None))
            elif qname == self._version_name:
                if qtype == T.TXT:
                    out.answer.append(dns.rrset.from_rdata(qname, self.ttl, dns.rdtypes.ANY.TXT.TXT(
                        IN, T.TXT, [DNS_SCHEMA_VERSION.encode()])))
            elif qname == self._ns_name:
                if qtype in (T.A, T.AAAA):
                    out.answer.extend(self._addresses(qname, self.dns_ips, qtype))
            else:
                entries = self._entries(qname)  # raises _NameError: NXDOMAIN for every type
                if qtype in (T.A, T.AAAA):
                    self._address_answer(qname, qtype, entries, out, depth=0)
                elif qtype == T.SRV:
                    self._srv_answer(qname, entries, out)
                elif qtype == T.CNAME:
                    for e in entries:
                        if e.cname:
                            out.answer.append(self._cname(qname, e.host))
        except _NameError:
            out.rcode = dns.rcode.NXDOMAIN
        if not out.answer:
            out.additional.clear()
            out.authority.append(self.soa())
        return out

    def _entries(self, qname: dns.name.Name) -> list[_Entry]:
        rel = qname.relativize(self.zone)
        labels = [lab.decode("ascii", "replace").lower() for lab in rel.labels] if rel != dns.name.empty else []
        if not labels or labels in (["svc"], ["pod"]):
            return []  # NODATA at the apex and its two subtrees
        kind = labels[-1]
        if kind not in ("svc", "pod") or len(labels) > 6:
            raise _NameError
        ns = labels[-2]
        if ns not in self.catalog.namespaces:
            raise _NameError
        if len(labels) == 2:
            return []  # an existing namespace: NODATA
        name, rest = labels[-3], labels[:-3]
        if kind == "pod":
            ip = _pod_ip(name)
            if ip is None or rest:
                raise _NameError
            return [_Entry(key=qname.to_text(omit_final_dot=True), host=ip)]
        endpoint = port = proto = ""
        if len(rest) == 1:
            endpoint = rest[0]
        elif len(rest) == 2:
            port, proto = _strip_underscore(rest[0]), _strip_underscore(rest[1])
        elif rest:
            raise _NameError  # too long to be any record
        svc = self.catalog.services.get((ns, name))
        if svc is None:
            raise _NameError
        out: list[_Entry] = []
        if svc.type == "ExternalName":
            if endpoint or not svc.external_name or _is_ip(svc.external_name):
                raise _NameError
            return [_Entry(key=f"{name}.{ns}.svc.{self.zone_text}", host=svc.external_name, cname=True)]
        if svc.headless or endpoint:
            for e in self.catalog.endpoints(ns, name):
                if endpoint and endpoint != e.hostname.lower():
                    continue
                if not (_match(port, e.port_name) and _match(proto, e.protocol)):
                    continue
                out.append(_Entry(key=f"{e.hostname}.{name}.{ns}.svc.{self.zone_text}", host=e.ip, port=e.port))
        else:
            for pname, pproto, pnum in svc.ports:
                if not (_match(port, pname) and _match(proto, pproto)):
                    continue
                for ip in svc.cluster_ips:
                    out.append(_Entry(key=f"{name}.{ns}.svc.{self.zone_text}", host=ip, port=pnum))
        if not out:
            raise _NameError
        return out

    def _addresses(self, owner: dns.name.Name, ips: list[str], qtype: int | None) -> list[dns.rrset.RRset]:
        """One RRset per family (A, AAAA) of ips; qtype limits it to one family."""
        v4 = [ip for ip in ips if ":" not in ip]
        v6 = [ip for ip in ips if ":" in ip]
        out = []
        if v4 and qtype in (None, T.A):
            out.append(dns.rrset.from_rdata_list(owner, self.ttl, [dns.rdtypes.IN.A.A(IN, T.A, ip) for ip in v4]))
        if v6 and qtype in (None, T.AAAA):
            out.append(dns.rrset.from_rdata_list(owner, self.ttl,
                                                 [dns.rdtypes.IN.AAAA.AAAA(IN, T.AAAA, ip) for ip in v6]))
        return out

    def _cname(self, owner: dns.name.Name, target: str) -> dns.rrset.RRset:
        return dns.rrset.from_rdata(owner, self.ttl,
                                    dns.rdtypes.ANY.CNAME.CNAME(IN, T.CNAME, dns.name.from_text(target + ".")))

    def _address_answer(self, qname: dns.name.Name, qtype: int, entries: list[_Entry], out: Answer,
                        depth: int) -> None:
        ips: list[str] = []
        for e in entries:
            if not e.cname:
                if e.host not in ips:
                    ips.append(e.host)
                continue
            out.answer.append(self._cname(qname, e.host))
            target = dns.name.from_text(e.host + ".")
            if not target.is_subdomain(self.zone):
                out.chase.append(target)
            elif depth < 8:  # an ExternalName pointing into the zone: follow it here
                try:
                    self._address_answer(target, qtype, self._entries(target), out, depth + 1)
                except _NameError:
                    pass
        out.answer.extend(self._addresses(qname, ips, qtype))

    def _srv_answer(self, qname: dns.name.Name, entries: list[_Entry], out: Answer) -> None:
        seen: list[tuple[str, int]] = []
        for e in entries:
            if (e.key if not e.cname else e.host, e.port) not in seen and (e.port >= 0 or e.cname):
                seen.append((e.key if not e.cname else e.host, e.port))
        if not seen:
            return
        weight = 100 // len(seen)  # as CoreDNS: the weight shared out among one priority's records
        rds = [dns.rdtypes.IN.SRV.SRV(IN, T.SRV, 0, weight, max(port, 0), dns.name.from_text(target + "."))
               for target, port in seen]
        out.answer.append(dns.rrset.from_rdata_list(qname, self.ttl, rds))
        extra: dict[str, list[str]] = {}
        for e in entries:
            if not e.cname and e.host not in extra.setdefault(e.key, []):
                extra[e.key].append(e.host)
        for key, ips in extra.items():
            out.additional.extend(self._addresses(dns.name.from_text(key + "."), ips, None))

    # ---- reverse zones ----------------------------------------------------------------
    def _reverse_answer(self, qname: dns.name.Name) -> Answer | None:
        try:
            ip = dns.reversename.to_address(qname)
        except (dns.exception.SyntaxError, ValueError):
            return None
        targets = self.catalog.reverse(ip, self.zone_text)
        if not targets:
            return None  # not ours: fall through to the node's resolvers, as CoreDNS's default Corefile
        rds = [dns.rdtypes.ANY.PTR.PTR(IN, T.PTR, dns.name.from_text(t + ".")) for t in targets]
        return Answer(answer=[dns.rrset.from_rdata_list(qname, self.ttl, rds)])


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
        return True
    except ValueError:
        return False

