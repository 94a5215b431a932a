"""The DNS server: one UDP and one TCP listener on the same port, dnspython for the wire.

Answers the cluster zone from `records.ClusterZone` (synchronously, on the receiving turn of
the loop) and forwards other names (`forward.Forwarder`). Hostile input gets a bounded,
small answer or none:

- fewer than 12 bytes, or a response (QR set): dropped, as miekg/dns's default accept func;
- unparseable: FORMERR echoing the header's ID; not exactly one question: FORMERR;
- an opcode other than QUERY: NOTIMP; a class other than IN, or AXFR/IXFR: REFUSED;
- UDP answers never exceed 512 bytes, or the client's EDNS size (at most 4096): a bigger
  one is sent empty with TC set, and the client asks again over TCP;
- a client the ACL (acl.py) turns away: REFUSED, and its TCP connection closed;
- TCP: at most `max_tcp_connections` at once, each idle for `tcp_idle_timeout` seconds at
  most, a message whose 2-byte length promises more than arrives in time is dropped with its
  connection.
"""

from __future__ import annotations

import asyncio
import logging
import socket
import struct
from typing import Any

import dns.exception
import dns.flags
import dns.message
import dns.opcode
import dns.rcode
import dns.rdataclass
import dns.rdatatype
import dns.rrset

from .acl import ClientACL
from .forward import Forwarder, Overloaded
from .records import ClusterZone

__all__ = ["DNSServer"]

log = logging.getLogger("pyk8s.dns")

MAX_UDP_PAYLOAD = 4096
OUR_PAYLOAD = 1232  # the EDNS buffer size we advertise (DNS flag day 2020)
MAX_CACHED_ANSWERS = 10_000


class DNSServer:
    def __init__(self, zone: ClusterZone, forwarder: Forwarder, host: str = "127.0.0.1", port: int = 0,
                 max_tcp_connections: int = 256, tcp_idle_timeout: float = 3.0, acl: ClientACL | None = None) -> None:
        self.zone = zone
        self.acl = acl
        self.forwarder = forwarder
        self.host = host
        self.port = port
        self.max_tcp_connections = max_tcp_connections
        self.tcp_idle_timeout = tcp_idle_timeout
        self._udp: asyncio.DatagramTransport | None = None
        self._tcp: asyncio.Server | None = None
        self._tcp_conns = 0
        self._tasks: set[asyncio.Task[Any]] = set()
        # rendered zone answers by (transport, query bytes after the ID), valid for one catalog
        # generation: a repeated question skips parsing and rendering (bench/network_dns.py)
        self._answers: dict[tuple[bool, bytes], bytes] = {}
        self._answers_gen = -1

    # ---- lifecycle --------------------------------------------------------------------
    async def start(self) -> None:
        """Bind UDP and TCP on one port; port 0 picks one free for both."""
        loop = asyncio.get_running_loop()
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        for _ in range(50):
            udp_sock = socket.socket(family, socket.SOCK_DGRAM)
            try:
                udp_sock.bind((self.host, self.port))
                port = udp_sock.getsockname()[1]
                tcp_sock = socket.socket(family, socket.SOCK_STREAM)
                tcp_sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
                try:
                    tcp_sock.bind((self.host, port))
                except OSError:
                    tcp_sock.close()
                    if self.port:
                        raise
                    udp_sock.close()
                    continue  # the TCP side of that free UDP port is taken: another try
            except OSError:
                udp_sock.close()
                raise
            self.port = port
            self._udp, _ = await loop.create_datagram_endpoint(lambda: _UDPProtocol(self), sock=udp_sock)
            tcp_sock.listen(128)
            self._tcp = await asyncio.start_server(self._serve_tcp, sock=tcp_sock)
            log.info("cluster DNS listening on %s port %d (UDP and TCP)", self.host, self.port)
            return
        raise OSError("no port free for both UDP and TCP")

    async def stop(self) -> None:
        if self._udp is not None:
            self._udp.close()
        if self._tcp is not None:
            self._tcp.close()
            await self._tcp.wait_closed()
        for t in list(self._tasks):
            t.cancel()
        self._udp = self._tcp = None

    def _spawn(self, coro: Any) -> None:
        t = asyncio.get_running_loop().create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._tasks.discard)

    # ---- one message ------------------------------------------------------------------
    def handle(self, wire: bytes, tcp: bool) -> bytes | None | dns.message.Message:
        """The answer's bytes, None (drop), or the parsed query when it must be forwarded."""
        if len(wire) < 12:
            return None
        gen = self.zone.catalog.generation
        if gen != self._answers_gen:
            self._answers.clear()
            self._answers_gen = gen
        key = (tcp, wire[2:])
        hit = self._answers.get(key)
        if hit is not None:
            return wire[:2] + hit
        flags = struct.unpack_from("!H", wire, 2)[0]
        if flags & dns.flags.QR:
            return None
        try:
            q = dns.message.from_wire(wire, ignore_trailing=False)
        except Exception:  # any malformation: dnspython raises many kinds
            return _header_only(wire, dns.rcode.FORMERR)
        if q.opcode() != dns.opcode.QUERY:
            return _header_only(wire, dns.rcode.NOTIMP)
        if len(q.question) != 1:
            return _header_only(wire, dns.rcode.FORMERR)
        question = q.question[0]
        if question.rdclass != dns.rdataclass.IN or question.rdtype in (dns.rdatatype.AXFR, dns.rdatatype.IXFR):
            return self._render(q, _reply(q, dns.rcode.REFUSED), tcp)
        ans = self.zone.answer(question.name, question.rdtype)
        if ans is None or ans.chase:
            return q  # forwarded, or an ExternalName whose target is resolved upstream
        r = _reply(q, ans.rcode)
        r.flags |= dns.flags.AA
        r.answer, r.authority, r.additional = ans.answer, ans.authority, ans.additional
        out = self._render(q, r, tcp)
        if len(self._answers) >= MAX_CACHED_ANSWERS:
            self._answers.clear()
        self._answers[key] = out[2:]
        return out

    async def handle_async(self, q: dns.message.Message, tcp: bool) -> bytes | None:
        question = q.question[0]
        ans = self.zone.answer(question.name, question.rdtype)
        try:
            if ans is None:
                up = await self.forwarder.query(q, tcp)
                if up is None:
                    return self._render(q, _reply(q, dns.rcode.SERVFAIL), tcp)
                up.id = q.id
                return self._render(q, up, tcp)
            r = _reply(q, ans.rcode)
            r.flags |= dns.flags.AA
            r.answer, r.authority, r.additional = list(ans.answer), ans.authority, ans.additional
            for target in ans.chase:  # as CoreDNS: an upstream failure leaves the CNAME alone
                sub = dns.message.make_query(target, question.rdtype)
                up = await self.forwarder.query(sub, tcp)
                if up is not None and up.rcode() == dns.rcode.NOERROR:
                    r.answer.extend(up.answer)
            return self._render(q, r, tcp)
        except Overloaded:
            return self._render(q, _reply(q, dns.rcode.REFUSED), tcp)

    def _render(self, q: dns.message.Message, r: dns.message.Message, tcp: bool) -> bytes:
        if tcp:
            limit = 65535
        else:
            limit = max(512, min(q.payload, MAX_UDP_PAYLOAD)) if q.edns >= 0 else 512
        try:
            return r.to_wire(max_size=limit)
        except dns.exception.TooBig:
            pass
        r.additional = []
        try:
            return r.to_wire(max_size=limit)
        except dns.exception.TooBig:
            # the whole answer does not fit: say so, and the client asks again over TCP
            r.answer, r.authority = [], []
            r.flags |= dns.flags.TC
            return r.to_wire(max_size=limit)

    # ---- transports -------------------------------------------------------------------
    async def _answer_later(self, q: dns.message.Message, addr: Any) -> None:
        out = await self.handle_async(q, tcp=False)
        if out is not None and self._udp is not None:
            self._udp.sendto(out, addr)

    def refused(self, wire: bytes) -> bytes | None:
        """REFUSED for a client the ACL turns away, its question echoed; malformed: dropped."""
        if len(wire) < 12 or struct.unpack_from("!H", wire, 2)[0] & dns.flags.QR:
            return None
        try:
            q = dns.message.from_wire(wire)
        except Exception:
            return None
        return _reply(q, dns.rcode.REFUSED).to_wire(max_size=512)

    def datagram(self, data: bytes, addr: Any) -> None:
        if self.acl is not None and not self.acl.allows(addr[0]):
            out_refused = self.refused(data)
            if out_refused is not None and self._udp is not None:
                self._udp.sendto(out_refused, addr)
            return
        try:
            out = self.handle(data, tcp=False)
        except Exception:  # a bug must not stop the listener; the client retries
            log.exception("cluster DNS: answering a UDP query failed")
            return
        if isinstance(out, dns.message.Message):
            self._spawn(self._answer_later(out, addr))
        elif out is not None and self._udp is not None:
            self._udp.sendto(out, addr)

    async def _serve_tcp(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._tcp_conns >= self.max_tcp_connections:
            writer.close()
            return
        self._tcp_conns += 1
        peer = writer.get_extra_info("peername")
        allowed = self.acl is None or (peer is not None and self.acl.allows(peer[0]))
        try:
            while True:
                try:
                    head = await asyncio.wait_for(reader.readexactly(2), self.tcp_idle_timeout)
                    (n,) = struct.unpack("!H", head)
                    if n == 0:
                        return
                    data = await asyncio.wait_for(reader.readexactly(n), self.tcp_idle_timeout)
                except (TimeoutError, asyncio.IncompleteReadError, ConnectionError):
                    return
                if not allowed:
                    refused = self.refused(data)
                    if refused is not None:
                        writer.write(struct.pack("!H", len(refused)) + refused)
                        await writer.drain()
                    return
                try:
                    out = self.handle(data, tcp=True)
                    if isinstance(out, dns.message.Message):
                        out = await self.handle_async(out, tcp=True)
                except Exception:
                    log.exception("cluster DNS: answering a TCP query failed")
                    return
                if out is None:
                    continue
                writer.write(struct.pack("!H", len(out)) + out)
                await writer.drain()
        except ConnectionError:
            pass
        finally:
            self._tcp_conns -= 1
            writer.close()


class _UDPProtocol(asyncio.DatagramProtocol):
    def __init__(self, server: DNSServer) -> None:
        self.server = server

    def datagram_received(self, data: bytes, addr: Any) -> None:
        self.server.datagram(data, addr)

    def error_received(self, exc: Exception) -> None:  # e.g. ICMP port unreachable for a reply
        log.debug("cluster DNS: UDP error: %s", exc)


def _reply(q: dns.message.Message, rcode: int) -> dns.message.Message:
    r = dns.message.make_response(q, recursion_available=True, our_payload=OUR_PAYLOAD)
    r.set_rcode(dns.rcode.Rcode(rcode))
    return r


def _header_only(wire: bytes, rcode: int) -> bytes:
    """An answer with the query's ID, opcode and RD and no sections, for what cannot be parsed."""
    qid, flags = struct.unpack_from("!HH", wire, 0)
    out_flags = dns.flags.QR | (flags & (0x7800 | dns.flags.RD)) | (rcode & 0xF)
    return struct.pack("!HHHHHH", qid, out_flags, 0, 0, 0, 0)
